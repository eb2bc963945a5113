//! `tx-pm`: the seed's PMDK-HT (seed 003 §6), a persistent k-mer table on PMDK's real
//! `libpmemobj` (through [`pmscope_pmemobj`]), built as PMDK's `hashmap_tx` example is:
//! closed addressing with chained buckets, entries allocated one by one from the pool,
//! the bucket array doubled when the entries reach twice the buckets, and **every insert in
//! an undo-log transaction**. Crash consistency is PMDK's: a transaction cut short by a
//! crash is rolled back when the pool is next opened, so `pmempool check` accepts the pool
//! and a reopened table holds exactly the inserts whose transactions committed.
//!
//! ```text
//! pool (layout "pmscope-kmer-tx-1", PMDK's own header and heap):
//!   root:    magic, version, K, key words, input fingerprint, genomes completed,
//!            bucket array (offset), buckets (a power of two)
//!   buckets: one word per bucket: offset of the first entry, 0 = empty
//!   entry:   next (offset), meta [ tag:32 (last genome) | count:32 ], key words
//! ```
//!
//! Insert of a new k-mer: one transaction that snapshots the bucket word, allocates the
//! entry, fills it and links it at the head of the chain. Counting a k-mer for a new
//! genome: one transaction that snapshots the entry's meta word and stores the new one. A
//! repeat (the genome already counted it): no transaction. Flushes and fences happen inside
//! libpmemobj (the snapshot, the allocation, the commit) and are not counted here: the
//! record says so rather than guess.
//!
//! Concurrency: PMDK transactions give no isolation between threads, so every bucket is
//! guarded by one of [`STRIPES`] locks (DRAM, bucket index modulo [`STRIPES`]); growing
//! takes `&mut self`, so it runs between genomes, never during inserts. A k-mer's bucket is
//! the high bits of its hash (the placement contract of [`KmerTable`]).
//!
//! Slots: for the job, a slot is half a bucket ([`KmerTable::slots`] = 2 × buckets, the
//! entries the table holds at its maximum load of two per bucket); [`KmerTable::for_each_in`]
//! visits every entry of the buckets of a slot range. Marks (set operations) are a DRAM
//! bitmap indexed by entry offset: they belong to one job and never reach the pool.
//!
//! Without `--pool` the pool is a scratch file on the target (`shm` → /dev/shm, `file:DIR`
//! → DIR, an fsdax mount is a `file:` target), removed as soon as it is open.

use super::{
    Create, Entry, GenomeId, Inserted, KmerTable, TableError, TableFacts, TableKind, TableRequest,
};
use crate::kmer::encode::Kmer;
use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_mapping::TargetSpec;
use pmscope_pmemobj::{ObjPool, PmemError, PoolError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The start of PMDK's layout name of every tx-pm pool; the name goes on with the pool's K
/// and input fingerprint ([`layout`]), so that `pmemobj_open` itself refuses a pool of
/// another kind, K or job before it changes a byte.
pub const LAYOUT: &str = "pmscope-kmer-tx-1";

/// The full layout name of a pool of K = `k` counting the genomes `inputs`.
pub fn layout(k: usize, inputs: u64) -> String {
    format!("{LAYOUT} k={k} inputs={inputs:016x}")
}

/// Where PMDK 1.x keeps the layout name in a pool file: `struct pmemobjpool` begins with the
/// 4 KiB pool header (signature "PMEMOBJ"), then `char layout[PMEMOBJ_MAX_LAYOUT]`.
const LAYOUT_AT: u64 = 4096;

/// The layout name stored in the pool file `path`, read without opening it as a pool
/// (for messages and `kmer recover`); `None` if it is not a libpmemobj pool file.
pub fn stored_layout(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let mut sig = [0u8; 8];
    f.read_exact(&mut sig).ok()?;
    if &sig != b"PMEMOBJ\0" {
        return None;
    }
    f.seek(SeekFrom::Start(LAYOUT_AT)).ok()?;
    let mut name = vec![0u8; pmscope_pmemobj::ffi::PMEMOBJ_MAX_LAYOUT];
    f.read_exact(&mut name).ok()?;
    let end = name.iter().position(|&b| b == 0)?;
    String::from_utf8(name[..end].to_vec()).ok()
}

/// (K, inputs) of a tx-pm layout name.
fn parse_layout(name: &str) -> Option<(usize, u64)> {
    let rest = name.strip_prefix(LAYOUT)?.strip_prefix(" k=")?;
    let (k, inputs) = rest.split_once(" inputs=")?;
    Some((k.parse().ok()?, u64::from_str_radix(inputs, 16).ok()?))
}

/// Why the pool file `path` is not the pool of K = `k` for `inputs`, read from its layout
/// name without opening it: libpmemobj's open writes (its shutdown state) before it checks
/// the layout, and a refused pool must be left byte for byte as it was.
fn mismatch(path: &Path, k: usize, inputs: u64) -> Option<TableError> {
    let what = path.display();
    let Some(name) = stored_layout(path) else {
        return Some(TableError::Refused(format!(
            "{what} is not a pmscope tx-pm pool (no libpmemobj header); name a new file to create one"
        )));
    };
    match parse_layout(&name) {
        Some((theirs, _)) if theirs != k => Some(TableError::Refused(format!(
            "{what} holds k-mers of K = {theirs}, not {k}; give -k {theirs} or name a new pool"
        ))),
        Some((_, theirs)) if theirs != inputs => Some(TableError::Refused(format!(
            "{what} is counting other genomes; resume it with the genomes it was created for, or name a new pool"
        ))),
        Some(_) => None,
        None => match name
            .strip_prefix("pmscope-kmer-tx-")
            .and_then(|v| v.split(' ').next())
        {
            Some(v) => Some(TableError::Refused(format!(
                "{what} is a tx-pm pool of layout version {v}, but this pmscope reads only {}; count into a new pool",
                LAYOUT.trim_start_matches("pmscope-kmer-tx-")
            ))),
            None => Some(TableError::Refused(format!(
                "{what} is a libpmemobj pool of layout '{name}', not a pmscope tx-pm pool; name a new file to create one"
            ))),
        },
    }
}
/// "PMSCKMTX" little-endian: the root's first word.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PMSCKMTX");
/// The root and entry layout this code reads and writes.
pub const LAYOUT_VERSION: u64 = 1;
/// Locks guarding the buckets.
pub const STRIPES: usize = 4096;
/// The most genomes a table can count (the width of the tag).
pub const MAX_GENOMES: u64 = u32::MAX as u64;
/// Entries per bucket at which the bucket array doubles (PMDK's hashmap_tx rule).
pub const MAX_LOAD: u64 = 2;

const R_MAGIC: usize = 0;
const R_VERSION: usize = 1;
const R_K: usize = 2;
const R_WORDS: usize = 3;
const R_INPUTS: usize = 4;
const R_DONE: usize = 5;
const R_BUCKETS: usize = 6;
const R_NBUCKETS: usize = 7;
const ROOT_BYTES: usize = 64;

const E_NEXT: usize = 0;
const E_META: usize = 1;
const E_KEY: usize = 2;

const TYPE_BUCKETS: u64 = 1;
const TYPE_ENTRY: u64 = 2;

const TAG_SHIFT: u32 = 32;
const COUNT_MASK: u64 = u32::MAX as u64;

/// Pool bytes per expected distinct k-mer: the entry as PMDK allocates it (header and
/// size class included, at most 128 B up to K = 128), bucket words at the lowest load, and
/// the undo log of one doubling (a snapshot of every entry's next word).
const BYTES_PER_KMER: u64 = 128 + 16 + 64;
/// Pool bytes beyond the entries: PMDK's metadata, lanes and heap zones.
const POOL_BASE_BYTES: u64 = 64 << 20;

fn words_bytes(n: usize) -> usize {
    n * 8
}

/// What the root says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// K.
    pub k: usize,
    /// Fingerprint of the genomes the pool is counting.
    pub inputs: u64,
    /// Genomes completed.
    pub done: u32,
    /// Buckets.
    pub buckets: u64,
}

/// What opening a pool found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Contents {
    /// Entries (distinct k-mers).
    pub entries: u64,
    /// Sum of the genome counts.
    pub counted: u64,
    /// The longest chain.
    pub longest_chain: u64,
}

/// The tx-pm table.
pub struct TxPmTable<const W: usize> {
    pool: ObjPool,
    root: u64,
    header: Header,
    buckets_off: u64,
    bits: u32,
    locks: Box<[Mutex<()>]>,
    marks: OnceLock<Box<[AtomicU64]>>,
    distinct: AtomicU64,
    failure: Mutex<Option<String>>,
    grown: u32,
    contents: Contents,
    target: TargetRecord,
    warnings: Vec<Warning>,
}

fn pmem_refused(what: &str, e: &PmemError) -> TableError {
    TableError::Refused(format!(
        "{what} is not a pmscope tx-pm pool PMDK can open ({}); name a new file to create one",
        e.message.trim_end_matches('\n')
    ))
}

/// A pool libpmemobj could not open or check: refused, or no libpmemobj to ask.
fn pool_refused(what: &str, e: PoolError) -> TableError {
    match e {
        PoolError::Unavailable(u) => TableError::Unavailable(u),
        PoolError::Pmem(e) => pmem_refused(what, &e),
    }
}

impl<const W: usize> TxPmTable<W> {
    const ENTRY_WORDS: usize = E_KEY + W;

    #[inline(always)]
    fn word(&self, off: u64, i: usize) -> &AtomicU64 {
        &self.pool.words()[off as usize / 8 + i]
    }

    #[inline(always)]
    fn load(&self, off: u64, i: usize) -> u64 {
        self.word(off, i).load(Ordering::Acquire)
    }

    #[inline(always)]
    fn store(&self, off: u64, i: usize, v: u64) {
        self.word(off, i).store(v, Ordering::Release)
    }

    #[inline(always)]
    fn bucket_of(hash: u64, bits: u32) -> usize {
        hash.checked_shr(64 - bits).unwrap_or(0) as usize
    }

    fn key_at(&self, e: u64) -> Kmer<W> {
        let mut kmer = Kmer::<W>::ZERO;
        for (j, w) in kmer.0.iter_mut().enumerate() {
            *w = self.load(e, E_KEY + j);
        }
        kmer
    }

    fn key_matches(&self, e: u64, kmer: &Kmer<W>) -> bool {
        (0..W).all(|j| self.load(e, E_KEY + j) == kmer.0[j])
    }

    /// Formats the root of a pool whose root is still zero: one transaction.
    fn format(
        pool: &ObjPool,
        root: u64,
        k: usize,
        inputs: u64,
        buckets: u64,
    ) -> Result<(), PmemError> {
        let w = |i: usize| &pool.words()[root as usize / 8 + i];
        pool.transaction(|tx| {
            tx.snapshot(root, ROOT_BYTES)?;
            let array = tx.alloc(words_bytes(buckets as usize), TYPE_BUCKETS, true)?;
            for (i, v) in [
                (R_VERSION, LAYOUT_VERSION),
                (R_K, k as u64),
                (R_WORDS, W as u64),
                (R_INPUTS, inputs),
                (R_DONE, 0),
                (R_BUCKETS, array),
                (R_NBUCKETS, buckets),
                (R_MAGIC, MAGIC),
            ] {
                w(i).store(v, Ordering::Release);
            }
            Ok(())
        })
    }

    /// Opens (or formats) the pool's table: checks the root against `k` and `inputs`,
    /// then walks every chain to count the entries and check them.
    fn with_pool(
        pool: ObjPool,
        what: &str,
        k: Option<usize>,
        inputs: Option<u64>,
        buckets: u64,
        create: bool,
    ) -> Result<Self, TableError> {
        let existing = pool.root_size();
        if existing != 0 && existing < ROOT_BYTES {
            return Err(TableError::Refused(format!(
                "{what} has a root object of {existing} bytes, not a tx-pm root; it was left as it is"
            )));
        }
        let root = pool
            .root(ROOT_BYTES)
            .map_err(|e| TableError::Refused(format!("{what}: {e}")))?;
        let rw = |i: usize| pool.words()[root as usize / 8 + i].load(Ordering::Acquire);
        if rw(R_MAGIC) == 0 && (0..ROOT_BYTES / 8).all(|i| rw(i) == 0) {
            // Ours by its layout name, and empty: a creation cut short, or a new pool.
            let (Some(k), true) = (k, create) else {
                return Err(TableError::Refused(format!(
                    "{what} is a tx-pm pool that holds no table yet (its creation was cut short)"
                )));
            };
            Self::format(&pool, root, k, inputs.unwrap_or(0), buckets).map_err(|e| {
                TableError::Limit(format!("cannot format the tx-pm pool {what}: {e}"))
            })?;
        } else if rw(R_MAGIC) != MAGIC || rw(R_VERSION) != LAYOUT_VERSION {
            return Err(TableError::Refused(format!(
                "{what} has the tx-pm layout name but not its root (magic {:#x}, version {}); it was left as it is",
                rw(R_MAGIC),
                rw(R_VERSION)
            )));
        }
        let header = Header {
            k: rw(R_K) as usize,
            inputs: rw(R_INPUTS),
            done: rw(R_DONE) as u32,
            buckets: rw(R_NBUCKETS),
        };
        if let Some(k) = k
            && header.k != k
        {
            return Err(TableError::Refused(format!(
                "{what} holds k-mers of K = {}, not {k}; give -k {} or name a new pool",
                header.k, header.k
            )));
        }
        if rw(R_WORDS) != W as u64 || crate::kmer::encode::words_for(header.k) != W {
            return Err(TableError::Refused(format!(
                "{what} has a corrupt root (K = {} in {} key words); it was left as it is",
                header.k,
                rw(R_WORDS)
            )));
        }
        if let Some(inputs) = inputs
            && inputs != header.inputs
        {
            return Err(TableError::Refused(format!(
                "{what} is counting other genomes; resume it with the genomes it was created for, or name a new pool"
            )));
        }
        let buckets_off = rw(R_BUCKETS);
        let n = header.buckets;
        if !n.is_power_of_two()
            || n > (pool.len() / 8) as u64
            || buckets_off == 0
            || !buckets_off.is_multiple_of(8)
            || buckets_off + n * 8 > pool.len() as u64
        {
            return Err(TableError::Refused(format!(
                "{what} has a corrupt root (bucket array of {n} buckets at offset {buckets_off}); it was left as it is"
            )));
        }
        let mut table = TxPmTable {
            root,
            header,
            buckets_off,
            bits: n.trailing_zeros(),
            locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            marks: OnceLock::new(),
            distinct: AtomicU64::new(0),
            failure: Mutex::new(None),
            grown: 0,
            contents: Contents::default(),
            target: TargetRecord {
                spec: String::new(),
                // Nothing verified here: `create` puts the probe's verified record in its place.
                achieved: pmscope_core::achieved::Achieved::unverified(
                    pool.len() as u64,
                    pmscope_core::achieved::Persistence::PageCache,
                ),
            },
            warnings: Vec::new(),
            pool,
        };
        table.contents = table
            .walk()
            .map_err(|m| TableError::Refused(format!("{what} {m}; it was left as it is")))?;
        table
            .distinct
            .store(table.contents.entries, Ordering::Relaxed);
        Ok(table)
    }

    /// Walks every chain: each entry inside the pool, in the bucket its key hashes to,
    /// with a count between 1 and its last genome, no genome beyond the one in progress.
    fn walk(&self) -> Result<Contents, String> {
        let len = self.pool.len() as u64;
        let entry_bytes = words_bytes(Self::ENTRY_WORDS) as u64;
        let limit = len / entry_bytes;
        let mut c = Contents::default();
        for b in 0..self.header.buckets as usize {
            let mut e = self.load(self.buckets_off, b);
            let mut chain = 0u64;
            while e != 0 {
                if !e.is_multiple_of(8) || e + entry_bytes > len {
                    return Err(format!("has an entry pointer outside the pool ({e})"));
                }
                let meta = self.load(e, E_META);
                let (count, tag) = (meta & COUNT_MASK, meta >> TAG_SHIFT);
                if count == 0 || count > tag || tag > self.header.done as u64 + 1 {
                    return Err(format!(
                        "has an entry that breaks the table's invariants (count {count}, last genome {tag}, {} genomes completed)",
                        self.header.done
                    ));
                }
                if Self::bucket_of(self.key_at(e).hash(), self.bits) != b {
                    return Err(format!("has an entry in the wrong bucket ({b})"));
                }
                c.entries += 1;
                c.counted += count;
                chain += 1;
                if c.entries > limit {
                    return Err("has a cycle in its chains".into());
                }
                e = self.load(e, E_NEXT);
            }
            c.longest_chain = c.longest_chain.max(chain);
        }
        Ok(c)
    }

    fn fail(&self, e: PmemError) {
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(format!(
                "a tx-pm insert failed in {}: {e} (the pool is too small for this job: create a new one)",
                self.pool.path().display()
            ));
        }
    }

    fn failed(&self) -> bool {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    fn lock(&self, bucket: usize) -> std::sync::MutexGuard<'_, ()> {
        self.locks[bucket % STRIPES]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The entry of `kmer` in bucket `b` (lock held by the caller).
    fn find_in(&self, b: usize, kmer: &Kmer<W>) -> Option<u64> {
        let mut e = self.load(self.buckets_off, b);
        while e != 0 {
            if self.key_matches(e, kmer) {
                return Some(e);
            }
            e = self.load(e, E_NEXT);
        }
        None
    }

    fn marks(&self) -> &[AtomicU64] {
        self.marks.get_or_init(|| {
            (0..self.pool.len().div_ceil(8 * 64))
                .map(|_| AtomicU64::new(0))
                .collect()
        })
    }

    fn entry_of(&self, e: u64) -> Entry {
        let meta = self.load(e, E_META);
        let marked = match self.marks.get() {
            Some(m) => {
                let i = e as usize / 8;
                m[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
            }
            None => false,
        };
        Entry {
            genomes: (meta & COUNT_MASK) as u32,
            marked,
        }
    }

    /// Doubles the bucket array until `need` entries fit at [`MAX_LOAD`], relinking every
    /// entry: one transaction (a crash leaves the old table or the new one).
    fn grow_to(&mut self, need: u64) -> Result<(), PmemError> {
        let mut n = self.header.buckets;
        while need > MAX_LOAD * n {
            n *= 2;
        }
        let bits = n.trailing_zeros();
        let (old, old_n, root) = (self.buckets_off, self.header.buckets, self.root);
        let new = self.pool.transaction(|tx| {
            tx.snapshot(root + words_bytes(R_BUCKETS) as u64, 16)?;
            let new = tx.alloc(words_bytes(n as usize), TYPE_BUCKETS, true)?;
            for b in 0..old_n as usize {
                let mut e = self.load(old, b);
                while e != 0 {
                    let next = self.load(e, E_NEXT);
                    let nb = Self::bucket_of(self.key_at(e).hash(), bits);
                    tx.snapshot(e, 8)?;
                    self.store(e, E_NEXT, self.load(new, nb));
                    self.store(new, nb, e);
                    e = next;
                }
            }
            self.store(root, R_BUCKETS, new);
            self.store(root, R_NBUCKETS, n);
            tx.free(old)?;
            Ok::<_, PmemError>(new)
        })?;
        self.buckets_off = new;
        self.header.buckets = n;
        self.bits = bits;
        self.grown += 1;
        // Marks are indexed by entry offset, which growing does not move.
        Ok(())
    }

    /// What opening found.
    pub fn contents(&self) -> Contents {
        self.contents
    }

    /// The header.
    pub fn header(&self) -> Header {
        self.header
    }
}

impl<const W: usize> KmerTable<W> for TxPmTable<W> {
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        let b = Self::bucket_of(hash, self.bits);
        pmscope_sys::prefetch::prefetch(self.word(self.buckets_off, b));
    }

    fn insert(&self, kmer: &Kmer<W>, hash: u64, genome: GenomeId) -> Inserted {
        if self.failed() {
            return Inserted::Repeat;
        }
        let tag = (genome as u64) << TAG_SHIFT;
        let b = Self::bucket_of(hash, self.bits);
        let _guard = self.lock(b);
        if let Some(e) = self.find_in(b, kmer) {
            let meta = self.load(e, E_META);
            if meta >> TAG_SHIFT == genome as u64 {
                return Inserted::Repeat;
            }
            let r = self.pool.transaction(|tx| {
                tx.snapshot(e + words_bytes(E_META) as u64, 8)?;
                self.store(e, E_META, tag | ((meta & COUNT_MASK) + 1));
                Ok::<_, PmemError>(())
            });
            return match r {
                Ok(()) => Inserted::Counted,
                Err(err) => {
                    self.fail(err);
                    Inserted::Repeat
                }
            };
        }
        let head_off = self.buckets_off + words_bytes(b) as u64;
        let r = self.pool.transaction(|tx| {
            tx.snapshot(head_off, 8)?;
            let e = tx.alloc(words_bytes(Self::ENTRY_WORDS), TYPE_ENTRY, false)?;
            self.store(e, E_NEXT, self.load(self.buckets_off, b));
            self.store(e, E_META, tag | 1);
            for (j, &x) in kmer.0.iter().enumerate() {
                self.store(e, E_KEY + j, x);
            }
            self.store(self.buckets_off, b, e);
            Ok::<_, PmemError>(())
        });
        match r {
            Ok(()) => Inserted::New,
            Err(err) => {
                self.fail(err);
                Inserted::Repeat
            }
        }
    }

    fn get(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        let b = Self::bucket_of(hash, self.bits);
        let _guard = self.lock(b);
        self.find_in(b, kmer).map(|e| self.entry_of(e))
    }

    fn mark(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        let b = Self::bucket_of(hash, self.bits);
        let _guard = self.lock(b);
        let e = self.find_in(b, kmer)?;
        let i = e as usize / 8;
        let before = self.marks()[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
        let meta = self.load(e, E_META);
        Some(Entry {
            genomes: (meta & COUNT_MASK) as u32,
            marked: before & (1 << (i % 64)) != 0,
        })
    }

    fn add_distinct(&self, n: u64) {
        self.distinct.fetch_add(n, Ordering::Relaxed);
    }

    fn distinct(&self) -> u64 {
        self.distinct.load(Ordering::Relaxed)
    }

    fn reserve(&mut self, additional: u64) -> Result<bool, TableError> {
        self.health()?;
        let need = self.distinct() + additional;
        if need <= MAX_LOAD * self.header.buckets {
            return Ok(false);
        }
        self.grow_to(need).map_err(|e| {
            TableError::Limit(format!(
                "cannot grow the tx-pm table in {} to {need} k-mers: {e} (create a larger pool)",
                self.pool.path().display()
            ))
        })?;
        Ok(true)
    }

    fn slots(&self) -> usize {
        (MAX_LOAD * self.header.buckets) as usize
    }

    /// Slot `s` is the `s % 2`-th entry of bucket `s / 2`; [`KmerTable::for_each_in`]
    /// visits the rest of longer chains.
    fn entry_at(&self, slot: usize) -> Option<(Kmer<W>, Entry)> {
        let mut e = self.load(self.buckets_off, slot / MAX_LOAD as usize);
        for _ in 0..slot % MAX_LOAD as usize {
            if e == 0 {
                return None;
            }
            e = self.load(e, E_NEXT);
        }
        (e != 0).then(|| (self.key_at(e), self.entry_of(e)))
    }

    fn for_each_in(&self, slots: std::ops::Range<usize>, f: &mut dyn FnMut(Kmer<W>, Entry)) {
        let per = MAX_LOAD as usize;
        for b in slots.start.div_ceil(per)..slots.end.div_ceil(per) {
            let mut e = self.load(self.buckets_off, b);
            while e != 0 {
                f(self.key_at(e), self.entry_of(e));
                e = self.load(e, E_NEXT);
            }
        }
    }

    fn footprint_bytes(&self) -> u64 {
        self.pool.len() as u64
    }

    fn facts(&self) -> TableFacts {
        TableFacts {
            kind: TableKind::TxPm.name(),
            slots: self.slots() as u64,
            slot_bytes: words_bytes(Self::ENTRY_WORDS) as u64,
            footprint_bytes: self.footprint_bytes(),
            load_factor: self.distinct() as f64 / self.header.buckets as f64,
            grown: self.grown,
            target: self.target.clone(),
            warnings: self.warnings.clone(),
            // Inside libpmemobj: not visible from here.
            persist: None,
            persister: None,
            parts: Vec::new(),
        }
    }

    fn completed(&self, genome: GenomeId) {
        if self.failed() {
            return;
        }
        let r = self.pool.transaction(|tx| {
            tx.snapshot(self.root + words_bytes(R_DONE) as u64, 8)?;
            self.store(self.root, R_DONE, genome as u64);
            Ok::<_, PmemError>(())
        });
        if let Err(e) = r {
            self.fail(e);
        }
    }

    fn resume_after(&self) -> GenomeId {
        self.header.done
    }

    fn health(&self) -> Result<(), TableError> {
        match &*self.failure.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(m) => Err(TableError::Limit(m.clone())),
            None => Ok(()),
        }
    }
}

static SCRATCH_SEQ: AtomicU32 = AtomicU32::new(0);

/// Where a pool without `--pool` goes: a scratch file on the target.
/// Why a fresh tx-pm pool cannot live on `target` (`None`: it can): libpmemobj maps a file
/// itself, so the target must name one (shm or file) and cannot be bound to a node.
pub fn refuses(target: &TargetSpec) -> Option<String> {
    if target.node.is_some() {
        return Some(format!(
            "--table tx-pm maps its pool through libpmemobj, which pmscope cannot bind to a NUMA node; drop ,node= from the target {target}"
        ));
    }
    match target.kind_name() {
        "shm" | "file" => None,
        other => Some(format!(
            "--table tx-pm keeps its pool in a file (libpmemobj), and a {other} target has none; use shm, file:DIR (an fsdax mount for real pmem) or --pool PATH"
        )),
    }
}

fn scratch_path(r: &TableRequest<'_>) -> Result<PathBuf, TableError> {
    if let Some(why) = refuses(r.target) {
        return Err(TableError::Refused(why));
    }
    let spec = r.target.to_string();
    let arg = spec.split_once(':').map(|(_, a)| a).unwrap_or("");
    let dir = match r.target.kind_name() {
        "shm" => PathBuf::from("/dev/shm"),
        _ => PathBuf::from(arg),
    };
    // 1 << 20 keeps these names clear of the mapping crate's own scratch sequence.
    let seq = (1 << 20) + SCRATCH_SEQ.fetch_add(1, Ordering::Relaxed);
    let name = pmscope_sys::scratch::named(std::process::id(), seq);
    if dir.is_dir() {
        pmscope_sys::scratch::remove_stale(&dir);
        Ok(dir.join(name))
    } else {
        // file:PATH naming a new file.
        Ok(dir)
    }
}

/// The pool file as pmscope maps it (read-only pre-fault, page sizes, DAX): probed through
/// a second mapping, since libpmemobj maps the pool itself.
fn probe(
    path: &Path,
    r: &TableRequest<'_>,
    spec: Option<String>,
) -> Result<(TargetRecord, Vec<Warning>), TableError> {
    let p = pmscope_mapping::pool::Pool::open(path, r.map_options)?;
    let mut record = p.record();
    if let Some(spec) = spec {
        record.spec = spec;
    }
    Ok((record, p.warnings().to_vec()))
}

impl<const W: usize> Create<W> for TxPmTable<W> {
    const KIND: TableKind = TableKind::TxPm;
    const MAX_GENOMES: u64 = MAX_GENOMES;

    fn create(r: &TableRequest<'_>) -> Result<Self, TableError> {
        // Without libpmemobj, nothing is named, cleaned up or read.
        TableKind::TxPm.available()?;
        let buckets = r
            .expected_distinct
            .div_ceil(MAX_LOAD)
            .max(64)
            .next_power_of_two();
        let bytes =
            (POOL_BASE_BYTES + r.expected_distinct * BYTES_PER_KMER).next_multiple_of(2 << 20);
        let (path, scratch) = match r.pool {
            Some(p) => (p.to_path_buf(), false),
            None => (scratch_path(r)?, true),
        };
        let what = path.display().to_string();
        let reopen = r.pool.is_some() && path.exists();
        let name = layout(r.k, r.inputs);
        if reopen {
            refuse_before_opening(&path, r.k, r.inputs)?;
            let pool = ObjPool::open(&path, &name).map_err(|e| pool_refused(&what, e))?;
            // A root left empty by an older pmscope's cut-short creation is formatted.
            let mut t = Self::with_pool(pool, &what, Some(r.k), Some(r.inputs), buckets, true)?;
            (t.target, t.warnings) = probe(&path, r, None)?;
            return Ok(t);
        }
        if !scratch {
            return create_named(&path, r, &name, bytes, buckets);
        }
        let pool = create_pool(&path, &what, &name, bytes)?;
        let opened = Self::with_pool(pool, &what, Some(r.k), Some(r.inputs), buckets, true)
            .and_then(|mut t| {
                (t.target, t.warnings) = probe(&path, r, Some(r.target.to_string()))?;
                Ok(t)
            });
        if !r.map_options.keep {
            // The pool stays mapped; its name goes now, so nothing outlives the process.
            let _ = std::fs::remove_file(&path);
        }
        opened
    }
}

fn create_pool(path: &Path, what: &str, layout: &str, bytes: u64) -> Result<ObjPool, TableError> {
    ObjPool::create(path, layout, bytes).map_err(|e| match e {
        PoolError::Unavailable(u) => TableError::Unavailable(u),
        PoolError::Pmem(e) if e.errno == libc::EEXIST => {
            TableError::Refused(format!("cannot create the pool {what}: it exists"))
        }
        PoolError::Pmem(e) => {
            TableError::Limit(format!("cannot create the tx-pm pool {what}: {e}"))
        }
    })
}

/// Creates the `--pool` file `path` so that a kill at any moment leaves no file there or a
/// pool that opens: libpmemobj creates it under a scratch name in the same directory (the
/// naming later runs sweep once its process is gone), the table's root is formatted in it,
/// and only then is it linked as `path` (never replacing a file that appeared meanwhile)
/// and the directory synced.
fn create_named<const W: usize>(
    path: &Path,
    r: &TableRequest<'_>,
    layout: &str,
    bytes: u64,
    buckets: u64,
) -> Result<TxPmTable<W>, TableError> {
    let what = path.display().to_string();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    pmscope_sys::scratch::remove_stale(&dir);
    let seq = (1 << 20) + SCRATCH_SEQ.fetch_add(1, Ordering::Relaxed);
    let partial = dir.join(pmscope_sys::scratch::named(std::process::id(), seq));
    let made = create_pool(&partial, &what, layout, bytes).and_then(|pool| {
        let mut t =
            TxPmTable::<W>::with_pool(pool, &what, Some(r.k), Some(r.inputs), buckets, true)?;
        std::fs::hard_link(&partial, path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                TableError::Refused(format!("cannot create the pool {what}: it exists"))
            } else {
                TableError::Limit(format!("cannot create the tx-pm pool {what}: {e}"))
            }
        })?;
        t.pool.set_path(path);
        Ok(t)
    });
    let _ = std::fs::remove_file(&partial);
    let mut t = made?;
    std::fs::File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| TableError::Limit(format!("cannot sync the directory of {what}: {e}")))?;
    (t.target, t.warnings) = probe(path, r, None)?;
    Ok(t)
}

/// Why the pool file `path` must not be handed to libpmemobj to resume K = `k` for
/// `inputs`, read without opening it (libpmemobj's open writes before it checks): its
/// layout name, then PMDK's own read-only consistency check (`pmemobj_check`, which maps
/// the file copy-on-write), which refuses a truncated pool or a corrupt PMDK header.
fn refuse_before_opening(path: &Path, k: usize, inputs: u64) -> Result<(), TableError> {
    if let Some(refusal) = mismatch(path, k, inputs) {
        return Err(refusal);
    }
    let what = path.display();
    match ObjPool::check(path, &layout(k, inputs)) {
        Ok(true) => Ok(()),
        Ok(false) => Err(TableError::Refused(format!(
            "{what} is inconsistent by PMDK's check (pmemobj_check: truncated or damaged); it was left as it is"
        ))),
        Err(PoolError::Unavailable(u)) => Err(TableError::Unavailable(u)),
        Err(PoolError::Pmem(e)) => Err(TableError::Refused(format!(
            "{what} is not a tx-pm pool PMDK can check ({}); it was left as it is",
            e.message.trim_end_matches('\n')
        ))),
    }
}

/// Checks a closed tx-pm pool: PMDK's consistency check (which changes nothing), then
/// opens it (PMDK rolls back a transaction a crash cut short) and walks the table.
pub fn check_pool(path: &Path) -> Result<(Header, Contents), TableError> {
    let what = path.display().to_string();
    let Some(name) = stored_layout(path).filter(|n| parse_layout(n).is_some()) else {
        // Foreign, another layout or a newer version: said as a resume would say it.
        return Err(mismatch(path, 0, 0).unwrap_or_else(|| {
            TableError::Refused(format!(
                "{what} is not a pmscope tx-pm pool (no libpmemobj header with its layout name)"
            ))
        }));
    };
    match ObjPool::check(path, &name) {
        Ok(true) => {}
        Ok(false) => {
            return Err(TableError::Refused(format!(
                "{what} is inconsistent by PMDK's check (pmemobj_check); it was left as it is"
            )));
        }
        Err(e) => return Err(pool_refused(&what, e)),
    }
    let pool = ObjPool::open(path, &name).map_err(|e| pool_refused(&what, e))?;
    if pool.root_size() < ROOT_BYTES {
        return Err(TableError::Refused(format!(
            "{what} is a tx-pm pool that holds no table yet (its creation was cut short)"
        )));
    }
    let root = pool
        .root(ROOT_BYTES)
        .map_err(|e| TableError::Refused(format!("{what}: {e}")))?;
    let k = pool.words()[root as usize / 8 + R_K].load(Ordering::Acquire) as usize;
    macro_rules! open_w {
        ($w:literal) => {
            TxPmTable::<$w>::with_pool(pool, &what, None, None, 64, false)
                .map(|t| (t.header, t.contents))
        };
    }
    match crate::kmer::encode::words_for(k.clamp(1, crate::kmer::encode::MAX_K)) {
        1 => open_w!(1),
        2 => open_w!(2),
        3 => open_w!(3),
        _ => open_w!(4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmer::encode::for_each_kmer;

    fn request<'a>(
        target: &'a pmscope_mapping::TargetSpec,
        opts: &'a pmscope_mapping::MapOptions,
        pool: Option<&'a Path>,
        expected: u64,
    ) -> TableRequest<'a> {
        TableRequest {
            k: 11,
            target,
            map_options: opts,
            expected_distinct: expected,
            parallel: 2,
            pool,
            persist: pmscope_persist::PersistChoice::Named(
                pmscope_persist::PersistStrategy::Clflush,
            ),
            features: pmscope_sys::cpu::CpuFeatures::detect(),
            inputs: 42,
            partition: None,
        }
    }

    #[test]
    fn grows_in_one_transaction_and_reopens_with_every_count() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let path = dir.path().join("grow.pool");
        let target: pmscope_mapping::TargetSpec = "shm:4k".parse().unwrap();
        let opts = pmscope_mapping::MapOptions::host();
        let seq = crate::kmer::synth::random_bases(30_000, 0x2545_F491_4F6C_DD1D);
        let mut kmers = std::collections::HashSet::new();
        for_each_kmer::<1>(&seq, 11, |_, x, _| {
            kmers.insert(*x);
        });
        {
            // Sized for 64 k-mers: it must grow several times.
            let mut t = TxPmTable::<1>::create(&request(&target, &opts, Some(&path), 64)).unwrap();
            assert_eq!(t.header().buckets, 64);
            for genome in 1..=2u32 {
                assert!(t.reserve(kmers.len() as u64).is_ok());
                let mut new = 0;
                for x in &kmers {
                    new += u64::from(t.insert(x, x.hash(), genome) == Inserted::New);
                }
                t.add_distinct(new);
                t.completed(genome);
                t.health().unwrap();
            }
            assert!(t.facts().grown >= 1, "{}", t.facts().grown);
            assert!(t.header().buckets * MAX_LOAD >= kmers.len() as u64);
            for x in &kmers {
                assert_eq!(t.get(x, x.hash()).map(|e| e.genomes), Some(2));
            }
            let mut seen = 0;
            t.for_each_in(0..t.slots(), &mut |_, e| {
                assert_eq!(e.genomes, 2);
                seen += 1;
            });
            assert_eq!(seen, kmers.len());
        }
        assert!(ObjPool::check(&path, &layout(11, 42)).unwrap());
        assert_eq!(stored_layout(&path), Some(layout(11, 42)));
        let t = TxPmTable::<1>::create(&request(&target, &opts, Some(&path), 64)).unwrap();
        assert_eq!(t.distinct(), kmers.len() as u64);
        assert_eq!(t.resume_after(), 2);
        assert_eq!(t.contents().counted, 2 * kmers.len() as u64);
        // A marked k-mer reads back marked; the mark never reaches the pool.
        let x = kmers.iter().next().unwrap();
        assert_eq!(t.mark(x, x.hash()).map(|e| e.marked), Some(false));
        assert_eq!(t.get(x, x.hash()).map(|e| e.marked), Some(true));
    }

    #[test]
    fn targets_without_a_file_are_refused() {
        let opts = pmscope_mapping::MapOptions::host();
        for spec in ["dram:4k", "shm:4k,node=0"] {
            let target: pmscope_mapping::TargetSpec = spec.parse().unwrap();
            let e = TxPmTable::<1>::create(&request(&target, &opts, None, 64))
                .err()
                .unwrap();
            assert!(matches!(e, TableError::Refused(_)), "{spec}: {e}");
        }
    }
}
