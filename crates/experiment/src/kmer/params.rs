//! The command line of `pmscope kmer`: one subcommand per job, the options every job that
//! builds a table shares ([`RunArgs`]), and the table's one target ([`TableTarget`], in `target.rs`). The
//! table kinds and k-mer formats are the workload's own types, parsed from their names.

use super::bench;
use super::fence::fences;
pub use super::target::TableTarget;
use crate::params::Count;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use pmscope_persist::PersistStrategy;
use pmscope_workload::kmer::job::Method;
use pmscope_workload::kmer::output::Format;
use pmscope_workload::kmer::table::{Fence, TableKind};
use std::path::PathBuf;

/// Where the k-mer commands write.
const OUTPUT_HELP: &str = "Outputs: --kmers FILE receives the k-mers (TSV, or FASTA with --format fasta; --kmers - is stdout); -o FILE receives the JSON record, as in every command. Each appears only when the job succeeded and is never overwritten without --force.\n\nEXAMPLES:\n  pmscope kmer count -k 31 genomes/*.fa.gz --kmers counts.tsv -o run.jsonl\n  pmscope kmer primers --in-group a.fa b.fa --out-group c.fa --kmers candidates.tsv";

/// The k-mer commands. For these, `--kmers FILE` receives the k-mers (TSV or FASTA;
/// `--kmers -` is stdout) and `-o FILE` the JSON record, as everywhere.
#[derive(Debug, Clone, Subcommand)]
#[command(after_help = OUTPUT_HELP)]
pub enum Command {
    /// PCR primer candidates: k-mers in every in-group genome and in no out-group genome,
    /// with their position in the first in-group genome.
    #[command(after_help = OUTPUT_HELP)]
    Primers(PrimersArgs),
    /// Distinct canonical k-mers, and how many k-mers occur in 1, 2, ... genomes.
    #[command(after_help = OUTPUT_HELP)]
    Count(SetArgs),
    /// The k-mers of any of the genomes.
    #[command(after_help = OUTPUT_HELP)]
    Union(SetArgs),
    /// The k-mers of all of the genomes.
    #[command(after_help = OUTPUT_HELP)]
    Intersect(SetArgs),
    /// The k-mers of the genomes that none of the --minus genomes has.
    #[command(after_help = OUTPUT_HELP)]
    Subtract(SubtractArgs),
    /// The primer pipeline on the genomes of Debian's ragout-examples and kaptive-example.
    #[command(after_help = OUTPUT_HELP)]
    Demo(DemoArgs),
    /// Write a synthetic reference and strains derived from it (SNPs, indels) as FASTA.
    Synth(SynthArgs),
    /// Check a static-pm or tx-pm pool after a crash: header, cut-short inserts cleared
    /// (rolled back, for tx-pm), contents.
    Recover(RecoverArgs),
    /// Seed 003's Table 9 and Fig. 18: volatile, static-pm and tx-pm side by side on each
    /// target (million inserts per second, ratio to volatile, flushes and fences per
    /// insert), and with several targets each table's insert time on each beside the first's.
    #[command(
        after_help = "The genomes default to the S. aureus references of Debian's ragout-examples (the demo's in-group); each table counts their k-mers once on each target. Every target must be one tx-pm can keep its pool on: shm or file:DIR, without node=.\n\nEXAMPLES:\n  pmscope kmer bench -t shm:4k --threads 2 genomes/*.fa.gz\n  pmscope kmer bench -t file:/mnt/pmem -k 100 genomes/*.fa.gz\n  pmscope kmer bench -t shm:4k -t file:/mnt/pmem --fence per-slot genomes/*.fa.gz"
    )]
    Bench(bench::Params),
}

/// `--method`: the workload's counting methods, each with its help line.
fn methods() -> impl TypedValueParser<Value = Method> {
    PossibleValuesParser::new(Method::ALL.map(|m| PossibleValue::new(m.name()).help(m.about())))
        .map(|s| s.parse::<Method>().expect("a listed method parses"))
}

/// `--format`: the workload's formats, each with its help line.
fn formats() -> impl TypedValueParser<Value = Format> {
    PossibleValuesParser::new(Format::ALL.map(|f| PossibleValue::new(f.name()).help(f.about())))
        .map(|s| s.parse::<Format>().expect("a listed format parses"))
}

/// Options of every k-mer command that builds a table.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// K-mer length, 1 to 128 (default: 100 for primers and demo, 31 otherwise).
    #[arg(short = 'k', value_name = "K", value_parser = pmscope_core::whole::parse::<usize>)]
    pub k: Option<usize>,
    /// The table implementation.
    #[arg(long, default_value = "volatile", value_parser = super::fence::table_kinds())]
    pub table: TableKind,
    /// Pool file of a persistent table: created exclusively, or reopened to resume the
    /// job it holds (default: a fresh pool on the target, gone afterwards).
    #[arg(long, value_name = "PATH")]
    pub pool: Option<PathBuf>,
    /// How a persistent table makes stores durable: clflush, clflushopt, clwb, ntstore,
    /// none or msync. Default: clwb, or where the CPU lacks it clflushopt, else clflush
    /// (the record says which; a reopened --pool keeps the strategy it was written with).
    #[arg(long, value_name = "STRATEGY")]
    pub persist: Option<PersistStrategy>,
    /// When static-pm fences the slots it wrote (default: per-group; the record says which).
    #[arg(long, value_name = "POLICY", value_parser = fences())]
    pub fence: Option<Fence>,
    /// Worker threads, one pinned per CPU (default: every CPU pmscope may use).
    #[arg(long, value_name = "N")]
    pub threads: Option<Count>,
    /// `nodes`: one sub-table per NUMA node with CPUs, its threads pinned there and
    /// inserting only into it; k-mers are routed to sub-tables by hash, so results equal
    /// `none`'s (seed 003 section 5.4). One dram or shm target is bound to each node in
    /// turn; or give one target per node with CPUs (-t once per node, in node order:
    /// file, devdax, or dram,node=N for a far-memory node) and each sub-table lives on its own.
    #[arg(long, value_enum, default_value = "none")]
    pub partition: Partition,
    /// Treat every FASTA record as a genome of its own (default: one file = one genome).
    #[arg(long)]
    pub genome_per_record: bool,
    /// Format of the k-mers written with --kmers.
    #[arg(long, default_value = "tsv", value_parser = formats())]
    pub format: Format,
    /// Sort written k-mer sets lexicographically (candidates are in genome order anyway).
    #[arg(long)]
    pub sorted: bool,
    /// Write the k-mers (TSV or FASTA) to FILE; `-` is stdout (not with --json).
    #[arg(long, value_name = "FILE")]
    pub kmers: Option<PathBuf>,
    /// The old name of -o (the JSON record); deprecated.
    #[arg(long, value_name = "FILE", hide = true)]
    pub record: Option<PathBuf>,
    /// Where --method binned keeps its bins: auto (in memory when the genomes' 2-bit text
    /// and bins fit --max-mem, else out of core), memory, or disk (a scratch file, counted
    /// a partition at a time).
    #[arg(long, value_enum, default_value = "auto")]
    pub bins: Bins,
    /// Directory of the scratch file out of core (default: beside --kmers, else the
    /// current directory). The file has no name: it is gone when pmscope ends, however it
    /// ends.
    #[arg(long, value_name = "DIR")]
    pub tmp: Option<PathBuf>,
    /// The table's memory target and mapping options.
    #[command(flatten)]
    pub targets: TableTarget,
}

/// Where `--method binned` keeps its bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Bins {
    /// In memory when they fit --max-mem, else on disk.
    Auto,
    /// In memory, whatever the budget.
    Memory,
    /// In a scratch file (out of core), whatever the budget.
    Disk,
}

/// How a k-mer table is split across NUMA nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Partition {
    /// One table on the target.
    None,
    /// One sub-table per NUMA node with CPUs, each on its own node.
    Nodes,
}

/// `pmscope kmer count|union|intersect`.
#[derive(Debug, Clone, Args)]
pub struct SetArgs {
    /// FASTA or gzipped FASTA files, one genome each.
    #[arg(required = true, value_name = "FILES")]
    pub genomes: Vec<PathBuf>,
    /// How to count (default: binned, the fastest; table when -t or an option of the one
    /// table names where or how it lives): one table on the target (what `kmer bench`
    /// compares across tables and targets), or minimizer bins counted one by one in tables
    /// the size of the L2 cache. The results are the same.
    #[arg(long, value_parser = methods())]
    pub method: Option<Method>,
    /// Run options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `pmscope kmer subtract`.
#[derive(Debug, Clone, Args)]
pub struct SubtractArgs {
    /// Genomes whose k-mers are kept.
    #[arg(required = true, value_name = "FILES")]
    pub genomes: Vec<PathBuf>,
    /// Genomes whose k-mers are removed.
    #[arg(long, required = true, num_args = 1.., value_name = "FILES")]
    pub minus: Vec<PathBuf>,
    /// How to count (default: binned, the fastest; table when -t or an option of the one
    /// table names where or how it lives): one table on the target (what `kmer bench`
    /// compares across tables and targets), or minimizer bins counted one by one in tables
    /// the size of the L2 cache. The results are the same.
    #[arg(long, value_parser = methods())]
    pub method: Option<Method>,
    /// Run options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `pmscope kmer primers`.
#[derive(Debug, Clone, Args)]
pub struct PrimersArgs {
    /// Genomes of the group to detect.
    #[arg(long, required = true, num_args = 1.., value_name = "FILES")]
    pub in_group: Vec<PathBuf>,
    /// Genomes that must not be detected.
    #[arg(long, required = true, num_args = 1.., value_name = "FILES")]
    pub out_group: Vec<PathBuf>,
    /// How to count (default: binned, the fastest; table when -t or an option of the one
    /// table names where or how it lives): one table on the target (what `kmer bench`
    /// compares across tables and targets), or minimizer bins counted one by one in tables
    /// the size of the L2 cache. The results are the same.
    #[arg(long, value_parser = methods())]
    pub method: Option<Method>,
    /// Run options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `pmscope kmer demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Directory of the ragout examples.
    #[arg(long, default_value = super::demo::RAGOUT, value_name = "DIR")]
    pub ragout: PathBuf,
    /// Directory of the kaptive examples.
    #[arg(long, default_value = super::demo::KAPTIVE, value_name = "DIR")]
    pub kaptive: PathBuf,
    /// Run options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `pmscope kmer synth`.
#[derive(Debug, Clone, Args)]
pub struct SynthArgs {
    /// Directory to write reference.fasta and strain_N.fasta into (created if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Bases of the reference (decimal suffixes k, M, G: 5M = 5,000,000).
    #[arg(long, default_value = "5M", value_name = "BASES")]
    pub length: String,
    /// Strains derived from the reference.
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = pmscope_core::whole::parse::<usize>)]
    pub strains: usize,
    /// Substitutions per base.
    #[arg(long, default_value_t = 0.001, value_name = "RATE")]
    pub snp_rate: f64,
    /// Insertions or deletions (1 to 10 bases) per base.
    #[arg(long, default_value_t = 0.0001, value_name = "RATE")]
    pub indel_rate: f64,
    /// Random seed.
    #[arg(long, default_value_t = 1, value_parser = pmscope_core::whole::parse::<u64>)]
    pub seed: u64,
    /// A pangenome shaped like one of seed 003's datasets (Table 6): seed-2 (336 genomes,
    /// 1.58 Gbp, about 25.7 M distinct 100-mers), seed-3 (13 014 genomes, 60.6 Gbp), seed-1
    /// (48 200 genomes, 232 Gbp). Writes genome_N.fasta; --seed still applies.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["length", "strains", "snp_rate", "indel_rate"])]
    pub preset: Option<String>,
    /// With --preset: write this fraction of its genomes (0.1: a tenth), for a dataset of
    /// the same shape that fits the disk.
    #[arg(long, value_name = "FRACTION", requires = "preset")]
    pub scale: Option<f64>,
}

/// `pmscope kmer recover`.
#[derive(Debug, Clone, Args)]
pub struct RecoverArgs {
    /// The pool file.
    #[arg(long, value_name = "PATH")]
    pub pool: PathBuf,
}
