//! How precisely a point is known: the 95 % interval of its statistic, how many
//! repetitions it took, and whether the precision asked for was reached.
//!
//! The statistic of a point is a median (of its repetitions, or of its individually timed
//! samples). Its interval is distribution-free where the sample allows it: the binomial
//! order-statistic interval, which holds for any continuous distribution — timings are
//! skewed and heavy-tailed, so an interval that assumes normality would be too narrow on
//! the slow side. Below six values no order-statistic interval reaches 95 %; there the
//! interval is Student's t around the mean of the values, with the median kept as centre.

use serde::{Deserialize, Serialize};

/// The 95 % interval of a point's statistic and how it was reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    /// Lower end of the 95 % interval of the statistic, in the metric's unit.
    pub low: f64,
    /// Upper end of the 95 % interval of the statistic, in the metric's unit.
    pub high: f64,
    /// Values the interval was built from (repetitions kept, or timed samples).
    pub n: usize,
    /// Repetitions the machine disturbed (another process on the CPU or busy elsewhere on
    /// the machine, stolen time): measured again and not in `n` while adapting, unless fewer
    /// than the minimum were undisturbed when the budget ended (then all are in `n` and the
    /// target is missed); with a fixed number of repetitions (no target) kept in `n` and
    /// counted here.
    pub disturbed: usize,
    /// The half-width asked for, relative to the statistic (0.03 for ±3 %); `None` when the
    /// number of repetitions was fixed.
    pub target: Option<f64>,
    /// Whether the interval's half-width is within `target` (false without a target when
    /// the values give no interval at all).
    pub met: bool,
    /// The step the values come in, in the metric's unit, when it is coarse enough to
    /// matter (single timings in timer ticks): two figures closer than one step are equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
}

impl Precision {
    /// The interval of `values` (any order) judged against `target`; `None` for no values
    /// or values holding NaN.
    pub fn of(values: &[f64], target: Option<f64>) -> Option<Precision> {
        if values.is_empty() || values.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let (low, high) = median_interval(&v)?;
        let centre = crate::summary::percentile_sorted(&v, 50.0);
        let mut p = Precision {
            low,
            high,
            n: v.len(),
            disturbed: 0,
            target,
            met: false,
            step: None,
        };
        p.met = p.within(centre, target);
        Some(p)
    }

    /// Half the interval's width relative to `centre` (infinite for a zero centre).
    pub fn relative_half_width(&self, centre: f64) -> f64 {
        if centre == 0.0 {
            if self.high == self.low {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (self.high - self.low) / 2.0 / centre.abs()
        }
    }

    /// Whether the interval is as narrow as `target` asks around `centre` (a value in
    /// steps counts a half-width under one step as met: the timer cannot resolve more).
    pub fn within(&self, centre: f64, target: Option<f64>) -> bool {
        if self.n < 2 {
            return false;
        }
        let half = (self.high - self.low) / 2.0;
        if self.step.is_some_and(|s| half <= s) {
            return true;
        }
        match target {
            Some(t) => self.relative_half_width(centre) <= t,
            None => self.relative_half_width(centre).is_finite(),
        }
    }
}

/// The 95 % interval of the median of an ascending sample without NaN: binomial order
/// statistics from six values on, Student's t around the mean below that; `None` for
/// fewer than two values.
pub fn median_interval(sorted: &[f64]) -> Option<(f64, f64)> {
    let n = sorted.len();
    if n < 2 {
        return None;
    }
    if n < 6 {
        // t(0.975) for 1..=4 degrees of freedom.
        const T: [f64; 4] = [12.706, 4.303, 3.182, 2.776];
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let var = sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half = T[n - 2] * (var / n as f64).sqrt();
        let centre = crate::summary::percentile_sorted(sorted, 50.0);
        return Some((centre - half, centre + half));
    }
    let k = order_statistic_rank(n);
    Some((sorted[k - 1], sorted[n - k]))
}

/// The largest rank `k` (1-based) with P(Binomial(n, ½) < k) ≤ 2.5 %: the interval
/// [x(k), x(n-k+1)] covers the median with at least 95 % probability. Exact up to 2000
/// values, the normal approximation beyond.
pub fn order_statistic_rank(n: usize) -> usize {
    if n > 2000 {
        let k = (n as f64 / 2.0 - 0.98 * (n as f64).sqrt()).floor() as usize;
        return k.max(1);
    }
    // P(X = i) in log space: ln C(n, i) - n ln 2.
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_c = 0.0; // ln C(n, 0)
    let mut cdf = 0.0; // P(X < k) for the k being tried
    let mut k = 0;
    for i in 0..n {
        let p = (ln_c - ln2n).exp();
        if cdf + p > 0.025 {
            break;
        }
        cdf += p;
        k = i + 1;
        ln_c += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    k.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranks of the textbook table (Conover, Practical Nonparametric Statistics).
    #[test]
    fn order_statistic_ranks_match_the_binomial_table() {
        assert_eq!(order_statistic_rank(6), 1);
        assert_eq!(order_statistic_rank(9), 2);
        assert_eq!(order_statistic_rank(10), 2);
        assert_eq!(order_statistic_rank(20), 6);
        assert_eq!(order_statistic_rank(100), 40);
        // Beyond the exact range, the normal approximation continues the same curve.
        let exact = order_statistic_rank(2000) as f64;
        let approx = 2000.0 / 2.0 - 0.98 * 2000f64.sqrt();
        assert!((exact - approx).abs() <= 2.0, "{exact} vs {approx}");
    }

    /// The interval covers the true median in about 95 % of samples, not fewer: drawn
    /// from a skewed distribution (exponential), as timings are.
    #[test]
    fn the_interval_covers_the_median_at_least_95_percent_of_the_time() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let true_median = std::f64::consts::LN_2;
        for n in [3, 5, 8, 30, 200] {
            let trials = 4000;
            let mut covered = 0;
            for _ in 0..trials {
                let mut v: Vec<f64> = (0..n).map(|_| -(1.0 - uniform()).ln()).collect();
                v.sort_by(|a, b| a.total_cmp(b));
                let (lo, hi) = median_interval(&v).unwrap();
                covered += usize::from(lo <= true_median && true_median <= hi);
            }
            let rate = covered as f64 / trials as f64;
            // The t interval below six values is approximate on skewed data.
            let floor = if n < 6 { 0.88 } else { 0.94 };
            assert!(rate >= floor, "n={n}: covered {rate}");
        }
    }

    #[test]
    fn a_target_is_met_only_by_a_narrow_interval() {
        let tight: Vec<f64> = (0..20).map(|i| 100.0 + (i % 3) as f64 * 0.5).collect();
        let p = Precision::of(&tight, Some(0.03)).unwrap();
        assert!(p.met && p.low <= 100.5 && p.high >= 100.0, "{p:?}");
        let wide: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64 * 20.0).collect();
        let p = Precision::of(&wide, Some(0.03)).unwrap();
        assert!(!p.met, "{p:?}");
        // One value has no interval: never met.
        let p = Precision::of(&[5.0], Some(0.03));
        assert!(p.is_none());
    }

    /// Values in timer steps: an interval no wider than one step is as precise as the
    /// timer allows, and counts as met.
    #[test]
    fn an_interval_within_one_timer_step_is_met() {
        let v: Vec<f64> = (0..50)
            .map(|i| if i % 2 == 0 { 10.0 } else { 20.0 })
            .collect();
        let mut p = Precision::of(&v, Some(0.03)).unwrap();
        assert!(!p.met);
        p.step = Some(10.0);
        assert!(p.within(15.0, Some(0.03)));
    }
}
