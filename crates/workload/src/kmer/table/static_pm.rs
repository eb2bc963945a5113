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
//! and record give the measured flushes and fences per insert).
//!
//! Why one flush per slot and no fence inside the group: key and meta share one cache
//! line, and stores to one line reach memory in program order (x86-TSO keeps them in order
//! in the store buffer and the line is written back whole), so whatever part of the line
//! persists early is a *prefix* of [claim, keys..., publish]: a persisted VALID meta
//! implies persisted keys, whatever other lines do. No invariant relates two slots, so
//! slots need no order among themselves. Recovery treats CLAIMED-without-VALID as empty
//! and clears it. Why the write-backs wait for the end of the group: a locked instruction
//! (the next insert's CAS) orders earlier `clwb`s like a fence, so flushing as we go would
//! cost a drain per insert; grouped, the CASes of a group come first, then its write-backs,
//! which the one fence drains together.
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
//! magic last (flush, fence, then magic, flush, fence), so a torn creation never looks like
//! a pool.
//!
//! Proof: `crash_check` (tests) replays every store, flush and fence of long insert
//! streams through the crash model of `pmscope_persist::shadow`, enumerates every crash
//! image at every operation boundary, recovers each and checks the invariants; deliberate
//! bugs ([`Bug`]) are each caught there.
//!
//! Marks (set operations) live in a DRAM bitmap beside the pool: they belong to one job and
//! never reach the pool.

use super::{
    Create, Entry, GenomeId, Inserted, KmerTable, TableError, TableFacts, TableKind, TableRequest,
    Unpersisted,
};
use crate::kmer::encode::Kmer;
use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_mapping::Mapping;
use pmscope_mapping::pool::Pool;
use pmscope_persist::{
    PersistChoice, PersistCounts, PersistStrategy, PersistentWords, Persister, STRATEGIES,
};
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
const META: usize = 7;
const H_MAGIC: usize = 0;
const H_VERSION: usize = 1;
const H_K: usize = 2;
const H_CAPACITY: usize = 3;
const H_STRATEGY: usize = 4;
const H_INPUTS: usize = 5;
const H_CHECKSUM: usize = 6;
/// Genomes completed, on its own line.
const H_DONE: usize = 8;

const VALID: u64 = 1 << 63;
const CLAIMED: u64 = 1 << 62;
const TAG_SHIFT: u32 = 32;
const TAG_MASK: u64 = (1 << 30) - 1;
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

/// Writes a fresh header (magic last, so a torn creation is never a pool).
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
    mem.flush(0);
    mem.flush(H_DONE);
    mem.fence();
    mem.store(H_MAGIC, MAGIC);
    mem.flush(H_MAGIC);
    mem.fence();
}

/// What a scan of the slots found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Published k-mers.
    pub valid: u64,
    /// Claimed but never published slots (an insert cut short), cleared.
    pub cleared: u64,
    /// Slots that break an invariant (count 0 or above the tag, tag beyond the genomes).
    pub corrupt: u64,
    /// Sum of the genome counts.
    pub counted: u64,
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
    bug: Option<Bug>,
    /// Words between the header and slot 0: 0, except in [`Bug::CommitOnOtherLine`].
    offset: usize,
}

/// Deliberate ordering bugs, for proving that the crash-image checker catches them. Never
/// set outside tests.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// Publishes the slot (VALID meta) before storing its key.
    PublishBeforeKey,
    /// Flushes but never fences: inserts return before they are durable.
    MissingFence,
    /// Updates the count with two stores (tag, then count) instead of one atomic store.
    TornCount,
    /// Slots start half a line off, so the commit word (meta) lies on another cache line
    /// than the key; both lines are flushed, but with no fence between the key's write-back
    /// and the commit.
    CommitOnOtherLine,
}

impl Bug {
    /// Words between the header and slot 0 in the layout this bug writes.
    fn offset(bug: Option<Bug>) -> usize {
        if bug == Some(Bug::CommitOnOtherLine) {
            SLOT_WORDS / 2
        } else {
            0
        }
    }
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
    /// then recovers (clears cut-short inserts) and counts what it holds. Nothing is
    /// written unless the header matched.
    pub fn open(mem: M, what: &str, k: Option<usize>, inputs: Option<u64>) -> Result<Self, String> {
        Self::open_with(mem, what, k, inputs, None)
    }

    /// `open`, for a pool a table with `bug` wrote (checker tests only).
    #[doc(hidden)]
    pub fn open_with(
        mem: M,
        what: &str,
        k: Option<usize>,
        inputs: Option<u64>,
        bug: Option<Bug>,
    ) -> Result<Self, String> {
        let header = read_header(&mem, what)?;
        if let Some(k) = k
            && k != header.k
        {
            return Err(format!(
                "{what} holds k-mers of K = {}, not {k}; give -k {} or name a new pool",
                header.k, header.k
            ));
        }
        if let Some(inputs) = inputs
            && inputs != header.inputs
        {
            return Err(format!(
                "{what} is counting other genomes; resume it with the genomes it was created for, or name a new pool"
            ));
        }
        let recovery = recover(&mem, &header, Bug::offset(bug));
        if recovery.corrupt > 0 {
            return Err(format!(
                "{what} has {} slots that break the table's invariants; it was left as it is",
                recovery.corrupt
            ));
        }
        let t = Self::with(mem, header, recovery);
        Ok(match bug {
            Some(b) => t.with_bug(b),
            None => t,
        })
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
            bug: None,
            offset: 0,
        }
    }

    /// Builds in a deliberate bug (checker tests only).
    #[doc(hidden)]
    pub fn with_bug(mut self, bug: Bug) -> Self {
        self.bug = Some(bug);
        self.offset = Bug::offset(Some(bug));
        self
    }

    fn durable(&self, at: usize) {
        self.mem.flush(at);
        self.fence();
    }

    fn fence(&self) {
        if self.bug != Some(Bug::MissingFence) {
            self.mem.fence();
        }
    }

    /// Records the lines a write to the slot at `base` dirtied.
    #[inline(always)]
    fn dirtied(&self, base: usize, unpersisted: &mut Unpersisted) {
        if self.offset != 0 {
            // The bug's key line, flushed with the commit's but not fenced before it.
            unpersisted.push(base);
        }
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
        HEADER_WORDS + self.offset + slot * SLOT_WORDS
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
                let publish_first = self.bug == Some(Bug::PublishBeforeKey);
                let claim = if publish_first {
                    VALID | tag | 1
                } else {
                    CLAIMED
                };
                match self.mem.compare_exchange(at, 0, claim) {
                    Ok(_) => {
                        for (j, &x) in kmer.0.iter().enumerate() {
                            self.mem.store(base + j, x);
                        }
                        if !publish_first {
                            self.mem.store(at, VALID | tag | 1);
                        }
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
                    if self.bug == Some(Bug::TornCount) {
                        // The tag and the count as two separate stores.
                        self.mem.store(at, counted);
                        self.mem.store(at, counted + 1);
                        self.dirtied(base, unpersisted);
                        return Inserted::Counted;
                    }
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

/// Scans every slot: clears claimed-but-unpublished slots, counts and checks the rest.
fn recover<M: PersistentWords>(mem: &M, h: &Header, offset: usize) -> Recovery {
    let mut r = Recovery::default();
    for slot in 0..h.capacity {
        let base = HEADER_WORDS + offset + slot * SLOT_WORDS;
        let m = mem.load(base + META);
        if m == 0 {
            continue;
        }
        if m & VALID == 0 {
            for j in 0..SLOT_WORDS {
                mem.store(base + j, 0);
            }
            mem.flush(base);
            r.cleared += 1;
            continue;
        }
        let count = m & COUNT_MASK;
        let tag = (m >> TAG_SHIFT) & TAG_MASK;
        // Genome ids count up from 1 and each genome counts a k-mer once: count <= tag,
        // and no genome beyond the one in progress has touched the table.
        if count == 0 || count > tag || tag > h.done as u64 + 1 || m & CLAIMED != 0 {
            r.corrupt += 1;
        } else {
            r.valid += 1;
            r.counted += count;
        }
    }
    if r.cleared > 0 {
        mem.fence();
    }
    r
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

/// Where production pools live: a reopenable `--pool` file or a fresh target mapping.
enum Backing {
    Pool(Pool),
    Mapping(Mapping),
}

/// [`PersistentWords`] on a pool, persisted with the user's strategy, counting what it
/// issues.
pub struct PoolWords {
    backing: Backing,
    persister: Persister,
    counts: PersistCounts,
}

impl PoolWords {
    fn words(&self) -> &[AtomicU64] {
        match &self.backing {
            Backing::Pool(p) => p.atomics(),
            Backing::Mapping(m) => m.atomics(),
        }
    }
}

/// What the record needs from a table's memory.
pub trait PoolInfo {
    /// The target as asked and as achieved.
    fn target_record(&self) -> TargetRecord;
    /// Where it differs from the request.
    fn target_warnings(&self) -> Vec<Warning>;
    /// (flushes, fences) issued so far.
    fn counts(&self) -> (u64, u64);
    /// The persister every flush and fence goes through.
    fn persister(&self) -> Persister;
}

impl PersistentWords for PoolWords {
    #[inline]
    fn len(&self) -> usize {
        self.words().len()
    }
    #[inline]
    fn load(&self, i: usize) -> u64 {
        self.words()[i].load(Ordering::Acquire)
    }
    #[inline]
    fn store(&self, i: usize, v: u64) {
        self.words()[i].store(v, Ordering::Release)
    }
    #[inline]
    fn compare_exchange(&self, i: usize, old: u64, new: u64) -> Result<u64, u64> {
        self.words()[i].compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)
    }
    #[inline]
    fn prefetch(&self, i: usize) {
        pmscope_sys::prefetch::prefetch(&self.words()[i]);
    }
    #[inline]
    fn flush(&self, i: usize) {
        self.counts.flush();
        self.persister.flush_word(&self.words()[i]);
    }
    #[inline]
    fn flush_all(&self, words: &[usize]) {
        // Counted once for the group: a locked add between write-backs would wait for them.
        self.counts.flushes(words.len() as u64);
        let all = self.words();
        for &i in words {
            self.persister.flush_word(&all[i]);
        }
    }
    #[inline]
    fn fence(&self) {
        self.counts.fence();
        self.persister.fence_words(self.words());
    }
}

impl PoolInfo for PoolWords {
    fn target_record(&self) -> TargetRecord {
        match &self.backing {
            Backing::Pool(p) => p.record(),
            Backing::Mapping(m) => m.record(),
        }
    }
    fn target_warnings(&self) -> Vec<Warning> {
        match &self.backing {
            Backing::Pool(p) => p.warnings().to_vec(),
            Backing::Mapping(m) => m.warnings().to_vec(),
        }
    }
    fn counts(&self) -> (u64, u64) {
        self.counts.get()
    }
    fn persister(&self) -> Persister {
        self.persister
    }
}

/// The production table.
pub type StaticPmTable<const W: usize> = StaticPm<W, PoolWords>;

impl<const W: usize> Create<W> for StaticPmTable<W> {
    const KIND: TableKind = TableKind::StaticPm;
    const MAX_GENOMES: u64 = MAX_GENOMES;

    fn create(r: &TableRequest<'_>) -> Result<Self, TableError> {
        // CPUID decides: a named strategy the CPU lacks is refused, the default falls back
        // (clwb, clflushopt, clflush) and the table's facts say to what.
        let persister = Persister::choose(r.persist, &r.features)
            .map_err(|e| TableError::Refused(e.to_string()))?;
        let capacity = ((r.expected_distinct as f64 / TARGET_LOAD).ceil() as usize)
            .max(64)
            .next_power_of_two();
        let bytes = ((HEADER_WORDS + capacity * SLOT_WORDS) * 8) as u64;
        let words = |backing| PoolWords {
            backing,
            persister,
            counts: PersistCounts::default(),
        };
        match r.pool {
            Some(path) if path.exists() => {
                let pool = Pool::open(path, r.map_options)?;
                let what = path.display().to_string();
                let mut t =
                    Self::open(words(Backing::Pool(pool)), &what, Some(r.k), Some(r.inputs))
                        .map_err(TableError::Refused)?;
                let written = t.header.strategy;
                // Without --persist, a reopened pool keeps the strategy it was written with
                // (where this CPU has it).
                if r.persist == PersistChoice::Default
                    && written != persister.strategy()
                    && written.missing_feature(&r.features).is_none()
                {
                    t.mem.persister = Persister::new(written, &r.features)
                        .map_err(|e| TableError::Refused(e.to_string()))?;
                }
                let used = t.mem.persister.strategy();
                if let Some(missing) = written.missing_feature(&r.features) {
                    return Err(TableError::Refused(format!(
                        "{what} was written with --persist {written}, which needs {missing}, which this CPU does not have; resume it on a CPU with {missing}"
                    )));
                }
                if written != used {
                    return Err(TableError::Refused(format!(
                        "{what} was written with --persist {written}, not {used}; give --persist {written}"
                    )));
                }
                Ok(t)
            }
            Some(path) => {
                let pool = Pool::create(path, bytes, r.map_options)?;
                Ok(Self::format(
                    words(Backing::Pool(pool)),
                    r.k,
                    capacity,
                    persister.strategy(),
                    r.inputs,
                ))
            }
            None => {
                let m = pmscope_mapping::map_chosen(r.target, bytes, r.map_options)?;
                Ok(Self::format(
                    words(Backing::Mapping(m)),
                    r.k,
                    capacity,
                    persister.strategy(),
                    r.inputs,
                ))
            }
        }
    }
}

/// Opens the pool file `path`, checks its header, recovers it (clears inserts cut short)
/// and reports what it holds: `pmscope kmer recover`.
pub fn check_pool(
    path: &std::path::Path,
    opts: &pmscope_mapping::MapOptions,
) -> Result<(Header, Recovery), TableError> {
    let pool = Pool::open(path, opts)?;
    let what = path.display().to_string();
    // The header's own strategy persists the recovery.
    let probe = PoolWords {
        backing: Backing::Pool(pool),
        persister: Persister::new(
            PersistStrategy::Clflush,
            &pmscope_sys::cpu::CpuFeatures::detect(),
        )
        .map_err(|e| TableError::Refused(e.to_string()))?,
        counts: PersistCounts::default(),
    };
    let header = read_header(&probe, &what).map_err(TableError::Refused)?;
    let recovery = recover(&probe, &header, 0);
    if recovery.corrupt > 0 {
        return Err(TableError::Refused(format!(
            "{what} has {} slots that break the table's invariants",
            recovery.corrupt
        )));
    }
    Ok((header, recovery))
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
