//! What a fence costs a block stream (seed 002's headline, "x → x+F"): a `sync` option with
//! the fence after each block (`store clwb+F`) against the same option without it (`store
//! clwb`) on the same pattern, from their records alone.

use crate::record::Record;
use crate::vocab::p;

/// The fence's cost on one option and pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FenceCost {
    /// Throughput with the fence over throughput without it (median GB/s).
    pub ratio: f64,
    /// Time the fence adds to each 64-byte block on each thread, in ns (the streams run
    /// on `threads` threads and their GB/s are the sum over them).
    pub ns_per_block: f64,
}

/// For the record of a `+F` option among `rows` (one target's `sync` records): its cost
/// against the option without `+F` on the same pattern; `None` for another option, or
/// without a median for both.
pub fn fence_cost(rows: &[&Record], with_fence: &Record) -> Option<FenceCost> {
    let name = with_fence.text(p::OPTION)?;
    let bare = name.strip_suffix("+F")?;
    let pattern = with_fence.text(p::PATTERN);
    let without = rows
        .iter()
        .find(|o| o.text(p::OPTION) == Some(bare) && o.text(p::PATTERN) == pattern)?;
    let (f, x) = (
        with_fence.summary.as_ref()?.p50,
        without.summary.as_ref()?.p50,
    );
    if f <= 0.0 || x <= 0.0 {
        return None;
    }
    let threads = with_fence.count(p::THREADS).unwrap_or(1).max(1) as f64;
    // One thread's block of 64 B takes threads * 64 B / (GB/s) ns.
    let ns = |gbs: f64| threads * 64.0 / gbs;
    Some(FenceCost {
        ratio: f / x,
        ns_per_block: ns(f) - ns(x),
    })
}

impl std::fmt::Display for FenceCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:+.0}%, {:+.1} ns/block",
            100.0 * (self.ratio - 1.0),
            self.ns_per_block
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::Summary;

    fn rec(option: &str, pattern: &str, gbs: f64) -> Record {
        let mut r = Record::new("sync", vec![], Default::default())
            .param(p::OPTION, option)
            .param(p::PATTERN, pattern)
            .param(p::THREADS, 2);
        r.summary = Summary::of(&[gbs]);
        r
    }

    #[test]
    fn the_plus_f_option_against_the_same_option_without_the_fence() {
        let x = rec("store clwb", "seq", 8.0);
        let xf = rec("store clwb+F", "seq", 4.0);
        let other = rec("store clwb", "rand", 2.0);
        let rows = vec![&other, &x, &xf];
        // 2 threads: a block takes 16 ns without the fence, 32 ns with it.
        let c = fence_cost(&rows, &xf).unwrap();
        assert_eq!(
            c,
            FenceCost {
                ratio: 0.5,
                ns_per_block: 16.0
            }
        );
        assert_eq!(c.to_string(), "-50%, +16.0 ns/block");
        assert_eq!(fence_cost(&rows, &x), None, "not a +F option");
        assert_eq!(fence_cost(&[&xf], &xf), None, "no bare row");
    }
}
