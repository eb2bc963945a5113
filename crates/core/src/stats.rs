//! The few pieces of statistics that judging a difference against noise needs: the normal
//! distribution's tail (through `erfc`), its quantile, Holm's step-down correction for many
//! tests at once, and a robust scale (the median absolute deviation).
//!
//! Written here rather than taken from a crate: each is a few lines with a published
//! reference, and core has no dependencies beyond serde.

/// The complementary error function, erfc(x) = 1 − erf(x), with a relative error under
/// 1.2·10⁻⁷ everywhere (the Chebyshev fit of Numerical Recipes in C, 2nd ed., §6.2,
/// `erfcc`). Tails are what tests read, and this form keeps its relative accuracy there.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let tail = t * poly.exp();
    if x >= 0.0 { tail } else { 2.0 - tail }
}

/// P(|Z| ≥ |z|) for a standard normal Z: the two-sided p-value of a z score.
pub fn two_sided_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
}

/// The z with P(|Z| ≥ z) = `p` (0 < p ≤ 1): the critical value of a two-sided test at
/// level `p`. Found by bisection on [`two_sided_p`], which is monotone, to 10⁻¹⁰.
pub fn two_sided_critical(p: f64) -> f64 {
    if p.is_nan() || p <= 0.0 {
        return f64::INFINITY;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, 40.0);
    while hi - lo > 1e-10 {
        let mid = 0.5 * (lo + hi);
        if two_sided_p(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// One test's outcome under Holm's correction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HolmDecision {
    /// Whether the null hypothesis is rejected (the difference is called).
    pub rejected: bool,
    /// The level the test was held to: α/(m − rank) for the tests up to the first one not
    /// rejected, that level for every test after it. A confidence interval at this level
    /// excludes "no difference" exactly when the test is rejected.
    pub level: f64,
}

/// Holm's step-down procedure (Holm 1979): the p-values in ascending order are held to
/// α/m, α/(m−1), … and rejected until the first that fails. The probability of calling
/// any true null is at most `alpha` whatever the dependence between the tests, and it
/// calls at least as much as Bonferroni. NaN p-values are not tests: never rejected, and
/// not counted in m.
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<HolmDecision> {
    let mut order: Vec<usize> = (0..p_values.len())
        .filter(|&i| !p_values[i].is_nan())
        .collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let m = order.len();
    let mut out = vec![
        HolmDecision {
            rejected: false,
            level: f64::NAN,
        };
        p_values.len()
    ];
    let mut stopped_at = None;
    for (rank, &i) in order.iter().enumerate() {
        let level = stopped_at.unwrap_or(alpha / (m - rank) as f64);
        let rejected = stopped_at.is_none() && p_values[i] <= level;
        if !rejected && stopped_at.is_none() {
            stopped_at = Some(level);
        }
        out[i] = HolmDecision { rejected, level };
    }
    out
}

/// The median of `values` (NaN left out; NaN for none).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    crate::summary::percentile_sorted(&v, 50.0)
}

/// 1.4826 × the median absolute deviation around the median: the standard deviation for
/// normal data, and unmoved by up to half of the values being anything at all.
pub fn mad_scale(values: &[f64]) -> f64 {
    let centre = median(values);
    let deviations: Vec<f64> = values.iter().map(|x| (x - centre).abs()).collect();
    1.4826 * median(&deviations)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against published values (Abramowitz & Stegun, table 7.1; erfc(3), erfc(5) from
    /// the series), relative error within the fit's bound.
    #[test]
    fn erfc_matches_the_tables() {
        let known = [
            (0.0, 1.0),
            (0.1, 0.887_537_083_981_715),
            (0.5, 0.479_500_122_186_953),
            (1.0, 0.157_299_207_050_285),
            (1.959_963_985 / std::f64::consts::SQRT_2, 0.05),
            (2.0, 0.004_677_734_981_047),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
            (-1.0, 1.842_700_792_949_715),
        ];
        for (x, want) in known {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 2e-7,
                "erfc({x}) = {got}, want {want}"
            );
        }
        assert!(erfc(f64::NAN).is_nan());
        assert_eq!(erfc(f64::INFINITY), 0.0);
    }

    #[test]
    fn critical_values_are_the_textbook_ones() {
        assert!((two_sided_critical(0.05) - 1.959_964).abs() < 1e-5);
        assert!((two_sided_critical(0.01) - 2.575_829).abs() < 1e-5);
        // Bonferroni over 84 points at 5 %.
        assert!((two_sided_critical(0.05 / 84.0) - 3.432).abs() < 2e-3);
        assert_eq!(two_sided_critical(1.0), 0.0);
        assert!(two_sided_critical(0.0).is_infinite());
        for z in [0.5, 1.0, 2.5, 4.0] {
            assert!((two_sided_critical(two_sided_p(z)) - z).abs() < 1e-6);
        }
    }

    /// Holm's worked example: sorted p-values 0.005, 0.01, 0.03, 0.04 against 0.0125,
    /// 0.0167, 0.025: the first two are rejected, and the procedure stops at 0.03.
    #[test]
    fn holm_steps_down_and_stops_at_the_first_failure() {
        let d = holm(&[0.01, 0.04, 0.03, 0.005], 0.05);
        let rejected: Vec<bool> = d.iter().map(|x| x.rejected).collect();
        assert_eq!(rejected, [true, false, false, true]);
        assert!((d[3].level - 0.0125).abs() < 1e-12);
        assert!((d[0].level - 0.05 / 3.0).abs() < 1e-12);
        // Everything after the stop is held to the level it stopped at.
        assert!((d[2].level - 0.025).abs() < 1e-12 && (d[1].level - 0.025).abs() < 1e-12);
        // More power than Bonferroni (0.025 for both): the second is held to 0.05.
        let d = holm(&[0.02, 0.04], 0.05);
        assert!(d.iter().all(|x| x.rejected));
        // A NaN is no test: not rejected, and m counts the others only.
        let d = holm(&[f64::NAN, 0.03], 0.05);
        assert!(!d[0].rejected && d[1].rejected);
    }

    #[test]
    fn mad_ignores_a_minority_of_wild_values() {
        let mut v: Vec<f64> = (0..20).map(|i| (i % 5) as f64 - 2.0).collect();
        let calm = mad_scale(&v);
        v.extend([1e6, -1e6, 5e5, 7e5]);
        assert!((mad_scale(&v) - calm).abs() <= 1.4826 + 1e-9);
        assert_eq!(mad_scale(&[3.0; 10]), 0.0);
        assert!(median(&[]).is_nan());
    }
}
