//! The registry: every experiment, once. A line here makes an experiment a command (its
//! doc comment is the command's help, its attributes the examples), a suite step, and a
//! renderer the binary can find by name.

use crate::{Env, Experiment, Output, Placement, rap};
use anyhow::Result;
use pmscope_core::record::Record;

/// One experiment as the registry lists it.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The command's name (`rap`).
    pub name: &'static str,
    /// Its terminal table, from records.
    pub render: fn(&[Record]) -> String,
}

macro_rules! experiments {
    ($($(#[$meta:meta])* $variant:ident($params:ty) => $experiment:ty,)*) => {
        /// One experiment with its typed parameters: what a command line asks for, and what a
        /// suite lists as a step.
        #[derive(Debug, Clone, clap::Subcommand)]
        pub enum Step {
            $($(#[$meta])* $variant($params),)*
        }

        impl Step {
            /// Plans, measures and (on a terminal) renders it.
            pub fn run(&self, env: &mut Env, out: &mut dyn Output) -> Result<()> {
                match self {
                    $(Step::$variant(p) => crate::run::<$experiment>(env, out, p),)*
                }
            }

            /// The experiment's name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Step::$variant(_) => <$experiment as Experiment>::NAME,)*
                }
            }

            /// Puts it on a suite's targets and CPUs.
            pub fn place(&mut self, on: &Placement) {
                match self {
                    $(Step::$variant(p) => <$experiment as Experiment>::place(p, on),)*
                }
            }
        }

        /// Every experiment, in the order `pmscope --help` lists them.
        pub const EXPERIMENTS: &[Entry] = &[
            $(Entry {
                name: <$experiment as Experiment>::NAME,
                render: <$experiment as Experiment>::render,
            },)*
        ];
    };
}

experiments! {
    /// Read-after-persist: latency of loading a line persisted d lines earlier.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope rap -t file:/mnt/pmem --persist clwb\n  pmscope rap --distances 0..64 --persist clflushopt\n\n", crate::axis_help!()))]
    Rap(rap::Params) => rap::Rap,
    /// K-mer set analysis of bacterial genomes (seed 003): PCR primer candidates, k-mer
    /// counts and set operations, on a hash table placed on a memory target.
    Kmer(crate::kmer::Params) => crate::kmer::Kmer,
    /// File-operation latency on the file system of each directory (seed 004 Figure 23):
    /// create, append, overwrite and read, each with and without fsync, individually timed,
    /// in a directory pmscope creates and removes.
    #[command(
        after_help = "EXAMPLES:\n  pmscope fs -t file:/tmp -t file:/dev/shm\n  pmscope fs -t file:/mnt/pmem -t file:/mnt/ssd --samples 5000"
    )]
    Fs(crate::fs::Params) => crate::fs::Fs,
    /// 4 KiB sync read and write bandwidth by the real fio (seed 004 Figure 24), random and
    /// sequential, over a sweep of jobs, in a directory pmscope creates and removes.
    #[command(
        after_help = "EXAMPLES:\n  pmscope fio -t file:/tmp -t file:/dev/shm\n  pmscope fio -t file:/mnt/pmem --jobs 1,2,4,8 --runtime 30 --size 512MiB"
    )]
    Fio(crate::fio::Params) => crate::fio::Fio,
}
