//! The noise of one point's difference, term by term. A difference is the log ratio
//! r = ln(median_B / median_A); each term below is a standard error of r, so they add in
//! squares and read as relative differences (0.03 ≈ 3 %).
//!
//! * **within**: how precisely each run knows its own median — the 95 % interval the run
//!   recorded (`Record::precision`), else one estimated from its summary;
//! * **timer step**: single timings come in timer ticks (10 ns on some VMs), so a median
//!   can flip by a whole step between runs; half a step per side, so two medians one step
//!   apart are always within the noise;
//! * **run to run**: what the within-run interval cannot see — the machine in another
//!   state for the whole run (clock, neighbours, where the pages landed). At least the
//!   noise floor per run; for single timings more where the distribution is wide, because
//!   the median of a mixture (hits, misses, TLB walks, interrupts) moves with the share of
//!   slow accesses, by about a fifth of its p50..p90 width between two runs of the 2-core
//!   VM this was calibrated on (`bench/aa-compare.sh`);
//! * **group factor**: when the points of one experiment and metric scatter more than
//!   these terms predict, every point of the group is scaled up by how much more — read
//!   from each side of zero and the quieter side taken, so that real differences, which
//!   mostly go one way, are not mistaken for scatter, and a shift shared by every point
//!   stays a finding.

use pmscope_core::precision::Precision;
use pmscope_core::record::Record;
use pmscope_core::stats::{mad_scale, median};
use pmscope_core::summary::Summary;

/// The two-sided 97.5 % point of the normal distribution: a 95 % interval is ±this many
/// standard errors.
const Z95: f64 = 1.959_964;

/// Run-to-run movement of a median of single timings, per run, as a share of the
/// distribution's relative p50..p90 width (one standard error). Calibrated on A/A pairs
/// of `suite table5` on a loaded 2-core VM: across ten runs the medians moved by 0.05-0.4
/// of that width, 0.1 typically; a fifth keeps a one-point excursion of the kind those
/// runs showed from failing the gate.
pub const SINGLE_TIMING_DRIFT: f64 = 0.2;

/// Fewest points in a group for its own scatter to say anything about the noise.
pub const GROUP_MIN_POINTS: usize = 8;

/// What one side of a point contributes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Side {
    /// The median compared: the summary's, but never under half a timer step (a median of
    /// 0 ns means "under one tick", not zero time).
    pub median: f64,
    /// Standard error of ln(median) within its run; NaN when the run gives no spread
    /// (one repetition).
    pub within: f64,
    /// The step values come in, in the metric's unit; 0 when not quantised.
    pub step: f64,
    /// Run-to-run standard error of ln(median) beyond the floor (single timings only).
    pub drift: f64,
    /// Whether the run met its precision target (`None`: it had none, older records).
    pub precision_met: Option<bool>,
}

impl Side {
    /// The side of `r`, or `None` for a record without a summary.
    pub fn of(r: &Record) -> Option<Side> {
        let s = r.summary.as_ref()?;
        let single_timings = r.histogram.is_some();
        let step = step_of(r, single_timings);
        let median = if step > 0.0 {
            s.p50.max(step / 2.0)
        } else {
            s.p50
        };
        let within = match &r.precision {
            Some(p) => within_from_precision(p, median),
            None => within_from_summary(s, median),
        };
        let drift = if single_timings && median > 0.0 {
            SINGLE_TIMING_DRIFT * (s.p90 - s.p50).max(0.0) / median
        } else {
            0.0
        };
        Some(Side {
            median,
            within,
            step,
            drift,
            precision_met: r.precision.as_ref().map(|p| p.met),
        })
    }

    /// The timer step's share: half a step per side, relative to the median.
    fn quantisation(&self) -> f64 {
        if self.step > 0.0 && self.median > 0.0 {
            self.step / self.median / 2.0
        } else {
            0.0
        }
    }
}

/// The step a record's values come in: the one its precision names, else, for single
/// operations timed in nanoseconds (the records that carry a histogram of individual
/// samples), the timer's resolution. Averages over many operations are not quantised.
fn step_of(r: &Record, single_timings: bool) -> f64 {
    if let Some(step) = r.precision.as_ref().and_then(|p| p.step) {
        return if step.is_finite() { step.max(0.0) } else { 0.0 };
    }
    let in_ns = r.metric.as_deref().is_some_and(|m| m.ends_with("_ns"));
    match r.system.timer {
        Some(t) if single_timings && in_ns && t.resolution_ns.is_finite() => {
            t.resolution_ns.max(0.0)
        }
        _ => 0.0,
    }
}

/// Standard error of ln(median) from the run's 95 % interval. An interval reaching zero
/// or below (Student's t on few values) has no ratio; there its width relative to the
/// median stands in.
fn within_from_precision(p: &Precision, median: f64) -> f64 {
    // NaN ends compare false: an interval with one is no interval.
    let ordered = p.low.partial_cmp(&p.high).is_some_and(|o| o.is_le());
    if p.n < 2 || !ordered {
        return f64::NAN;
    }
    if p.low > 0.0 {
        (p.high / p.low).ln() / (2.0 * Z95)
    } else if median > 0.0 {
        (p.high - p.low) / median / (2.0 * Z95)
    } else {
        f64::NAN
    }
}

/// Standard error of ln(median) from a summary: the median's own standard error is
/// 1/(2 f(m) √n), with the density at the median f(m) estimated from the p50..p90 width
/// (0.4 of the probability: f(m) ≈ 0.4/(p90 − p50)); the normal-theory 1.2533·σ/√n is
/// taken instead when smaller, since one 12 ms interrupt in 20 000 timings inflates σ but
/// not the median's uncertainty.
fn within_from_summary(s: &Summary, median: f64) -> f64 {
    if s.n < 2 || median <= 0.0 {
        return f64::NAN;
    }
    let root_n = (s.n as f64).sqrt();
    let from_density = (s.p90 - s.p50).max(0.0) / (0.8 * root_n);
    let from_stddev = 1.2533 * s.stddev / root_n;
    from_density.min(from_stddev) / median
}

/// The noise of one point's log ratio, term by term (standard errors of ln(B/A)).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct NoiseTerms {
    /// Both runs' own uncertainty of their medians.
    pub within: f64,
    /// The timer step on both sides.
    pub timer_step: f64,
    /// Run-to-run variation on both sides (the floor, or more for wide single timings).
    pub run_to_run: f64,
    /// How much more the point's group scattered than these terms predict (1: not more).
    pub group_factor: f64,
    /// The standard error the point is tested against: the terms added in squares, times
    /// the group factor.
    pub total: f64,
}

impl NoiseTerms {
    /// The terms of a point before its group is seen; `floor` is the run-to-run floor per
    /// run (0.02 for 2 %).
    pub(crate) fn of(a: &Side, b: &Side, floor: f64) -> NoiseTerms {
        let within = a.within.hypot(b.within);
        let timer_step = a.quantisation().hypot(b.quantisation());
        let run_to_run = a.drift.max(floor).hypot(b.drift.max(floor));
        let total = (within * within + timer_step * timer_step + run_to_run * run_to_run).sqrt();
        NoiseTerms {
            within,
            timer_step,
            run_to_run,
            group_factor: 1.0,
            total,
        }
    }

    /// The same terms scaled by the group's factor.
    pub(crate) fn scaled(self, factor: f64) -> NoiseTerms {
        NoiseTerms {
            group_factor: factor,
            total: self.total * factor,
            ..self
        }
    }
}

/// How much more a group's points scatter than their noise terms predict, at least 1; 1
/// for a group of fewer than [`GROUP_MIN_POINTS`] points.
///
/// Read from each side of zero on its own — the median of |z| over the points at or below
/// zero, and over those at or above it, each 0.6745 for normal z — and the smaller taken.
/// Noise scatters both ways, so in a comparison of two runs of the same thing both sides
/// measure it. A real difference usually goes one way (every working set past the cache
/// slower on 4 KiB pages, every bandwidth lower under a competing load), so it inflates
/// one side only, and the other still measures the noise; a scale read from all the points
/// would hide exactly those differences, even when they are half of the group or more.
/// A side with fewer than three points measures nothing, and a shift every point shares
/// leaves the factor at 1: it is a finding, not scatter. Points exactly at zero (two
/// medians on the same timer step) count on both sides.
pub(crate) fn group_factor(standardised: &[f64]) -> f64 {
    let finite: Vec<f64> = standardised
        .iter()
        .copied()
        .filter(|z| z.is_finite())
        .collect();
    if finite.len() < GROUP_MIN_POINTS {
        return 1.0;
    }
    let below: Vec<f64> = finite.iter().filter(|z| **z <= 0.0).map(|z| -z).collect();
    let above: Vec<f64> = finite.iter().copied().filter(|z| *z >= 0.0).collect();
    if below.len() < 3 || above.len() < 3 {
        return 1.0;
    }
    // The smaller of two estimates comes out low; 1 + 0.65/√n (n the smaller side's count)
    // undoes that to within 3 % from 12 points on (simulated on normal scores).
    let fewer = below.len().min(above.len()) as f64;
    let scale = median(&below).min(median(&above)) / 0.6745 * (1.0 + 0.65 / fewer.sqrt());
    scale.max(1.0)
}

/// The spread of a group's log ratios seen between the two runs (1.4826·MAD around their
/// median), and their median: what the summary line reports.
pub(crate) fn group_spread(log_ratios: &[f64]) -> (f64, f64) {
    let finite: Vec<f64> = log_ratios
        .iter()
        .copied()
        .filter(|r| r.is_finite())
        .collect();
    (mad_scale(&finite), median(&finite))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::record::{SystemSummary, TimerInfo, TimerSource};
    use pmscope_core::summary::LogHistogram;

    fn timed(values: &[f64], resolution_ns: f64) -> Record {
        let mut r = Record::new(
            "inst",
            vec![],
            SystemSummary {
                timer: Some(TimerInfo {
                    source: TimerSource::Tsc,
                    hz: 1e9,
                    invariant_tsc: true,
                    overhead_ns: 0.0,
                    resolution_ns,
                }),
                ..Default::default()
            },
        );
        r.metric = Some("latency_ns".into());
        r.summary = Summary::of(values);
        r.histogram = Some(LogHistogram::of(values, 4));
        r
    }

    /// A median of 0 ns (under one tick) is compared as half a tick, and the step's term
    /// is half a step relative to that.
    #[test]
    fn single_timings_in_ticks_are_quantised() {
        let side = Side::of(&timed(&[0.0, 0.0, 10.0, 0.0, 0.0], 10.0)).unwrap();
        assert_eq!((side.median, side.step), (5.0, 10.0));
        assert!((side.quantisation() - 1.0).abs() < 1e-12);
        // The same values as an average over many operations (no histogram): not quantised.
        let mut r = timed(&[100.0, 110.0, 90.0], 10.0);
        r.histogram = None;
        let side = Side::of(&r).unwrap();
        assert_eq!((side.step, side.drift), (0.0, 0.0));
    }

    /// The within-run term comes from the recorded interval when there is one: a ±3 %
    /// interval is a standard error of about 1.5 %.
    #[test]
    fn the_recorded_interval_gives_the_within_run_term() {
        let mut r = timed(&[100.0; 10], 0.0);
        r.precision = Some(Precision {
            low: 97.0,
            high: 103.0,
            n: 10,
            disturbed: 0,
            target: Some(0.03),
            met: true,
            step: None,
        });
        let side = Side::of(&r).unwrap();
        assert!((side.within - 0.0153).abs() < 2e-4, "{}", side.within);
        // An interval below zero falls back to its width relative to the median.
        r.precision.as_mut().unwrap().low = -3.0;
        let side = Side::of(&r).unwrap();
        assert!((side.within - 1.06 / (2.0 * Z95)).abs() < 1e-3);
    }

    /// One slow outlier inflates the standard deviation, not the median's uncertainty.
    #[test]
    fn an_outlier_does_not_widen_the_median() {
        let mut values: Vec<f64> = (0..1000).map(|i| 100.0 + (i % 10) as f64).collect();
        values.push(1e7);
        let s = Summary::of(&values).unwrap();
        let within = within_from_summary(&s, s.p50);
        assert!(within < 0.01, "{within}");
        assert!(within_from_summary(&Summary::of(&[5.0]).unwrap(), 5.0).is_nan());
    }

    /// Normal scores at evenly spaced probabilities: a sample of N(0, σ²) without chance.
    fn normal_scores(n: usize, sigma: f64) -> Vec<f64> {
        (1..=n)
            .map(|i| {
                let p = (i as f64 - 0.5) / n as f64;
                let z = pmscope_core::stats::two_sided_critical(2.0 * p.min(1.0 - p));
                sigma * if p < 0.5 { -z } else { z }
            })
            .collect()
    }

    #[test]
    fn the_group_factor_measures_noise_not_differences() {
        // Scatter three times the predicted noise: factor about 3.
        let factor = group_factor(&normal_scores(84, 3.0));
        assert!((factor / 3.0 - 1.0).abs() < 0.12, "{factor}");
        // As predicted: 1.
        assert_eq!(group_factor(&normal_scores(84, 0.8)), 1.0);
        // Every point shifted alike: a finding, factor 1.
        let shifted: Vec<f64> = normal_scores(40, 1.0).iter().map(|z| z + 7.0).collect();
        assert_eq!(group_factor(&shifted), 1.0);
        // More than half of the points slower for real, by different amounts: the
        // unchanged ones still set the scale.
        let mut mixed = normal_scores(17, 1.0);
        mixed.extend((0..20).map(|i| 2.0 + i as f64 * 0.5));
        let factor = group_factor(&mixed);
        assert!(factor < 1.3, "{factor}");
        // Quantised: most medians on the same step (z = 0), a few one step apart.
        let mut ties = vec![0.0; 70];
        ties.extend([1.4, -1.4, 1.4, -1.4, 1.4, -1.4, 2.8]);
        assert_eq!(group_factor(&ties), 1.0);
        // Too few points to judge.
        assert_eq!(group_factor(&[30.0, -30.0, 0.0]), 1.0);
    }
}
