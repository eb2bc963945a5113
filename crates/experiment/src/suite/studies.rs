//! The studies, as data: each step is an experiment with its typed parameters, starting
//! from the command line's defaults ([`defaults`]). `full` runs each experiment's thorough
//! version instead of the budget one (basic is sized to finish two targets in about two
//! minutes on a 2-core machine). Working sets and regions meant to measure memory are
//! `auto` (each experiment's default, sized to the machine's last-level cache), never a
//! fixed size that a large cache holds.

use crate::bandwidth::{self, Mix};
use crate::loaded::{self, Rw};
use crate::params::{Count, Patterns, Seconds};
use crate::{Step, defaults, inst, latency, sync};
use pmscope_loops::access::{FenceKind, Op};
use pmscope_loops::chain::Order;
use pmscope_loops::stream::StreamOp;

/// The studies `pmscope suite` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Study {
    /// Seed 004 section 3: idle latency (random, sequential), instruction latency,
    /// bandwidth vs threads per op, bandwidth vs access size, mixed read/write, loaded
    /// latency. About 2 minutes for two targets on 2 cores.
    Basic,
    /// Seed 003 Table 5: single-thread latency by access size, rand/seq x read/write/
    /// write+flush, with slowdown factors against the first target.
    Table5,
    /// Seed 002: the cost of each synchronisation option (pmmeter).
    Sync,
    /// The tier studies of seeds 003 and 004: the best thread count per access size
    /// (seed 004 Fig. 11), the K-mer tables side by side on each target (seed 003 Table 9,
    /// Fig. 18; a table a target cannot hold is left out there with a warning), and
    /// memcached over store sizes with pinned server and client threads and repeated runs
    /// (seed 004 Figs. 20-22). Needs ./dev setup's genomes and memcached; about 2 minutes
    /// per target on 2 cores.
    Tiers,
}

impl Study {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Study::Basic => "basic",
            Study::Table5 => "table5",
            Study::Sync => "sync",
            Study::Tiers => "tiers",
        }
    }
}

/// The steps of a study: a name (stored with each point) and the step.
pub fn steps(study: Study, full: bool) -> Vec<(&'static str, Step)> {
    match study {
        Study::Basic if full => basic_full(),
        Study::Basic => basic(),
        Study::Table5 => vec![("access latency by size (Table 5)", table5(full))],
        Study::Sync => vec![(
            "synchronisation cost (pmmeter)",
            Step::Sync(sync::Params { full, ..defaults() }),
        )],
        Study::Tiers => tiers(full),
    }
}

/// The tier study: bandwidth over every thread count at each access size, the K-mer
/// tables on each target, memcached by store size. The budget version counts one S. aureus
/// genome and sweeps two store sizes; `full` counts all five references and sweeps the
/// store past 1 GiB.
fn tiers(full: bool) -> Vec<(&'static str, Step)> {
    let (sizes, reps, duration) = if full {
        ("64..128KiB:x2", 5, 0.5)
    } else {
        ("64..16KiB:x4", 3, 0.1)
    };
    let genomes: Vec<String> = crate::kmer::demo::genomes(
        std::path::Path::new(crate::kmer::demo::RAGOUT),
        std::path::Path::new(crate::kmer::demo::KAPTIVE),
    )
    .map(|(in_group, _)| in_group)
    .unwrap_or_default()
    .into_iter()
    .take(if full { usize::MAX } else { 1 })
    .map(|g| g.display().to_string())
    .collect();
    let mut kmer = vec!["bench", "-k", "31"];
    kmer.extend(genomes.iter().map(String::as_str));
    let store_sizes = if full {
        "64MiB,256MiB,1GiB,4GiB"
    } else {
        "64MiB,256MiB"
    };
    let app_duration = if full { "5" } else { "1" };
    vec![
        (
            "best thread count per access size",
            Step::Bandwidth(bandwidth::Params {
                ops: Some(vec![StreamOp::Read, StreamOp::Write, StreamOp::NtStore]),
                pattern: Patterns::Seq,
                sizes: Some(sizes.into()),
                reps: Some(Count(reps)),
                duration: Some(Seconds(duration)),
                ..defaults()
            }),
        ),
        (
            "K-mer tables side by side (Table 9)",
            Step::Kmer(parsed(&kmer)),
        ),
        (
            "memcached by store size",
            Step::App(parsed(&[
                "memcached",
                "--store-sizes",
                store_sizes,
                "--reps",
                "3",
                "--duration",
                app_duration,
            ])),
        ),
    ]
}

/// An experiment's parameters as its command line would give them, for steps whose
/// command takes a required argument (a subcommand, a server).
fn parsed<P: clap::Args + clap::FromArgMatches>(args: &[&str]) -> P {
    let cmd = P::augment_args(clap::Command::new("step").no_binary_name(true));
    let m = cmd
        .try_get_matches_from(args)
        .unwrap_or_else(|e| panic!("a study's step {args:?} parses: {e}"));
    P::from_arg_matches(&m).expect("a study's step is valid")
}

/// The thorough basic study: each experiment's `--full`.
fn basic_full() -> Vec<(&'static str, Step)> {
    let bw = |ops: &[StreamOp], pattern, sizes: &str| bandwidth::Params {
        ops: Some(ops.to_vec()),
        pattern,
        sizes: Some(sizes.into()),
        full: true,
        ..defaults()
    };
    vec![
        ("latency, random", latency_full(Order::Random)),
        ("latency, sequential", latency_full(Order::Sequential)),
        (
            "instruction latency",
            Step::Inst(inst::Params {
                full: true,
                ..defaults()
            }),
        ),
        (
            "bandwidth vs threads",
            Step::Bandwidth(bw(THREAD_OPS, Patterns::Seq, "4KiB")),
        ),
        (
            // Every thread count, as seed 004 Figure 11 draws each access size at its best
            // (the `bandwidth-best` records, report's best-thread-count figure).
            "bandwidth vs access size",
            Step::Bandwidth(bw(SIZE_OPS, Patterns::Rand, "64..64KiB")),
        ),
        (
            "mixed read/write",
            Step::Bandwidth(bandwidth::Params {
                mix: Some(Mix::Split),
                ..bw(&[StreamOp::Write], Patterns::Both, "4KiB")
            }),
        ),
        ("loaded latency", loaded_full(None)),
        ("loaded latency, 2:1 traffic", loaded_full(Some(TWO_TO_ONE))),
    ]
}

/// The budget basic study.
fn basic() -> Vec<(&'static str, Step)> {
    let bw = |ops: &[StreamOp], pattern, sizes: &str| bandwidth::Params {
        ops: Some(ops.to_vec()),
        pattern,
        sizes: Some(sizes.into()),
        reps: Some(Count(3)),
        duration: Some(Seconds(0.1)),
        ..defaults()
    };
    let loaded = |rw| {
        Step::Loaded(loaded::Params {
            rw,
            delays: "0,100,400,1600,6400".into(),
            samples: Some(Count(20_000)),
            ..defaults()
        })
    };
    vec![
        (
            "latency, random",
            latency(Order::Random, "4KiB..auto", 50_000),
        ),
        (
            "latency, sequential",
            latency(Order::Sequential, "4KiB..auto:x4", 0),
        ),
        (
            "instruction latency",
            Step::Inst(inst::Params {
                count: Some(Count(20_000)),
                sizes: Some("8,64,256,1024,4096".into()),
                ..defaults()
            }),
        ),
        (
            "bandwidth vs threads",
            Step::Bandwidth(bw(THREAD_OPS, Patterns::Seq, "4KiB")),
        ),
        (
            "bandwidth vs access size",
            Step::Bandwidth(bandwidth::Params {
                threads: Some("1".into()),
                ..bw(SIZE_OPS, Patterns::Rand, "64..16KiB")
            }),
        ),
        (
            "mixed read/write",
            Step::Bandwidth(bandwidth::Params {
                mix: Some(Mix::Split),
                ..bw(&[StreamOp::Write], Patterns::Both, "4KiB")
            }),
        ),
        ("loaded latency", loaded(None)),
        ("loaded latency, 2:1 traffic", loaded(Some(TWO_TO_ONE))),
    ]
}

/// The ops of the thread sweep: reads, writes, non-temporal stores, stores written back.
const THREAD_OPS: &[StreamOp] = &[
    StreamOp::Read,
    StreamOp::Write,
    StreamOp::NtStore,
    StreamOp::StoreClwb,
];

/// The ops of the access-size sweep.
const SIZE_OPS: &[StreamOp] = &[StreamOp::Read, StreamOp::Write];

/// Two reads per write: seed 004's loaded-latency traffic mix.
const TWO_TO_ONE: Rw = Rw {
    reads: 2,
    writes: 1,
};

fn latency(pattern: Order, sizes: &str, samples: usize) -> Step {
    Step::Latency(latency::Params {
        pattern,
        sizes: Some(sizes.into()),
        reps: Some(Count(3)),
        samples: Some(samples),
        ..defaults()
    })
}

fn latency_full(pattern: Order) -> Step {
    Step::Latency(latency::Params {
        pattern,
        full: true,
        ..defaults()
    })
}

fn loaded_full(rw: Option<Rw>) -> Step {
    Step::Loaded(loaded::Params {
        rw,
        full: true,
        ..defaults()
    })
}

/// Seed 003 Table 5: loads, stores and stores flushed, unfenced and fenced, by size.
fn table5(full: bool) -> Step {
    let base = inst::Params {
        ops: Some(vec![Op::Load, Op::Store, Op::StoreClflush]),
        fences: Some(vec![FenceKind::None, FenceKind::Sfence]),
        sizes: Some("64..4KiB".into()),
        ..defaults()
    };
    Step::Inst(if full {
        inst::Params { full: true, ..base }
    } else {
        inst::Params {
            count: Some(Count(20_000)),
            ..base
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_sys::cpu::CpuFeatures;

    /// Every step of every study is a valid experiment (its defaults parse) and has a name
    /// of its own within its study (the store identifies finished steps by index and name).
    #[test]
    fn every_study_is_made_of_named_steps() {
        for study in [Study::Basic, Study::Table5, Study::Sync, Study::Tiers] {
            for full in [false, true] {
                let steps = steps(study, full);
                assert!(!steps.is_empty());
                let mut names: Vec<&str> = steps.iter().map(|(n, _)| *n).collect();
                names.sort();
                names.dedup();
                assert_eq!(names.len(), steps.len(), "{study:?} {full}");
            }
        }
    }

    /// On a CPU without clwb, the bandwidth steps leave store+clwb out and say so; on one
    /// with it, nothing is left out.
    #[test]
    fn the_steps_leave_out_ops_this_cpu_lacks() {
        let old = CpuFeatures::baseline();
        let modern = CpuFeatures { clwb: true, ..old };
        for study in [Study::Basic, Study::Table5, Study::Sync, Study::Tiers] {
            for full in [false, true] {
                for (_, mut step) in steps(study, full) {
                    let mut again = step.clone();
                    let out = step.fit_to_cpu(&old);
                    assert!(out.iter().all(|o| o == "store+clwb"), "{out:?}");
                    if let Step::Bandwidth(p) = &step {
                        assert!(!p.ops.iter().flatten().any(|o| *o == StreamOp::StoreClwb));
                    }
                    assert!(again.fit_to_cpu(&modern).is_empty());
                }
            }
        }
    }

    /// The tier study's K-mer step is the bench, placed on the suite's targets with the
    /// tables a target cannot hold left out rather than refused.
    #[test]
    fn the_tier_study_benches_the_kmer_tables_and_loads_memcached_by_store_size() {
        let steps = steps(Study::Tiers, false);
        let mut kmer = steps
            .iter()
            .find_map(|(_, s)| match s {
                Step::Kmer(p) => Some(p.clone()),
                _ => None,
            })
            .expect("a kmer step");
        let on = crate::Placement {
            targets: crate::params::TargetArgs {
                targets: vec!["dram:4k".parse().unwrap()],
                ..defaults()
            },
            cpus: None,
        };
        <crate::kmer::Kmer as crate::Experiment>::place(&mut kmer, &on);
        match &kmer.command {
            crate::kmer::params::Command::Bench(b) => {
                assert_eq!(b.targets.targets, on.targets.targets);
            }
            other => panic!("the tier study's kmer step is {other:?}"),
        }
        let app = steps
            .iter()
            .find_map(|(_, s)| match s {
                Step::App(p) => Some(p.clone()),
                _ => None,
            })
            .expect("an app step");
        assert_eq!(app.store_sizes.as_deref(), Some("64MiB,256MiB"));
        assert_eq!(app.reps.map(|r| r.0), Some(3));
        let Some((_, Step::Bandwidth(bw))) = steps.first() else {
            panic!("the first step is the bandwidth sweep");
        };
        assert_eq!(
            bw.threads, None,
            "every thread count, so each size has a best"
        );
    }
}
