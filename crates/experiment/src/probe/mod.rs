//! `pmscope probe KIND -t SPEC...`: the on-DIMM buffer and prefetch probes of seed 001
//! (Xiang et al.). Each is a working-set sweep over 256-byte XPLines with a figure per
//! point, and the knee of each curve (`core::knee`): the size of the buffer the accesses
//! stopped fitting in. Loads are flushed before they are timed so the CPU caches never
//! answer; writes are non-temporal or flushed. Optane shows a 16 KB read buffer and
//! 256 B granularity here; DRAM has no XPLine, but the CPU's own buffers and prefetchers
//! may show — the records say what was measured, not what was expected.

mod render;
mod variants;

use crate::error::usage;
use crate::measure::{Sampled, Sampler};
use crate::output::Output;
use crate::params::{Count, TargetArgs};
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::knee;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_loops::Region;
use pmscope_loops::access::{FenceKind, Op, Sequence, Width, timing_overhead};
use pmscope_loops::probe::{self, VisitWrite, XPLINE};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::{BlockIndex, TargetRun};
use pmscope_runner::interrupt;
use pmscope_runner::repeat::Workers;
use pmscope_runner::timer::Timer;
use pmscope_sys::cpu::CpuFeatures;
use variants::{Tools, Variant};

/// A knee is a rise of more than this fraction between neighbouring working sets.
const KNEE_RISE: f64 = 0.25;

/// The probes of `pmscope probe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProbeKind {
    /// Read k of the 4 lines of each XPLine (k = 1..4), flushed: the read buffer's size and
    /// its granularity (64 B vs 256 B).
    ReadBuffer,
    /// Sequential and random non-temporal writes of 1..4 lines of each XPLine: the
    /// write-combining buffer.
    WriteBuffer,
    /// Flushed reads interleaved with non-temporal writes on a disjoint half, against
    /// read-only and write-only baselines: do reads and writes share a buffer?
    RwBuffer,
    /// Random XPLines read line by line, with and without a software prefetch of the next.
    Prefetch,
    /// A walk over XPLine elements writing another line of each (--write), coupled (a
    /// pointer chase) or decoupled (addresses from a DRAM array).
    ChaseWrite,
}

impl ProbeKind {
    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::ReadBuffer => "read-buffer",
            ProbeKind::WriteBuffer => "write-buffer",
            ProbeKind::RwBuffer => "rw-buffer",
            ProbeKind::Prefetch => "prefetch",
            ProbeKind::ChaseWrite => "chase-write",
        }
    }
}

/// The write of `--write`.
fn visit_write(s: &str) -> Result<VisitWrite, String> {
    VisitWrite::parse(s).ok_or_else(|| {
        let names: Vec<&str> = probe::VISIT_WRITES.iter().map(|w| w.name()).collect();
        format!("use {}", names.join(", "))
    })
}

/// `pmscope probe`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// The probe.
    #[arg(value_enum)]
    pub kind: ProbeKind,
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Working sets (sweep axis) [default: 1KiB..64MiB].
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Timed visits per point [default: 10000].
    #[arg(long)]
    pub count: Option<Count>,
    /// chase-write: the write made at each visit: store+clwb, store+clflushopt,
    /// store+clflush or ntstore [default: store+clwb, or where the CPU lacks clwb
    /// store+clflushopt, else store+clflush].
    #[arg(long, value_parser = visit_write)]
    pub write: Option<VisitWrite>,
    /// CPU to pin the measuring thread to.
    #[arg(long, value_name = "CPU", value_parser = pmscope_core::whole::parse::<usize>)]
    pub cpu: Option<usize>,
    /// Seed of the random orders.
    #[arg(long, default_value_t = 0x5EED, value_parser = pmscope_core::whole::parse::<u64>)]
    pub seed: u64,
}

/// What `probe` measures, validated before anything is mapped.
pub struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    kind: ProbeKind,
    sizes: Vec<u64>,
    count: usize,
    cpu: usize,
    /// The curves, each measured over every working set.
    variants: Vec<Variant>,
    /// That the default `--write` fell back, for every record.
    write_note: Option<Warning>,
}

/// The write of `chase-write`'s visits: as given, or the default this CPU has (with the
/// records' note when it fell back from store+clwb).
fn write(a: &Params, f: &CpuFeatures) -> Result<(VisitWrite, Option<Warning>)> {
    let write = a.write.unwrap_or_else(|| VisitWrite::default_for(f));
    if a.kind != ProbeKind::ChaseWrite {
        return Ok((write, None));
    }
    write.check(f)?;
    // The default write falls back as the persist default does, and the records say so.
    let note = (a.write.is_none() && write != VisitWrite::StoreClwb).then(|| {
        crate::fallback::note(format!(
            "the default write is store+clwb, but this CPU lacks {}, so {} is used",
            if write == VisitWrite::StoreClflush {
                "clwb and clflushopt"
            } else {
                "clwb"
            },
            write.name()
        ))
    });
    Ok((write, note))
}

fn plan(ctx: &mut Env, a: &Params) -> Result<Plan> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let sizes: Vec<u64> = parse_axis(a.sizes.as_deref().unwrap_or("1KiB..64MiB"), AxisKind::Size)
        .map_err(|e| usage(e.to_string()))?;
    if let Some(bad) = sizes.iter().find(|&&s| (s as usize) < 2 * XPLINE) {
        return Err(usage(format!(
            "working set {} holds fewer than two 256-byte XPLines",
            Bytes(*bad)
        )));
    }
    let count = a.count.map_or(10_000, |c| c.0);
    let features = ctx.features;
    let width = Width::widest(&features);
    let load = Sequence::new(Op::Load, FenceKind::None, width, &features)?;
    let nt = Sequence::new(Op::NtStore, FenceKind::Sfence, width, &features)?;
    let (write, write_note) = write(a, &features)?;
    let tools = Tools {
        load,
        nt,
        write,
        count,
        seed: a.seed,
    };
    Ok(Plan {
        specs,
        opts,
        kind: a.kind,
        sizes,
        count,
        cpu: a.cpu.unwrap_or(0),
        variants: variants::of(a.kind, tools),
        write_note,
    })
}

/// `pmscope probe`.
pub struct Probe;

impl Experiment for Probe {
    const NAME: &'static str = "probe";
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

    fn derive(records: &[Record]) -> Vec<Record> {
        knees(records)
    }

    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
        if let Some(c) = &on.cpus {
            params.cpu = c.0.first().copied();
        }
    }
}

/// One curve as measured: (working set, ns per visit) per point.
type Curve = Vec<(u64, Sampled)>;

fn measure(ctx: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let max_ws = *p.sizes.iter().max().expect("non-empty axis");
    let mut h = ctx.start(out, &[p.cpu], Some(max_ws), true)?;
    if let Some(w) = &p.write_note {
        h.note(w.clone());
    }
    let timer: Timer = *h.timer();
    h.per_target(&p.specs, max_ws, &p.opts, None, |run, m| {
        let executor = run.executor();
        // One visit per timing: the values come in the timer's steps.
        let sampler = Sampler::new(run, &[p.cpu], Workers::Busy(1), &timer);
        let block = run.block();
        let curves = run.on_cpu(p.cpu, m.bytes_mut(), |bytes| {
            measure_curves(
                &mut Region::from_slice(bytes),
                p,
                (&timer, &sampler),
                (executor, block),
            )
        })?;
        emit(run, p, &curves)?;
        run.check_interrupt()
    })?;
    h.finish()?;
    Ok(())
}

/// Every variant's curve on one target's region (until an interrupt): the block's share of
/// each point's visits.
fn measure_curves(
    region: &mut Region<'_>,
    p: &Plan,
    (timer, sampler): (&Timer, &Sampler),
    (executor, block): (Executor, BlockIndex),
) -> Vec<Curve> {
    let overhead = executor.run(|| timing_overhead(10_001), || 0);
    let mut curves: Vec<Curve> = Vec::new();
    'all: for v in &p.variants {
        let mut curve = Vec::new();
        for &ws in &p.sizes {
            if interrupt::check().is_err() {
                curves.push(curve);
                break 'all;
            }
            let point = executor.run(
                || {
                    let (point, _) = sampler.take(|| {
                        (v.measure)(region, ws as usize, block)
                            .iter()
                            .map(|&t| timer.net_ns(t, overhead))
                            .collect()
                    });
                    point
                },
                || {
                    let step = if ws > 16 << 10 { 300.0 } else { 100.0 };
                    sampler.synthetic(&Executor::synthetic(block.share(p.count), step))
                },
            );
            curve.push((ws, point));
        }
        curves.push(curve);
    }
    curves
}

/// The records of one target: a point per working set of each curve.
fn emit(run: &mut TargetRun<'_, '_>, p: &Plan, curves: &[Curve]) -> Result<()> {
    let kind = p.kind.name();
    for (variant, curve) in p.variants.iter().zip(curves) {
        for (ws, s) in curve {
            let mut r = run
                .record("probe")
                .param(p::PROBE, kind)
                .param(p::WORKING_SET_BYTES, *ws)
                .param(p::SAMPLES, p.count);
            for (k, val) in &variant.params {
                r = r.param(*k, val.clone());
            }
            let mut r = s.annotate(r);
            r.metric = Some("latency_ns".into());
            run.emit(&r)?;
        }
    }
    Ok(())
}

/// A `probe-knee` record per curve (target and variant), from its points as recorded
/// (over all their blocks): where the latency first rises by more than [`KNEE_RISE`].
fn knees(records: &[Record]) -> Vec<Record> {
    let mut curves: Vec<(Record, Vec<(u64, f64)>)> = Vec::new();
    for r in records.iter().filter(|r| r.experiment == "probe") {
        let (Some(ws), Some(s)) = (r.count(p::WORKING_SET_BYTES), &r.summary) else {
            continue;
        };
        let same = |c: &Record| {
            c.spec() == r.spec() && {
                let strip = |x: &Record| {
                    let mut q = x.params.clone();
                    q.remove(p::WORKING_SET_BYTES.name());
                    q
                };
                strip(c) == strip(r)
            }
        };
        match curves.iter_mut().find(|(c, _)| same(c)) {
            Some((_, points)) => points.push((ws, s.p50)),
            None => curves.push((r.clone(), vec![(ws, s.p50)])),
        }
    }
    curves
        .into_iter()
        .map(|(first, points)| {
            let mut r = first.derived("probe-knee", &[p::EXECUTOR]);
            for (k, val) in &first.params {
                if k != p::WORKING_SET_BYTES.name() && k != p::SAMPLES.name() {
                    r.params.insert(k.clone(), val.clone());
                }
            }
            match knee::knee(&points, KNEE_RISE) {
                Some(k) => r
                    .param(p::KNEE_FOUND, true)
                    .value(v::KNEE_BYTES, k.size as f64)
                    .value(v::BEFORE_NS, k.before)
                    .value(v::AFTER_NS, k.after),
                None => r.param(p::KNEE_FOUND, false),
            }
        })
        .collect()
}
