//! The noise of one point's difference, measured, not assumed. A point's side is its block
//! medians over every run of that side ([`pmscope_core::blocks`]): each block was measured
//! on a mapping of its own, its blocks taken in turn with every other point's over the run,
//! so their spread is what a run on other pages and in another minute would differ by. The
//! difference is the log ratio r = mean ln(B blocks) − mean ln(A blocks), tested with
//! Student's t against the pooled spread of both sides' blocks.
//!
//! A point of three blocks a side has four degrees of freedom of its own: a t test on
//! them alone would need a difference of several standard errors to call anything. So the
//! points of one experiment and metric lend each other theirs: each point's variance is
//! moderated by a prior fitted to its group's ([`pmscope_core::stats::fit_variance_prior`],
//! Smyth 2004), which keeps a point that scattered more than its group near its own spread
//! and gives one whose few blocks happened to agree its group's.
//!
//! Two targets of one run (`compare --targets`) were measured block by block side by side,
//! in the same rounds: their blocks are *paired*, and the test is on the blocks' paired
//! differences, whose spread leaves out whatever the host did to both in a round (the
//! measurement side by side that the brief asks for, in the statistics too).
//!
//! Old records (written before blocks) and runs of `--blocks 1` count as one block per
//! run: with one run a side they have no spread of their own and are judged by their
//! group's, if any point of the group has blocks, and are otherwise untestable.

use pmscope_core::blocks::{VARIANCE_FLOOR, log_medians, mean_var};
use pmscope_core::record::Record;
use pmscope_core::stats::{VariancePrior, fit_variance_prior, moderated_variance};

/// One side of a point: its block medians on a log scale, from every run of the side.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Side {
    /// ln of each block's median.
    pub logs: Vec<f64>,
    /// Runs the blocks came from.
    pub runs: usize,
}

impl Side {
    /// The side of a point from its records (one per run); `None` when a median is not
    /// positive (no ratio).
    pub fn of(records: &[&Record]) -> Option<Side> {
        let mut logs = Vec::new();
        for r in records {
            let l = log_medians(r);
            if l.is_empty() {
                return None;
            }
            logs.extend(l);
        }
        Some(Side {
            logs,
            runs: records.len(),
        })
    }

    /// The geometric mean of its block medians: the side's figure.
    pub fn centre(&self) -> f64 {
        mean_var(&self.logs).0.exp()
    }
}

/// Whether two sides of one run can be paired block by block: one record each with as many
/// blocks, at least two (two targets of one run, measured in the same rounds).
pub(crate) fn pairable(a: &Side, b: &Side) -> bool {
    a.runs == 1 && b.runs == 1 && a.logs.len() == b.logs.len() && a.logs.len() >= 2
}

/// A point's own spread, its degrees of freedom, and the factor from it to the variance
/// of the log ratio: for paired sides, the variance of the blocks' differences (blocks −
/// 1 degrees of freedom, over the blocks); otherwise the variance of the block log-medians
/// around each side's mean, pooled over both sides (blocks − 2; 0 with one block a side),
/// times 1/blocks A + 1/blocks B.
pub(crate) fn own_variance_of(a: &Side, b: &Side, pair: bool) -> (f64, f64, f64) {
    if pair {
        let d: Vec<f64> = a.logs.iter().zip(&b.logs).map(|(x, y)| y - x).collect();
        let (_, var) = mean_var(&d);
        return (var, (d.len() - 1) as f64, 1.0 / d.len() as f64);
    }
    let (var, df) = own_variance(a, b);
    (
        var,
        df,
        1.0 / a.logs.len() as f64 + 1.0 / b.logs.len() as f64,
    )
}

/// A point's own spread: the variance of its block log-medians around each side's mean,
/// pooled over both sides, and its degrees of freedom (blocks − 2; 0 with one block a
/// side).
pub(crate) fn own_variance(a: &Side, b: &Side) -> (f64, f64) {
    let ss = |s: &Side| {
        let (m, _) = mean_var(&s.logs);
        s.logs.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    let df = (a.logs.len() + b.logs.len()).saturating_sub(2) as f64;
    if df == 0.0 {
        return (f64::NAN, 0.0);
    }
    ((ss(a) + ss(b)) / df, df)
}

/// The noise a point's log ratio is tested against, as `compare --json` reports it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct NoiseTerms {
    /// Blocks on side A and side B, over all their runs.
    pub blocks: [usize; 2],
    /// Runs on side A and side B.
    pub runs: [usize; 2],
    /// Whether the blocks were paired (two targets of one run, side by side).
    pub paired: bool,
    /// The standard deviation of the point's own block log-medians (pooled over both
    /// sides); NaN with one block a side.
    pub own_sd: f64,
    /// The standard deviation the point is judged by: its own, moderated by its group's.
    pub sd: f64,
    /// The degrees of freedom of its test (its own and those its group lends it).
    pub df: f64,
    /// Run-to-run variation added per run (`--noise-floor`), as a standard deviation.
    pub per_run: f64,
    /// The standard error of ln(B/A): sd·√(1/blocks A + 1/blocks B) (paired: sd/√blocks),
    /// with the per-run term added in squares.
    pub total: f64,
}

impl NoiseTerms {
    /// The noise of a point with sides `a` and `b`, its group's `prior`, and a per-run
    /// variation `per_run` (0 for none).
    pub(crate) fn of(
        (a, b, pair): (&Side, &Side, bool),
        prior: Option<VariancePrior>,
        per_run: f64,
    ) -> NoiseTerms {
        let (s2, df, factor) = own_variance_of(a, b, pair);
        let (var, df) = if df > 0.0 {
            moderated_variance(prior, s2.max(VARIANCE_FLOOR), df)
        } else {
            match prior {
                Some(p) => (p.s2, p.df),
                None => (f64::NAN, 0.0),
            }
        };
        let runs = if pair {
            0.0 // one run: nothing between runs to add
        } else {
            per_run * per_run * (1.0 / a.runs as f64 + 1.0 / b.runs as f64)
        };
        let total = (var * factor + runs).sqrt();
        NoiseTerms {
            blocks: [a.logs.len(), b.logs.len()],
            runs: [a.runs, b.runs],
            paired: pair,
            own_sd: s2.sqrt(),
            sd: var.sqrt(),
            df,
            per_run,
            total: if df > 0.0 { total } else { f64::NAN },
        }
    }
}

/// The prior of a group of points: fitted to their own variances (those with blocks).
pub(crate) fn group_prior(sides: &[(&Side, &Side, bool)]) -> Option<VariancePrior> {
    let (s2, df): (Vec<f64>, Vec<f64>) = sides
        .iter()
        .map(|(a, b, pair)| {
            let (s2, df, _) = own_variance_of(a, b, *pair);
            (s2, df)
        })
        .unzip();
    fit_variance_prior(&s2, &df, VARIANCE_FLOOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(logs: &[f64]) -> Side {
        Side {
            logs: logs.to_vec(),
            runs: 1,
        }
    }

    /// Three blocks a side at ±sd: the pooled variance is the blocks', with four degrees
    /// of freedom; one block a side has none, and takes its group's.
    #[test]
    fn the_spread_is_the_blocks_pooled_over_both_sides() {
        let sd: f64 = 0.03;
        let a = side(&[-sd, 0.0, sd]);
        // B scatters twice as far: the pooled variance is (2 + 8) sd² / 4.
        let b = side(&[0.1 - 2.0 * sd, 0.1, 0.1 + 2.0 * sd]);
        let (s2, df) = own_variance(&a, &b);
        assert!((s2 - 2.5 * sd * sd).abs() < 1e-12 && df == 4.0, "{s2} {df}");
        let n = NoiseTerms::of((&a, &b, false), None, 0.0);
        assert!(
            (n.total - sd * (2.5f64 * 2.0 / 3.0).sqrt()).abs() < 1e-12,
            "{n:?}"
        );
        let one = NoiseTerms::of((&side(&[0.0]), &side(&[0.1]), false), None, 0.0);
        assert!(one.total.is_nan() && one.df == 0.0);
        let prior = VariancePrior {
            s2: 0.0004,
            df: 30.0,
            upper: 0.0,
        };
        let lent = NoiseTerms::of((&side(&[0.0]), &side(&[0.1]), false), Some(prior), 0.0);
        assert!((lent.total - 0.02 * 2f64.sqrt()).abs() < 1e-12 && lent.df == 30.0);
    }

    /// Two targets of one run are paired block by block: a shift the host gave both in
    /// one round cancels, where unpaired blocks would count it as spread.
    #[test]
    fn paired_blocks_leave_out_what_both_sides_shared() {
        let rounds = [0.10, -0.08, 0.02, -0.05, 0.07];
        let a = side(&rounds);
        let b = side(&rounds.map(|r| r + 0.15 + if r > 0.0 { 0.005 } else { -0.005 }));
        assert!(pairable(&a, &b));
        let n = NoiseTerms::of((&a, &b, true), None, 0.0);
        assert!(n.paired && n.total < 0.005, "{n:?}");
        let n = NoiseTerms::of((&a, &b, false), None, 0.0);
        assert!(!n.paired && n.total > 0.03, "{n:?}");
    }

    /// A per-run variation adds its variance once per run of each side, however many
    /// blocks the run had.
    #[test]
    fn a_per_run_floor_counts_runs_not_blocks() {
        let a = side(&[0.0, 0.0, 0.0]);
        let mut b = side(&[0.0, 0.0, 0.0]);
        b.runs = 2;
        b.logs.extend([0.0, 0.0, 0.0]);
        let n = NoiseTerms::of((&a, &b, false), None, 0.02);
        let expect = (VARIANCE_FLOOR * (1.0 / 3.0 + 1.0 / 6.0) + 0.0004 * 1.5).sqrt();
        assert!((n.total - expect).abs() < 1e-9, "{n:?}");
    }
}
