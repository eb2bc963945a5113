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

pub mod volatile;

use super::encode::Kmer;

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
}

/// A concurrent set of canonical k-mers with a genome count per k-mer.
///
/// Placement contract: a k-mer's place in the table follows the high bits of its hash
/// (a larger hash never lands in an earlier region), so that the drivers in
/// [`super::build`] can apply k-mers grouped by hash prefix one table region at a time.
pub trait KmerTable<const W: usize>: Sync {
    /// Starts loading the memory `insert`/`get`/`mark` of this hash will touch, so a batch
    /// of lookups overlaps its cache misses.
    fn prefetch(&self, hash: u64);

    /// Adds `kmer` (canonical, `hash` = `kmer.hash()`) for `genome`, counting the genome at
    /// most once.
    fn insert(&self, kmer: &Kmer<W>, hash: u64, genome: GenomeId) -> Inserted;

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

    /// Bytes of memory the table occupies.
    fn footprint_bytes(&self) -> u64;
}
