//! The comparison as the terminal shows it: one line per point called better, worse or
//! changed (every point with `all`), then the count of each verdict, each group's noise and
//! what `not resolvable` asks of the user. Points not resolvable are counted, not listed:
//! on a noisy machine they can be most of a run, and would bury the few that changed.

use super::{Comparison, OTHER_WORK_NOTED_PCT, PointComparison, Verdict};
use std::fmt::Write;

fn point_label(p: &PointComparison, with_target: bool) -> String {
    let params: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if with_target {
        format!("{} {}", p.target_a, params.join(" "))
    } else {
        params.join(" ")
    }
}

fn verdict_cell(p: &PointComparison) -> String {
    match &p.unresolved_because {
        Some(why) => format!("{} ({why})", p.verdict.word()),
        None => p.verdict.word().to_string(),
    }
}

/// The comparison as text. `with_target` labels points with side A's target (two runs);
/// `all` lists every point, not only those called.
pub fn table(c: &Comparison, with_target: bool, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "test: {}", c.method);
    let shown: Vec<&PointComparison> = c.points.iter().filter(|p| all || p.beyond_noise).collect();
    if !shown.is_empty() {
        let _ = writeln!(
            out,
            "{:<10} {:<16} {:<40} {:>11} {:>11} {:>7} {:>15} {:>8}  verdict",
            "experiment", "metric", "point", "median A", "median B", "B/A", "interval", "worse %"
        );
    }
    for p in shown {
        let interval = format!("{:.3}-{:.3}", p.ratio_low, p.ratio_high);
        let _ = writeln!(
            out,
            "{:<10} {:<16} {:<40} {:>11.4} {:>11.4} {:>7.3} {:>15} {:>8.1}  {}",
            p.experiment,
            p.metric,
            point_label(p, with_target),
            p.median_a,
            p.median_b,
            p.ratio,
            interval,
            p.worse_pct,
            verdict_cell(p)
        );
    }
    let counts: Vec<String> = Verdict::ALL
        .iter()
        .map(|&v| (v, c.count(v)))
        .filter(|&(v, n)| n > 0 || matches!(v, Verdict::Worse | Verdict::Better))
        .map(|(v, n)| format!("{n} {}", v.word()))
        .collect();
    let _ = write!(
        out,
        "{} of {} point(s) (Holm, family-wise alpha {})",
        counts.join(", "),
        c.points.len(),
        c.settings.alpha
    );
    if c.only_a + c.only_b > 0 {
        let _ = write!(out, "; {} only in A, {} only in B", c.only_a, c.only_b);
    }
    if !all && c.points.iter().any(|p| !p.beyond_noise) {
        out.push_str("; --verbose lists every point");
    }
    out.push('\n');
    for g in &c.groups {
        let resolves = if g.typical_detectable_pct.is_nan() {
            "resolves nothing (no spread to judge by)".to_string()
        } else if g.typical_detectable_pct > 900.0 {
            "resolves only tenfold changes".to_string()
        } else {
            format!("resolves {:.1}% changes", g.typical_detectable_pct)
        };
        let prior = match g.prior_df {
            Some(df) if df.is_infinite() => ", its points spread alike".to_string(),
            Some(df) => format!(", the group lends each point {df:.0} degrees of freedom"),
            None => String::new(),
        };
        // One block a side has no spread: say so instead of printing NaN.
        let pct = |x: f64, none: &str| {
            if x.is_finite() {
                format!("{x:.1}%")
            } else {
                none.to_string()
            }
        };
        let _ = writeln!(
            out,
            "resolution {} {}: {} at a typical point; {:.0}% of its {} point(s) resolve {}% (blocks {}+{}, block spread {}, standard error of B/A {}{prior}; median change {:+.1}%)",
            g.experiment,
            g.metric,
            resolves,
            100.0 * g.resolved_share,
            g.points,
            c.settings.wanted_pct,
            g.blocks[0],
            g.blocks[1],
            pct(g.block_spread_pct, "none (one block a side)"),
            pct(g.typical_noise_pct, "unknown"),
            g.median_change_pct,
        );
    }
    for (side, seen) in ["A", "B"].iter().zip(&c.other_work) {
        if seen.crowded > 0 {
            let _ = writeln!(
                out,
                "other work: {} of {} compared point(s) of {side} were measured while other processes used more than {:.0}% of a CPU (up to {:.0}%); a difference there may be the machine's, not the target's",
                seen.crowded, seen.known, OTHER_WORK_NOTED_PCT, seen.max_pct
            );
        }
    }
    if c.count(Verdict::NotResolvable) > 0 {
        let _ = writeln!(
            out,
            "not resolvable: a change of {}% could not have been told from the spread of the point's blocks; measure with more --blocks, compare several runs a side, or measure on a quieter machine",
            c.settings.wanted_pct
        );
    }
    out
}
