//! The few pieces of statistics that judging a difference against noise needs: the normal
//! distribution's tail (through `erfc`), its quantile, Student's t (through `statrs`), Holm's
//! step-down correction for many tests at once, a robust scale (the median absolute
//! deviation), and the empirical-Bayes prior for the variances of many points measured
//! alike (Smyth 2004, the method of limma), which lets each point borrow the degrees of
//! freedom of its group instead of standing on its own two or three blocks.
//!
//! Written here where each piece is a few lines with a published reference; the t
//! distribution, which needs the incomplete beta function, comes from `statrs`.

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

/// P(|T| ≥ |t|) for Student's t with `df` degrees of freedom (`df` infinite: the normal).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if df > 1e7 {
        return two_sided_p(t);
    }
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let dist = StudentsT::new(0.0, 1.0, df).expect("df > 0");
    (2.0 * dist.sf(t.abs())).min(1.0)
}

/// The c with P(|T| ≥ c) = `p` for Student's t with `df` degrees of freedom: the critical
/// value of a two-sided test at level `p`, the half-width of a (1 − p) interval in standard
/// errors.
pub fn t_two_sided_critical(p: f64, df: f64) -> f64 {
    if p.is_nan() || p <= 0.0 || df.is_nan() || df <= 0.0 {
        return f64::INFINITY;
    }
    if p >= 1.0 {
        return 0.0;
    }
    if df > 1e7 {
        return two_sided_critical(p);
    }
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let dist = StudentsT::new(0.0, 1.0, df).expect("df > 0");
    dist.inverse_cdf(1.0 - p / 2.0)
}

/// ψ(x), the digamma function, for x > 0: the recurrence ψ(x) = ψ(x + 1) − 1/x up to x ≥ 10,
/// then the asymptotic series (Abramowitz & Stegun 6.3.18), accurate to 1e-12 there.
pub fn digamma(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    let (mut x, mut shift) = (x, 0.0);
    while x < 10.0 {
        shift -= 1.0 / x;
        x += 1.0;
    }
    let r = 1.0 / (x * x);
    shift + x.ln()
        - 0.5 / x
        - r * (1.0 / 12.0 - r * (1.0 / 120.0 - r * (1.0 / 252.0 - r * (1.0 / 240.0 - r / 132.0))))
}

/// ψ'(x), the trigamma function, for x > 0: the recurrence ψ'(x) = ψ'(x + 1) + 1/x² up to
/// x ≥ 10, then the asymptotic series (Abramowitz & Stegun 6.4.12).
pub fn trigamma(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    let (mut x, mut shift) = (x, 0.0);
    while x < 10.0 {
        shift += 1.0 / (x * x);
        x += 1.0;
    }
    let r = 1.0 / (x * x);
    shift
        + 1.0 / x
        + r / 2.0
        + r / x * (1.0 / 6.0 - r * (1.0 / 30.0 - r * (1.0 / 42.0 - r * (1.0 / 30.0))))
}

/// The y > 0 with ψ'(y) = `x` (x > 0), by bisection in log space: ψ' falls monotonically
/// from infinity at 0 to 0 at infinity.
pub fn trigamma_inverse(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    // ψ'(y) ≈ 1/y for large y and 1/y² for small: the answer lies inside these bounds.
    let (mut lo, mut hi) = (
        (1.0 / x).min(1.0 / x.sqrt()) / 4.0,
        (1.0 / x).max(1.0 / x.sqrt()) * 4.0 + 1.0,
    );
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if trigamma(mid) > x {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi / lo < 1.0 + 1e-12 {
            break;
        }
    }
    (lo * hi).sqrt()
}

/// What a group of points says about the variance of any one of them: a scaled inverse
/// χ² prior with scale `s2` and `df` degrees of freedom (`df` infinite: every point of the
/// group has the same variance, `s2`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct VariancePrior {
    /// The group's typical variance.
    pub s2: f64,
    /// How many degrees of freedom the group lends each point.
    pub df: f64,
    /// The fence above which a point's variance is not the group's (on the scale of
    /// [`log_variance`]): such a point keeps its own variance and degrees of freedom.
    pub upper: f64,
}

/// ln s² − ψ(d/2) + ln(d/2): for a sample variance s² on d degrees of freedom of a true
/// variance σ², its mean is ln σ² and its variance ψ'(d/2) (Smyth 2004).
pub fn log_variance(s2: f64, df: f64) -> f64 {
    s2.ln() - digamma(df / 2.0) + (df / 2.0).ln()
}

/// Fits the prior to the sample variances `s2` (each with its degrees of freedom in `df`)
/// of a group of points, by the method of moments on log variances of Smyth (2004),
/// "Linear models and empirical Bayes methods for assessing differential expression"
/// (limma's `fitFDist`): for a point with true variance σ², [`log_variance`] has mean
/// ln σ² and variance ψ'(d/2); the spread of the points' values beyond that is the spread
/// of their σ², which sets the prior's degrees of freedom.
///
/// Robust to points that are not of the group, as Phipson et al. (2016, "Robust
/// hyperparameter estimation protects against hypervariable genes") ask: the moments are
/// taken over the points inside Tukey's far fences (3 interquartile ranges beyond the
/// quartiles), so a few points whose blocks agreed exactly (a median on one timer step)
/// or scattered wildly (a store timed at nearly zero) do not take the group's degrees of
/// freedom away from the rest; a point above the upper fence keeps its own variance
/// ([`moderated_variance`]). Points with no degrees of freedom or a non-finite variance
/// are left out; `None` for fewer than three left. A zero variance is raised to `floor`
/// first: its log would be minus infinity.
pub fn fit_variance_prior(s2: &[f64], df: &[f64], floor: f64) -> Option<VariancePrior> {
    let points: Vec<(f64, f64)> = s2
        .iter()
        .zip(df)
        .filter(|(s, d)| s.is_finite() && **s >= 0.0 && d.is_finite() && **d > 0.0)
        .map(|(s, d)| (s.max(floor), *d))
        .collect();
    if points.len() < 3 {
        return None;
    }
    let all: Vec<f64> = points.iter().map(|&(s, d)| log_variance(s, d)).collect();
    let (q1, q3) = (quantile(&all, 0.25), quantile(&all, 0.75));
    let (lower, upper) = (q1 - 3.0 * (q3 - q1), q3 + 3.0 * (q3 - q1));
    let kept: Vec<(f64, f64)> = points
        .iter()
        .zip(&all)
        .filter(|(_, e)| (lower..=upper).contains(*e))
        .map(|(p, e)| (*e, p.1))
        .collect();
    let n = kept.len() as f64;
    let mean = kept.iter().map(|(e, _)| e).sum::<f64>() / n;
    let var = kept.iter().map(|(e, _)| (e - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let expected = kept.iter().map(|(_, d)| trigamma(d / 2.0)).sum::<f64>() / n;
    let excess = var - expected;
    if excess <= 0.0 {
        return Some(VariancePrior {
            s2: mean.exp(),
            df: f64::INFINITY,
            upper,
        });
    }
    let df0 = 2.0 * trigamma_inverse(excess);
    Some(VariancePrior {
        s2: (mean + digamma(df0 / 2.0) - (df0 / 2.0).ln()).exp(),
        df: df0,
        upper,
    })
}

/// The `q` quantile of `v` (type 7, linear interpolation).
fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let h = (s.len() - 1) as f64 * q;
    let (i, f) = (h.floor() as usize, h.fract());
    s[i] + (s[(i + 1).min(s.len() - 1)] - s[i]) * f
}

/// A point's variance moderated by its group's prior: (d0 s0² + d s²) / (d0 + d), with
/// d0 + d degrees of freedom (Smyth 2004); the point's own with no prior or above the
/// prior's upper fence, the prior's with an infinite prior.
pub fn moderated_variance(prior: Option<VariancePrior>, s2: f64, df: f64) -> (f64, f64) {
    let Some(prior) = prior else {
        return (s2, df);
    };
    if df > 0.0 && s2.is_finite() && log_variance(s2, df) > prior.upper {
        // Not of the group: its own spread, however few its degrees of freedom.
        return (s2, df);
    }
    if prior.df.is_infinite() || !(df > 0.0 && s2.is_finite()) {
        return (prior.s2, prior.df);
    }
    (
        (prior.df * prior.s2 + df * s2) / (prior.df + df),
        prior.df + df,
    )
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

    /// Student's t against published quantiles (t tables: df 2, 10, 30) and the normal
    /// limit.
    #[test]
    fn student_t_matches_the_tables() {
        assert!((t_two_sided_critical(0.05, 2.0) - 4.302_653).abs() < 1e-5);
        assert!((t_two_sided_critical(0.05, 10.0) - 2.228_139).abs() < 1e-5);
        assert!((t_two_sided_critical(0.01, 30.0) - 2.749_996).abs() < 1e-5);
        assert!((t_two_sided_critical(0.05, f64::INFINITY) - 1.959_964).abs() < 1e-5);
        for df in [2.0, 7.5, 40.0] {
            for t in [0.5, 2.0, 6.0] {
                let p = t_two_sided_p(t, df);
                assert!((t_two_sided_critical(p, df) - t).abs() < 1e-6, "{df} {t}");
            }
        }
        assert!(
            t_two_sided_p(2.0, 3.0) > two_sided_p(2.0),
            "heavier tails than the normal"
        );
    }

    /// Against R: digamma(1) = −γ, digamma(0.5) = −γ − 2 ln 2, trigamma(1) = π²/6,
    /// trigamma(0.5) = π²/2, and the inverse round-trips.
    #[test]
    fn digamma_and_trigamma_match_their_closed_forms() {
        let gamma = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + gamma).abs() < 1e-12);
        assert!((digamma(0.5) + gamma + 2.0 * 2f64.ln()).abs() < 1e-12);
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((trigamma(1.0) - pi2 / 6.0).abs() < 1e-12);
        assert!((trigamma(0.5) - pi2 / 2.0).abs() < 1e-12);
        assert!((trigamma(100.0) - 0.010_050_166_663_333_57).abs() < 1e-12);
        for y in [0.01, 0.3, 1.0, 4.0, 250.0] {
            assert!(
                (trigamma_inverse(trigamma(y)) / y - 1.0).abs() < 1e-9,
                "{y}"
            );
        }
    }

    /// Sample variances of points that all share one variance (χ² draws at evenly spaced
    /// probabilities, no chance): the prior is that variance, with (nearly) infinite
    /// degrees of freedom. Points whose variances differ tenfold get a finite prior, whose
    /// scale lies between them.
    #[test]
    fn the_prior_is_the_shared_variance_or_lends_fewer_degrees_of_freedom() {
        use statrs::distribution::{ChiSquared, ContinuousCDF};
        let d = 4.0;
        let chi = ChiSquared::new(d).unwrap();
        let draws: Vec<f64> = (1..=200)
            .map(|i| chi.inverse_cdf((i as f64 - 0.5) / 200.0) / d)
            .collect();
        let same: Vec<f64> = draws.iter().map(|x| 0.03f64.powi(2) * x).collect();
        let prior = fit_variance_prior(&same, &vec![d; 200], 1e-12).unwrap();
        assert!(prior.df > 50.0, "{prior:?}");
        assert!((prior.s2.sqrt() / 0.03 - 1.0).abs() < 0.05, "{prior:?}");
        let mixed: Vec<f64> = draws
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 2 == 0 { 0.01f64 } else { 0.1 }.powi(2) * x)
            .collect();
        let prior = fit_variance_prior(&mixed, &vec![d; 200], 1e-12).unwrap();
        assert!(prior.df.is_finite() && prior.df < 10.0, "{prior:?}");
        assert!(prior.s2.sqrt() > 0.01 && prior.s2.sqrt() < 0.1, "{prior:?}");
        // Moderation pulls a point towards the prior, weighted by degrees of freedom.
        let (s2, df) = moderated_variance(
            Some(VariancePrior {
                s2: 4.0,
                df: 6.0,
                upper: 10.0,
            }),
            1.0,
            2.0,
        );
        assert!((s2 - 3.25).abs() < 1e-12 && df == 8.0);
        assert_eq!(moderated_variance(None, 1.0, 2.0), (1.0, 2.0));
        assert!(fit_variance_prior(&[1.0, 2.0], &[2.0, 2.0], 1e-12).is_none());
    }

    /// A few points whose blocks agreed exactly (variance 0) or scattered a hundredfold do
    /// not take the group's degrees of freedom away from the 200 that share one variance,
    /// and the wild ones keep their own spread.
    #[test]
    fn a_few_points_outside_the_group_do_not_decide_its_prior() {
        use statrs::distribution::{ChiSquared, ContinuousCDF};
        let d = 8.0;
        let chi = ChiSquared::new(d).unwrap();
        let mut s2: Vec<f64> = (1..=200)
            .map(|i| 0.05f64.powi(2) * chi.inverse_cdf((i as f64 - 0.5) / 200.0) / d)
            .collect();
        s2.extend([0.0; 10]);
        s2.extend([0.5f64.powi(2); 10]);
        let prior = fit_variance_prior(&s2, &vec![d; 220], 1e-8).unwrap();
        assert!(prior.df > 50.0, "{prior:?}");
        assert!((prior.s2.sqrt() / 0.05 - 1.0).abs() < 0.1, "{prior:?}");
        let wild = 0.5f64.powi(2);
        assert_eq!(moderated_variance(Some(prior), wild, d), (wild, d));
        // One that agreed exactly is given the group's spread.
        let (lucky, df) = moderated_variance(Some(prior), 1e-8, d);
        assert!(lucky.sqrt() > 0.04 && df > 50.0, "{lucky} {df}");
    }
}
