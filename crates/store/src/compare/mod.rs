//! Comparing two sets of records point by point, with a verdict per point that holds
//! between runs: `better`, `worse`, `within noise` or `not resolvable`.
//!
//! Each side of a point is its block medians, over every run named for that side: blocks
//! are measurements of the point on mappings of their own, taken in turn with the other
//! points over the run ([`pmscope_core::blocks`]), so their spread is the run-to-run
//! variation, measured in the run itself. A point is judged on the difference of the mean
//! log block medians, r = ln(B/A), with Student's t against the blocks' pooled spread,
//! moderated by what the other points of its experiment and metric say about theirs
//! ([`noise`]). The two-sided p-values over all points compared go through Holm's
//! correction, so the chance that an A/A comparison calls any point at all is at most α.
//!
//! A point not called is `not resolvable` rather than `within noise` when it could not
//! have been called at the size of difference the user cares about (`wanted_pct`): "no
//! difference found" would overstate it. Each group (experiment and metric) states its
//! resolution: the change a typical point of it would have been called at.

pub mod noise;
mod render;

pub use noise::NoiseTerms;
pub use render::table;

use noise::{Side, group_prior, pairable};
use pmscope_core::record::Record;
use pmscope_core::stats::{holm, t_two_sided_critical, t_two_sided_p};
use pmscope_core::vocab::v;
use serde::Serialize;
use std::collections::BTreeMap;
use std::str::FromStr;

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
        const RATES: [&str; 9] = [
            "_gb_s", "_gib_s", "_mb_s", "_mib_s", "_ops_s", "_per_s", "_mops_s", "_kops_s", "_mips",
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

/// What the comparison says about one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is better than A beyond the noise.
    Better,
    /// B is worse than A beyond the noise.
    Worse,
    /// B differs from A beyond the noise, in a metric with no known better direction.
    Changed,
    /// No difference beyond the noise, and one as large as the wanted resolution would
    /// have been found.
    WithinNoise,
    /// No difference beyond the noise, but the test could not have found one of the
    /// wanted size there (the spread of the point's blocks), or had no spread to judge by.
    NotResolvable,
}

impl Verdict {
    /// As printed.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Changed => "changed",
            Verdict::WithinNoise => "within noise",
            Verdict::NotResolvable => "not resolvable",
        }
    }

    /// Every verdict, in the order the summary counts them.
    pub const ALL: [Verdict; 5] = [
        Verdict::Worse,
        Verdict::Better,
        Verdict::Changed,
        Verdict::WithinNoise,
        Verdict::NotResolvable,
    ];
}

/// How a comparison is judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settings {
    /// The chance, over all points compared together, of calling any point that did not
    /// change (family-wise error rate).
    pub alpha: f64,
    /// Run-to-run variation added per run, as a fraction (0.02 for 2 %); 0: none beyond
    /// what the blocks measured.
    pub noise_floor: f64,
    /// The smallest difference that matters, in percent: a point that could not have been
    /// called at this size is `not resolvable`.
    pub wanted_pct: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            alpha: 0.05,
            noise_floor: 0.0,
            wanted_pct: 10.0,
        }
    }
}

/// A percentage given on the command line: finite and not negative.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percent(pub f64);

impl FromStr for Percent {
    type Err = String;
    fn from_str(s: &str) -> Result<Percent, String> {
        match s.trim_end_matches('%').parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(Percent(x)),
            _ => Err("give a percentage: a finite number of at least 0, e.g. 10".into()),
        }
    }
}

/// A family-wise error rate: a probability strictly between 0 and 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Alpha(pub f64);

impl FromStr for Alpha {
    type Err = String;
    fn from_str(s: &str) -> Result<Alpha, String> {
        match s.parse::<f64>() {
            Ok(x) if x > 0.0 && x < 1.0 => Ok(Alpha(x)),
            _ => Err("give a probability between 0 and 1, e.g. 0.05".into()),
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
    /// Median of A, as recorded.
    pub median_a: f64,
    /// Median of B, as recorded.
    pub median_b: f64,
    /// median_b / median_a as compared: a median under half a timer step counts as half a
    /// step (0 ns means "under one tick", not zero time).
    pub ratio: f64,
    /// The interval of the ratio at the level this point was tested at (it excludes 1
    /// exactly when the point is called).
    pub ratio_low: f64,
    /// Upper end of that interval.
    pub ratio_high: f64,
    /// How much worse B is than A in percent (negative: better).
    pub worse_pct: f64,
    /// Which way is better.
    pub direction: Direction,
    /// The noise the difference is tested against, term by term.
    pub noise: NoiseTerms,
    /// The two-sided p-value of the difference before the correction for many points.
    pub p_value: f64,
    /// The smallest change, in percent, that this point could have been called at.
    pub detectable_pct: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// Why a point is `not resolvable`, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolved_because: Option<String>,
    /// Whether the difference exceeds the noise (the verdict is better, worse or changed).
    pub beyond_noise: bool,
}

/// The noise of one group of points (one experiment and metric), as the summary line
/// reports it: what the comparison can resolve there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupNoise {
    /// The experiment.
    pub experiment: String,
    /// The metric.
    pub metric: String,
    /// Points compared in the group.
    pub points: usize,
    /// The median, over the group's points, of their blocks on each side.
    pub blocks: [usize; 2],
    /// The median spread of a point's blocks (its own standard deviation on a log scale),
    /// in percent.
    pub block_spread_pct: f64,
    /// The degrees of freedom the group lends each point (its variance prior); infinite
    /// when every point of the group spread alike; absent without a prior.
    pub prior_df: Option<f64>,
    /// The median, over the group's points, of the standard error of B/A, in percent.
    pub typical_noise_pct: f64,
    /// The group's median change B/A − 1, in percent.
    pub median_change_pct: f64,
    /// The resolution: the median, over the group's points, of the smallest change each
    /// could have been called at (at the level Holm's correction held it to), in percent.
    pub typical_detectable_pct: f64,
    /// Share of the group's points that resolve `wanted_pct`.
    pub resolved_share: f64,
}

/// The result of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The test used, in words.
    pub method: &'static str,
    /// How it was judged.
    pub settings: Settings,
    /// Points present on both sides.
    pub points: Vec<PointComparison>,
    /// The noise of each group of points.
    pub groups: Vec<GroupNoise>,
    /// Points only on side A.
    pub only_a: usize,
    /// Points only on side B.
    pub only_b: usize,
    /// What else ran on the machine while each side's compared points were measured: a
    /// difference between a quiet run and a crowded one may be the machine's, not the
    /// target's, and the comparison says so instead of hiding it.
    pub other_work: [OtherWorkSeen; 2],
}

/// How many of one side's compared points were measured beside other work (other
/// processes using more than [`OTHER_WORK_NOTED_PCT`] of a CPU, the record's
/// `other_cpu_pct`), and the most seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct OtherWorkSeen {
    /// Compared points of this side that carry the figure.
    pub known: usize,
    /// Of those, the points measured beside other work.
    pub crowded: usize,
    /// The largest figure, % of a CPU (0 when none is known).
    pub max_pct: f64,
}

/// Other work above this share of a CPU is noted (the level at which a repetition counts
/// as disturbed, `pmscope_runner::repeat::OTHER_WORK_CEILING`).
pub const OTHER_WORK_NOTED_PCT: f64 = 30.0;

impl OtherWorkSeen {
    fn of<'r>(records: impl Iterator<Item = &'r Record>) -> OtherWorkSeen {
        let mut seen = OtherWorkSeen::default();
        for pct in records.filter_map(|r| r.values.get(v::OTHER_CPU_PCT.name()).copied()) {
            seen.known += 1;
            seen.crowded += usize::from(pct > OTHER_WORK_NOTED_PCT);
            seen.max_pct = seen.max_pct.max(pct);
        }
        seen
    }
}

impl Comparison {
    /// Points called worse, by more than `pct` percent.
    pub fn worse_than(&self, pct: f64) -> impl Iterator<Item = &PointComparison> {
        self.points
            .iter()
            .filter(move |p| p.verdict == Verdict::Worse && p.worse_pct > pct)
    }

    /// How many points got `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.points.iter().filter(|p| p.verdict == verdict).count()
    }
}

/// The method, as printed.
pub const METHOD: &str = "each point's ln(B/A), the difference of its mean log block medians, with Student's t against the spread of its blocks (each block measured on a mapping of its own, in turn with every other point), moderated by the spread of the other points of its experiment and metric (empirical Bayes, Smyth 2004); Holm's correction over all points, so an A/A comparison calls any point with probability at most --alpha";

/// A shared point before the verdict: its sides and noise.
struct Pending<'r> {
    a: &'r Record,
    b: &'r Record,
    side_a: Side,
    side_b: Side,
    log_ratio: f64,
    noise: NoiseTerms,
}

/// Compares the points of `a` and `b` that share experiment, metric and parameters (and
/// target, when `match_targets`; pass false to compare two targets of one run). Either
/// side may hold several runs' records: the blocks of a point's records on one side are
/// pooled.
pub fn compare_records(
    a: &[Record],
    b: &[Record],
    match_targets: bool,
    settings: &Settings,
) -> Comparison {
    let (ia, ib) = (index(a, match_targets), index(b, match_targets));
    // Two targets of one run were measured in the same rounds: their blocks pair.
    let pair = |a: &Side, b: &Side| !match_targets && pairable(a, b);
    let mut shared: Vec<(&Record, &Record, Side, Side)> = Vec::new();
    for (k, ra) in &ia {
        let Some(rb) = ib.get(k) else { continue };
        let (Some(side_a), Some(side_b)) = (Side::of(ra), Side::of(rb)) else {
            continue;
        };
        shared.push((ra[0], rb[0], side_a, side_b));
    }
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, (ra, _, _, _)) in shared.iter().enumerate() {
        let g = (ra.experiment.clone(), ra.metric.clone().unwrap_or_default());
        groups.entry(g).or_default().push(i);
    }
    let mut priors: BTreeMap<(String, String), Option<pmscope_core::stats::VariancePrior>> =
        BTreeMap::new();
    for (g, members) in &groups {
        let sides: Vec<(&Side, &Side, bool)> = members
            .iter()
            .map(|&i| {
                let (a, b) = (&shared[i].2, &shared[i].3);
                (a, b, pair(a, b))
            })
            .collect();
        priors.insert(g.clone(), group_prior(&sides));
    }
    let pending: Vec<Pending> = shared
        .into_iter()
        .map(|(ra, rb, side_a, side_b)| {
            let g = (ra.experiment.clone(), ra.metric.clone().unwrap_or_default());
            let p = pair(&side_a, &side_b);
            let noise = NoiseTerms::of((&side_a, &side_b, p), priors[&g], settings.noise_floor);
            Pending {
                a: ra,
                b: rb,
                log_ratio: (side_b.centre() / side_a.centre()).ln(),
                side_a,
                side_b,
                noise,
            }
        })
        .collect();
    let points = judge(&pending, settings);
    Comparison {
        method: METHOD,
        settings: *settings,
        only_a: ia.keys().filter(|k| !ib.contains_key(*k)).count(),
        only_b: ib.keys().filter(|k| !ia.contains_key(*k)).count(),
        groups: summarise_groups(&pending, &points, groups, &priors, settings),
        other_work: [
            OtherWorkSeen::of(pending.iter().map(|p| p.a)),
            OtherWorkSeen::of(pending.iter().map(|p| p.b)),
        ],
        points,
    }
}

/// Each point's records (one per run), by its key.
fn index(rs: &[Record], match_targets: bool) -> BTreeMap<String, Vec<&Record>> {
    let mut m: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in rs.iter().filter(|r| r.summary.is_some()) {
        if let Some(k) = pmscope_core::blocks::point_key(r, match_targets) {
            m.entry(k).or_default().push(r);
        }
    }
    m
}

type Priors = BTreeMap<(String, String), Option<pmscope_core::stats::VariancePrior>>;

fn summarise_groups(
    pending: &[Pending],
    points: &[PointComparison],
    groups: BTreeMap<(String, String), Vec<usize>>,
    priors: &Priors,
    settings: &Settings,
) -> Vec<GroupNoise> {
    use pmscope_core::stats::median;
    groups
        .into_iter()
        .map(|(key, members)| {
            let of = |f: &dyn Fn(usize) -> f64| -> f64 {
                median(&members.iter().map(|&i| f(i)).collect::<Vec<_>>())
            };
            let resolved = members
                .iter()
                .filter(|&&i| points[i].detectable_pct <= settings.wanted_pct)
                .count();
            GroupNoise {
                points: members.len(),
                blocks: [
                    of(&|i| pending[i].noise.blocks[0] as f64) as usize,
                    of(&|i| pending[i].noise.blocks[1] as f64) as usize,
                ],
                block_spread_pct: of(&|i| pending[i].noise.own_sd).exp_m1() * 100.0,
                prior_df: priors[&key].map(|p| p.df),
                typical_noise_pct: of(&|i| pending[i].noise.total) * 100.0,
                median_change_pct: of(&|i| pending[i].log_ratio).exp_m1() * 100.0,
                typical_detectable_pct: of(&|i| points[i].detectable_pct),
                resolved_share: resolved as f64 / members.len() as f64,
                experiment: key.0,
                metric: key.1,
            }
        })
        .collect()
}

/// Why a point cannot be judged at all (no test), if it cannot.
fn untestable(p: &Pending) -> Option<&'static str> {
    let both_positive = p.side_a.centre() > 0.0 && p.side_b.centre() > 0.0;
    if !(both_positive && p.log_ratio.is_finite()) {
        Some("a median is not positive: no ratio")
    } else if !p.noise.total.is_finite() {
        Some(
            "one block a side and no point of its group with more: no spread to judge it by; measure with --blocks 2 or more, or compare several runs a side",
        )
    } else {
        None
    }
}

fn judge(pending: &[Pending], settings: &Settings) -> Vec<PointComparison> {
    let p_values: Vec<f64> = pending
        .iter()
        .map(|p| match untestable(p) {
            Some(_) => f64::NAN,
            None => t_two_sided_p(p.log_ratio / p.noise.total, p.noise.df),
        })
        .collect();
    let decisions = holm(&p_values, settings.alpha);
    pending
        .iter()
        .zip(p_values.iter().zip(&decisions))
        .map(|(p, (&p_value, decision))| {
            let metric = p.a.metric.clone().unwrap_or_default();
            let direction = Direction::of_metric(&metric);
            let t = t_two_sided_critical(decision.level, p.noise.df);
            let half = t * p.noise.total;
            let detectable_pct = half.exp_m1() * 100.0;
            let change = p.log_ratio.exp_m1() * 100.0;
            let worse_pct = match direction {
                Direction::LowerIsBetter => change,
                Direction::HigherIsBetter => -change,
                Direction::Unknown => 0.0,
            };
            let (verdict, unresolved_because) = verdict_of(
                p,
                decision.rejected,
                direction,
                detectable_pct,
                settings.wanted_pct,
            );
            PointComparison {
                experiment: p.a.experiment.clone(),
                target_a: p
                    .a
                    .target
                    .as_ref()
                    .map_or(String::new(), |t| t.spec.clone()),
                target_b: p
                    .b
                    .target
                    .as_ref()
                    .map_or(String::new(), |t| t.spec.clone()),
                params: p.a.params.clone(),
                metric,
                median_a: p.side_a.centre(),
                median_b: p.side_b.centre(),
                ratio: p.log_ratio.exp(),
                ratio_low: (p.log_ratio - half).exp(),
                ratio_high: (p.log_ratio + half).exp(),
                worse_pct,
                direction,
                noise: p.noise,
                p_value,
                detectable_pct,
                verdict,
                unresolved_because,
                beyond_noise: decision.rejected,
            }
        })
        .collect()
}

fn verdict_of(
    p: &Pending,
    called: bool,
    direction: Direction,
    detectable_pct: f64,
    wanted_pct: f64,
) -> (Verdict, Option<String>) {
    if called {
        let verdict = match direction {
            Direction::Unknown => Verdict::Changed,
            Direction::LowerIsBetter if p.log_ratio > 0.0 => Verdict::Worse,
            Direction::HigherIsBetter if p.log_ratio < 0.0 => Verdict::Worse,
            _ => Verdict::Better,
        };
        return (verdict, None);
    }
    let why = if let Some(why) = untestable(p) {
        Some(why.to_string())
    } else if detectable_pct > wanted_pct {
        let size = if detectable_pct > 900.0 {
            "tenfold".to_string()
        } else {
            format!("{detectable_pct:.0}%")
        };
        Some(format!(
            "a change under {size} is lost in the spread of its blocks ({} + {})",
            p.noise.blocks[0], p.noise.blocks[1]
        ))
    } else {
        None
    };
    match why {
        Some(why) => (Verdict::NotResolvable, Some(why)),
        None => (Verdict::WithinNoise, None),
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
        assert_eq!(
            Direction::of_metric("insert_mips"),
            Direction::HigherIsBetter
        );
        assert_eq!(Direction::of_metric("ratio"), Direction::Unknown);
    }

    #[test]
    fn command_line_values_are_checked() {
        assert_eq!("10".parse::<Percent>(), Ok(Percent(10.0)));
        assert_eq!("2.5%".parse::<Percent>(), Ok(Percent(2.5)));
        for bad in ["nan", "-1", "inf", "ten", ""] {
            assert!(bad.parse::<Percent>().is_err(), "{bad}");
        }
        assert_eq!("0.01".parse::<Alpha>(), Ok(Alpha(0.01)));
        for bad in ["0", "1", "nan", "-0.1", "2"] {
            assert!(bad.parse::<Alpha>().is_err(), "{bad}");
        }
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
        let s = Settings::default();
        let c = compare_records(
            &[point(1 << 30, Some("auto"))],
            &[point(1 << 30, None)],
            true,
            &s,
        );
        assert_eq!((c.points.len(), c.only_a, c.only_b), (1, 0, 0));
        let c = compare_records(
            &[point(1 << 30, Some("auto"))],
            &[point(1 << 30, Some("explicit"))],
            true,
            &s,
        );
        assert_eq!(c.points.len(), 1);
        let c = compare_records(
            &[point(1 << 30, Some("auto"))],
            &[point(1 << 28, Some("auto"))],
            true,
            &s,
        );
        assert_eq!((c.points.len(), c.only_a, c.only_b), (0, 1, 1));
    }
}
