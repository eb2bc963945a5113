//! `pmscope bandwidth`: GB/s (10^9 B/s) of read, write, ntstore, store+clwb, copy and ntcopy
//! streams, sequential or over random blocks of the access size, by thread count and access
//! size, each thread on its own part of the target (or all on one shared region), and mixed
//! reads and writes (seed 004 Figures 9-13): a split of k readers and n-k writers, or every
//! thread interleaving reads and writes at a ratio such as 2:1.

use crate::args::BandwidthArgs;
use crate::error::usage;
use crate::output::Sink;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::env::parse_patterns;
use pmscope_experiment::measure::{Role, stream_for};

use anyhow::Result;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_experiment::params::check_threads;
use pmscope_experiment::progress::Progress;
use pmscope_experiment::render::table::Table;
use pmscope_loops::Region;
use pmscope_loops::stream::{STREAM_OPS, StreamOp, StreamView, Streamer, Traffic};
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::harness::{TargetRun, repeat_dropping_first};
use pmscope_sys::cpu::CpuFeatures;
use std::time::Duration;

/// How reads and writes are mixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    /// No mix: every thread runs the op.
    None,
    /// k readers and n-k writers, for every k from 0 to n (seed 004 Figure 13).
    Split,
    /// Every thread interleaves `reads` reads and `writes` writes (seed 004 Figure 12).
    Ratio {
        /// Reads per round.
        reads: u32,
        /// Writes per round.
        writes: u32,
    },
}

/// Parses `--mix`: `split` or `R:W`.
pub fn parse_mix(s: &str) -> Result<Mix, String> {
    if s == "split" {
        return Ok(Mix::Split);
    }
    let bad = || {
        format!("'{s}' is not a mix: use split (k readers, n-k writers) or a ratio R:W such as 2:1")
    };
    let (r, w) = s.split_once(':').ok_or_else(bad)?;
    let reads: u32 = r.parse().map_err(|_| bad())?;
    let writes: u32 = w.parse().map_err(|_| bad())?;
    if reads == 0 && writes == 0 {
        return Err(bad());
    }
    Ok(Mix::Ratio { reads, writes })
}

/// What each thread does at each point of a thread count, with the point's label: the
/// split gives k readers then n-k writers for every k.
pub fn thread_roles(
    n: usize,
    mix: Mix,
    op: Streamer,
    read: Streamer,
    write: Streamer,
) -> Vec<(String, Vec<Role>)> {
    match mix {
        Mix::None => vec![(String::new(), vec![Role::Stream(op); n])],
        Mix::Split => (0..=n)
            .map(|k| {
                let roles = (0..n)
                    .map(|i| Role::Stream(if i < k { read } else { write }))
                    .collect();
                (format!("{k}R+{}W", n - k), roles)
            })
            .collect(),
        Mix::Ratio { reads, writes } => vec![(
            format!("{reads}:{writes} interleaved"),
            vec![
                Role::Interleave {
                    read,
                    write,
                    reads,
                    writes
                };
                n
            ],
        )],
    }
}

/// What `bandwidth` measures, validated before anything is mapped.
struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    /// What the defaults left out or chose on this CPU, for every record.
    notes: Vec<pmscope_core::warning::Warning>,
    mix: Mix,
    ops: Vec<StreamOp>,
    patterns: Vec<bool>,
    sizes: Vec<usize>,
    cpus: Vec<usize>,
    threads: Vec<usize>,
    width: usize,
    per_thread: u64,
    /// Whether `per_thread` is `auto`.
    size_source: Source,
    shared: bool,
    duration: Duration,
    reps: usize,
    seed: u64,
}

impl Plan {
    fn max_threads(&self) -> usize {
        *self.threads.iter().max().unwrap_or(&1)
    }
}

/// The least `--region auto` gives per thread (the old fixed default).
pub const REGION_FLOOR: u64 = 512 << 20;

fn plan(ctx: &mut Context, a: &BandwidthArgs) -> Result<Plan> {
    let (specs, mut opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let mix = match &a.mix {
        None => Mix::None,
        Some(m) => parse_mix(m).map_err(usage)?,
    };
    let ops: Vec<StreamOp> = match (&a.ops, mix) {
        (Some(list), _) => list
            .split(',')
            .map(|s| {
                StreamOp::parse(s.trim()).ok_or_else(|| {
                    usage(format!(
                        "'{s}' is not an op: use {}",
                        STREAM_OPS
                            .iter()
                            .map(|o| o.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?,
        (None, Mix::None) => STREAM_OPS.to_vec(),
        (None, _) => vec![StreamOp::Write],
    };
    let patterns = parse_patterns(&a.pattern)?;
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
    let f = &ctx.features;
    let width = match a.width {
        Some(w) => {
            Streamer::new(StreamOp::Read, w, 64, f)
                .map_err(|e| usage(format!("--width {w}: {}", e.reason)))?;
            w
        }
        None => Streamer::widest(f),
    };
    // A named op this CPU lacks is refused now; the default list leaves it out and the
    // records say so.
    let mut notes = Vec::new();
    let ops: Vec<StreamOp> = if a.ops.is_some() {
        for &op in &ops {
            Streamer::new(op, width, 64, f)?;
        }
        ops
    } else {
        let (ok, lacking): (Vec<StreamOp>, Vec<StreamOp>) = ops
            .into_iter()
            .partition(|&op| Streamer::new(op, width, 64, f).is_ok());
        for op in lacking {
            if let Err(e) = Streamer::new(op, width, 64, f) {
                notes.push(pmscope_experiment::fallback::note(format!(
                    "{} is left out of the default ops: {}",
                    op.name(),
                    e.reason
                )));
            }
        }
        ok
    };
    // auto: each thread's region is its share of the memory; the smallest point's threads
    // together (one region with --shared) must not fit in the last-level cache.
    let max_threads = *threads.iter().max().unwrap_or(&1);
    let min_threads = *threads.iter().min().unwrap_or(&1);
    let want = Want {
        shares: if a.shared { 1 } else { max_threads as u64 },
        together: if a.shared { 1 } else { min_threads as u64 },
        ..Want::one("--region", REGION_FLOOR)
    };
    let region = ctx.size(a.region, want, &specs, &opts);
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
        patterns,
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

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &BandwidthArgs) -> Result<()> {
    let plan = plan(ctx, a)?;
    measure(ctx, sink, &plan)?;
    if sink.human() {
        print!("{}", render(sink.records()));
    }
    Ok(())
}

/// The streamers of one op at one access size: the op itself, and the reader and writer
/// of a mix (the writer is the op, or ordinary writes when the op reads).
fn streamers(
    op: StreamOp,
    width: usize,
    size: usize,
    features: &CpuFeatures,
) -> Result<(Streamer, Streamer, Streamer)> {
    let mk = |o: StreamOp| Streamer::new(o, width, size, features);
    let writer = if op == StreamOp::Read {
        StreamOp::Write
    } else {
        op
    };
    Ok((mk(op)?, mk(StreamOp::Read)?, mk(writer)?))
}

fn measure(ctx: &mut Context, sink: &mut Sink, p: &Plan) -> Result<()> {
    let max_threads = p.max_threads();
    let map_bytes = if p.shared {
        p.per_thread
    } else {
        p.per_thread * max_threads as u64
    };
    let points = p.ops.len() * p.patterns.len() * p.sizes.len() * p.threads.len();
    let progress = Progress::new((points * p.specs.len()) as u64, "bandwidth", sink.human());
    let features = ctx.features;
    // The timer is calibrated for the records; streams are timed by their own clock.
    let mut h = ctx.start(sink, &p.cpus, Some(p.per_thread), false)?;
    for w in &p.notes {
        h.note(w.clone());
    }
    h.per_target(&p.specs, map_bytes, &p.opts, None, |run, m| {
        let mut region = Region::from_slice(m.bytes_mut());
        let views = StreamView::of(&mut region, max_threads, p.shared);
        for &op in &p.ops {
            for &random in &p.patterns {
                for &size in &p.sizes {
                    let (s_op, s_read, s_write) = streamers(op, p.width, size, &features)?;
                    for &n in &p.threads {
                        for (label, roles) in thread_roles(n, p.mix, s_op, s_read, s_write) {
                            let (total, read, written) =
                                measure_point(run, p, &roles, &views, random)?;
                            let mut rec = run
                                .record("bandwidth")
                                .param(p::OP, op.name())
                                .param(p::PATTERN, Pattern::from_random(random).name())
                                .param(p::ACCESS_BYTES, size)
                                .param(p::THREADS, n)
                                .param(p::SHARED, p.shared)
                                .param(p::VECTOR_BYTES, p.width)
                                .param(p::REGION_PER_THREAD_BYTES, p.per_thread)
                                .param(p::SIZE_SOURCE, p.size_source.name())
                                .param(p::DURATION_S, p.duration.as_secs_f64())
                                .param(p::MIX, label.as_str())
                                .value(v::READ_GB_S, read)
                                .value(v::WRITE_GB_S, written);
                            rec.metric = Some("bandwidth_gb_s".into());
                            rec.summary = Some(total);
                            run.emit(&rec)?;
                        }
                        progress.inc();
                    }
                }
            }
        }
        Ok(())
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

/// One point: the repetitions of every thread streaming its role over its view at once.
/// Returns GB/s in total (a summary of the repetitions) and the medians read and written.
fn measure_point(
    run: &mut TargetRun<'_, '_>,
    p: &Plan,
    roles: &[Role],
    views: &[StreamView<'_>],
    random: bool,
) -> Result<(Summary, f64, f64)> {
    let executor = run.executor();
    let n = roles.len();
    let reps_out = repeat_dropping_first(p.reps, |rep| {
        let out = run.on_cpus(&p.cpus[..n], |w| {
            executor.run(
                || {
                    stream_for(
                        roles[w],
                        views[w],
                        random,
                        p.duration,
                        p.seed ^ (w as u64) << 8 ^ rep as u64,
                    )
                },
                || synthetic_traffic(roles[w], views[w].len()),
            )
        })?;
        let secs = out.iter().map(|(_, s)| *s).fold(0.0, f64::max);
        let r: u64 = out.iter().map(|(t, _)| t.read).sum();
        let wr: u64 = out.iter().map(|(t, _)| t.written).sum();
        Ok((r, wr, secs))
    })?;
    let gb = |f: &dyn Fn(&(u64, u64, f64)) -> u64| -> Summary {
        let v: Vec<f64> = reps_out.iter().map(|x| f(x) as f64 / x.2 / 1e9).collect();
        Summary::of(&v).expect("finite")
    };
    Ok((gb(&|x| x.0 + x.1), gb(&|x| x.0).p50, gb(&|x| x.1).p50))
}

/// What the null executor says one worker streamed: one pass of its role over its view in
/// a millisecond.
fn synthetic_traffic(role: Role, len: usize) -> (Traffic, f64) {
    let len = len as u64;
    let t = match role {
        Role::Stream(s) => match s.op() {
            StreamOp::Read => Traffic {
                read: len,
                written: 0,
            },
            StreamOp::Copy | StreamOp::NtCopy => Traffic {
                read: len / 2,
                written: len / 2,
            },
            _ => Traffic {
                read: 0,
                written: len,
            },
        },
        Role::Interleave { reads, writes, .. } => Traffic {
            read: len * reads as u64 / (reads + writes) as u64,
            written: len * writes as u64 / (reads + writes) as u64,
        },
    };
    (t, 0.001)
}

/// The table of every point, then random against sequential reads at the same thread
/// count (seed 004 Figure 11): from the `bandwidth` records alone.
fn render(records: &[Record]) -> String {
    let points: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment == "bandwidth" && r.summary.is_some())
        .collect();
    let Some(first) = points.first() else {
        return String::new();
    };
    let mut out = format!(
        "bandwidth in GB/s (10^9 B/s), {}-byte vectors, {} per thread{}, median of {} x {:.2} s\n",
        first.count(p::VECTOR_BYTES).unwrap_or_default(),
        Bytes(first.count(p::REGION_PER_THREAD_BYTES).unwrap_or_default()),
        if first.flag(p::SHARED).unwrap_or_default() {
            " (one shared region)"
        } else {
            ""
        },
        first.summary.as_ref().map_or(0, |s| s.n),
        first.number(p::DURATION_S).unwrap_or_default()
    );
    let total = |r: &Record| r.summary.as_ref().map_or(0.0, |s| s.p50);
    let mut t = Table::new(&[
        "target", "op", "pattern", "access", "threads", "mix", "GB/s", "cv %", "read", "write",
    ]);
    for r in &points {
        let label = r.text(p::MIX).unwrap_or_default();
        t.row(vec![
            r.spec().unwrap_or_default().to_string(),
            r.text(p::OP).unwrap_or_default().into(),
            r.text(p::PATTERN).unwrap_or_default().into(),
            Bytes(r.count(p::ACCESS_BYTES).unwrap_or_default()).to_string(),
            r.count(p::THREADS).unwrap_or_default().to_string(),
            if label.is_empty() {
                "-".into()
            } else {
                label.to_string()
            },
            format!("{:.2}", total(r)),
            format!("{:.1}", 100.0 * r.summary.as_ref().map_or(0.0, |s| s.cv())),
            format!("{:.2}", r.val(v::READ_GB_S).unwrap_or_default()),
            format!("{:.2}", r.val(v::WRITE_GB_S).unwrap_or_default()),
        ]);
    }
    out += &format!("{}\n", t.render());
    let plain_read = |r: &Record, pattern: Pattern| {
        r.text(p::OP).unwrap_or_default() == StreamOp::Read.name()
            && r.text(p::PATTERN).unwrap_or_default() == pattern.name()
            && r.text(p::MIX).unwrap_or_default().is_empty()
    };
    for p in points.iter().filter(|r| plain_read(r, Pattern::Rand)) {
        let best_seq = points
            .iter()
            .filter(|q| {
                q.spec() == p.spec()
                    && plain_read(q, Pattern::Seq)
                    && q.count(p::THREADS).unwrap_or_default()
                        == p.count(p::THREADS).unwrap_or_default()
            })
            .map(|q| total(q))
            .fold(0.0, f64::max);
        if best_seq > 0.0 {
            out += &format!(
                "{}: random {} reads, {} thread(s): {:.2} GB/s = {:.2}x sequential reads ({:.2} GB/s)\n",
                p.spec().unwrap_or_default(),
                Bytes(p.count(p::ACCESS_BYTES).unwrap_or_default()),
                p.count(p::THREADS).unwrap_or_default(),
                total(p),
                total(p) / best_seq,
                best_seq
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamers() -> (Streamer, Streamer, Streamer) {
        let f = CpuFeatures::detect();
        let w = if f.avx512f { 64 } else { 32 };
        let mk = |o| Streamer::new(o, w, 4096, &f).unwrap();
        (
            mk(StreamOp::NtStore),
            mk(StreamOp::Read),
            mk(StreamOp::NtStore),
        )
    }

    #[test]
    fn mix_parsing() {
        assert_eq!(parse_mix("split"), Ok(Mix::Split));
        assert_eq!(
            parse_mix("2:1"),
            Ok(Mix::Ratio {
                reads: 2,
                writes: 1
            })
        );
        assert!(parse_mix("0:0").is_err());
        assert!(parse_mix("2-1").is_err());
        assert!(parse_mix("a:b").is_err());
    }

    #[test]
    fn split_gives_every_reader_count() {
        let (op, r, w) = streamers();
        let configs = thread_roles(4, Mix::Split, op, r, w);
        assert_eq!(configs.len(), 5);
        for (k, (label, roles)) in configs.iter().enumerate() {
            assert_eq!(roles.len(), 4);
            let readers = roles.iter().filter(|x| **x == Role::Stream(r)).count();
            assert_eq!(readers, k);
            assert_eq!(
                roles.iter().filter(|x| **x == Role::Stream(w)).count(),
                4 - k
            );
            assert_eq!(label, &format!("{k}R+{}W", 4 - k));
        }
        let plain = thread_roles(2, Mix::None, op, r, w);
        assert_eq!(plain, vec![(String::new(), vec![Role::Stream(op); 2])]);
        let ratio = thread_roles(
            2,
            Mix::Ratio {
                reads: 2,
                writes: 1,
            },
            op,
            r,
            w,
        );
        assert_eq!(ratio.len(), 1);
        assert_eq!(ratio[0].0, "2:1 interleaved");
        assert!(matches!(
            ratio[0].1[0],
            Role::Interleave {
                reads: 2,
                writes: 1,
                ..
            }
        ));
    }
}
