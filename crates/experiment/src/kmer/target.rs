//! The memory target of a k-mer table (every subcommand that builds one; `bench` takes
//! several, one after the other) and its mapping options.

use crate::params::{Size, TargetArgs};
use clap::Args;
use pmscope_mapping::TargetSpec;

/// The memory target of a k-mer table (one per node with `--partition nodes`) and its
/// mapping options.
#[derive(Debug, Args, Clone)]
pub struct TableTarget {
    /// The memory target the table is placed on (default dram:thp; a table lives on one
    /// target, so give it once, or with --partition nodes once per node with CPUs).
    /// Syntax: dram[:4k|thp|2m|1g], file:PATH, shm[:4k|thp], devdax:/dev/daxX.Y, each
    /// with an optional ,node=N. See `pmscope list targets`.
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

impl TableTarget {
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
