//! One k-mer job end to end, in timed phases: parse the genomes, estimate the distinct
//! k-mers, map the table, insert, run the set operation, write the result.
//!
//! The set operations are written once, on top of [`KmerTable`]:
//!
//! | operation | table built from | then | result |
//! |---|---|---|---|
//! | count | all genomes | histogram of genome counts | every k-mer |
//! | union | all genomes | | every k-mer |
//! | intersect | all genomes | | genome count = number of genomes |
//! | subtract | the left genomes | mark every k-mer of the right ones | unmarked |
//! | primers | the in-group | copy the entries with count = in-group size into a second table; mark every k-mer of the out-group there | unmarked, listed in the order of the first in-group genome |
//!
//! The right-hand set of a subtraction (the out-group union) is never stored: each of its
//! k-mers is looked up and marks its match, which is the same relative complement at the
//! cost of lookups instead of inserts into a second table. For primers the lookups go to
//! a copy of the in-group intersection behind a Bloom filter ([`StrandFilter`]): the
//! intersection is usually a small part of the in-group union, so most out-group k-mers
//! are answered from the cache.

use super::build::{Driver, Workers, scan_slots, walk_prefetched};
use super::encode::Kmer;
use super::encode::words_for;
use super::estimate::DistinctSketch;
use super::filter::StrandFilter;
use super::output::{self, Candidate, Format, Region};
use super::packed::PackedGenome;
use super::read::{Genome, ReadError, Split};
use super::source::{GenomeInput, genome_inputs};
pub use super::table::TableFacts;
use super::table::partition::{NodePlan, PartitionedTable};
use super::table::volatile;
use super::table::{
    Create, Entry, Fence, KmerTable, TableError, TableKind, TableRequest, WithTable,
};
use pmscope_core::record::ThreadPlacement;
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_persist::PersistChoice;
use pmscope_runner::interrupt::{self, Interrupted};
use pmscope_runner::pin::PinError;
use pmscope_sys::cpu::CpuFeatures;
use rayon::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What to compute.
#[derive(Debug, Clone)]
pub enum Operation {
    /// Distinct k-mers and the histogram of their genome counts.
    Count {
        /// Genome files.
        genomes: Vec<PathBuf>,
    },
    /// Every k-mer of any genome.
    Union {
        /// Genome files.
        genomes: Vec<PathBuf>,
    },
    /// The k-mers of every genome.
    Intersect {
        /// Genome files.
        genomes: Vec<PathBuf>,
    },
    /// The k-mers of `genomes` that no genome of `minus` has.
    Subtract {
        /// Genome files whose union is kept.
        genomes: Vec<PathBuf>,
        /// Genome files whose k-mers are removed.
        minus: Vec<PathBuf>,
    },
    /// In-group intersection minus out-group union: PCR primer candidates (seed 003).
    Primers {
        /// In-group genome files.
        in_group: Vec<PathBuf>,
        /// Out-group genome files.
        out_group: Vec<PathBuf>,
    },
}

impl Operation {
    /// The operation's name, as the CLI spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Count { .. } => "count",
            Operation::Union { .. } => "union",
            Operation::Intersect { .. } => "intersect",
            Operation::Subtract { .. } => "subtract",
            Operation::Primers { .. } => "primers",
        }
    }

    /// (files inserted into the table, files subtracted).
    fn files(&self) -> (&[PathBuf], &[PathBuf]) {
        match self {
            Operation::Count { genomes }
            | Operation::Union { genomes }
            | Operation::Intersect { genomes } => (genomes, &[]),
            Operation::Subtract { genomes, minus } => (genomes, minus),
            Operation::Primers {
                in_group,
                out_group,
            } => (in_group, out_group),
        }
    }
}

/// How a count, union or intersection is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// One table holding every k-mer, on the target: the memory-tier study's workload.
    #[default]
    Table,
    /// Minimizer bins, each counted in a table the size of the core's L2 cache (KMC's
    /// method; [`super::binned`]).
    Binned,
}

impl Method {
    /// Every method, in the order help lists them.
    pub const ALL: [Method; 2] = [Method::Table, Method::Binned];

    /// Its name, as the CLI spells it and records carry it.
    pub fn name(self) -> &'static str {
        match self {
            Method::Table => "table",
            Method::Binned => "binned",
        }
    }

    /// One line for `--help`.
    pub fn about(self) -> &'static str {
        match self {
            Method::Table => {
                "One table for all the k-mers, on the target (the memory-tier workload; --table chooses it)"
            }
            Method::Binned => {
                "Split into minimizer bins, each counted in an L2-sized table on the target (KMC's method; the fastest count)"
            }
        }
    }
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Method, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("no method {s}: table or binned"))
    }
}

/// A job: the operation and how to run it.
#[derive(Debug, Clone)]
pub struct Job {
    /// What to compute.
    pub operation: Operation,
    /// One table, or minimizer bins (count, union and intersect only).
    pub method: Method,
    /// K-mer length, 1..=[`super::encode::MAX_K`].
    pub k: usize,
    /// Worker threads.
    pub threads: usize,
    /// Files to genomes.
    pub split: Split,
    /// Where the table lives.
    pub target: TargetSpec,
    /// Mapping options of the target.
    pub map_options: MapOptions,
    /// Format of the written k-mers.
    pub format: Format,
    /// Sort written k-mer sets (candidates are always in genome order).
    pub sorted: bool,
    /// Candidates or k-mers kept in the report for display.
    pub preview: usize,
    /// The table implementation.
    pub table: TableKind,
    /// A pool file a persistent table creates or reopens (none: a fresh pool on the target).
    pub pool: Option<PathBuf>,
    /// How a persistent table makes its stores durable: named, or the default's fallback.
    pub persist: PersistChoice,
    /// When static-pm fences its written slots: per group (the default) or per slot.
    pub fence: Fence,
    /// The CPU (CPUID): which flushes a persistent table may execute.
    pub features: CpuFeatures,
    /// `--partition nodes`: one sub-table per node of the plan, its workers pinned there
    /// (`threads` must be the plan's); `None`: one table.
    pub partition: Option<NodePlan>,
    /// Where the binned method keeps its bins.
    pub bins: BinStore,
}

/// Where the binned method keeps its bins, and where its scratch file goes.
#[derive(Debug, Clone, Default)]
pub struct BinStore {
    /// In memory, on disk, or whichever the budget allows.
    pub at: BinsAt,
    /// The scratch file's directory (none: the current one).
    pub dir: Option<PathBuf>,
}

/// Where the binned method keeps its bins (`--bins`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BinsAt {
    /// In memory when the genomes' text and bins fit the budget (`--max-mem`), else on disk.
    #[default]
    Auto,
    /// In memory, whatever the budget.
    Memory,
    /// In a scratch file, counted a partition at a time (out of core).
    Disk,
}

/// Why a job failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A genome file.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The table.
    #[error(transparent)]
    Table(#[from] TableError),
    /// The worker threads.
    #[error("{0}")]
    Workers(#[from] PinError),
    /// Writing the result.
    #[error("writing the result: {0}")]
    Write(#[from] std::io::Error),
    /// The request itself.
    #[error("{0}")]
    Usage(String),
    /// Ctrl-C or SIGTERM, seen between phases.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// Counting out of core: the scratch file, the budget, the disk.
    #[error("{0}")]
    Spill(String),
}

impl From<super::spill::SpillError> for JobError {
    fn from(e: super::spill::SpillError) -> JobError {
        use super::spill::SpillError;
        match e {
            SpillError::Read(r) => JobError::Read(r),
            SpillError::Pin(p) => JobError::Workers(p),
            SpillError::Scratch(s) => JobError::Spill(s),
        }
    }
}

impl JobError {
    /// Whether the request is at fault (exit 2: malformed input, an impossible request, a
    /// refused pool or target) rather than the system (exit 1). An interrupt has its own
    /// exit status, which the caller reads from the [`Interrupted`] itself.
    pub fn is_usage(&self) -> bool {
        match self {
            JobError::Read(r) => r.is_usage,
            JobError::Table(t) => t.is_usage(),
            JobError::Usage(_) => true,
            JobError::Workers(_)
            | JobError::Write(_)
            | JobError::Interrupted(_)
            | JobError::Spill(_) => false,
        }
    }
}

/// A genome as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenomeSummary {
    /// Its name.
    pub name: String,
    /// Its file.
    pub path: PathBuf,
    /// `in` (inserted into the table) or `out` (subtracted).
    pub role: &'static str,
    /// Bases.
    pub bases: u64,
    /// k-mers of A, C, G, T only.
    pub kmers: u64,
    /// k-mers skipped for an ambiguous base.
    pub skipped_kmers: u64,
}

/// Wall time of each phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Phases {
    /// Reading, decompressing and validating the files.
    pub parse: Duration,
    /// The distinct-k-mer estimate that sizes the table.
    pub estimate: Duration,
    /// Mapping and pre-faulting the table.
    pub map: Duration,
    /// Inserting the k-mers (including any growth).
    pub insert: Duration,
    /// Splitting the genomes into super-k-mers by minimizer bin ([`Method::Binned`] only;
    /// its `insert` is counting the bins).
    pub split: Duration,
    /// The part of `insert` spent growing the table between genomes (mapping a larger
    /// table and rehashing into it); not counted again in [`Report::total`].
    pub grow: Duration,
    /// The set operation: marking, counting, collecting.
    pub setops: Duration,
    /// Formatting and writing the result.
    pub output: Duration,
}

/// How a binned job split its k-mers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinFacts {
    /// Bins.
    pub bins: u64,
    /// Bases of the minimizer.
    pub minimizer_bases: usize,
    /// Super-k-mers (runs of consecutive k-mers in one bin) over all bins.
    pub super_kmers: u64,
    /// k-mers (with repeats) of the largest bin.
    pub largest_bin_kmers: u64,
    /// Partitions counted one at a time out of core (0: the bins were in memory).
    pub partitions: u64,
    /// Bytes of bins written to the scratch file out of core.
    pub scratch_bytes: u64,
}

/// Measures a phase's wall time and the CPU time the process used meanwhile.
struct Stopwatch {
    wall: Instant,
    cpu: f64,
}

impl Stopwatch {
    fn start() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu: pmscope_sys::rusage::cpu_seconds().unwrap_or(0.0),
        }
    }

    fn stop(&self, wall: &mut Duration, cpu: &mut Duration) {
        *wall = self.wall.elapsed();
        let now = pmscope_sys::rusage::cpu_seconds().unwrap_or(0.0);
        *cpu = Duration::from_secs_f64((now - self.cpu).max(0.0));
    }
}

/// What a job found and how long each part took.
#[derive(Debug, Clone)]
pub struct Report {
    /// The operation.
    pub operation: &'static str,
    /// How it was computed.
    pub method: Method,
    /// The bins, for [`Method::Binned`].
    pub bins: Option<BinFacts>,
    /// K.
    pub k: usize,
    /// Worker threads.
    pub threads: usize,
    /// The genomes read.
    pub genomes: Vec<GenomeSummary>,
    /// k-mers inserted into the table (with repeats).
    pub inserts: u64,
    /// k-mers looked up to subtract.
    pub lookups: u64,
    /// Lookups that found their k-mer.
    pub lookup_hits: u64,
    /// The distinct-k-mer estimate the table was sized from.
    pub estimated_distinct: u64,
    /// Named set sizes, in order (`union`, `intersection`, `candidates`, ...).
    pub sets: Vec<(&'static str, u64)>,
    /// k-mers by number of genomes they occur in (index = genomes); `count` only.
    pub histogram: Vec<u64>,
    /// k-mers (or candidates) in the result.
    pub result_kmers: u64,
    /// Regions of overlapping candidates in the first in-group genome; `primers` only.
    pub regions: Vec<(String, Region)>,
    /// The first result lines, for display.
    pub preview: Vec<String>,
    /// Phase times.
    pub phases: Phases,
    /// CPU time (user + system, all threads) of each phase: compared with `phases`, it
    /// shows how much of the machine the job had.
    pub cpu: Phases,
    /// The table.
    pub table: TableFacts,
    /// Where the workers ran.
    pub placements: Vec<ThreadPlacement>,
}

impl Report {
    /// Total wall time of the phases.
    pub fn total(&self) -> Duration {
        let p = &self.phases;
        p.parse + p.estimate + p.split + p.map + p.insert + p.setops + p.output
    }

    /// Million inserts per second during the insert phase (the seed's MIPS).
    pub fn mips(&self) -> f64 {
        self.inserts as f64 / self.phases.insert.as_secs_f64().max(1e-9) / 1e6
    }

    /// Million inserts per second into a table with room: the insert phase without the
    /// time spent growing the table. Tables that cannot grow (static-pm) are sized for the
    /// whole job up front, so comparing them with a table that grew is fair only on this.
    pub fn mips_excluding_growth(&self) -> f64 {
        let inserting = self.phases.insert.saturating_sub(self.phases.grow);
        self.inserts as f64 / inserting.as_secs_f64().max(1e-9) / 1e6
    }

    /// Flushes and fences a persistent table issued per insert (every flush and fence of
    /// the run, header and genome bookkeeping included, over [`inserts`](Self::inserts));
    /// `None` for a volatile table.
    pub fn persist_per_insert(&self) -> Option<(f64, f64)> {
        let (flushes, fences) = self.table.persist?;
        let n = self.inserts.max(1) as f64;
        Some((flushes as f64 / n, fences as f64 / n))
    }

    /// Size of a named set.
    pub fn set(&self, name: &str) -> Option<u64> {
        self.sets.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// Runs `job`, writing the result set to `out` if given.
pub fn run(job: &Job, out: Option<&mut dyn Write>) -> Result<Report, JobError> {
    // A table this machine cannot make is refused before the genomes are read.
    job.table.available()?;
    if job.method == Method::Binned {
        return match words_for(job.k) {
            1 => binned::<1>(job, out),
            2 => binned::<2>(job, out),
            3 => binned::<3>(job, out),
            4 => binned::<4>(job, out),
            _ => Err(k_out_of_range(job.k)),
        };
    }
    let words = Words { job, out };
    match words_for(job.k) {
        1 => job.table.with::<1, _>(words),
        2 => job.table.with::<2, _>(words),
        3 => job.table.with::<3, _>(words),
        4 => job.table.with::<4, _>(words),
        _ => Err(k_out_of_range(job.k)),
    }
}

fn k_out_of_range(k: usize) -> JobError {
    JobError::Usage(format!(
        "k = {k} is out of range: k must be between 1 and {}",
        super::encode::MAX_K
    ))
}

/// The job at one key width, handed the table type by the registry.
struct Words<'a, 'o> {
    job: &'a Job,
    out: Option<&'o mut dyn Write>,
}

impl<const W: usize> WithTable<W> for Words<'_, '_> {
    type Output = Result<Report, JobError>;
    fn run<T: Create<W>>(self) -> Self::Output {
        if self.job.partition.is_some() {
            run_words::<W, PartitionedTable<W, T>>(self.job, self.out)
        } else {
            run_words::<W, T>(self.job, self.out)
        }
    }
}

/// Reads two groups of files, each file by `read` (a file may hold several genomes), on
/// the pool's threads; returns their genomes, the left ones first, and how many are left
/// ones. The first failing file in argument order is the error. The files go to the
/// threads largest first, one at a time, so one large file read last does not leave the
/// other threads idle (reading the two groups one after the other could leave a thread
/// idle at the end of each).
fn read_groups<G: Send>(
    (left_files, right_files): (&[PathBuf], &[PathBuf]),
    pool: &rayon::ThreadPool,
    read: impl Fn(&GenomeInput) -> Result<Vec<G>, ReadError> + Sync,
) -> Result<(Vec<G>, usize), ReadError> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let left = genome_inputs(left_files)?;
    let inputs: Vec<_> = left
        .iter()
        .cloned()
        .chain(genome_inputs(right_files)?)
        .collect();
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(inputs[i].expected_bases()));
    // Each input's result, in argument order, filled in as the threads read them.
    type Slot<G> = Mutex<Option<Result<Vec<G>, ReadError>>>;
    let results: Vec<Slot<G>> = inputs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    pool.broadcast(|_| {
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            *results[i].lock().expect("no reader panics holding it") = Some(read(&inputs[i]));
        }
    });
    let (mut genomes, mut n) = (Vec::new(), 0);
    for (i, r) in results.into_iter().enumerate() {
        let r = r.into_inner().expect("no reader panics holding it");
        genomes.extend(r.expect("every input was read")?);
        if i + 1 == left.len() {
            n = genomes.len();
        }
    }
    Ok((genomes, n))
}

/// Identifies the inserted genomes (names, sizes, k-mer counts), so a pool reopened for
/// another job is refused. A specified encoding and hash, stable across builds: FNV-1a 64
/// over, per genome, the name's length and bytes, then bases, k-mers and skipped k-mers,
/// each an 8-byte little-endian word.
pub fn fingerprint(left: &[Genome]) -> u64 {
    use super::table::static_pm::Fnv1a;
    left.iter()
        .fold(Fnv1a::default(), |h, g| {
            h.word(g.name.len() as u64)
                .bytes(g.name.as_bytes())
                .word(g.stats.bases)
                .word(g.stats.kmers)
                .word(g.stats.skipped_kmers)
        })
        .finish()
}

/// Inserts `left` one genome at a time across the driver's workers, as genome 1, 2, ...:
/// after the genomes a reopened persistent table has completed (the one after them is
/// inserted again: a genome counts a k-mer at most once, so that is idempotent), with room
/// reserved from `after` (the distinct-k-mer estimate after each genome), and each genome
/// recorded complete once every worker has persisted its share. Returns where the workers
/// ran and the time spent growing the table.
pub(crate) fn insert_genomes<const W: usize, T: KmerTable<W>>(
    driver: &Driver<W>,
    table: &mut T,
    left: &[Genome],
    after: &[f64],
    k: usize,
) -> Result<(Vec<ThreadPlacement>, Duration), JobError> {
    let mut placements = Vec::new();
    let mut growing = Duration::ZERO;
    let resume = table.resume_after() as usize;
    for (i, g) in left.iter().enumerate().skip(resume) {
        // Room for what the estimate expects this genome to add (with 3 % to spare, about
        // four standard errors), but never less than a 0.5 % margin for all its k-mers.
        let expected_new = (after[i] * 1.03) as u64 + 1024;
        let bound = expected_new
            .saturating_sub(table.distinct())
            .min(g.stats.kmers);
        let started = Instant::now();
        let mut grew = table.reserve(bound)?;
        let worst = table.distinct() + g.stats.kmers;
        if worst as f64 > 0.995 * table.slots() as f64 {
            grew |= table.reserve(g.stats.kmers)?;
        }
        if grew {
            growing += started.elapsed();
        }
        let (_, p) = driver.insert_genome(table, g, (i + 1) as u32, k)?;
        placements = p;
        // Workers skip the rest of a genome once a signal arrives: not complete then.
        interrupt::check()?;
        table.health()?;
        table.completed((i + 1) as u32);
        table.health()?;
    }
    Ok((placements, growing))
}

/// What the phases share: the job, its thread pool and its pinned workers.
struct Run<'a, const W: usize> {
    job: &'a Job,
    pool: rayon::ThreadPool,
    driver: Driver<W>,
}

/// The distinct-k-mer estimate: of everything, and after each genome in insertion order.
struct Estimate {
    total: u64,
    after: Vec<f64>,
}

impl Estimate {
    /// The distinct k-mers of all genomes, with 2 % to spare.
    fn union(&self) -> u64 {
        (self.total as f64 * 1.02) as u64 + 1024
    }

    /// The distinct k-mers to size a volatile table for: the estimate of them all, or more
    /// when a genome could fill it. Before each genome, [`insert_genomes`] makes room for every
    /// k-mer of that genome on top of those already in (a wrong estimate must not fill the
    /// table mid-genome), so a table sized only for the union of genomes that share most
    /// of their k-mers (an in-group of one species) would be grown, mapped a second time
    /// and rehashed, after its second genome.
    fn sizing(&self, left: &[Genome]) -> u64 {
        let union = self.union();
        // The room insert_genomes asks for before genome i, as distinct k-mers at the
        // volatile table's target load.
        let before = std::iter::once(0.0).chain(self.after.iter().copied());
        let worst = before
            .zip(left)
            .map(|(a, g)| a * 1.03 + g.stats.kmers as f64)
            .fold(0.0, f64::max);
        union.max((worst * volatile::TARGET_LOAD / volatile::MAX_LOAD).ceil() as u64)
    }
}

/// What the set operation produced, before it is written.
struct SetResult<const W: usize> {
    sets: Vec<(&'static str, u64)>,
    histogram: Vec<u64>,
    kept: Vec<(Kmer<W>, Entry)>,
    candidates: Vec<Candidate<W>>,
    lookup_hits: u64,
}

/// What the output phase leaves for the report.
struct Written {
    preview: Vec<String>,
    regions: Vec<(String, Region)>,
    result_kmers: u64,
}

fn run_words<const W: usize, T: Create<W>>(
    job: &Job,
    out: Option<&mut dyn Write>,
) -> Result<Report, JobError> {
    let k = job.k;
    if k == 0 || k > 32 * W {
        return Err(JobError::Usage(format!("k = {k} is out of range")));
    }
    let run = Run::<W> {
        job,
        pool: rayon::ThreadPoolBuilder::new()
            .num_threads(job.threads)
            .build()
            .map_err(|e| JobError::Workers(PinError(e.to_string())))?,
        driver: match &job.partition {
            Some(plan) => {
                let (cpus, homes) = plan.workers();
                if cpus.len() != job.threads {
                    return Err(JobError::Usage(format!(
                        "the node plan has {} workers, the job {} threads",
                        cpus.len(),
                        job.threads
                    )));
                }
                Driver::<W>::partitioned(Workers::on(cpus)?, homes).grouping(job.fence.lines())
            }
            // A volatile table's workers claim their runs (they make nothing durable).
            None => Driver::<W>::new(Workers::new(job.threads)?)
                .claiming(T::KIND == TableKind::Volatile)
                .grouping(job.fence.lines()),
        },
    };
    let mut phases = Phases::default();
    let mut cpu = Phases::default();

    let t = Stopwatch::start();
    let (left, right) = run.parse()?;
    t.stop(&mut phases.parse, &mut cpu.parse);
    if left.len() as u64 > T::MAX_GENOMES {
        return Err(JobError::Usage(format!(
            "{} genomes are more than a {} table counts ({}); split the job",
            left.len(),
            T::KIND,
            T::MAX_GENOMES
        )));
    }

    // Stopping is cheap between phases: nothing half-written survives (the table is
    // scratch memory or a crash-consistent pool, the k-mers are written last).
    interrupt::check()?;
    let t = Stopwatch::start();
    let estimate = run.estimate(&left);
    t.stop(&mut phases.estimate, &mut cpu.estimate);

    interrupt::check()?;
    let t = Stopwatch::start();
    // Only the volatile table grows; a static-pm pool's capacity (a power of two at load
    // 0.5) already holds that room, and a tx-pm pool grows in place.
    let expected = if T::KIND == TableKind::Volatile {
        estimate.sizing(&left)
    } else {
        estimate.union()
    };
    let mut table = T::create(&TableRequest {
        pool: job.pool.as_deref(),
        inputs: fingerprint(&left),
        ..run.request(expected)
    })?;
    t.stop(&mut phases.map, &mut cpu.map);

    interrupt::check()?;
    let t = Stopwatch::start();
    let (placements, grow) = run.insert(&mut table, &left, &estimate)?;
    t.stop(&mut phases.insert, &mut cpu.insert);
    phases.grow = grow;

    interrupt::check()?;
    let t = Stopwatch::start();
    let result = run.set_operation(&table, &left, &right)?;
    t.stop(&mut phases.setops, &mut cpu.setops);

    interrupt::check()?;
    let t = Stopwatch::start();
    let written = run.output(&table, &left, result.kept, &result.candidates, out)?;
    t.stop(&mut phases.output, &mut cpu.output);

    Ok(Report {
        operation: job.operation.name(),
        method: Method::Table,
        bins: None,
        k,
        threads: job.threads,
        genomes: summaries(&left, &right),
        inserts: left.iter().map(|g| g.stats.kmers).sum(),
        lookups: right.iter().map(|g| g.stats.kmers).sum(),
        lookup_hits: result.lookup_hits,
        estimated_distinct: estimate.total,
        sets: result.sets,
        histogram: result.histogram,
        result_kmers: written.result_kmers,
        regions: written.regions,
        preview: written.preview,
        phases,
        cpu,
        table: table.facts(),
        placements,
    })
}

/// The genomes as the report lists them.
fn summaries(left: &[Genome], right: &[Genome]) -> Vec<GenomeSummary> {
    let mut genomes: Vec<GenomeSummary> = left.iter().map(|g| summary(g, "in")).collect();
    genomes.extend(right.iter().map(|g| summary(g, "out")));
    genomes
}

/// A genome as the report lists it, in the role `role` ("in" or "out").
fn summary(g: &Genome, role: &'static str) -> GenomeSummary {
    GenomeSummary {
        name: g.name.clone(),
        path: g.path.clone(),
        role,
        bases: g.stats.bases,
        kmers: g.stats.kmers,
        skipped_kmers: g.stats.skipped_kmers,
    }
}

/// The out-group of primers: read whole with the in-group (the one-table method, whose
/// set-operation phase then times the table's lookups and nothing else), or streamed as
/// it is marked (the binned method: no out-group genome is ever held whole).
enum OutGroup<'a> {
    Read(&'a [Genome]),
    Streamed(&'a [GenomeInput]),
}

impl<const W: usize> Run<'_, W> {
    fn request(&self, expected_distinct: u64) -> TableRequest<'_> {
        TableRequest {
            k: self.job.k,
            target: &self.job.target,
            map_options: &self.job.map_options,
            expected_distinct,
            parallel: self.job.threads,
            pool: None,
            persist: self.job.persist,
            features: self.job.features,
            inputs: 0,
            partition: self.job.partition.as_ref(),
        }
    }

    /// Parses every file of both groups before anything is mapped or written.
    fn parse(&self) -> Result<(Vec<Genome>, Vec<Genome>), ReadError> {
        let (split, k) = (self.job.split, self.job.k);
        let files = self.job.operation.files();
        let (mut left, n) = read_groups(files, &self.pool, |input| input.read_whole(split, k))?;
        let right = left.split_off(n);
        Ok((left, right))
    }

    /// Estimates the distinct k-mers of what will be inserted, to size the table once.
    /// The estimate after each genome bounds the growth that genome can cause, so the
    /// table grows only if the estimate was wrong. Sketches are made a batch at a time in
    /// parallel and merged in genome order.
    fn estimate(&self, left: &[Genome]) -> Estimate {
        let k = self.job.k;
        let mut union = DistinctSketch::default();
        let mut after = Vec::with_capacity(left.len());
        for batch in left.chunks(64 * self.job.threads) {
            let sketches: Vec<DistinctSketch> = self.pool.install(|| {
                batch
                    .par_iter()
                    .map(|g| DistinctSketch::of_genome::<W>(g, k))
                    .collect()
            });
            for sk in &sketches {
                union.merge(sk);
                after.push(union.estimate());
            }
        }
        Estimate {
            total: union.estimate().ceil() as u64,
            after,
        }
    }

    /// Inserts one genome at a time across all workers; returns where the workers ran.
    fn insert<T: KmerTable<W>>(
        &self,
        table: &mut T,
        left: &[Genome],
        estimate: &Estimate,
    ) -> Result<(Vec<ThreadPlacement>, Duration), JobError> {
        insert_genomes(&self.driver, table, left, &estimate.after, self.job.k)
    }

    /// The set operation over the filled table.
    fn set_operation<T: Create<W>>(
        &self,
        table: &T,
        left: &[Genome],
        right: &[Genome],
    ) -> Result<SetResult<W>, JobError> {
        let job = self.job;
        let workers = self.driver.workers();
        let n_left = left.len() as u32;
        let mut result = SetResult {
            sets: vec![("union", table.distinct())],
            histogram: Vec::new(),
            kept: Vec::new(),
            candidates: Vec::new(),
            lookup_hits: 0,
        };
        match &job.operation {
            Operation::Count { .. } => {
                let parts = scan_slots(table, workers, |it| {
                    let mut h = vec![0u64; n_left as usize + 1];
                    for (_, e) in it {
                        h[e.genomes as usize] += 1;
                    }
                    h
                })?;
                let mut histogram = vec![0u64; n_left as usize + 1];
                for p in parts {
                    for (a, b) in histogram.iter_mut().zip(p) {
                        *a += b;
                    }
                }
                result
                    .sets
                    .push(("intersection", histogram[n_left as usize]));
                result.histogram = histogram;
            }
            Operation::Union { .. } | Operation::Intersect { .. } | Operation::Subtract { .. } => {
                for g in right {
                    result.lookup_hits += self.driver.mark_genome(table, g, job.k)?;
                }
                let want_all = matches!(job.operation, Operation::Union { .. });
                let intersect = matches!(job.operation, Operation::Intersect { .. });
                let parts = scan_slots(table, workers, |it| {
                    it.filter(|(_, e)| {
                        want_all || (intersect && e.genomes == n_left) || (!intersect && !e.marked)
                    })
                    .collect::<Vec<_>>()
                })?;
                result.kept = self.sorted(parts.into_iter().flatten().collect());
                match job.operation {
                    Operation::Intersect { .. } => {
                        result.sets.push(("intersection", result.kept.len() as u64))
                    }
                    Operation::Subtract { .. } => {
                        result.sets.push(("difference", result.kept.len() as u64))
                    }
                    _ => {}
                }
            }
            Operation::Primers { .. } => self.primers(table, left, right, &mut result)?,
        }
        Ok(result)
    }

    /// Primer candidates: the out-group only matters where it meets the in-group
    /// intersection, which is usually a small part of the in-group union, so the
    /// intersection is copied into a table of its own (of the same kind), with a Bloom
    /// filter in front that stays in the cache, and every out-group k-mer marks its match
    /// there.
    fn primers<T: Create<W>>(
        &self,
        table: &T,
        left: &[Genome],
        right: &[Genome],
        result: &mut SetResult<W>,
    ) -> Result<(), JobError> {
        let workers = self.driver.workers();
        let n_left = left.len() as u32;
        let parts = scan_slots(table, workers, |it| {
            it.filter(|(_, e)| e.genomes == n_left)
                .map(|(x, _)| x)
                .collect::<Vec<_>>()
        })?;
        self.out_group::<T>(parts, left, OutGroup::Read(right), result)
            .map(|_| ())
    }

    /// The rest of [`Self::primers`], from the in-group intersection (in lists, any split):
    /// its own table behind a Bloom filter, the out-group marking it, the first in-group
    /// genome listing the unmarked ones in its order. Returns the out-group's genomes as
    /// the report lists them.
    fn out_group<T: Create<W>>(
        &self,
        parts: Vec<Vec<Kmer<W>>>,
        left: &[Genome],
        right: OutGroup<'_>,
        result: &mut SetResult<W>,
    ) -> Result<Vec<GenomeSummary>, JobError> {
        let k = self.job.k;
        let intersection: u64 = parts.iter().map(|p| p.len() as u64).sum();
        result.sets.push(("intersection", intersection));
        // Sized for the intersection at the table's usual load: the filter below keeps all
        // but about 1 % of the out-group k-mers that miss away from it, so a lower load
        // would buy little and cost a larger mapping (tens of milliseconds of page faults).
        let core = T::create(&self.request(intersection + intersection / 50 + 1024))?;
        self.driver.insert_lists(&core, &parts)?;
        core.health()?;
        let mut filter = StrandFilter::with_capacity(k, intersection).map_err(|e| {
            TableError::Limit(format!(
                "cannot map the Bloom filter of the in-group intersection ({e})"
            ))
        })?;
        filter.insert_all(parts.iter().flatten());
        drop(parts);
        let out = match right {
            OutGroup::Read(genomes) => {
                for g in genomes {
                    result.lookup_hits += self.driver.mark_genome_filtered(&core, &filter, g, k)?;
                }
                genomes.iter().map(|g| summary(g, "out")).collect()
            }
            OutGroup::Streamed(inputs) => {
                let (hits, read) =
                    self.driver
                        .mark_inputs_filtered(&core, &filter, inputs, self.job.split, k)?;
                result.lookup_hits += hits;
                let mut out = Vec::new();
                for (input, genomes) in inputs.iter().zip(read) {
                    out.extend(genomes?.into_iter().map(|g| GenomeSummary {
                        name: g.name,
                        path: input.path().to_path_buf(),
                        role: "out",
                        bases: g.stats.bases,
                        kmers: g.stats.kmers,
                        skipped_kmers: g.stats.skipped_kmers,
                    }));
                }
                out
            }
        };
        // Workers skip the rest of the out-group once a signal arrives: its marks are
        // incomplete then, and no candidate may be listed from them.
        interrupt::check()?;
        result.candidates = self.list_candidates(&core, &left[0]);
        result
            .sets
            .push(("candidates", result.candidates.len() as u64));
        Ok(out)
    }

    /// The candidates: the windows of the first in-group genome (every candidate occurs
    /// in it) whose k-mer is in `core` and unmarked, each k-mer at its first window in the
    /// genome's order. The genome is walked in pieces on every worker (a serial walk was a
    /// sixth of the out-group step on 2 threads), then repeats are dropped in order.
    fn list_candidates<T: KmerTable<W>>(&self, core: &T, first: &Genome) -> Vec<Candidate<W>> {
        let k = self.job.k;
        const PIECE: usize = 1 << 20;
        let pieces: Vec<(usize, usize, usize)> = first
            .contigs
            .iter()
            .enumerate()
            .flat_map(|(ci, c)| {
                let windows = (c.end - c.start + 1).saturating_sub(k);
                (0..windows.div_ceil(PIECE))
                    .map(move |p| (ci, p * PIECE, ((p + 1) * PIECE).min(windows)))
            })
            .collect();
        let found: Vec<Vec<Candidate<W>>> = self.pool.install(|| {
            pieces
                .par_iter()
                .map(|&(ci, from, to)| {
                    let seq = first.contig_seq(&first.contigs[ci]);
                    let mut out = Vec::new();
                    walk_prefetched(
                        core,
                        &seq[from..to + k - 1],
                        from,
                        k,
                        |kmer, hash, at, fwd| {
                            if let Some(e) = core.get(kmer, hash)
                                && !e.marked
                            {
                                out.push(Candidate {
                                    kmer: *kmer,
                                    contig: ci,
                                    offset: at,
                                    forward: fwd,
                                });
                            }
                        },
                    );
                    out
                })
                .collect()
        });
        let mut listed = std::collections::HashSet::new();
        found
            .into_iter()
            .flatten()
            .filter(|c| listed.insert(c.kmer))
            .collect()
    }

    fn sorted(&self, mut kept: Vec<(Kmer<W>, Entry)>) -> Vec<(Kmer<W>, Entry)> {
        if self.job.sorted {
            self.pool
                .install(|| kept.par_sort_unstable_by(|a, b| a.0.cmp(&b.0)));
        }
        kept
    }

    /// Writes the result set and keeps the first rows (as TSV rows) for display.
    fn output<T: KmerTable<W>>(
        &self,
        table: &T,
        left: &[Genome],
        mut kept: Vec<(Kmer<W>, Entry)>,
        candidates: &[Candidate<W>],
        out: Option<&mut dyn Write>,
    ) -> Result<Written, JobError> {
        let job = self.job;
        if let Operation::Primers { .. } = job.operation {
            return write_primers(job, &left[0], candidates, out);
        }
        if let (Operation::Count { .. }, Some(_)) = (&job.operation, &out) {
            let parts = scan_slots(table, self.driver.workers(), |it| it.collect::<Vec<_>>())?;
            kept = self.sorted(parts.into_iter().flatten().collect());
        }
        let result_kmers = match job.operation {
            Operation::Count { .. } | Operation::Union { .. } => table.distinct(),
            _ => kept.len() as u64,
        };
        write_set(job, &kept, out, result_kmers)
    }
}

/// Writes the primer candidates and keeps their first rows (as TSV rows) for display, and
/// the regions of overlapping candidates.
fn write_primers<const W: usize>(
    job: &Job,
    first: &Genome,
    candidates: &[Candidate<W>],
    out: Option<&mut dyn Write>,
) -> Result<Written, JobError> {
    let k = job.k;
    let names: Vec<String> = first.contigs.iter().map(|c| c.name.clone()).collect();
    if let Some(out) = out {
        output::write_candidates(out, job.format, k, &first.name, &names, candidates)?;
        out.flush()?;
    }
    let preview = candidates[..job.preview.min(candidates.len())]
        .iter()
        .map(|c| {
            let mut line = Vec::new();
            output::candidate_row(&mut line, k, &first.name, &names, c);
            String::from_utf8_lossy(&line).into_owned()
        })
        .collect();
    let regions = output::regions(candidates, k)
        .into_iter()
        .map(|r| (names[r.contig].clone(), r))
        .collect();
    Ok(Written {
        preview,
        regions,
        result_kmers: candidates.len() as u64,
    })
}

/// Writes a k-mer set (count, union, intersect, subtract) and keeps its first rows (as TSV
/// rows) for display.
fn write_set<const W: usize>(
    job: &Job,
    kept: &[(Kmer<W>, Entry)],
    out: Option<&mut dyn Write>,
    result_kmers: u64,
) -> Result<Written, JobError> {
    let k = job.k;
    if let Some(out) = out {
        output::write_kmers(out, job.format, k, kept)?;
        out.flush()?;
    }
    let preview = kept[..job.preview.min(kept.len())]
        .iter()
        .map(|(x, e)| {
            let mut line = Vec::new();
            output::kmer_row(&mut line, k, x, e);
            String::from_utf8_lossy(&line).into_owned()
        })
        .collect();
    Ok(Written {
        preview,
        regions: Vec::new(),
        result_kmers,
    })
}

mod out_of_core;

/// A binned job, in memory or out of core ([`out_of_core::wanted`]); primers keep their
/// bins in memory (the out-group step lists the candidates from the first in-group genome
/// read whole).
fn binned<const W: usize>(job: &Job, out: Option<&mut dyn Write>) -> Result<Report, JobError> {
    let primers = matches!(job.operation, Operation::Primers { .. });
    if !primers && out_of_core::wanted(job)? {
        out_of_core::run::<W>(job, out)
    } else {
        run_binned::<W>(job, out)
    }
}

/// A k-mer job by minimizer bins ([`super::binned`]): parse, split the genomes into
/// super-k-mers by bin, map each worker's bin table and the genomes' text, count the bins
/// (the insert phase: the left genomes inserted, the right ones looked up), write the set
/// or the candidates.
fn run_binned<const W: usize>(job: &Job, out: Option<&mut dyn Write>) -> Result<Report, JobError> {
    use super::binned;
    let k = job.k;
    let keep = binned_keep(&job.operation, out.is_some());
    let workers = Workers::new(job.threads)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(job.threads)
        .build()
        .map_err(|e| JobError::Workers(PinError(e.to_string())))?;
    let mut phases = Phases::default();
    let mut cpu = Phases::default();

    let primers = matches!(job.operation, Operation::Primers { .. });
    let t = Stopwatch::start();
    let BinnedInput {
        left,
        mut packed,
        n,
        out_group,
    } = read_binned(job, &pool, primers)?;
    t.stop(&mut phases.parse, &mut cpu.parse);
    binned_limits(&packed)?;
    let mut summaries = if primers {
        summaries(&left, &[])
    } else {
        packed_summaries(&packed, n)
    };

    interrupt::check()?;
    let t = Stopwatch::start();
    let slot_bytes = binned::slot_words::<W>() * 8;
    let inserts: u64 = packed[..n].iter().map(|g| g.stats.kmers).sum();
    let count = binned::bins_for(inserts, slot_bytes, binned::l2_bytes(), job.threads);
    let (bins, _) = binned::split(&workers, &packed, n, k, count)?;
    t.stop(&mut phases.split, &mut cpu.split);

    interrupt::check()?;
    let t = Stopwatch::start();
    let slots = binned::table_slots(&bins);
    let bytes = (slots * slot_bytes) as u64;
    let mut mappings = (0..job.threads)
        .map(|_| pmscope_mapping::map_chosen(&job.target, bytes, &job.map_options))
        .collect::<Result<Vec<_>, _>>()
        .map_err(TableError::from)?;
    let mut text = binned::Text::of(&mut packed, &job.map_options).map_err(TableError::from)?;
    drop(packed);
    t.stop(&mut phases.map, &mut cpu.map);

    interrupt::check()?;
    let t = Stopwatch::start();
    let mut tables = mappings
        .iter_mut()
        .map(|m| m.slice_mut::<u64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(TableError::from)?;
    let texts = text.genomes();
    let mut counted = binned::count::<W>(&workers, &bins, &texts, k, &mut tables, keep)?;
    drop((texts, tables));
    t.stop(&mut phases.insert, &mut cpu.insert);

    interrupt::check()?;
    let distinct: u64 = counted.histogram.iter().sum();
    let sets = binned_sets(&job.operation, distinct, &counted.histogram, &counted.kept);
    let (sets, written, lookup_hits) = if primers {
        // The out-group step is the set operation, then the candidates are written.
        let t = Stopwatch::start();
        let intersection = std::mem::take(&mut counted.kept);
        let (sets, candidates, hits, out_genomes) =
            binned_primers(job, pool, workers, intersection, sets, &left, &out_group)?;
        summaries.extend(out_genomes);
        t.stop(&mut phases.setops, &mut cpu.setops);
        let t = Stopwatch::start();
        let written = write_primers(job, &left[0], &candidates, out)?;
        t.stop(&mut phases.output, &mut cpu.output);
        (sets, written, hits)
    } else {
        let t = Stopwatch::start();
        if job.sorted {
            pool.install(|| counted.kept.par_sort_unstable_by(|a, b| a.0.cmp(&b.0)));
        }
        let result_kmers = match job.operation {
            Operation::Count { .. } | Operation::Union { .. } => distinct,
            _ => counted.kept.len() as u64,
        };
        let written = write_set(job, &counted.kept, out, result_kmers)?;
        t.stop(&mut phases.output, &mut cpu.output);
        (sets, written, counted.hits)
    };

    let table = bin_table_facts(&mappings, slots, slot_bytes, distinct, &counted);
    let lookups: u64 = summaries
        .iter()
        .filter(|g| g.role == "out")
        .map(|g| g.kmers)
        .sum();
    Ok(Report {
        operation: job.operation.name(),
        method: Method::Binned,
        bins: Some(bin_facts(&bins)),
        k,
        threads: job.threads,
        genomes: summaries,
        inserts,
        lookups,
        lookup_hits,
        estimated_distinct: 0,
        sets,
        histogram: match job.operation {
            Operation::Count { .. } => counted.histogram,
            _ => Vec::new(),
        },
        result_kmers: written.result_kmers,
        regions: written.regions,
        preview: written.preview,
        phases,
        cpu,
        table,
        placements: counted.placements,
    })
}

/// The in-memory bins, as a report gives them.
fn bin_facts(bins: &super::binned::Bins) -> BinFacts {
    BinFacts {
        bins: bins.count as u64,
        minimizer_bases: bins.m,
        super_kmers: bins.super_kmers(),
        largest_bin_kmers: bins.largest(),
        partitions: 0,
        scratch_bytes: 0,
    }
}

/// The binned method's input.
struct BinnedInput {
    /// The in-group read whole (primers only: the first in-group genome lists the
    /// candidates).
    left: Vec<Genome>,
    /// The genomes packed, the left ones first.
    packed: Vec<PackedGenome>,
    /// How many packed genomes are left ones.
    n: usize,
    /// The out-group's inputs (primers only: streamed as they are marked, after the
    /// in-group is counted).
    out_group: Vec<GenomeInput>,
}

/// Reads the binned method's input. Every job but primers streams both groups into 2-bit
/// text; primers read the in-group whole and pack it, and leave the out-group unread.
fn read_binned(
    job: &Job,
    pool: &rayon::ThreadPool,
    primers: bool,
) -> Result<BinnedInput, JobError> {
    let (left_files, right_files) = job.operation.files();
    if primers {
        // A generated out-group's name is checked now, before anything is counted.
        let out_group = genome_inputs(right_files)?;
        let (left, n) = read_groups((left_files, &[]), pool, |input| {
            input.read_whole(job.split, job.k)
        })?;
        let packed: Vec<PackedGenome> = pool.install(|| {
            left.par_iter()
                .map(|g| PackedGenome::of(g, job.k))
                .collect()
        });
        Ok(BinnedInput {
            left,
            packed,
            n,
            out_group,
        })
    } else {
        let (packed, n) = read_groups((left_files, right_files), pool, |input| {
            input.read_packed(job.split, job.k)
        })?;
        Ok(BinnedInput {
            left: Vec::new(),
            packed,
            n,
            out_group: Vec::new(),
        })
    }
}

/// The report's genomes from packed ones, the first `n` inserted.
fn packed_summaries(genomes: &[PackedGenome], n: usize) -> Vec<GenomeSummary> {
    genomes
        .iter()
        .enumerate()
        .map(|(i, g)| GenomeSummary {
            name: g.name.clone(),
            path: g.path.clone(),
            role: if i < n { "in" } else { "out" },
            bases: g.stats.bases,
            kmers: g.stats.kmers,
            skipped_kmers: g.stats.skipped_kmers,
        })
        .collect()
}

/// Named set sizes, in order.
type Sets = Vec<(&'static str, u64)>;

/// Primers from the binned in-group intersection: the one-table method's out-group step
/// ([`Run::out_group`]) on a volatile table of the intersection, the out-group streamed.
/// Returns the set sizes, the candidates in the first in-group genome's order, the
/// out-group k-mers found in the intersection and the out-group's genomes.
fn binned_primers<const W: usize>(
    job: &Job,
    pool: rayon::ThreadPool,
    workers: Workers,
    intersection: Vec<(Kmer<W>, Entry)>,
    sets: Sets,
    left: &[Genome],
    right: &[GenomeInput],
) -> Result<(Sets, Vec<Candidate<W>>, u64, Vec<GenomeSummary>), JobError> {
    // One list per worker, as the one-table method scans the intersection.
    let mut parts: Vec<Vec<Kmer<W>>> = vec![Vec::new(); job.threads];
    for (i, (x, _)) in intersection.into_iter().enumerate() {
        parts[i % job.threads].push(x);
    }
    let run = Run::<W> {
        job,
        pool,
        driver: Driver::<W>::new(workers).claiming(true),
    };
    let mut result = SetResult {
        sets,
        histogram: Vec::new(),
        kept: Vec::new(),
        candidates: Vec::new(),
        lookup_hits: 0,
    };
    let out = run.out_group::<volatile::VolatileTable<W>>(
        parts,
        left,
        OutGroup::Streamed(right),
        &mut result,
    )?;
    Ok((result.sets, result.candidates, result.lookup_hits, out))
}

/// The workers' bin tables, as a report gives a table.
fn bin_table_facts<const W: usize>(
    mappings: &[pmscope_mapping::Mapping],
    slots: usize,
    slot_bytes: usize,
    distinct: u64,
    counted: &super::binned::Counted<W>,
) -> TableFacts {
    let mut warnings: Vec<pmscope_core::warning::Warning> = Vec::new();
    for w in mappings.iter().flat_map(|m| m.warnings()) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    TableFacts {
        kind: "binned",
        slots: slots as u64,
        slot_bytes: slot_bytes as u64,
        footprint_bytes: mappings.iter().map(|m| m.len() as u64).sum(),
        load_factor: distinct as f64 / counted.slots_used.max(1) as f64,
        grown: counted.grown,
        target: mappings[0].record(),
        warnings,
        persist: None,
        persister: None,
        parts: Vec::new(),
    }
}

/// The set sizes a binned job reports, named as the one-table method names them.
fn binned_sets<const W: usize>(
    operation: &Operation,
    distinct: u64,
    histogram: &[u64],
    kept: &[(Kmer<W>, Entry)],
) -> Sets {
    let mut sets = vec![("union", distinct)];
    let n = histogram.len() - 1;
    match operation {
        Operation::Count { .. } => sets.push(("intersection", histogram[n])),
        Operation::Intersect { .. } => sets.push(("intersection", kept.len() as u64)),
        Operation::Subtract { .. } => sets.push(("difference", kept.len() as u64)),
        // The out-group step names the intersection and the candidates.
        Operation::Union { .. } | Operation::Primers { .. } => {}
    }
    sets
}

/// What a binned job keeps besides the histogram.
fn binned_keep(operation: &Operation, writing: bool) -> super::binned::Keep {
    use super::binned::Keep;
    match (operation, writing) {
        (Operation::Count { .. }, false) => Keep::Nothing,
        (Operation::Count { .. }, true) | (Operation::Union { .. }, _) => Keep::All,
        (Operation::Intersect { .. } | Operation::Primers { .. }, _) => Keep::InEvery,
        (Operation::Subtract { .. }, _) => Keep::Unmarked,
    }
}

/// The widths of a super-k-mer's fields: genomes and bases per genome.
fn binned_limits(left: &[PackedGenome]) -> Result<(), JobError> {
    use super::binned::{MAX_GENOME_BASES, MAX_GENOMES};
    if left.len() > MAX_GENOMES {
        return Err(JobError::Usage(format!(
            "{} genomes are more than --method binned counts ({MAX_GENOMES}); split the job or use --method table",
            left.len(),
        )));
    }
    match left.iter().find(|g| g.len >= MAX_GENOME_BASES) {
        Some(g) => Err(JobError::Usage(format!(
            "{}: {} bases are more than --method binned addresses in one genome ({MAX_GENOME_BASES}); use --method table",
            g.path.display(),
            g.len,
        ))),
        None => Ok(()),
    }
}
