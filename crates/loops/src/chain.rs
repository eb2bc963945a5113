//! Pointer chains for dependent-load latency (multichase's `permutation`, rebuilt).
//!
//! The working set is cut into `n` elements of `element` bytes. Each element holds one
//! pointer, at a *slot* offset inside it, to the slot of the next element in the visiting
//! order; chasing the chain makes every load wait for the previous one.
//!
//! ```text
//!   element 0          element 1          element 2          element 3
//!  |....[*]....|      |[*]........|      |......[*].|      |..[*]......|
//!        └──────────────────────────────────┘  │  ▲              │
//!                       ▲                      └──┼──────────────┘
//!                       └─────── (one cycle through all n) ──────┘
//! ```
//!
//! Orders:
//! * `random` — one uniformly random cycle through all elements (optionally inside groups
//!   of `tlb_window` pages, the groups themselves in random order, so TLB misses can be
//!   separated from media latency);
//! * `sequential` — element i → i+1 (the stride is the element size: 64 B, or 256 B to see
//!   Optane's XPLine);
//! * `random-in-page` — pages in address order, random order inside each 4 KiB page: every
//!   page is entered once, so TLB cost is paid once per page, not per load.
//!
//! The **mixer** spreads slot offsets evenly over the 8-byte positions of an element (a
//! shuffled, balanced assignment), so no chain favours one offset within a stride (one
//! cache set, one bank, one line of an XPLine).

use crate::Region;
use crate::rng::{Permutation, SplitMix64};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The visiting order of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// One random cycle through every element.
    Random,
    /// Fixed stride in address order.
    Sequential,
    /// Pages in order, random order inside each page.
    RandomInPage,
}

impl Order {
    /// The name the CLI accepts.
    pub fn name(self) -> &'static str {
        match self {
            Order::Random => "random",
            Order::Sequential => "sequential",
            Order::RandomInPage => "random-in-page",
        }
    }
}

impl Order {
    /// The record's name of this order (`seq`, `rand`, `random-in-page`: the one spelling
    /// every experiment uses).
    pub fn pattern(self) -> pmscope_core::vocab::Pattern {
        use pmscope_core::vocab::Pattern;
        match self {
            Order::Random => Pattern::Rand,
            Order::Sequential => Pattern::Seq,
            Order::RandomInPage => Pattern::RandomInPage,
        }
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Order {
    type Err = String;
    fn from_str(s: &str) -> Result<Order, String> {
        [Order::Random, Order::Sequential, Order::RandomInPage]
            .into_iter()
            .find(|o| o.name() == s || o.pattern().name() == s)
            .ok_or_else(|| {
                format!("'{s}' is not a chain pattern: use rand (random), seq (sequential) or random-in-page")
            })
    }
}

/// How to build a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainSpec {
    /// Visiting order.
    pub order: Order,
    /// Element size in bytes: a power of two, at least 8 (64 by default; 256 for XPLines).
    pub element: usize,
    /// For `random`: shuffle only inside groups of this many 4 KiB pages (groups in random
    /// order). `None`: one random cycle over everything.
    pub tlb_window_pages: Option<usize>,
    /// Spread slot offsets over the element (the mixer). Off: every slot at offset 0.
    pub mix: bool,
    /// Seed of the random order and the mixer.
    pub seed: u64,
}

impl Default for ChainSpec {
    fn default() -> Self {
        ChainSpec {
            order: Order::Random,
            element: 64,
            tlb_window_pages: None,
            mix: true,
            seed: 0x5EED,
        }
    }
}

/// Why a chain cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// Element size unusable.
    #[error("element size {0} must be a power of two of at least 8 bytes")]
    Element(usize),
    /// Too few elements for a chain.
    #[error("a working set of {ws} bytes holds fewer than 2 elements of {element} bytes")]
    TooSmall {
        /// Working set.
        ws: usize,
        /// Element size.
        element: usize,
    },
    /// SIGINT or SIGTERM arrived while the chain was being written: it is incomplete.
    #[error("interrupted while the chain was written")]
    Interrupted,
}

/// A chain written into a region: where it starts and how long its cycle is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    /// Address of the first slot.
    pub start: *const usize,
    /// Elements in the cycle.
    pub elements: usize,
}

const PAGE: usize = 4096;

/// The visiting order as element indices (a permutation of `0..n`).
pub fn visiting_order(spec: &ChainSpec, n: usize) -> Vec<u32> {
    assert!(
        n <= u32::MAX as usize,
        "chains are limited to 2^32 elements"
    );
    let mut rng = SplitMix64::new(spec.seed);
    let mut seq: Vec<u32> = (0..n as u32).collect();
    let per_page = (PAGE / spec.element).max(1);
    match spec.order {
        Order::Sequential => {}
        Order::Random => match spec.tlb_window_pages {
            None => rng.shuffle(&mut seq),
            Some(w) => {
                let group = (w.max(1) * per_page).min(n);
                let mut groups: Vec<&mut [u32]> = seq.chunks_mut(group).collect();
                for g in groups.iter_mut() {
                    rng.shuffle(g);
                }
                let mut order: Vec<usize> = (0..groups.len()).collect();
                rng.shuffle(&mut order);
                let flat: Vec<u32> = order
                    .iter()
                    .flat_map(|&g| groups[g].iter().copied())
                    .collect();
                seq = flat;
            }
        },
        Order::RandomInPage => {
            for page in seq.chunks_mut(per_page) {
                rng.shuffle(page);
            }
        }
    }
    seq
}

/// Slot offsets (bytes) inside each element: balanced over the element's 8-byte positions
/// and shuffled, or all zero without the mixer.
fn slot_offsets(spec: &ChainSpec, n: usize) -> Vec<u16> {
    let positions = spec.element / 8;
    if !spec.mix || positions == 1 {
        return vec![0; n];
    }
    let mut v: Vec<u16> = (0..n).map(|i| ((i % positions) * 8) as u16).collect();
    SplitMix64::new(spec.seed ^ 0x00C0_FFEE).shuffle(&mut v);
    v
}

/// Writes a chain over the first `ws` bytes of `region`.
pub fn build(region: &mut Region<'_>, ws: usize, spec: &ChainSpec) -> Result<Chain, ChainError> {
    if !spec.element.is_power_of_two() || spec.element < 8 {
        return Err(ChainError::Element(spec.element));
    }
    let ws = ws.min(region.len());
    let n = ws / spec.element;
    if n < 2 {
        return Err(ChainError::TooSmall {
            ws,
            element: spec.element,
        });
    }
    let base = region.as_ptr() as usize;
    if spec.order == Order::Random && spec.tlb_window_pages.is_none() {
        // One random cycle, its order and its slot offsets computed as they are written.
        let cycle = RandomCycle::new(spec, n, base);
        let n64 = n as u64;
        let start = cycle.slot_at(0);
        let words = region.atomic_words();
        // The cycle's links, cut into one range per thread (up to 4): each writes the
        // words of its own elements (the order is a permutation, so no word is written
        // twice). Building a chain is not timed, and a 1 GiB one, one random store per
        // element, took 2.2 s on one thread.
        let threads = if n64 < 1 << 20 {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |t| t.get().min(4)) as u64
        };
        let part = n64.div_ceil(threads);
        let whole = std::thread::scope(|s| {
            let linking: Vec<_> = (0..threads)
                .map(|t| {
                    let (first, last) = (t * part, ((t + 1) * part).min(n64));
                    let cycle = &cycle;
                    s.spawn(move || {
                        link(words, base, first, last, n64, start, |k| cycle.slot_at(k))
                    })
                })
                .collect();
            linking
                .into_iter()
                .all(|h| h.join().expect("a linking thread panicked"))
        });
        if !whole {
            return Err(ChainError::Interrupted);
        }
        return Ok(Chain {
            start: start as *const usize,
            elements: n,
        });
    }
    let seq = visiting_order(spec, n);
    let offsets = slot_offsets(spec, n);
    let words = region.words();
    let slot = |e: u32| base + e as usize * spec.element + offsets[e as usize] as usize;
    for j in 0..n {
        if j % LINK_CHUNK as usize == 0 && stop_asked() {
            return Err(ChainError::Interrupted);
        }
        let from = slot(seq[j]);
        let to = slot(seq[(j + 1) % n]);
        words[(from - base) / 8] = to;
    }
    Ok(Chain {
        start: slot(seq[0]) as *const usize,
        elements: n,
    })
}

/// The one random cycle of `random` without a TLB window: the element at each position
/// of the visiting order and its slot, computed in O(1) (a bijection, not a shuffled
/// list), so a 1 GiB chain is written without a 16 Mi-entry order in memory.
struct RandomCycle {
    order: Permutation,
    mixer: Permutation,
    base: usize,
    element: usize,
    positions: u64,
}

impl RandomCycle {
    fn new(spec: &ChainSpec, n: usize, base: usize) -> RandomCycle {
        RandomCycle {
            order: Permutation::new(n as u64, spec.seed),
            mixer: Permutation::new(n as u64, spec.seed ^ 0x00C0_FFEE),
            base,
            element: spec.element,
            positions: if spec.mix {
                (spec.element / 8) as u64
            } else {
                1
            },
        }
    }

    /// The address of the slot at position `k` of the cycle.
    fn slot_at(&self, k: u64) -> usize {
        let e = self.order.at(k);
        let at = if self.positions > 1 {
            (self.mixer.at(e) % self.positions) * 8
        } else {
            0
        };
        self.base + e as usize * self.element + at as usize
    }
}

/// The slots at `count` positions spread evenly along the cycle that [`build`] writes with
/// the same region, working set and spec, from position `from` (0 is the chain's start):
/// position `from + j · n / count` (mod n) for j = 0, 1, ... Chasing from all of them at
/// once, in lockstep, follows `count` stretches of one cycle that never meet:
/// independent loads for memory-level parallelism.
pub fn spread_slots(
    region: &Region<'_>,
    ws: usize,
    spec: &ChainSpec,
    count: usize,
    from: u64,
) -> Vec<*const usize> {
    let n = ws.min(region.len()) / spec.element.max(8);
    let base = region.as_ptr() as usize;
    let count = count.clamp(1, n.max(1));
    let at = |j: usize| ((from as u128 + j as u128 * n as u128 / count as u128) % n as u128) as u64;
    if spec.order == Order::Random && spec.tlb_window_pages.is_none() {
        let cycle = RandomCycle::new(spec, n, base);
        return (0..count)
            .map(|j| cycle.slot_at(at(j)) as *const usize)
            .collect();
    }
    let seq = visiting_order(spec, n);
    let offsets = slot_offsets(spec, n);
    (0..count)
        .map(|j| {
            let e = seq[at(j) as usize] as usize;
            (base + e * spec.element + offsets[e] as usize) as *const usize
        })
        .collect()
}

/// Writes the links from position `first` to `last` of a cycle of `n` (position n is the
/// start again): the word of the slot at each position points at the slot of the next. In
/// chunks: the slots of a chunk are computed first (arithmetic only), then written (one
/// random store each, a cache and TLB miss): mixed in one loop, the arithmetic fills the
/// reorder window and the stores' misses wait on one another (5.0 s for 1 GiB on one
/// thread, against 2.2 s in chunks). A chunk is about 2 ms: the signal flag is polled
/// before each, so a 1 GiB chain (seconds to write) stops within one; false when it
/// stopped, the links unfinished.
fn link(
    words: &[std::sync::atomic::AtomicUsize],
    base: usize,
    first: u64,
    last: u64,
    n: u64,
    start: usize,
    slot_at: impl Fn(u64) -> usize,
) -> bool {
    let mut slots = Vec::with_capacity(LINK_CHUNK as usize + 1);
    let mut j = first;
    while j < last {
        if stop_asked() {
            return false;
        }
        let end = (j + LINK_CHUNK).min(last);
        slots.clear();
        slots.extend((j..=end).map(|k| if k == n { start } else { slot_at(k) }));
        for w in slots.windows(2) {
            words[(w[0] - base) / 8].store(w[1], std::sync::atomic::Ordering::Relaxed);
        }
        j = end;
    }
    true
}

/// Links written between two polls of the signal flag.
const LINK_CHUNK: u64 = 1 << 14;

/// Whether SIGINT or SIGTERM has arrived (the binary installs the handler; without it,
/// never).
fn stop_asked() -> bool {
    pmscope_sys::signal::received().is_some()
}

/// Follows a chain through `region` and checks it is one cycle visiting every element of
/// the first `chain.elements * element` bytes exactly once, each at a slot inside its
/// element. Returns the slot offsets seen, by element, for stride checks.
pub fn check(region: &mut Region<'_>, chain: &Chain, element: usize) -> Result<Vec<usize>, String> {
    let base = region.as_ptr() as usize;
    let words = region.words();
    let n = chain.elements;
    let mut seen = vec![false; n];
    let mut offsets = vec![0usize; n];
    let mut p = chain.start as usize;
    for step in 0..n {
        let off = p
            .checked_sub(base)
            .ok_or(format!("step {step}: pointer below the region"))?;
        let e = off / element;
        if e >= n {
            return Err(format!("step {step}: pointer beyond the working set"));
        }
        if off % 8 != 0 {
            return Err(format!("step {step}: misaligned slot"));
        }
        if seen[e] {
            return Err(format!("element {e} visited twice (step {step})"));
        }
        seen[e] = true;
        offsets[e] = off % element;
        p = words[off / 8];
    }
    if p != chain.start as usize {
        return Err("the chain does not return to its start after n loads".into());
    }
    Ok(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[repr(align(64))]
    struct Buf([u8; 1 << 16]);

    fn buf() -> Box<Buf> {
        Box::new(Buf([0; 1 << 16]))
    }

    #[test]
    fn every_order_is_one_cycle_over_every_element() {
        for order in [Order::Random, Order::Sequential, Order::RandomInPage] {
            for element in [8, 64, 256, 4096] {
                for window in [None, Some(2)] {
                    let mut b = buf();
                    let mut r = Region::from_slice(&mut b.0);
                    let spec = ChainSpec {
                        order,
                        element,
                        tlb_window_pages: window,
                        ..ChainSpec::default()
                    };
                    let c = build(&mut r, 1 << 16, &spec).unwrap();
                    assert_eq!(c.elements, (1 << 16) / element);
                    check(&mut r, &c, element).unwrap_or_else(|e| panic!("{order} {element}: {e}"));
                }
            }
        }
    }

    /// A chain long enough to be linked by several threads is still one cycle over every
    /// element, each at a slot of its element.
    #[test]
    fn a_chain_linked_by_several_threads_is_one_cycle() {
        let len = (1usize << 20) * 64 + (5 << 12);
        let mut v = vec![0u8; len + 64];
        let off = v.as_ptr().align_offset(64);
        let mut r = Region::from_slice(&mut v[off..off + len]);
        let c = build(&mut r, len, &ChainSpec::default()).unwrap();
        assert_eq!(c.elements, len / 64);
        check(&mut r, &c, 64).unwrap();
    }

    #[test]
    fn sequential_strides_by_the_element() {
        let mut b = buf();
        let mut r = Region::from_slice(&mut b.0);
        let spec = ChainSpec {
            order: Order::Sequential,
            element: 256,
            mix: false,
            ..ChainSpec::default()
        };
        let c = build(&mut r, 1 << 16, &spec).unwrap();
        let base = r.as_ptr() as usize;
        let words = r.words();
        let mut p = c.start as usize;
        for i in 0..c.elements {
            assert_eq!(p - base, i * 256);
            p = words[(p - base) / 8];
        }
    }

    #[test]
    fn mixer_balances_slot_offsets() {
        let mut b = buf();
        let mut r = Region::from_slice(&mut b.0);
        let spec = ChainSpec::default(); // 64-byte elements: 8 slot positions
        let c = build(&mut r, 1 << 16, &spec).unwrap();
        let offsets = check(&mut r, &c, 64).unwrap();
        let mut count = [0usize; 8];
        for o in offsets {
            count[o / 8] += 1;
        }
        assert!(count.iter().all(|&k| k == 1024 / 8), "{count:?}");
    }

    #[test]
    fn random_in_page_stays_in_each_page_in_turn() {
        let seq = visiting_order(
            &ChainSpec {
                order: Order::RandomInPage,
                ..ChainSpec::default()
            },
            256,
        );
        for (j, e) in seq.iter().enumerate() {
            assert_eq!(*e as usize / 64, j / 64, "element {e} at step {j}");
        }
        assert_ne!(seq, (0..256).collect::<Vec<u32>>());
    }

    #[test]
    fn tlb_window_keeps_groups_together() {
        let spec = ChainSpec {
            tlb_window_pages: Some(2),
            ..ChainSpec::default()
        };
        let seq = visiting_order(&spec, 1024); // 128 elements per 2-page group
        for chunk in seq.chunks(128) {
            let g = chunk[0] / 128;
            assert!(chunk.iter().all(|e| e / 128 == g));
        }
    }

    #[test]
    fn bad_specs() {
        let mut b = buf();
        let mut r = Region::from_slice(&mut b.0);
        let bad = ChainSpec {
            element: 48,
            ..ChainSpec::default()
        };
        assert_eq!(build(&mut r, 4096, &bad), Err(ChainError::Element(48)));
        assert!(matches!(
            build(&mut r, 64, &ChainSpec::default()),
            Err(ChainError::TooSmall { .. })
        ));
        assert_eq!("random-in-page".parse::<Order>(), Ok(Order::RandomInPage));
        assert!("zigzag".parse::<Order>().is_err());
    }

    proptest! {
        #[test]
        fn random_chains_are_single_cycles(seed in any::<u64>(), n in 2usize..2000) {
            let spec = ChainSpec { seed, ..ChainSpec::default() };
            let seq = visiting_order(&spec, n);
            let mut sorted = seq.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
        }
    }
}
