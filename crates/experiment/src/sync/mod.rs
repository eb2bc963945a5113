//! `pmscope sync`: pmmeter's experiment (seed 002 Figure 1) — throughput of streams of
//! 64-byte blocks made of instruction units (8/16/32/64 bytes), sequential or at random
//! precomputed lines, under each synchronisation option: loads bare, nt, bare+F, nt+F;
//! stores bare, nt, bare+F, nt+F, clflush, clflushopt, clwb and each of those +F.
//! `+F` is a fence after every block: `mfence` by default, as pmmeter's `-f 0`;
//! `--fence sfence` for stores' usual persistence fence.

mod render;

use crate::error::usage;
use crate::measure::with_repetitions;
use crate::output::Output;
use crate::params::{AutoSize, Count, Cpus, Patterns, Seconds, TargetArgs, check_threads};
use crate::progress::Progress;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::vocab::{Pattern, p, v};
use pmscope_core::warning::Warning;
use pmscope_loops::Region;
use pmscope_loops::access::{FenceKind, Op, Sequence, Width, store_value};
use pmscope_loops::catalog::{self, OpSpec};
use pmscope_loops::rng::SplitMix64;
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::harness::TargetRun;
use pmscope_runner::repeat::{Workers, repeat};
use pmscope_sys::cpu::CpuFeatures;
use std::time::{Duration, Instant};

/// The fence of pmmeter's `+F` options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlusFence {
    /// pmmeter's default (`-f 0`).
    Mfence,
    /// The usual persistence fence of stores.
    Sfence,
}

impl PlusFence {
    /// The fence.
    pub fn kind(self) -> FenceKind {
        match self {
            PlusFence::Mfence => FenceKind::Mfence,
            PlusFence::Sfence => FenceKind::Sfence,
        }
    }
}

/// `pmscope sync`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Instruction unit in bytes: 8, 16, 32 (AVX2) or 64 (AVX-512F); each 64-byte block is
    /// 64/unit instructions [default: 32, pmmeter's; 16 on a CPU without AVX2].
    #[arg(long, value_parser = pmscope_core::whole::parse::<usize>)]
    pub unit: Option<usize>,
    /// Pattern: seq, rand (lines in a precomputed random order) or both.
    #[arg(long, value_enum, default_value_t = Patterns::Both)]
    pub pattern: Patterns,
    /// Region streamed over (split between threads), or auto: 4x the last-level cache, at
    /// least 1GiB, capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub region: AutoSize,
    /// Threads, each on its own part of the region.
    #[arg(long, default_value = "1")]
    pub threads: Count,
    /// Repetitions per option, at least (one more is run first and dropped; more until --precision is met) [default: 3; 7 with --full].
    #[arg(long)]
    pub reps: Option<Count>,
    /// Seconds each thread streams per repetition [default: 0.2; 1 with --full].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<Seconds>,
    /// CPUs to pin the threads to (default: the allowed CPUs in order).
    #[arg(long)]
    pub cpus: Option<Cpus>,
    /// The fence of the +F options: mfence (pmmeter's default) or sfence.
    #[arg(long, value_enum, default_value_t = PlusFence::Mfence)]
    pub fence: PlusFence,
    /// Seed of the random line order.
    #[arg(long, default_value_t = 0x5EED, value_parser = pmscope_core::whole::parse::<u64>)]
    pub seed: u64,
    /// The thorough version: 7 repetitions of 1 s per option.
    #[arg(long)]
    pub full: bool,
}

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
            Some(crate::fallback::note(
                "the default unit is pmmeter's 32 bytes, but this CPU lacks AVX2, so 16-byte (SSE2) instructions are used",
            )),
        )),
    }
}

/// What `sync` measures, validated before anything is mapped.
pub struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    unit: Width,
    unit_note: Option<Warning>,
    patterns: Vec<Pattern>,
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

fn plan(ctx: &mut Env, a: &Params) -> Result<Plan> {
    let (specs, mut opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let (unit, unit_note) = unit(a.unit, &ctx.features)?;
    let threads = a.threads.0;
    let cpus: Vec<usize> = match &a.cpus {
        Some(c) => c.0.clone(),
        None => pmscope_sys::affinity::allowed_cpus()?,
    };
    check_threads(threads, &cpus).map_err(usage)?;
    let cpus = cpus[..threads].to_vec();
    let region = ctx.size(a.region, Want::one("--region", REGION_FLOOR), &specs, &opts)?;
    // Each thread's part is first touched by the CPU that streams over it.
    opts.first_touch_cpus = cpus.clone();
    // --full changes only the defaults: an explicit option always wins.
    Ok(Plan {
        specs,
        opts,
        unit,
        unit_note,
        patterns: a.pattern.patterns(),
        plus_f: a.fence.kind(),
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

/// `pmscope sync` (not `Sync`, which would hide the marker trait in this module).
pub struct Synchronisation;

impl Experiment for Synchronisation {
    const NAME: &'static str = "sync";
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
            params.cpus = Some(c.clone());
        }
    }
}

fn measure(ctx: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let features = ctx.features;
    let threads = p.cpus.len();
    let progress = Progress::new(
        (p.specs.len() * catalog::pmmeter_options().count() * p.patterns.len()) as u64,
        "sync",
        out.human(),
    );
    // The timer is calibrated for the records; streams are timed by their own clock.
    let mut h = ctx.start(out, &p.cpus, Some(p.region_bytes), false)?;
    if let Some(w) = &p.unit_note {
        h.note(w.clone());
    }
    h.per_target(&p.specs, p.region_bytes, &p.opts, None, |run, m| {
        let lines_per_thread = m.len() / threads / 64;
        let mut regions = Region::from_slice(m.bytes_mut()).split(threads, 64);
        // pmmeter's options, in its order; `+F` is the row with the chosen fence.
        for option in catalog::pmmeter_options() {
            let name = option.pmmeter.expect("a pmmeter option");
            let row = match option.fence {
                FenceKind::None => option,
                _ => catalog::of(option.op, p.plus_f),
            };
            for &pattern in &p.patterns {
                run.check_interrupt()?;
                let stream = Stream {
                    row,
                    pattern,
                    lines_per_thread,
                };
                let r = measure_option(run, p, &mut regions, stream, &features)?
                    .param(p::OPTION, name)
                    .param(p::OP, row.op.name())
                    .param(p::FENCE, row.fence.name())
                    .param(p::UNIT_BYTES, p.unit.bytes())
                    .param(p::PATTERN, pattern.name())
                    .param(p::THREADS, threads);
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

/// One option's stream over the threads' parts of the region.
#[derive(Clone, Copy)]
struct Stream<'c> {
    row: &'c OpSpec,
    pattern: Pattern,
    lines_per_thread: usize,
}

/// One option on one pattern: its throughput record (its name and stream's parameters are
/// added by the caller), or the record of why it cannot run here.
fn measure_option(
    run: &mut TargetRun<'_, '_>,
    p: &Plan,
    regions: &mut [Region<'_>],
    s: Stream<'_>,
    features: &CpuFeatures,
) -> Result<Record> {
    let executor = run.executor();
    // Streams only: no single access is timed, so no rdtscp is needed.
    let seq = match Sequence::stream(s.row.op, s.row.fence, p.unit, features) {
        Ok(seq) => seq,
        Err(e) => return Ok(run.record("sync").param(p::UNSUPPORTED, e.to_string())),
    };
    let random = s.pattern == Pattern::Rand;
    let policy = run.repeat_policy(p.reps);
    let mut watch = run.watch(&p.cpus, Workers::Busy(p.cpus.len()));
    let (seed, duration) = (
        run.block().seed(p.seed),
        p.duration.mul_f64(run.block().rep_scale(p.reps)),
    );
    let gb_s = repeat(
        &policy,
        &mut watch,
        |gb_s| *gb_s,
        |_| {
            let out = run.on_each(&p.cpus, regions, |w, region| {
                let lines = (region.len() / 64) as u64;
                executor.run(
                    || {
                        let idx: Option<Vec<u32>> = random.then(|| {
                            let mut v: Vec<u32> = (0..s.lines_per_thread as u32).collect();
                            SplitMix64::new(seed ^ w as u64).shuffle(&mut v);
                            v
                        });
                        stream_for(&seq, region, idx.as_deref(), duration)
                    },
                    || (lines, 0.001),
                )
            })?;
            let bytes: f64 = out.iter().map(|(l, _)| *l as f64 * 64.0).sum();
            let secs = out.iter().map(|(_, s)| *s).fold(0.0, f64::max);
            Ok(bytes / secs / 1e9)
        },
    )?;
    let s = Summary::of(&gb_s.kept).expect("finite");
    let per_block = (64 / p.unit.bytes()) as f64;
    let minstr = s.p50 * 1e9 / 64.0 * per_block / 1e6;
    let r = run
        .record("sync")
        .param(p::BLOCK_BYTES, 64)
        .param(p::REGION_BYTES, p.region_bytes)
        .param(p::SIZE_SOURCE, p.size_source.name())
        .value(v::MILLION_INSTRUCTIONS_PER_S, minstr);
    let mut r = with_repetitions(r, &gb_s);
    r.metric = Some("bandwidth_gb_s".into());
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_pmmeters() {
        let d = crate::defaults::<Params>();
        assert_eq!(d.pattern.patterns(), [Pattern::Seq, Pattern::Rand]);
        assert_eq!(d.fence.kind(), FenceKind::Mfence);
        assert_eq!((d.threads.0, d.unit), (1, None));
    }
}
