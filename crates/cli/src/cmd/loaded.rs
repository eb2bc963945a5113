//! `pmscope loaded`: loaded latency (seed 004 Figure 14, Intel MLC's loaded-latency mode).
//! One pinned thread measures while the others generate traffic with an injected delay
//! after every access; one point per delay, from no traffic at all (idle) through delays
//! that make the load negligible down to 0 (flat out), giving a bandwidth-latency curve.
//!
//! The probe is a dependent-load chain over a random cycle (the same method and working set
//! as `pmscope latency`), reporting the mean ns per load of the chain and, from
//! individually timed loads, p50/p99/p99.9 — the tail under load, which MLC does not give.
//! It can also be a persist operation (`--probe store+clwb+sfence`, or a persist strategy
//! name): the latency of making a line durable while the other threads load the memory.

use crate::args::LoadedArgs;
use crate::error::usage;
use crate::output::Sink;
use anyhow::Result;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::measure::{LatencyPlan, TrafficMix, chase_latency, delayed_traffic};
use pmscope_experiment::params::AutoSize;
use pmscope_experiment::progress::Progress;
use pmscope_experiment::render::fields::by_target;
use pmscope_experiment::render::table::Table;
use pmscope_loops::Region;
use pmscope_loops::access::{self, FenceKind, Op, Sequence, Width};
use pmscope_loops::catalog;
use pmscope_loops::chain::ChainSpec;
use pmscope_loops::chase::{Chaser, single_timing_overhead};
use pmscope_loops::stream::{StreamOp, StreamView, Streamer};
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, Mapping, TargetSpec};
use pmscope_persist::PersistStrategy;
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::TargetRun;
use pmscope_runner::interrupt;
use pmscope_runner::timer::Timer;
use pmscope_sys::cpu::CpuFeatures;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
        .parse::<pmscope_persist::PersistStrategy>()
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

/// The delay schedule: idle (no traffic) first, then the delays from the largest (lightest
/// load) to the smallest (heaviest), each in TSC ticks.
pub fn delay_schedule(delays_ns: &[u64], hz: f64) -> Vec<(Option<u64>, u64)> {
    let mut d: Vec<u64> = delays_ns.to_vec();
    d.sort_unstable_by(|a, b| b.cmp(a));
    d.dedup();
    std::iter::once((None, 0))
        .chain(
            d.into_iter()
                .map(|ns| (Some(ns), (ns as f64 * hz / 1e9).round() as u64)),
        )
        .collect()
}

/// What each worker of the team holds: the probe's region, or a traffic view.
enum Part<'a, 'm> {
    Probe(Region<'m>),
    Traffic(StreamView<'a>),
}

/// The persist strategy a persist probe's op amounts to (for the persistence-domain
/// finding), if it persists at all.
fn persist_strategy_of(op: Op) -> Option<PersistStrategy> {
    match op {
        Op::StoreClflush => Some(PersistStrategy::Clflush),
        Op::StoreClflushopt => Some(PersistStrategy::Clflushopt),
        Op::StoreClwb => Some(PersistStrategy::Clwb),
        Op::NtStore => Some(PersistStrategy::Ntstore),
        _ => None,
    }
}

/// Builds what measures one point of the probe (the chain is built once, here); each call
/// measures one point (its `delay_ns` is filled in by the caller).
#[allow(clippy::too_many_arguments)]
fn probe_measurer<'r>(
    probe: Probe,
    region: &'r mut Region<'_>,
    executor: Executor,
    timer: &'r Timer,
    plan: LatencyPlan,
    samples: usize,
    seed: u64,
    features: &CpuFeatures,
) -> Result<Box<dyn FnMut() -> Point + 'r>> {
    if executor == Executor::Null {
        return Ok(Box::new(move || {
            let s = Summary::of(&Executor::synthetic(samples, 120.0)).expect("finite");
            Point {
                delay_ns: None,
                traffic_gb_s: 0.0,
                mean_ns: s.mean,
                samples: s,
            }
        }));
    }
    Ok(match probe {
        Probe::Chase => {
            let spec = ChainSpec {
                seed,
                ..ChainSpec::default()
            };
            let len = region.len();
            let mut chaser = Chaser::build(region, len, &spec)?;
            let overhead = single_timing_overhead(10_001);
            Box::new(move || {
                let means = chase_latency(&mut chaser, timer, plan);
                let mut ticks = vec![0u64; samples];
                chaser.time_each(&mut ticks);
                let ns: Vec<f64> = ticks.iter().map(|&t| timer.net_ns(t, overhead)).collect();
                Point {
                    delay_ns: None,
                    traffic_gb_s: 0.0,
                    mean_ns: Summary::of(&means).expect("finite").p50,
                    samples: Summary::of(&ns).expect("finite"),
                }
            })
        }
        Probe::Persist(op, fence) => {
            let seq = Sequence::new(op, fence, Width::widest(features), features)?;
            let offs =
                pmscope_loops::offsets::access_offsets(samples, 64, region.len(), true, seed);
            let overhead = access::timing_overhead(10_001);
            Box::new(move || {
                let mut ticks = vec![0u64; samples];
                seq.time_each(region, 64, &offs, false, &mut ticks);
                let ns: Vec<f64> = ticks.iter().map(|&t| timer.net_ns(t, overhead)).collect();
                let s = Summary::of(&ns).expect("finite");
                Point {
                    delay_ns: None,
                    traffic_gb_s: 0.0,
                    mean_ns: s.mean,
                    samples: s,
                }
            })
        }
    })
}

/// One point of the curve, as measured (the traffic's bandwidth is added from the other
/// workers).
struct Point {
    delay_ns: Option<u64>,
    traffic_gb_s: f64,
    mean_ns: f64,
    samples: Summary,
}

/// What `loaded` measures, validated before anything is mapped.
struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    /// `--probe` as given (the records' `probe`).
    probe_name: String,
    probe: Probe,
    delays: Vec<u64>,
    /// The traffic's read:write ratio (the records' `traffic_rw`).
    rw: String,
    traffic: TrafficMix,
    cpus: Vec<usize>,
    probe_bytes: u64,
    traffic_bytes: u64,
    /// Whether `probe_bytes` and `traffic_bytes` are `auto`.
    probe_source: Source,
    traffic_source: Source,
    access_bytes: usize,
    samples: usize,
    repetition: LatencyPlan,
    seed: u64,
}

impl Plan {
    fn traffic_threads(&self) -> usize {
        self.cpus.len() - 1
    }

    /// What the traffic writes with, or `read` when it only reads.
    fn traffic_op(&self) -> &'static str {
        if self.traffic.writes == 0 {
            StreamOp::Read.name()
        } else {
            self.traffic.write.op().name()
        }
    }
}

/// The least `--probe-region auto` gives (the old fixed default).
pub const PROBE_FLOOR: u64 = 1 << 30;
/// The least `--traffic-region auto` gives each traffic thread (the old fixed default).
pub const TRAFFIC_FLOOR: u64 = 256 << 20;

fn plan(ctx: &mut Context, a: &LoadedArgs) -> Result<Plan> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let probe = parse_probe(&a.probe).map_err(usage)?;
    let delays: Vec<u64> =
        parse_axis(&a.delays, AxisKind::Count).map_err(|e| usage(e.to_string()))?;
    // The traffic's writer: --traffic-op (a stream op, or a catalog row that streams as
    // one), ordinary stores by default; `read` asks for read-only traffic.
    let op = match &a.traffic_op {
        None => None,
        Some(s) => Some(catalog::stream_op(s).ok_or_else(|| {
            usage(format!(
                "--traffic-op {s}: use {} (or a row of `pmscope list ops` that streams as one, such as store or store+clwb+sfence)",
                StreamOp::names()
            ))
        })?),
    };
    let writing = op.filter(|&o| o != StreamOp::Read);
    let rw =
        a.rw.clone()
            .unwrap_or_else(|| if writing.is_some() { "0:1" } else { "1:0" }.to_string());
    let (reads, writes) = match rw
        .split_once(':')
        .and_then(|(r, w)| Some((r.parse::<u32>().ok()?, w.parse::<u32>().ok()?)))
    {
        Some((r, w)) if r + w > 0 => (r, w),
        _ => {
            return Err(usage(format!(
                "--rw {rw}: give the traffic's read:write ratio, e.g. 1:0, 2:1 or 1:1"
            )));
        }
    };
    if op == Some(StreamOp::Read) && writes > 0 {
        return Err(usage(format!(
            "--rw {rw} asks for writes but --traffic-op read writes nothing: give a writing op (write, ntstore, store+clwb)"
        )));
    }
    let random = match a.traffic_pattern.as_str() {
        "seq" => false,
        "rand" => true,
        other => {
            return Err(usage(format!("--traffic-pattern {other}: use seq or rand")));
        }
    };
    let cpus: Vec<usize> = match &a.cpus {
        Some(c) => c.0.clone(),
        None => pmscope_sys::affinity::allowed_cpus()?,
    };
    if cpus.len() < 2 {
        return Err(usage(format!(
            "loaded latency needs a CPU for the probe and at least one for traffic; --cpus gives {}",
            cpus.len()
        )));
    }
    // auto: the probe's chain covers 4x the last-level cache, and so does all the traffic
    // together (every traffic thread runs at every loaded point); both live in one
    // mapping, so each is sized beside the other (the traffic's floor reserved first).
    let threads = (cpus.len() - 1) as u64;
    let traffic_least = match a.traffic_region {
        AutoSize::Given(b) => b,
        AutoSize::Auto => TRAFFIC_FLOOR,
    };
    let want = Want {
        besides: traffic_least * threads,
        ..Want::one("--probe-region", PROBE_FLOOR)
    };
    let probe_region = ctx.size(a.probe_region, want, &specs, &opts);
    let want = Want {
        shares: threads,
        together: threads,
        besides: probe_region.bytes,
        ..Want::one("--traffic-region", TRAFFIC_FLOOR)
    };
    let traffic_region = ctx.size(a.traffic_region, want, &specs, &opts);
    let probe_bytes = probe_region.bytes;
    let traffic_bytes = traffic_region.bytes;
    let access_bytes = a.traffic_access.0 as usize;
    let width = Streamer::widest(&ctx.features);
    let read = Streamer::new(StreamOp::Read, width, access_bytes, &ctx.features)?;
    let write = Streamer::new(
        writing.unwrap_or(StreamOp::Write),
        width,
        access_bytes,
        &ctx.features,
    )?;
    if let Probe::Persist(op, fence) = probe {
        Sequence::new(op, fence, Width::widest(&ctx.features), &ctx.features)?;
    }
    // Every probe times single operations (the chase's loads too): rdtscp closes them.
    access::check_timing(&ctx.features)?;
    let samples = a
        .samples
        .map_or(if a.full { 200_000 } else { 50_000 }, |s| s.0);
    // Reads and writes each take half the region when the traffic does both (and copy
    // writes to the second half of what it reads).
    let halves = u64::from(reads > 0 && writes > 0) + 1;
    let copies = if writing.is_some_and(StreamOp::copies) {
        2
    } else {
        1
    };
    let least = access_bytes as u64 * halves * copies;
    if traffic_bytes < least {
        return Err(usage(if least == access_bytes as u64 {
            format!(
                "--traffic-region {} is smaller than one {access_bytes}-byte traffic access",
                Bytes(traffic_bytes)
            )
        } else {
            format!(
                "--traffic-region {} is smaller than the {} this traffic needs for one {access_bytes}-byte access of each kind",
                Bytes(traffic_bytes),
                Bytes(least)
            )
        }));
    }
    if probe == Probe::Chase && probe_bytes < 2 * 64 {
        return Err(usage(format!(
            "--probe-region {} cannot hold a chain of two 64-byte elements",
            Bytes(probe_bytes)
        )));
    }
    Ok(Plan {
        specs,
        opts,
        probe_name: a.probe.clone(),
        probe,
        delays,
        rw,
        traffic: TrafficMix {
            read,
            write,
            reads,
            writes,
            random,
        },
        cpus,
        probe_bytes,
        traffic_bytes,
        probe_source: probe_region.source,
        traffic_source: traffic_region.source,
        access_bytes,
        samples,
        repetition: LatencyPlan {
            reps: if a.full { 9 } else { 5 },
            rep_ns: if a.full { 100e6 } else { 40e6 },
        },
        seed: a.seed,
    })
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &LoadedArgs) -> Result<()> {
    let plan = plan(ctx, a)?;
    measure(ctx, sink, &plan)?;
    if sink.human() {
        print!("{}", render(sink.records()));
    }
    Ok(())
}

fn measure(ctx: &mut Context, sink: &mut Sink, p: &Plan) -> Result<()> {
    let persists = match p.probe {
        Probe::Chase => None,
        Probe::Persist(op, _) => persist_strategy_of(op),
    };
    let features = ctx.features;
    let human = sink.human();
    let mut h = ctx.start(sink, &p.cpus, Some(p.probe_bytes), true)?;
    let timer = *h.timer();
    let schedule = delay_schedule(&p.delays, timer.info().hz);
    let progress = Progress::new((p.specs.len() * schedule.len()) as u64, "loaded", human);
    let map_bytes = p.probe_bytes + p.traffic_bytes * p.traffic_threads() as u64;
    h.per_target(&p.specs, map_bytes, &p.opts, persists, |run, m| {
        let points = measure_curve(run, m, p, &schedule, &timer, &features, &progress)?;
        for point in &points {
            let active = point.delay_ns.is_some();
            let mut r = run
                .record("loaded")
                .param(p::PROBE, p.probe_name.as_str())
                .param(p::DELAY_NS, point.delay_ns)
                .param(
                    p::TRAFFIC_THREADS,
                    if active { p.traffic_threads() } else { 0 },
                )
                .param(p::TRAFFIC_RW, p.rw.as_str())
                .param(p::TRAFFIC_OP, p.traffic_op())
                .param(
                    p::TRAFFIC_PATTERN,
                    Pattern::from_random(p.traffic.random).name(),
                )
                .param(p::TRAFFIC_ACCESS_BYTES, p.access_bytes)
                .param(p::PROBE_REGION_BYTES, p.probe_bytes)
                .param(p::SIZE_SOURCE, p.probe_source.name())
                .param(p::TRAFFIC_REGION_BYTES, p.traffic_bytes)
                .param(p::TRAFFIC_SIZE_SOURCE, p.traffic_source.name())
                .param(p::SAMPLES, p.samples)
                .value(v::TRAFFIC_GB_S, point.traffic_gb_s)
                .value(v::MEAN_LATENCY_NS, point.mean_ns);
            r.metric = Some("latency_ns".into());
            r.summary = Some(point.samples.clone());
            run.emit(&r)?;
        }
        run.check_interrupt()
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

/// One curve on one target: a pinned team in which worker 0 measures every point of the
/// schedule in turn and the others generate the point's traffic between two barriers, so
/// the chain is built once. Worker 0 passes every barrier even when it fails, so no worker
/// waits for ever.
fn measure_curve(
    run: &mut TargetRun<'_, '_>,
    m: &mut Mapping,
    p: &Plan,
    schedule: &[(Option<u64>, u64)],
    timer: &Timer,
    features: &CpuFeatures,
    progress: &Progress,
) -> Result<Vec<Point>> {
    let executor = run.executor();
    let (probe_region, mut traffic_region) =
        Region::from_slice(m.bytes_mut()).split_at(p.probe_bytes as usize);
    let mut parts: Vec<Part> = std::iter::once(Part::Probe(probe_region))
        .chain(
            StreamView::of(&mut traffic_region, p.traffic_threads(), false)
                .into_iter()
                .map(Part::Traffic),
        )
        .collect();
    let team = Barrier::new(p.cpus.len());
    let stop = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let out = run.on_each(&p.cpus, &mut parts, |w, part| -> Result<Vec<Point>> {
        let region = match part {
            Part::Traffic(view) => {
                let mut traffic = Vec::new();
                for &(delay_ns, ticks) in schedule {
                    team.wait();
                    if delay_ns.is_some() && !failed.load(Ordering::SeqCst) {
                        traffic.push(executor.run(
                            || {
                                let seed = p.seed ^ (w as u64) << 8;
                                let (t, secs) =
                                    delayed_traffic(p.traffic, *view, ticks, seed, &stop);
                                (t.total(), secs)
                            },
                            || (view.len() as u64, 0.001),
                        ));
                    } else {
                        traffic.push((0, 0.0));
                    }
                    team.wait();
                }
                return Ok(traffic
                    .into_iter()
                    .map(|(bytes, secs)| Point {
                        delay_ns: None,
                        traffic_gb_s: if secs > 0.0 {
                            bytes as f64 / secs / 1e9
                        } else {
                            0.0
                        },
                        mean_ns: 0.0,
                        samples: Summary::of(&[0.0]).expect("finite"),
                    })
                    .collect());
            }
            Part::Probe(region) => region,
        };
        let mut measure = match probe_measurer(
            p.probe,
            region,
            executor,
            timer,
            p.repetition,
            p.samples,
            p.seed,
            features,
        ) {
            Ok(m) => m,
            Err(e) => {
                failed.store(true, Ordering::SeqCst);
                for _ in schedule {
                    team.wait();
                    team.wait();
                }
                return Err(e);
            }
        };
        let mut points = Vec::new();
        for (i, &(delay_ns, _)) in schedule.iter().enumerate() {
            if interrupt::check().is_err() {
                // Release the traffic threads through the remaining points unmeasured.
                failed.store(true, Ordering::SeqCst);
                for _ in i..schedule.len() {
                    team.wait();
                    team.wait();
                }
                break;
            }
            stop.store(false, Ordering::SeqCst);
            team.wait();
            // Let the traffic reach steady state before measuring.
            if executor == Executor::Real {
                std::thread::sleep(Duration::from_millis(20));
            }
            let mut point = measure();
            point.delay_ns = delay_ns;
            progress.inc();
            stop.store(true, Ordering::SeqCst);
            team.wait();
            points.push(point);
        }
        Ok(points)
    })?;
    let mut out = out.into_iter();
    let mut points = out.next().expect("worker 0 measures")?;
    let traffic: Vec<Vec<Point>> = out.collect::<Result<_>>()?;
    for (i, point) in points.iter_mut().enumerate() {
        point.traffic_gb_s = traffic.iter().map(|t| t[i].traffic_gb_s).sum();
    }
    Ok(points)
}

/// A curve per target, from the `loaded` records alone.
fn render(records: &[Record]) -> String {
    let mut out = String::new();
    for (spec, points) in by_target(records, "loaded") {
        let first = points[0];
        let probe = first.text(p::PROBE).unwrap_or_default();
        let rw = first.text(p::TRAFFIC_RW).unwrap_or_default();
        let (reads, writes) = rw.split_once(':').unwrap_or(("0", "0"));
        let (reads, writes) = (reads != "0", writes != "0");
        let written = match first.text(p::TRAFFIC_OP).unwrap_or_default() {
            "" | "write" | "read" => "writes".to_string(),
            op => format!("{op} writes"),
        };
        let kind = if reads && writes {
            format!("reads and {written}")
        } else if writes {
            written
        } else {
            "reads".into()
        };
        let order = if first.text(p::TRAFFIC_PATTERN).unwrap_or_default() == Pattern::Rand.name() {
            " in random order"
        } else {
            ""
        };
        out += &format!(
            "{spec}: probe {probe} on CPU {} ({}), traffic {kind}{order} on {} thread(s), {} accesses, read:write {rw}\n",
            first.threads.first().map_or(0, |t| t.cpu_requested),
            if probe == "chase" {
                format!(
                    "random chain over {}",
                    Bytes(first.count(p::PROBE_REGION_BYTES).unwrap_or_default())
                )
            } else {
                "random lines".into()
            },
            points
                .iter()
                .map(|r| r.count(p::TRAFFIC_THREADS).unwrap_or_default())
                .max()
                .unwrap_or(0),
            Bytes(first.count(p::TRAFFIC_ACCESS_BYTES).unwrap_or_default()),
        );
        let mut t = Table::new(&[
            "delay",
            "traffic GB/s",
            "mean ns",
            "p50 ns",
            "p99 ns",
            "p99.9 ns",
        ]);
        // p50, p99 and p99.9 of a point's samples.
        let tail = |r: &Record| {
            r.summary
                .as_ref()
                .map_or((0.0, 0.0, 0.0), |s| (s.p50, s.p99, s.p999))
        };
        for r in &points {
            let s = tail(r);
            t.row(vec![
                r.count(p::DELAY_NS)
                    .map(|d| format!("{d} ns"))
                    .unwrap_or_else(|| "idle".into()),
                format!("{:.2}", r.val(v::TRAFFIC_GB_S).unwrap_or_default()),
                format!("{:.1}", r.val(v::MEAN_LATENCY_NS).unwrap_or_default()),
                format!("{:.1}", s.0),
                format!("{:.1}", s.1),
                format!("{:.1}", s.2),
            ]);
        }
        out += &format!("{}\n", t.render());
        if let (Some(idle), Some(heavy)) = (points.first(), points.last()) {
            let (mi, mh) = (
                idle.val(v::MEAN_LATENCY_NS).unwrap_or_default(),
                heavy.val(v::MEAN_LATENCY_NS).unwrap_or_default(),
            );
            out += &format!(
                "heaviest load: {mh:.1} ns mean vs {mi:.1} ns idle ({:+.1}%), p99 {:.1} vs {:.1} ns\n\n",
                100.0 * (mh / mi - 1.0),
                tail(heavy).1,
                tail(idle).1
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_runs_from_idle_to_heaviest() {
        let s = delay_schedule(&[0, 1000, 100, 100], 2e9);
        assert_eq!(
            s,
            vec![
                (None, 0),
                (Some(1000), 2000),
                (Some(100), 200),
                (Some(0), 0)
            ]
        );
    }

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
    }
}
