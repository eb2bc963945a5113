//! The k-mer table interface: what the set operations need from a table, so that the
//! volatile table here and the persistent tables (a later issue) are interchangeable.
//!
//! A table maps a canonical k-mer to an [`Entry`]: in how many genomes it occurs (each
//! genome counted at most once, however often the k-mer repeats in it) and a mark the
//! set operations use ("seen in the out-group", "already written").
//!
//! Concurrency contract: `insert`, `get` and `mark` may be called from many threads at
//! once. All concurrent `insert`s must be for the *same* genome: callers insert one genome
//! at a time, splitting its k-mers across threads (see [`super::build`]), which is what lets
//! a table remember a single "last genome" per k-mer instead of one per thread.
//! `reserve` takes `&mut self`, so it runs between genomes, never during inserts.
//!
//! Registry: [`TableKind`] names every implementation (its name, help line, structure and
//! [`Durability`]) and is the one place a new table is listed; a table makes itself through [`Create`], and the job is generic over it (see
//! [`super::job`]), so the job never names a concrete table.

#[cfg(test)]
mod crash_check;
pub mod partition;
pub mod static_pm;
pub mod tx_pm;
pub mod volatile;

use super::encode::Kmer;
use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_persist::{PersistChoice, Persister};
use pmscope_sys::cpu::CpuFeatures;
use std::path::Path;

/// A genome's number as tables store it: 1, 2, ... in insertion order (0 is never used).
pub type GenomeId = u32;

/// What a table knows about a k-mer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Genomes the k-mer occurs in.
    pub genomes: u32,
    /// Set by [`KmerTable::mark`].
    pub marked: bool,
}

/// The outcome of an insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// The k-mer was not in the table.
    New,
    /// The k-mer was there and this genome is now counted.
    Counted,
    /// This genome had already counted it.
    Repeat,
}

/// Why a table could not be created or grown.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The memory target refused the mapping.
    #[error(transparent)]
    Target(#[from] pmscope_mapping::TargetError),
    /// A limit of the slot layout.
    #[error("{0}")]
    Limit(String),
    /// A pool or persistence request refused (foreign, corrupt or mismatching pool, an
    /// unsupported strategy): the request is at fault, nothing was changed.
    #[error("{0}")]
    Refused(String),
    /// The table needs a library this machine lacks (tx-pm: PMDK's libpmemobj): the
    /// machine is at fault, not the request; nothing was touched.
    #[error("{}", .0.needed_by("the tx-pm table"))]
    Unavailable(pmscope_pmemobj::Unavailable),
}

impl TableError {
    /// Whether the request is at fault (exit 2: a refused pool or strategy, a target the
    /// user named wrongly) rather than the machine (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            TableError::Refused(_) => true,
            TableError::Target(t) => t.is_usage(),
            TableError::Limit(_) | TableError::Unavailable(_) => false,
        }
    }
}

/// How a kind of table makes its stores durable: what its records say about flushes and
/// fences, and what its target is judged against (`pmscope_persist::domain_warning`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Nothing is made durable.
    None,
    /// pmscope persists with the `--persist` strategy ([`TableFacts::persister`]) and counts
    /// its flushes and fences.
    Persister,
    /// libpmemobj persists inside its transactions (libpmem chooses how), uncounted.
    Libpmemobj,
}

/// The table implementations, as `--table` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TableKind {
    /// [`volatile::VolatileTable`]: concurrent open addressing in the target's memory.
    #[default]
    Volatile,
    /// [`static_pm::StaticPmTable`]: the seed's Static-HT, log-free and crash-consistent
    /// in a persistent pool.
    StaticPm,
    /// [`tx_pm::TxPmTable`]: the seed's PMDK-HT, chained buckets in a libpmemobj pool,
    /// every insert a transaction.
    TxPm,
}

impl TableKind {
    /// Every kind, in the order help and benchmarks list them.
    pub const ALL: [TableKind; 3] = [TableKind::Volatile, TableKind::StaticPm, TableKind::TxPm];

    /// The kind's name, as the CLI spells it and records carry it.
    pub fn name(self) -> &'static str {
        match self {
            TableKind::Volatile => "volatile",
            TableKind::StaticPm => "static-pm",
            TableKind::TxPm => "tx-pm",
        }
    }

    /// One line for `--help`.
    pub fn about(self) -> &'static str {
        match self {
            TableKind::Volatile => "Concurrent open addressing in the target's memory",
            TableKind::StaticPm => {
                "The seed's Static-HT: log-free, crash-consistent, in a persistent pool"
            }
            TableKind::TxPm => {
                "The seed's PMDK-HT: chained buckets in a libpmemobj pool, every insert a transaction (needs a file target: shm, file:DIR, or --pool)"
            }
        }
    }

    /// Its data structure, as seed 003's Table 9 names it.
    pub fn structure(self) -> &'static str {
        match self {
            TableKind::Volatile => "open addressing",
            TableKind::StaticPm => "Static-HT",
            TableKind::TxPm => "PMDK-HT",
        }
    }

    /// How it makes its stores durable.
    pub fn durability(self) -> Durability {
        match self {
            TableKind::Volatile => Durability::None,
            TableKind::StaticPm => Durability::Persister,
            TableKind::TxPm => Durability::Libpmemobj,
        }
    }
}

impl std::fmt::Display for TableKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TableKind {
    type Err = String;

    fn from_str(s: &str) -> Result<TableKind, String> {
        TableKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = TableKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown table '{s}': choose one of {}", names.join(", "))
            })
    }
}

/// Something generic over the table type, run by [`TableKind::with`] with the kind's type.
pub trait WithTable<const W: usize> {
    /// What it returns.
    type Output;
    /// Runs with table type `T`.
    fn run<T: Create<W>>(self) -> Self::Output;
}

impl TableKind {
    /// Whether this kind of table can be made on this machine: tx-pm needs libpmemobj,
    /// loaded at run time (the others need nothing). For refusing a job before any work.
    pub fn available(self) -> Result<(), TableError> {
        match self {
            TableKind::TxPm => pmscope_pmemobj::available().map_err(TableError::Unavailable),
            TableKind::Volatile | TableKind::StaticPm => Ok(()),
        }
    }

    /// Why a fresh table of this kind cannot live on `target` (`None`: it can), for
    /// refusing a request before any table is measured: tx-pm's pool is a file libpmemobj
    /// maps itself.
    pub fn refuses(self, target: &TargetSpec) -> Option<String> {
        match self {
            TableKind::TxPm => tx_pm::refuses(target),
            TableKind::Volatile | TableKind::StaticPm => None,
        }
    }

    /// Runs `f` with this kind's table type: the one place that maps kinds to types.
    pub fn with<const W: usize, F: WithTable<W>>(self, f: F) -> F::Output {
        match self {
            TableKind::Volatile => f.run::<volatile::VolatileTable<W>>(),
            TableKind::StaticPm => f.run::<static_pm::StaticPmTable<W>>(),
            TableKind::TxPm => f.run::<tx_pm::TxPmTable<W>>(),
        }
    }
}

/// What a job needs to make a table.
#[derive(Debug, Clone)]
pub struct TableRequest<'a> {
    /// K-mer length.
    pub k: usize,
    /// Where the table lives.
    pub target: &'a TargetSpec,
    /// Mapping options of the target.
    pub map_options: &'a MapOptions,
    /// Distinct k-mers the table is sized for.
    pub expected_distinct: u64,
    /// Threads that may map (and pre-fault) the table in parallel.
    pub parallel: usize,
    /// A pool file to create or reopen (persistent tables; others ignore it).
    pub pool: Option<&'a Path>,
    /// How a persistent table makes its stores durable: named, or the default's fallback
    /// for `features` (clwb, else clflushopt, else clflush).
    pub persist: PersistChoice,
    /// The CPU the table runs on (CPUID): which flushes it may execute.
    pub features: CpuFeatures,
    /// A fingerprint of the genomes inserted, so a reopened pool resumes only its own job.
    pub inputs: u64,
    /// The nodes of a partitioned table ([`partition`]); other tables ignore it.
    pub partition: Option<&'a partition::NodePlan>,
}

/// A table kind that can be made from a [`TableRequest`]: what the job is generic over.
pub trait Create<const W: usize>: KmerTable<W> + Sized {
    /// Its registry entry.
    const KIND: TableKind;
    /// The most genomes it can count.
    const MAX_GENOMES: u64;

    /// Makes an empty table.
    fn create(request: &TableRequest<'_>) -> Result<Self, TableError>;
}

/// The table as used, for the record.
#[derive(Debug, Clone)]
pub struct TableFacts {
    /// The kind's name ([`TableKind::name`]).
    pub kind: &'static str,
    /// Slots.
    pub slots: u64,
    /// Bytes per slot.
    pub slot_bytes: u64,
    /// Bytes mapped.
    pub footprint_bytes: u64,
    /// Distinct k-mers / slots at the end.
    pub load_factor: f64,
    /// Times it grew.
    pub grown: u32,
    /// The target as asked and as achieved.
    pub target: TargetRecord,
    /// Where the mapping differs from the request.
    pub warnings: Vec<Warning>,
    /// (flushes, fences) a persistent table issued.
    pub persist: Option<(u64, u64)>,
    /// How it persisted, where pmscope persists (static-pm): the strategy actually used,
    /// whether it was the default's fallback, the instructions.
    pub persister: Option<Persister>,
    /// The sub-tables of a partitioned table, one per node (empty: one table).
    pub parts: Vec<partition::PartFacts>,
}

/// When static-pm fences the slots a thread wrote (the other tables ignore it: the volatile
/// table makes nothing durable, tx-pm commits every insert inside libpmemobj).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fence {
    /// One fence per group of up to [`Unpersisted::BATCH`] written lines: the written lines
    /// are flushed together and drained together, pmscope's default.
    #[default]
    PerGroup,
    /// A flush and a fence after every written slot, as the seed's Static-HT issues
    /// `pmem_flush` per slot: each insert is acknowledged on its own.
    PerSlot,
}

impl Fence {
    /// Every policy, in the order help lists them.
    pub const ALL: [Fence; 2] = [Fence::PerGroup, Fence::PerSlot];

    /// Its name, as the CLI spells it and records carry it.
    pub fn name(self) -> &'static str {
        match self {
            Fence::PerGroup => "per-group",
            Fence::PerSlot => "per-slot",
        }
    }

    /// One line for `--help`.
    pub fn about(self) -> &'static str {
        match self {
            Fence::PerGroup => "One fence per group of up to 256 written slots (pmscope's default)",
            Fence::PerSlot => "A flush and a fence after every written slot (the seed's Static-HT)",
        }
    }

    /// Written lines per persisted group: what the drivers group by.
    pub fn lines(self) -> usize {
        match self {
            Fence::PerGroup => Unpersisted::BATCH,
            Fence::PerSlot => 1,
        }
    }
}

impl std::fmt::Display for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Fence {
    type Err = String;

    fn from_str(s: &str) -> Result<Fence, String> {
        Fence::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown fence policy '{s}': choose per-group or per-slot"))
    }
}

/// Writes an inserting thread has made but not yet persisted (group persistence): filled by
/// [`KmerTable::insert_deferred`], made durable by [`KmerTable::persist_deferred`]. One per
/// thread; the words are the table's own indexes (for `static-pm`, the words whose cache
/// lines must be written back).
#[derive(Debug)]
pub struct Unpersisted {
    words: Vec<usize>,
    /// The sub-table of a partitioned table the words belong to.
    part: usize,
    /// Words at which the group is [`full`](Self::full).
    batch: usize,
}

impl Default for Unpersisted {
    fn default() -> Self {
        Self::with_batch(Self::BATCH)
    }
}

impl Unpersisted {
    /// Inserts a driver should group before it calls [`KmerTable::persist_deferred`]: enough
    /// to amortise one fence, few enough that the written lines are still in the cache.
    pub const BATCH: usize = 256;

    /// An empty group that is full at `batch` words (the drivers' default is
    /// [`BATCH`](Self::BATCH); the crash-image checker makes groups of a few lines, so that
    /// its runs cross many group boundaries).
    pub fn with_batch(batch: usize) -> Self {
        Unpersisted {
            words: Vec::new(),
            part: 0,
            batch: batch.max(1),
        }
    }

    /// Records that word `word` must be written back.
    #[inline(always)]
    pub fn push(&mut self, word: usize) {
        self.words.push(word);
    }

    /// Words waiting.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether a driver should persist now.
    #[inline(always)]
    pub fn full(&self) -> bool {
        self.words.len() >= self.batch
    }

    /// The waiting words.
    pub fn words(&self) -> &[usize] {
        &self.words
    }

    /// Forgets the waiting words (once they are persisted).
    pub fn clear(&mut self) {
        self.words.clear();
    }
}

/// A concurrent set of canonical k-mers with a genome count per k-mer.
///
/// Placement contract: a k-mer's place in the table follows the high bits of its hash
/// (a larger hash never lands in an earlier region), so that the drivers in
/// [`super::build`] can apply k-mers grouped by hash prefix one table region at a time. A
/// partitioned table keeps it inside each part (the drivers' exchange feeds it part by part).
pub trait KmerTable<const W: usize>: Sync {
    /// Starts loading the memory `insert`/`get`/`mark` of this hash will touch, so a batch
    /// of lookups overlaps its cache misses.
    fn prefetch(&self, hash: u64);

    /// Adds `kmer` (canonical, `hash` = `kmer.hash()`) for `genome`, counting the genome at
    /// most once.
    fn insert(&self, kmer: &Kmer<W>, hash: u64, genome: GenomeId) -> Inserted;

    /// `insert`, but a persistent table may leave making it durable to the next
    /// [`persist_deferred`](Self::persist_deferred) with the same `unpersisted` (group
    /// persistence: one fence for many inserts). Until then the insert is not acknowledged.
    #[inline(always)]
    fn insert_deferred(
        &self,
        kmer: &Kmer<W>,
        hash: u64,
        genome: GenomeId,
        _unpersisted: &mut Unpersisted,
    ) -> Inserted {
        self.insert(kmer, hash, genome)
    }

    /// Makes every insert recorded in `unpersisted` durable and empties it: when it
    /// returns, those inserts are acknowledged.
    fn persist_deferred(&self, _unpersisted: &mut Unpersisted) {}

    /// The entry of `kmer`, if present.
    fn get(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry>;

    /// Marks `kmer` if present; returns its entry as it was before.
    fn mark(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry>;

    /// Adds `n` k-mers that inserts reported as [`Inserted::New`] to the distinct count.
    /// Inserters report in batches so that threads do not contend on one counter.
    fn add_distinct(&self, n: u64);

    /// Distinct k-mers in the table (as reported through `add_distinct`).
    fn distinct(&self) -> u64;

    /// Makes room so that `additional` more distinct k-mers fit without exceeding the
    /// table's maximum load, growing it (and rehashing) if needed. Returns whether it grew.
    fn reserve(&mut self, additional: u64) -> Result<bool, TableError>;

    /// Number of slots, for iteration with [`KmerTable::entry_at`].
    fn slots(&self) -> usize;

    /// The k-mer and entry in slot `slot`, if occupied.
    fn entry_at(&self, slot: usize) -> Option<(Kmer<W>, Entry)>;

    /// Calls `f` with every k-mer held in the slots `slots` (a chained table keeps several
    /// entries behind one slot); the ranges of a partition of `0..slots()` visit every
    /// k-mer once.
    fn for_each_in(&self, slots: std::ops::Range<usize>, f: &mut dyn FnMut(Kmer<W>, Entry)) {
        for s in slots {
            if let Some((x, e)) = self.entry_at(s) {
                f(x, e);
            }
        }
    }

    /// Bytes of memory the table occupies.
    fn footprint_bytes(&self) -> u64;

    /// What the record says about the table: kind, geometry, target and warnings.
    fn facts(&self) -> TableFacts;

    /// Genomes 1..=`genome` are all inserted: a persistent table records it durably, so
    /// a reopened table resumes after it.
    fn completed(&self, _genome: GenomeId) {}

    /// The last genome a reopened table had completed (0 for a new table).
    fn resume_after(&self) -> GenomeId {
        0
    }

    /// Whether every insert so far succeeded: a table whose inserts can fail (a full
    /// libpmemobj pool) remembers the first failure and reports it here; the job asks
    /// after each genome.
    fn health(&self) -> Result<(), TableError> {
        Ok(())
    }

    /// Sub-tables a partitioned table routes k-mers to by
    /// [`partition::part_of`] (1: not partitioned). The drivers insert into a table of
    /// several parts through their exchange, each worker into its own node's part.
    fn parts(&self) -> usize {
        1
    }

    /// A worker inserted `inserts` k-mers into part `part`, `new` of them new: the
    /// exchange's report, in place of [`add_distinct`](Self::add_distinct).
    fn add_part_counts(&self, _part: usize, _inserts: u64, new: u64) {
        self.add_distinct(new);
    }
}
