//! `pmscope bandwidth`: GB/s (10^9 B/s) of read, read-ahead, write, stosb-write, ntstore, ntstore-ahead,
//! store+clwb, copy, movsb-copy, ntcopy and ntcopy-pages streams, sequential or over random blocks of the access
//! size, by thread count and access size, each thread on its own part of the target (or all on one shared region), and mixed
//! reads and writes (seed 004 Figures 9-13): a split of k readers and n-k writers, or every
//! thread interleaving reads and writes at a ratio such as 2:1.

pub mod mix;
mod plan;
mod render;

pub use mix::Mix;
pub use plan::{Plan, REGION_FLOOR};

use crate::error::usage;
use crate::measure::{Role, stream_for, with_repetitions};
use crate::output::Output;
use crate::params::{AutoSize, Count, Cpus, Patterns, Seconds, TargetArgs};
use crate::progress::Progress;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::{Args, ValueEnum};
use pmscope_core::best;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::vocab::{Pattern, p, v};
use pmscope_loops::Region;
use pmscope_loops::stream::{StreamOp, StreamView, Streamer};
use pmscope_runner::harness::TargetRun;
use pmscope_runner::repeat::{Repeated, Workers, repeat};
use pmscope_sys::cpu::CpuFeatures;

/// The help of `--ops`, listing the ops from `loops::stream`.
fn ops_help() -> String {
    format!(
        "Ops (comma list): {} (store+clwb: a clwb per line, an sfence per access; copy and \
         ntcopy: the region's first half into its second, ntcopy with non-temporal stores; \
         read-ahead and ntstore-ahead: read and ntstore touching a line 4 pages ahead of each \
         4 KiB page, so its table walk is done before its accesses arrive; ntcopy-pages: ntcopy over 4 pages at a time, as glibc's large memcpy; stosb-write \
         and movsb-copy: one rep stosb or rep movsb per access, with ERMS only; \
         `pmscope list ops` describes each). Default: all (with --mix: write, the op of the \
         writers)",
        StreamOp::names()
    )
}

/// A vector width of the streams (`--width`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VectorWidth {
    /// 64 bytes: AVX-512F.
    #[value(name = "64")]
    W64,
    /// 32 bytes: AVX2.
    #[value(name = "32")]
    W32,
    /// 16 bytes: SSE2, on every x86-64 CPU.
    #[value(name = "16")]
    W16,
}

impl VectorWidth {
    /// Bytes per vector.
    pub fn bytes(self) -> usize {
        match self {
            VectorWidth::W64 => 64,
            VectorWidth::W32 => 32,
            VectorWidth::W16 => 16,
        }
    }
}

/// `pmscope bandwidth`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    // The op list comes from loops::stream::STREAM_OPS.
    /// The ops (see [`ops_help`]).
    #[arg(long, value_delimiter = ',', value_name = "OPS", help = ops_help())]
    pub ops: Option<Vec<StreamOp>>,
    /// Pattern: seq, rand (random aligned blocks of the access size) or both.
    #[arg(long, value_enum, default_value = "both", hide_possible_values = true)]
    pub pattern: Patterns,
    /// Access sizes (sweep axis, multiples of 64 B). Default 64,256,4KiB,64KiB; --full:
    /// every power of two from 64 B to 128 KiB.
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Thread counts (sweep axis, e.g. 1,2 or 1..4). Default: 1 to the number of CPUs.
    #[arg(long, value_name = "AXIS")]
    pub threads: Option<String>,
    /// CPUs to pin threads to, in order (default: all allowed CPUs).
    #[arg(long)]
    pub cpus: Option<Cpus>,
    /// All threads stream over one shared region instead of one region each.
    #[arg(long)]
    pub shared: bool,
    /// Memory per thread (the whole region with --shared), or auto: 4x the last-level cache
    /// (over the threads of the smallest --threads point), at least 512MiB, capped by
    /// available memory (shared among the threads) and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub region: AutoSize,
    /// Seconds each thread streams per repetition [default: 0.15; 1 with --full].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<Seconds>,
    /// Repetitions per point, at least (one more is run first and dropped; more until --precision is met) [default: 3; 5 with --full].
    #[arg(long)]
    pub reps: Option<Count>,
    /// Vector width in bytes: 64 (AVX-512F), 32 (AVX2) or 16 (SSE2), for every op. Default:
    /// the widest the CPU has; ntcopy-pages 32 where AVX2 is (glibc's width for that loop).
    #[arg(long, value_enum, hide_possible_values = true)]
    pub width: Option<VectorWidth>,
    /// Mixed reads and writes: `split` (k readers and n-k writers, every k) or a ratio R:W
    /// such as 2:1 (every thread interleaves reads and writes).
    #[arg(long)]
    pub mix: Option<Mix>,
    /// Seed of the random block order.
    #[arg(long, default_value_t = 0x5EED, value_parser = pmscope_core::whole::parse::<u64>)]
    pub seed: u64,
    /// The thorough version: every access size 64 B..128 KiB, 5 repetitions of 1 s.
    #[arg(long)]
    pub full: bool,
}

/// `pmscope bandwidth`.
pub struct Bandwidth;

impl Experiment for Bandwidth {
    const NAME: &'static str = "bandwidth";
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, params: &Params) -> Result<Plan> {
        plan::plan(env, params)
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        measure(env, out, plan)
    }

    fn render(records: &[Record]) -> String {
        render::render(records)
    }

    fn derive(records: &[Record]) -> Vec<Record> {
        best_records(records)
    }

    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
        if let Some(c) = &on.cpus {
            params.cpus = Some(c.clone());
        }
    }

    /// A study names its ops; on a CPU without an op's instructions (no clwb: store+clwb)
    /// the op is left out of the step rather than failing the study, as the default op
    /// list does.
    fn fit_to_cpu(params: &mut Params, f: &CpuFeatures) -> Vec<String> {
        let Some(ops) = &mut params.ops else {
            return Vec::new();
        };
        let (keep, out): (Vec<StreamOp>, Vec<StreamOp>) = ops
            .iter()
            .partition(|&&op| Streamer::new(op, op.default_width(f), 64, f).is_ok());
        *ops = keep;
        out.into_iter().map(|op| op.name().to_string()).collect()
    }
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
    let writer = if !op.writes() { StreamOp::Write } else { op };
    Ok((mk(op)?, mk(StreamOp::Read)?, mk(writer)?))
}

fn measure(env: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let max_threads = p.max_threads();
    let map_bytes = if p.shared {
        p.per_thread
    } else {
        p.per_thread * max_threads as u64
    };
    let points = p.ops.len() * p.patterns.len() * p.sizes.len() * p.threads.len();
    let progress = Progress::new((points * p.specs.len()) as u64, "bandwidth", out.human());
    let features = env.features;
    // The timer is calibrated for the records; streams are timed by their own clock.
    let mut h = env.start(out, &p.cpus, Some(p.per_thread), false)?;
    too_short_to_time(p.duration, h.timer())?;
    for w in &p.notes {
        h.note(w.clone());
    }
    h.per_target(&p.specs, map_bytes, &p.opts, None, |run, m| {
        let mut region = Region::from_slice(m.bytes_mut());
        let views = StreamView::of(&mut region, max_threads, p.shared);
        for &op in &p.ops {
            for &pattern in &p.patterns {
                for &size in &p.sizes {
                    let width = p.width_of(op, &features);
                    let (s_op, s_read, s_write) = streamers(op, width, size, &features)?;
                    for &n in &p.threads {
                        for (label, roles) in mix::thread_roles(n, p.mix, s_op, s_read, s_write) {
                            let (total, read, written) =
                                measure_point(run, p, &roles, &views, pattern)?;
                            let rec = run
                                .record("bandwidth")
                                .param(p::OP, op.name())
                                .param(p::PATTERN, pattern.name())
                                .param(p::ACCESS_BYTES, size)
                                .param(p::THREADS, n)
                                .param(p::SHARED, p.shared)
                                .param(p::VECTOR_BYTES, width)
                                .param(p::REGION_PER_THREAD_BYTES, p.per_thread)
                                .param(p::SIZE_SOURCE, p.size_source.name())
                                .param(p::DURATION_S, p.duration.as_secs_f64())
                                .param(p::MIX, label.as_str())
                                .value(v::READ_GB_S, read)
                                .value(v::WRITE_GB_S, written);
                            let mut rec = with_repetitions(rec, &total);
                            rec.metric = Some("bandwidth_gb_s".into());
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

/// A `bandwidth-best` record for every target, op, pattern and access size measured at
/// more than one thread count without a mix, from the points as recorded (over all their
/// blocks).
fn best_records(points: &[Record]) -> Vec<Record> {
    let mut groups: Vec<(Record, Vec<best::Point>)> = Vec::new();
    let unmixed = |r: &&Record| r.text(p::MIX).is_none_or(str::is_empty);
    for r in points
        .iter()
        .filter(|r| r.experiment == "bandwidth")
        .filter(unmixed)
    {
        let Some(threads) = r.count(p::THREADS) else {
            continue;
        };
        let same = |g: &Record| {
            g.spec() == r.spec()
                && [p::OP, p::PATTERN, p::ACCESS_BYTES, p::SHARED]
                    .iter()
                    .all(|k| g.get(*k) == r.get(*k))
        };
        match groups.iter_mut().find(|(g, _)| same(g)) {
            Some((_, tried)) => tried.push(point_of(threads, r)),
            None => groups.push((r.clone(), vec![point_of(threads, r)])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, tried)| tried.len() > 1)
        .map(|(first, tried)| {
            let mut r = first.derived("bandwidth-best", &[p::EXECUTOR]);
            for k in [p::OP, p::PATTERN, p::ACCESS_BYTES, p::SHARED] {
                if let Some(x) = first.get(k) {
                    r = r.param(k, x.clone());
                }
            }
            best_record(r, &tried)
        })
        .collect()
}

/// A point's median GB/s and 95 % interval, for the best thread count.
fn point_of(threads: u64, r: &Record) -> best::Point {
    let median = r.summary.as_ref().map_or(f64::NAN, |s| s.p50);
    let (low, high) = r.precision.as_ref().map_or((median, median), |x| {
        (x.low.min(median), x.high.max(median))
    });
    best::Point {
        setting: threads,
        median,
        low,
        high,
    }
}

/// `r` (a `bandwidth-best` record of one op, pattern and access size) with the thread
/// count that gave the highest median over `tried`, its runner-up, and whether their
/// intervals separate.
fn best_record(r: Record, tried: &[best::Point]) -> Record {
    let threads: Vec<u64> = tried.iter().map(|t| t.setting).collect();
    let r = r.param(p::THREADS_TRIED, threads);
    let Some(b) = best::best(tried) else {
        return r;
    };
    let mut r = r
        .param(p::BEST_THREADS, b.best.setting)
        .param(p::BEST_CLEAR, b.clear())
        .value(v::BEST_GB_S, b.best.median);
    if let Some(u) = b.runner_up {
        r = r
            .param(p::RUNNER_UP_THREADS, u.setting)
            .value(v::RUNNER_UP_GB_S, u.median);
    }
    r
}

/// Refuses a repetition shorter than `timer` measures to 0.1 % (a usage error, before
/// anything is mapped): a figure from an interval the clock can hardly see is noise.
fn too_short_to_time(
    duration: std::time::Duration,
    timer: &pmscope_runner::timer::Timer,
) -> Result<()> {
    let shortest = timer.min_interval();
    if duration >= shortest {
        return Ok(());
    }
    Err(usage(format!(
        "--duration {}: shorter than the {:.0} µs this machine's timer measures to 0.1 % (it \
         advances in steps of {:.1} ns, a timing costs {:.1} ns); give at least {}",
        duration.as_secs_f64(),
        shortest.as_secs_f64() * 1e6,
        timer.info().resolution_ns,
        timer.overhead_ns(),
        (shortest.as_secs_f64() * 1e6).ceil() / 1e6
    )))
}

/// One point: the repetitions of every thread streaming its role over its view at once.
/// Returns GB/s in total of each kept repetition (their precision and the machine's state
/// with them) and the medians read and written.
fn measure_point(
    run: &mut TargetRun<'_, '_>,
    p: &Plan,
    roles: &[Role],
    views: &[StreamView<'_>],
    pattern: Pattern,
) -> Result<(Repeated<f64>, f64, f64)> {
    let executor = run.executor();
    let n = roles.len();
    let random = pattern == Pattern::Rand;
    let policy = run.repeat_policy(p.reps);
    let mut watch = run.watch(&p.cpus[..n], Workers::Busy(n));
    let seed = run.block().seed(p.seed);
    let duration = p.duration.mul_f64(run.block().rep_scale(p.reps));
    // GB/s read and written by each repetition; the point's figure is their sum.
    let reps = repeat(
        &policy,
        &mut watch,
        |(r, w)| r + w,
        |rep| {
            let out = run.on_cpus(&p.cpus[..n], |w| {
                executor.run(
                    || {
                        stream_for(
                            roles[w],
                            views[w],
                            random,
                            duration,
                            seed ^ (w as u64) << 8 ^ rep as u64,
                        )
                    },
                    // One pass of the role over its view in a millisecond.
                    || (roles[w].pass_traffic(views[w].len()), 0.001),
                )
            })?;
            let secs = out.iter().map(|(_, s)| *s).fold(0.0, f64::max);
            let r: u64 = out.iter().map(|(t, _)| t.read).sum();
            let wr: u64 = out.iter().map(|(t, _)| t.written).sum();
            Ok((r as f64 / secs / 1e9, wr as f64 / secs / 1e9))
        },
    )?;
    let median = |f: &dyn Fn(&(f64, f64)) -> f64| -> f64 {
        let v: Vec<f64> = reps.kept.iter().map(f).collect();
        Summary::of(&v).expect("finite").p50
    };
    let (read, written) = (median(&|x| x.0), median(&|x| x.1));
    Ok((reps.map(|(r, w)| r + w), read, written))
}
