//! What `bandwidth` measures, checked against the machine before anything is mapped: the
//! ops this CPU streams, the access sizes, the CPUs and thread counts, the region.

use super::Params;
use super::mix::Mix;
use crate::Env;
use crate::error::usage;
use crate::params::check_threads;
use anyhow::Result;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_core::warning::Warning;
use pmscope_loops::stream::{STREAM_OPS, StreamOp, Streamer};
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_sys::cpu::CpuFeatures;
use std::time::Duration;

/// The least `--region auto` gives per thread (the old fixed default).
pub const REGION_FLOOR: u64 = 512 << 20;

/// What `bandwidth` measures, validated before anything is mapped.
pub struct Plan {
    pub(super) specs: Vec<TargetSpec>,
    pub(super) opts: MapOptions,
    /// What the defaults left out or chose on this CPU, for every record.
    pub(super) notes: Vec<Warning>,
    pub(super) mix: Mix,
    pub(super) ops: Vec<StreamOp>,
    pub(super) patterns: Vec<Pattern>,
    pub(super) sizes: Vec<usize>,
    pub(super) cpus: Vec<usize>,
    pub(super) threads: Vec<usize>,
    /// `--width`; `None`: each op's own default ([`StreamOp::default_width`]).
    pub(super) width: Option<usize>,
    pub(super) per_thread: u64,
    /// Whether `per_thread` is `auto`.
    pub(super) size_source: Source,
    pub(super) shared: bool,
    pub(super) duration: Duration,
    pub(super) reps: usize,
    pub(super) seed: u64,
}

impl Plan {
    /// The vector width `op` streams with in this run.
    pub(super) fn width_of(&self, op: StreamOp, f: &CpuFeatures) -> usize {
        self.width.unwrap_or_else(|| op.default_width(f))
    }

    pub(super) fn max_threads(&self) -> usize {
        *self.threads.iter().max().unwrap_or(&1)
    }
}

pub(super) fn plan(env: &mut Env, a: &Params) -> Result<Plan> {
    let (specs, mut opts) = env.targets(&a.targets, &["dram:4k"])?;
    let mix = a.mix.unwrap_or(Mix::None);
    let sizes = access_sizes(a)?;
    let (cpus, threads) = cpus_and_threads(a)?;
    let width = width(a, &env.features)?;
    let (ops, notes) = ops(a, mix, width, &env.features)?;
    // auto: each thread's region is its share of the memory; the smallest point's threads
    // together (one region with --shared) must not fit in the last-level cache.
    let max_threads = *threads.iter().max().unwrap_or(&1);
    let min_threads = *threads.iter().min().unwrap_or(&1);
    let want = Want {
        shares: if a.shared { 1 } else { max_threads as u64 },
        together: if a.shared { 1 } else { min_threads as u64 },
        ..Want::one("--region", REGION_FLOOR)
    };
    let region = env.size(a.region, want, &specs, &opts)?;
    let per_thread = region.bytes;
    let largest = *sizes.iter().max().unwrap_or(&64) as u64;
    let least = (2 * largest).max(8192);
    if per_thread < least {
        return Err(usage(format!(
            "--region {} per thread is too small for {}-byte accesses: give at least {} (two accesses and two pages), or no true figure can come of it",
            Bytes(per_thread),
            largest,
            Bytes(least)
        )));
    }
    // Each thread's part is first touched by the CPU that streams over it, as likwid and MLC
    // place it (with --shared there is no own part: the calling thread touches it all).
    if !a.shared {
        opts.first_touch_cpus = cpus[..max_threads].to_vec();
    }
    // --full changes only the defaults: an explicit option always wins.
    Ok(Plan {
        specs,
        opts,
        notes,
        mix,
        ops,
        patterns: a.pattern.patterns(),
        sizes,
        cpus,
        threads,
        width,
        per_thread,
        size_source: region.source,
        shared: a.shared,
        duration: Duration::from_secs_f64(
            a.duration.map_or(if a.full { 1.0 } else { 0.15 }, |d| d.0),
        ),
        reps: a.reps.map_or(if a.full { 5 } else { 3 }, |r| r.0),
        seed: a.seed,
    })
}

/// `--sizes` (or its default, wider with `--full`): positive multiples of 64 bytes.
fn access_sizes(a: &Params) -> Result<Vec<usize>> {
    let default_sizes = if a.full {
        "64..128KiB"
    } else {
        "64,256,4KiB,64KiB"
    };
    let sizes: Vec<usize> = parse_axis(a.sizes.as_deref().unwrap_or(default_sizes), AxisKind::Size)
        .map_err(|e| usage(e.to_string()))?
        .into_iter()
        .map(|s| s as usize)
        .collect();
    if let Some(bad) = sizes.iter().find(|s| **s == 0 || !s.is_multiple_of(64)) {
        return Err(usage(format!(
            "access size {bad} is not a positive multiple of 64 bytes"
        )));
    }
    Ok(sizes)
}

/// The CPUs threads are pinned to, in order, and the thread counts (one thread per CPU).
fn cpus_and_threads(a: &Params) -> Result<(Vec<usize>, Vec<usize>)> {
    let cpus: Vec<usize> = match &a.cpus {
        Some(c) => c.0.clone(),
        None => pmscope_sys::affinity::allowed_cpus()?,
    };
    pmscope_runner::pin::check_cpus(&cpus).map_err(|e| usage(format!("--cpus: {e}")))?;
    let threads: Vec<usize> = match &a.threads {
        Some(axis) => parse_axis(axis, AxisKind::Count)
            .map_err(|e| usage(e.to_string()))?
            .into_iter()
            .map(|t| t as usize)
            .collect(),
        None => (1..=cpus.len()).collect(),
    };
    for &t in &threads {
        check_threads(t, &cpus).map_err(usage)?;
    }
    Ok((cpus, threads))
}

/// The vector width as given (refused where this CPU lacks it); none: each op's default.
fn width(a: &Params, f: &CpuFeatures) -> Result<Option<usize>> {
    let Some(w) = a.width else {
        return Ok(None);
    };
    let w = w.bytes();
    Streamer::new(StreamOp::Read, w, 64, f)
        .map_err(|e| usage(format!("--width {w}: {}", e.reason)))?;
    Ok(Some(w))
}

/// The ops: a named op this CPU lacks is refused now; the default list (every op, or the
/// writers' `write` with a mix) leaves it out and the records say so.
fn ops(
    a: &Params,
    mix: Mix,
    width: Option<usize>,
    f: &CpuFeatures,
) -> Result<(Vec<StreamOp>, Vec<Warning>)> {
    let width = |op: StreamOp| width.unwrap_or_else(|| op.default_width(f));
    if let Some(named) = &a.ops {
        for &op in named {
            Streamer::new(op, width(op), 64, f)?;
        }
        return Ok((named.clone(), Vec::new()));
    }
    let defaults = match mix {
        Mix::None => STREAM_OPS.to_vec(),
        _ => vec![StreamOp::Write],
    };
    let mut notes = Vec::new();
    let mut ok = Vec::new();
    for op in defaults {
        match Streamer::new(op, width(op), 64, f) {
            Ok(_) => ok.push(op),
            Err(e) => notes.push(crate::fallback::note(format!(
                "{} is left out of the default ops: {}",
                op.name(),
                e.reason
            ))),
        }
    }
    Ok((ok, notes))
}
