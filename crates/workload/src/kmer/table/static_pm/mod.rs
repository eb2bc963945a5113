//! `static-pm`: the seed's Static-HT (seed 003 §6), a log-free persistent k-mer table.
//!
//! Open addressing with quadratic probing over a power-of-two number of 64-byte slots,
//! each aligned to its own cache line, in a pool (a `--pool` file that outlives the
//! process, or a fresh mapping of the target). Every field is one 8-byte word, so every
//! update is one atomic 8-byte store; there is no undo or redo log: consistency comes from
//! the order in which words reach the persistence domain.
//!
//! ```text
//! pool:  [ header page ][ slot 0 ][ slot 1 ] ...            (slot = 8 words = 64 B line)
//! slot:  key word 0 .. key word W-1, unused, meta (word 7)
//! meta:  [ VALID | CLAIMED | tag:30 | count:32 ]   0 = empty
//!           63       62      61..32    31..0
//! header: magic, layout version, K, capacity, strategy, input fingerprint, checksum;
//!         the resume word (genomes completed) on its own line
//! ```
//!
//! Insert of a new k-mer: CAS meta 0 → CLAIMED, store the key words, store meta = VALID |
//! tag | 1. Counting a k-mer for a new genome: one CAS of meta (tag and count together). A
//! repeat (the genome already counted it): nothing. Persistence is grouped per thread
//! ([`Unpersisted`]): a write records its slot's line, and every
//! [`Unpersisted::BATCH`] written lines (and at the end of the thread's share of a genome)
//! the thread writes back every recorded line and issues **one fence**. So a new or
//! counted k-mer costs **1 flush**, a repeat 0, a group of up to 256 written lines **1
//! fence**, and a genome adds 1 flush and 1 fence for the resume word (the count output
//! and record give the measured flushes and fences per insert). `--fence per-slot`
//! ([`Fence::PerSlot`](super::Fence)) makes every group one written line: a flush and a
//! fence after each written slot, as the seed's Static-HT issues `pmem_flush` per slot.
//!
//! Why one flush per slot and no fence inside the group: key and meta share one cache
//! line, and stores to one line reach memory in program order (x86-TSO keeps them in order
//! in the store buffer and the line is written back whole), so whatever part of the line
//! persists early is a *prefix* of [claim, keys..., publish]: a persisted VALID meta
//! implies persisted keys, whatever other lines do. Slots persist in any order among
//! themselves, so a crash can lose a slot that made a later k-mer probe further (a hole
//! in its probe sequence): recovery ([`recovery`]) clears CLAIMED-without-VALID slots and
//! moves such k-mers back into the hole. Why the write-backs wait for the end of the
//! group: a locked instruction (the next insert's CAS) orders earlier `clwb`s like a fence,
//! so flushing as we go would cost a drain per insert; grouped, the CASes of a group come
//! first, then its write-backs, which the one fence drains together.
//!
//! *Acknowledged*: an insert is acknowledged when the `persist_deferred` (fence) of the
//! group holding it has returned ([`insert_kmer`](StaticPm::insert_kmer) is a group of
//! one); a genome is acknowledged when [`complete`](StaticPm::complete) has returned,
//! which the job calls only after every worker persisted its last group. After a crash,
//! every acknowledged insert is in the pool; an unacknowledged one may or may not be, and
//! counts never exceed the truth because each genome sets its tag with the count in one
//! store. The job resumes after the last acknowledged genome, re-inserting the one in
//! progress: its already persisted counts carry its tag and are repeats.
//!
//! The count update is a single 8-byte store, never torn. The header is written with its
//! magic last on the header's line (then one write-back per line and one fence), so a torn
//! header never looks like a pool; and a new pool file gets its name only once its header is durable
//! ([`create`]).
//!
//! Proof: `crash_check` (tests) runs the production path — pool formatting, the job's
//! insert loop and drivers with two workers taking turns by explored schedules, this
//! table, its [`PoolWords`] and the `Persister`'s own flush and fence code — over a memory
//! that records every store, write-back and fence, and checks every crash image the
//! recorded stream allows (power failure under the line-prefix model), including crashes
//! during recovery and during the resumed run.
//!
//! Marks (set operations) live in a DRAM bitmap beside the pool: they belong to one job and
//! never reach the pool.

mod create;
mod pool_words;
mod recovery;

pub use create::{StaticPmTable, check_pool};
#[cfg(test)]
pub(crate) use create::{create_named, recover};
pub use pool_words::{Backing, PoolInfo, PoolMemory, PoolWords};
pub use recovery::Recovery;

use super::{Entry, GenomeId, Inserted, KmerTable, TableError, TableFacts, TableKind, Unpersisted};
use crate::kmer::encode::Kmer;
use pmscope_persist::{PersistStrategy, PersistentWords, STRATEGIES};
use std::sync::atomic::{AtomicU64, Ordering};

/// "PMSCKMER" little-endian: the first word of every pool.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PMSCKMER");
/// The slot and header layout this code reads and writes (2: the genome fingerprint is
/// [`Fnv1a`], stable across toolchains; version 1 used the standard library's unspecified
/// hasher).
pub const LAYOUT_VERSION: u64 = 2;
/// Words of the header page.
pub const HEADER_WORDS: usize = 512;
/// Words per slot (one cache line).
pub const SLOT_WORDS: usize = 8;
pub(crate) const META: usize = 7;
const H_MAGIC: usize = 0;
const H_VERSION: usize = 1;
const H_K: usize = 2;
const H_CAPACITY: usize = 3;
const H_STRATEGY: usize = 4;
const H_INPUTS: usize = 5;
const H_CHECKSUM: usize = 6;
/// Genomes completed, on its own line.
const H_DONE: usize = 8;

pub(crate) const VALID: u64 = 1 << 63;
pub(crate) const CLAIMED: u64 = 1 << 62;
pub(crate) const TAG_SHIFT: u32 = 32;
pub(crate) const TAG_MASK: u64 = (1 << 30) - 1;
const COUNT_MASK: u64 = u32::MAX as u64;

/// The most genomes a table can count (the width of the tag field).
pub const MAX_GENOMES: u64 = TAG_MASK;
/// The load a new pool is sized for (quadratic probing stays short below it).
pub const TARGET_LOAD: f64 = 0.5;
/// The load `reserve` refuses to exceed: the table cannot grow.
pub const MAX_LOAD: f64 = 0.9;

/// FNV-1a, 64 bits (Fowler, Noll, Vo; offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3): a specified hash, so that what a pool stores (the header checksum, the
/// genome fingerprint) means the same to every build of pmscope.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Hashes `bytes` in.
    pub fn bytes(mut self, bytes: &[u8]) -> Self {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
        self
    }

    /// Hashes `x` in as 8 little-endian bytes.
    pub fn word(self, x: u64) -> Self {
        self.bytes(&x.to_le_bytes())
    }

    /// The hash.
    pub fn finish(self) -> u64 {
        self.0
    }
}

/// The checksum of the immutable header words (FNV-1a over their little-endian bytes).
pub fn header_checksum(words: &[u64]) -> u64 {
    words
        .iter()
        .fold(Fnv1a::default(), |h, &w| h.word(w))
        .finish()
}

fn strategy_code(s: PersistStrategy) -> u64 {
    STRATEGIES
        .iter()
        .position(|&x| x == s)
        .expect("a listed strategy") as u64
        + 1
}

/// What a valid header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// K.
    pub k: usize,
    /// Slots.
    pub capacity: usize,
    /// The persist strategy the pool was written with.
    pub strategy: PersistStrategy,
    /// Fingerprint of the genomes the pool is counting.
    pub inputs: u64,
    /// Genomes completed.
    pub done: u32,
}

/// Reads and checks the header of `mem` (`len` words); `what` names the pool in messages.
pub fn read_header<M: PersistentWords>(mem: &M, what: &str) -> Result<Header, String> {
    if mem.len() < HEADER_WORDS + SLOT_WORDS || mem.load(H_MAGIC) != MAGIC {
        if mem.len() >= HEADER_WORDS && (0..HEADER_WORDS).all(|i| mem.load(i) == 0) {
            // What a pmscope before pools were named only once complete left when killed.
            return Err(format!(
                "{what} is not a pmscope k-mer pool (no pmscope header: its header page is all zeros, what a pool creation cut short by an older pmscope leaves); remove it, or name a new file to create one"
            ));
        }
        return Err(format!(
            "{what} is not a pmscope k-mer pool (no pmscope header); name a new file to create one"
        ));
    }
    let version = mem.load(H_VERSION);
    if version != LAYOUT_VERSION {
        return Err(format!(
            "{what} has pool layout version {version}, but this pmscope reads only version {LAYOUT_VERSION}; count into a new pool"
        ));
    }
    let fixed: Vec<u64> = (0..H_CHECKSUM).map(|i| mem.load(i)).collect();
    if header_checksum(&fixed) != mem.load(H_CHECKSUM) {
        return Err(format!(
            "{what} has a corrupt header (checksum mismatch); it was left untouched"
        ));
    }
    let capacity = mem.load(H_CAPACITY) as usize;
    let strategy = (mem.load(H_STRATEGY) as usize)
        .checked_sub(1)
        .and_then(|i| STRATEGIES.get(i).copied());
    let (Some(strategy), true) = (strategy, capacity.is_power_of_two()) else {
        return Err(format!(
            "{what} has a corrupt header; it was left untouched"
        ));
    };
    if HEADER_WORDS + capacity * SLOT_WORDS > mem.len() {
        return Err(format!(
            "{what} is truncated: its header promises {capacity} slots ({} bytes) but the file has {} bytes",
            (HEADER_WORDS + capacity * SLOT_WORDS) * 8,
            mem.len() * 8
        ));
    }
    Ok(Header {
        k: mem.load(H_K) as usize,
        capacity,
        strategy,
        inputs: mem.load(H_INPUTS),
        done: mem.load(H_DONE) as u32,
    })
}

/// Writes a fresh header (magic last on its line, so a torn creation is never a pool).
pub fn write_header<M: PersistentWords>(mem: &M, h: &Header) {
    let fixed = [
        MAGIC,
        LAYOUT_VERSION,
        h.k as u64,
        h.capacity as u64,
        strategy_code(h.strategy),
        h.inputs,
    ];
    for (i, &w) in fixed.iter().enumerate().skip(1) {
        mem.store(i, w);
    }
    mem.store(H_CHECKSUM, header_checksum(&fixed));
    mem.store(H_DONE, h.done as u64);
    // The magic shares its line with the words it vouches for and is stored after them,
    // so whatever part of the line persists is a prefix: a durable magic implies the rest
    // (a flush and fence before it would change no crash image). One write-back of each
    // line and one fence make the header durable before the pool is named.
    mem.store(H_MAGIC, MAGIC);
    mem.flush(H_MAGIC);
    mem.flush(H_DONE);
    mem.fence();
}

/// The static table over any [`PersistentWords`]: the pool in production, the crash
/// model in the checker.
pub struct StaticPm<const W: usize, M: PersistentWords> {
    mem: M,
    header: Header,
    bits: u32,
    marks: Vec<AtomicU64>,
    distinct: AtomicU64,
    recovery: Recovery,
}

impl<const W: usize, M: PersistentWords> StaticPm<W, M> {
    /// Formats `mem` as an empty table of `capacity` slots (a power of two).
    pub fn format(
        mem: M,
        k: usize,
        capacity: usize,
        strategy: PersistStrategy,
        inputs: u64,
    ) -> Self {
        assert!(capacity.is_power_of_two() && HEADER_WORDS + capacity * SLOT_WORDS <= mem.len());
        let header = Header {
            k,
            capacity,
            strategy,
            inputs,
            done: 0,
        };
        write_header(&mem, &header);
        Self::with(mem, header, Recovery::default())
    }

    /// Opens a formatted `mem`: checks the header against `k` (and `inputs` if given),
    /// then recovers (see [`Recovery`]) and counts what it holds. Nothing is written unless
    /// the header matched and every slot keeps the table's invariants.
    pub fn open(mem: M, what: &str, k: Option<usize>, inputs: Option<u64>) -> Result<Self, String> {
        let header = read_header(&mem, what)?;
        if let Some(k) = k
            && k != header.k
        {
            return Err(format!(
                "{what} holds k-mers of K = {}, not {k}; give -k {} or name a new pool",
                header.k, header.k
            ));
        }
        if crate::kmer::encode::words_for(header.k) != W {
            return Err(format!(
                "{what} has a corrupt header (K = {} in {W}-word keys); it was left untouched",
                header.k
            ));
        }
        if let Some(inputs) = inputs
            && inputs != header.inputs
        {
            return Err(format!(
                "{what} is counting other genomes; resume it with the genomes it was created for, or name a new pool"
            ));
        }
        let mut t = Self::with(mem, header, Recovery::default());
        let found = t.survey();
        if found.corrupt > 0 {
            return Err(format!(
                "{what} has {} slots that break the table's invariants; it was left as it is",
                found.corrupt
            ));
        }
        t.recovery = t.recover(found);
        t.distinct.store(t.recovery.valid, Ordering::Relaxed);
        Ok(t)
    }

    fn with(mem: M, header: Header, recovery: Recovery) -> Self {
        StaticPm {
            mem,
            bits: header.capacity.trailing_zeros(),
            marks: (0..header.capacity.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            distinct: AtomicU64::new(recovery.valid),
            header,
            recovery,
        }
    }

    fn durable(&self, at: usize) {
        self.mem.flush(at);
        self.fence();
    }

    fn fence(&self) {
        self.mem.fence();
    }

    /// Records the lines a write to the slot at `base` dirtied.
    #[inline(always)]
    fn dirtied(&self, base: usize, unpersisted: &mut Unpersisted) {
        unpersisted.push(base + META);
    }

    /// Writes back every line in `unpersisted`, then one fence: the group is durable.
    pub fn persist_group(&self, unpersisted: &mut Unpersisted) {
        if unpersisted.is_empty() {
            return;
        }
        self.mem.flush_all(unpersisted.words());
        self.fence();
        unpersisted.clear();
    }

    /// The header.
    pub fn header(&self) -> Header {
        self.header
    }

    /// What opening found.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// The published k-mers and their counts, slot by slot.
    pub fn contents(&self) -> Vec<(Kmer<W>, u32)> {
        (0..self.header.capacity)
            .filter_map(|i| self.slot_entry(i).map(|(x, e)| (x, e.genomes)))
            .collect()
    }

    /// The memory.
    pub fn memory(&self) -> &M {
        &self.mem
    }

    /// Records that genomes 1..=`genome` are complete (persisted before it returns).
    pub fn complete(&self, genome: GenomeId) {
        self.mem.store(H_DONE, genome as u64);
        self.durable(H_DONE);
    }

    #[inline(always)]
    fn start(&self, hash: u64) -> usize {
        hash.checked_shr(64 - self.bits).unwrap_or(0) as usize
    }

    #[inline(always)]
    fn base(&self, slot: usize) -> usize {
        HEADER_WORDS + slot * SLOT_WORDS
    }

    #[inline(always)]
    fn key_matches(&self, base: usize, kmer: &Kmer<W>) -> bool {
        (0..W).all(|j| self.mem.load(base + j) == kmer.0[j])
    }

    fn wait_published(&self, at: usize) -> u64 {
        let mut spins = 0u32;
        loop {
            let m = self.mem.load(at);
            if m & VALID != 0 {
                return m;
            }
            spins += 1;
            if spins < 128 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Probes for `kmer`: `Ok((slot, meta))` if present, `Err(())` at an empty slot.
    fn find(&self, kmer: &Kmer<W>, hash: u64) -> Result<(usize, u64), ()> {
        let mask = self.header.capacity - 1;
        let mut i = self.start(hash);
        for step in 1..=self.header.capacity {
            let base = self.base(i);
            let mut m = self.mem.load(base + META);
            if m == 0 {
                return Err(());
            }
            if m & VALID == 0 {
                m = self.wait_published(base + META);
            }
            if self.key_matches(base, kmer) {
                return Ok((i, m));
            }
            i = (i + step) & mask;
        }
        Err(())
    }

    /// Adds `kmer` for `genome` and makes it durable (one flush, one fence) before it
    /// returns.
    pub fn insert_kmer(&self, kmer: &Kmer<W>, hash: u64, genome: GenomeId) -> Inserted {
        let mut one = Unpersisted::default();
        let done = self.insert_later(kmer, hash, genome, &mut one);
        self.persist_group(&mut one);
        done
    }

    /// Adds `kmer` for `genome` and records in `unpersisted` the line to write back; it is
    /// durable (acknowledged) once [`persist_group`](Self::persist_group) returns (see the
    /// module comment for the persistence order).
    #[inline]
    pub fn insert_later(
        &self,
        kmer: &Kmer<W>,
        hash: u64,
        genome: GenomeId,
        unpersisted: &mut Unpersisted,
    ) -> Inserted {
        debug_assert!(genome as u64 <= TAG_MASK && genome > 0);
        let tag = (genome as u64) << TAG_SHIFT;
        let mask = self.header.capacity - 1;
        let mut i = self.start(hash);
        let mut step = 0;
        loop {
            let base = self.base(i);
            let at = base + META;
            let mut m = self.mem.load(at);
            if m == 0 {
                match self.mem.compare_exchange(at, 0, CLAIMED) {
                    Ok(_) => {
                        for (j, &x) in kmer.0.iter().enumerate() {
                            self.mem.store(base + j, x);
                        }
                        self.mem.store(at, VALID | tag | 1);
                        self.dirtied(base, unpersisted);
                        return Inserted::New;
                    }
                    Err(current) => m = current,
                }
            }
            if m & VALID == 0 {
                m = self.wait_published(at);
            }
            if self.key_matches(base, kmer) {
                loop {
                    if m & (TAG_MASK << TAG_SHIFT) == tag {
                        return Inserted::Repeat;
                    }
                    let counted = (m & !(TAG_MASK << TAG_SHIFT)) | tag;
                    match self.mem.compare_exchange(at, m, counted + 1) {
                        Ok(_) => {
                            self.dirtied(base, unpersisted);
                            return Inserted::Counted;
                        }
                        Err(current) => m = current,
                    }
                }
            }
            step += 1;
            // reserve() keeps the load below MAX_LOAD, so a full probe cycle is a bug.
            assert!(step <= self.header.capacity, "static-pm table is full");
            i = (i + step) & mask;
        }
    }

    /// The published k-mer in `slot`, if any.
    pub fn slot_entry(&self, slot: usize) -> Option<(Kmer<W>, Entry)> {
        let base = self.base(slot);
        let m = self.mem.load(base + META);
        if m & VALID == 0 {
            return None;
        }
        let mut kmer = Kmer::<W>::ZERO;
        for (j, w) in kmer.0.iter_mut().enumerate() {
            *w = self.mem.load(base + j);
        }
        Some((kmer, self.entry_of(slot, m)))
    }

    fn entry_of(&self, slot: usize, meta: u64) -> Entry {
        Entry {
            genomes: (meta & COUNT_MASK) as u32,
            marked: self.marks[slot / 64].load(Ordering::Relaxed) & (1 << (slot % 64)) != 0,
        }
    }
}

impl<const W: usize, M: PersistentWords + PoolInfo> KmerTable<W> for StaticPm<W, M> {
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        self.mem.prefetch(self.base(self.start(hash)));
    }

    fn insert(&self, kmer: &Kmer<W>, hash: u64, genome: GenomeId) -> Inserted {
        self.insert_kmer(kmer, hash, genome)
    }

    #[inline(always)]
    fn insert_deferred(
        &self,
        kmer: &Kmer<W>,
        hash: u64,
        genome: GenomeId,
        unpersisted: &mut Unpersisted,
    ) -> Inserted {
        self.insert_later(kmer, hash, genome, unpersisted)
    }

    fn persist_deferred(&self, unpersisted: &mut Unpersisted) {
        self.persist_group(unpersisted);
    }

    fn get(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        let (slot, m) = self.find(kmer, hash).ok()?;
        Some(self.entry_of(slot, m))
    }

    fn mark(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        let (slot, m) = self.find(kmer, hash).ok()?;
        let before = self.marks[slot / 64].fetch_or(1 << (slot % 64), Ordering::Relaxed);
        Some(Entry {
            genomes: (m & COUNT_MASK) as u32,
            marked: before & (1 << (slot % 64)) != 0,
        })
    }

    fn add_distinct(&self, n: u64) {
        self.distinct.fetch_add(n, Ordering::Relaxed);
    }

    fn distinct(&self) -> u64 {
        self.distinct.load(Ordering::Relaxed)
    }

    fn reserve(&mut self, additional: u64) -> Result<bool, TableError> {
        let need = self.distinct() + additional;
        if need as f64 <= MAX_LOAD * self.header.capacity as f64 {
            return Ok(false);
        }
        Err(TableError::Limit(format!(
            "the static-pm table has {} slots and cannot grow, but up to {need} k-mers may need \
             one; create a new pool (the table is sized from the first job's estimate)",
            self.header.capacity
        )))
    }

    fn slots(&self) -> usize {
        self.header.capacity
    }

    fn entry_at(&self, slot: usize) -> Option<(Kmer<W>, Entry)> {
        self.slot_entry(slot)
    }

    fn footprint_bytes(&self) -> u64 {
        (self.mem.len() * 8) as u64
    }

    fn facts(&self) -> TableFacts {
        TableFacts {
            kind: TableKind::StaticPm.name(),
            slots: self.header.capacity as u64,
            slot_bytes: (SLOT_WORDS * 8) as u64,
            footprint_bytes: self.footprint_bytes(),
            load_factor: self.distinct() as f64 / self.header.capacity as f64,
            grown: 0,
            target: self.mem.target_record(),
            warnings: self.mem.target_warnings(),
            persist: Some(self.mem.counts()),
            persister: Some(self.mem.persister()),
            parts: Vec::new(),
        }
    }

    fn completed(&self, genome: GenomeId) {
        self.complete(genome);
    }

    fn resume_after(&self) -> GenomeId {
        self.header.done
    }
}

#[cfg(test)]
mod tests {
    use super::Fnv1a;
    use crate::kmer::job::fingerprint;
    use crate::kmer::read::{Genome, GenomeStats};

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        let h = |s: &[u8]| Fnv1a::default().bytes(s).finish();
        assert_eq!(h(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(h(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(h(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_genome_fingerprint_is_the_specified_one() {
        let genome = |name: &str, bases, kmers| Genome {
            name: name.into(),
            path: name.into(),
            contigs: Vec::new(),
            seq: Vec::new(),
            stats: GenomeStats {
                bases,
                kmers,
                ..GenomeStats::default()
            },
        };
        // Computed independently (Python) from the encoding `fingerprint` documents: a pool
        // written by any build of pmscope must keep matching its genomes.
        let genomes = [
            genome("E_coli_K12", 4_641_652, 4_641_622),
            genome("b", 25, 19),
        ];
        assert_eq!(fingerprint(&genomes), 0xfd77_4660_1416_eb64);
    }
}
