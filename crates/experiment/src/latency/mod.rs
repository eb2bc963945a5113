//! `pmscope latency`: idle load latency by dependent-load chains over a working-set sweep,
//! with a per-load distribution at the largest point, the cache plateaus found, and the
//! difference between targets at the largest point (the TLB effect between 4k and thp).

mod render;

use crate::error::usage;
use crate::measure::{
    LatencyPlan, Sampled, Sampler, chase_distribution, chase_latency, chaser, with_repetitions,
};
use crate::output::Output;
use crate::params::{AutoSize, Count, Size, TargetArgs};
use crate::progress::Progress;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::LogHistogram;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{p, v};
use pmscope_loops::Region;
use pmscope_loops::chain::{ChainSpec, Order};
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::{BlockIndex, TargetRun};
use pmscope_runner::interrupt;
use pmscope_runner::repeat::{RepeatPolicy, Repeated, SystemWatch, Workers};
use pmscope_runner::timer::Timer;

/// The least the default sweep's end is (`auto`: 4x the last-level cache, at least this).
pub const SWEEP_END_FLOOR: u64 = 1 << 30;

/// `pmscope latency`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Chain order: random (one random cycle), sequential (fixed stride), random-in-page.
    #[arg(long, default_value_t = Order::Random)]
    pub pattern: Order,
    /// Element size (the stride of sequential chains): 64B, or 256B for Optane's XPLine.
    #[arg(long, default_value = "64B", value_name = "SIZE")]
    pub element: Size,
    /// Working sets (sweep axis, e.g. 4KiB..1GiB or 1MiB,1GiB; `auto` stands for the
    /// default end, e.g. 4KiB..auto:x4). Default: 4 KiB to auto — 4x the last-level cache,
    /// at least 1GiB, capped by available memory and --max-mem — every power of two and the
    /// midpoint after it, and the end itself.
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Randomise only within groups of this many 4 KiB pages (separates TLB misses from
    /// memory latency).
    #[arg(long, value_name = "PAGES")]
    pub tlb_window: Option<Count>,
    /// Put every pointer at offset 0 of its element instead of spreading them (the mixer).
    #[arg(long)]
    pub no_mix: bool,
    /// Block-access latency (memory-level parallelism) at the largest working set: chase
    /// this many stretches of the chain side by side (count axis, e.g. 1..32:x2, the
    /// default when the option is given bare) and give the ns per load of each, as MEMO's
    /// block-access test does. A tier whose per-load time falls as the chains grow
    /// overlaps its misses.
    #[arg(long, value_name = "AXIS", num_args = 0..=1, default_missing_value = "1..32:x2")]
    pub mlp: Option<String>,
    /// Repetitions per point, at least (one more is run first and dropped; more until --precision is met) [default: 5; 15 with --full].
    #[arg(long)]
    pub reps: Option<Count>,
    /// Individually timed loads for the distribution at the largest point, 0 for none
    /// [default: 200000; 1000000 with --full].
    #[arg(long, value_parser = pmscope_core::whole::parse::<usize>)]
    pub samples: Option<usize>,
    /// CPU to pin the measuring thread to.
    #[arg(long, value_name = "CPU", value_parser = pmscope_core::whole::parse::<usize>)]
    pub cpu: Option<usize>,
    /// Seed of the random orders.
    #[arg(long, default_value_t = 0x5EED, value_parser = pmscope_core::whole::parse::<u64>)]
    pub seed: u64,
    /// The thorough version: 15 repetitions of 200 ms, 1 000 000 timed loads.
    #[arg(long)]
    pub full: bool,
}

/// The default sweep: every power of two and the midpoint after it, from 4 KiB to `max`,
/// and `max` itself when it is neither.
pub fn default_sizes(max: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = 4096u64;
    while s <= max {
        v.push(s);
        if s + s / 2 <= max && s * 2 <= max {
            v.push(s + s / 2);
        }
        s *= 2;
    }
    if v.last().is_some_and(|&l| l != max) {
        v.push(max);
    }
    v
}

/// The working sets of `--sizes`: the default sweep to `end`, or the axis given with
/// `auto` standing for `end` (a range ending at `auto` ends exactly there). `end` is only
/// asked for when the axis uses it; the source says whether it did.
fn sweep(axis: Option<&str>, end: impl FnOnce() -> Result<u64>) -> Result<(Vec<u64>, Source)> {
    let parse = |axis: &str| parse_axis(axis, AxisKind::Size).map_err(|e| usage(e.to_string()));
    match axis {
        None => Ok((default_sizes(end()?), Source::Auto)),
        Some(axis) if axis.contains("auto") => {
            let end = end()?;
            let mut v = parse(&axis.replace("auto", &format!("{end}B")))?;
            if !v.contains(&end) {
                v.push(end);
            }
            Ok((v, Source::Auto))
        }
        Some(axis) => Ok((parse(axis)?, Source::Explicit)),
    }
}

/// What `latency` measures, validated before anything is mapped.
pub struct Plan {
    targets: Vec<TargetSpec>,
    opts: MapOptions,
    chain: ChainSpec,
    sizes: Vec<u64>,
    cpu: usize,
    repetition: LatencyPlan,
    samples: usize,
    /// Chains chased side by side at the largest working set (`--mlp`); empty for none.
    mlp: Vec<usize>,
    /// Whether the sweep's end is `auto`.
    size_source: Source,
    /// What the defaults left out on this CPU, for every record.
    note: Option<pmscope_core::warning::Warning>,
}

fn plan(ctx: &mut Env, a: &Params) -> Result<Plan> {
    let (targets, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let element = a.element.0 as usize;
    let (sizes, size_source) = sweep(a.sizes.as_deref(), || {
        let want = Want::one("--sizes", SWEEP_END_FLOOR);
        Ok(ctx.size(AutoSize::Auto, want, &targets, &opts)?.bytes)
    })?;
    if sizes.iter().any(|&s| (s as usize) < 2 * element) {
        return Err(usage(format!(
            "every working set must hold at least two {element}-byte elements; the smallest given is {}",
            Bytes(*sizes.iter().min().unwrap_or(&0))
        )));
    }
    let mlp = match &a.mlp {
        None => Vec::new(),
        Some(axis) => {
            let v = parse_axis(axis, AxisKind::Count)
                .map_err(|e| usage(format!("--mlp {axis}: {e}")))?;
            let largest = *sizes.iter().max().unwrap_or(&0) / element as u64;
            if let Some(&bad) = v.iter().find(|&&n| n == 0 || n > 64 || n > largest) {
                return Err(usage(format!(
                    "--mlp {bad}: chase between 1 and 64 chains side by side, and no more than the largest working set has elements"
                )));
            }
            v.into_iter().map(|n| n as usize).collect()
        }
    };
    // --full changes only the defaults: an explicit option always wins.
    let reps = a.reps.map_or(if a.full { 15 } else { 5 }, |r| r.0);
    // The distribution times single loads, closed by rdtscp: asked for on a CPU without
    // it, the machine refuses; by default it is left out, and the records say so.
    let timing = pmscope_loops::access::check_timing(&ctx.features);
    let (samples, note) = match (a.samples, timing) {
        (Some(n), Err(e)) if n > 0 => return Err(e.into()),
        (None, Err(e)) => (
            0,
            Some(crate::fallback::note(format!(
                "the per-load distribution (--samples) is left out: {}",
                e.reason
            ))),
        ),
        (n, _) => (n.unwrap_or(if a.full { 1_000_000 } else { 200_000 }), None),
    };
    Ok(Plan {
        targets,
        opts,
        chain: ChainSpec {
            order: a.pattern,
            element,
            tlb_window_pages: a.tlb_window.map(|w| w.0),
            mix: !a.no_mix,
            seed: a.seed,
        },
        sizes,
        cpu: a.cpu.unwrap_or(0),
        repetition: LatencyPlan {
            reps,
            rep_ns: if a.full { 200e6 } else { 40e6 },
        },
        samples,
        mlp,
        size_source,
        note,
    })
}

/// `pmscope latency`.
pub struct Latency;

impl Experiment for Latency {
    const NAME: &'static str = "latency";
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, params: &Params) -> Result<Plan> {
        plan(env, params)
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        measure(env, out, plan)
    }

    fn render(records: &[Record]) -> String {
        render::render(records)
    }

    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
        if let Some(c) = &on.cpus {
            params.cpu = c.0.first().copied();
        }
    }
}

/// The points of one target's sweep (working set, ns per load of each repetition), the
/// per-load distribution at the largest, and the block-access points there (chains, ns
/// per load).
struct Curve {
    points: Vec<(u64, Repeated<f64>)>,
    dist: Option<(Sampled, LogHistogram)>,
    mlp: Vec<(usize, Repeated<f64>)>,
}

/// How each point is repeated and watched: the policy, a fresh watch per point (cloned from
/// this one), and how the distribution is sampled.
struct Repetition {
    policy: RepeatPolicy,
    watch: SystemWatch,
    sampler: Sampler,
    /// The block measured: its share of the samples, its own chain orders.
    block: BlockIndex,
}

fn measure(ctx: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let max_ws = *p.sizes.iter().max().expect("non-empty axis");
    let progress = Progress::new(
        (p.sizes.len() * p.targets.len()) as u64,
        "latency",
        out.human(),
    );
    let mut h = ctx.start(out, &[p.cpu], Some(max_ws), p.samples > 0)?;
    if let Some(w) = &p.note {
        h.note(w.clone());
    }
    let timer = *h.timer();
    h.per_target(&p.targets, max_ws, &p.opts, None, |run, mapping| {
        let executor = run.executor();
        let how = Repetition {
            policy: run.repeat_policy(p.repetition.reps),
            watch: run.watch(&[p.cpu], Workers::Busy(1)),
            sampler: Sampler::new(run, &[p.cpu], Workers::Busy(1), &timer),
            block: run.block(),
        };
        let curve = run.on_cpu(p.cpu, mapping.bytes_mut(), |bytes| {
            sweep_target(
                &mut Region::from_slice(bytes),
                p,
                &timer,
                executor,
                &how,
                &progress,
            )
        })??;
        emit(run, p, curve, max_ws)?;
        run.check_interrupt()
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

/// Every point of the sweep on one target's region (until an interrupt).
fn sweep_target(
    region: &mut Region<'_>,
    p: &Plan,
    timer: &Timer,
    executor: Executor,
    how: &Repetition,
    progress: &Progress,
) -> Result<Curve> {
    let max_ws = *p.sizes.iter().max().expect("non-empty axis");
    let chain = ChainSpec {
        seed: how.block.seed(p.chain.seed),
        ..p.chain
    };
    let samples = how.block.share(p.samples);
    let mut points = Vec::new();
    let (mut dist, mut mlp) = (None, Vec::new());
    for &ws in &p.sizes {
        if interrupt::check().is_err() {
            break; // the points so far are recorded, then the run stops
        }
        let with_distribution = ws == max_ws && p.samples > 0;
        let chains: &[usize] = if ws == max_ws { &p.mlp } else { &[] };
        let measured = executor.run(
            || -> Result<_> {
                let mut chaser = chaser(region, ws as usize, &chain)?;
                let rep_ns = p.repetition.rep_ns * how.block.rep_scale(p.repetition.reps);
                let ns = chase_latency(
                    &mut chaser,
                    timer,
                    rep_ns,
                    &how.policy,
                    &mut how.watch.clone(),
                );
                let ns = ns?;
                let d = with_distribution
                    .then(|| chase_distribution(&mut chaser, timer, samples, &how.sampler));
                let mut blocks = Vec::new();
                for &n in chains {
                    chaser.set_chains(n);
                    let per_load = chase_latency(
                        &mut chaser,
                        timer,
                        rep_ns,
                        &how.policy,
                        &mut how.watch.clone(),
                    )?;
                    blocks.push((n, per_load));
                }
                Ok((ns, d, blocks))
            },
            || {
                let ns = Executor::synthetic(how.policy.min, 1.0 + ws as f64 / 1e7);
                let d = with_distribution.then(|| {
                    let s = Executor::synthetic(samples, 100.0);
                    (how.sampler.synthetic(&s), LogHistogram::of(&s, 4))
                });
                let blocks = chains
                    .iter()
                    .map(|&n| {
                        let ns = Executor::synthetic(how.policy.min, 100.0 / n as f64);
                        (n, Repeated::fixed(ns, how.policy.target))
                    })
                    .collect();
                Ok((Repeated::fixed(ns, how.policy.target), d, blocks))
            },
        );
        if measured.is_err() && interrupt::check().is_err() {
            break; // stopped while its chain was written: the points before it are kept
        }
        let (ns, d, blocks) = measured?;
        dist = dist.or(d);
        mlp.extend(blocks);
        points.push((ws, ns));
        progress.inc();
    }
    Ok(Curve { points, dist, mlp })
}

/// The records of one target: a point per working set, then the distribution.
fn emit(run: &mut TargetRun<'_, '_>, p: &Plan, curve: Curve, max_ws: u64) -> Result<()> {
    let Curve { points, dist, mlp } = curve;
    for (ws, ns) in points {
        let r = run
            .record("latency")
            .param(p::PATTERN, p.chain.order.pattern().name())
            .param(p::ELEMENT_BYTES, p.chain.element)
            .param(p::WORKING_SET_BYTES, ws)
            .param(
                p::TLB_WINDOW_PAGES,
                p.chain.tlb_window_pages.map(|w| w as u64),
            )
            .param(p::MIXER, p.chain.mix)
            .param(p::SEED, p.chain.seed)
            .param(p::SIZE_SOURCE, p.size_source.name());
        let mut r = with_repetitions(r, &ns);
        if let Some(cv) = r.summary.as_ref().map(|s| s.cv()) {
            r = r.value(v::CV, cv);
        }
        r.metric = Some("latency_ns".into());
        run.emit(&r)?;
    }
    if let Some((point, hist)) = dist {
        let r = run
            .record("latency-distribution")
            .param(p::PATTERN, p.chain.order.pattern().name())
            .param(p::ELEMENT_BYTES, p.chain.element)
            .param(p::WORKING_SET_BYTES, max_ws)
            .param(p::SAMPLES, p.samples)
            .param(p::SIZE_SOURCE, p.size_source.name());
        let mut r = point.annotate(r);
        r.metric = Some("latency_ns".into());
        r.histogram = Some(hist);
        run.emit(&r)?;
    }
    for (chains, ns) in mlp {
        let r = run
            .record("latency-mlp")
            .param(p::PATTERN, p.chain.order.pattern().name())
            .param(p::ELEMENT_BYTES, p.chain.element)
            .param(p::WORKING_SET_BYTES, max_ws)
            .param(p::CHAINS, chains)
            .param(p::SIZE_SOURCE, p.size_source.name());
        let mut r = with_repetitions(r, &ns);
        if let Some(cv) = r.summary.as_ref().map(|s| s.cv()) {
            r = r.value(v::CV, cv);
        }
        r.metric = Some("latency_ns".into());
        run.emit(&r)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_aliases() {
        let d = crate::defaults::<Params>();
        assert_eq!((d.pattern, d.element.0, d.cpu), (Order::Random, 64, None));
        assert_eq!("seq".parse(), Ok(Order::Sequential), "the suite's spelling");
    }

    #[test]
    fn default_sweep_has_powers_and_midpoints() {
        let s = default_sizes(64 << 10);
        assert_eq!(
            s,
            [4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536]
        );
        // An end that is neither a power of two nor a midpoint is measured too: 4x a
        // 480 MiB cache ends the sweep at 1920 MiB, not at 1 GiB.
        let s = default_sizes(1920 << 20);
        assert_eq!(s[s.len() - 3..], [768 << 20, 1 << 30, 1920 << 20]);
    }

    #[test]
    fn auto_stands_for_the_sized_end() {
        let end = || Ok(1920u64 << 20);
        let (v, src) = sweep(None, end).unwrap();
        assert_eq!((v.last(), src), (Some(&(1920 << 20)), Source::Auto));
        let (v, src) = sweep(Some("4KiB..auto:x4"), end).unwrap();
        assert_eq!(v[..2], [4096, 16384]);
        assert_eq!(v[v.len() - 2..], [1 << 30, 1920 << 20]);
        assert_eq!(src, Source::Auto);
        let (v, _) = sweep(Some("1MiB,auto"), end).unwrap();
        assert_eq!(v, [1 << 20, 1920 << 20]);
        // A sweep the user gave is never sized: the end is not even asked for.
        let (v, src) = sweep(Some("4KiB..256MiB"), || unreachable!()).unwrap();
        assert_eq!((v.last(), src), (Some(&(256 << 20)), Source::Explicit));
    }
}
