//! Running the production path on a recording memory: the pool formatted by the table's
//! own `format`, genomes inserted by the job's insert loop (`job::insert_genomes`) through
//! the drivers (`build::Driver`) with two pinned workers, the table's `PoolWords` over a
//! [`RecordedWords`] and the user's `Persister`. The one addition is [`Observed`], a
//! transparent table wrapper that marks in the log when a group's persist and a genome's
//! completion have *returned* (acknowledgements), as only a caller can see that.

use crate::kmer::build::{Driver, Workers};
use crate::kmer::encode::Kmer;
use crate::kmer::job::insert_genomes;
use crate::kmer::read::Genome;
use crate::kmer::table::static_pm::{PoolMemory, PoolWords, StaticPm};
use crate::kmer::table::{
    Entry, GenomeId, Inserted, KmerTable, TableError, TableFacts, Unpersisted,
};
use pmscope_core::achieved::{Achieved, Persistence};
use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_persist::record::RecordedWords;
use pmscope_persist::{Persister, WordMemory};
use std::sync::atomic::{AtomicU64, Ordering};

/// Marker: the pool is formatted (`format` returned).
pub const CREATED: u64 = 1;
/// Marker: the pool is opened and recovered (`open` returned).
pub const OPENED: u64 = 2;
/// Marker: a worker's `persist_deferred` returned: its inserts so far are acknowledged.
pub const PERSISTED: u64 = 3;
/// Marker: the new pool was named (synced and linked into its directory): from here on a
/// crash leaves a pool file, which must open.
pub const NAMED: u64 = 4;
/// Marker: `completed(g)` returned (value `COMPLETED + g`).
pub const COMPLETED: u64 = 1 << 32;

fn no_target() -> TargetRecord {
    TargetRecord {
        spec: "crash-check".into(),
        achieved: Achieved::unverified(0, Persistence::Emulated),
    }
}

impl PoolMemory for RecordedWords {
    fn target_record(&self) -> TargetRecord {
        no_target()
    }
    fn target_warnings(&self) -> Vec<Warning> {
        Vec::new()
    }
}

/// Plain words: a crash image reopened and resumed without recording.
pub struct Plain(Box<[AtomicU64]>);

impl Plain {
    pub fn of(image: &[u64]) -> Plain {
        Plain(image.iter().map(|&w| AtomicU64::new(w)).collect())
    }

    /// The words as they are now.
    pub fn snapshot(&self) -> Vec<u64> {
        self.0.iter().map(|w| w.load(Ordering::Relaxed)).collect()
    }
}

impl WordMemory for Plain {
    fn words(&self) -> &[AtomicU64] {
        &self.0
    }
}

impl PoolMemory for Plain {
    fn target_record(&self) -> TargetRecord {
        no_target()
    }
    fn target_warnings(&self) -> Vec<Warning> {
        Vec::new()
    }
}

/// The production table over a recording memory.
pub type RecordedTable<const W: usize> = StaticPm<W, PoolWords<RecordedWords>>;

/// A table wrapper that marks acknowledgements (see the module comment); everything else
/// goes to the table unchanged.
pub struct Observed<'t, const W: usize>(pub &'t mut RecordedTable<W>);

impl<const W: usize> Observed<'_, W> {
    fn log(&self) -> &RecordedWords {
        self.0.memory().backing()
    }
}

impl<const W: usize> KmerTable<W> for Observed<'_, W> {
    fn prefetch(&self, hash: u64) {
        self.0.prefetch(hash)
    }
    fn insert(&self, kmer: &Kmer<W>, hash: u64, genome: GenomeId) -> Inserted {
        self.0.insert(kmer, hash, genome)
    }
    fn insert_deferred(
        &self,
        kmer: &Kmer<W>,
        hash: u64,
        genome: GenomeId,
        unpersisted: &mut Unpersisted,
    ) -> Inserted {
        self.0.insert_deferred(kmer, hash, genome, unpersisted)
    }
    fn persist_deferred(&self, unpersisted: &mut Unpersisted) {
        self.0.persist_deferred(unpersisted);
        self.log().mark(PERSISTED);
    }
    fn get(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        self.0.get(kmer, hash)
    }
    fn mark(&self, kmer: &Kmer<W>, hash: u64) -> Option<Entry> {
        KmerTable::mark(&*self.0, kmer, hash)
    }
    fn add_distinct(&self, n: u64) {
        self.0.add_distinct(n)
    }
    fn distinct(&self) -> u64 {
        self.0.distinct()
    }
    fn reserve(&mut self, additional: u64) -> Result<bool, TableError> {
        self.0.reserve(additional)
    }
    fn slots(&self) -> usize {
        self.0.slots()
    }
    fn entry_at(&self, slot: usize) -> Option<(Kmer<W>, Entry)> {
        self.0.entry_at(slot)
    }
    fn footprint_bytes(&self) -> u64 {
        self.0.footprint_bytes()
    }
    fn facts(&self) -> TableFacts {
        self.0.facts()
    }
    fn completed(&self, genome: GenomeId) {
        self.0.completed(genome);
        self.log().mark(COMPLETED + genome as u64);
    }
    fn resume_after(&self) -> GenomeId {
        self.0.resume_after()
    }
    fn health(&self) -> Result<(), TableError> {
        self.0.health()
    }
    fn parts(&self) -> usize {
        self.0.parts()
    }
    fn add_part_counts(&self, part: usize, inserts: u64, new: u64) {
        self.0.add_part_counts(part, inserts, new)
    }
}

/// How the drivers run: workers, their group size, and which insert path.
#[derive(Debug, Clone, Copy)]
pub struct Drive {
    /// Worker threads.
    pub workers: usize,
    /// Written lines per persisted group.
    pub group: usize,
    /// Through the region buckets (the path of tables larger than the caches) rather than
    /// direct probing.
    pub buckets: bool,
}

impl Drive {
    pub fn driver<const W: usize>(self) -> Driver<W> {
        let d = Driver::<W>::new(Workers::new(self.workers).expect("workers")).grouping(self.group);
        if self.buckets { d.direct_up_to(0) } else { d }
    }
}

/// The distinct-k-mer count after each genome, as the job's estimate would give it.
pub fn distinct_after<const W: usize>(genomes: &[Genome], k: usize) -> Vec<f64> {
    let mut seen = std::collections::HashSet::<Kmer<W>>::new();
    genomes
        .iter()
        .map(|g| {
            for c in &g.contigs {
                crate::kmer::encode::for_each_kmer::<W>(g.contig_seq(c), k, |_, x, _| {
                    seen.insert(*x);
                });
            }
            seen.len() as f64
        })
        .collect()
}

/// Inserts what `table` does not hold yet through the job's loop and the drivers.
pub fn insert_rest<const W: usize, T: KmerTable<W>>(
    table: &mut T,
    driver: &Driver<W>,
    genomes: &[Genome],
    k: usize,
) -> Result<(), String> {
    let after = distinct_after::<W>(genomes, k);
    insert_genomes(driver, table, genomes, &after, k)
        .map(|_| ())
        .map_err(|e| format!("the job's insert loop failed: {e}"))
}

/// The production table over plain words.
pub type PlainTable<const W: usize> = StaticPm<W, PoolWords<Plain>>;

/// Opens `image` unrecorded (recovering it), as `pmscope kmer` reopens a pool.
pub fn open_plain<const W: usize>(
    image: &[u64],
    persister: Persister,
    k: usize,
    inputs: u64,
) -> Result<PlainTable<W>, String> {
    StaticPm::open(
        PoolWords::over(Plain::of(image), persister),
        "the crash image",
        Some(k),
        Some(inputs),
    )
}
