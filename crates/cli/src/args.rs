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
#[derive(Debug, Args)]
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
    /// K-mer set analysis of bacterial genomes (seed 003): PCR primer candidates, k-mer
    /// counts and set operations, on a hash table placed on a memory target.
    Kmer(KmerArgs),
    /// List target kinds or persist strategies.
    List {
        /// What to list.
        #[arg(value_enum)]
        what: ListWhat,
    },
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

/// `pmscope kmer`.
#[derive(Debug, Args)]
pub struct KmerArgs {
    /// The k-mer command.
    #[command(subcommand)]
    pub command: KmerCommand,
}

/// The k-mer commands. For these, `-o FILE` receives the k-mers (TSV or FASTA; `-o -` is
/// stdout) and `--record FILE` the JSON record.
#[derive(Debug, Subcommand)]
pub enum KmerCommand {
    /// PCR primer candidates: k-mers in every in-group genome and in no out-group genome,
    /// with their position in the first in-group genome.
    Primers(KmerPrimersArgs),
    /// Distinct canonical k-mers, and how many k-mers occur in 1, 2, ... genomes.
    Count(KmerSetArgs),
    /// The k-mers of any of the genomes.
    Union(KmerSetArgs),
    /// The k-mers of all of the genomes.
    Intersect(KmerSetArgs),
    /// The k-mers of the genomes that none of the --minus genomes has.
    Subtract(KmerSubtractArgs),
    /// The primer pipeline on the genomes of Debian's ragout-examples and kaptive-example.
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
