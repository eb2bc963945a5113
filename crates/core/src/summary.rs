//! The summary of a sample: n, min, p50, p90, p99, p99.9, max, mean, stddev.
//!
//! Percentiles use linear interpolation between closest ranks (Hyndman & Fan type 7, the
//! default of R and NumPy), so p50 of an even-sized sample is the mean of the middle two.

use serde::{Deserialize, Serialize};

/// Summary statistics of one measurement's samples, in the unit named beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator; 0 for one sample).
    pub stddev: f64,
}

impl Summary {
    /// Summarises `samples` (any order). `None` for an empty sample or one holding NaN.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        Some(Self::of_sorted(&v))
    }

    /// Summarises an already sorted sample (ascending, no NaN).
    pub fn of_sorted(v: &[f64]) -> Summary {
        debug_assert!(v.windows(2).all(|w| w[0] <= w[1]));
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Summary {
            n,
            min: v[0],
            p50: percentile_sorted(v, 50.0),
            p90: percentile_sorted(v, 90.0),
            p99: percentile_sorted(v, 99.0),
            p999: percentile_sorted(v, 99.9),
            max: v[n - 1],
            mean,
            stddev: var.sqrt(),
        }
    }

    /// Coefficient of variation (stddev / mean), the spread the CLI prints as a percentage.
    pub fn cv(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            self.stddev / self.mean
        }
    }
}

/// The `p`-th percentile (0..=100) of an ascending, non-empty sample, interpolated linearly.
pub fn percentile_sorted(v: &[f64], p: f64) -> f64 {
    assert!(!v.is_empty(), "percentile of an empty sample");
    let p = p.clamp(0.0, 100.0);
    let h = (v.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// The median of an ascending sample of values that come in steps (single timings in timer
/// ticks), interpolated within the run of equal values it falls in, as the median of
/// grouped data is (the values equal to v stand for the class from halfway to the value
/// below v to halfway to the value above it, spread evenly over it). Unlike the plain
/// median, which jumps from one step to the next, it moves continuously with the share of
/// samples on each step: a 10 % change of a 3 ns access timed in 0.7 ns steps moves it by
/// about 10 %, not by 0 or 23 %. For samples without ties it stays within half a gap of
/// the plain median; a sample of one value is that value.
pub fn tied_median(sorted: &[f64]) -> f64 {
    assert!(!sorted.is_empty(), "median of an empty sample");
    let n = sorted.len();
    let v = sorted[n / 2];
    let below = sorted.partition_point(|x| *x < v);
    let through = sorted.partition_point(|x| *x <= v);
    let ties = (through - below) as f64;
    let prev = below.checked_sub(1).map(|i| sorted[i]);
    let next = sorted.get(through).copied();
    // Half the gap to each neighbouring value; at an end of the sample, the other side's.
    let (down, up) = match (prev, next) {
        (Some(p), Some(q)) => ((v - p) / 2.0, (q - v) / 2.0),
        (Some(p), None) => ((v - p) / 2.0, (v - p) / 2.0),
        (None, Some(q)) => ((q - v) / 2.0, (q - v) / 2.0),
        (None, None) => return v,
    };
    let share = (n as f64 / 2.0 - below as f64) / ties;
    v - down + (down + up) * share
}

/// A log-scale histogram: bucket `i` counts samples in `[base * 2^(i/per_octave), ...)`.
/// Seed 003 (Figures 6-7) draws latency distributions this way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogHistogram {
    /// Lower edge of each bucket.
    pub lower: Vec<f64>,
    /// Samples per bucket.
    pub count: Vec<u64>,
}

impl LogHistogram {
    /// Builds a histogram with `per_octave` buckets per doubling, spanning the sample.
    pub fn of(samples: &[f64], per_octave: u32) -> LogHistogram {
        let positive: Vec<f64> = samples.iter().copied().filter(|x| *x > 0.0).collect();
        if positive.is_empty() {
            return LogHistogram {
                lower: vec![],
                count: vec![],
            };
        }
        let min = positive.iter().copied().fold(f64::INFINITY, f64::min);
        let max = positive.iter().copied().fold(0.0, f64::max);
        let per = per_octave.max(1) as f64;
        let base = 2f64.powf((min.log2() * per).floor() / per);
        let buckets = ((max / base).log2() * per).floor() as usize + 1;
        let mut count = vec![0u64; buckets];
        for x in &positive {
            let i = (((x / base).log2() * per).floor() as usize).min(buckets - 1);
            count[i] += 1;
        }
        let lower = (0..buckets)
            .map(|i| base * 2f64.powf(i as f64 / per))
            .collect();
        LogHistogram { lower, count }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.n, 4);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 4.0);
        assert_eq!(s.p50, 2.5);
        assert_eq!(s.mean, 2.5);
        assert!((s.stddev - 1.290_994_448_7).abs() < 1e-9);
        assert!((s.p90 - 3.7).abs() < 1e-12);
    }

    #[test]
    fn percentiles_of_1_to_1000() {
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        let s = Summary::of(&v).unwrap();
        assert!((s.p50 - 500.5).abs() < 1e-9);
        assert!((s.p99 - 990.01).abs() < 1e-9);
        assert!((s.p999 - 999.001).abs() < 1e-9);
    }

    #[test]
    fn single_and_empty() {
        let s = Summary::of(&[7.0]).unwrap();
        assert_eq!((s.p50, s.stddev, s.p99), (7.0, 0.0, 7.0));
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn histogram_counts_every_sample() {
        let v = [1.0, 1.5, 2.0, 3.9, 4.0, 100.0];
        let h = LogHistogram::of(&v, 1);
        assert_eq!(h.count.iter().sum::<u64>(), 6);
        assert_eq!(h.lower[0], 1.0);
        assert_eq!(h.count[0], 2); // 1.0, 1.5
        assert_eq!(h.count[1], 2); // 2.0, 3.9
        assert_eq!(h.count[2], 1); // 4.0
        assert_eq!(*h.count.last().unwrap(), 1); // 100 in [64, 128)
    }

    /// Two steps of 10: the interpolated median follows the share on each; a sample of
    /// one value is that value; untied data stays within half a gap of the plain median.
    #[test]
    fn the_tied_median_moves_with_the_share_on_each_step() {
        let sample = |low: usize, high: usize| -> Vec<f64> {
            let mut v = vec![10.0; low];
            v.extend(vec![20.0; high]);
            v
        };
        // 60 % on 10, 40 % on 20: inside the class of 10 (5..15), 5/6 of the way.
        assert!((tied_median(&sample(60, 40)) - (5.0 + 10.0 * 50.0 / 60.0)).abs() < 1e-9);
        // Half and half: the boundary between the classes.
        assert!((tied_median(&sample(50, 50)) - 15.0).abs() < 1e-9);
        // Monotone in the share, where the plain median jumps from 10 to 20.
        let m: Vec<f64> = (30..=70)
            .map(|k| tied_median(&sample(100 - k, k)))
            .collect();
        assert!(m.windows(2).all(|w| w[1] >= w[0]), "{m:?}");
        assert_eq!(tied_median(&[7.0; 9]), 7.0);
        let untied: Vec<f64> = (1..=101).map(f64::from).collect();
        assert!((tied_median(&untied) - 51.0).abs() <= 0.5);
    }
}
