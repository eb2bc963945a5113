//! The registry: every experiment, once. A line here makes an experiment a command (its
//! doc comment is the command's help, its attributes the examples), a suite step, and a
//! renderer the binary can find by name.

use crate::{
    Env, Experiment, Output, Placement, app, inst, latency, loaded, probe, rap, run, sync,
};
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

            /// The records the experiment derives from its points (see
            /// [`Experiment::derive`]).
            pub fn derive(&self, records: &[Record]) -> Vec<Record> {
                match self {
                    $(Step::$variant(_) => <$experiment as Experiment>::derive(records),)*
                }
            }

            /// Whether the experiment measures its points in blocks.
            pub fn in_blocks(&self) -> bool {
                match self {
                    $(Step::$variant(_) => <$experiment as Experiment>::IN_BLOCKS,)*
                }
            }

            /// The experiment's name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Step::$variant(_) => <$experiment as Experiment>::NAME,)*
                }
            }

            /// Leaves out what this CPU cannot execute; returns what was left out.
            pub fn fit_to_cpu(&mut self, f: &pmscope_sys::cpu::CpuFeatures) -> Vec<String> {
                match self {
                    $(Step::$variant(p) => <$experiment as Experiment>::fit_to_cpu(p, f),)*
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
    /// A real key-value server (memcached, redis) with its heap on each target, loaded by
    /// its own benchmark client (seed 004 Figures 20, 22, 27), with the heap's verified
    /// placement.
    #[command(
        after_help = "EXAMPLES:\n  pmscope app memcached -t dram:4k -t dram:thp -t shm --duration 1\n  pmscope app redis -t dram:4k --value-sizes 64,512,4KiB --requests 5000\n  pmscope app redis --aof-on file:/mnt/pmem -t dram:4k --requests 2000"
    )]
    App(app::Params) => app::App,
    /// Run an unmodified program with its large allocations on a target (PMDK libvmmalloc's
    /// role in seed 000), then report where they went and at which verified page size.
    #[command(
        after_help = "EXAMPLES:\n  pmscope run -t dram:2m -- python3 -c 'b = bytearray(1 << 30)'\n  pmscope run -t file:/mnt/pmem --threshold 4MiB -- python3 -c 'b = bytearray(64 << 20)'\n  pmscope run -t dram:thp,node=1 -- python3 -c 'b = bytearray(512 << 20)'",
        trailing_var_arg = true
    )]
    Run(run::Params) => run::Run,
    /// The main job on the embedded default targets (dram:4k, dram:thp, shm): map, verify,
    /// and print a short summary.
    #[command(
        after_help = "EXAMPLES:\n  pmscope quick\n  pmscope quick -t dram:4k -t file:/mnt/pmem --size 1GiB"
    )]
    Quick(crate::quick::Params) => crate::quick::Quick,
    /// Map targets, pre-fault them and print what the kernel actually gave.
    #[command(
        after_help = "EXAMPLES:\n  pmscope verify -t dram:2m -t dram:thp --size 1GiB   # exits 1 without 512 free 2 MiB huge pages\n  pmscope verify -t file:/mnt/pmem --require-dax   # exits 2 without a DAX file system\n  pmscope verify -t devdax:/dev/dax0.0 --destroy-data   # exits 2 without a devdax device"
    )]
    Verify(crate::verify::Params) => crate::verify::Verify,
    /// Bandwidth by op, pattern, access size and threads; mixed reads and writes.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope bandwidth -t dram:4k -t file:/mnt/pmem\n  pmscope bandwidth --ops read --pattern rand --sizes 64..128KiB --threads 1\n  pmscope bandwidth --ops write --mix 2:1 --threads 1..8 --duration 0.5   # exits 2 with fewer than 8 CPUs\n\n", crate::axis_help!()))]
    Bandwidth(crate::bandwidth::Params) => crate::bandwidth::Bandwidth,
    /// Idle latency and read bandwidth from every CPU node to every memory node, memory-only
    /// (CXL) nodes included, with the verified placement of every cell (Intel MLC's matrix).
    #[command(
        after_help = "EXAMPLES:\n  pmscope numa\n  pmscope numa --memory dram:thp --size 1GiB"
    )]
    Numa(crate::numa::Params) => crate::numa::Numa,
    /// PolyBench kernels (seed 000 Table 1) with their arrays on each target, single-threaded
    /// and pinned: time per kernel, variant (ref, opt) and target, verified page size, dTLB
    /// and LLC misses where perf counters exist.
    #[command(
        after_help = "EXAMPLES:\n  pmscope poly --preset medium -t dram:4k -t dram:thp\n  pmscope poly --kernels gemm,jacobi-2d,fdtd-2d -t dram:4k -t dram:2m -t file:/mnt/pmem\n  pmscope poly --preset seed --variants ref --repetitions 1 -t devdax:/dev/dax0.0 --destroy-data   # exits 2 without a devdax device"
    )]
    Poly(crate::poly::Params) => crate::poly::Poly,
    /// Idle load latency by dependent-load chains over a working-set sweep.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope latency -t dram:4k -t dram:thp\n  pmscope latency -t file:/mnt/pmem --sizes 4KiB..1GiB:x2 --pattern seq\n  pmscope latency -t dram,node=1 --tlb-window 16 --cpu 0   # exits 2 without NUMA node 1\n\n", crate::axis_help!()))]
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
    #[command(after_help = concat!("EXAMPLES:\n  pmscope loaded -t dram:4k\n  pmscope loaded --rw 2:1 --delays 0,100,1000 --cpus 0-7   # exits 2 with fewer than 8 CPUs\n  pmscope loaded --probe store+clwb+sfence -t file:/mnt/pmem\n\n", crate::axis_help!()))]
    Loaded(loaded::Params) => loaded::Loaded,
    /// On-DIMM buffer and prefetch probes (seed 001): working-set sweeps over 256-byte
    /// XPLines, with the knee of each curve.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope probe read-buffer -t file:/mnt/pmem\n  pmscope probe chase-write --write ntstore -t devdax:/dev/dax0.0 --destroy-data   # exits 2 without a devdax device\n  pmscope probe write-buffer --sizes 1KiB..1MiB -t dram:4k\n\n", crate::axis_help!()))]
    Probe(probe::Params) => probe::Probe,
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
