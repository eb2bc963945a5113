//! The command line as the user typed it (clap derive): validated for form, not yet
//! interpreted. Each command turns these into its plan.

use clap::{Args, Parser, Subcommand};
use pmscope_store::{Alpha, Percent};
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
    /// The precision asked of each point: its 95 % interval within ±PCT %, from the spread of
    /// its blocks (its record says whether it was met); with --blocks 1, repetitions go on
    /// until it is, or until 4x the time of its --reps is spent. 0: exactly --reps. A
    /// repetition that other work or the hypervisor disturbed is measured again.
    #[arg(
        long,
        global = true,
        value_name = "PCT",
        default_value = "3",
        allow_negative_numbers = true
    )]
    pub precision: pmscope_experiment::params::PrecisionPct,
    /// Measure each point in N blocks, each on a fresh mapping of its target made beside the
    /// previous one (pages first touched in address order), the blocks of all points taken
    /// in turn: a point's figure and interval come from its blocks, so they cover where the
    /// pages landed and the machine's drift. 1: one mapping for the whole measurement.
    #[arg(long, global = true, value_name = "N", default_value = "5")]
    pub blocks: pmscope_experiment::params::Count,
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
    /// The offline HTML report (inline SVG figures, observations) of runs of the results
    /// store or JSON Lines files written with -o, side by side. Writes -o FILE (default
    /// report.html).
    #[command(
        after_help = "EXAMPLES:\n  pmscope report\n  pmscope report latest latest~1 -o two-runs.html\n  pmscope report optane-box.jsonl cxl-box.jsonl --reference optane-g1 --svg-dir figures"
    )]
    Report(ReportArgs),
    /// A named study over each target, as one run: basic (seed 004 section 3), table5 (seed
    /// 003 Table 5), sync (seed 002).
    #[command(
        after_help = "EXAMPLES:\n  pmscope suite basic -t dram:thp\n  pmscope suite table5 -t dram:thp -t file:/mnt/pmem --full\n  pmscope suite basic --resume latest   # exits 2 unless the latest run is an interrupted basic suite"
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
    /// Compare two runs, or two targets of one run, point by point: each point is better,
    /// worse, within noise or not resolvable (see docs/results.md).
    #[command(
        after_help = "VERDICTS:\n  better, worse    beyond the spread of the point's blocks, with Holm's correction over all points\n  within noise     no change, and one of PCT (--fail-above, else 10 %) would have been found\n  not resolvable   no change found, but one of PCT could not have been told from the spread of\n                   the point's blocks: measure with more --blocks, or name several runs a side\n\nEXAMPLES:\n  pmscope compare before after --fail-above 10\n  pmscope compare 1 2,3 --fail-above 10\n  pmscope compare --targets latest dram:thp dram:4k --verbose"
    )]
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
    /// Add a JSON Lines file's records (written with -o): a run per run it holds, never twice.
    Import {
        /// The file: plain or gzip JSON Lines; `-` reads standard input.
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
    /// Run A (id, latest, latest~N or tag), or with --targets the run holding both. Several
    /// runs, comma-separated, or a tag several runs carry, pool their blocks into one side.
    pub a: String,
    /// Run B (as A), or with --targets target A's spec.
    pub b: String,
    /// With --targets: target B's spec.
    pub c: Option<String>,
    /// Compare two targets of one run: `pmscope compare --targets RUN SPEC_A SPEC_B`.
    #[arg(long)]
    pub targets: bool,
    /// Exit 1 when any point is called worse, by more than PCT percent. PCT is also the
    /// change a point must be able to show: one where a change of PCT could not have been
    /// told from the noise (timer steps, a noisy machine), or whose run missed its
    /// precision target, is `not resolvable` (10 without --fail-above).
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<Percent>,
    /// Chance that a comparison of two runs of the same thing calls any point better or
    /// worse, over all points together (Holm's correction).
    #[arg(long, value_name = "P", default_value = "0.05")]
    pub alpha: Alpha,
    /// Run-to-run variation to add per run, in percent, beyond what the blocks measured (a
    /// machine that drifts between runs more than within one); 0: none.
    #[arg(long, value_name = "PCT", default_value = "0")]
    pub noise_floor: Percent,
    /// List every point, those within the noise too.
    #[arg(short, long)]
    pub verbose: bool,
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
