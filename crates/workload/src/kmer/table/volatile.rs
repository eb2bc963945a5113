//! The volatile k-mer table: concurrent open addressing with linear probing, in one
//! mapping of a pmscope target (default `dram:thp`, so the table gets 2 MiB pages and a
//! random probe costs one cache miss instead of a cache miss plus a page walk; seed 000).
//!
//! Slot layout: S = ⌈(2k + 56) / 64⌉ words of 64 bits, the key's low words first and one
//! meta word last. The meta word carries the slot's state, so one compare-and-swap claims
//! a slot, and up to 8 key bits that did not fit a whole word (k = 100 packs into exactly
//! 4 words = 32 bytes, two slots per cache line; k = 31 into 2 words = 16 bytes):
//!
//! ```text
//!  word:   0 .. S-2                       S-1 (meta)
//!        [ key bits 0..64(S-1) ]  [ READY | BUSY | MARK | tag:27 | count:26 | key:8 ]
//!                                    63     62     61    60..34    33..8      7..0
//! ```
//!
//! * empty slot: meta = 0 (fresh mappings are zero);
//! * claim: CAS meta 0 → BUSY|…, store the key words, then store READY|… (release); a
//!   reader that meets BUSY waits the few nanoseconds until READY (acquire) before it
//!   compares keys;
//! * count: `count` genomes contain the k-mer; `tag` is the last genome that counted it.
//!   Because concurrent inserts are all for one genome (the table contract), `tag ==
//!   genome` means "already counted", and a CAS that sets tag and count+1 together counts
//!   each genome exactly once.
//!
//! Chunks: a large table is split into equal mappings (high hash bits choose one) that are
//! mapped by parallel threads; see [`VolatileTable`].
//!
//! Growth: the table is sized from an estimate of the distinct k-mers; `reserve` (between
//! genomes) maps a larger table on the same target and rehashes when the next genome could
//! push the load past [`MAX_LOAD`].

use super::{
    Create, Entry, GenomeId, Inserted, KmerTable, TableError, TableFacts, TableKind, TableRequest,
};
use crate::kmer::encode::Kmer;
use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_mapping::{MapOptions, Mapping, TargetSpec};
use std::sync::atomic::{AtomicU64, Ordering};

const READY: u64 = 1 << 63;
const BUSY: u64 = 1 << 62;
const MARK: u64 = 1 << 61;
const TAG_SHIFT: u32 = 34;
const TAG_MASK: u64 = (1 << 27) - 1;
const COUNT_SHIFT: u32 = 8;
const COUNT_MASK: u64 = (1 << 26) - 1;
const KEY_IN_META: u64 = 0xff;

/// The load a new or grown table is sized for.
pub const TARGET_LOAD: f64 = 0.7;
/// The load `reserve` never lets the table exceed (linear probing slows sharply beyond).
pub const MAX_LOAD: f64 = 0.95;
/// The most genomes a table can count (the width of the tag field).
pub const MAX_GENOMES: u64 = (1 << 26) - 1;

/// Slot size in 64-bit words for k-mers of length `k`.
pub const fn slot_words(k: usize) -> usize {
    (2 * k + 56).div_ceil(64)
}

/// Chunks are at least this large: below it one mapping is mapped quickly anyway, and
/// tiny chunks could fill unevenly.
const MIN_CHUNK_BYTES: u64 = 64 << 20;

/// A concurrent open-addressing k-mer table on a mapped target.
///
/// The table is one or more equal chunks, each its own mapping of the target: the high
/// bits of a hash pick the chunk, the next bits the slot, and probing wraps inside the
/// chunk. The chunks are mapped (and so pre-faulted) by one thread each: on a fresh
/// machine, or a virtual one whose host backs memory lazily, zeroing the pages of a
/// gigabyte table takes seconds, and one thread would do it alone.
pub struct VolatileTable<const W: usize> {
    k: usize,
    spec: TargetSpec,
    opts: MapOptions,
    chunks: Vec<Mapping>,
    chunk_bits: u32,
    /// Slots per chunk (a multiple of `group`).
    chunk_slots: usize,
    /// Lines (groups of slots) per chunk: what a hash is mapped onto.
    chunk_groups: usize,
    slot_words: usize,
    /// Key words stored whole in the slot (W, or W-1 when the top one rides in the meta).
    full_words: usize,
    merged: bool,
    /// Slots per cache line: probing starts at a line boundary, so a probe sequence
    /// leaves its first line only when that line is full.
    group: usize,
    distinct: AtomicU64,
    grown: u32,
    parallel: usize,
}

impl<const W: usize> VolatileTable<W> {
    /// Maps a table for about `expected_distinct` k-mers of length `k` on `spec`, with up
    /// to `parallel` threads mapping its chunks.
    pub fn new(
        k: usize,
        spec: &TargetSpec,
        opts: &MapOptions,
        expected_distinct: u64,
        parallel: usize,
    ) -> Result<VolatileTable<W>, TableError> {
        let slots = ((expected_distinct as f64 / TARGET_LOAD).ceil() as usize).max(64);
        Self::with_slots(k, spec, opts, slots, parallel)
    }

    fn with_slots(
        k: usize,
        spec: &TargetSpec,
        opts: &MapOptions,
        slots: usize,
        parallel: usize,
    ) -> Result<VolatileTable<W>, TableError> {
        assert!(crate::kmer::encode::words_for(k) == W);
        let slot_words = slot_words(k);
        let merged = slot_words == W;
        debug_assert!(!merged || 2 * k - 64 * (W - 1) <= 8);
        let group = (8 / slot_words).max(1);
        let total_bytes = (slots * slot_words * 8) as u64;
        let mut chunk_bits = 0;
        while (1u64 << (chunk_bits + 1)) <= parallel.max(1) as u64
            && total_bytes >> (chunk_bits + 1) >= MIN_CHUNK_BYTES
        {
            chunk_bits += 1;
        }
        let chunk_slots = (slots >> chunk_bits).div_ceil(group) * group;
        let bytes = (chunk_slots * slot_words * 8) as u64;
        let mapped: Vec<Result<Mapping, pmscope_mapping::TargetError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..1usize << chunk_bits)
                .map(|_| s.spawn(|| pmscope_mapping::map_chosen(spec, bytes, opts)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a mapping thread panicked"))
                .collect()
        });
        let chunks = mapped.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(VolatileTable {
            k,
            spec: spec.clone(),
            opts: opts.clone(),
            chunks,
            chunk_bits,
            chunk_slots,
            chunk_groups: chunk_slots / group,
            slot_words,
            full_words: if merged { W - 1 } else { W },
            merged,
            group,
            distinct: AtomicU64::new(0),
            grown: 0,
            parallel,
        })
    }

    /// Bytes per slot.
    pub fn slot_bytes(&self) -> usize {
        self.slot_words * 8
    }

    /// Chunks (separate mappings).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// How often the table grew.
    pub fn times_grown(&self) -> u32 {
        self.grown
    }

    /// The target and the configuration the kernel gave it (the first chunk's; every
    /// chunk is mapped and verified alike, and [`Self::warnings`] gathers all of theirs).
    pub fn target_record(&self) -> TargetRecord {
        self.chunks[0].record()
    }

    /// Where the mappings differ from what was asked.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut out: Vec<Warning> = Vec::new();
        for w in self.chunks.iter().flat_map(|c| c.warnings()) {
            if !out.contains(w) {
                out.push(w.clone());
            }
        }
        out
    }

    /// The chunk and the first slot to probe for `hash`.
    #[inline(always)]
    fn locate(&self, hash: u64) -> (usize, usize) {
        let chunk = hash.checked_shr(64 - self.chunk_bits).unwrap_or(0) as usize;
        let rest = hash << self.chunk_bits;
        // Multiply-shift maps the hash onto any size without a division (a division per
        // probe costs more than the multiply); placement follows the hash's high bits (the
        // trait's placement contract).
        let slot = ((rest as u128 * self.chunk_groups as u128) >> 64) as usize * self.group;
        (chunk, slot)
    }

    #[inline(always)]
    fn meta_key_bits(&self, kmer: &Kmer<W>) -> u64 {
        if self.merged { kmer.0[W - 1] } else { 0 }
    }

    #[inline(always)]
    fn matches(&self, slot: &[AtomicU64], meta: u64, kmer: &Kmer<W>) -> bool {
        if self.merged && meta & KEY_IN_META != kmer.0[W - 1] {
            return false;
        }
        (0..self.full_words).all(|j| slot[j].load(Ordering::Relaxed) == kmer.0[j])
    }

    #[inline(always)]
    fn next_slot(&self, i: usize, probes: &mut usize) -> usize {
        *probes += 1;
        // A full chunk would probe forever; reserve() keeps the load below MAX_LOAD, so
        // this is a bug, reported rather than hung on.
        assert!(*probes <= self.chunk_slots, "k-mer table chunk is full");
        if i + 1 == self.chunk_slots { 0 } else { i + 1 }
    }

    /// Finds the slot of `kmer`: `Ok((chunk, slot, meta))` if present, `Err(())` if not.
    #[inline(always)]
    fn find(&self, kmer: &Kmer<W>, hash: u64) -> Result<(usize, usize, u64), ()> {
        let s = self.slot_words;
        let (c, mut i) = self.locate(hash);
        let words = self.chunks[c].atomics();
        let mut probes = 0;
        loop {
            let slot = &words[i * s..i * s + s];
            let mut m = slot[s - 1].load(Ordering::Acquire);
            if m == 0 {
                return Err(());
            }
            if m & BUSY != 0 {
                m = wait_ready(&slot[s - 1]);
            }
            if self.matches(slot, m, kmer) {
                return Ok((c, i, m));
            }
            i = self.next_slot(i, &mut probes);
        }
    }

    /// Stores a whole slot without synchronisation (rehash, with `&mut self` exclusive).
    fn put_raw(&mut self, kmer: &Kmer<W>, meta: u64) {
        let s = self.slot_words;
        let (c, mut i) = self.locate(kmer.hash());
        let words = self.chunks[c].atomics();
        let mut probes = 0;
        while words[i * s + s - 1].load(Ordering::Relaxed) != 0 {
            i = self.next_slot(i, &mut probes);
        }
        for j in 0..self.full_words {
            words[i * s + j].store(kmer.0[j], Ordering::Relaxed);
        }
        words[i * s + s - 1].store(meta, Ordering::Relaxed);
    }

    fn entry_of(meta: u64) -> Entry {
        Entry {
            genomes: ((meta >> COUNT_SHIFT) & COUNT_MASK) as u32,
            marked: meta & MARK != 0,
        }
    }

    /// The k-mer length.
    pub fn k(&self) -> usize {
        self.k
    }

    fn key_at(&self, words: &[AtomicU64], slot: usize, meta: u64) -> Kmer<W> {
        let base = slot * self.slot_words;
        let mut kmer = Kmer::<W>::ZERO;
        for j in 0..self.full_words {
            kmer.0[j] = words[base + j].load(Ordering::Relaxed);
        }
        if self.merged {
            kmer.0[W - 1] = meta & KEY_IN_META;
        }
        kmer
    }
}

/// Waits until a claimed slot is published (its owner writes a few words in between).
#[cold]
fn wait_ready(meta: &AtomicU64) -> u64 {
    let mut spins = 0u32;
    loop {
        let m = meta.load(Ordering::Acquire);
        if m & BUSY == 0 {
            return m;
        }
        spins += 1;
        if spins < 128 {
            std::hint::spin_loop();
        } else {
            // The owner was descheduled (2 cores shared with other work): let it run.
            std::thread::yield_now();
        }
    }
}

impl<const W: usize> Create<W> for VolatileTable<W> {
    const KIND: TableKind = TableKind::Volatile;
    const MAX_GENOMES: u64 = MAX_GENOMES;

    fn create(r: &TableRequest<'_>) -> Result<Self, TableError> {
        Self::new(
            r.k,
            r.target,
            r.map_options,
            r.expected_distinct,
            r.parallel,
        )
    }
}

impl<const W: usize> KmerTable<W> for VolatileTable<W> {
    fn facts(&self) -> TableFacts {
        TableFacts {
            kind: TableKind::Volatile.name(),
            slots: self.slots() as u64,
            slot_bytes: self.slot_bytes() as u64,
            footprint_bytes: self.footprint_bytes(),
            load_factor: self.distinct() as f64 / self.slots() as f64,
            grown: self.times_grown(),
            target: self.target_record(),
            warnings: self.warnings(),
            persist: None,
            persister: None,
            parts: Vec::new(),
        }
    }

    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        let (c, i) = self.locate(hash);
        let words = self.chunks[c].atomics();
        let s = self.slot_words;
        // The probe starts at a line boundary; when that line is full it continues into
        // the next one, and a miss there would stall with nothing else in flight, so both
        // lines are fetched (a slot of 5 words also spans two lines).
        pmscope_sys::prefetch::prefetch(&words[i * s]);
        if let Some(next) = words.get(i * s + 8) {
            pmscope_sys::prefetch::prefetch(next);
        }
    }

    #[inline(always)]
    fn insert(&self, kmer: &Kmer<W>, hash: u64, genome: GenomeId) -> Inserted {
        debug_assert!(genome as u64 <= TAG_MASK && genome > 0);
        let s = self.slot_words;
        let (c, mut i) = self.locate(hash);
        let words = self.chunks[c].atomics();
        let tag = (genome as u64) << TAG_SHIFT;
        let fresh = tag | (1 << COUNT_SHIFT) | self.meta_key_bits(kmer);
        let mut probes = 0;
        loop {
            let slot = &words[i * s..i * s + s];
            let meta = &slot[s - 1];
            let mut m = meta.load(Ordering::Acquire);
            if m == 0 {
                match meta.compare_exchange(0, BUSY | fresh, Ordering::Acquire, Ordering::Acquire) {
                    Ok(_) => {
                        for (word, &x) in slot[..self.full_words].iter().zip(&kmer.0) {
                            word.store(x, Ordering::Relaxed);
                        }
                        meta.store(READY | fresh, Ordering::Release);
                        return Inserted::New;
                    }
                    Err(current) => m = current,
                }
            }
            if m & BUSY != 0 {
                m = wait_ready(meta);
            }
            if self.matches(slot, m, kmer) {
                loop {
                    if m & (TAG_MASK << TAG_SHIFT) == tag {
                        return Inserted::Repeat;
                    }
                    let counted = ((m & !(TAG_MASK << TAG_SHIFT)) | tag) + (1 << COUNT_SHIFT);
                    match meta.compare_exchange_weak(
                        m,
                        counted,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return Inserted::Counted,
                        Err(current) => m = current,
                    }
                }
            }
            i = self.next_slot(i, &mut probes);
        }
    }

    fn get(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        self.find(kmer, hash)
            .ok()
            .map(|(_, _, m)| Self::entry_of(m))
    }

    fn mark(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        let (c, i, m) = self.find(kmer, hash).ok()?;
        if m & MARK != 0 {
            return Some(Self::entry_of(m));
        }
        let s = self.slot_words;
        let before = self.chunks[c].atomics()[i * s + s - 1].fetch_or(MARK, Ordering::Relaxed);
        Some(Self::entry_of(before))
    }

    fn add_distinct(&self, n: u64) {
        self.distinct.fetch_add(n, Ordering::Relaxed);
    }

    fn distinct(&self) -> u64 {
        self.distinct.load(Ordering::Relaxed)
    }

    fn reserve(&mut self, additional: u64) -> Result<bool, TableError> {
        let need = self.distinct() + additional;
        let slots = self.slots();
        if need as f64 <= MAX_LOAD * slots as f64 {
            return Ok(false);
        }
        let bigger_slots = (2 * slots).max((need as f64 / TARGET_LOAD).ceil() as usize);
        let mut bigger =
            Self::with_slots(self.k, &self.spec, &self.opts, bigger_slots, self.parallel)?;
        let s = self.slot_words;
        for chunk in &self.chunks {
            let words = chunk.atomics();
            for slot in 0..self.chunk_slots {
                let meta = words[slot * s + s - 1].load(Ordering::Relaxed);
                if meta & READY != 0 {
                    let kmer = self.key_at(words, slot, meta);
                    bigger.put_raw(&kmer, meta);
                }
            }
        }
        bigger.distinct = AtomicU64::new(self.distinct());
        bigger.grown = self.grown + 1;
        *self = bigger;
        Ok(true)
    }

    fn slots(&self) -> usize {
        self.chunks.len() * self.chunk_slots
    }

    fn entry_at(&self, slot: usize) -> Option<(Kmer<W>, Entry)> {
        let (c, i) = (slot / self.chunk_slots, slot % self.chunk_slots);
        let words = self.chunks[c].atomics();
        let s = self.slot_words;
        let meta = words[i * s + s - 1].load(Ordering::Acquire);
        if meta & READY == 0 {
            return None;
        }
        Some((self.key_at(words, i, meta), Self::entry_of(meta)))
    }

    fn footprint_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmer::encode::for_each_kmer;

    fn table<const W: usize>(k: usize, expected: u64) -> VolatileTable<W> {
        VolatileTable::new(
            k,
            &"dram:4k".parse().unwrap(),
            &MapOptions::host(),
            expected,
            2,
        )
        .unwrap()
    }

    #[test]
    fn slot_sizes_are_compact() {
        assert_eq!(slot_words(31) * 8, 16);
        assert_eq!(slot_words(32) * 8, 16);
        assert_eq!(slot_words(100) * 8, 32);
        assert_eq!(slot_words(128) * 8, 40);
    }

    #[test]
    fn counts_each_genome_once_and_marks() {
        let k = 100;
        let t = table::<4>(k, 10);
        let seq: Vec<u8> = (0..300).map(|i| b"ACGT"[(i * 7 + i / 3) % 4]).collect();
        let kmers: Vec<Kmer<4>> = {
            let mut v = Vec::new();
            for_each_kmer::<4>(&seq, k, |_, x, _| v.push(*x));
            v
        };
        let x = kmers[0];
        assert_eq!(t.insert(&x, x.hash(), 1), Inserted::New);
        assert_eq!(t.insert(&x, x.hash(), 1), Inserted::Repeat);
        assert_eq!(t.insert(&x, x.hash(), 2), Inserted::Counted);
        assert_eq!(
            t.get(&x, x.hash()),
            Some(Entry {
                genomes: 2,
                marked: false
            })
        );
        assert_eq!(
            t.mark(&x, x.hash()),
            Some(Entry {
                genomes: 2,
                marked: false
            })
        );
        assert!(t.get(&x, x.hash()).unwrap().marked);
        let y = kmers[5];
        assert_eq!(t.get(&y, y.hash()), None);
        assert_eq!(t.mark(&y, y.hash()), None);
        let found: Vec<_> = (0..t.slots()).filter_map(|s| t.entry_at(s)).collect();
        assert_eq!(
            found,
            vec![(
                x,
                Entry {
                    genomes: 2,
                    marked: true
                }
            )]
        );
    }

    #[test]
    fn grows_and_keeps_every_entry() {
        let mut t = table::<1>(21, 10);
        let before = t.slots();
        let seq: Vec<u8> = (0..5000u64)
            .map(|i| b"ACGT"[((i.wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 62) as usize])
            .collect();
        let mut all = std::collections::HashSet::new();
        for (i, chunk) in seq.chunks(500).enumerate() {
            let genome = i as u32 + 1;
            t.reserve(chunk.len() as u64).unwrap();
            let mut new = 0;
            for_each_kmer::<1>(chunk, 21, |_, x, _| {
                all.insert(*x);
                if t.insert(x, x.hash(), genome) == Inserted::New {
                    new += 1;
                }
            });
            t.add_distinct(new);
        }
        assert!(t.times_grown() > 0 && t.slots() > before);
        assert_eq!(t.distinct(), all.len() as u64);
        for x in &all {
            assert!(t.get(x, x.hash()).is_some());
        }
    }
}
