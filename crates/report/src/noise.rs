//! How precisely each point is known, and what the machine was doing while it was measured.
//!
//! A point's figure is the median of its summary; its 95 % interval comes from the record's
//! `precision` (the runner's interval of the median over the repetitions it kept) or, in
//! records written before pmscope measured one, from the summary: the standard error of a
//! median, 1.2533·σ/√n, times 1.96 (Student's t below six values, as `core::precision`),
//! kept within the sample's min and max. σ is the stddev, except for large samples of single
//! timings, whose stddev a few preempted samples (milliseconds among nanoseconds) inflate
//! a thousandfold: there σ is read from the quantiles, (p90 − p50)/1.2816, when that is
//! smaller. A point measured once has no interval: nothing it says can be told from noise. Single timings come in timer steps (`precision.step`, or the
//! timer's resolution for `inst` records without one), and two figures closer than a step
//! are the same figure.
//!
//! The contention a point saw is read from the values the runner records beside it
//! (`load_avg`, `steal_pct`, `cpu_share`) and from its `busy-machine` warnings.

use crate::data;
use pmscope_core::record::Record;

pub use pmscope_core::vocab::v::{CPU_SHARE, LOAD_AVG, OTHER_CPU_PCT, STEAL_PCT};
/// The warning the environment check gives when other work competes for the machine.
pub const BUSY_MACHINE: &str = "busy-machine";

/// A point's figure and its 95 % interval, in the metric's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The median.
    pub value: f64,
    /// Lower end of the interval (the value itself when there is none).
    pub low: f64,
    /// Upper end of the interval (the value itself when there is none).
    pub high: f64,
    /// The step the values come in (0 when it is too fine to matter).
    pub step: f64,
    /// Whether there is an interval at all (a point measured once has none).
    pub known: bool,
}

/// The 1.96 of a two-sided 95 % interval.
const Z95: f64 = 1.96;
/// The standard error of a median over that of a mean, for normal samples (√(π/2)).
const MEDIAN_SE: f64 = 1.2533;
/// Timer resolutions at or below this are too fine to quantise single timings (bare metal).
const FINE_TIMER_NS: f64 = 2.0;
/// t(0.975) for 1..=4 degrees of freedom: the interval of fewer than six values.
const T95: [f64; 4] = [12.706, 4.303, 3.182, 2.776];
/// From this many values on, p90 is a quantile worth estimating σ from.
const QUANTILE_SPREAD_N: usize = 30;
/// p90 − p50 of a normal distribution, in standard deviations.
const P90_SIGMAS: f64 = 1.2816;

/// The estimate of a record's median: its `precision` interval, else the summary's.
pub fn estimate(r: &Record) -> Option<Estimate> {
    let value = data::median(r)?;
    if let Some(p) = r
        .precision
        .as_ref()
        .filter(|p| p.low.is_finite() && p.high.is_finite())
    {
        return Some(Estimate {
            value,
            low: p.low.min(value),
            high: p.high.max(value),
            step: p.step.unwrap_or(0.0),
            known: p.n >= 2,
        });
    }
    let s = r.summary.as_ref()?;
    let half = summary_half_width(s).filter(|h| h.is_finite());
    let half = half.unwrap_or(0.0);
    Some(Estimate {
        value,
        low: (value - half).max(s.min.min(value)),
        high: (value + half).min(s.max.max(value)),
        step: legacy_step(r),
        known: s.n >= 2,
    })
}

/// Half the 95 % interval of a summary's median (`None` below two values).
fn summary_half_width(s: &pmscope_core::summary::Summary) -> Option<f64> {
    let root_n = (s.n as f64).sqrt();
    match s.n {
        0 | 1 => None,
        n @ 2..=5 => Some(T95[n - 2] * s.stddev / root_n),
        n => {
            let from_quantiles = (s.p90 - s.p50) / P90_SIGMAS;
            let sigma = if n >= QUANTILE_SPREAD_N && from_quantiles >= 0.0 {
                s.stddev.min(from_quantiles)
            } else {
                s.stddev
            };
            Some(Z95 * MEDIAN_SE * sigma / root_n)
        }
    }
}

/// The step of an `inst` record without `precision`: its single timings come in the
/// timer's steps when the timer is coarse (a virtualised TSC).
fn legacy_step(r: &Record) -> f64 {
    match r.system.timer {
        Some(t) if r.experiment == "inst" && t.resolution_ns > FINE_TIMER_NS => t.resolution_ns,
        _ => 0.0,
    }
}

impl Estimate {
    /// The estimate scaled by `f` (twice the idle latency, half the write bandwidth).
    pub fn times(self, f: f64) -> Estimate {
        let (a, b) = (self.low * f, self.high * f);
        Estimate {
            value: self.value * f,
            low: a.min(b),
            high: a.max(b),
            step: self.step * f.abs(),
            ..self
        }
    }

    /// Whether this figure is above `other` beyond the noise: its interval lies wholly
    /// above the other's, more than a timer step apart. `None` when either has no interval.
    pub fn above(&self, other: &Estimate) -> Option<bool> {
        (self.known && other.known).then(|| self.low - other.high > self.step.max(other.step))
    }

    /// Whether the two figures differ beyond the noise (either way); `None` when either has
    /// no interval.
    pub fn differs(&self, other: &Estimate) -> Option<bool> {
        Some(self.above(other)? || other.above(self)?)
    }

    /// The figure with its interval: `29.2 ns [28.0–30.5]`, or `29.2 ns (one value)`.
    pub fn show(&self, digits: usize, unit: &str) -> String {
        if self.known {
            format!(
                "{:.digits$} {unit} [{:.digits$}–{:.digits$}]",
                self.value, self.low, self.high
            )
        } else {
            format!("{:.digits$} {unit} (no interval)", self.value)
        }
    }
}

/// A contention figure of a record (`LOAD_AVG`, `STEAL_PCT`, `CPU_SHARE`).
pub fn contention(r: &Record, key: pmscope_core::key::ValueKey) -> Option<f64> {
    r.val(key).filter(|v| v.is_finite())
}

/// The load average a record saw: its value, else the number in its `busy-machine`
/// warning ("the 1-minute load average is 3.52 on 2 CPUs").
pub fn load(r: &Record) -> Option<f64> {
    contention(r, LOAD_AVG).or_else(|| {
        r.warnings
            .iter()
            .filter(|w| w.code == BUSY_MACHINE)
            .find_map(|w| number_after(&w.message, "load average is "))
    })
}

/// The number right after `marker` in `text`.
pub fn number_after(text: &str, marker: &str) -> Option<f64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].trim_end_matches('.').parse().ok()
}

/// The smallest and largest of some figures.
pub fn range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// `3.5` or `3.5–5.2`.
pub fn show_range((lo, hi): (f64, f64), digits: usize) -> String {
    if (hi - lo).abs() < 0.5 * 10f64.powi(-(digits as i32)) {
        format!("{lo:.digits$}")
    } else {
        format!("{lo:.digits$}–{hi:.digits$}")
    }
}

/// What the machine was doing while some points were measured, as one clause: `load
/// 3.1–5.0, steal up to 12 %, CPU share down to 0.55; busy-machine on 2 of 2 points`.
/// Empty when the records say nothing about it.
pub fn contention_evidence(records: &[&Record]) -> String {
    let mut parts = Vec::new();
    if let Some(l) = range(records.iter().filter_map(|r| load(r))) {
        parts.push(format!("load {}", show_range(l, 1)));
    }
    if let Some((_, s)) = range(records.iter().filter_map(|r| contention(r, STEAL_PCT))) {
        parts.push(format!("steal up to {s:.0} %"));
    }
    if let Some((c, _)) = range(records.iter().filter_map(|r| contention(r, CPU_SHARE))) {
        parts.push(format!("CPU share down to {c:.2}"));
    }
    if let Some((_, o)) = range(records.iter().filter_map(|r| contention(r, OTHER_CPU_PCT))) {
        parts.push(format!("other processes up to {o:.0} % of a CPU"));
    }
    let busy = records
        .iter()
        .filter(|r| r.warnings.iter().any(|w| w.code == BUSY_MACHINE))
        .count();
    if busy > 0 {
        parts.push(format!(
            "{BUSY_MACHINE} on {busy} of {} points",
            records.len()
        ));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::precision::Precision;
    use pmscope_core::record::SystemSummary;
    use pmscope_core::summary::Summary;

    fn rec(samples: &[f64]) -> Record {
        let mut r = Record::new("latency", vec![], SystemSummary::default());
        r.summary = Summary::of(samples);
        r
    }

    #[test]
    fn the_interval_comes_from_precision_else_from_the_summary() {
        let mut r = rec(&[96.0, 98.0, 100.0, 102.0, 104.0, 100.0]);
        let e = estimate(&r).unwrap();
        // stddev 2.83, n 6: 1.96 * 1.2533 * 2.83 / sqrt(6) = 2.84.
        assert!((e.high - e.value - 2.836).abs() < 0.01, "{e:?}");
        assert!(e.known);
        // Three values: Student's t, within the sample's range.
        let e = estimate(&rec(&[98.0, 100.0, 102.0])).unwrap();
        assert_eq!((e.low, e.high), (98.0, 102.0), "{e:?}");
        r.precision = Some(Precision {
            low: 90.0,
            high: 130.0,
            n: 8,
            disturbed: 1,
            target: Some(0.03),
            met: false,
            step: Some(10.0),
        });
        let e = estimate(&r).unwrap();
        assert_eq!((e.low, e.high, e.step), (90.0, 130.0, 10.0));
        let once = estimate(&rec(&[5.0])).unwrap();
        assert!(!once.known);
        assert_eq!(once.above(&e), None, "one value is never beyond the noise");
    }

    /// 20 000 single timings around 290 ns with a few preempted ones of 20 ms: the
    /// interval stays a few ns wide, not thousands of ns around zero.
    #[test]
    fn preempted_samples_do_not_blow_up_the_interval_of_a_median() {
        let mut v: Vec<f64> = (0..20_000)
            .map(|i| 280.0 + (i % 14) as f64 * 10.0)
            .collect();
        for x in v.iter_mut().step_by(2000) {
            *x = 2e7;
        }
        let e = estimate(&rec(&v)).unwrap();
        assert!(
            e.low > 280.0 && e.high < 360.0 && e.high - e.low < 10.0,
            "{e:?}"
        );
    }

    #[test]
    fn figures_a_timer_step_apart_are_the_same() {
        let a = Estimate {
            value: 30.0,
            low: 30.0,
            high: 30.0,
            step: 10.0,
            known: true,
        };
        let b = Estimate {
            value: 40.0,
            low: 40.0,
            high: 40.0,
            ..a
        };
        assert_eq!(b.differs(&a), Some(false), "one step apart");
        let c = Estimate {
            value: 50.1,
            low: 50.1,
            high: 50.1,
            ..a
        };
        assert_eq!(c.above(&a), Some(true));
        assert_eq!(a.above(&c), Some(false));
    }

    #[test]
    fn the_load_is_read_from_the_value_else_from_the_warning() {
        let mut r = rec(&[1.0, 2.0]);
        r.warnings.push(pmscope_core::warning::Warning::new(
            BUSY_MACHINE,
            "the 1-minute load average is 3.52 on 2 CPUs: other work competes",
            "stop other jobs",
        ));
        assert_eq!(load(&r), Some(3.52));
        r.values.insert(LOAD_AVG.name().into(), 4.0);
        assert_eq!(load(&r), Some(4.0));
        assert_eq!(
            contention_evidence(&[&r]),
            "load 4.0, busy-machine on 1 of 1 points"
        );
    }
}
