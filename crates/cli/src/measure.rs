//! Measurement routines shared by commands: a dependent-load latency point (warm-up,
//! repetitions, first sample dropped) and a per-load distribution. Kept apart from the
//! commands so `latency`, `loaded`, `rap` and `quick` measure the same way.

use pmscope_core::summary::{LogHistogram, Summary};
use pmscope_kernel::chase::{Chaser, single_timing_overhead};
use pmscope_runner::timer::Timer;

/// How long and how often a latency point is measured.
#[derive(Debug, Clone, Copy)]
pub struct LatencyPlan {
    /// Repetitions kept (one more is run first and dropped).
    pub reps: usize,
    /// Target duration of one repetition, in nanoseconds.
    pub rep_ns: f64,
}

/// ns per load for each kept repetition of chasing `chaser`.
pub fn chase_latency(chaser: &mut Chaser<'_, '_>, timer: &Timer, plan: LatencyPlan) -> Vec<f64> {
    // Warm-up: once around the cycle (at most 4 M loads), so caches and TLBs hold what they
    // will hold in steady state.
    chaser.run((chaser.elements() as u64).min(4 << 20));
    // Size a repetition from a short probe.
    let probe = 4096u64;
    let t0 = timer.start();
    chaser.run(probe);
    let est = (timer.ticks_to_ns(timer.stop() - t0) / probe as f64).max(0.1);
    let loads = ((plan.rep_ns / est) as u64).clamp(1024, 1 << 30);
    let mut out = Vec::with_capacity(plan.reps);
    for rep in 0..=plan.reps {
        let t0 = timer.start();
        chaser.run(loads);
        let t1 = timer.stop();
        if rep > 0 {
            let loads = loads.div_ceil(16) * 16;
            out.push((timer.ticks_to_ns(t1 - t0) - timer.overhead_ns()).max(0.0) / loads as f64);
        }
    }
    out
}

/// Individually timed loads: their latencies in ns (timer overhead subtracted), the
/// summary and a log-scale histogram (4 buckets per doubling).
pub fn chase_distribution(
    chaser: &mut Chaser<'_, '_>,
    timer: &Timer,
    samples: usize,
) -> (Summary, LogHistogram) {
    let overhead = single_timing_overhead(10_001);
    let mut ticks = vec![0u64; samples.max(2)];
    let warm = ticks.len().min(1000);
    chaser.time_each(&mut ticks[..warm]); // warms the timing path; overwritten below
    chaser.time_each(&mut ticks);
    let ns: Vec<f64> = ticks
        .iter()
        .map(|&t| timer.ticks_to_ns(t.saturating_sub(overhead)))
        .collect();
    let summary = Summary::of(&ns).expect("samples are finite");
    (summary, LogHistogram::of(&ns, 4))
}
