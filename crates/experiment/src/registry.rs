//! The registry: every experiment, once. A line here makes an experiment a command (its
//! doc comment is the command's help, its attributes the examples), a suite step, and a
//! renderer the binary can find by name.

use crate::{Env, Experiment, Output, Placement, inst, latency, loaded, probe, rap, sync};
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
    /// Idle load latency by dependent-load chains over a working-set sweep.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope latency -t dram:4k -t dram:thp\n  pmscope latency -t file:/mnt/pmem --sizes 4KiB..1GiB:x2 --pattern seq\n  pmscope latency -t dram,node=1 --tlb-window 16 --cpu 0\n\n", crate::axis_help!()))]
    Latency(latency::Params) => latency::Latency,
    /// Latency of single instruction sequences: op, flush, fence (LATTester).
    #[command(after_help = concat!("EXAMPLES:\n  pmscope inst -t dram:4k -t file:/mnt/pmem\n  pmscope inst --ops store+clwb,ntstore --fences sfence --sizes 64..4KiB\n\n", crate::axis_help!()))]
    Inst(inst::Params) => inst::Inst,
    /// Throughput of 64-byte block streams under each synchronisation option (pmmeter).
    #[command(
        after_help = "EXAMPLES:\n  pmscope sync -t file:/mnt/pmem\n  pmscope sync --unit 64 --fence sfence --threads 2 --cpus 0,1"
    )]
    Sync(sync::Params) => sync::Synchronisation,
    /// Loaded latency: a probe's latency while other threads generate delayed traffic.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope loaded -t dram:4k\n  pmscope loaded --rw 2:1 --delays 0,100,1000 --cpus 0-7\n  pmscope loaded --probe store+clwb+sfence -t file:/mnt/pmem\n\n", crate::axis_help!()))]
    Loaded(loaded::Params) => loaded::Loaded,
    /// On-DIMM buffer and prefetch probes (seed 001): working-set sweeps over 256-byte
    /// XPLines, with the knee of each curve.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope probe read-buffer -t file:/mnt/pmem\n  pmscope probe chase-write --write ntstore -t devdax:/dev/dax0.0 --destroy-data\n  pmscope probe write-buffer --sizes 1KiB..1MiB -t dram:4k\n\n", crate::axis_help!()))]
    Probe(probe::Params) => probe::Probe,
}
