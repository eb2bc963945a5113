//! `pmscope suite NAME -t A -t B`: a named study — the seeds' figure sets — run as one run.
//! A study is a list of typed steps ([`studies`]): each step is an experiment with its
//! parameters as values, run in this process into the same output, on all targets so the
//! targets are measured side by side. One progress line per step with an estimate of the
//! time left; the experiments' own tables are not printed (the records are: `--json`, `-o`,
//! and `pmscope report` draws them).
//!
//! In the results store every point carries its step's index and every finished step is
//! marked, so `--resume RUN` keeps the finished steps (a step is identified by its index and
//! name), re-runs a step that was interrupted with its partial points replaced, and marks the
//! run complete: the resumed run holds each point once.

mod resume;
pub mod studies;

use crate::params::{Cpus, TargetArgs};
use crate::{Env, Output, Placement, Step};
use anyhow::{Context as _, Result};
use clap::Args;
use pmscope_runner::executor::Executor;
pub use resume::Original;
use std::time::Instant;
pub use studies::Study;

/// `pmscope suite`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// The study.
    #[arg(value_enum)]
    pub study: Study,
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// The publication-grade version of every step (each command's --full).
    #[arg(long)]
    pub full: bool,
    /// CPUs to use (default: all this process may use).
    #[arg(long)]
    pub cpus: Option<Cpus>,
    /// Finish RUN, an interrupted run of this suite in the results store (an id, latest,
    /// latest~N or a tag): its finished steps are kept, the rest are measured into it.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
}

impl Params {
    /// `suite basic --full`: how messages name this suite.
    pub fn title(&self) -> String {
        format!(
            "suite {}{}",
            self.study.name(),
            if self.full { " --full" } else { "" }
        )
    }
}

/// Runs the study. `decode` reads the parameters of the run `--resume` names back from its
/// stored command line (the binary owns the command-line grammar).
pub fn run(
    env: &mut Env,
    out: &mut dyn Output,
    a: &Params,
    decode: &dyn Fn(&[String]) -> Option<Original>,
) -> Result<()> {
    let steps = studies::steps(a.study, a.full);
    let resumed = match &a.resume {
        Some(selector) => Some(resume::plan(env, out, a, selector, &steps, decode)?),
        None => None,
    };
    // The targets and mapping options are validated once, before any step runs; a resumed
    // run measures the targets it was started with.
    let placement = Placement {
        targets: TargetArgs {
            targets: env
                .targets(&resumed_targets(a, resumed.as_ref()), &["dram:4k"])?
                .0,
            ..a.targets.clone()
        },
        cpus: a.cpus.clone(),
    };
    // The run exists from the start, so a run killed before its first point is resumable.
    let run_id = out.begin_run(&env.command_line, resumed.as_ref().map(|r| r.run))?;
    let human = out.human();
    let mut progress = Progress::new(human, steps.len(), resumed.as_ref());
    if human {
        println!(
            "pmscope {}: {} steps on {}{}{}",
            a.title(),
            steps.len(),
            resume::join(&placement.targets.targets),
            run_id.map_or(String::new(), |id| format!(", run {id}")),
            match &resumed {
                Some(r) => format!(" (resumed: {} steps finished before)", r.finished.len()),
                None => String::new(),
            }
        );
    }
    out.set_quiet(true);
    for (i, (name, step)) in steps.into_iter().enumerate() {
        if let Some(records) = resumed.as_ref().and_then(|r| r.finished.get(&i)) {
            for r in records {
                out.replay(r)?;
            }
            progress.kept(i, name, records.len());
            continue;
        }
        let mut step: Step = step;
        // The null executor (the tests' synthetic mode) cannot stand in for a real server:
        // `app` refuses it, so a suite under it records the step as run with nothing
        // measured and says so, rather than stopping the study there.
        if env.executor == Executor::Null && matches!(step, Step::App(_)) {
            progress.not_synthetic(i, name);
            out.begin_step(i)?;
            out.finish_step(i, name)?;
            continue;
        }
        step.place(&placement);
        let left_out = step.fit_to_cpu(&env.features);
        progress.left_out(i, name, &left_out);
        let before = out.records().len();
        out.begin_step(i)?;
        step.run(env, out).with_context(|| {
            let resume = run_id.map_or(String::new(), |id| {
                format!("; `pmscope {} --resume {id}` continues the run", a.title())
            });
            format!(
                "suite step {} of {} ({name}){resume}",
                i + 1,
                progress.steps
            )
        })?;
        out.finish_step(i, name)?;
        progress.measured(i, name, out.records().len() - before);
    }
    out.set_quiet(false);
    if human {
        progress.summary(out.records());
    }
    Ok(())
}

/// The targets a run measures: a resumed run's own, else those given.
fn resumed_targets(a: &Params, resumed: Option<&resume::Resumed>) -> TargetArgs {
    match resumed {
        Some(r) => TargetArgs {
            targets: r.targets.clone(),
            ..a.targets.clone()
        },
        None => a.targets.clone(),
    }
}

/// The suite's progress lines on stderr (a person is watching) and its closing summary.
struct Progress {
    human: bool,
    steps: usize,
    started: Instant,
    step_started: Instant,
    to_measure: usize,
    measured: usize,
}

impl Progress {
    fn new(human: bool, steps: usize, resumed: Option<&resume::Resumed>) -> Progress {
        Progress {
            human,
            steps,
            started: Instant::now(),
            step_started: Instant::now(),
            to_measure: steps - resumed.map_or(0, |r| r.finished.len()),
            measured: 0,
        }
    }

    fn kept(&mut self, i: usize, name: &str, records: usize) {
        if self.human {
            eprintln!(
                "[{}/{}] {:<32} {:>4} records kept from the interrupted run",
                i + 1,
                self.steps,
                name,
                records
            );
        }
    }

    fn left_out(&mut self, i: usize, name: &str, ops: &[String]) {
        self.step_started = Instant::now();
        if self.human && !ops.is_empty() {
            eprintln!(
                "[{}/{}] {}: {} left out, this CPU lacks their instructions (see `pmscope list ops`)",
                i + 1,
                self.steps,
                name,
                ops.join(", "),
            );
        }
    }

    fn not_synthetic(&mut self, i: usize, name: &str) {
        if self.human {
            eprintln!(
                "[{}/{}] {name}: not run under --null-executor: it drives real servers and has no synthetic mode",
                i + 1,
                self.steps,
            );
        }
    }

    fn measured(&mut self, i: usize, name: &str, records: usize) {
        self.measured += 1;
        if self.human {
            let done = self.started.elapsed().as_secs_f64();
            let left = done / self.measured as f64 * (self.to_measure - self.measured) as f64;
            eprintln!(
                "[{}/{}] {:<32} {:>4} records in {:>5.1} s   elapsed {:>5.0} s, about {:.0} s left",
                i + 1,
                self.steps,
                name,
                records,
                self.step_started.elapsed().as_secs_f64(),
                done,
                left
            );
        }
    }

    fn summary(&self, records: &[pmscope_core::record::Record]) {
        let warnings: std::collections::BTreeSet<&str> = records
            .iter()
            .flat_map(|r| r.warnings.iter().map(|w| w.code.as_str()))
            .collect();
        println!(
            "{} records in {:.0} s; findings: {}",
            records.len(),
            self.started.elapsed().as_secs_f64(),
            warnings.into_iter().collect::<Vec<_>>().join(", ")
        );
        print!("{}", crate::render::precision::footer(records));
    }
}
