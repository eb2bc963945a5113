//! `pmscope latency`: idle load latency by dependent-load chains over a working-set sweep,
//! with a per-load distribution at the largest point, the cache plateaus found, and the
//! difference between targets at the largest point (the TLB effect between 4k and thp).

use crate::args::LatencyArgs;
use crate::error::usage;
use crate::output::Sink;
use anyhow::{Context as _, Result};
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::{LogHistogram, Summary};
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::measure::{LatencyPlan, chase_distribution, chase_latency};
use pmscope_experiment::params::AutoSize;
use pmscope_experiment::progress::Progress;
use pmscope_experiment::render::table::Table;
use pmscope_loops::Region;
use pmscope_loops::chain::{ChainSpec, Order};
use pmscope_loops::chase::Chaser;
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt;
use pmscope_sys::cpu;

/// The least the default sweep's end is (`auto`: 4x the last-level cache, at least this).
pub const SWEEP_END_FLOOR: u64 = 1 << 30;

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
fn sweep(axis: Option<&str>, end: impl FnOnce() -> u64) -> Result<(Vec<u64>, Source)> {
    let parse = |axis: &str| parse_axis(axis, AxisKind::Size).map_err(|e| usage(e.to_string()));
    match axis {
        None => Ok((default_sizes(end()), Source::Auto)),
        Some(axis) if axis.contains("auto") => {
            let end = end();
            let mut v = parse(&axis.replace("auto", &format!("{end}B")))?;
            if !v.contains(&end) {
                v.push(end);
            }
            Ok((v, Source::Auto))
        }
        Some(axis) => Ok((parse(axis)?, Source::Explicit)),
    }
}

/// One measured point.
pub struct Point {
    /// Working set in bytes.
    pub ws: u64,
    /// ns per load.
    pub summary: Summary,
}

/// What `latency` measures, validated before anything is mapped.
struct Plan {
    targets: Vec<TargetSpec>,
    opts: MapOptions,
    chain: ChainSpec,
    sizes: Vec<u64>,
    cpu: usize,
    repetition: LatencyPlan,
    samples: usize,
    /// Whether the sweep's end is `auto`.
    size_source: Source,
    /// What the defaults left out on this CPU, for every record.
    note: Option<pmscope_core::warning::Warning>,
}

fn plan(ctx: &mut Context, a: &LatencyArgs) -> Result<Plan> {
    let (targets, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let order: Order = a.pattern.parse().map_err(usage)?;
    let element = a.element.0 as usize;
    let (sizes, size_source) = sweep(a.sizes.as_deref(), || {
        let want = Want::one("--sizes", SWEEP_END_FLOOR);
        ctx.size(AutoSize::Auto, want, &targets, &opts).bytes
    })?;
    if sizes.iter().any(|&s| (s as usize) < 2 * element) {
        return Err(usage(format!(
            "every working set must hold at least two {element}-byte elements; the smallest given is {}",
            Bytes(*sizes.iter().min().unwrap_or(&0))
        )));
    }
    // --full changes only the defaults: an explicit option always wins.
    let reps = a.reps.map_or(if a.full { 15 } else { 5 }, |r| r.0);
    // The distribution times single loads, closed by rdtscp: asked for on a CPU without
    // it, the machine refuses; by default it is left out, and the records say so.
    let timing = pmscope_loops::access::check_timing(&ctx.features);
    let (samples, note) = match (a.samples, timing) {
        (Some(n), Err(e)) if n > 0 => return Err(e.into()),
        (None, Err(e)) => (
            0,
            Some(pmscope_experiment::fallback::note(format!(
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
            order,
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
        size_source,
        note,
    })
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &LatencyArgs) -> Result<()> {
    let plan = plan(ctx, a)?;
    measure(ctx, sink, &plan)?;
    if sink.human() {
        render(ctx, sink.records());
    }
    Ok(())
}

fn measure(ctx: &mut Context, sink: &mut Sink, p: &Plan) -> Result<()> {
    let max_ws = *p.sizes.iter().max().expect("non-empty axis");
    let progress = Progress::new(
        (p.sizes.len() * p.targets.len()) as u64,
        "latency",
        sink.human(),
    );
    let mut h = ctx.start(sink, &[p.cpu], Some(max_ws), p.samples > 0)?;
    if let Some(w) = &p.note {
        h.note(w.clone());
    }
    let timer = *h.timer();
    h.per_target(&p.targets, max_ws, &p.opts, None, |run, mapping| {
        let executor = run.executor();
        let (points, dist) = run.on_cpu(p.cpu, mapping.bytes_mut(), |bytes| -> Result<_> {
            let mut region = Region::from_slice(bytes);
            let mut points = Vec::new();
            let mut dist = None;
            for &ws in &p.sizes {
                if interrupt::check().is_err() {
                    break; // the points so far are recorded, then the run stops
                }
                let (ns, d) = executor.run(
                    || -> Result<_> {
                        let mut chaser = Chaser::build(&mut region, ws as usize, &p.chain)
                            .with_context(|| format!("building a chain over {}", Bytes(ws)))?;
                        let ns = chase_latency(&mut chaser, &timer, p.repetition);
                        let d = (ws == max_ws && p.samples > 0)
                            .then(|| chase_distribution(&mut chaser, &timer, p.samples));
                        Ok((ns, d))
                    },
                    || {
                        let ns = Executor::synthetic(p.repetition.reps, 1.0 + ws as f64 / 1e7);
                        let d = (ws == max_ws && p.samples > 0).then(|| {
                            let s = Executor::synthetic(p.samples, 100.0);
                            (Summary::of(&s).expect("finite"), LogHistogram::of(&s, 4))
                        });
                        Ok((ns, d))
                    },
                )?;
                dist = dist.or(d);
                points.push((ws, Summary::of(&ns).expect("finite")));
                progress.inc();
            }
            Ok((points, dist))
        })??;
        for (ws, summary) in points {
            let mut r = run
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
                .param(p::SIZE_SOURCE, p.size_source.name())
                .value(v::CV, summary.cv());
            r.metric = Some("latency_ns".into());
            r.summary = Some(summary);
            run.emit(&r)?;
        }
        if let Some((summary, hist)) = dist {
            let mut r = run
                .record("latency-distribution")
                .param(p::PATTERN, p.chain.order.pattern().name())
                .param(p::ELEMENT_BYTES, p.chain.element)
                .param(p::WORKING_SET_BYTES, max_ws)
                .param(p::SAMPLES, p.samples)
                .param(p::SIZE_SOURCE, p.size_source.name());
            r.metric = Some("latency_ns".into());
            r.summary = Some(summary);
            r.histogram = Some(hist);
            run.emit(&r)?;
        }
        run.check_interrupt()
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

/// Where the latency curve steps up: the last point before each rise of more than 25 %
/// between neighbouring points (`core::knee::steps`; a cache level ends over a range of
/// sizes, so consecutive rises are one transition).
pub fn plateau_ends(points: &[Point]) -> Vec<(u64, f64)> {
    let curve: Vec<(u64, f64)> = points.iter().map(|p| (p.ws, p.summary.p50)).collect();
    pmscope_core::knee::steps(&curve, 0.25)
}

/// The human tables, drawn from the records alone: a curve per target with its plateaus,
/// the distribution at the largest point, and the targets side by side there.
fn render(ctx: &Context, records: &[Record]) {
    let caches = cpu::caches(&ctx.root, 0);
    let mut curves: Vec<(&str, Vec<Point>, Option<&Record>)> = Vec::new();
    for r in records {
        let Some(spec) = r.target.as_ref().map(|t| t.spec.as_str()) else {
            continue;
        };
        if !curves.iter().any(|c| c.0 == spec) {
            curves.push((spec, Vec::new(), None));
        }
        let c = curves.iter_mut().find(|c| c.0 == spec).expect("pushed");
        match (r.experiment.as_str(), &r.summary) {
            ("latency", Some(s)) => c.1.push(Point {
                ws: r.params["working_set_bytes"].as_u64().unwrap_or(0),
                summary: s.clone(),
            }),
            ("latency-distribution", _) => c.2 = Some(r),
            _ => {}
        }
    }
    let Some(first) = records.iter().find(|r| r.experiment == "latency") else {
        return;
    };
    let param = |k: &str| first.params.get(k).cloned().unwrap_or_default();
    let pattern = param("pattern");
    for (target, points, dist) in &curves {
        println!(
            "{target}: {} chain, {}-byte elements{}",
            pattern.as_str().unwrap_or("?"),
            param("element_bytes"),
            param("tlb_window_pages")
                .as_u64()
                .map(|w| format!(", TLB window {w} pages"))
                .unwrap_or_default()
        );
        let mut t = Table::new(&["working set", "ns/load", "min", "max", "cv %", "reps"]);
        for p in points {
            t.row(vec![
                Bytes(p.ws).to_string(),
                format!("{:.2}", p.summary.p50),
                format!("{:.2}", p.summary.min),
                format!("{:.2}", p.summary.max),
                format!("{:.1}", 100.0 * p.summary.cv()),
                p.summary.n.to_string(),
            ]);
        }
        println!("{}", t.render());
        let ends = plateau_ends(points);
        let levels: Vec<&pmscope_sys::cpu::Cache> =
            caches.iter().filter(|c| c.kind != "Instruction").collect();
        println!("plateaus (where the curve steps up by more than 25% between neighbours):");
        for (i, (ws, ns)) in ends.iter().enumerate() {
            let reported = levels
                .get(i)
                .map(|c| format!("L{} is {} per `pmscope info`", c.level, Bytes(c.size_bytes)))
                .unwrap_or_else(|| "beyond the reported caches (TLB reach or memory)".into());
            println!(
                "  step {}: plateau ends at {} ({ns:.1} ns); {reported}",
                i + 1,
                Bytes(*ws)
            );
        }
        if let Some(d) = dist
            && let (Some(s), Some(h)) = (&d.summary, &d.histogram)
        {
            println!(
                "per-load distribution at {} ({} loads): p50 {:.1} ns, p90 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}",
                Bytes(d.params["working_set_bytes"].as_u64().unwrap_or(0)),
                s.n,
                s.p50,
                s.p90,
                s.p99,
                s.p999,
                s.max
            );
            pmscope_experiment::render::histogram::print(h);
        }
        println!();
    }
    if curves.len() > 1
        && let Some(fp) = curves[0].1.last()
    {
        println!("at {} ({}):", Bytes(fp.ws), pattern.as_str().unwrap_or("?"));
        for (target, points, _) in &curves {
            if let Some(p) = points.last() {
                println!(
                    "  {target:<24} {:>8.2} ns/load   {:+.2} ns ({:+.1}%) vs {}",
                    p.summary.p50,
                    p.summary.p50 - fp.summary.p50,
                    100.0 * (p.summary.p50 / fp.summary.p50 - 1.0),
                    curves[0].0
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[(u64, f64)]) -> Vec<Point> {
        v.iter()
            .map(|&(ws, ns)| Point {
                ws,
                summary: Summary::of(&[ns]).unwrap(),
            })
            .collect()
    }

    #[test]
    fn plateaus_from_a_measured_curve() {
        // This VM's dram:thp curve (ns): L1 to 32 KiB, L2 to 512 KiB, L3 to 4 MiB.
        let p = pts(&[
            (16 << 10, 1.2),
            (32 << 10, 1.2),
            (48 << 10, 3.8),
            (256 << 10, 3.8),
            (384 << 10, 4.4),
            (512 << 10, 4.8),
            (768 << 10, 6.5),
            (1 << 20, 8.3),
            (3 << 19, 12.1),
            (2 << 20, 13.6),
            (4 << 20, 15.2),
            (6 << 20, 21.1),
            (8 << 20, 105.0),
            (12 << 20, 122.0),
            (1 << 30, 140.0),
        ]);
        let ends: Vec<u64> = plateau_ends(&p).iter().map(|e| e.0).collect();
        assert_eq!(ends, [32 << 10, 512 << 10, 4 << 20]);
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
        let end = || 1920u64 << 20;
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
