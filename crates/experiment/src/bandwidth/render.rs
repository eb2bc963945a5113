//! The `bandwidth` table, drawn from records alone: every point, the best thread count per
//! access size, then random against sequential reads at the same thread count (seed 004
//! Figure 11).

use crate::render::precision::half_width;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{Pattern, p, v};
use pmscope_loops::stream::StreamOp;

/// The median GB/s of a point.
fn total(r: &Record) -> f64 {
    r.summary.as_ref().map_or(0.0, |s| s.p50)
}

/// Whether `r` is a point of plain reads (no mix) in `pattern`.
fn plain_read(r: &Record, pattern: Pattern) -> bool {
    r.text(p::OP) == Some(StreamOp::Read.name())
        && r.text(p::PATTERN) == Some(pattern.name())
        && r.text(p::MIX).unwrap_or_default().is_empty()
}

/// A repetition's length in the unit that shows it: 0.15 s, 2 ms, 20 µs.
fn seconds(s: f64) -> String {
    if s >= 0.1 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        let ms = format!("{:.3}", s * 1e3);
        format!("{} ms", ms.trim_end_matches('0').trim_end_matches('.'))
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// "64-byte vectors", or with ops at another width (ntcopy-pages' default) named:
/// "64-byte vectors (ntcopy-pages 32)".
fn vector_widths(points: &[&Record]) -> String {
    let width = |r: &Record| r.count(p::VECTOR_BYTES).unwrap_or_default();
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for r in points {
        match counts.iter_mut().find(|(w, _)| *w == width(r)) {
            Some((_, n)) => *n += 1,
            None => counts.push((width(r), 1)),
        }
    }
    // The width most points have (on a tie the wider: every op's default but one).
    let common = counts
        .iter()
        .max_by_key(|(w, n)| (*n, *w))
        .map_or(0, |(w, _)| *w);
    let mut others: Vec<String> = Vec::new();
    for r in points.iter().filter(|r| width(r) != common) {
        let named = format!("{} {}", r.text(p::OP).unwrap_or_default(), width(r));
        if !others.contains(&named) {
            others.push(named);
        }
    }
    if others.is_empty() {
        format!("{common}-byte vectors")
    } else {
        format!("{common}-byte vectors ({})", others.join(", "))
    }
}

/// The table of every point, then the random-to-sequential read ratios.
pub fn render(records: &[Record]) -> String {
    let points: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment == "bandwidth" && r.summary.is_some())
        .collect();
    let Some(first) = points.first() else {
        return String::new();
    };
    let mut out = format!(
        "bandwidth in GB/s (10^9 B/s), {}, {} per thread{}, median of repetitions of {}\n",
        vector_widths(&points),
        Bytes(first.count(p::REGION_PER_THREAD_BYTES).unwrap_or_default()),
        if first.flag(p::SHARED).unwrap_or_default() {
            " (one shared region)"
        } else {
            ""
        },
        seconds(first.number(p::DURATION_S).unwrap_or_default())
    );
    let mut t = Table::new(&[
        "target", "op", "pattern", "access", "threads", "mix", "GB/s", "95% ci", "reps", "cv %",
        "read", "write",
    ]);
    for r in &points {
        let label = r.text(p::MIX).unwrap_or_default();
        t.row(vec![
            r.spec().unwrap_or_default().to_string(),
            r.text(p::OP).unwrap_or_default().into(),
            r.text(p::PATTERN).unwrap_or_default().into(),
            Bytes(r.count(p::ACCESS_BYTES).unwrap_or_default()).to_string(),
            r.count(p::THREADS).unwrap_or_default().to_string(),
            if label.is_empty() {
                "-".into()
            } else {
                label.to_string()
            },
            format!("{:.2}", total(r)),
            half_width(r),
            r.summary.as_ref().map_or(0, |s| s.n).to_string(),
            format!("{:.1}", 100.0 * r.summary.as_ref().map_or(0.0, |s| s.cv())),
            format!("{:.2}", r.val(v::READ_GB_S).unwrap_or_default()),
            format!("{:.2}", r.val(v::WRITE_GB_S).unwrap_or_default()),
        ]);
    }
    out += &format!("{}\n", t.render());
    out += &best_threads(records);
    for rand in points.iter().filter(|r| plain_read(r, Pattern::Rand)) {
        let best_seq = points
            .iter()
            .filter(|q| {
                q.spec() == rand.spec()
                    && plain_read(q, Pattern::Seq)
                    && q.count(p::THREADS).unwrap_or_default()
                        == rand.count(p::THREADS).unwrap_or_default()
            })
            .map(|q| total(q))
            .fold(0.0, f64::max);
        if best_seq > 0.0 {
            out += &format!(
                "{}: random {} reads, {} thread(s): {:.2} GB/s = {:.2}x sequential reads ({:.2} GB/s)\n",
                rand.spec().unwrap_or_default(),
                Bytes(rand.count(p::ACCESS_BYTES).unwrap_or_default()),
                rand.count(p::THREADS).unwrap_or_default(),
                total(rand),
                total(rand) / best_seq,
                best_seq
            );
        }
    }
    out
}

/// The best thread count per op, pattern and access size (the `bandwidth-best` records,
/// seed 004 Figure 11), with its runner-up; empty when one thread count was measured.
fn best_threads(records: &[Record]) -> String {
    let best: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment == "bandwidth-best" && r.count(p::BEST_THREADS).is_some())
        .collect();
    if best.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&[
        "target",
        "op",
        "pattern",
        "access",
        "best threads",
        "GB/s",
        "runner-up",
        "GB/s",
        "",
    ]);
    for r in &best {
        let clear = r.flag(p::BEST_CLEAR).unwrap_or_default();
        t.row(vec![
            r.spec().unwrap_or_default().to_string(),
            r.text(p::OP).unwrap_or_default().into(),
            r.text(p::PATTERN).unwrap_or_default().into(),
            Bytes(r.count(p::ACCESS_BYTES).unwrap_or_default()).to_string(),
            r.count(p::BEST_THREADS).unwrap_or_default().to_string(),
            format!("{:.2}", r.val(v::BEST_GB_S).unwrap_or_default()),
            r.count(p::RUNNER_UP_THREADS)
                .map_or("-".into(), |n| n.to_string()),
            r.val(v::RUNNER_UP_GB_S)
                .map_or("-".into(), |g| format!("{g:.2}")),
            if clear { "" } else { "within noise" }.into(),
        ]);
    }
    let mut out = format!(
        "\nbest thread count per access size (highest median; \"within noise\": the runner-up's 95% interval overlaps the best's)\n{}\n",
        t.render()
    );
    if best
        .iter()
        .any(|r| !r.flag(p::BEST_CLEAR).unwrap_or_default())
    {
        out += "(a best \"within noise\" could as well be its runner-up: more --reps or a longer --duration separate them)\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn repetition_lengths_keep_their_digits() {
        assert_eq!(seconds(0.15), "0.15 s");
        assert_eq!(seconds(1.0), "1.00 s");
        assert_eq!(seconds(0.002), "2 ms");
        assert_eq!(seconds(0.0125), "12.5 ms");
        assert_eq!(seconds(2.1e-5), "21 µs");
    }
}
