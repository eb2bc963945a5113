//! `pmscope sync`: pmmeter's experiment (seed 002 Figure 1) — throughput of streams of
//! 64-byte blocks made of instruction units (8/16/32/64 bytes), sequential or at random
//! precomputed lines, under each synchronisation option: loads bare, nt, bare+F, nt+F;
//! stores bare, nt, bare+F, nt+F, clflush, clflushopt, clwb and each of those +F.
//! `+F` is a fence after every block: `mfence` by default, as pmmeter's `-f 0`;
//! `--fence sfence` for stores' usual persistence fence.

use crate::args::SyncArgs;
use crate::error::usage;
use crate::output::Sink;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::vocab::Pattern;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_experiment::Env as Context;
use pmscope_experiment::env::parse_patterns;
use pmscope_experiment::params::check_threads;
use pmscope_experiment::progress::Progress;
use pmscope_experiment::render::fields::{by_target, short_reason};
use pmscope_experiment::render::table::Table;
use pmscope_loops::Region;
use pmscope_loops::access::{FenceKind, Op, Sequence, Width, store_value};
use pmscope_loops::catalog;
use pmscope_loops::rng::SplitMix64;
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::harness::repeat_dropping_first;
use pmscope_sys::cpu::CpuFeatures;
use std::time::{Duration, Instant};

/// Lines per call between clock checks: long enough that the check costs nothing, short
/// enough to stop within a millisecond of the deadline.
const CHUNK_LINES: usize = 16 * 1024;

/// Streams `seq` over `region` (sequentially, or over `idx` lines) for `duration`;
/// returns (lines done, seconds taken).
fn stream_for(
    seq: &Sequence,
    region: &mut Region<'_>,
    idx: Option<&[u32]>,
    duration: Duration,
) -> (u64, f64) {
    let total_lines = region.len() / 64;
    let start = Instant::now();
    let mut done = 0u64;
    let mut at = 0usize;
    let mut value = 1u64;
    while start.elapsed() < duration {
        match idx {
            None => {
                let n = CHUNK_LINES.min(total_lines - at);
                seq.stream_seq(region, at, n, store_value(value));
                at = (at + n) % total_lines;
                done += n as u64;
            }
            Some(idx) => {
                let n = CHUNK_LINES.min(idx.len() - at);
                seq.stream_idx(region, &idx[at..at + n], store_value(value));
                at = (at + n) % idx.len();
                done += n as u64;
            }
        }
        value += 1;
    }
    (done, start.elapsed().as_secs_f64())
}

/// The instruction unit: `--unit` checked against the CPU (a width it lacks is a usage
/// error), or pmmeter's 32 bytes, 16 on a CPU without AVX2 (with the record's note).
fn unit(given: Option<usize>, f: &CpuFeatures) -> Result<(Width, Option<Warning>)> {
    match given {
        Some(n) => {
            let w = Width::from_bytes(n)
                .ok_or_else(|| usage(format!("--unit {n}: use 8, 16, 32 or 64")))?;
            Op::Store
                .check(w, f)
                .map_err(|e| usage(format!("--unit {n}: {}", e.reason)))?;
            Ok((w, None))
        }
        None if Op::Store.check(Width::W32, f).is_ok() => Ok((Width::W32, None)),
        None => Ok((
            Width::W16,
            Some(pmscope_experiment::fallback::note(
                "the default unit is pmmeter's 32 bytes, but this CPU lacks AVX2, so 16-byte (SSE2) instructions are used",
            )),
        )),
    }
}

/// What `sync` measures, validated before anything is mapped.
struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    unit: Width,
    unit_note: Option<Warning>,
    patterns: Vec<bool>,
    plus_f: FenceKind,
    region_bytes: u64,
    /// Whether `region_bytes` is `auto`.
    size_source: Source,
    cpus: Vec<usize>,
    reps: usize,
    duration: Duration,
    seed: u64,
}

/// The least `--region auto` gives (the old fixed default).
pub const REGION_FLOOR: u64 = 1 << 30;

fn plan(ctx: &mut Context, a: &SyncArgs) -> Result<Plan> {
    let (specs, mut opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let (unit, unit_note) = unit(a.unit, &ctx.features)?;
    let patterns = parse_patterns(&a.pattern)?;
    let plus_f = match a.fence.as_str() {
        "mfence" => FenceKind::Mfence,
        "sfence" => FenceKind::Sfence,
        other => return Err(usage(format!("--fence {other}: use mfence or sfence"))),
    };
    let threads = a.threads.0;
    let cpus: Vec<usize> = match &a.cpus {
        Some(c) => c.0.clone(),
        None => pmscope_sys::affinity::allowed_cpus()?,
    };
    check_threads(threads, &cpus).map_err(usage)?;
    let cpus = cpus[..threads].to_vec();
    let region = ctx.size(a.region, Want::one("--region", REGION_FLOOR), &specs, &opts);
    // Each thread's part is first touched by the CPU that streams over it.
    opts.first_touch_cpus = cpus.clone();
    // --full changes only the defaults: an explicit option always wins.
    Ok(Plan {
        specs,
        opts,
        unit,
        unit_note,
        patterns,
        plus_f,
        region_bytes: region.bytes,
        size_source: region.source,
        cpus,
        reps: a.reps.map_or(if a.full { 7 } else { 3 }, |r| r.0),
        duration: Duration::from_secs_f64(
            a.duration.map_or(if a.full { 1.0 } else { 0.2 }, |d| d.0),
        ),
        seed: a.seed,
    })
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &SyncArgs) -> Result<()> {
    let plan = plan(ctx, a)?;
    measure(ctx, sink, &plan)?;
    if sink.human() {
        print!("{}", render(sink.records()));
    }
    Ok(())
}

fn measure(ctx: &mut Context, sink: &mut Sink, p: &Plan) -> Result<()> {
    let features = ctx.features;
    let (cpus, threads, unit) = (&p.cpus[..], p.cpus.len(), p.unit);
    let progress = Progress::new(
        (p.specs.len() * catalog::pmmeter_options().count() * p.patterns.len()) as u64,
        "sync",
        sink.human(),
    );
    // The timer is calibrated for the records; streams are timed by their own clock.
    let mut h = ctx.start(sink, cpus, Some(p.region_bytes), false)?;
    if let Some(w) = &p.unit_note {
        h.note(w.clone());
    }
    h.per_target(&p.specs, p.region_bytes, &p.opts, None, |run, m| {
        let executor = run.executor();
        let lines_per_thread = m.len() / threads / 64;
        let mut regions = Region::from_slice(m.bytes_mut()).split(threads, 64);
        // pmmeter's options, in its order; `+F` is the row with the chosen fence.
        for option in catalog::pmmeter_options() {
            let name = option.pmmeter.expect("a pmmeter option");
            let row = match option.fence {
                FenceKind::None => option,
                _ => catalog::of(option.op, p.plus_f),
            };
            let (op, fence) = (row.op, row.fence);
            for &random in &p.patterns {
                run.check_interrupt()?;
                let pattern = Pattern::from_random(random).name();
                // Streams only: no single access is timed, so no rdtscp is needed.
                let seq = match Sequence::stream(op, fence, unit, &features) {
                    Ok(s) => s,
                    Err(e) => {
                        let r = run
                            .record("sync")
                            .param(p::OPTION, name)
                            .param(p::OP, op.name())
                            .param(p::FENCE, fence.name())
                            .param(p::UNIT_BYTES, unit.bytes())
                            .param(p::PATTERN, pattern)
                            .param(p::THREADS, threads)
                            .param(p::UNSUPPORTED, e.to_string());
                        run.emit(&r)?;
                        progress.inc();
                        continue;
                    }
                };
                let gb_s = repeat_dropping_first(p.reps, |_| {
                    let out = run.on_each(cpus, &mut regions, |w, region| {
                        let lines = (region.len() / 64) as u64;
                        executor.run(
                            || {
                                let idx: Option<Vec<u32>> = random.then(|| {
                                    let mut v: Vec<u32> = (0..lines_per_thread as u32).collect();
                                    SplitMix64::new(p.seed ^ w as u64).shuffle(&mut v);
                                    v
                                });
                                stream_for(&seq, region, idx.as_deref(), p.duration)
                            },
                            || (lines, 0.001),
                        )
                    })?;
                    let bytes: f64 = out.iter().map(|(l, _)| *l as f64 * 64.0).sum();
                    let secs = out.iter().map(|(_, s)| *s).fold(0.0, f64::max);
                    Ok(bytes / secs / 1e9)
                })?;
                let s = Summary::of(&gb_s).expect("finite");
                let per_block = (64 / unit.bytes()) as f64;
                let minstr = s.p50 * 1e9 / 64.0 * per_block / 1e6;
                let mut r = run
                    .record("sync")
                    .param(p::OPTION, name)
                    .param(p::OP, op.name())
                    .param(p::FENCE, fence.name())
                    .param(p::UNIT_BYTES, unit.bytes())
                    .param(p::BLOCK_BYTES, 64)
                    .param(p::PATTERN, pattern)
                    .param(p::THREADS, threads)
                    .param(p::REGION_BYTES, p.region_bytes)
                    .param(p::SIZE_SOURCE, p.size_source.name())
                    .value(v::MILLION_INSTRUCTIONS_PER_S, minstr);
                r.metric = Some("bandwidth_gb_s".into());
                r.summary = Some(s);
                run.emit(&r)?;
                progress.inc();
            }
        }
        Ok(())
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

/// A table per target, from the `sync` records alone: pmmeter's options in its order.
fn render(records: &[Record]) -> String {
    let mut out = String::new();
    for (spec, rows) in by_target(records, "sync") {
        let first = rows[0];
        let threads = first.count(p::THREADS).unwrap_or_default();
        // The `+F` rows carry the fence `--fence` chose.
        let plus_f = rows
            .iter()
            .find(|r| r.text(p::OPTION).unwrap_or_default().ends_with("+F"))
            .map_or("mfence", |r| r.text(p::FENCE).unwrap_or_default());
        out += &format!(
            "{spec}: 64-byte blocks of {}-byte instructions, {threads} thread{}, GB/s = 10^9 B/s, +F = {plus_f} after each block\n",
            first.count(p::UNIT_BYTES).unwrap_or_default(),
            if threads == 1 { "" } else { "s" },
        );
        let mut t = Table::new(&["option", "pattern", "GB/s", "min", "max", "M instr/s"]);
        for r in rows {
            let (name, pattern) = (
                r.text(p::OPTION).unwrap_or_default().to_string(),
                r.text(p::PATTERN).unwrap_or_default().to_string(),
            );
            match &r.summary {
                Some(s) => t.row(vec![
                    name,
                    pattern,
                    format!("{:.2}", s.p50),
                    format!("{:.2}", s.min),
                    format!("{:.2}", s.max),
                    format!(
                        "{:.0}",
                        r.val(v::MILLION_INSTRUCTIONS_PER_S).unwrap_or_default()
                    ),
                ]),
                None => t.row(vec![
                    name,
                    pattern,
                    format!(
                        "n/a: {}",
                        short_reason(r.text(p::UNSUPPORTED).unwrap_or_default())
                    ),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]),
            }
        }
        out += &format!("{}\n\n", t.render());
    }
    out
}
