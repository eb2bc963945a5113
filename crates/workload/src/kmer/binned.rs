//! Counting by minimizer bins, KMC's method (`kmer ... --method binned`).
//!
//! The one-table method inserts every k-mer into a table as large as the k-mer set: each
//! insert is a random cache miss, and on a fresh or virtual machine the table's first touch
//! alone costs seconds. Here the genomes are first split into *super-k-mers* (runs of
//! consecutive k-mers whose minimizers fall into one bin), and each bin is then counted on
//! its own, in a table small enough for the core's L2 cache:
//!
//! ```text
//!  genomes ──split: minimizer = smallest hash of the canonical m-mers; bin = a second
//!     hash of it──▶ per worker and bin: super-k-mers (genome, start, k-mers) in genome order
//!  bins ──count: a worker takes a bin (largest first), expands its super-k-mers from the
//!     genome text into its table on the target (a few hundred KiB): the inserted genomes'
//!     k-mers counted, then the looked-up genomes' marking theirs──▶ scan: histogram (and
//!     the kept k-mers); the scan clears the table for the next bin
//! ```
//!
//! Why a bin can be counted alone: a k-mer's bin depends only on the set of its canonical
//! m-mers, which it shares with its reverse complement, so every occurrence of a canonical
//! k-mer, in any genome and on either strand, lands in the same bin. Each worker takes the
//! pieces of the genomes in order, so its lists are in genome order, and a bin's lists are
//! merged by genome: the bin's table sees genome 1's k-mers, then genome 2's, ..., and
//! counts each genome once per k-mer with one "last genome" field, as the one-table
//! method's contract has it.
//!
//! A super-k-mer is a reference into the genome text, not a copy: 8 bytes for a run of up
//! to 255 k-mers (about (k − m + 2) / 2 of them on average: 9 at k = 31, 44 at k = 100).

use super::encode::{BASE_CODE, Kmer, Roller};
use super::packed::{PackedGenome, code_at};
use super::table::Entry;
use pmscope_core::record::ThreadPlacement;
use pmscope_runner::pin::PinError;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bases of the m-mers whose smallest hash is a k-mer's minimizer (KMC's signatures are
/// 7 to 11 bases; hashed 15-mers spread bins more evenly, and the window rescans stay rare).
pub const MINIMIZER_BASES: usize = 15;
/// The longest super-k-mer, in k-mers (the width of its length field).
pub const MAX_RUN: usize = 255;
/// The load a bin's table is sized for, and the load at which it doubles.
const LOAD: f64 = 0.7;
const GROW_AT: f64 = 0.85;
/// The most k-mer starts per piece of work in the split. A genome is split into pieces so
/// that one large genome still keeps every worker busy: about 16 pieces per worker, so
/// small jobs (and the tests) cut their genomes too.
const PIECE: usize = 1 << 20;

const RUN_BITS: u32 = 8;
const START_BITS: u32 = 36;
/// The most genomes a binned job counts (the width of the genome field).
pub const MAX_GENOMES: usize = (1 << (64 - START_BITS - RUN_BITS)) - 1;
/// The longest genome, in bases (the width of the start field).
pub const MAX_GENOME_BASES: usize = 1 << START_BITS;

/// A super-k-mer: `run` consecutive k-mers of genome `genome` (its index among the
/// inputs), the first starting at base `start` of its sequence, packed in a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuperKmer(u64);

impl SuperKmer {
    pub(super) fn new(genome: usize, start: usize, run: usize) -> SuperKmer {
        debug_assert!(genome <= MAX_GENOMES && start < MAX_GENOME_BASES);
        debug_assert!((1..=MAX_RUN).contains(&run));
        SuperKmer(
            ((genome as u64) << (START_BITS + RUN_BITS))
                | ((start as u64) << RUN_BITS)
                | run as u64,
        )
    }

    /// The genome's index among the inputs.
    pub fn genome(self) -> usize {
        (self.0 >> (START_BITS + RUN_BITS)) as usize
    }

    /// The first base of the first k-mer.
    pub fn start(self) -> usize {
        ((self.0 >> RUN_BITS) & ((1 << START_BITS) - 1)) as usize
    }

    /// k-mers in the run.
    pub fn run(self) -> usize {
        (self.0 & ((1 << RUN_BITS) - 1)) as usize
    }
}

/// The splitmix64 finaliser: every bit of a canonical m-mer moves every bit of its hash,
/// so minimizers are not biased to low-complexity m-mers (poly-A) as lexicographic ones are.
#[inline(always)]
fn mix(x: u64) -> u64 {
    let mut h = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// The bin of a minimizer's hash.
#[inline(always)]
fn bin_of(min_hash: u64, bins: usize) -> usize {
    ((mix(min_hash) as u128 * bins as u128) >> 64) as usize
}

/// Calls `emit(start, run, bin)` for every super-k-mer of `seq`: each maximal run of up to
/// [`MAX_RUN`] consecutive k-mers made of A, C, G, T only whose minimizers fall in one of
/// `bins` bins; `start` is the index of the run's first base in `seq`. Every such k-mer is
/// in exactly one run, in order.
pub fn super_kmers(
    seq: &[u8],
    k: usize,
    m: usize,
    bins: usize,
    mut emit: impl FnMut(usize, usize, usize),
) {
    debug_assert!((1..=k).contains(&m) && m <= 32 && k - m < 128);
    let w = k - m + 1;
    let mask = if m == 32 {
        u64::MAX
    } else {
        (1u64 << (2 * m)) - 1
    };
    let top = 2 * (m - 1) as u32;
    // The hashes of the last m-mers, by start position modulo 128 (a window holds w ≤ 128).
    let mut ring = [0u64; 128];
    let (mut fwd, mut rev, mut valid) = (0u64, 0u64, 0usize);
    let (mut min_hash, mut min_pos) = (u64::MAX, 0usize);
    let (mut run_start, mut run_len, mut run_bin) = (0usize, 0usize, usize::MAX);
    // The bin of the last minimizer seen, computed again only when the minimizer changes.
    let (mut binned_hash, mut bin) = (u64::MAX, bin_of(u64::MAX, bins));
    for (i, &b) in seq.iter().enumerate() {
        let code = BASE_CODE[b as usize];
        if code > 3 {
            if run_len > 0 {
                emit(run_start, run_len, run_bin);
                run_len = 0;
            }
            valid = 0;
            continue;
        }
        fwd = ((fwd << 2) | code as u64) & mask;
        rev = (rev >> 2) | ((3 - code) as u64) << top;
        valid += 1;
        if valid < m {
            continue;
        }
        let pos = i + 1 - m;
        let h = mix(fwd.min(rev));
        ring[pos & 127] = h;
        if valid == m || h < min_hash {
            (min_hash, min_pos) = (h, pos);
        }
        if valid < k {
            continue;
        }
        let start = i + 1 - k;
        if min_pos < start {
            // The minimizer left the window: find the smallest of the w m-mers in it.
            min_hash = u64::MAX;
            for p in start..start + w {
                let hp = ring[p & 127];
                if hp < min_hash {
                    (min_hash, min_pos) = (hp, p);
                }
            }
        }
        if min_hash != binned_hash {
            // The smallest of w hashes is far from uniform (it sits near 0), so the bin
            // comes from a second hash of it: uniform over the distinct minimizers.
            (binned_hash, bin) = (min_hash, bin_of(min_hash, bins));
        }
        if bin == run_bin && run_len > 0 && run_len < MAX_RUN {
            run_len += 1;
        } else {
            if run_len > 0 {
                emit(run_start, run_len, run_bin);
            }
            (run_start, run_len, run_bin) = (start, 1, bin);
        }
    }
    if run_len > 0 {
        emit(run_start, run_len, run_bin);
    }
}

/// Bins for `total_kmers` k-mers of `slot_bytes` slots: each bin's table, were all its
/// k-mers distinct, fills half of `cache_bytes` (the core's L2) at [`LOAD`]; at least four
/// bins per worker, so the largest-first order balances them.
pub fn bins_for(total_kmers: u64, slot_bytes: usize, cache_bytes: u64, workers: usize) -> usize {
    let per_bin = ((cache_bytes / 2) as f64 / slot_bytes as f64 * LOAD).max(64.0);
    ((total_kmers as f64 / per_bin).ceil() as usize).clamp(4 * workers.max(1), 1 << 16)
}

/// The genomes split into super-k-mers by bin.
pub struct Bins {
    /// Bins.
    pub count: usize,
    /// Minimizer length.
    pub m: usize,
    /// Genomes whose k-mers are inserted (the first ones); the others' are looked up.
    pub inserted: usize,
    /// `lists[worker][bin]`: that worker's super-k-mers of that bin, in genome order.
    lists: Vec<Vec<Vec<SuperKmer>>>,
    /// k-mers (with repeats) of the inserted genomes in each bin: what sizes its table.
    pub kmers: Vec<u64>,
}

impl Bins {
    /// Bins of one list each (the out-of-core count's bins of one partition).
    pub(super) fn of_lists(
        m: usize,
        inserted: usize,
        lists: Vec<Vec<SuperKmer>>,
        kmers: Vec<u64>,
    ) -> Bins {
        Bins {
            count: lists.len(),
            m,
            inserted,
            lists: vec![lists],
            kmers,
        }
    }

    /// Super-k-mers in all bins.
    pub fn super_kmers(&self) -> u64 {
        self.lists.iter().flatten().map(|l| l.len() as u64).sum()
    }

    /// Inserted k-mers (with repeats) of the largest bin.
    pub fn largest(&self) -> u64 {
        self.kmers.iter().copied().max().unwrap_or(0)
    }
}

/// A piece of a genome: its k-mers starting at bases `from..from + starts`.
#[derive(Clone, Copy)]
struct Piece {
    genome: usize,
    from: usize,
    starts: usize,
}

/// Splits `genomes` into super-k-mers in `bins` bins, the pieces of their segments shared
/// out among the workers in genome order; the first `inserted` genomes are the ones counted.
pub fn split(
    workers: &super::build::Workers,
    genomes: &[PackedGenome],
    inserted: usize,
    k: usize,
    bins: usize,
) -> Result<(Bins, Vec<ThreadPlacement>), PinError> {
    let m = MINIMIZER_BASES.min(k);
    let kmers: u64 = genomes.iter().map(|g| g.stats.kmers).sum();
    let piece = ((kmers / (16 * workers.len() as u64)) as usize).clamp(1, PIECE);
    let mut pieces = Vec::new();
    for (gi, g) in genomes.iter().enumerate() {
        for &(start, end) in &g.segments {
            let windows = end - start + 1 - k;
            for a in (0..windows).step_by(piece) {
                pieces.push(Piece {
                    genome: gi,
                    from: start + a,
                    starts: piece.min(windows - a),
                });
            }
        }
    }
    let next = AtomicUsize::new(0);
    // A new minimizer every (w + 1) / 2 k-mers on average: room for that many runs, a
    // quarter more, so the lists are rarely copied as they grow.
    let runs = kmers as f64 * 2.0 / (k - m + 2) as f64;
    let room = (runs * 1.25 / (bins * workers.len()) as f64) as usize + 16;
    let (parts, placements) = workers.run(|_| {
        let mut lists: Vec<Vec<SuperKmer>> = (0..bins).map(|_| Vec::with_capacity(room)).collect();
        let mut kmers = vec![0u64; bins];
        // A piece's bases unpacked, for the minimizer scan (a piece is a segment's part: all
        // A, C, G, T).
        let mut seq: Vec<u8> = Vec::new();
        loop {
            // A piece is at most a few milliseconds of work: a signal stops the split
            // within one, and the job's check after the split turns it into the error.
            if pmscope_sys::signal::received().is_some() {
                break;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(p) = pieces.get(i) else { break };
            let g = &genomes[p.genome];
            seq.clear();
            seq.extend((p.from..p.from + p.starts + k - 1).map(|i| b"ACGT"[g.code(i) as usize]));
            let counted = (p.genome < inserted) as u64;
            super_kmers(&seq, k, m, bins, |start, run, bin| {
                lists[bin].push(SuperKmer::new(p.genome, p.from + start, run));
                kmers[bin] += counted * run as u64;
            });
        }
        (lists, kmers)
    })?;
    let mut total = vec![0u64; bins];
    let mut lists = Vec::with_capacity(parts.len());
    for (l, n) in parts {
        for (t, x) in total.iter_mut().zip(n) {
            *t += x;
        }
        lists.push(l);
    }
    Ok((
        Bins {
            count: bins,
            m,
            inserted,
            lists,
            kmers: total,
        },
        placements,
    ))
}

/// The genomes' 2-bit texts moved back to back into one mapping with 2 MiB pages: a bin's
/// super-k-mers start anywhere in the genomes, and with 4 KiB pages nearly each one's
/// text costs a TLB miss (a third of the count's time at k = 31) that its prefetch cannot
/// hide. Each genome's own text is freed as it is copied, so the two are not both whole.
pub struct Text {
    mapping: pmscope_mapping::Mapping,
    /// Where each genome starts in it, in words (and, last, the end).
    starts: Vec<usize>,
}

impl Text {
    /// Moves the texts of `genomes` into a `dram:thp` mapping.
    pub fn of(
        genomes: &mut [PackedGenome],
        opts: &pmscope_mapping::MapOptions,
    ) -> Result<Text, pmscope_mapping::TargetError> {
        let mut starts = vec![0usize];
        for g in genomes.iter() {
            starts.push(starts.last().unwrap() + g.words.len());
        }
        let spec: pmscope_mapping::TargetSpec = "dram:thp".parse().expect("a valid spec");
        let total = ((*starts.last().unwrap()).max(1) * 8) as u64;
        let mut mapping = pmscope_mapping::map_chosen(&spec, total, opts)?;
        let words = mapping.slice_mut::<u64>()?;
        for (g, &at) in genomes.iter_mut().zip(&starts) {
            let text = std::mem::take(&mut g.words);
            words[at..at + text.len()].copy_from_slice(&text);
        }
        Ok(Text { mapping, starts })
    }

    /// Each genome's text, in input order.
    pub fn genomes(&mut self) -> Vec<&[u64]> {
        let words: &[u64] = self
            .mapping
            .slice_mut::<u64>()
            .expect("a fresh mapping is aligned for words");
        self.starts.windows(2).map(|w| &words[w[0]..w[1]]).collect()
    }
}

/// Words of a slot of a bin table: the key, then `count | MARK | last genome << 32` (0:
/// empty).
pub const fn slot_words<const W: usize>() -> usize {
    W + 1
}

/// The mark a looked-up k-mer leaves in its slot (the top bit of the count, which counts at
/// most [`MAX_GENOMES`]). Marks come after every insert of the bin (genome order), so a
/// count never runs into it.
const MARK: u64 = 1 << 31;

/// Slots a worker's table needs for the largest bin of `bins`: every k-mer distinct, at
/// [`LOAD`], a power of two.
pub fn table_slots(bins: &Bins) -> usize {
    slots_for(bins.largest())
}

/// Slots a table needs for `kmers` k-mers, every one distinct, at [`LOAD`], a power of two.
pub fn slots_for(kmers: u64) -> usize {
    ((kmers as f64 / LOAD).ceil() as usize)
        .next_power_of_two()
        .max(64)
}

/// One worker's bin table: linear probing over a power of two of slots at the start of
/// `words` (its mapping on the target), single-threaded, cleared by the scan that reads it.
struct BinTable<'a, const W: usize> {
    words: &'a mut [u64],
    bits: u32,
    /// The k-mers at which it doubles ([`GROW_AT`] of its slots).
    limit: usize,
    len: usize,
    grown: u32,
    spill: Vec<u64>,
}

impl<'a, const W: usize> BinTable<'a, W> {
    const S: usize = W + 1;

    fn new(words: &'a mut [u64]) -> Self {
        BinTable {
            words,
            bits: 6,
            limit: (64.0 * GROW_AT) as usize,
            len: 0,
            grown: 0,
            spill: Vec::new(),
        }
    }

    fn max_slots(&self) -> usize {
        let slots = self.words.len() / Self::S;
        1 << slots.ilog2()
    }

    fn slots(&self) -> usize {
        1 << self.bits
    }

    /// Sizes the (empty) table for about `expected` distinct k-mers.
    fn size_for(&mut self, expected: f64) {
        debug_assert_eq!(self.len, 0);
        let want = ((expected / LOAD).ceil() as usize).next_power_of_two();
        self.resize(want.clamp(64, self.max_slots()).ilog2());
    }

    fn resize(&mut self, bits: u32) {
        self.bits = bits;
        self.limit = ((1usize << bits) as f64 * GROW_AT) as usize;
    }

    /// The first slot to probe for a k-mer of hash `hash`.
    #[inline(always)]
    fn slot_of(&self, hash: u64) -> usize {
        (hash >> (64 - self.bits)) as usize
    }

    /// Starts loading the line of the first slot for `hash` (an L2 hit costs more than the
    /// work between two inserts).
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        pmscope_sys::prefetch::prefetch(&self.words[self.slot_of(hash) * Self::S]);
    }

    /// Counts genome `genome` (1, 2, ...) for `key`, once.
    #[cfg(test)]
    fn insert(&mut self, key: &Kmer<W>, genome: u32) {
        self.insert_hashed(key, key.hash(), genome)
    }

    /// [`Self::insert`] with the key's hash already computed.
    #[inline(always)]
    fn insert_hashed(&mut self, key: &Kmer<W>, hash: u64, genome: u32) {
        if self.len >= self.limit {
            self.grow();
        }
        let mask = self.slots() - 1;
        let mut i = self.slot_of(hash);
        loop {
            let slot = &mut self.words[i * Self::S..(i + 1) * Self::S];
            let meta = slot[W];
            if meta == 0 {
                slot[..W].copy_from_slice(&key.0);
                slot[W] = 1 | (genome as u64) << 32;
                self.len += 1;
                return;
            }
            if slot[..W] == key.0 {
                if (meta >> 32) as u32 != genome {
                    slot[W] = ((meta as u32 + 1) as u64) | (genome as u64) << 32;
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table and re-places its k-mers (a bin with fewer repeats than the
    /// sizing guessed); the table for the largest bin never needs to, so there is room.
    #[cold]
    fn grow(&mut self) {
        let (old, s) = (self.slots(), Self::S);
        assert!(
            2 * old <= self.max_slots(),
            "a bin table outgrew its mapping"
        );
        self.spill.clear();
        for slot in self.words[..old * s].chunks_exact_mut(s) {
            if slot[W] != 0 {
                self.spill.extend_from_slice(slot);
                slot.fill(0);
            }
        }
        self.resize(self.bits + 1);
        self.grown += 1;
        let mask = self.slots() - 1;
        for e in self.spill.chunks_exact(s) {
            let mut key = Kmer::<W>::ZERO;
            key.0.copy_from_slice(&e[..W]);
            let mut i = self.slot_of(key.hash());
            while self.words[i * s + W] != 0 {
                i = (i + 1) & mask;
            }
            self.words[i * s..(i + 1) * s].copy_from_slice(e);
        }
    }

    /// Marks `key` if it is in the table; returns whether it was.
    #[inline(always)]
    fn mark_hashed(&mut self, key: &Kmer<W>, hash: u64) -> bool {
        let mask = self.slots() - 1;
        let mut i = self.slot_of(hash);
        loop {
            let slot = &mut self.words[i * Self::S..(i + 1) * Self::S];
            if slot[W] == 0 {
                return false;
            }
            if slot[..W] == key.0 {
                slot[W] |= MARK;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// Hands every k-mer, its genome count and its mark to `f` and empties the table.
    fn drain(&mut self, mut f: impl FnMut(Kmer<W>, u32, bool)) {
        let (s, slots) = (Self::S, self.slots());
        for slot in self.words[..slots * s].chunks_exact_mut(s) {
            if slot[W] != 0 {
                let mut key = Kmer::<W>::ZERO;
                key.0.copy_from_slice(&slot[..W]);
                let meta = slot[W] as u32;
                f(key, meta & !(MARK as u32), meta & MARK as u32 != 0);
                slot.fill(0);
            }
        }
        self.len = 0;
    }
}

/// Which k-mers a count keeps besides the histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// None: the histogram only.
    Nothing,
    /// Every k-mer (count and union with `--kmers`).
    All,
    /// The k-mers of every inserted genome (intersect).
    InEvery,
    /// The k-mers no looked-up genome has (subtract).
    Unmarked,
}

impl Keep {
    fn wants(self, genomes: u32, marked: bool, inserted: usize) -> bool {
        match self {
            Keep::Nothing => false,
            Keep::All => true,
            Keep::InEvery => genomes as usize == inserted,
            Keep::Unmarked => !marked,
        }
    }
}

/// What counting the bins found.
pub struct Counted<const W: usize> {
    /// k-mers by the number of inserted genomes they occur in (index = genomes).
    pub histogram: Vec<u64>,
    /// The kept k-mers, bin by bin.
    pub kept: Vec<(Kmer<W>, Entry)>,
    /// k-mers of the looked-up genomes found in the table.
    pub hits: u64,
    /// Times a bin's table doubled.
    pub grown: u32,
    /// The bin tables' slots, summed over the bins (the load is distinct / this).
    pub slots_used: u64,
    /// Where the workers ran.
    pub placements: Vec<ThreadPlacement>,
}

/// k-mers between a prefetch of their first slot and their insert.
const RING: usize = 8;

/// The k-mers (and hashes) whose first slot was prefetched, inserted [`RING`] k-mers later.
struct Ring<const W: usize> {
    buf: [(Kmer<W>, u64); RING],
    head: usize,
    len: usize,
}

impl<const W: usize> Default for Ring<W> {
    fn default() -> Self {
        Ring {
            buf: [(Kmer::ZERO, 0); RING],
            head: 0,
            len: 0,
        }
    }
}

impl<const W: usize> Ring<W> {
    /// Adds `item`; once full, returns the oldest.
    #[inline(always)]
    fn push(&mut self, item: (Kmer<W>, u64)) -> Option<(Kmer<W>, u64)> {
        let slot = (self.head + self.len) % RING;
        if self.len < RING {
            self.buf[slot] = item;
            self.len += 1;
            return None;
        }
        let oldest = std::mem::replace(&mut self.buf[self.head], item);
        self.head = (self.head + 1) % RING;
        Some(oldest)
    }

    /// Hands out every item, oldest first.
    fn drain(&mut self, mut f: impl FnMut((Kmer<W>, u64))) {
        for i in 0..self.len {
            f(self.buf[(self.head + i) % RING]);
        }
        (self.head, self.len) = (0, 0);
    }
}

/// Super-k-mers ahead whose genome text is prefetched: the text of a bin's runs lies
/// anywhere in the genomes, so each run's first lines would otherwise be a cache miss.
const TEXT_AHEAD: usize = 8;

/// One worker's state across the bins it counts.
pub(super) struct Worker<'a, const W: usize> {
    table: BinTable<'a, W>,
    roller: Roller<W>,
    ring: Ring<W>,
    heads: Vec<usize>,
    histogram: Vec<u64>,
    kept: Vec<(Kmer<W>, Entry)>,
    hits: u64,
    seen_kmers: u64,
    seen_distinct: u64,
    slots_used: u64,
}

impl<'a, const W: usize> Worker<'a, W> {
    /// A worker counting in `words` (its table's mapping) the k-mers of `inserted`
    /// genomes.
    pub(super) fn new(words: &'a mut [u64], k: usize, inserted: usize) -> Self {
        Worker {
            table: BinTable::<W>::new(words),
            roller: Roller::<W>::new(k),
            ring: Ring::default(),
            heads: Vec::new(),
            histogram: vec![0u64; inserted + 1],
            kept: Vec::new(),
            hits: 0,
            seen_kmers: 0,
            seen_distinct: 0,
            slots_used: 0,
        }
    }

    /// What it counted: histogram, kept k-mers, hits, times its table grew, slots used.
    pub(super) fn finish(self) -> WorkerCounts<W> {
        (
            self.histogram,
            self.kept,
            self.hits,
            self.table.grown,
            self.slots_used,
        )
    }

    /// Counts bin `b`: the inserted genomes' k-mers into the table, genome by genome, then
    /// the looked-up genomes' k-mers mark theirs; the scan keeps what `keep` asks.
    pub(super) fn bin(&mut self, bins: &Bins, b: usize, texts: &[&[u64]], k: usize, keep: Keep) {
        let inserted = bins.inserted;
        self.heads.resize(bins.lists.len(), 0);
        // Sized from the share of distinct k-mers in the bins counted so far.
        let distinct_share = if self.seen_kmers == 0 {
            1.0
        } else {
            (self.seen_distinct as f64 / self.seen_kmers as f64 * 1.2).min(1.0)
        };
        self.table.size_for(bins.kmers[b] as f64 * distinct_share);
        self.heads.fill(0);
        // Merge the workers' lists of this bin genome by genome.
        loop {
            let genome = bins
                .lists
                .iter()
                .zip(&self.heads)
                .filter_map(|(l, &h)| l[b].get(h).map(|s| s.genome()))
                .min();
            let Some(genome) = genome else { break };
            let (table, ring, hits) = (&mut self.table, &mut self.ring, &mut self.hits);
            let apply = |table: &mut BinTable<W>, hits: &mut u64, (key, hash): (Kmer<W>, u64)| {
                if genome < inserted {
                    table.insert_hashed(&key, hash, genome as u32 + 1);
                } else if table.mark_hashed(&key, hash) {
                    *hits += 1;
                }
            };
            let seq = texts[genome];
            for (list, head) in bins.lists.iter().zip(self.heads.iter_mut()) {
                let list = &list[b];
                while let Some(&s) = list.get(*head) {
                    if s.genome() != genome {
                        break;
                    }
                    if let Some(ahead) = list.get(*head + TEXT_AHEAD) {
                        // 32 bases a word: a run's text is one or two lines.
                        let text = texts[ahead.genome()];
                        pmscope_sys::prefetch::prefetch(&text[ahead.start() >> 5]);
                        let end = ((ahead.start() + 256) >> 5).min(text.len() - 1);
                        pmscope_sys::prefetch::prefetch(&text[end]);
                    }
                    self.roller.reset();
                    for i in s.start()..s.start() + s.run() + k - 1 {
                        if self.roller.push(code_at(seq, i)) {
                            let key = self.roller.canonical().0;
                            let hash = key.hash();
                            table.prefetch(hash);
                            if let Some(item) = ring.push((key, hash)) {
                                apply(table, hits, item);
                            }
                        }
                    }
                    *head += 1;
                }
            }
            // The k-mers still in the ring are this genome's: in before the next one's.
            ring.drain(|item| apply(table, hits, item));
        }
        self.seen_kmers += bins.kmers[b];
        self.seen_distinct += self.table.len as u64;
        self.slots_used += self.table.slots() as u64;
        let (histogram, kept) = (&mut self.histogram, &mut self.kept);
        self.table.drain(|key, genomes, marked| {
            histogram[genomes as usize] += 1;
            if keep.wants(genomes, marked, inserted) {
                kept.push((key, Entry { genomes, marked }));
            }
        });
    }
}

/// Counts every bin, each worker in its own table (`tables[w]`, words of its mapping),
/// the largest bins first. `texts[g]` is genome g's 2-bit text ([`Text`]).
pub fn count<const W: usize>(
    workers: &super::build::Workers,
    bins: &Bins,
    texts: &[&[u64]],
    k: usize,
    tables: &mut [&mut [u64]],
    keep: Keep,
) -> Result<Counted<W>, PinError> {
    let n = bins.inserted;
    let mut order: Vec<usize> = (0..bins.count).filter(|&b| bins.kmers[b] > 0).collect();
    order.sort_unstable_by_key(|&b| std::cmp::Reverse(bins.kmers[b]));
    let next = AtomicUsize::new(0);
    let out = pmscope_runner::pin::run_pinned_each(workers.cpus(), tables, |_, words| {
        let mut w = Worker::<W>::new(words, k, n);
        while let Some(&b) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            // A bin's table fits in half the L2, so a bin is milliseconds: polled between
            // bins, and the job's check after the count turns a stop into the error.
            if pmscope_sys::signal::received().is_some() {
                break;
            }
            w.bin(bins, b, texts, k, keep);
        }
        w.finish()
    })?;
    Ok(merge(n, out))
}

/// What one worker counted: histogram, kept k-mers, hits, times its table grew, slots.
pub(super) type WorkerCounts<const W: usize> = (Vec<u64>, Vec<(Kmer<W>, Entry)>, u64, u32, u64);

/// The workers' counts summed, for `n` inserted genomes.
pub(super) fn merge<const W: usize>(
    n: usize,
    out: Vec<(WorkerCounts<W>, ThreadPlacement)>,
) -> Counted<W> {
    let mut counted = Counted {
        histogram: vec![0u64; n + 1],
        kept: Vec::new(),
        hits: 0,
        grown: 0,
        slots_used: 0,
        placements: Vec::new(),
    };
    for ((histogram, kept, hits, grown, slots), placement) in out {
        for (a, b) in counted.histogram.iter_mut().zip(histogram) {
            *a += b;
        }
        counted.kept.extend(kept);
        counted.hits += hits;
        counted.grown += grown;
        counted.slots_used += slots;
        counted.placements.push(placement);
    }
    counted
}

/// The size of the L2 cache of the first CPU (sysfs), or 1 MiB where sysfs does not say.
pub fn l2_bytes() -> u64 {
    pmscope_sys::cpu::caches(&pmscope_sys::sysroot::SysRoot::host(), 0)
        .iter()
        .find(|c| c.level == 2 && c.kind != "Instruction")
        .map_or(1 << 20, |c| c.size_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The 2-bit value of a k-mer's canonical form, the obvious way (m ≤ 32).
    fn canonical_value(bases: &[u8]) -> u64 {
        let code = |b: &u8| BASE_CODE[*b as usize] as u64;
        let fwd = bases.iter().fold(0, |v, b| (v << 2) | code(b));
        let rev = bases.iter().rev().fold(0, |v, b| (v << 2) | (3 - code(b)));
        fwd.min(rev)
    }

    /// A k-mer's bin, the obvious way: the second hash of the smallest hash of its
    /// canonical m-mers.
    fn reference_bin(kmer: &[u8], m: usize, bins: usize) -> usize {
        let min = kmer
            .windows(m)
            .map(|x| mix(canonical_value(x)))
            .min()
            .unwrap();
        ((mix(min) as u128 * bins as u128) >> 64) as usize
    }

    fn reverse_complement(s: &[u8]) -> Vec<u8> {
        s.iter()
            .rev()
            .map(|b| match b {
                b'A' => b'T',
                b'C' => b'G',
                b'G' => b'C',
                _ => b'A',
            })
            .collect()
    }

    fn dna(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"ACGTACGTACGTN".to_vec()), len)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Every k-mer of A, C, G, T only is in exactly one super-k-mer, in order, and
        /// that super-k-mer's bin is the k-mer's own.
        #[test]
        fn every_kmer_is_in_one_super_kmer_of_its_own_bin(
            seq in dna(0..400),
            k in 1usize..60,
            m in 1usize..16,
            bins in 1usize..40,
        ) {
            let m = m.min(k);
            let mut covered = Vec::new();
            super_kmers(&seq, k, m, bins, |start, run, bin| {
                assert!((1..=MAX_RUN).contains(&run));
                for s in start..start + run {
                    covered.push(s);
                    let kmer = &seq[s..s + k];
                    assert_eq!(bin, reference_bin(kmer, m, bins), "k-mer at {s}");
                }
            });
            let valid: Vec<usize> = (0..(seq.len() + 1).saturating_sub(k))
                .filter(|&s| !seq[s..s + k].contains(&b'N'))
                .collect();
            prop_assert_eq!(covered, valid);
        }

        /// A k-mer and its reverse complement land in one bin, so every occurrence of a
        /// canonical k-mer is counted in one table.
        #[test]
        fn a_kmer_and_its_reverse_complement_share_a_bin(
            kmer in prop::collection::vec(prop::sample::select(b"ACGT".to_vec()), 1..128),
            bins in 1usize..1000,
        ) {
            let k = kmer.len();
            let m = MINIMIZER_BASES.min(k);
            let bin_of = |s: &[u8]| {
                let mut bin = None;
                super_kmers(s, k, m, bins, |_, _, b| bin = Some(b));
                bin.unwrap()
            };
            prop_assert_eq!(bin_of(&kmer), bin_of(&reverse_complement(&kmer)));
        }
    }

    /// The bins of random DNA hold about equal shares: the minimizer's own hash would put
    /// most k-mers into the first bins (the smallest of w hashes sits near 0).
    #[test]
    fn bins_of_random_dna_are_balanced() {
        let seq = crate::kmer::synth::random_bases(1_000_000, 7);
        let bins = 64;
        let mut kmers = vec![0u64; bins];
        super_kmers(&seq, 31, MINIMIZER_BASES, bins, |_, run, bin| {
            kmers[bin] += run as u64
        });
        let mean = kmers.iter().sum::<u64>() as f64 / bins as f64;
        let largest = *kmers.iter().max().unwrap() as f64;
        assert!(
            largest < 1.5 * mean,
            "largest bin {largest} k-mers, mean {mean}"
        );
    }

    /// A table sized for too few k-mers doubles as it fills and loses no count; the scan
    /// leaves it empty for the next bin.
    #[test]
    fn a_bin_table_sized_too_small_grows_and_keeps_every_count() {
        let mut words = vec![0u64; 2 * 16384];
        let mut t = BinTable::<1>::new(&mut words);
        t.size_for(1.0);
        let key = |i: u64| Kmer::<1>([i * 0x9E37_79B9]);
        for genome in [1, 1, 2] {
            for i in 0..5000 {
                t.insert(&key(i), genome);
            }
        }
        assert!(t.grown >= 6, "grew {} times", t.grown);
        let mut seen = Vec::new();
        t.drain(|k, n, _| seen.push((k.0[0], n)));
        seen.sort_unstable();
        let want: Vec<(u64, u32)> = (0..5000).map(|i| (key(i).0[0], 2)).collect();
        assert_eq!(seen, want);
        assert_eq!(t.len, 0);
        assert!(words.iter().all(|&w| w == 0), "the scan left slots behind");
    }
}
