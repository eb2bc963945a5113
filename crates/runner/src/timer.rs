//! A TSC cycle timer calibrated to nanoseconds against `CLOCK_MONOTONIC_RAW`, with a
//! fallback to `clock_gettime` where the TSC cannot be trusted (not invariant, or no
//! `rdtscp`). Its overhead — the median cost of an empty start/stop pair — is measured so
//! that experiments timing single accesses subtract it (hyperfine's `time_overhead`).

use pmscope_core::record::{TimerInfo, TimerSource};
use pmscope_sys::cpu::CpuFeatures;
use pmscope_sys::tsc;
use std::time::Duration;

/// A calibrated timer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timer {
    info: TimerInfo,
    ns_per_tick: f64,
    /// Nanoseconds per TSC tick, calibrated even when the TSC is not the interval timer:
    /// single accesses are always timed with rdtsc/rdtscp (nothing else is fine enough).
    tsc_ns_per_tick: f64,
}

impl Timer {
    /// Chooses the TSC when the CPU declares it invariant and has `rdtscp`, calibrating it
    /// over `window`; otherwise `clock_gettime`. Then measures the overhead.
    pub fn calibrate(features: &CpuFeatures, window: Duration) -> Timer {
        let use_tsc = features.invariant_tsc && features.rdtscp;
        let tsc_hz = if features.rdtscp {
            measure_tsc_hz(window)
        } else {
            1e9
        };
        let (source, hz) = if use_tsc {
            (TimerSource::Tsc, tsc_hz)
        } else {
            (TimerSource::ClockGettime, 1e9)
        };
        let mut t = Timer {
            info: TimerInfo {
                source,
                hz,
                invariant_tsc: features.invariant_tsc,
                overhead_ns: 0.0,
                resolution_ns: 0.0,
            },
            ns_per_tick: 1e9 / hz,
            tsc_ns_per_tick: 1e9 / tsc_hz,
        };
        t.info.overhead_ns = t.ticks_to_ns(t.overhead_ticks());
        t.info.resolution_ns = t.ticks_to_ns(t.resolution_ticks());
        t
    }

    /// A clock_gettime timer without calibration (tests, and hosts without a usable TSC).
    pub fn monotonic() -> Timer {
        let mut t = Timer {
            info: TimerInfo {
                source: TimerSource::ClockGettime,
                hz: 1e9,
                invariant_tsc: false,
                overhead_ns: 0.0,
                resolution_ns: 0.0,
            },
            ns_per_tick: 1.0,
            tsc_ns_per_tick: 1.0,
        };
        t.info.overhead_ns = t.ticks_to_ns(t.overhead_ticks());
        t.info.resolution_ns = t.ticks_to_ns(t.resolution_ticks());
        t
    }

    /// What a record says about this timer.
    pub fn info(&self) -> TimerInfo {
        self.info
    }

    /// Opens an interval.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        match self.info.source {
            TimerSource::Tsc => tsc::start(),
            TimerSource::ClockGettime => tsc::monotonic_raw_ns(),
        }
    }

    /// Closes an interval.
    #[inline(always)]
    pub fn stop(&self) -> u64 {
        match self.info.source {
            TimerSource::Tsc => tsc::stop(),
            TimerSource::ClockGettime => tsc::monotonic_raw_ns(),
        }
    }

    /// Converts ticks to nanoseconds.
    #[inline]
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// Converts TSC ticks from single-access timing (rdtsc/rdtscp in the kernels) to ns.
    #[inline]
    pub fn tsc_ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.tsc_ns_per_tick
    }

    /// The overhead of one start/stop pair in ticks (median of 10 001 empty intervals).
    pub fn overhead_ticks(&self) -> u64 {
        let mut v: Vec<u64> = (0..10_001)
            .map(|_| {
                let a = self.start();
                let b = self.stop();
                b.wrapping_sub(a)
            })
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    }

    /// The step the clock advances by: the greatest common divisor of the differences
    /// between back-to-back reads that occur in at least 1 % of 100 000 pairs (rare
    /// outliers, e.g. a delta of 1 at a hypervisor's rescaling, do not count).
    pub fn resolution_ticks(&self) -> u64 {
        let mut counts = std::collections::HashMap::<u64, u32>::new();
        let mut prev = self.start();
        for _ in 0..100_000 {
            let t = self.start();
            let d = t.wrapping_sub(prev);
            if d > 0 && d < 1 << 20 {
                *counts.entry(d).or_default() += 1;
            }
            prev = t;
        }
        let frequent: Vec<u64> = counts
            .iter()
            .filter(|(_, c)| **c >= 1000)
            .map(|(d, _)| *d)
            .collect();
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        frequent.into_iter().reduce(gcd).unwrap_or(1).max(1)
    }

    /// The overhead in nanoseconds, as measured at calibration.
    pub fn overhead_ns(&self) -> f64 {
        self.info.overhead_ns
    }
}

/// TSC ticks per second: TSC and CLOCK_MONOTONIC_RAW read together at both ends of a busy
/// window; the reads are paired tightly (the closer pair of three tries at each end) so a
/// preemption between them cannot skew the ratio.
fn measure_tsc_hz(window: Duration) -> f64 {
    fn paired() -> (u64, u64) {
        (0..3)
            .map(|_| {
                let t0 = tsc::start();
                let ns = tsc::monotonic_raw_ns();
                let t1 = tsc::stop();
                (t1 - t0, (t0 + (t1 - t0) / 2, ns))
            })
            .min_by_key(|(spread, _)| *spread)
            .map(|(_, pair)| pair)
            .expect("three tries")
    }
    let (tsc0, ns0) = paired();
    let deadline = ns0 + window.as_nanos() as u64;
    while tsc::monotonic_raw_ns() < deadline {
        std::hint::spin_loop();
    }
    let (tsc1, ns1) = paired();
    (tsc1 - tsc0) as f64 * 1e9 / (ns1 - ns0) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Acceptance (issue 2): the calibrated TSC agrees with CLOCK_MONOTONIC within 1 % over
    /// 100 ms. A ratio of two clocks read side by side, not a timing of the machine.
    #[test]
    fn tsc_calibration_within_one_percent_of_monotonic() {
        let f = CpuFeatures::detect();
        let timer = Timer::calibrate(&f, Duration::from_millis(100));
        if timer.info().source != TimerSource::Tsc {
            panic!(
                "this CPU's TSC is not invariant or lacks rdtscp; the TSC path is untested here"
            );
        }
        let t0 = timer.start();
        let m0 = tsc::monotonic_ns();
        std::thread::sleep(Duration::from_millis(100));
        let t1 = timer.stop();
        let m1 = tsc::monotonic_ns();
        let by_tsc = timer.ticks_to_ns(t1 - t0);
        let by_clock = (m1 - m0) as f64;
        let err = (by_tsc - by_clock).abs() / by_clock;
        assert!(
            err < 0.01,
            "TSC {by_tsc} ns vs CLOCK_MONOTONIC {by_clock} ns: {:.3}%",
            err * 100.0
        );
        assert!(timer.overhead_ns() > 0.0 && timer.overhead_ns() < 10_000.0);
    }

    #[test]
    fn fallback_timer_counts_nanoseconds() {
        let t = Timer::monotonic();
        assert_eq!(t.info().source, TimerSource::ClockGettime);
        let a = t.start();
        std::thread::sleep(Duration::from_millis(2));
        assert!(t.ticks_to_ns(t.stop() - a) >= 2e6);
        // A CPU without invariant TSC gets the fallback.
        let t = Timer::calibrate(&CpuFeatures::default(), Duration::from_millis(1));
        assert_eq!(t.info().source, TimerSource::ClockGettime);
    }
}
