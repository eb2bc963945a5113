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
        // Single accesses are timed with the TSC bracket whenever the CPU has rdtscp: that
        // is the resolution the timed loads see.
        t.info.resolution_ns = if features.rdtscp {
            t.tsc_resolution_ticks() * t.tsc_ns_per_tick
        } else {
            t.resolution_ticks() * t.ns_per_tick
        };
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
        t.info.resolution_ns = t.resolution_ticks() * t.ns_per_tick;
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

    /// The latency of one single timed access in ns: its TSC `ticks` less `overhead`, the
    /// ticks of an empty timed interval of the same discipline (`access::timing_overhead`,
    /// `chase::single_timing_overhead`), never below zero. Every command that times single
    /// accesses converts its ticks here.
    #[inline]
    pub fn net_ns(&self, ticks: u64, overhead: u64) -> f64 {
        self.tsc_ticks_to_ns(ticks.saturating_sub(overhead))
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

    /// The step the clock advances by, in its ticks, as timed intervals see it: 100 000
    /// start/stop pairs around a little varying work (so the intervals spread over many
    /// steps), their lengths judged by [`interval_step`].
    pub fn resolution_ticks(&self) -> f64 {
        interval_step(&self.interval_samples(|| self.start(), || self.stop()))
    }

    /// [`Timer::resolution_ticks`] for the TSC bracket the loops' single timed accesses use
    /// (`tsc::start` / `tsc::stop`), whatever the interval timer is.
    fn tsc_resolution_ticks(&self) -> f64 {
        interval_step(&self.interval_samples(tsc::start, tsc::stop))
    }

    fn interval_samples(&self, start: impl Fn() -> u64, stop: impl Fn() -> u64) -> Vec<u64> {
        let mut acc = 0u64;
        (0..100_000u64)
            .map(|i| {
                let work = i % 48;
                let a = start();
                for j in 0..work {
                    acc = std::hint::black_box(acc.wrapping_add(j));
                }
                let b = stop();
                b.wrapping_sub(a)
            })
            .collect()
    }

    /// The overhead in nanoseconds, as measured at calibration.
    pub fn overhead_ns(&self) -> f64 {
        self.info.overhead_ns
    }

    /// The shortest interval this timer measures to 0.1 %: a thousand of its steps or of
    /// the cost of one timing, whichever is longer, and at least a microsecond. Whatever is
    /// timed as one interval (a bandwidth repetition) must last at least this long.
    pub fn min_interval(&self) -> Duration {
        let ns = 1000.0 * self.info.resolution_ns.max(self.info.overhead_ns).max(1.0);
        Duration::from_nanos(ns.ceil() as u64)
    }
}

/// The step, in ticks, that interval lengths come in: the largest real step `s` such that
/// nearly every frequent length lies within a tick of a multiple of `s`.
///
/// A virtualised TSC may be scaled so that it advances by a non-integer number of ticks at
/// a time (24.5 on a KVM guest here: lengths of 49, 73, 74, 98, 122, 123 ticks), so the GCD
/// of the lengths says 1 tick while every timed load comes in ~10 ns steps; lengths are
/// therefore tested against real-valued steps, and each length may be off by the tick the
/// counter rounds to. Lengths seen in fewer than 0.1 % of the samples (an interrupt, a
/// preemption) do not count, nor do the 2 % least fitting of the rest. A clock whose lengths
/// fill a range with no gaps has a step of 1 tick; an exact integer step below 4 ticks is
/// the GCD of the lengths. With too few distinct lengths to tell, the answer is 1.
pub fn interval_step(lengths: &[u64]) -> f64 {
    let mut counts = std::collections::BTreeMap::<u64, u64>::new();
    for &d in lengths {
        if d > 0 && d < 1 << 20 {
            *counts.entry(d).or_default() += 1;
        }
    }
    let floor = (lengths.len() as u64 / 1000).max(2);
    let frequent: Vec<(u64, u64)> = counts.into_iter().filter(|(_, c)| *c >= floor).collect();
    let (Some(&(lo, _)), Some(&(hi, _))) = (frequent.first(), frequent.last()) else {
        return 1.0;
    };
    if frequent.len() < 2 {
        return 1.0;
    }
    let total: u64 = frequent.iter().map(|(_, c)| c).sum();
    let allowed_misfit = total / 50;
    let fits = |s: f64| {
        let mut misfit = 0;
        for &(d, c) in &frequent {
            let off = d as f64 - (d as f64 / s).round() * s;
            if off.abs() > 1.0 {
                misfit += c;
                if misfit > allowed_misfit {
                    return false;
                }
            }
        }
        true
    };
    // A step is seen as the distance between two lengths, and cannot exceed the shortest.
    let largest = (lo as f64).min((hi - lo) as f64);
    let mut s = largest;
    while s >= 4.0 {
        if fits(s) {
            return s;
        }
        s -= 0.01;
    }
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    frequent
        .iter()
        .map(|(d, _)| *d)
        .reduce(gcd)
        .unwrap_or(1)
        .max(1) as f64
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

    /// Lengths `m * step` rounded to ticks, with the rounding jitter of a scaled counter,
    /// `m` spread over `levels`, plus rare outliers.
    fn synthetic(step: f64, levels: std::ops::Range<u64>, n: usize) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n)
            .map(|i| {
                let m = levels.start + i as u64 % (levels.end - levels.start);
                let jitter = if i % 3 == 0 { 0.4 } else { -0.4 };
                (m as f64 * step + jitter).round() as u64
            })
            .collect();
        v.extend([1, 17_811, 20_752, 9_850_494, 3, 5]);
        v
    }

    #[test]
    fn a_scaled_counter_steps_by_its_real_step_not_the_gcd() {
        // The KVM guest's TSC: 24.5 ticks a step, lengths 49, 73, 74, 98, 122, 123...
        let s = interval_step(&synthetic(24.5, 2..8, 100_000));
        assert!((s - 24.5).abs() < 0.2, "{s}");
        let s = interval_step(&synthetic(10.0, 3..30, 100_000));
        assert!((s - 10.0).abs() < 0.2, "{s}");
        // The empty start/stop pairs alone (two levels) are enough.
        let s = interval_step(&synthetic(24.5, 2..4, 100_000));
        assert!((s - 24.5).abs() < 0.2, "{s}");
    }

    #[test]
    fn a_fine_counter_steps_by_one_tick() {
        // Every length from 40 to 200 ticks: nothing coarser than a tick fits.
        let v: Vec<u64> = (0..100_000u64).map(|i| 40 + i % 161).collect();
        assert_eq!(interval_step(&v), 1.0);
        // An exact integer step of 2 ticks (some bare-metal TSCs).
        let v: Vec<u64> = (0..100_000u64).map(|i| 2 * (20 + i % 80)).collect();
        assert_eq!(interval_step(&v), 2.0);
        // Nothing to judge, or one length only: no claim of a coarse step.
        assert_eq!(interval_step(&[]), 1.0);
        assert_eq!(interval_step(&[49; 1000]), 1.0);
    }

    #[test]
    fn net_ns_subtracts_the_overhead_and_stops_at_zero() {
        let t = Timer {
            tsc_ns_per_tick: 0.5,
            ..Timer::monotonic()
        };
        assert_eq!(t.net_ns(130, 30), 50.0);
        assert_eq!(t.net_ns(30, 30), 0.0);
        assert_eq!(
            t.net_ns(10, 30),
            0.0,
            "an access faster than the empty interval"
        );
        assert_eq!(t.net_ns(10, 0), 5.0);
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
