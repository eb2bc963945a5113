//! Comparing two sets of records point by point. Records keep a summary, not raw
//! samples, so a rank test (Mann-Whitney) is impossible; instead each median gets an
//! approximate 95 % interval from the summary — standard error of a median
//! ≈ 1.2533·stddev/√n (asymptotic, normal samples) — and a difference is beyond the
//! noise when it exceeds 1.96·√(se_a² + se_b²). A point with a single repetition has no
//! spread and is never called beyond the noise.

use pmscope_core::record::Record;
use serde::Serialize;
use std::collections::BTreeMap;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Times, cycles: lower is better.
    LowerIsBetter,
    /// Rates (per second): higher is better.
    HigherIsBetter,
    /// Unit not recognised: never called worse.
    Unknown,
}

impl Direction {
    /// From the unit at the end of a metric name (`latency_ns`, `bandwidth_gb_s`).
    pub fn of_metric(metric: &str) -> Direction {
        const RATES: [&str; 8] = [
            "_gb_s", "_gib_s", "_mb_s", "_mib_s", "_ops_s", "_per_s", "_mops_s", "_kops_s",
        ];
        const TIMES: [&str; 6] = ["_ns", "_us", "_ms", "_s", "_cycles", "_ticks"];
        if RATES.iter().any(|u| metric.ends_with(u)) {
            Direction::HigherIsBetter
        } else if TIMES.iter().any(|u| metric.ends_with(u)) {
            Direction::LowerIsBetter
        } else {
            Direction::Unknown
        }
    }
}

/// One point present on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointComparison {
    /// The experiment.
    pub experiment: String,
    /// Target spec on each side (equal when comparing runs).
    pub target_a: String,
    /// Target spec of side B.
    pub target_b: String,
    /// The parameters of the point.
    pub params: BTreeMap<String, serde_json::Value>,
    /// The metric.
    pub metric: String,
    /// Median of A.
    pub median_a: f64,
    /// Median of B.
    pub median_b: f64,
    /// median_b / median_a.
    pub ratio: f64,
    /// How much worse B is than A in percent (negative: better).
    pub worse_pct: f64,
    /// Which way is better.
    pub direction: Direction,
    /// Whether the difference exceeds the noise (see the module docs).
    pub beyond_noise: bool,
}

/// The result of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The test used, in words.
    pub method: &'static str,
    /// Points present on both sides.
    pub points: Vec<PointComparison>,
    /// Points only on side A.
    pub only_a: usize,
    /// Points only on side B.
    pub only_b: usize,
}

impl Comparison {
    /// Points worse by more than `pct` percent and beyond the noise.
    pub fn worse_than(&self, pct: f64) -> impl Iterator<Item = &PointComparison> {
        self.points
            .iter()
            .filter(move |p| p.beyond_noise && p.worse_pct > pct)
    }
}

/// The method, as printed.
pub const METHOD: &str = "95% interval of each median from its summary (se = 1.2533*stddev/sqrt(n)); beyond noise when |difference| > 1.96*sqrt(se_a^2+se_b^2)";

fn key(r: &Record, with_target: bool) -> Option<String> {
    let target = if with_target {
        r.target.as_ref().map_or("", |t| t.spec.as_str())
    } else {
        ""
    };
    let mut params = r.params.clone();
    params.retain(|k, _| !pmscope_core::vocab::PROVENANCE_PARAMS.contains(&k.as_str()));
    Some(format!(
        "{}\u{1}{}\u{1}{}\u{1}{}",
        r.experiment,
        target,
        r.metric.as_deref()?,
        serde_json::to_string(&params).ok()?
    ))
}

fn median_se(s: &pmscope_core::summary::Summary) -> f64 {
    if s.n < 2 {
        f64::NAN
    } else {
        1.2533 * s.stddev / (s.n as f64).sqrt()
    }
}

/// Compares the points of `a` and `b` that share experiment, metric and parameters (and
/// target, when `match_targets`; pass false to compare two targets of one run).
pub fn compare_records(a: &[Record], b: &[Record], match_targets: bool) -> Comparison {
    let index = |rs: &[Record]| -> BTreeMap<String, Record> {
        rs.iter()
            .filter(|r| r.summary.is_some())
            .filter_map(|r| Some((key(r, match_targets)?, r.clone())))
            .collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut points = Vec::new();
    for (k, ra) in &ia {
        let Some(rb) = ib.get(k) else { continue };
        let (Some(sa), Some(sb)) = (&ra.summary, &rb.summary) else {
            continue;
        };
        let metric = ra.metric.clone().unwrap_or_default();
        let direction = Direction::of_metric(&metric);
        let (ma, mb) = (sa.p50, sb.p50);
        let change = if ma != 0.0 {
            (mb - ma) / ma.abs() * 100.0
        } else {
            0.0
        };
        let worse_pct = match direction {
            Direction::LowerIsBetter => change,
            Direction::HigherIsBetter => -change,
            Direction::Unknown => 0.0,
        };
        let noise = 1.96 * (median_se(sa).powi(2) + median_se(sb).powi(2)).sqrt();
        points.push(PointComparison {
            experiment: ra.experiment.clone(),
            target_a: ra.target.as_ref().map_or(String::new(), |t| t.spec.clone()),
            target_b: rb.target.as_ref().map_or(String::new(), |t| t.spec.clone()),
            params: ra.params.clone(),
            metric,
            median_a: ma,
            median_b: mb,
            ratio: if ma != 0.0 { mb / ma } else { f64::NAN },
            worse_pct,
            direction,
            beyond_noise: noise.is_finite() && (mb - ma).abs() > noise,
        });
    }
    Comparison {
        method: METHOD,
        only_a: ia.keys().filter(|k| !ib.contains_key(*k)).count(),
        only_b: ib.keys().filter(|k| !ia.contains_key(*k)).count(),
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::vocab::p;

    #[test]
    fn direction_follows_the_unit() {
        assert_eq!(Direction::of_metric("latency_ns"), Direction::LowerIsBetter);
        assert_eq!(
            Direction::of_metric("bandwidth_gb_s"),
            Direction::HigherIsBetter
        );
        assert_eq!(Direction::of_metric("ratio"), Direction::Unknown);
    }

    /// A point the default sized and the same point given explicitly (or recorded before
    /// records said how sizes were chosen) are compared; another size is not.
    #[test]
    fn how_a_size_was_chosen_is_not_a_parameter() {
        let point = |ws: u64, source: Option<&str>| {
            let mut r =
                Record::new("latency", vec![], Default::default()).param(p::WORKING_SET_BYTES, ws);
            if let Some(s) = source {
                r = r.param(p::SIZE_SOURCE, s);
            }
            r.metric = Some("latency_ns".into());
            r.summary = pmscope_core::summary::Summary::of(&[100.0, 101.0, 99.0]);
            r
        };
        let c = compare_records(
            &[point(1 << 30, Some("auto"))],
            &[point(1 << 30, None)],
            true,
        );
        assert_eq!((c.points.len(), c.only_a, c.only_b), (1, 0, 0));
        let c = compare_records(
            &[point(1 << 30, Some("auto"))],
            &[point(1 << 30, Some("explicit"))],
            true,
        );
        assert_eq!(c.points.len(), 1);
        let c = compare_records(
            &[point(1 << 30, Some("auto"))],
            &[point(1 << 28, Some("auto"))],
            true,
        );
        assert_eq!((c.points.len(), c.only_a, c.only_b), (0, 1, 1));
    }
}
