//! `pmscope suite NAME -t A -t B`: a named study — the seeds' figure sets — run as one run:
//! every step is an ordinary command line (so a suite measures exactly what the commands
//! measure, and `--help` of each step's command documents it), run in this process into
//! the same sink, each step on all targets so the targets are measured side by side. One
//! progress line per step with an estimate of the time left; the commands' own tables are
//! not printed (the records are: `--json`, `-o`, and `pmscope report` draws them).
//!
//! In the results store every point carries its step's index and every finished step is
//! marked, so `--resume RUN` keeps the finished steps (a step is identified by its index and
//! name), re-runs a step that was interrupted with its partial points replaced, and marks the
//! run complete: the resumed run holds each point once.

use crate::args::{Cli, Command, Study, SuiteArgs};
use crate::error::usage;
use crate::output::Sink;
use anyhow::{Context as _, Result};
use clap::Parser;
use pmscope_core::record::Record;
use pmscope_experiment::Env as Context;
use pmscope_experiment::params::TargetArgs;
use pmscope_mapping::TargetSpec;
use pmscope_store::RunId;
use std::collections::BTreeMap;
use std::time::Instant;

/// One step: a name and the command line after `pmscope`, without targets.
struct Step {
    name: &'static str,
    argv: Vec<&'static str>,
}

fn step(name: &'static str, argv: &[&'static str]) -> Step {
    Step {
        name,
        argv: argv.to_vec(),
    }
}

/// The steps of a study. `full` runs each command's thorough version instead of the budget
/// one (basic is sized to finish two targets in about two minutes on a 2-core machine).
/// Working sets and regions meant to measure memory are `auto` (each command's default,
/// sized to the machine's last-level cache), never a fixed size that a large cache holds.
fn steps(study: Study, full: bool) -> Vec<Step> {
    match study {
        Study::Basic if full => vec![
            step("latency, random", &["latency", "--full"]),
            step(
                "latency, sequential",
                &["latency", "--pattern", "seq", "--full"],
            ),
            step("instruction latency", &["inst", "--full"]),
            step(
                "bandwidth vs threads",
                &[
                    "bandwidth",
                    "--ops",
                    "read,write,ntstore,store+clwb",
                    "--pattern",
                    "seq",
                    "--sizes",
                    "4KiB",
                    "--full",
                ],
            ),
            step(
                "bandwidth vs access size",
                &[
                    "bandwidth",
                    "--ops",
                    "read,write",
                    "--pattern",
                    "rand",
                    "--sizes",
                    "64..64KiB",
                    "--threads",
                    "1",
                    "--full",
                ],
            ),
            step(
                "mixed read/write",
                &[
                    "bandwidth",
                    "--ops",
                    "write",
                    "--mix",
                    "split",
                    "--sizes",
                    "4KiB",
                    "--full",
                ],
            ),
            step("loaded latency", &["loaded", "--full"]),
            step(
                "loaded latency, 2:1 traffic",
                &["loaded", "--rw", "2:1", "--full"],
            ),
        ],
        Study::Basic => vec![
            step(
                "latency, random",
                &[
                    "latency",
                    "--sizes",
                    "4KiB..auto",
                    "--reps",
                    "3",
                    "--samples",
                    "50000",
                ],
            ),
            step(
                "latency, sequential",
                &[
                    "latency",
                    "--pattern",
                    "seq",
                    "--sizes",
                    "4KiB..auto:x4",
                    "--reps",
                    "3",
                    "--samples",
                    "0",
                ],
            ),
            step(
                "instruction latency",
                &[
                    "inst",
                    "--region",
                    "auto",
                    "--count",
                    "20000",
                    "--sizes",
                    "8,64,256,1024,4096",
                ],
            ),
            step(
                "bandwidth vs threads",
                &[
                    "bandwidth",
                    "--ops",
                    "read,write,ntstore,store+clwb",
                    "--pattern",
                    "seq",
                    "--sizes",
                    "4KiB",
                    "--region",
                    "auto",
                    "--reps",
                    "3",
                    "--duration",
                    "0.1",
                ],
            ),
            step(
                "bandwidth vs access size",
                &[
                    "bandwidth",
                    "--ops",
                    "read,write",
                    "--pattern",
                    "rand",
                    "--sizes",
                    "64..16KiB",
                    "--threads",
                    "1",
                    "--region",
                    "auto",
                    "--reps",
                    "3",
                    "--duration",
                    "0.1",
                ],
            ),
            step(
                "mixed read/write",
                &[
                    "bandwidth",
                    "--ops",
                    "write",
                    "--mix",
                    "split",
                    "--sizes",
                    "4KiB",
                    "--region",
                    "auto",
                    "--reps",
                    "3",
                    "--duration",
                    "0.1",
                ],
            ),
            step(
                "loaded latency",
                &[
                    "loaded",
                    "--delays",
                    "0,100,400,1600,6400",
                    "--samples",
                    "20000",
                    "--probe-region",
                    "auto",
                    "--traffic-region",
                    "auto",
                ],
            ),
            step(
                "loaded latency, 2:1 traffic",
                &[
                    "loaded",
                    "--rw",
                    "2:1",
                    "--delays",
                    "0,100,400,1600,6400",
                    "--samples",
                    "20000",
                    "--probe-region",
                    "auto",
                    "--traffic-region",
                    "auto",
                ],
            ),
        ],
        Study::Table5 => vec![step(
            "access latency by size (Table 5)",
            if full {
                &[
                    "inst",
                    "--ops",
                    "load,store,store+clflush",
                    "--fences",
                    "none,sfence",
                    "--sizes",
                    "64..4KiB",
                    "--full",
                ]
            } else {
                &[
                    "inst",
                    "--ops",
                    "load,store,store+clflush",
                    "--fences",
                    "none,sfence",
                    "--sizes",
                    "64..4KiB",
                    "--region",
                    "auto",
                    "--count",
                    "20000",
                ]
            },
        )],
        Study::Sync => vec![step(
            "synchronisation cost (pmmeter)",
            if full {
                &["sync", "--full"]
            } else {
                &["sync", "--region", "auto"]
            },
        )],
    }
}

/// What `--resume RUN` continues: the run, its targets, and the records of each step it
/// finished (in the order they were stored).
struct Resumed {
    run: RunId,
    targets: Vec<TargetSpec>,
    finished: BTreeMap<usize, Vec<Record>>,
}

fn study_name(a: &SuiteArgs) -> String {
    format!(
        "suite {}{}",
        format!("{:?}", a.study).to_lowercase(),
        if a.full { " --full" } else { "" }
    )
}

/// Checks that `selector` names an incomplete run of this very suite (same study, same
/// `--full`, same targets when `-t` is given) and reads what it finished.
fn plan_resume(
    ctx: &Context,
    sink: &Sink,
    a: &SuiteArgs,
    selector: &str,
    steps: &[Step],
) -> Result<Resumed> {
    let store = sink.store().ok_or_else(|| {
        usage("--resume continues a run of the results store; leave out --no-store")
    })?;
    let id = store.resolve(selector)?;
    let run = store.run(id)?;
    let wanted = study_name(a);
    if run.complete {
        return Err(usage(format!(
            "run {id} is complete, so there is nothing to resume; start a new run without --resume"
        )));
    }
    let shown = std::iter::once("pmscope")
        .chain(run.command_line.iter().skip(1).map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let original = match Cli::try_parse_from(&run.command_line) {
        Ok(Cli {
            command: Command::Suite(o),
            null_executor,
            ..
        }) if o.study == a.study && o.full == a.full && o.resume.is_none() => {
            // Synthetic and measured points never share a run.
            let null_now = ctx.executor == pmscope_runner::executor::Executor::Null;
            if null_executor != null_now {
                return Err(usage(format!(
                    "run {id} was {} the null executor, so it is resumed {} --null-executor",
                    if null_executor {
                        "made by"
                    } else {
                        "measured without"
                    },
                    if null_executor { "with" } else { "without" }
                )));
            }
            o
        }
        _ => {
            return Err(usage(format!(
                "run {id} is not a `pmscope {wanted}` run (it ran `{shown}`); resume it with its own study or start a new run"
            )));
        }
    };
    let (targets, _) = ctx.targets(&original.targets, &["dram:4k"])?;
    if !a.targets.targets.is_empty() {
        let (given, _) = ctx.targets(&a.targets, &["dram:4k"])?;
        if given != targets {
            return Err(usage(format!(
                "run {id} measured {}, not {}; resume it with the same targets, or without -t",
                join(&targets),
                join(&given)
            )));
        }
    }
    let done = store.finished_steps(id)?;
    for (i, name) in &done {
        if steps.get(*i).is_none_or(|s| s.name != name) {
            return Err(usage(format!(
                "run {id} was made by a pmscope whose {wanted} had other steps (step {} was '{name}'); start a new run",
                i + 1
            )));
        }
    }
    let mut finished: BTreeMap<usize, Vec<Record>> =
        done.iter().map(|(i, _)| (*i, Vec::new())).collect();
    for (step, record) in store.step_records(id)? {
        let Some(step) = step else {
            return Err(usage(format!(
                "run {id} holds points without their suite step (stored by an older pmscope), so it cannot be resumed; start a new run"
            )));
        };
        // Points of an unfinished step are replaced when that step runs again.
        if let Some(records) = finished.get_mut(&step) {
            records.push(record);
        }
    }
    Ok(Resumed {
        run: id,
        targets,
        finished,
    })
}

fn join(targets: &[TargetSpec]) -> String {
    targets
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A study's bandwidth steps name their ops; on a CPU without an op's instructions (no
/// clwb: store+clwb) the op is left out of the step rather than failing the study, as the
/// command's own default list does. Returns the ops left out.
fn leave_out_what_this_cpu_lacks(
    argv: &mut [String],
    f: &pmscope_sys::cpu::CpuFeatures,
) -> Vec<String> {
    use pmscope_loops::stream::{StreamOp, Streamer};
    if argv.get(1).map(String::as_str) != Some("bandwidth") {
        return Vec::new();
    }
    let Some(at) = argv.iter().position(|x| x == "--ops") else {
        return Vec::new();
    };
    let Some(list) = argv.get(at + 1).cloned() else {
        return Vec::new();
    };
    let width = Streamer::widest(f);
    let (keep, out): (Vec<&str>, Vec<&str>) = list.split(',').partition(|name| {
        StreamOp::parse(name).is_none_or(|op| Streamer::new(op, width, 64, f).is_ok())
    });
    argv[at + 1] = keep.join(",");
    out.into_iter().map(str::to_string).collect()
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &SuiteArgs) -> Result<()> {
    let steps = steps(a.study, a.full);
    let resumed = match &a.resume {
        Some(selector) => Some(plan_resume(ctx, sink, a, selector, &steps)?),
        None => None,
    };
    // The targets and mapping options are validated once, before any step runs; a resumed
    // run measures the targets it was started with.
    let target_args = match &resumed {
        Some(r) => TargetArgs {
            targets: r.targets.clone(),
            ..a.targets.clone()
        },
        None => a.targets.clone(),
    };
    let (targets, _) = ctx.targets(&target_args, &["dram:4k"])?;
    let mut common: Vec<String> = Vec::new();
    for t in &targets {
        common.extend(["-t".into(), t.to_string()]);
    }
    if let Some(m) = a.targets.max_mem {
        common.extend(["--max-mem".into(), format!("{}B", m.0)]);
    }
    for (flag, on) in [
        ("--keep", a.targets.keep),
        ("--require-dax", a.targets.require_dax),
        ("--destroy-data", a.targets.destroy_data),
    ] {
        if on {
            common.push(flag.into());
        }
    }
    // The run exists from the start, so a run killed before its first point is resumable.
    let run_id = sink.begin_run(&ctx.command_line, resumed.as_ref().map(|r| r.run))?;
    let human = sink.human();
    let started = Instant::now();
    let to_measure = steps.len() - resumed.as_ref().map_or(0, |r| r.finished.len());
    if human {
        println!(
            "pmscope {}: {} steps on {}{}{}",
            study_name(a),
            steps.len(),
            join(&targets),
            run_id.map_or(String::new(), |id| format!(", run {id}")),
            match &resumed {
                Some(r) => format!(" (resumed: {} steps finished before)", r.finished.len()),
                None => String::new(),
            }
        );
    }
    sink.set_quiet(true);
    let mut measured = 0;
    for (i, s) in steps.iter().enumerate() {
        if let Some(records) = resumed.as_ref().and_then(|r| r.finished.get(&i)) {
            for r in records {
                sink.replay(r)?;
            }
            if human {
                eprintln!(
                    "[{}/{}] {:<32} {:>4} records kept from the interrupted run",
                    i + 1,
                    steps.len(),
                    s.name,
                    records.len()
                );
            }
            continue;
        }
        let mut argv: Vec<String> = vec!["pmscope".into()];
        argv.extend(s.argv.iter().map(|x| x.to_string()));
        let left_out = leave_out_what_this_cpu_lacks(&mut argv, &ctx.features);
        if human && !left_out.is_empty() {
            eprintln!(
                "[{}/{}] {}: {} left out, this CPU lacks their instructions (see `pmscope list ops`)",
                i + 1,
                steps.len(),
                s.name,
                left_out.join(", "),
            );
        }
        argv.extend(common.iter().cloned());
        if let Some(c) = &a.cpus {
            let list = pmscope_core::cpulist::format_list(&c.0);
            if matches!(s.argv[0], "rap" | "latency" | "inst") {
                argv.extend(["--cpu".into(), c.0[0].to_string()]);
            } else {
                argv.extend(["--cpus".into(), list]);
            }
        }
        let cli = Cli::try_parse_from(&argv)
            .map_err(|e| anyhow::anyhow!("suite step '{}' does not parse: {e}", s.name))?;
        let t0 = Instant::now();
        let before = sink.records().len();
        sink.begin_step(i)?;
        super::dispatch(ctx, sink, &cli.command).with_context(|| {
            let resume = run_id.map_or(String::new(), |id| {
                format!(
                    "; `pmscope {} --resume {id}` continues the run",
                    study_name(a)
                )
            });
            format!(
                "suite step {} of {} ({}){resume}",
                i + 1,
                steps.len(),
                s.name
            )
        })?;
        sink.finish_step(i, s.name)?;
        measured += 1;
        if human {
            let done = started.elapsed().as_secs_f64();
            let left = done / measured as f64 * (to_measure - measured) as f64;
            eprintln!(
                "[{}/{}] {:<32} {:>4} records in {:>5.1} s   elapsed {:>5.0} s, about {:.0} s left",
                i + 1,
                steps.len(),
                s.name,
                sink.records().len() - before,
                t0.elapsed().as_secs_f64(),
                done,
                left
            );
        }
    }
    sink.set_quiet(false);
    if human {
        let warnings: std::collections::BTreeSet<&str> = sink
            .records()
            .iter()
            .flat_map(|r| r.warnings.iter().map(|w| w.code.as_str()))
            .collect();
        println!(
            "{} records in {:.0} s; findings: {}",
            sink.records().len(),
            started.elapsed().as_secs_f64(),
            warnings.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every step of every study is a command line the parser accepts.
    #[test]
    fn the_steps_leave_out_ops_this_cpu_lacks() {
        let old = pmscope_sys::cpu::CpuFeatures::baseline();
        for study in [Study::Basic, Study::Table5, Study::Sync] {
            for full in [false, true] {
                for s in steps(study, full) {
                    let mut argv: Vec<String> = vec!["pmscope".into()];
                    argv.extend(s.argv.iter().map(|x| x.to_string()));
                    let out = leave_out_what_this_cpu_lacks(&mut argv, &old);
                    assert!(out.iter().all(|o| o == "store+clwb"), "{out:?}");
                    assert!(!argv.iter().any(|x| x.contains("store+clwb")), "{argv:?}");
                }
            }
        }
        let mut argv: Vec<String> = ["pmscope", "bandwidth", "--ops", "read,store+clwb"]
            .map(String::from)
            .to_vec();
        let modern = pmscope_sys::cpu::CpuFeatures { clwb: true, ..old };
        assert!(leave_out_what_this_cpu_lacks(&mut argv, &modern).is_empty());
        assert_eq!(argv[3], "read,store+clwb");
    }

    #[test]
    fn every_step_parses() {
        for study in [Study::Basic, Study::Table5, Study::Sync] {
            for full in [false, true] {
                for s in steps(study, full) {
                    let mut argv = vec!["pmscope"];
                    argv.extend(&s.argv);
                    argv.extend(["-t", "dram:4k"]);
                    Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{}: {e}", s.name));
                }
            }
        }
    }
}
