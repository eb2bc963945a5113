//! The command line as the user typed it (clap derive): validated for form, not yet
//! interpreted. Each command turns these into its plan.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// pmscope tells the truth about a memory tier.
#[derive(Debug, Parser)]
#[command(name = "pmscope", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// Output options shared by every command.
    #[command(flatten)]
    pub output: OutputArgs,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Where results go.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Print results as JSON Lines (one record per line) instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// Also write every record as JSON Lines to FILE (created; never overwritten without --force).
    #[arg(short = 'o', long = "output", global = true, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Allow -o to overwrite an existing file.
    #[arg(long, global = true)]
    pub force: bool,
    /// The results store (default: $PMSCOPE_RESULTS, else $XDG_DATA_HOME/pmscope/results.sqlite).
    #[arg(long, global = true, value_name = "PATH")]
    pub results: Option<PathBuf>,
    /// Do not store this run's records in the results store.
    #[arg(long, global = true)]
    pub no_store: bool,
    /// Tag this run in the results store (repeatable).
    #[arg(long = "tag", global = true, value_name = "T")]
    pub tags: Vec<String>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Describe this machine: CPU and persistence instructions, caches, TSC, NUMA nodes,
    /// huge pages, THP, DAX devices and mounts, perf counters.
    Info,
    /// The main job on the embedded default targets (dram:4k, dram:thp, shm): map, verify,
    /// and print a short summary.
    Quick(QuickArgs),
    /// Map targets, pre-fault them and print what the kernel actually gave.
    Verify(VerifyArgs),
    /// Idle load latency by dependent-load chains over a working-set sweep.
    Latency(LatencyArgs),
    /// Latency of single instruction sequences: op, flush, fence (LATTester).
    Inst(InstArgs),
    /// Throughput of 64-byte block streams under each synchronisation option (pmmeter).
    Sync(SyncArgs),
    /// Read-after-persist: latency of loading a line persisted d lines earlier.
    Rap(RapArgs),
    /// Bandwidth by op, pattern, access size and threads; mixed reads and writes.
    Bandwidth(BandwidthArgs),
    /// Loaded latency: a probe's latency while other threads generate delayed traffic.
    Loaded(LoadedArgs),
    /// K-mer set analysis of bacterial genomes (seed 003): PCR primer candidates, k-mer
    /// counts and set operations, on a hash table placed on a memory target.
    Kmer(KmerArgs),
    /// List target kinds or persist strategies.
    List {
        /// What to list.
        #[arg(value_enum)]
        what: ListWhat,
    },
    /// The results store: list, show, export, import and remove runs.
    Results(ResultsArgs),
    /// Compare two runs, or two targets of one run, point by point.
    Compare(CompareArgs),
}

/// `pmscope results`.
#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ResultsCommand,
}

/// A `pmscope results` command. RUN is an id, `latest`, `latest~N` or a tag.
#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// List the stored runs, oldest first (with --tag T: only runs tagged T).
    List,
    /// Show one run and its points.
    Show {
        /// The run.
        run: String,
    },
    /// Write runs' records to stdout as CSV (tidy long format) or JSON Lines.
    Export {
        /// The runs.
        #[arg(required = true)]
        runs: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "csv")]
        format: ExportFormat,
    },
    /// Remove a run and its points.
    Rm {
        /// The run.
        run: String,
        /// Do not ask.
        #[arg(long)]
        yes: bool,
    },
    /// Add the records of a JSON Lines file (written with -o) as one run.
    Import {
        /// The file.
        file: PathBuf,
    },
}

/// Export formats.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    /// Tidy long CSV: one row per point and statistic.
    Csv,
    /// The records as JSON Lines.
    Jsonl,
}

/// `pmscope compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Run A (id, latest, latest~N or tag), or with --targets the run holding both.
    pub a: String,
    /// Run B, or with --targets target A's spec.
    pub b: String,
    /// With --targets: target B's spec.
    pub c: Option<String>,
    /// Compare two targets of one run: `pmscope compare --targets RUN SPEC_A SPEC_B`.
    #[arg(long)]
    pub targets: bool,
    /// Exit 1 when any point got worse by more than PCT percent beyond the noise.
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,
}

/// What `pmscope list` lists.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ListWhat {
    /// Target kinds and their syntax.
    Targets,
    /// Persist strategies and whether this CPU supports them.
    Strategies,
}

/// Options of every command that maps targets.
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    /// A memory target (repeatable: targets are measured side by side). Syntax:
    /// dram[:4k|thp|2m|1g], file:PATH, shm[:4k|thp], devdax:/dev/daxX.Y, each with an
    /// optional ,node=N. See `pmscope list targets`.
    #[arg(short = 't', long = "target", value_name = "SPEC")]
    pub targets: Vec<String>,
    /// Refuse to map more than SIZE of RAM (default: 90% of MemAvailable).
    #[arg(long, value_name = "SIZE")]
    pub max_mem: Option<String>,
    /// Keep files pmscope created for file: and shm targets.
    #[arg(long)]
    pub keep: bool,
    /// Refuse file targets that are not on DAX (MAP_SYNC refused).
    #[arg(long)]
    pub require_dax: bool,
    /// Allow writing to devdax devices, destroying their contents.
    #[arg(long)]
    pub destroy_data: bool,
}

/// `pmscope verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Targets and mapping options.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Bytes to map per target.
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub size: String,
}

/// `pmscope quick`.
#[derive(Debug, Args)]
pub struct QuickArgs {
    /// Targets and mapping options (default: dram:4k, dram:thp, shm:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Bytes to map per target.
    #[arg(long, default_value = "256MiB", value_name = "SIZE")]
    pub size: String,
}

/// `pmscope latency`.
#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Chain order: random (one random cycle), sequential (fixed stride), random-in-page.
    #[arg(long, default_value = "random")]
    pub pattern: String,
    /// Element size (the stride of sequential chains): 64B, or 256B for Optane's XPLine.
    #[arg(long, default_value = "64B", value_name = "SIZE")]
    pub element: String,
    /// Working sets (sweep axis, e.g. 4KiB..1GiB or 1MiB,1GiB). Default: 4 KiB to
    /// max(1 GiB, 4x the last-level cache), every power of two and the midpoint after it.
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Randomise only within groups of this many 4 KiB pages (separates TLB misses from
    /// memory latency).
    #[arg(long, value_name = "PAGES")]
    pub tlb_window: Option<usize>,
    /// Put every pointer at offset 0 of its element instead of spreading them (the mixer).
    #[arg(long)]
    pub no_mix: bool,
    /// Repetitions per point (one more is run first and dropped).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Individually timed loads for the distribution at the largest point (0: none).
    #[arg(long, default_value_t = 200_000)]
    pub samples: usize,
    /// CPU to pin the measuring thread to.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Seed of the random orders.
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// The thorough version: 15 repetitions of 200 ms, 1 000 000 timed loads.
    #[arg(long)]
    pub full: bool,
}

/// `pmscope inst`.
#[derive(Debug, Args)]
pub struct InstArgs {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Ops (comma list): load, ntload, store, store+clflush, store+clflushopt, store+clwb,
    /// ntstore. Default: all.
    #[arg(long)]
    pub ops: Option<String>,
    /// Fences after each access (comma list): none, sfence, mfence. Default: all.
    #[arg(long)]
    pub fences: Option<String>,
    /// Access sizes in bytes (8 or multiples of 64). Default 8,64,128,256,512,1024,4096.
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Address pattern: seq, rand or both.
    #[arg(long, default_value = "both")]
    pub pattern: String,
    /// Region the addresses fall in.
    #[arg(long, default_value = "1GiB", value_name = "SIZE")]
    pub region: String,
    /// Accesses timed per cell.
    #[arg(long, default_value_t = 100_000)]
    pub count: usize,
    /// Do not flush lines before timed loads (measure cache hits instead of memory).
    #[arg(long)]
    pub no_flush: bool,
    /// Instruction width in bytes for accesses of 64 bytes and more (default: the widest
    /// the CPU has: 64 with AVX-512, 32 with AVX2).
    #[arg(long)]
    pub width: Option<usize>,
    /// CPU to pin the measuring thread to.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Seed of the random addresses.
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// The thorough version: 1 000 000 accesses per cell.
    #[arg(long)]
    pub full: bool,
}

/// `pmscope sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Instruction unit in bytes: 8, 16, 32 or 64 (each 64-byte block is 64/unit
    /// instructions).
    #[arg(long, default_value_t = 32)]
    pub unit: usize,
    /// Pattern: seq, rand (lines in a precomputed random order) or both.
    #[arg(long, default_value = "both")]
    pub pattern: String,
    /// Region streamed over (split between threads).
    #[arg(long, default_value = "1GiB", value_name = "SIZE")]
    pub region: String,
    /// Threads, each on its own part of the region.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// CPUs to pin the threads to (default: the allowed CPUs in order).
    #[arg(long)]
    pub cpus: Option<String>,
    /// The fence of the +F options: mfence (pmmeter's default) or sfence.
    #[arg(long, default_value = "mfence")]
    pub fence: String,
    /// Seed of the random line order.
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// The thorough version: 7 repetitions of 1 s per option.
    #[arg(long)]
    pub full: bool,
}

/// `pmscope rap`.
#[derive(Debug, Args)]
pub struct RapArgs {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Persist strategy: clflush, clflushopt, clwb, ntstore, none or msync.
    #[arg(long, default_value = "clwb")]
    pub persist: String,
    /// Distances d in lines (sweep axis).
    #[arg(
        long,
        default_value = "0,1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192"
    )]
    pub distances: String,
    /// Region the lines are taken from.
    #[arg(long, default_value = "256MiB", value_name = "SIZE")]
    pub region: String,
    /// Timed loads per distance.
    #[arg(long, default_value_t = 20_000)]
    pub samples: usize,
    /// CPU to pin the thread to.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Seed of the random line order.
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// The thorough version: 200 000 loads per distance.
    #[arg(long)]
    pub full: bool,
}

/// `pmscope bandwidth`.
#[derive(Debug, Args)]
pub struct BandwidthArgs {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Ops (comma list): read, write, ntstore, store+clwb, copy. Default: all (with --mix:
    /// write, the op of the writers).
    #[arg(long)]
    pub ops: Option<String>,
    /// Pattern: seq, rand (random aligned blocks of the access size) or both.
    #[arg(long, default_value = "both")]
    pub pattern: String,
    /// Access sizes (sweep axis, multiples of 64 B). Default 64,256,4KiB,64KiB; --full:
    /// every power of two from 64 B to 128 KiB.
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Thread counts (sweep axis, e.g. 1,2 or 1..4). Default: 1 to the number of CPUs.
    #[arg(long, value_name = "AXIS")]
    pub threads: Option<String>,
    /// CPUs to pin threads to, in order (default: all allowed CPUs).
    #[arg(long)]
    pub cpus: Option<String>,
    /// All threads stream over one shared region instead of one region each.
    #[arg(long)]
    pub shared: bool,
    /// Memory per thread (the whole region with --shared).
    #[arg(long, default_value = "512MiB", value_name = "SIZE")]
    pub region: String,
    /// Seconds each thread streams per repetition (default 0.15; --full 1).
    #[arg(long)]
    pub duration: Option<String>,
    /// Repetitions per point (one more is run first and dropped).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Vector width in bytes: 64 (AVX-512) or 32 (AVX2). Default: the widest the CPU has.
    #[arg(long)]
    pub width: Option<usize>,
    /// Mixed reads and writes: `split` (k readers and n-k writers, every k) or a ratio R:W
    /// such as 2:1 (every thread interleaves reads and writes).
    #[arg(long)]
    pub mix: Option<String>,
    /// Seed of the random block order.
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// The thorough version: every access size 64 B..128 KiB, 5 repetitions of 1 s.
    #[arg(long)]
    pub full: bool,
}

/// `pmscope loaded`.
#[derive(Debug, Args)]
pub struct LoadedArgs {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// What the measuring thread times: chase (dependent loads), a persist strategy
    /// (clflush, clflushopt, clwb, ntstore) or a sequence such as store+clwb+sfence.
    #[arg(long, default_value = "chase")]
    pub probe: String,
    /// Delays injected after every traffic access, in ns (sweep axis; an idle point with no
    /// traffic is always measured first).
    #[arg(
        long,
        default_value = "0,25,50,100,200,400,800,1600,3200,6400,12800,25600"
    )]
    pub delays: String,
    /// The traffic's read:write ratio (1:0 reads only, 2:1, 1:1, 0:1 writes only).
    #[arg(long, default_value = "1:0")]
    pub rw: String,
    /// Bytes per traffic access.
    #[arg(long, default_value = "1KiB", value_name = "SIZE")]
    pub traffic_access: String,
    /// Region each traffic thread streams over.
    #[arg(long, default_value = "256MiB", value_name = "SIZE")]
    pub traffic_region: String,
    /// Region of the probe (the chain's working set).
    #[arg(long, default_value = "1GiB", value_name = "SIZE")]
    pub probe_region: String,
    /// Individually timed probe operations per point.
    #[arg(long, default_value_t = 50_000)]
    pub samples: usize,
    /// CPUs: the first measures, the others generate traffic (default: all allowed).
    #[arg(long)]
    pub cpus: Option<String>,
    /// Seed of the chain and random lines.
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// The thorough version: 200 000 samples and longer chain repetitions per point.
    #[arg(long)]
    pub full: bool,
}

/// `pmscope kmer`.
#[derive(Debug, Args)]
pub struct KmerArgs {
    /// The k-mer command.
    #[command(subcommand)]
    pub command: KmerCommand,
}

/// What `-o` means for the k-mer commands.
const KMER_OUTPUT_HELP: &str = "For pmscope kmer, -o FILE receives the k-mers (TSV, or FASTA with --format fasta; -o - is stdout), written only when the job succeeds; --record FILE receives the JSON record.";

/// The k-mer commands. For these, `-o FILE` receives the k-mers (TSV or FASTA; `-o -` is
/// stdout) and `--record FILE` the JSON record.
#[derive(Debug, Subcommand)]
#[command(after_help = KMER_OUTPUT_HELP)]
pub enum KmerCommand {
    /// PCR primer candidates: k-mers in every in-group genome and in no out-group genome,
    /// with their position in the first in-group genome.
    #[command(after_help = KMER_OUTPUT_HELP)]
    Primers(KmerPrimersArgs),
    /// Distinct canonical k-mers, and how many k-mers occur in 1, 2, ... genomes.
    #[command(after_help = KMER_OUTPUT_HELP)]
    Count(KmerSetArgs),
    /// The k-mers of any of the genomes.
    #[command(after_help = KMER_OUTPUT_HELP)]
    Union(KmerSetArgs),
    /// The k-mers of all of the genomes.
    #[command(after_help = KMER_OUTPUT_HELP)]
    Intersect(KmerSetArgs),
    /// The k-mers of the genomes that none of the --minus genomes has.
    #[command(after_help = KMER_OUTPUT_HELP)]
    Subtract(KmerSubtractArgs),
    /// The primer pipeline on the genomes of Debian's ragout-examples and kaptive-example.
    #[command(after_help = KMER_OUTPUT_HELP)]
    Demo(KmerDemoArgs),
    /// Write a synthetic reference and strains derived from it (SNPs, indels) as FASTA.
    Synth(KmerSynthArgs),
}

/// Options of every k-mer command that builds a table.
#[derive(Debug, Args, Clone)]
pub struct KmerRunArgs {
    /// K-mer length, 1 to 128 (default: 100 for primers and demo, 31 otherwise).
    #[arg(short = 'k', value_name = "K")]
    pub k: Option<usize>,
    /// The table implementation.
    #[arg(long, value_enum, default_value = "volatile")]
    pub table: KmerTableKind,
    /// Worker threads (default: every CPU pmscope may use).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Treat every FASTA record as a genome of its own (default: one file = one genome).
    #[arg(long)]
    pub genome_per_record: bool,
    /// Format of the k-mers written with -o.
    #[arg(long, value_enum, default_value = "tsv")]
    pub format: KmerFormat,
    /// Sort written k-mer sets lexicographically (candidates are in genome order anyway).
    #[arg(long)]
    pub sorted: bool,
    /// Also write the JSON record to FILE (created; never overwritten without --force).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// The table's memory target (default dram:thp) and mapping options.
    #[command(flatten)]
    pub targets: TargetArgs,
}

/// Table implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KmerTableKind {
    /// Concurrent open addressing in the target's memory.
    Volatile,
}

/// Formats of k-mer lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KmerFormat {
    /// Tab-separated, with a header row.
    Tsv,
    /// One FASTA record per k-mer.
    Fasta,
}

/// `pmscope kmer count|union|intersect`.
#[derive(Debug, Args)]
pub struct KmerSetArgs {
    /// FASTA or gzipped FASTA files, one genome each.
    #[arg(required = true, value_name = "FILES")]
    pub genomes: Vec<PathBuf>,
    /// Run options.
    #[command(flatten)]
    pub run: KmerRunArgs,
}

/// `pmscope kmer subtract`.
#[derive(Debug, Args)]
pub struct KmerSubtractArgs {
    /// Genomes whose k-mers are kept.
    #[arg(required = true, value_name = "FILES")]
    pub genomes: Vec<PathBuf>,
    /// Genomes whose k-mers are removed.
    #[arg(long, required = true, num_args = 1.., value_name = "FILES")]
    pub minus: Vec<PathBuf>,
    /// Run options.
    #[command(flatten)]
    pub run: KmerRunArgs,
}

/// `pmscope kmer primers`.
#[derive(Debug, Args)]
pub struct KmerPrimersArgs {
    /// Genomes of the group to detect.
    #[arg(long, required = true, num_args = 1.., value_name = "FILES")]
    pub in_group: Vec<PathBuf>,
    /// Genomes that must not be detected.
    #[arg(long, required = true, num_args = 1.., value_name = "FILES")]
    pub out_group: Vec<PathBuf>,
    /// Run options.
    #[command(flatten)]
    pub run: KmerRunArgs,
}

/// `pmscope kmer demo`.
#[derive(Debug, Args)]
pub struct KmerDemoArgs {
    /// Directory of the ragout examples.
    #[arg(
        long,
        default_value = "/usr/share/doc/ragout/examples",
        value_name = "DIR"
    )]
    pub ragout: PathBuf,
    /// Directory of the kaptive examples.
    #[arg(
        long,
        default_value = "/usr/share/doc/kaptive/examples",
        value_name = "DIR"
    )]
    pub kaptive: PathBuf,
    /// Run options.
    #[command(flatten)]
    pub run: KmerRunArgs,
}

/// `pmscope kmer synth`.
#[derive(Debug, Args)]
pub struct KmerSynthArgs {
    /// Directory to write reference.fasta and strain_N.fasta into (created if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Bases of the reference (decimal suffixes k, M, G: 5M = 5,000,000).
    #[arg(long, default_value = "5M", value_name = "BASES")]
    pub length: String,
    /// Strains derived from the reference.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub strains: usize,
    /// Substitutions per base.
    #[arg(long, default_value_t = 0.001, value_name = "RATE")]
    pub snp_rate: f64,
    /// Insertions or deletions (1 to 10 bases) per base.
    #[arg(long, default_value_t = 0.0001, value_name = "RATE")]
    pub indel_rate: f64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}
