//! The command line as the user typed it (clap derive): validated for form, not yet
//! interpreted. Each command turns these into its plan.

use clap::{Args, Parser, Subcommand};
use pmscope_experiment::params::{Count, Seconds, Size, TargetArgs};
use pmscope_mapping::TargetSpec;
use std::path::PathBuf;

/// `pmscope --version`: the package version, the commit and the build profile.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PMSCOPE_GIT_COMMIT"),
    ", ",
    env!("PMSCOPE_BUILD_PROFILE"),
    " build)"
);

/// pmscope tells the truth about a memory tier.
#[derive(Debug, Parser)]
#[command(name = "pmscope", version = VERSION, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// Output options shared by every command.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Measure nothing: every timed kernel is replaced by deterministic synthetic samples,
    /// and every record says so (tests run every command to completion with it).
    #[arg(long, global = true, hide = true)]
    pub null_executor: bool,
    /// Hardware prefetchers during measurements: `off` turns them off on every CPU through
    /// the msr driver (bare metal, root), as Intel MLC does, and back on afterwards; where
    /// that is impossible (a VM) the records say why and the run goes on.
    #[arg(long, global = true, value_enum, default_value = "on")]
    pub prefetchers: Prefetchers,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `--prefetchers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Prefetchers {
    /// Left as they are.
    On,
    /// Turned off for each measurement (bare metal, root, the msr driver).
    Off,
}

/// Where results go.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Print results as JSON Lines (one record per line) instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// Also write every record as JSON Lines to FILE, in every command (`pmscope kmer`'s
    /// k-mers go to --kmers); `-` is stdout. FILE appears only when the run succeeded and is
    /// never overwritten without --force.
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
    /// The experiments (see `pmscope_experiment::registry`).
    #[command(flatten)]
    Experiment(pmscope_experiment::Step),
    /// K-mer set analysis of bacterial genomes (seed 003): PCR primer candidates, k-mer
    /// counts and set operations, on a hash table placed on a memory target.
    Kmer(KmerArgs),
    /// The offline HTML report (inline SVG figures, observations) of runs of the results
    /// store or JSON Lines files written with -o, side by side. Writes -o FILE (default
    /// report.html).
    #[command(
        after_help = "EXAMPLES:\n  pmscope report\n  pmscope report latest latest~1 -o two-runs.html\n  pmscope report optane-box.jsonl cxl-box.jsonl --reference optane-g1 --svg-dir figures"
    )]
    Report(ReportArgs),
    /// File-operation latency on the file system of each directory (seed 004 Figure 23):
    /// create, append, overwrite and read, each with and without fsync, individually timed,
    /// in a directory pmscope creates and removes.
    #[command(
        after_help = "EXAMPLES:\n  pmscope fs -t file:/tmp -t file:/dev/shm\n  pmscope fs -t file:/mnt/pmem -t file:/mnt/ssd --samples 5000"
    )]
    Fs(FsArgs),
    /// 4 KiB sync read and write bandwidth by the real fio (seed 004 Figure 24), random and
    /// sequential, over a sweep of jobs, in a directory pmscope creates and removes.
    #[command(
        after_help = "EXAMPLES:\n  pmscope fio -t file:/tmp -t file:/dev/shm\n  pmscope fio -t file:/mnt/pmem --jobs 1,2,4,8 --runtime 30 --size 512MiB"
    )]
    Fio(FioArgs),
    /// A named study over each target, as one run: basic (seed 004 section 3), table5 (seed
    /// 003 Table 5), sync (seed 002).
    #[command(
        after_help = "EXAMPLES:\n  pmscope suite basic -t dram:4k -t dram:thp\n  pmscope suite table5 -t dram:thp -t file:/mnt/pmem --full\n  pmscope suite basic --resume latest"
    )]
    Suite(pmscope_experiment::suite::Params),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    #[command(
        after_help = "EXAMPLES:\n  pmscope completions bash > /etc/bash_completion.d/pmscope"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to stdout.
    #[command(after_help = "EXAMPLES:\n  pmscope man > pmscope.1 && man ./pmscope.1")]
    Man,
    /// List target kinds, persist strategies or the op catalog.
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

/// Arguments of `pmscope report`.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// The runs, side by side: each a run of the results store (an id, latest, latest~N or
    /// a tag) or a JSON Lines file written with -o (an argument naming an existing file,
    /// a path with a '/' or ending in .jsonl, is a file) [default: latest].
    #[arg(value_name = "RUN|FILE.jsonl")]
    pub runs: Vec<String>,
    /// Also write one SVG per figure into DIR.
    #[arg(long, value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
    /// Overlay a published reference profile (optane-g1).
    #[arg(long, value_name = "PROFILE")]
    pub reference: Option<String>,
}

/// What `pmscope list` lists.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ListWhat {
    /// Target kinds and their syntax.
    Targets,
    /// Persist strategies and whether this CPU supports them.
    Strategies,
    /// The op catalog (access sequences of inst, sync and loaded --probe) and whether this
    /// CPU runs them.
    Ops,
}

/// `pmscope fs`.
#[derive(Debug, Args)]
pub struct FsArgs {
    /// Directories to measure in, as file:DIR targets (repeatable).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Timed operations per operation kind (a tenth more are run first, untimed).
    #[arg(long, default_value = "1000")]
    pub samples: Count,
    /// Operations (comma list): create, append-4k, overwrite-4k, overwrite-512, read-4k.
    /// Default: all.
    #[arg(long)]
    pub ops: Option<String>,
    /// With and without fsync before close: both, on or off.
    #[arg(long, default_value = "both")]
    pub fsync: String,
    /// CPU to pin the measuring thread to.
    #[arg(long = "cpus", visible_alias = "cpu", value_name = "CPU")]
    pub cpu: Option<usize>,
}

/// `pmscope fio`.
#[derive(Debug, Args)]
pub struct FioArgs {
    /// Directories to run fio in, as file:DIR targets (repeatable).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Job counts (sweep axis, e.g. 1..4 or 1,2,4,8): each job its own file.
    #[arg(long, default_value = "1..2", value_name = "AXIS")]
    pub jobs: String,
    /// Workloads (comma list of fio rw= values): read, randread, write, randwrite.
    #[arg(long, default_value = "read,randread,write,randwrite")]
    pub rw: String,
    /// Seconds each fio run lasts (seed 004: 30).
    #[arg(long, default_value = "2", value_name = "SECONDS")]
    pub runtime: Seconds,
    /// Bytes of each job's file (seed 004: 512MiB).
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub size: Size,
}

/// `pmscope kmer`.
#[derive(Debug, Args)]
pub struct KmerArgs {
    /// The k-mer command.
    #[command(subcommand)]
    pub command: KmerCommand,
}

/// Where the k-mer commands write.
const KMER_OUTPUT_HELP: &str = "Outputs: --kmers FILE receives the k-mers (TSV, or FASTA with --format fasta; --kmers - is stdout); -o FILE receives the JSON record, as in every command. Each appears only when the job succeeded and is never overwritten without --force.\n\nEXAMPLES:\n  pmscope kmer count -k 31 genomes/*.fa.gz --kmers counts.tsv -o run.jsonl\n  pmscope kmer primers --in-group a.fa b.fa --out-group c.fa --kmers candidates.tsv";

/// The k-mer commands. For these, `--kmers FILE` receives the k-mers (TSV or FASTA;
/// `--kmers -` is stdout) and `-o FILE` the JSON record, as everywhere.
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
    /// Check a static-pm or tx-pm pool after a crash: header, cut-short inserts cleared
    /// (rolled back, for tx-pm), contents.
    Recover(KmerRecoverArgs),
    /// Seed 003's Table 9 on one target: volatile, static-pm and tx-pm side by side
    /// (million inserts per second, ratio to volatile, flushes and fences per insert).
    #[command(
        after_help = "The genomes default to the S. aureus references of Debian's ragout-examples (the demo's in-group); each table counts their k-mers once, on the same target.\n\nEXAMPLES:\n  pmscope kmer bench -t shm:4k --threads 2\n  pmscope kmer bench -t file:/mnt/pmem -k 100"
    )]
    Bench(KmerBenchArgs),
}

/// Options of `pmscope kmer bench`.
#[derive(Debug, Args, Clone)]
pub struct KmerBenchArgs {
    /// FASTA or gzipped FASTA files, one genome each (default: the S. aureus references
    /// of ragout-examples).
    #[arg(value_name = "FILES")]
    pub genomes: Vec<PathBuf>,
    /// K-mer length, 1 to 128.
    #[arg(short = 'k', value_name = "K", default_value_t = 31)]
    pub k: usize,
    /// Worker threads, one pinned per CPU (default: every CPU pmscope may use).
    #[arg(long, value_name = "N")]
    pub threads: Option<Count>,
    /// How static-pm makes stores durable: clflush, clflushopt, clwb, ntstore, none or
    /// msync (tx-pm persists inside libpmemobj). Default: clwb, or where the CPU lacks it
    /// clflushopt, else clflush (the record says which).
    #[arg(long, value_name = "STRATEGY")]
    pub persist: Option<String>,
    /// The one memory target every table is placed on and its mapping options.
    #[command(flatten)]
    pub targets: KmerTargetArgs,
}

/// Options of `pmscope kmer recover`.
#[derive(Debug, Args, Clone)]
pub struct KmerRecoverArgs {
    /// The pool file.
    #[arg(long, value_name = "PATH")]
    pub pool: PathBuf,
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
    /// Pool file of a persistent table: created exclusively, or reopened to resume the
    /// job it holds (default: a fresh pool on the target, gone afterwards).
    #[arg(long, value_name = "PATH")]
    pub pool: Option<PathBuf>,
    /// How a persistent table makes stores durable: clflush, clflushopt, clwb, ntstore,
    /// none or msync. Default: clwb, or where the CPU lacks it clflushopt, else clflush
    /// (the record says which; a reopened --pool keeps the strategy it was written with).
    #[arg(long, value_name = "STRATEGY")]
    pub persist: Option<String>,
    /// Worker threads, one pinned per CPU (default: every CPU pmscope may use).
    #[arg(long, value_name = "N")]
    pub threads: Option<Count>,
    /// `nodes`: one sub-table per NUMA node with CPUs, on that node's memory (dram or shm
    /// targets), its threads pinned there and inserting only into it; k-mers are routed
    /// to sub-tables by hash, so results equal `none`'s (seed 003 section 5.4).
    #[arg(long, value_enum, default_value = "none")]
    pub partition: KmerPartition,
    /// Treat every FASTA record as a genome of its own (default: one file = one genome).
    #[arg(long)]
    pub genome_per_record: bool,
    /// Format of the k-mers written with --kmers.
    #[arg(long, value_enum, default_value = "tsv")]
    pub format: KmerFormat,
    /// Sort written k-mer sets lexicographically (candidates are in genome order anyway).
    #[arg(long)]
    pub sorted: bool,
    /// Write the k-mers (TSV or FASTA) to FILE; `-` is stdout (not with --json).
    #[arg(long, value_name = "FILE")]
    pub kmers: Option<PathBuf>,
    /// The old name of -o (the JSON record); deprecated.
    #[arg(long, value_name = "FILE", hide = true)]
    pub record: Option<PathBuf>,
    /// The table's memory target and mapping options.
    #[command(flatten)]
    pub targets: KmerTargetArgs,
}

/// The one memory target of a k-mer table and its mapping options.
#[derive(Debug, Args, Clone)]
pub struct KmerTargetArgs {
    /// The one memory target the table is placed on (default dram:thp; a table lives on
    /// one target, so give it once). Syntax: dram[:4k|thp|2m|1g], file:PATH, shm[:4k|thp],
    /// devdax:/dev/daxX.Y, each with an optional ,node=N. See `pmscope list targets`.
    #[arg(short = 't', long = "target", value_name = "SPEC")]
    pub targets: Vec<TargetSpec>,
    /// Refuse to map more than SIZE of RAM (default: 90% of MemAvailable).
    #[arg(long, value_name = "SIZE")]
    pub max_mem: Option<Size>,
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

impl KmerTargetArgs {
    /// As the mapping options of every command.
    pub fn as_target_args(&self) -> TargetArgs {
        TargetArgs {
            targets: self.targets.clone(),
            max_mem: self.max_mem,
            keep: self.keep,
            require_dax: self.require_dax,
            destroy_data: self.destroy_data,
        }
    }
}

/// Table implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KmerTableKind {
    /// Concurrent open addressing in the target's memory.
    Volatile,
    /// The seed's Static-HT: log-free, crash-consistent, in a persistent pool.
    StaticPm,
    /// The seed's PMDK-HT: chained buckets in a libpmemobj pool, every insert a
    /// transaction (needs a file target: shm, file:DIR, or --pool).
    TxPm,
}

/// How a k-mer table is split across NUMA nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KmerPartition {
    /// One table on the target.
    None,
    /// One sub-table per NUMA node with CPUs, each on its own node.
    Nodes,
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
