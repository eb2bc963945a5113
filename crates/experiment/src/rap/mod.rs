//! `pmscope rap`: read-after-persist latency (seed 001). Lines are written and persisted
//! in a random order; after persisting line k, the line persisted d lines earlier is loaded
//! and that one load is timed. Seed 001 found loads of recently persisted Optane lines
//! slow (a fence makes a persist globally visible, not complete) and approaching the
//! on-DIMM buffer latency with distance. The idle latency of a flushed line, timed the same
//! way on the same target, is printed beside it.

mod render;

use crate::error::usage;
use crate::measure::Sampler;
use crate::output::Output;
use crate::params::{AutoSize, Count, TargetArgs};
use crate::progress::Progress;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::vocab::p;
use pmscope_loops::Region;
use pmscope_loops::access::{self, FenceKind, Op, Sequence, Width, store_value};
use pmscope_loops::rng::SplitMix64;
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_persist::{PersistStrategy, Persister};
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt;
use pmscope_runner::repeat::{Watch as _, Workers};

/// Latencies (ticks, overhead included) of loading the line persisted `d` lines earlier,
/// `samples` times, walking `order` (line numbers).
fn read_after_persist(
    region: &mut Region<'_>,
    persister: &Persister,
    load: &Sequence,
    order: &[u32],
    d: usize,
    samples: usize,
) -> std::io::Result<Vec<u64>> {
    let mut ticks = Vec::with_capacity(samples);
    let mut t = [0u64];
    for k in 0..samples + d {
        let line = order[k % order.len()] as usize * 64;
        let bytes = region.bytes();
        bytes[line..line + 8].copy_from_slice(&store_value(k as u64).to_ne_bytes());
        persister.persist(&bytes[line..line + 64])?;
        if k >= d {
            let earlier = order[(k - d) % order.len()] as usize * 64;
            load.time_each(region, 8, &[earlier], false, &mut t);
            ticks.push(t[0]);
        }
    }
    Ok(ticks)
}

/// `pmscope rap`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// How each line is persisted.
    #[arg(long, value_name = "STRATEGY", help = crate::params::persist_help())]
    pub persist: Option<PersistStrategy>,
    /// Distances d in lines (sweep axis).
    #[arg(
        long,
        default_value = "0,1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192"
    )]
    pub distances: String,
    /// Region the lines are taken from, or auto: 4x the last-level cache, at least 256MiB,
    /// capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub region: AutoSize,
    /// Timed loads per distance [default: 20000; 200000 with --full].
    #[arg(long)]
    pub samples: Option<Count>,
    /// CPU to pin the thread to.
    #[arg(long, value_name = "CPU", value_parser = pmscope_core::whole::parse::<usize>)]
    pub cpu: Option<usize>,
    /// Seed of the random line order.
    #[arg(long, default_value_t = 0x5EED, value_parser = pmscope_core::whole::parse::<u64>)]
    pub seed: u64,
    /// The thorough version: 200 000 loads per distance.
    #[arg(long)]
    pub full: bool,
}

/// What `rap` measures, validated before anything is mapped.
pub struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    strategy: PersistStrategy,
    persister: Persister,
    load: Sequence,
    distances: Vec<usize>,
    region_bytes: u64,
    /// Whether `region_bytes` is `auto`.
    size_source: Source,
    samples: usize,
    cpu: usize,
    seed: u64,
}

/// The least `--region auto` gives (the old fixed default).
pub const REGION_FLOOR: u64 = 256 << 20;

fn plan(ctx: &mut Env, a: &Params) -> Result<Plan> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let persister = crate::fallback::persister(a.persist, &ctx.features)?;
    let strategy = persister.strategy();
    let load = Sequence::new(Op::Load, FenceKind::None, Width::W8, &ctx.features)?;
    let distances: Vec<usize> = parse_axis(&a.distances, AxisKind::Count)
        .map_err(|e| usage(e.to_string()))?
        .into_iter()
        .map(|d| d as usize)
        .collect();
    let region = ctx.size(a.region, Want::one("--region", REGION_FLOOR), &specs, &opts)?;
    let region_bytes = region.bytes;
    let lines = (region_bytes / 64) as usize;
    let max_d = distances.iter().copied().max().unwrap_or(0);
    if max_d + 1 >= lines {
        return Err(usage(format!(
            "distance {max_d} needs a region of more than {} lines",
            max_d + 1
        )));
    }
    // --full changes only the defaults: an explicit option always wins.
    let samples = a
        .samples
        .map_or(if a.full { 200_000 } else { 20_000 }, |s| s.0);
    Ok(Plan {
        specs,
        opts,
        strategy,
        persister,
        load,
        distances,
        region_bytes,
        size_source: region.source,
        samples,
        cpu: a.cpu.unwrap_or(0),
        seed: a.seed,
    })
}

/// `pmscope rap`.
pub struct Rap;

impl Experiment for Rap {
    const NAME: &'static str = "rap";
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

fn measure(ctx: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let (strategy, persister, load, samples) = (p.strategy, &p.persister, &p.load, p.samples);
    let lines = (p.region_bytes / 64) as usize;
    let progress = Progress::new(
        (p.specs.len() * (p.distances.len() + 1)) as u64,
        "rap",
        out.human(),
    );
    let mut h = ctx.start(out, &[p.cpu], Some(p.region_bytes), true)?;
    if let Some(w) = crate::fallback::persist_note(persister) {
        h.note(w);
    }
    let timer = *h.timer();
    h.per_target(
        &p.specs,
        p.region_bytes,
        &p.opts,
        Some(strategy),
        |run, m| {
            let executor = run.executor();
            // One load per timing: the values come in the timer's steps.
            let sampler = Sampler::new(run, &[p.cpu], Workers::Busy(1), &timer);
            // The block's share of the samples, in its own random order of lines.
            let (samples, seed) = (run.block().share(samples), run.block().seed(p.seed));
            let (idle, curve) =
                run.on_cpu(p.cpu, m.bytes_mut(), |bytes| -> std::io::Result<_> {
                    let mut region = Region::from_slice(bytes);
                    let overhead = executor.run(|| access::timing_overhead(100_001), || 0);
                    let mut order: Vec<u32> = (0..lines as u32).collect();
                    SplitMix64::new(seed).shuffle(&mut order);
                    let to_ns = |t: &[u64]| -> Vec<f64> {
                        t.iter().map(|&x| timer.net_ns(x, overhead)).collect()
                    };
                    // Baseline: loads of lines flushed just before, far from any recent persist.
                    let idle = executor.run(
                        || {
                            let idle_offsets: Vec<usize> = order[lines / 2..]
                                .iter()
                                .take(samples)
                                .map(|&l| l as usize * 64)
                                .collect();
                            let mut idle = vec![0u64; idle_offsets.len()];
                            sampler
                                .take(|| {
                                    load.time_each(&mut region, 8, &idle_offsets, true, &mut idle);
                                    to_ns(&idle)
                                })
                                .0
                        },
                        || sampler.synthetic(&Executor::synthetic(samples, 100.0)),
                    );
                    progress.inc();
                    let mut curve = Vec::new();
                    for &d in &p.distances {
                        if interrupt::check().is_err() {
                            break; // the distances so far are recorded, then the run stops
                        }
                        let s = executor.run(
                            || -> std::io::Result<_> {
                                let mut watch = sampler.watch();
                                watch.begin();
                                let t = read_after_persist(
                                    &mut region,
                                    persister,
                                    load,
                                    &order,
                                    d,
                                    samples,
                                );
                                let seen = watch.end();
                                Ok(sampler.point(&to_ns(&t?), seen, &watch))
                            },
                            || Ok(sampler.synthetic(&Executor::synthetic(samples, 150.0))),
                        )?;
                        curve.push((d, s));
                        progress.inc();
                    }
                    Ok((idle, curve))
                })??;
            let base = crate::fallback::persist_params(run.record("rap-idle"), persister)
                .param(p::REGION_BYTES, p.region_bytes)
                .param(p::SIZE_SOURCE, p.size_source.name())
                .param(p::SAMPLES, p.samples);
            let mut base = idle.annotate(base);
            base.metric = Some("latency_ns".into());
            run.emit(&base)?;
            for (d, s) in curve {
                let r = crate::fallback::persist_params(run.record("rap"), persister)
                    .param(p::REGION_BYTES, p.region_bytes)
                    .param(p::SIZE_SOURCE, p.size_source.name())
                    .param(p::SAMPLES, p.samples)
                    .param(p::DISTANCE_LINES, d);
                let mut r = s.annotate(r);
                r.metric = Some("latency_ns".into());
                run.emit(&r)?;
            }
            run.check_interrupt()
        },
    )?;
    h.finish()?;
    progress.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_sys::cpu::CpuFeatures;

    #[repr(align(64))]
    struct Buf([u8; 64 * 64]);

    /// Every persisted line holds the value of its last write, and d = 0 loads the line
    /// just persisted (the access pattern, not the timing, is what is checked).
    #[test]
    fn persists_in_order_and_leaves_values() {
        let f = CpuFeatures::detect();
        let p = Persister::new(PersistStrategy::Clflush, &f).unwrap();
        let load = Sequence::new(Op::Load, FenceKind::None, Width::W8, &f).unwrap();
        let mut b = Box::new(Buf([0; 64 * 64]));
        let mut r = Region::from_slice(&mut b.0);
        let order: Vec<u32> = vec![5, 3, 60, 1];
        let t = read_after_persist(&mut r, &p, &load, &order, 2, 6).unwrap();
        assert_eq!(t.len(), 6);
        // 8 writes (samples + d) cycled over 4 lines: line order[i % 4] last got k = i + 4.
        for (i, &line) in order.iter().enumerate() {
            let v = u64::from_ne_bytes(
                b.0[line as usize * 64..line as usize * 64 + 8]
                    .try_into()
                    .unwrap(),
            );
            assert_eq!(v, store_value(i as u64 + 4));
        }
    }
}
