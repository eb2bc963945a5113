//! What the measuring thread of `loaded` times: a dependent-load chain, or a persist
//! operation (a storing row of the op catalog), and how one point of it is measured.

use super::Plan;
use crate::measure::{Sampled, chase_latency};
use anyhow::Result;
use pmscope_core::summary::Summary;
use pmscope_loops::Region;
use pmscope_loops::access::{self, FenceKind, FlushKind, Op, Sequence, Width};
use pmscope_loops::catalog;
use pmscope_loops::chain::ChainSpec;
use pmscope_loops::chase::{Chaser, single_timing_overhead};
use pmscope_loops::offsets::access_offsets;
use pmscope_persist::PersistStrategy;
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::BlockIndex;
use pmscope_runner::repeat::{RepeatPolicy, Watch};
use pmscope_runner::timer::Timer;
use pmscope_sys::cpu::CpuFeatures;
use std::str::FromStr;

/// What the measuring thread measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Dependent loads over a random chain.
    Chase,
    /// A store of one line, its flush and a fence, timed as one access.
    Persist(Op, FenceKind),
}

/// Parses `--probe`: `chase`, a persist strategy name (meaning the catalog row that
/// performs its store, flush and drain), or any storing row of the op catalog by id or
/// alias (`store+clwb+sfence`, `SW`).
pub fn parse_probe(s: &str) -> Result<Probe, String> {
    if s == "chase" {
        return Ok(Probe::Chase);
    }
    let row = s
        .parse::<PersistStrategy>()
        .ok()
        .and_then(catalog::for_strategy)
        .or_else(|| catalog::find(s))
        .filter(|r| r.op.writes())
        .ok_or_else(|| {
            format!(
                "'{s}' is not a probe: use chase, a persist strategy ({}), or a storing op such as store+clwb+sfence or SW (see `pmscope list ops`)",
                catalog::strategy_names()
            )
        })?;
    Ok(Probe::Persist(row.op, row.fence))
}

/// `--probe` as given (the records' `probe` keeps the user's spelling) and what it means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeArg {
    /// The name given.
    pub name: String,
    /// The probe it names.
    pub probe: Probe,
}

impl FromStr for ProbeArg {
    type Err = String;
    fn from_str(s: &str) -> Result<ProbeArg, String> {
        Ok(ProbeArg {
            name: s.to_string(),
            probe: parse_probe(s)?,
        })
    }
}

/// The persist strategy a persist probe's op amounts to (for the persistence-domain
/// finding): the strategy whose recipe stores and writes back a line as `op` does
/// (`Op::of_recipe` read backwards). An op that neither writes its lines back nor stores
/// around the cache persists nothing, whatever strategy shares its store (`none`, `msync`).
pub fn persist_strategy_of(op: Op) -> Option<PersistStrategy> {
    if op.flush() == FlushKind::None && !op.nontemporal() {
        return None;
    }
    pmscope_persist::STRATEGIES
        .into_iter()
        .find(|s| Op::of_recipe(&s.recipe()) == Some(op))
}

/// What measures one point of the probe under the watch it is handed.
pub type Measurer<'r> = Box<dyn FnMut(&mut dyn Watch) -> Result<Point> + 'r>;

/// Builds what measures one point of the probe (the chain is built once, here); each call
/// measures one point (its `delay_ns` is filled in by the caller) under the watch given,
/// its median judged against the precision `target`: the block's share of its samples and
/// repetitions, at the block's own random addresses.
pub fn measurer<'r>(
    p: &Plan,
    region: &'r mut Region<'_>,
    (executor, target, block): (Executor, Option<f64>, BlockIndex),
    timer: &'r Timer,
    features: &CpuFeatures,
) -> Result<Measurer<'r>> {
    let samples = block.share(p.samples);
    let repetition = crate::measure::LatencyPlan {
        reps: block.share(p.repetition.reps),
        rep_ns: p.repetition.rep_ns * block.rep_scale(p.repetition.reps),
    };
    let seed = block.seed(p.seed);
    if executor == Executor::Null {
        return Ok(Box::new(move |_| {
            let s = Sampled::of(&Executor::synthetic(samples, 120.0), target, 0.0);
            Ok(Point::probe(s.summary.mean, s))
        }));
    }
    // One operation per timing: the values come in the timer's steps.
    let step = timer.info().resolution_ns;
    Ok(match p.probe.probe {
        Probe::Chase => {
            let spec = ChainSpec {
                seed,
                ..ChainSpec::default()
            };
            let len = region.len();
            let mut chaser = Chaser::build(region, len, &spec)?;
            let overhead = single_timing_overhead(10_001);
            // The mean is a side figure: its repetitions are not extended.
            let fixed = RepeatPolicy::new(repetition.reps, None);
            Box::new(move |watch| {
                let means = chase_latency(&mut chaser, timer, repetition.rep_ns, &fixed, watch)?;
                let mean = Summary::of(&means.kept).expect("finite").p50;
                let (s, _) = Sampled::watched(watch, target, step, || {
                    let mut ticks = vec![0u64; samples];
                    chaser.time_each(&mut ticks);
                    ticks.iter().map(|&t| timer.net_ns(t, overhead)).collect()
                });
                Ok(Point::probe(mean, s))
            })
        }
        Probe::Persist(op, fence) => {
            let seq = Sequence::new(op, fence, Width::widest(features), features)?;
            let offs = access_offsets(samples, 64, region.len(), true, seed);
            let overhead = access::timing_overhead(10_001);
            Box::new(move |watch| {
                let (s, _) = Sampled::watched(watch, target, step, || {
                    let mut ticks = vec![0u64; samples];
                    seq.time_each(region, 64, &offs, false, &mut ticks);
                    ticks.iter().map(|&t| timer.net_ns(t, overhead)).collect()
                });
                Ok(Point::probe(s.summary.mean, s))
            })
        }
    })
}

/// One point of the curve, as measured (the traffic's bandwidth is added from the other
/// workers).
pub struct Point {
    /// The delay injected after every traffic access; `None` for the idle point.
    pub delay_ns: Option<u64>,
    /// The traffic's bandwidth in GB/s, all traffic workers together.
    pub traffic_gb_s: f64,
    /// The probe's mean latency in ns.
    pub mean_ns: f64,
    /// The probe's individually timed operations, in ns: their summary and precision.
    pub samples: Sampled,
}

impl Point {
    /// A point of the probe (its delay and traffic are filled in later).
    pub fn probe(mean_ns: f64, samples: Sampled) -> Point {
        Point {
            delay_ns: None,
            traffic_gb_s: 0.0,
            mean_ns,
            samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_loops::access::OPS;

    #[test]
    fn probes() {
        assert_eq!(parse_probe("chase"), Ok(Probe::Chase));
        assert_eq!(
            parse_probe("store+clwb+sfence"),
            Ok(Probe::Persist(Op::StoreClwb, FenceKind::Sfence))
        );
        assert_eq!(
            parse_probe("ntstore+mfence"),
            Ok(Probe::Persist(Op::NtStore, FenceKind::Mfence))
        );
        assert_eq!(
            parse_probe("clwb"),
            Ok(Probe::Persist(Op::StoreClwb, FenceKind::Sfence))
        );
        assert_eq!(
            parse_probe("SW"),
            Ok(Probe::Persist(Op::StoreClwb, FenceKind::Mfence))
        );
        assert_eq!(
            parse_probe("ntstore"),
            Ok(Probe::Persist(Op::NtStore, FenceKind::Sfence)),
            "the strategy, not the undrained row"
        );
        assert!(parse_probe("load+mfence").is_err());
        assert!(parse_probe("store+clwb+xfence").is_err());
        assert!(parse_probe("bogus").is_err());
        let given: ProbeArg = "SW".parse().unwrap();
        assert_eq!(given.name, "SW", "the records keep the name given");
    }

    /// Each op that persists amounts to the strategy of the same store and write-back; the
    /// others to none.
    #[test]
    fn persist_strategies_of_the_ops() {
        let of: Vec<(Op, Option<PersistStrategy>)> = OPS
            .into_iter()
            .map(|o| (o, persist_strategy_of(o)))
            .collect();
        assert_eq!(
            of,
            [
                (Op::Load, None),
                (Op::NtLoad, None),
                (Op::Store, None),
                (Op::StoreClflush, Some(PersistStrategy::Clflush)),
                (Op::StoreClflushopt, Some(PersistStrategy::Clflushopt)),
                (Op::StoreClwb, Some(PersistStrategy::Clwb)),
                (Op::NtStore, Some(PersistStrategy::Ntstore)),
            ]
        );
    }
}
