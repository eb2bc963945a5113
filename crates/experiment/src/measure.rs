//! Measurement routines shared by commands: a dependent-load latency point (warm-up,
//! repetitions, first sample dropped) and a per-load distribution. Kept apart from the
//! commands so `latency`, `loaded`, `rap` and `quick` measure the same way.

use pmscope_core::precision::Precision;
use pmscope_core::record::Record;
use pmscope_core::summary::{LogHistogram, Summary};
use pmscope_core::warning::Warning;
use pmscope_loops::chase::{Chaser, single_timing_overhead};
use pmscope_runner::harness::TargetRun;
use pmscope_runner::repeat::{
    Conditions, Observation, RepeatPolicy, Repeated, SystemWatch, Watch, Workers, repeat,
    sample_precision,
};
use pmscope_runner::timer::Timer;

/// How long and how often a latency point is measured.
#[derive(Debug, Clone, Copy)]
pub struct LatencyPlan {
    /// Repetitions kept at least (one more is run first and dropped; more follow until
    /// `--precision` is met).
    pub reps: usize,
    /// Target duration of one repetition, in nanoseconds.
    pub rep_ns: f64,
}

/// A chain over the first `ws` bytes of `region`. Writing a large one takes seconds and
/// stops at a signal: that stop is the run's [`Interrupted`](pmscope_runner::interrupt::Interrupted),
/// so it ends as every interrupted point does (exit 130/143), not as a failed chain.
pub fn chaser<'r, 'a>(
    region: &'r mut pmscope_loops::Region<'a>,
    ws: usize,
    spec: &pmscope_loops::chain::ChainSpec,
) -> anyhow::Result<Chaser<'r, 'a>> {
    use pmscope_loops::chain::ChainError;
    Chaser::build(region, ws, spec).map_err(|e| match e {
        ChainError::Interrupted => match pmscope_runner::interrupt::check() {
            Err(i) => anyhow::Error::from(i),
            Ok(()) => anyhow::Error::from(e),
        },
        e => anyhow::Error::from(e).context(format!(
            "building a chain over {}",
            pmscope_core::units::Bytes(ws as u64)
        )),
    })
}

/// ns per load of each kept repetition of chasing `chaser` (one chain, or several side by
/// side: then the time of a block of loads over the loads in it), repeated as `policy`
/// says and judged by `watch` (run it on the pinned worker: the watch counts one busy
/// thread).
pub fn chase_latency(
    chaser: &mut Chaser<'_, '_>,
    timer: &Timer,
    rep_ns: f64,
    policy: &RepeatPolicy,
    watch: &mut dyn Watch,
) -> anyhow::Result<Repeated<f64>> {
    chaser.warm_up(warm_up_loads(chaser.elements()));
    // Size a repetition from a short probe.
    let t0 = timer.start();
    let probed = chaser.run(4096);
    let est = (timer.ticks_to_ns(timer.stop() - t0) / probed as f64).max(0.1);
    let loads = ((rep_ns / est) as u64).clamp(1024, 1 << 30);
    // A repetition runs in pieces of about SIGNAL_POLL_NS, the signal flag read between
    // them (one relaxed load per piece, nothing against 10 ms of loads): a `--full`
    // repetition is 200 ms, and run whole it went on that long after a Ctrl-C.
    let piece = ((SIGNAL_POLL_NS / est) as u64)
        .clamp(1024, loads)
        .next_multiple_of(16);
    repeat(
        policy,
        watch,
        |ns| *ns,
        |_| {
            let t0 = timer.start();
            let (mut left, mut done) = (loads, 0u64);
            while left > 0 {
                let now = left.min(piece);
                done += chaser.run(now);
                left -= now;
                pmscope_runner::interrupt::check()?;
            }
            let t1 = timer.stop();
            Ok((timer.ticks_to_ns(t1 - t0) - timer.overhead_ns()).max(0.0) / done as f64)
        },
    )
}

/// How long a measuring loop may run before it looks at the signal flag again: a stop
/// within 0.5 s, and at most this much CPU spent after a signal (issue 47).
pub const SIGNAL_POLL_NS: f64 = 10e6;

/// Loads of the warm-up of a chain of `elements`: once around its cycle when it is at most
/// twice the last-level cache (so a chain the caches hold is warm all round, and one a
/// little larger has pushed out the lines its building left, the last ones written,
/// which the chase reaches last); for a longer chain 64 Ki loads, for the TLB and the
/// page-walk caches only: its chase starts with the lines written first, long gone, and
/// has pushed out the building's leftovers with its own misses before it reaches them.
/// (A fixed 4 Mi loads took 1.4 s per point of a 1 GiB chain, every block.)
pub fn warm_up_loads(elements: usize) -> u64 {
    static LLC_LINES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let lines = *LLC_LINES.get_or_init(|| {
        let root = pmscope_sys::sysroot::SysRoot::host();
        let llc = pmscope_sys::cpu::last_level_cache_bytes(&pmscope_sys::cpu::caches(&root, 0))
            .unwrap_or(64 << 20);
        llc / 64
    });
    let elements = elements as u64;
    if elements <= 2 * lines {
        elements
    } else {
        1 << 16
    }
}

/// `r` with the summary of `rep`'s kept values (one figure per repetition), their
/// precision and the machine's state while they ran.
pub fn with_repetitions(mut r: Record, rep: &Repeated<f64>) -> Record {
    r.summary = Summary::of(&rep.kept);
    rep.annotate(r)
}

/// Individually timed loads: their latencies in ns (timer overhead subtracted) as a point
/// taken by `sampler`, and a log-scale histogram (4 buckets per doubling).
pub fn chase_distribution(
    chaser: &mut Chaser<'_, '_>,
    timer: &Timer,
    samples: usize,
    sampler: &Sampler,
) -> (Sampled, LogHistogram) {
    let overhead = single_timing_overhead(10_001);
    let mut ticks = vec![0u64; samples.max(2)];
    let warm = ticks.len().min(1000);
    chaser.time_each(&mut ticks[..warm]); // warms the timing path; overwritten below
    let (point, ns) = sampler.take(|| {
        chaser.time_each(&mut ticks);
        ticks.iter().map(|&t| timer.net_ns(t, overhead)).collect()
    });
    (point, LogHistogram::of(&ns, 4))
}

/// How the sampled points of one target are taken: each under a fresh clone of the watch,
/// judged against the precision asked, in the timer's steps.
#[derive(Debug, Clone)]
pub struct Sampler {
    watch: SystemWatch,
    target: Option<f64>,
    step: f64,
}

impl Sampler {
    /// For points whose `workers` run on `cpus`, timed one operation per timing by `timer`.
    pub fn new(
        run: &TargetRun<'_, '_>,
        cpus: &[usize],
        workers: Workers,
        timer: &Timer,
    ) -> Sampler {
        Sampler {
            watch: run.watch(cpus, workers),
            target: run.precision_target(),
            step: timer.info().resolution_ns,
        }
    }

    /// Takes one point's samples (what `measure` returns) under a fresh watch.
    pub fn take(&self, measure: impl FnOnce() -> Vec<f64>) -> (Sampled, Vec<f64>) {
        Sampled::watched(&mut self.watch(), self.target, self.step, measure)
    }

    /// A fresh watch for one point, for sampling that may fail: `begin` and `end` it
    /// around the samples, then [`Sampler::point`].
    pub fn watch(&self) -> SystemWatch {
        self.watch.clone()
    }

    /// The point of `samples` taken under `watch`, which saw `seen` of them.
    pub fn point(&self, samples: &[f64], seen: Observation, watch: &dyn Watch) -> Sampled {
        Sampled::of(samples, self.target, self.step).seen(seen, watch)
    }

    /// The point of synthetic samples (the null executor's).
    pub fn synthetic(&self, samples: &[f64]) -> Sampled {
        Sampled::of(samples, self.target, 0.0)
    }
}

/// A point that is the median of individually timed operations (not of repetitions): its
/// summary, the interval of its median, and the machine's state while it was sampled.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// The samples' summary.
    pub summary: Summary,
    /// The 95 % interval of their median, with the timer's step.
    pub precision: Option<Precision>,
    /// The machine's state while they were taken.
    pub conditions: Conditions,
    /// The timer's step in the samples' unit (0 where unknown).
    pub step: f64,
}

impl Sampled {
    /// The point of `samples` (finite), each a single timing whose timer advances in steps
    /// of `step` (in the samples' unit; its median interpolated within the step, see
    /// [`pmscope_core::summary::tied_median`]), judged against `target`; no machine state
    /// (the null executor's synthetic samples).
    pub fn of(samples: &[f64], target: Option<f64>, step: f64) -> Sampled {
        let mut summary = Summary::of(samples).expect("finite samples");
        if step > 0.0 {
            // Timings in timer steps: the median interpolated within its step, so that it
            // moves with the share of samples on each step instead of jumping a step.
            let mut sorted = samples.to_vec();
            sorted.sort_by(|a, b| a.total_cmp(b));
            summary.p50 = pmscope_core::summary::tied_median(&sorted);
        }
        Sampled {
            summary,
            precision: sample_precision(samples, target, step),
            conditions: Conditions::default(),
            step,
        }
    }

    /// Takes the samples `measure` returns under `watch`: the point, with the machine's
    /// state (a disturbed sampling is kept and counted in `precision.disturbed`, as a fixed
    /// repetition is), and the samples.
    pub fn watched(
        watch: &mut dyn Watch,
        target: Option<f64>,
        step: f64,
        measure: impl FnOnce() -> Vec<f64>,
    ) -> (Sampled, Vec<f64>) {
        watch.begin();
        let samples = measure();
        let seen = watch.end();
        let point = Sampled::of(&samples, target, step).seen(seen, watch);
        (point, samples)
    }

    /// With what `watch` saw while the samples were taken (`seen` of them).
    fn seen(mut self, seen: Observation, watch: &dyn Watch) -> Sampled {
        if let Some(p) = &mut self.precision {
            p.disturbed = usize::from(seen.disturbed);
        }
        self.conditions = watch.conditions();
        self
    }

    /// `r` with this point's summary, precision and machine state.
    pub fn annotate(&self, mut r: Record) -> Record {
        r.summary = Some(self.summary.clone());
        r.precision = self.precision.clone();
        if let Some(w) = below_timer_step(self.summary.p50, self.step) {
            r.warnings.push(w);
        }
        self.conditions.annotate(r)
    }
}

/// A median single timing under one step of the timer (0 after the timer's own cost is
/// subtracted, typically): the operation is quicker than the timer can tell one at a
/// time, and the figure is a bound, not a measurement.
fn below_timer_step(median: f64, step: f64) -> Option<Warning> {
    if median >= step && median > 0.0 {
        return None;
    }
    Some(Warning::new(
        "below-timer-step",
        format!(
            "the median single timing, {median:.2} ns after the timer's own cost is subtracted, \
             is under the timer's step of {step:.1} ns: too quick to time one at a time here, \
             so read it as under {:.1} ns, not as a measurement",
            step.max(median)
        ),
        "time many operations per timing instead (latency's dependent-load chains, sync's \
         block streams), or run on bare metal for a finer timer",
    ))
}

use pmscope_loops::stream::{BlockOrder, StreamView, Streamer, Traffic};
use std::time::{Duration, Instant};

/// What one bandwidth worker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// One stream op over its whole view.
    Stream(Streamer),
    /// `reads` read accesses then `writes` write accesses, alternating, the reads in the
    /// first half of its view and the writes in the second (seed 004 Figure 12).
    Interleave {
        /// The read stream.
        read: Streamer,
        /// The write stream.
        write: Streamer,
        /// Reads per round.
        reads: u32,
        /// Writes per round.
        writes: u32,
    },
}

impl Role {
    /// The bytes one pass of the role over a view of `len` bytes moves, without touching
    /// memory (what the null executor reports a worker streamed): a stream's pass as
    /// [`Streamer::pass_traffic`] counts it; an interleaving worker's view split between
    /// reads and writes in its ratio.
    pub fn pass_traffic(&self, len: usize) -> Traffic {
        match *self {
            Role::Stream(s) => s.pass_traffic(len),
            Role::Interleave { reads, writes, .. } => {
                let (len, round) = (len as u64, u64::from(reads + writes));
                Traffic {
                    read: len * u64::from(reads) / round,
                    written: len * u64::from(writes) / round,
                }
            }
        }
    }
}

/// Bytes of a sequential pass between two looks at the clock: small enough to stop within
/// about a millisecond of the deadline, large enough that the look costs nothing.
const SEQ_CHUNK: usize = 64 << 20;

/// Bytes of one call of a string op's sequential pass (`rep stosb`, `rep movsb`): a string
/// instruction ramps up at each start, so it runs as the C library runs it on a large
/// buffer, one instruction over up to 1 GiB of the view (about 40 ms at 25 GB/s, the
/// overshoot of the deadline it allows). In 64 MiB calls glibc's memset itself is 8 %
/// slower than in one 1 GiB call (issue 29, on an AMD EPYC with ERMS).
const STRING_CHUNK: usize = 1 << 30;

/// The bytes of a sequential call of `s`: whole accesses (a copy's are a read half and a
/// write half), at least one. An access larger than the chunk would fit in no call, and
/// every call would move nothing: 128 MiB writes once measured 0.00 GB/s this way.
fn seq_chunk(s: &Streamer) -> usize {
    let chunk = if s.op().string() {
        STRING_CHUNK
    } else {
        SEQ_CHUNK
    };
    let unit = if s.op().copies() {
        2 * s.access()
    } else {
        s.access()
    };
    chunk.div_ceil(unit) * unit
}

/// Random accesses between two looks at the clock.
const RANDOM_CHUNK: u64 = 1 << 14;

/// Streams for `duration`; returns the traffic and the seconds it took.
pub fn stream_for(
    role: Role,
    view: StreamView<'_>,
    random: bool,
    duration: Duration,
    seed: u64,
) -> (Traffic, f64) {
    let start = Instant::now();
    let mut t = Traffic::default();
    let mut value = 1u64;
    match role {
        Role::Stream(s) => {
            // Random orders cover every block of the view (issue 11 part 1).
            let mut order = random.then(|| BlockOrder::new(s.block_count(view.len()) as u64, seed));
            let mut at = 0;
            let chunk = seq_chunk(&s);
            // At least one chunk, however short `duration` is: never a figure of no traffic.
            loop {
                t += match &mut order {
                    None => {
                        let part = view.slice(at, chunk);
                        at = if at + chunk >= view.len() {
                            0
                        } else {
                            at + chunk
                        };
                        s.pass_undrained(part, value)
                    }
                    Some(order) => s.random_run(view, order, RANDOM_CHUNK, value),
                };
                value += 1;
                if start.elapsed() >= duration {
                    break;
                }
            }
            // Inside the timed interval: the stores counted have all left the core.
            s.drain();
        }
        Role::Interleave {
            read,
            write,
            reads,
            writes,
        } => {
            let (rv, wv) = view.halves();
            let (rb, wb) = (read.block_count(rv.len()), write.block_count(wv.len()));
            // Random: every block of each half, in a random order; sequential: in order.
            let mut ri = BlockOrder::new(rb as u64, seed);
            let mut wi = BlockOrder::new(wb as u64, seed ^ 1);
            let (mut r, mut w) = (0u32, 0u32);
            loop {
                for _ in 0..1024 {
                    for _ in 0..reads {
                        t += if random {
                            read.random_run(rv, &mut ri, 1, value)
                        } else {
                            let b = read.blocks(rv, &[r], value);
                            r = (r + 1) % rb.max(1) as u32;
                            b
                        };
                    }
                    for _ in 0..writes {
                        t += if random {
                            write.random_run(wv, &mut wi, 1, value)
                        } else {
                            let b = write.blocks(wv, &[w], value);
                            w = (w + 1) % wb.max(1) as u32;
                            b
                        };
                    }
                }
                value += 1;
                if start.elapsed() >= duration {
                    break;
                }
            }
        }
    }
    (t, start.elapsed().as_secs_f64())
}

/// GB/s of `cpus` streaming `read` sequentially, each over its own view of `region`, for
/// `duration` per repetition (at least `reps` kept, the first dropped, more until
/// `--precision` is met): quick's and numa's read-bandwidth figure. The null executor
/// counts one pass per worker per millisecond.
pub fn read_bandwidth(
    run: &mut TargetRun<'_, '_>,
    cpus: &[usize],
    region: &mut pmscope_loops::Region<'_>,
    read: Streamer,
    duration: Duration,
    reps: usize,
) -> anyhow::Result<Repeated<f64>> {
    let executor = run.executor();
    let views = StreamView::of(region, cpus.len(), false);
    let policy = run.repeat_policy(reps);
    let duration = duration.mul_f64(run.block().rep_scale(reps));
    let mut watch = run.watch(cpus, Workers::Busy(cpus.len()));
    repeat(
        &policy,
        &mut watch,
        |gb_s| *gb_s,
        |rep| {
            let out = run.on_cpus(cpus, |w| {
                executor.run(
                    || stream_for(Role::Stream(read), views[w], false, duration, rep as u64),
                    || (read.pass_traffic(views[w].len()), 0.001),
                )
            })?;
            let secs = out.iter().map(|(_, s)| *s).fold(0.0, f64::max);
            Ok(out.iter().map(|(t, _)| t.read).sum::<u64>() as f64 / secs / 1e9)
        },
    )
}

/// The order in which traffic visits the blocks of its view: in sequence, or a random
/// permutation of every block ([`BlockOrder`]: computed in the loop, each block once per
/// pass, so the traffic's footprint is its whole view and not a sample that re-hits the
/// cache).
#[derive(Debug, Clone)]
pub enum Walk {
    /// Block 0, 1, ..., n-1, 0, ...
    Seq {
        /// The next block.
        next: u32,
        /// Blocks in the view.
        n: u32,
    },
    /// A random permutation of the blocks, the same each pass.
    Rand(BlockOrder),
}

impl Walk {
    /// A walk over `n` blocks.
    pub fn new(n: usize, random: bool, seed: u64) -> Walk {
        if random {
            Walk::Rand(BlockOrder::new(n as u64, seed))
        } else {
            Walk::Seq {
                next: 0,
                n: n.max(1) as u32,
            }
        }
    }

    /// The next block.
    #[inline(always)]
    pub fn next_block(&mut self) -> u32 {
        match self {
            Walk::Seq { next, n } => {
                let b = *next;
                *next = if b + 1 == *n { 0 } else { b + 1 };
                b
            }
            Walk::Rand(o) => o.next_block() as u32,
        }
    }
}

/// What loaded-latency traffic does: `reads` accesses of `read` and `writes` of `write` per
/// round, each of the streams' access size, over the blocks of the view in `random` or
/// sequential order.
#[derive(Debug, Clone, Copy)]
pub struct TrafficMix {
    /// The reading stream.
    pub read: Streamer,
    /// The writing stream (ordinary stores, ntstore, store+clwb, ...).
    pub write: Streamer,
    /// Reads per round.
    pub reads: u32,
    /// Writes per round.
    pub writes: u32,
    /// Random order (every block once per pass) instead of sequential.
    pub random: bool,
}

/// Traffic for loaded latency: rounds of `mix.reads` read and `mix.writes` write accesses
/// (reads in the view's first half and writes in its second when it does both, else over
/// the whole view), with a busy wait of `delay_ticks` TSC ticks after every access (MLC's
/// injected delay; 0 streams flat out). Non-temporal stores are drained once per 64 rounds.
/// Runs until `stop` is set.
pub fn delayed_traffic(
    mix: TrafficMix,
    view: StreamView<'_>,
    delay_ticks: u64,
    seed: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> (Traffic, f64) {
    use std::sync::atomic::Ordering;
    let TrafficMix {
        read,
        write,
        reads,
        writes,
        random,
    } = mix;
    let start = Instant::now();
    let (rv, wv) = match (reads, writes) {
        (_, 0) => (view, view.slice(0, 0)),
        (0, _) => (view.slice(0, 0), view),
        _ => view.halves(),
    };
    let mut r = Walk::new(read.block_count(rv.len()), random, seed);
    let mut w = Walk::new(write.block_count(wv.len()), random, seed ^ 1);
    let mut t = Traffic::default();
    let mut value = 1u64;
    let wait = |ticks: u64| {
        if ticks > 0 {
            let t0 = pmscope_sys::tsc::start();
            while pmscope_sys::tsc::start().wrapping_sub(t0) < ticks {
                std::hint::spin_loop();
            }
        }
    };
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            for _ in 0..reads {
                t += read.blocks_undrained(rv, &[r.next_block()], value);
                wait(delay_ticks);
            }
            for _ in 0..writes {
                t += write.blocks_undrained(wv, &[w.next_block()], value);
                wait(delay_ticks);
            }
        }
        write.drain();
        value += 1;
    }
    (t, start.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_loops::Region;
    use pmscope_loops::stream::StreamOp;
    use pmscope_sys::cpu::CpuFeatures;

    fn warned(samples: &[f64], step: f64) -> bool {
        let r = Record::new("inst", Vec::new(), Default::default());
        let r = Sampled::of(samples, None, step).annotate(r);
        r.warnings.iter().any(|w| w.code == "below-timer-step")
    }

    /// A median under one step of the timer is flagged as a bound, not a measurement;
    /// one at or above it is not.
    #[test]
    fn a_median_under_the_timer_step_is_flagged() {
        assert!(warned(&[0.0, 0.0, 10.1], 10.1), "0 ns medians");
        assert!(warned(&[0.0, 5.0, 10.1], 10.1), "under one step");
        assert!(warned(&[0.0, 0.0, 0.0], 0.0), "0 with no known step");
        assert!(!warned(&[10.1, 10.1, 20.2], 10.1), "one step");
        assert!(!warned(&[3.0, 3.2, 3.1], 0.3), "fine timer");
        assert!(!warned(&[80.0, 90.0, 100.0], 0.0), "no known step");
    }

    /// However short the duration, a stream moves at least one chunk: never 0 GB/s.
    #[test]
    fn a_stream_moves_traffic_however_short_its_duration() {
        let mut b = Box::new(Buf([0; 1 << 20]));
        let mut region = Region::from_slice(&mut b.0);
        let views = StreamView::of(&mut region, 1, false);
        let s = streamer(StreamOp::Read, 64);
        for random in [false, true] {
            let (t, secs) = stream_for(
                Role::Stream(s),
                views[0],
                random,
                Duration::from_nanos(1),
                7,
            );
            assert!(
                t.read > 0 && secs > 0.0,
                "random {random}: {t:?} in {secs} s"
            );
        }
    }

    #[repr(align(64))]
    struct Buf([u8; 1 << 20]);

    fn streamer(op: StreamOp, access: usize) -> Streamer {
        let f = CpuFeatures::detect();
        Streamer::new(op, Streamer::widest(&f), access, &f).unwrap()
    }

    /// A sequential call holds at least one whole access of every op, however large the
    /// access: a chunk smaller than one moved nothing and the point read 0 GB/s.
    #[test]
    fn a_sequential_call_holds_whole_accesses_of_any_size() {
        let f = CpuFeatures::detect();
        for op in [
            StreamOp::Write,
            StreamOp::NtStore,
            StreamOp::Read,
            StreamOp::Copy,
        ] {
            for access in [
                64usize,
                192,
                64 << 10,
                48 << 20,
                64 << 20,
                128 << 20,
                1 << 30,
            ] {
                let s = Streamer::new(op, Streamer::widest(&f), access, &f).unwrap();
                let chunk = seq_chunk(&s);
                assert!(s.block_count(chunk) >= 1, "{op:?} {access}: {chunk}");
                assert_eq!(chunk % access, 0, "{op:?} {access}: {chunk}");
                assert!(chunk >= SEQ_CHUNK);
            }
        }
    }

    /// Each worker's bytes are whole passes over its own view (sequential), whole blocks
    /// (random), and exactly R:W for interleaving.
    #[test]
    fn byte_accounting_per_worker() {
        let mut b = Box::new(Buf([0; 1 << 20]));
        let mut r = Region::from_slice(&mut b.0);
        let views = StreamView::of(&mut r, 2, false);
        let d = Duration::from_millis(5);
        let (t, secs) = stream_for(
            Role::Stream(streamer(StreamOp::Read, 4096)),
            views[0],
            false,
            d,
            1,
        );
        assert!(secs >= 0.005);
        assert!(
            t.read > 0 && t.read % views[0].len() as u64 == 0 && t.written == 0,
            "{t:?}"
        );
        let (t, _) = stream_for(
            Role::Stream(streamer(StreamOp::Copy, 256)),
            views[1],
            true,
            d,
            1,
        );
        assert!(
            t.read > 0 && t.read == t.written && t.read % 256 == 0,
            "{t:?}"
        );
        let role = Role::Interleave {
            read: streamer(StreamOp::Read, 4096),
            write: streamer(StreamOp::Write, 4096),
            reads: 2,
            writes: 1,
        };
        let (t, _) = stream_for(role, views[0], false, d, 1);
        assert!(t.written > 0 && t.read == 2 * t.written, "{t:?}");
        // Writes stayed in the write half of the first view: the read half and the second
        // view (whose copy moved zeros) still hold zeros.
        drop(views);
        let q = 1 << 18;
        assert!(b.0[..q].iter().all(|&x| x == 0));
        assert!(
            b.0[q..2 * q]
                .chunks(8)
                .all(|w| u64::from_ne_bytes(w.try_into().unwrap()) != 0)
        );
        assert!(b.0[2 * q..].iter().all(|&x| x == 0));
    }

    /// Random loaded-latency traffic is a permutation of its region's blocks: one pass
    /// touches every line exactly once, pass after pass (not a random sample that re-hits
    /// the cache), and the stores land on every line.
    #[test]
    fn random_traffic_touches_every_line_of_its_region_once_per_pass() {
        for access in [64usize, 256, 1024] {
            let mut b = Box::new(Buf([0; 1 << 20]));
            let len = (64 << 10) + access; // not a power of two of blocks
            let mut region = Region::from_slice(&mut b.0[..len]);
            let view = StreamView::of(&mut region, 1, false)[0];
            let s = streamer(StreamOp::Write, access);
            let n = s.block_count(view.len());
            assert_eq!(n * access, len);
            let mut walk = Walk::new(n, true, 9);
            let mut orders = Vec::new();
            for pass in 1..=3u64 {
                let mut lines = vec![0u32; len / 64];
                let mut order = Vec::new();
                for _ in 0..n {
                    let blk = walk.next_block() as usize;
                    order.push(blk);
                    for l in &mut lines[blk * access / 64..(blk + 1) * access / 64] {
                        *l += 1;
                    }
                    s.blocks_undrained(view, &[blk as u32], pass);
                }
                assert!(lines.iter().all(|&c| c == 1), "{access} B, pass {pass}");
                orders.push(order);
            }
            let sorted: Vec<usize> = (0..n).collect();
            assert_ne!(orders[0], sorted, "{access} B: not shuffled");
            let words: Vec<u64> = b.0[..len]
                .chunks_exact(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
                .collect();
            assert!(words.iter().all(|&w| w == 3), "{access} B: a line missed");
        }
        // The sequential walk goes round in order.
        let mut w = Walk::new(3, false, 0);
        let v: Vec<u32> = (0..7).map(|_| w.next_block()).collect();
        assert_eq!(v, [0, 1, 2, 0, 1, 2, 0]);
    }

    /// Loaded traffic stays in its view, splits it between reads and writes only when it
    /// does both, and accounts R:W exactly, with every writer and both orders.
    #[test]
    fn delayed_traffic_accounts_reads_and_writes() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let f = CpuFeatures::detect();
        let mut ops = vec![StreamOp::Write, StreamOp::NtStore];
        if f.clwb {
            ops.push(StreamOp::StoreClwb);
        }
        for op in ops {
            for random in [false, true] {
                let mut b = Box::new(Buf([0; 1 << 20]));
                let mut r = Region::from_slice(&mut b.0[..256 << 10]);
                let view = StreamView::of(&mut r, 1, false)[0];
                let mix = |reads, writes| TrafficMix {
                    read: streamer(StreamOp::Read, 1024),
                    write: streamer(op, 1024),
                    reads,
                    writes,
                    random,
                };
                let stop = AtomicBool::new(false);
                std::thread::scope(|s| {
                    s.spawn(|| {
                        std::thread::sleep(Duration::from_millis(5));
                        stop.store(true, Ordering::Relaxed);
                    });
                    let (t, _) = delayed_traffic(mix(2, 1), view, 0, 1, &stop);
                    assert!(t.written > 0 && t.read == 2 * t.written, "{op:?}: {t:?}");
                });
                let stop = AtomicBool::new(true);
                let (t, _) = delayed_traffic(mix(0, 1), view, 0, 1, &stop);
                assert_eq!(t.total(), 0, "stopped before it began");
                // Writes went to the second half only, with reads in the first.
                assert!(b.0[..128 << 10].iter().all(|&x| x == 0), "{op:?}");
                assert!(b.0[128 << 10..256 << 10].iter().any(|&x| x != 0), "{op:?}");
                assert!(b.0[256 << 10..].iter().all(|&x| x == 0), "{op:?}");
            }
        }
    }
}
