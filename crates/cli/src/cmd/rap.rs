//! `pmscope rap`: read-after-persist latency (seed 001). Lines are written and persisted
//! in a random order; after persisting line k, the line persisted d lines earlier is loaded
//! and that one load is timed. Seed 001 found loads of recently persisted Optane lines
//! slow (a fence makes a persist globally visible, not complete) and approaching the
//! on-DIMM buffer latency with distance. The idle latency of a flushed line, timed the same
//! way on the same target, is printed beside it.

use crate::args::RapArgs;
use crate::context::Context;
use crate::error::usage;
use crate::output::Sink;
use crate::output::fields::by_target;
use crate::output::progress::Progress;
use crate::output::table::Table;
use anyhow::Result;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::vocab::p;
use pmscope_loops::Region;
use pmscope_loops::access::{self, FenceKind, Op, Sequence, Width, store_value};
use pmscope_loops::rng::SplitMix64;
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_persist::{PersistStrategy, Persister};
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt;

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

/// What `rap` measures, validated before anything is mapped.
struct Plan {
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

fn plan(ctx: &mut Context, a: &RapArgs) -> Result<Plan> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let persister = crate::fallback::persister(a.persist.as_deref(), &ctx.features)?;
    let strategy = persister.strategy();
    let load = Sequence::new(Op::Load, FenceKind::None, Width::W8, &ctx.features)?;
    let distances: Vec<usize> = parse_axis(&a.distances, AxisKind::Count)
        .map_err(|e| usage(e.to_string()))?
        .into_iter()
        .map(|d| d as usize)
        .collect();
    let region = ctx.size(a.region, Want::one("--region", REGION_FLOOR), &specs, &opts);
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

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &RapArgs) -> Result<()> {
    let plan = plan(ctx, a)?;
    measure(ctx, sink, &plan)?;
    if sink.human() {
        print!("{}", render(sink.records()));
    }
    Ok(())
}

fn measure(ctx: &mut Context, sink: &mut Sink, p: &Plan) -> Result<()> {
    let (strategy, persister, load, samples) = (p.strategy, &p.persister, &p.load, p.samples);
    let lines = (p.region_bytes / 64) as usize;
    let progress = Progress::new(
        (p.specs.len() * (p.distances.len() + 1)) as u64,
        "rap",
        sink.human(),
    );
    let mut h = ctx.start(sink, &[p.cpu], Some(p.region_bytes), true)?;
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
            let (idle, curve) =
                run.on_cpu(p.cpu, m.bytes_mut(), |bytes| -> std::io::Result<_> {
                    let mut region = Region::from_slice(bytes);
                    let overhead = executor.run(|| access::timing_overhead(100_001), || 0);
                    let mut order: Vec<u32> = (0..lines as u32).collect();
                    SplitMix64::new(p.seed).shuffle(&mut order);
                    let to_ns = |t: &[u64]| -> Summary {
                        let ns: Vec<f64> = t
                            .iter()
                            .map(|&x| timer.tsc_ticks_to_ns(x.saturating_sub(overhead)))
                            .collect();
                        Summary::of(&ns).expect("finite")
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
                            load.time_each(&mut region, 8, &idle_offsets, true, &mut idle);
                            to_ns(&idle)
                        },
                        || Summary::of(&Executor::synthetic(samples, 100.0)).expect("finite"),
                    );
                    progress.inc();
                    let mut curve = Vec::new();
                    for &d in &p.distances {
                        if interrupt::check().is_err() {
                            break; // the distances so far are recorded, then the run stops
                        }
                        let s = executor.run(
                            || -> std::io::Result<_> {
                                let t = read_after_persist(
                                    &mut region,
                                    persister,
                                    load,
                                    &order,
                                    d,
                                    samples,
                                )?;
                                Ok(to_ns(&t))
                            },
                            || {
                                Ok(Summary::of(&Executor::synthetic(samples, 150.0))
                                    .expect("finite"))
                            },
                        )?;
                        curve.push((d, s));
                        progress.inc();
                    }
                    Ok((idle, curve))
                })??;
            let mut base = crate::fallback::persist_params(run.record("rap-idle"), persister)
                .param(p::REGION_BYTES, p.region_bytes)
                .param(p::SIZE_SOURCE, p.size_source.name())
                .param(p::SAMPLES, samples);
            base.metric = Some("latency_ns".into());
            base.summary = Some(idle);
            run.emit(&base)?;
            for (d, s) in curve {
                let mut r = crate::fallback::persist_params(run.record("rap"), persister)
                    .param(p::REGION_BYTES, p.region_bytes)
                    .param(p::SIZE_SOURCE, p.size_source.name())
                    .param(p::SAMPLES, samples)
                    .param(p::DISTANCE_LINES, d);
                r.metric = Some("latency_ns".into());
                r.summary = Some(s);
                run.emit(&r)?;
            }
            run.check_interrupt()
        },
    )?;
    h.finish()?;
    progress.finish();
    Ok(())
}

/// A table per target, from the records alone: the `rap` curve, then its `rap-idle`
/// baseline.
fn render(records: &[Record]) -> String {
    let mut out = String::new();
    for (spec, idle) in by_target(records, "rap-idle") {
        let persist = idle[0].text(p::PERSIST).unwrap_or_default();
        let Some(idle) = idle[0].summary.as_ref() else {
            continue;
        };
        out += &format!(
            "{spec}: load of the line persisted d lines earlier ({} + its fence), random lines; timer overhead subtracted\n",
            persist
        );
        let mut t = Table::new(&["distance d", "p50 ns", "p99 ns", "vs idle load"]);
        let curve = records
            .iter()
            .filter(|r| r.experiment == "rap" && r.spec().unwrap_or_default() == spec);
        for r in curve {
            let Some(s) = &r.summary else { continue };
            t.row(vec![
                r.count(p::DISTANCE_LINES).unwrap_or_default().to_string(),
                format!("{:.1}", s.p50),
                format!("{:.1}", s.p99),
                format!("{:.2}x", s.p50 / idle.p50.max(0.1)),
            ]);
        }
        t.row(vec![
            "idle (flushed line)".into(),
            format!("{:.1}", idle.p50),
            format!("{:.1}", idle.p99),
            "1.00x".into(),
        ]);
        out += &format!("{}\n\n", t.render());
    }
    out
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
