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
pub mod rounds;
pub mod studies;

use crate::params::{Cpus, TargetArgs};
use crate::{Env, Output, Placement, Step};
use anyhow::{Context as _, Result};
use clap::Args;
use pmscope_core::record::Record;
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
    // A resumed run keeps the blocks it was started with.
    if let Some(r) = &resumed {
        env.blocks = r.blocks;
    }
    let names = rounds::step_names(&steps);
    let units = rounds::units(&names, env.blocks);
    let human = out.human();
    let mut progress = Progress::new(human, units.len(), resumed.as_ref());
    if human {
        crate::stdout::line(&format!(
            "pmscope {}: {} steps on {}{}{}{}",
            a.title(),
            steps.len(),
            resume::join(&placement.targets.targets),
            if units.len() > steps.len() {
                format!(
                    ", each point in {} blocks taken in turn over the run",
                    env.blocks
                )
            } else {
                String::new()
            },
            run_id.map_or(String::new(), |id| format!(", run {id}")),
            match &resumed {
                Some(r) => format!(" (resumed: {} steps finished before)", r.finished.len()),
                None => String::new(),
            }
        ))?;
    }
    let study = StudyRun {
        title: a.title(),
        steps: &steps,
        placement: &placement,
        resumed: resumed.as_ref(),
        run_id,
    };
    out.set_quiet(true);
    // Each step's block records, merged into the step once every round is in; the records
    // of the steps run whole.
    let mut blocks: Vec<Vec<Record>> = vec![Vec::new(); steps.len()];
    let mut whole: Vec<Record> = Vec::new();
    for (k, unit) in units.iter().enumerate() {
        let made = study.run_unit(env, out, (k, unit), &mut progress)?;
        match unit.round {
            Some(_) => blocks[unit.step].extend(made),
            None => whole.extend(made),
        }
    }
    out.set_store_only(false);
    let shown = if units.len() > steps.len() {
        whole.extend(merge_rounds(
            env,
            out,
            &steps,
            &units,
            blocks,
            resumed.as_ref(),
        )?);
        whole
    } else {
        out.records().to_vec()
    };
    out.set_quiet(false);
    if human {
        progress.summary(&shown)?;
    }
    Ok(())
}

/// What every unit of a study run shares.
struct StudyRun<'a> {
    title: String,
    steps: &'a [(&'static str, Step)],
    placement: &'a Placement,
    resumed: Option<&'a resume::Resumed>,
    run_id: Option<pmscope_store::RunId>,
}

impl StudyRun<'_> {
    /// Removes this run from the store if it holds no point and no finished step (and was
    /// not resumed); whether it did.
    fn forget_if_empty(&self, out: &dyn Output) -> bool {
        let (Some(store), Some(id)) = (out.store(), self.run_id) else {
            return false;
        };
        if self.resumed.is_some() {
            return false;
        }
        let empty = store.records(id).is_ok_and(|r| r.is_empty())
            && store.finished_steps(id).is_ok_and(|s| s.is_empty());
        empty && store.remove_run(id).is_ok()
    }

    /// Runs the `k`-th unit (or replays it, finished before an interruption) and returns
    /// the records it made; a block of a step merged before the interruption is skipped.
    fn run_unit(
        &self,
        env: &mut Env,
        out: &mut dyn Output,
        (k, unit): (usize, &rounds::Unit),
        progress: &mut Progress,
    ) -> Result<Vec<Record>> {
        let finished = |i: usize| self.resumed.and_then(|r| r.finished.get(&i));
        let (name, step) = &self.steps[unit.step];
        if unit.round.is_some() && finished(unit.step).is_some() {
            return Ok(Vec::new()); // merged before the interruption: replayed with its step
        }
        out.set_store_only(unit.round.is_some());
        if let Some(records) = finished(unit.index) {
            for r in records {
                out.replay(r)?;
            }
            progress.kept(k, &unit.name, records.len());
            return Ok(records.clone());
        }
        let mut step: Step = step.clone();
        // The null executor (the tests' synthetic mode) cannot stand in for a real server:
        // `app` refuses it, so a suite under it records the step as run with nothing
        // measured and says so, rather than stopping the study there.
        if env.executor == Executor::Null && matches!(step, Step::App(_)) {
            progress.not_synthetic(k, name);
            out.begin_step(unit.index)?;
            out.finish_step(unit.index, name)?;
            return Ok(Vec::new());
        }
        step.place(self.placement);
        let left_out = step.fit_to_cpu(&env.features);
        progress.left_out(k, &unit.name, &left_out);
        let before = out.records().len();
        out.begin_step(unit.index)?;
        env.round = unit.round;
        let measured = step.run(env, out);
        env.round = None;
        // A run that stopped before it stored anything (a target that is not there, an
        // interrupt in the first block) has nothing to resume: it is removed, and the
        // message offers no resume.
        let resumable = measured.is_ok() || !self.forget_if_empty(out);
        measured.with_context(|| {
            let resume = self
                .run_id
                .filter(|_| resumable)
                .map_or(String::new(), |id| {
                    format!(
                        "; `pmscope {}{} --resume {id}` continues the run",
                        store_option(std::env::args_os().map(|a| a.to_string_lossy().into_owned())),
                        self.title
                    )
                });
            format!(
                "suite step {} of {} ({}){resume}",
                k + 1,
                progress.steps,
                unit.name
            )
        })?;
        out.finish_step(unit.index, &unit.name)?;
        progress.measured(k, &unit.name, out.records().len() - before);
        Ok(out.records()[before..].to_vec())
    }
}

/// Once every round is in: each step measured in blocks gets its points merged over their
/// blocks and its derived records, stored as the step itself; its units are discarded.
/// A step merged before an interruption is replayed. Returns the merged records.
fn merge_rounds(
    env: &Env,
    out: &mut dyn Output,
    steps: &[(&'static str, Step)],
    units: &[rounds::Unit],
    blocks: Vec<Vec<Record>>,
    resumed: Option<&resume::Resumed>,
) -> Result<Vec<Record>> {
    let finished = |i: usize| resumed.and_then(|r| r.finished.get(&i));
    let mut shown = Vec::new();
    for (i, ((name, step), block_records)) in steps.iter().zip(blocks).enumerate() {
        let step_units: Vec<usize> = units
            .iter()
            .filter(|u| u.step == i && u.round.is_some())
            .map(|u| u.index)
            .collect();
        if step_units.is_empty() {
            continue; // run whole: shown as it was emitted
        }
        if let Some(records) = finished(i) {
            for r in records {
                out.replay(r)?;
            }
            shown.extend(records.iter().cloned());
        } else {
            let parts = block_records.into_iter().map(|r| (r, None)).collect();
            let mut merged = pmscope_core::blocks::merge_points(parts, env.precision);
            merged.extend(step.derive(&merged));
            out.begin_step(i)?;
            for r in &merged {
                out.emit(r)?;
            }
            out.finish_step(i, name)?;
            shown.extend(merged);
        }
        for u in step_units {
            out.discard_step(u)?;
        }
    }
    Ok(shown)
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

    fn summary(&self, records: &[Record]) -> Result<(), crate::stdout::StdoutClosed> {
        let warnings: std::collections::BTreeSet<&str> = records
            .iter()
            .flat_map(|r| r.warnings.iter().map(|w| w.code.as_str()))
            .collect();
        crate::stdout::line(&format!(
            "{} records in {:.0} s; findings: {}",
            records.len(),
            self.started.elapsed().as_secs_f64(),
            warnings.into_iter().collect::<Vec<_>>().join(", ")
        ))?;
        crate::stdout::print(&crate::render::precision::footer(records))
    }
}

/// `--results PATH ` as the command line gave it (empty without one): a resume hint must name
/// the store the run is in, or it would look for the run in the default one.
fn store_option(args: impl Iterator<Item = String>) -> String {
    let args: Vec<String> = args.collect();
    let path = args.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--results=")
            .map(str::to_string)
            .or_else(|| {
                (a == "--results")
                    .then(|| args.get(i + 1).cloned())
                    .flatten()
            })
    });
    match path {
        Some(p)
            if p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c)) =>
        {
            format!("--results {p} ")
        }
        Some(p) => format!("--results '{}' ", p.replace('\'', "'\\''")),
        None => String::new(),
    }
}

#[cfg(test)]
mod store_option_tests {
    use super::store_option;

    fn of(args: &[&str]) -> String {
        store_option(args.iter().map(|s| s.to_string()))
    }

    /// The hint repeats the store the command named, quoted for a shell where it must be.
    #[test]
    fn the_resume_hint_names_the_store_the_run_is_in() {
        assert_eq!(of(&["pmscope", "suite", "tiers"]), "");
        assert_eq!(
            of(&["pmscope", "--results", "/tmp/r.sqlite", "suite", "tiers"]),
            "--results /tmp/r.sqlite "
        );
        assert_eq!(
            of(&["pmscope", "--results=/tmp/my runs.sqlite", "suite"]),
            "--results '/tmp/my runs.sqlite' "
        );
        assert_eq!(
            of(&["pmscope", "--results", "it's.sqlite"]),
            "--results 'it'\\''s.sqlite' "
        );
    }
}
