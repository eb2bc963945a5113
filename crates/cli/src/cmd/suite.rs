//! `pmscope suite NAME -t A -t B`: a named study — the seeds' figure sets — run as one run:
//! every step is an ordinary command line (so a suite measures exactly what the commands
//! measure, and `--help` of each step's command documents it), run in this process into
//! the same sink, each step on all targets so the targets are measured side by side. One
//! progress line per step with an estimate of the time left; the commands' own tables are
//! not printed (the records are: `--json`, `-o`, and `pmscope report` draws them).

use crate::args::{Cli, Study, SuiteArgs};
use crate::context::Context;
use crate::output::Sink;
use anyhow::{Context as _, Result};
use clap::Parser;
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
                    "4KiB..256MiB",
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
                    "4KiB..256MiB:x4",
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
                    "256MiB",
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
                    "256MiB",
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
                    "256MiB",
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
                    "256MiB",
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
                    "256MiB",
                    "--traffic-region",
                    "128MiB",
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
                    "256MiB",
                    "--traffic-region",
                    "128MiB",
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
                    "256MiB",
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
                &["sync", "--region", "256MiB"]
            },
        )],
    }
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &SuiteArgs) -> Result<()> {
    // The targets and mapping options are validated once, before any step runs.
    let (targets, _) = ctx.targets(&a.targets, &["dram:4k"])?;
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
    let steps = steps(a.study, a.full);
    let human = sink.human();
    let started = Instant::now();
    if human {
        println!(
            "pmscope suite {}: {} steps on {}",
            format!("{:?}", a.study).to_lowercase(),
            steps.len(),
            targets
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    sink.set_quiet(true);
    for (i, s) in steps.iter().enumerate() {
        let mut argv: Vec<String> = vec!["pmscope".into()];
        argv.extend(s.argv.iter().map(|x| x.to_string()));
        argv.extend(common.iter().cloned());
        if let Some(c) = &a.cpus {
            let list = pmscope_core::cpulist::format_list(&c.0);
            let flag = if matches!(s.argv[0], "latency" | "inst" | "rap") {
                c.0[0].to_string()
            } else {
                list
            };
            argv.extend(["--cpus".into(), flag]);
        }
        let cli = Cli::try_parse_from(&argv)
            .map_err(|e| anyhow::anyhow!("suite step '{}' does not parse: {e}", s.name))?;
        let t0 = Instant::now();
        let before = sink.records().len();
        super::dispatch(ctx, sink, &cli.command)
            .with_context(|| format!("suite step {} of {} ({})", i + 1, steps.len(), s.name))?;
        if human {
            let done = started.elapsed().as_secs_f64();
            let left = done / (i + 1) as f64 * (steps.len() - i - 1) as f64;
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
