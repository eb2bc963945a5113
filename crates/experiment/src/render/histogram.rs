//! A log-bucket histogram as text: one line per bucket with its share and a bar, the
//! buckets under 0.01 % folded into one line each side so the tail is never lost.

use pmscope_core::summary::LogHistogram;
use std::fmt::Write;

/// `h` as lines of text, each ending in a newline.
pub fn text(h: &LogHistogram) -> String {
    let mut out = String::new();
    let total: u64 = h.count.iter().sum::<u64>().max(1);
    let max = h.count.iter().copied().max().unwrap_or(1).max(1);
    // Buckets under 0.01 % are folded into one line each side, so the tail is not lost.
    let shown = |c: u64| c * 10_000 >= total;
    let first = h.count.iter().position(|&c| shown(c)).unwrap_or(0);
    let last = h.count.iter().rposition(|&c| shown(c)).unwrap_or(0);
    let below: u64 = h.count[..first].iter().sum();
    if below > 0 {
        let _ = writeln!(out, "  <  {:>8.1} ns  {below} samples", h.lower[first]);
    }
    for i in first..=last {
        let c = h.count[i];
        let bar = "#".repeat(((c as f64 / max as f64) * 40.0).ceil() as usize);
        let _ = writeln!(
            out,
            "  >= {:>8.1} ns {:>6.2}% {bar}",
            h.lower[i],
            100.0 * c as f64 / total as f64
        );
    }
    let above: u64 = h.count[last + 1..].iter().sum();
    if above > 0 {
        let _ = writeln!(
            out,
            "  >= {:>8.1} ns  {above} samples (max in the record)",
            h.lower[last + 1]
        );
    }
    out
}
