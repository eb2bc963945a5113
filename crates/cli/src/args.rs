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
