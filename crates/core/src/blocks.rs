//! Points measured in blocks. One run of a point on one mapping is one sample of the
//! machine's placement (which physical pages, so which cache sets and page-walk caches,
//! back the working set) and of the host's state in that minute; repeating inside it
//! measures the timer, not that. So a point is measured in several *blocks*, each on a
//! mapping of its own (made before the previous one is released, so the kernel hands out
//! other frames and each offset meets other page colours; first touched in address order,
//! as applications touch theirs), with the blocks of every
//! point taken in turn over the run (STABILIZER's argument, Curtsinger and Berger, ASPLOS
//! 2013: re-randomise the layout during the run and ordinary statistics apply).
//!
//! Each block gives one median (of its repetitions or single timings); the point's figure
//! is their geometric mean, and its interval comes from their spread on a log scale, so it
//! covers placement and drift by construction. With few blocks a point's own spread has
//! few degrees of freedom; the points of one experiment and metric lend each other theirs
//! through an empirical-Bayes prior on the variance ([`crate::stats::fit_variance_prior`]):
//! see [`moderate`].
//!
//! This module merges the per-block records of a point into one ([`merge`]), and holds the
//! arithmetic both the run (its `precision`) and `pmscope compare` (its verdicts) use.

use crate::precision::Precision;
use crate::record::Record;
pub use crate::record::{Block, Placement};
use crate::stats::{VariancePrior, fit_variance_prior, moderated_variance, t_two_sided_critical};
use crate::summary::{LogHistogram, Summary};

/// Page colours the placement check tells apart: frame number mod 64, which separates the
/// sets of a cache of up to 64 × 4 KiB = 256 KiB per way.
pub const COLOURS: u64 = 64;

/// Pages of a mapping the placement check reads at most (evenly spaced).
pub const PLACEMENT_SAMPLE: usize = 1 << 16;

/// The smallest relative spread a point's blocks are taken to have (0.01 %): blocks that
/// agree exactly (one timer step everywhere) would otherwise have a log variance of minus
/// infinity.
pub const VARIANCE_FLOOR: f64 = 1e-8;

/// The identity of a point across runs and blocks: experiment, target (when
/// `with_target`), metric and parameters, without the parameters that only say where a
/// value came from ([`crate::vocab::PROVENANCE_PARAMS`]); `None` for a record without a
/// metric.
pub fn point_key(r: &Record, with_target: bool) -> Option<String> {
    let target = if with_target {
        r.target.as_ref().map_or("", |t| t.spec.as_str())
    } else {
        ""
    };
    let mut params = r.params.clone();
    params.retain(|k, _| !crate::vocab::PROVENANCE_PARAMS.contains(&k.as_str()));
    Some(format!(
        "{}\u{1}{}\u{1}{}\u{1}{}",
        r.experiment,
        target,
        r.metric.as_deref()?,
        serde_json::to_string(&params).ok()?
    ))
}

/// The block medians of a record on a log scale: its blocks', or its own median as one
/// block (a record measured in one block, or written before blocks); empty when a median is
/// not positive.
pub fn log_medians(r: &Record) -> Vec<f64> {
    let medians: Vec<f64> = if r.blocks.is_empty() {
        r.summary.iter().map(|s| s.p50).collect()
    } else {
        r.blocks.iter().map(|b| b.median).collect()
    };
    if medians.iter().all(|m| *m > 0.0 && m.is_finite()) {
        medians.iter().map(|m| m.ln()).collect()
    } else {
        Vec::new()
    }
}

/// Mean and sample variance (n − 1; NaN for one value).
pub fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 {
        x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        f64::NAN
    };
    (mean, var)
}

/// Merges the records of one point, one per block in the order measured (each with the
/// `placement` of its mapping; a record that already holds blocks, a block of a suite or a
/// run of its own, brings them all), into the point's record: the first block's context,
/// the blocks, the geometric mean of their medians as the median, their spread as the
/// interval (95 %, Student's t on the log medians; [`moderate`] narrows it with what the
/// other points of the run say), the summaries and histograms pooled, each value the
/// median of the blocks' (the machine's state: the worst block's), every warning once. A
/// record without a summary (a cell this CPU cannot run) is the first block's. `target`
/// is the precision asked for (`--precision`), which the interval is judged against; a
/// point of one block keeps the interval of its own repetitions.
pub fn merge(parts: Vec<(Record, Option<Placement>)>, target: Option<f64>) -> Record {
    let mut parts = parts.into_iter();
    let (mut out, first_placement) = parts.next().expect("a point has at least one block");
    let rest: Vec<(Record, Option<Placement>)> = parts.collect();
    let Some(first_summary) = out.summary.clone() else {
        return out;
    };
    let mut blocks = blocks_of(&out, &first_summary, first_placement);
    let mut summaries = vec![first_summary];
    let mut values: std::collections::BTreeMap<String, Vec<f64>> = out
        .values
        .iter()
        .map(|(k, v)| (k.clone(), vec![*v]))
        .collect();
    for (r, placement) in rest {
        let Some(s) = r.summary.clone() else { continue };
        blocks.extend(blocks_of(&r, &s, placement));
        summaries.push(s);
        for (k, v) in &r.values {
            values.entry(k.clone()).or_default().push(*v);
        }
        for w in r.warnings {
            if !out.warnings.contains(&w) {
                out.warnings.push(w);
            }
        }
        out.histogram = match (out.histogram.take(), r.histogram) {
            (Some(a), Some(b)) => Some(a.merged(&b)),
            (a, b) => a.or(b),
        };
        out.timestamp_ms = out.timestamp_ms.max(r.timestamp_ms);
    }
    out.summary = Some(pooled_summary(&summaries, &blocks));
    out.values = values
        .into_iter()
        .map(|(k, v)| {
            let x = match k.as_str() {
                // The machine's state: the worst block speaks for the point.
                "steal_pct" | "load_avg" | "other_cpu_pct" => {
                    v.iter().copied().fold(f64::MIN, f64::max)
                }
                "cpu_share" => v.iter().copied().fold(f64::MAX, f64::min),
                _ => crate::stats::median(&v),
            };
            (k, x)
        })
        .collect();
    if blocks.len() > 1 {
        let disturbed = blocks.iter().map(|b| b.disturbed).sum();
        out.precision = interval(&blocks, None, target).map(|mut p| {
            p.disturbed = disturbed;
            p
        });
    }
    out.blocks = blocks;
    out
}

/// The blocks a record brings: its own, or its median as one block measured on a mapping
/// with `placement`.
fn blocks_of(r: &Record, s: &Summary, placement: Option<Placement>) -> Vec<Block> {
    if !r.blocks.is_empty() {
        return r.blocks.clone();
    }
    vec![block_of(r, s, placement)]
}

/// Merges every point of `records` that appears in several (the blocks of a measurement
/// or of a suite's rounds, each with its mapping's placement where known): the points in
/// the order first seen, each merged ([`merge`]); a record that summarises nothing is kept
/// once, where it first appeared. Then the intervals are moderated ([`moderate`]).
pub fn merge_points(records: Vec<(Record, Option<Placement>)>, target: Option<f64>) -> Vec<Record> {
    let mut order: Vec<Result<String, Record>> = Vec::new();
    let mut points: std::collections::HashMap<String, Vec<(Record, Option<Placement>)>> =
        Default::default();
    for (r, placement) in records {
        match point_key(&r, true) {
            Some(k) => {
                if !points.contains_key(&k) {
                    order.push(Ok(k.clone()));
                }
                points.entry(k).or_default().push((r, placement));
            }
            None => {
                let seen = order.iter().any(|o| match o {
                    Err(l) => same_record(l, &r),
                    Ok(_) => false,
                });
                if !seen {
                    order.push(Err(r));
                }
            }
        }
    }
    let mut out: Vec<Record> = order
        .into_iter()
        .map(|o| match o {
            Ok(k) => merge(points.remove(&k).expect("collected"), target),
            Err(r) => r,
        })
        .collect();
    moderate(&mut out);
    out
}

/// Whether two records that summarise nothing are the same record of different blocks
/// (experiment, target and parameters alike).
pub fn same_record(a: &Record, b: &Record) -> bool {
    a.experiment == b.experiment
        && a.params == b.params
        && a.target.as_ref().map(|t| &t.spec) == b.target.as_ref().map(|t| &t.spec)
}

fn block_of(r: &Record, s: &Summary, placement: Option<Placement>) -> Block {
    Block {
        median: s.p50,
        n: s.n,
        disturbed: r.precision.as_ref().map_or(0, |p| p.disturbed),
        placement,
    }
}

/// The summary of all blocks together: n, min, max, mean exact; the standard deviation of
/// all values together (within blocks and between them); p50 the geometric mean of the
/// block medians (the point's figure); p90 and above the geometric mean of the blocks'.
fn pooled_summary(s: &[Summary], blocks: &[Block]) -> Summary {
    let n: usize = s.iter().map(|x| x.n).sum();
    let nf = n as f64;
    let mean = s.iter().map(|x| x.mean * x.n as f64).sum::<f64>() / nf;
    let within: f64 = s
        .iter()
        .map(|x| x.stddev.powi(2) * (x.n.saturating_sub(1)) as f64)
        .sum();
    let between: f64 = s.iter().map(|x| (x.mean - mean).powi(2) * x.n as f64).sum();
    let stddev = if n > 1 {
        ((within + between) / (nf - 1.0)).sqrt()
    } else {
        0.0
    };
    let each = |f: fn(&Summary) -> f64| -> Vec<f64> { s.iter().map(f).collect() };
    Summary {
        n,
        min: s.iter().map(|x| x.min).fold(f64::INFINITY, f64::min),
        p50: geometric_mean(&blocks.iter().map(|b| b.median).collect::<Vec<_>>()),
        p90: geometric_mean(&each(|x| x.p90)),
        p99: geometric_mean(&each(|x| x.p99)),
        p999: geometric_mean(&each(|x| x.p999)),
        max: s.iter().map(|x| x.max).fold(f64::NEG_INFINITY, f64::max),
        mean,
        stddev,
    }
}

/// The geometric mean; the arithmetic mean where a value is not positive (a latency of 0
/// ns after the timer's cost is subtracted: under one step).
pub fn geometric_mean(v: &[f64]) -> f64 {
    if v.iter().all(|x| *x > 0.0) {
        (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The 95 % interval of a point's figure from its blocks: the geometric mean of their
/// medians, ± Student's t times the standard error of their mean log, with the variance and
/// degrees of freedom moderated by `prior` when given. `None` for fewer than two blocks
/// (no spread) or a median that is not positive; `met` against `target` like every
/// interval (its half-width relative to the figure).
pub fn interval(
    blocks: &[Block],
    prior: Option<VariancePrior>,
    target: Option<f64>,
) -> Option<Precision> {
    let logs: Vec<f64> = blocks
        .iter()
        .map(|b| b.median)
        .filter(|m| *m > 0.0 && m.is_finite())
        .map(f64::ln)
        .collect();
    if logs.len() < 2 || logs.len() != blocks.len() {
        return None;
    }
    let (mean, var) = mean_var(&logs);
    let df = (logs.len() - 1) as f64;
    let (var, df) = moderated_variance(prior, var.max(VARIANCE_FLOOR), df);
    let half = t_two_sided_critical(0.05, df) * (var / logs.len() as f64).sqrt();
    let (low, high) = ((mean - half).exp(), (mean + half).exp());
    let centre = mean.exp();
    let mut p = Precision {
        low,
        high,
        n: logs.len(),
        disturbed: blocks.iter().map(|b| b.disturbed).sum(),
        target,
        met: false,
        step: None,
    };
    p.met = p.within(centre, target);
    Some(p)
}

/// Narrows the intervals of a run's points measured in blocks with what the run's other
/// points of the same experiment and metric say about the spread of blocks: each point's
/// log variance is moderated by the prior fitted to the group's ([`fit_variance_prior`]),
/// so a point of three blocks is judged with the degrees of freedom of its group, and a
/// point that scattered more than its group keeps most of its own spread.
pub fn moderate(records: &mut [Record]) {
    let mut groups: std::collections::BTreeMap<(String, String), Vec<usize>> = Default::default();
    for (i, r) in records.iter().enumerate() {
        if r.blocks.len() >= 2 {
            let metric = r.metric.clone().unwrap_or_default();
            groups
                .entry((r.experiment.clone(), metric))
                .or_default()
                .push(i);
        }
    }
    for members in groups.values() {
        let (s2, df): (Vec<f64>, Vec<f64>) = members
            .iter()
            .map(|&i| {
                let logs = log_medians(&records[i]);
                if logs.len() < 2 {
                    return (f64::NAN, 0.0);
                }
                (mean_var(&logs).1, (logs.len() - 1) as f64)
            })
            .unzip();
        let prior = fit_variance_prior(&s2, &df, VARIANCE_FLOOR);
        for &i in members {
            let r = &mut records[i];
            let target = r.precision.as_ref().and_then(|p| p.target);
            let disturbed = r.precision.as_ref().map_or(0, |p| p.disturbed);
            if let Some(mut p) = interval(&r.blocks, prior, target) {
                p.disturbed = disturbed;
                r.precision = Some(p);
            }
        }
    }
}

impl LogHistogram {
    /// The histogram of both samples together. Both must use the same number of buckets
    /// per doubling (every histogram pmscope records uses 4), so their bucket edges lie
    /// on one grid, 2^(k/4).
    pub fn merged(&self, other: &LogHistogram) -> LogHistogram {
        const PER_OCTAVE: f64 = 4.0;
        let index = |lower: f64| (lower.log2() * PER_OCTAVE).round() as i64;
        let mut counts: std::collections::BTreeMap<i64, u64> = Default::default();
        for h in [self, other] {
            for (l, c) in h.lower.iter().zip(&h.count) {
                *counts.entry(index(*l)).or_default() += c;
            }
        }
        let (Some(&first), Some(&last)) = (counts.keys().next(), counts.keys().last()) else {
            return LogHistogram {
                lower: vec![],
                count: vec![],
            };
        };
        let lower = (first..=last)
            .map(|k| 2f64.powf(k as f64 / PER_OCTAVE))
            .collect();
        let count = (first..=last)
            .map(|k| counts.get(&k).copied().unwrap_or(0))
            .collect();
        LogHistogram { lower, count }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::SystemSummary;
    use crate::vocab::{p, v};
    use crate::warning::Warning;

    fn block(median: f64, n: usize, extra: f64) -> Record {
        let values: Vec<f64> = (0..n)
            .map(|i| median + (i as f64 - (n / 2) as f64) * 0.1)
            .collect();
        let mut r = Record::new("latency", vec![], SystemSummary::default())
            .param(p::WORKING_SET_BYTES, 1u64 << 30)
            .value(v::CV, extra)
            .value(v::OTHER_CPU_PCT, extra * 100.0);
        r.metric = Some("latency_ns".into());
        r.summary = Summary::of(&values);
        r.precision = Precision::of(&values, Some(0.03));
        r.histogram = Some(LogHistogram::of(&values, 4));
        r
    }

    /// The merged point: the geometric mean of the block medians, n summed, min and max
    /// exact, every block kept, values by their rule, warnings once, histograms added.
    #[test]
    fn blocks_merge_into_one_point() {
        let mut b = block(200.0, 5, 0.2);
        b.warnings.push(Warning::new("x", "once", "r"));
        let mut c = block(50.0, 5, 0.1);
        c.warnings.push(Warning::new("x", "once", "r"));
        // The first block is not the mean: a point that kept its first block's figure fails.
        let m = merge(
            vec![(c, None), (block(100.0, 5, 0.3), None), (b, None)],
            Some(0.03),
        );
        let s = m.summary.as_ref().unwrap();
        assert!(
            (s.p50 - 100.0).abs() < 1e-9,
            "geometric mean of 50, 100, 200: {}",
            s.p50
        );
        assert_eq!(s.n, 15);
        assert!((s.min - 49.8).abs() < 1e-9 && (s.max - 200.2).abs() < 1e-9);
        assert_eq!(m.blocks.len(), 3);
        assert_eq!(m.blocks[2].median, 200.0);
        assert_eq!(m.val(v::CV), Some(0.2), "the median of the blocks' values");
        assert_eq!(m.val(v::OTHER_CPU_PCT), Some(30.0), "the worst block's");
        assert_eq!(m.warnings.len(), 1);
        assert_eq!(m.histogram.as_ref().unwrap().count.iter().sum::<u64>(), 15);
        // The interval is the blocks' spread (a factor 2 either way), not the repetitions'.
        let p = m.precision.unwrap();
        assert_eq!(p.n, 3);
        assert!(p.low < 40.0 && p.high > 250.0 && !p.met, "{p:?}");
    }

    /// Blocks that agree give a narrow interval; one block keeps its repetitions'.
    #[test]
    fn agreeing_blocks_give_a_narrow_interval() {
        let m = merge(
            (0..4)
                .map(|i| (block(100.0 + i as f64 * 0.2, 5, 0.0), None))
                .collect(),
            Some(0.03),
        );
        let p = m.precision.unwrap();
        assert!(p.met && p.high / p.low < 1.01, "{p:?}");
        let single = block(100.0, 5, 0.0);
        let one = merge(vec![(single.clone(), None)], Some(0.03));
        assert_eq!(one.precision, single.precision);
        assert_eq!(one.blocks.len(), 1);
        // Records that already hold blocks bring them all: a suite's rounds, or runs.
        let two = merge(vec![(one.clone(), None), (one, None)], Some(0.03));
        assert_eq!(two.blocks.len(), 2);
        assert_eq!(two.precision.as_ref().map(|p| p.n), Some(2));
    }

    /// Moderation: a point whose three blocks happened to agree closely is given the
    /// spread its group shows (its interval widens), and one that scattered widely keeps
    /// most of its own.
    #[test]
    fn the_group_lends_its_spread_to_each_point() {
        let spread = |i: usize, sd: f64| -> Vec<(Record, Option<Placement>)> {
            // Three blocks at −sd, 0, +sd around a centre, times a per-point factor.
            let f = 1.0 + i as f64 * 0.37;
            [-sd, 0.0, sd]
                .iter()
                .map(|d| {
                    let mut r = block(100.0 * f * d.exp(), 5, 0.0);
                    r = r.param(p::SEED, i as u64);
                    (r, None)
                })
                .collect()
        };
        let mut records: Vec<Record> = (0..20)
            .map(|i| merge(spread(i, if i == 0 { 0.001 } else { 0.03 }), Some(0.03)))
            .collect();
        let lucky_before = records[0].precision.clone().unwrap();
        moderate(&mut records);
        let lucky = records[0].precision.clone().unwrap();
        assert!(
            lucky.high / lucky.low > 5.0 * (lucky_before.high / lucky_before.low - 1.0) + 1.0,
            "{lucky_before:?} -> {lucky:?}"
        );
        let typical = records[5].precision.clone().unwrap();
        // ±3 % blocks, every one alike: the group's σ is their s times e^(γ/2) (a sample
        // variance on 2 degrees of freedom is biased low on the log scale), 4 %; se 2.3 %,
        // with the group's infinite degrees of freedom ±4.5 %.
        let half = (typical.high / typical.low).ln() / 2.0;
        assert!(half > 0.035 && half < 0.05, "{typical:?}");
    }

    /// Every point seen in several records is merged once, in the order first seen; a
    /// record that summarises nothing stays once.
    #[test]
    fn points_of_several_records_merge_in_order() {
        let a = block(100.0, 3, 0.0).param(p::SEED, 1u64);
        let b = block(200.0, 3, 0.0).param(p::SEED, 2u64);
        let mut note = Record::new("bandwidth-best", vec![], SystemSummary::default());
        note = note.param(p::THREADS, 2u64);
        let parts = vec![
            a.clone(),
            note.clone(),
            b.clone(),
            a.clone(),
            note,
            b.clone(),
            a,
        ];
        let merged = merge_points(parts.into_iter().map(|r| (r, None)).collect(), Some(0.03));
        assert_eq!(merged.len(), 3);
        assert_eq!(merged[0].blocks.len(), 3);
        assert_eq!(merged[1].experiment, "bandwidth-best");
        assert_eq!(merged[2].blocks.len(), 2);
    }

    #[test]
    fn histograms_on_the_same_grid_add_up() {
        let a = LogHistogram::of(&[1.0, 1.1, 4.0], 4);
        let b = LogHistogram::of(&[8.0, 9.0, 1.05], 4);
        let m = a.merged(&b);
        assert_eq!(m.count.iter().sum::<u64>(), 6);
        assert_eq!(m.lower[0], 1.0);
        assert_eq!(m.count[0], 3);
        assert!((m.lower.last().unwrap() - 8.0).abs() < 1e-9);
    }

    #[test]
    fn the_key_ignores_provenance_and_names_the_target_when_asked() {
        let a = block(1.0, 3, 0.0).param(p::SIZE_SOURCE, "auto");
        let b = block(2.0, 3, 0.0).param(p::SIZE_SOURCE, "explicit");
        assert_eq!(point_key(&a, true), point_key(&b, true));
        let c = block(2.0, 3, 0.0).param(p::SEED, 9u64);
        assert_ne!(point_key(&a, true), point_key(&c, true));
    }
}
