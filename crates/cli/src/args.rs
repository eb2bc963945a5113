//! The command line as the user typed it (clap derive): validated for form, not yet
//! interpreted. Each command turns these into its plan.

use clap::{Args, Parser, Subcommand};
use pmscope_experiment::axis_help;
use pmscope_experiment::params::{
    AutoSize, Count, Cpus, Seconds, Size, TargetArgs, inst_ops_help, probe_help,
};
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
    #[arg(long, global = true, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub prefetchers: String,
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
    /// The main job on the embedded default targets (dram:4k, dram:thp, shm): map, verify,
    /// and print a short summary.
    #[command(
        after_help = "EXAMPLES:\n  pmscope quick\n  pmscope quick -t dram:4k -t file:/mnt/pmem --size 1GiB"
    )]
    Quick(QuickArgs),
    /// Map targets, pre-fault them and print what the kernel actually gave.
    #[command(
        after_help = "EXAMPLES:\n  pmscope verify -t dram:2m -t dram:thp --size 1GiB   # exits 1 without 512 free 2 MiB huge pages\n  pmscope verify -t file:/mnt/pmem --require-dax   # exits 2 without a DAX file system\n  pmscope verify -t devdax:/dev/dax0.0 --destroy-data   # exits 1 without a devdax device"
    )]
    Verify(VerifyArgs),
    /// Idle load latency by dependent-load chains over a working-set sweep.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope latency -t dram:4k -t dram:thp\n  pmscope latency -t file:/mnt/pmem --sizes 4KiB..1GiB:x2 --pattern seq\n  pmscope latency -t dram,node=1 --tlb-window 16 --cpus 0   # exits 1 without NUMA node 1\n\n", axis_help!()))]
    Latency(LatencyArgs),
    /// Latency of single instruction sequences: op, flush, fence (LATTester).
    #[command(after_help = concat!("EXAMPLES:\n  pmscope inst -t dram:4k -t file:/mnt/pmem\n  pmscope inst --ops store+clwb,ntstore --fences sfence --sizes 64..4KiB\n\n", axis_help!()))]
    Inst(InstArgs),
    /// Throughput of 64-byte block streams under each synchronisation option (pmmeter).
    #[command(
        after_help = "EXAMPLES:\n  pmscope sync -t file:/mnt/pmem\n  pmscope sync --unit 64 --fence sfence --threads 2 --cpus 0,1"
    )]
    Sync(SyncArgs),
    /// The experiments (see `pmscope_experiment::registry`).
    #[command(flatten)]
    Experiment(pmscope_experiment::Step),
    /// Bandwidth by op, pattern, access size and threads; mixed reads and writes.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope bandwidth -t dram:4k -t file:/mnt/pmem\n  pmscope bandwidth --ops read --pattern rand --sizes 64..128KiB --threads 1\n  pmscope bandwidth --ops write --mix 2:1 --threads 1..8 --duration 0.5   # exits 2 with fewer than 8 CPUs\n\n", axis_help!()))]
    Bandwidth(BandwidthArgs),
    /// Loaded latency: a probe's latency while other threads generate delayed traffic.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope loaded -t dram:4k\n  pmscope loaded --rw 2:1 --delays 0,100,1000 --cpus 0-7   # exits 2 with fewer than 8 CPUs\n  pmscope loaded --probe store+clwb+sfence -t file:/mnt/pmem\n\n", axis_help!()))]
    Loaded(LoadedArgs),
    /// PolyBench kernels (seed 000 Table 1) with their arrays on each target, single-threaded
    /// and pinned: time per kernel, variant (ref, opt) and target, verified page size, dTLB
    /// and LLC misses where perf counters exist.
    #[command(
        after_help = "EXAMPLES:\n  pmscope poly --preset medium -t dram:4k -t dram:thp\n  pmscope poly --kernels gemm,jacobi-2d,fdtd-2d -t dram:4k -t dram:2m -t file:/mnt/pmem\n  pmscope poly --preset seed --variants ref --repetitions 1 -t devdax:/dev/dax0.0 --destroy-data   # exits 1 without a devdax device"
    )]
    Poly(PolyArgs),
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
    /// Idle latency and read bandwidth from every CPU node to every memory node, memory-only
    /// (CXL) nodes included, with the verified placement of every cell (Intel MLC's matrix).
    #[command(
        after_help = "EXAMPLES:\n  pmscope numa\n  pmscope numa --memory dram:thp --size 1GiB"
    )]
    Numa(NumaArgs),
    /// A real key-value server (memcached, redis) with its heap on each target, loaded by
    /// its own benchmark client (seed 004 Figures 20, 22, 27), with the heap's verified
    /// placement.
    #[command(
        after_help = "EXAMPLES:\n  pmscope app memcached -t dram:4k -t dram:thp -t shm --duration 1\n  pmscope app redis -t dram:4k --value-sizes 64,512,4KiB --requests 5000\n  pmscope app redis --aof-on file:/mnt/pmem -t dram:4k --requests 2000"
    )]
    App(AppArgs),
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
    /// On-DIMM buffer and prefetch probes (seed 001): working-set sweeps over 256-byte
    /// XPLines, with the knee of each curve.
    #[command(after_help = concat!("EXAMPLES:\n  pmscope probe read-buffer -t file:/mnt/pmem\n  pmscope probe chase-write --write ntstore -t devdax:/dev/dax0.0 --destroy-data   # exits 1 without a devdax device\n  pmscope probe write-buffer --sizes 1KiB..1MiB -t dram:4k\n\n", axis_help!()))]
    Probe(ProbeArgs),
    /// A named study over each target, as one run: basic (seed 004 section 3), table5 (seed
    /// 003 Table 5), sync (seed 002).
    #[command(
        after_help = "EXAMPLES:\n  pmscope suite basic -t dram:thp\n  pmscope suite table5 -t dram:thp -t file:/mnt/pmem --full\n  pmscope suite basic --resume latest   # exits 2 unless the latest run is an interrupted basic suite"
    )]
    Suite(SuiteArgs),
    /// Run an unmodified program with its large allocations on a target (PMDK libvmmalloc's
    /// role in seed 000), then report where they went and at which verified page size.
    #[command(
        after_help = "EXAMPLES:\n  pmscope run -t dram:2m -- python3 -c 'b = bytearray(1 << 30)'\n  pmscope run -t file:/mnt/pmem --threshold 4MiB -- python3 -c 'b = bytearray(64 << 20)'\n  pmscope run -t dram:thp,node=1 -- python3 -c 'b = bytearray(512 << 20)'",
        trailing_var_arg = true
    )]
    Run(RunArgs),
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

fn bandwidth_ops_help() -> String {
    format!(
        "Ops (comma list): {} (store+clwb: a clwb per line, an sfence per access; copy and \
         ntcopy: the region's first half into its second, ntcopy with non-temporal stores). \
         Default: all (with --mix: write, the op of the writers)",
        pmscope_loops::stream::StreamOp::names()
    )
}

fn traffic_op_help() -> String {
    format!(
        "What the traffic does: {} (read: read-only traffic). A row of `pmscope list ops` that \
         streams as one of them (load, store, store+clwb+sfence, ...) is accepted too \
         [default: read, or write when --rw has writes]",
        pmscope_loops::stream::StreamOp::names()
    )
}

fn run_target_help() -> String {
    format!(
        "The target of the program's large allocations. Syntax: {}, each with an optional \
         ,node=N; file: names a directory (one file per allocation).",
        pmscope_mapping::kinds::syntax_summary()
    )
}

/// `pmscope numa`.
#[derive(Debug, Args)]
pub struct NumaArgs {
    /// The memory kind mapped on every node, without node= (dram:4k, dram:thp, dram:2m...).
    #[arg(long, default_value = "dram:4k", value_name = "KIND")]
    pub memory: String,
    /// Bytes mapped per memory node (the latency chain covers all of it), or auto: 4x the
    /// last-level cache, at least 256MiB, capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub size: AutoSize,
    /// Repetitions per cell (one more is run first and dropped).
    #[arg(long)]
    pub reps: Option<Count>,
    /// Seconds each bandwidth repetition streams [default: 0.15].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<Seconds>,
    /// Mapping options (--max-mem, --keep...); targets are made from --memory, not -t.
    #[command(flatten)]
    pub targets: TargetArgs,
}

/// `pmscope app`.
#[derive(Debug, Args)]
pub struct AppArgs {
    /// The server.
    #[arg(value_enum)]
    pub server: AppServer,
    /// Targets for the server's heap, and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Value sizes (memcached default 1KiB, redis 512, with --aof-on 4).
    #[arg(long, value_name = "AXIS")]
    pub value_sizes: Option<String>,
    /// Concurrent client connections [default: 12].
    #[arg(long)]
    pub clients: Option<Count>,
    /// memcached: seconds per workload and value size [default: 5].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<Seconds>,
    /// redis: requests per workload and value size [default: 50000].
    #[arg(long)]
    pub requests: Option<Count>,
    /// The server's memory limit (memcached -m, redis maxmemory) [default: 1GiB].
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<Size>,
    /// redis: keep an append-only file, fsynced after every write, in a new directory
    /// inside DIR (file:DIR; removed afterwards unless --keep): seed 004 Figure 27's MSET.
    #[arg(long, value_name = "file:DIR")]
    pub aof_on: Option<String>,
    /// Port on 127.0.0.1 [default: a free one].
    #[arg(long)]
    pub port: Option<u16>,
    /// Allocations of at least SIZE go to the target (pmscope run --threshold; memcached's
    /// slab pages are 1 MiB).
    #[arg(long, default_value = "1MiB", value_name = "SIZE")]
    pub threshold: Size,
}

/// Servers `pmscope app` drives.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum AppServer {
    /// memcached, loaded by memaslap (GET-heavy 10 % SET, SET-heavy 50 % SET; 128 B keys).
    Memcached,
    /// redis-server, loaded by redis-benchmark (SET then GET; MSET with --aof-on).
    Redis,
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

/// `pmscope poly`.
#[derive(Debug, Args)]
pub struct PolyArgs {
    /// Targets and mapping options (default: dram:4k); every kernel's arrays are carved
    /// from one mapping of the largest kernel's size on each target.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Dataset size: mini, small, medium, large, or seed (seed 000 Table 1's sizes, up to
    /// about 1 GiB per kernel).
    #[arg(long, default_value = "medium")]
    pub preset: String,
    /// Kernels, comma-separated (default: all 22 of seed 000 Table 1; `pmscope poly --kernels
    /// list` names them).
    #[arg(long, value_name = "LIST")]
    pub kernels: Option<String>,
    /// Variants, comma-separated: ref (textbook loop order), opt (interchanged, tiled).
    #[arg(long, default_value = "ref,opt", value_name = "LIST")]
    pub variants: String,
    /// Timed runs per kernel, variant and target (one more is run first and dropped).
    #[arg(long, visible_alias = "reps", default_value = "3")]
    pub repetitions: Count,
    /// CPU to pin the kernels to.
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

/// `pmscope probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The probe.
    #[arg(value_enum)]
    pub kind: ProbeKind,
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Working sets (sweep axis) [default: 1KiB..64MiB].
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Timed visits per point [default: 10000].
    #[arg(long)]
    pub count: Option<Count>,
    /// chase-write: the write made at each visit: store+clwb, store+clflushopt,
    /// store+clflush or ntstore [default: store+clwb, or where the CPU lacks clwb
    /// store+clflushopt, else store+clflush].
    #[arg(long)]
    pub write: Option<String>,
    /// CPU to pin the measuring thread to.
    #[arg(long = "cpus", visible_alias = "cpu", value_name = "CPU")]
    pub cpu: Option<usize>,
    /// Seed of the random orders.
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
}

/// The probes of `pmscope probe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProbeKind {
    /// Read k of the 4 lines of each XPLine (k = 1..4), flushed: the read buffer's size and
    /// its granularity (64 B vs 256 B).
    ReadBuffer,
    /// Sequential and random non-temporal writes of 1..4 lines of each XPLine: the
    /// write-combining buffer.
    WriteBuffer,
    /// Flushed reads interleaved with non-temporal writes on a disjoint half, against
    /// read-only and write-only baselines: do reads and writes share a buffer?
    RwBuffer,
    /// Random XPLines read line by line, with and without a software prefetch of the next.
    Prefetch,
    /// A walk over XPLine elements writing another line of each (--write), coupled (a
    /// pointer chase) or decoupled (addresses from a DRAM array).
    ChaseWrite,
}

impl ProbeKind {
    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::ReadBuffer => "read-buffer",
            ProbeKind::WriteBuffer => "write-buffer",
            ProbeKind::RwBuffer => "rw-buffer",
            ProbeKind::Prefetch => "prefetch",
            ProbeKind::ChaseWrite => "chase-write",
        }
    }
}

/// `pmscope suite`.
#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// The study.
    #[arg(value_enum)]
    pub study: Study,
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// The publication-grade version of every step (each command's --full).
    #[arg(long)]
    pub full: bool,
    /// CPUs to use (default: all this process may use).
    #[arg(long)]
    pub cpus: Option<Cpus>,
    /// Finish RUN, an interrupted run of this suite in the results store (an id, latest,
    /// latest~N or a tag): its finished steps are kept, the rest are measured into it.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
}

/// The studies `pmscope suite` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Study {
    /// Seed 004 section 3: idle latency (random, sequential), instruction latency,
    /// bandwidth vs threads per op, bandwidth vs access size, mixed read/write, loaded
    /// latency. About 2 minutes for two targets on 2 cores.
    Basic,
    /// Seed 003 Table 5: single-thread latency by access size, rand/seq x read/write/
    /// write+flush, with slowdown factors against the first target.
    Table5,
    /// Seed 002: the cost of each synchronisation option (pmmeter).
    Sync,
}

/// `pmscope run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    // The help lists the kinds from their registry.
    #[arg(short = 't', long = "target", value_name = "SPEC", help = run_target_help(), required = true)]
    pub target: TargetSpec,
    /// Allocations of at least SIZE (malloc family, private anonymous mmap) go to the
    /// target; smaller ones are left alone.
    #[arg(long, default_value = "2MiB", value_name = "SIZE")]
    pub threshold: Size,
    /// Keep the files created on file: and shm targets (named pmscope-PID-N-kept.bin).
    #[arg(long)]
    pub keep: bool,
    /// Allow writing to devdax devices, destroying their contents.
    #[arg(long)]
    pub destroy_data: bool,
    /// The program and its arguments, after --.
    #[arg(required = true, num_args = 1.., value_name = "COMMAND", allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// `pmscope verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Targets and mapping options.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Bytes to map per target.
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub size: Size,
}

/// `pmscope quick`.
#[derive(Debug, Args)]
pub struct QuickArgs {
    /// Targets and mapping options (default: dram:4k, dram:thp, shm:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Bytes to map per target (the working set of both figures), or auto: 4x the
    /// last-level cache, at least 256MiB, capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub size: AutoSize,
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
    pub element: Size,
    /// Working sets (sweep axis, e.g. 4KiB..1GiB or 1MiB,1GiB; `auto` stands for the
    /// default end, e.g. 4KiB..auto:x4). Default: 4 KiB to auto — 4x the last-level cache,
    /// at least 1GiB, capped by available memory and --max-mem — every power of two and the
    /// midpoint after it, and the end itself.
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Randomise only within groups of this many 4 KiB pages (separates TLB misses from
    /// memory latency).
    #[arg(long, value_name = "PAGES")]
    pub tlb_window: Option<Count>,
    /// Put every pointer at offset 0 of its element instead of spreading them (the mixer).
    #[arg(long)]
    pub no_mix: bool,
    /// Repetitions per point (one more is run first and dropped) [default: 5; 15 with --full].
    #[arg(long)]
    pub reps: Option<Count>,
    /// Individually timed loads for the distribution at the largest point, 0 for none
    /// [default: 200000; 1000000 with --full].
    #[arg(long)]
    pub samples: Option<usize>,
    /// CPU to pin the measuring thread to.
    #[arg(long = "cpus", visible_alias = "cpu", value_name = "CPU")]
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
    #[arg(long, help = inst_ops_help())]
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
    /// Region the addresses fall in, or auto: 4x the last-level cache, at least 1GiB,
    /// capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub region: AutoSize,
    /// Accesses timed per cell [default: 100000; 1000000 with --full].
    #[arg(long)]
    pub count: Option<Count>,
    /// Do not flush lines before timed loads (measure cache hits instead of memory).
    #[arg(long)]
    pub no_flush: bool,
    /// After the table, print every cell's per-access latency histogram (log buckets, seed
    /// 003 Figures 6-7); the records always carry them.
    #[arg(long)]
    pub histograms: bool,
    /// Instruction width in bytes for accesses of 64 bytes and more: 16 (SSE2), 32 (AVX2)
    /// or 64 (AVX-512F) [default: the widest the CPU has].
    #[arg(long)]
    pub width: Option<usize>,
    /// CPU to pin the measuring thread to.
    #[arg(long = "cpus", visible_alias = "cpu", value_name = "CPU")]
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
    /// Instruction unit in bytes: 8, 16, 32 (AVX2) or 64 (AVX-512F); each 64-byte block is
    /// 64/unit instructions [default: 32, pmmeter's; 16 on a CPU without AVX2].
    #[arg(long)]
    pub unit: Option<usize>,
    /// Pattern: seq, rand (lines in a precomputed random order) or both.
    #[arg(long, default_value = "both")]
    pub pattern: String,
    /// Region streamed over (split between threads), or auto: 4x the last-level cache, at
    /// least 1GiB, capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub region: AutoSize,
    /// Threads, each on its own part of the region.
    #[arg(long, default_value = "1")]
    pub threads: Count,
    /// Repetitions per option (one more is run first and dropped) [default: 3; 7 with --full].
    #[arg(long)]
    pub reps: Option<Count>,
    /// Seconds each thread streams per repetition [default: 0.2; 1 with --full].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<Seconds>,
    /// CPUs to pin the threads to (default: the allowed CPUs in order).
    #[arg(long)]
    pub cpus: Option<Cpus>,
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

/// `pmscope bandwidth`.
#[derive(Debug, Args)]
pub struct BandwidthArgs {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    // The op list comes from loops::stream::STREAM_OPS.
    #[arg(long, help = bandwidth_ops_help())]
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
    pub cpus: Option<Cpus>,
    /// All threads stream over one shared region instead of one region each.
    #[arg(long)]
    pub shared: bool,
    /// Memory per thread (the whole region with --shared), or auto: 4x the last-level cache
    /// (over the threads of the smallest --threads point), at least 512MiB, capped by
    /// available memory (shared among the threads) and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub region: AutoSize,
    /// Seconds each thread streams per repetition [default: 0.15; 1 with --full].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<Seconds>,
    /// Repetitions per point (one more is run first and dropped) [default: 3; 5 with --full].
    #[arg(long)]
    pub reps: Option<Count>,
    /// Vector width in bytes: 64 (AVX-512F), 32 (AVX2) or 16 (SSE2). Default: the widest
    /// the CPU has.
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
    #[arg(long, default_value = "chase", help = probe_help())]
    pub probe: String,
    /// Delays injected after every traffic access, in ns (sweep axis; an idle point with no
    /// traffic is always measured first).
    #[arg(
        long,
        default_value = "0,25,50,100,200,400,800,1600,3200,6400,12800,25600"
    )]
    pub delays: String,
    /// The traffic's read:write ratio (1:0 reads only, 2:1, 1:1, 0:1 writes only) [default:
    /// 1:0; 0:1 with a writing --traffic-op].
    #[arg(long)]
    pub rw: Option<String>,
    // The op list comes from loops::stream::STREAM_OPS.
    #[arg(long, value_name = "OP", help = traffic_op_help())]
    pub traffic_op: Option<String>,
    /// The order the traffic visits its region: seq, or rand (a random permutation of every
    /// access-sized block, each once per pass, so the whole region is covered).
    #[arg(long, default_value = "seq", value_name = "PATTERN")]
    pub traffic_pattern: String,
    /// Bytes per traffic access.
    #[arg(long, default_value = "1KiB", value_name = "SIZE")]
    pub traffic_access: Size,
    /// Region each traffic thread streams over, or auto: together the traffic threads cover
    /// 4x the last-level cache, each at least 256MiB, capped by available memory and
    /// --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub traffic_region: AutoSize,
    /// Region of the probe (the chain's working set), or auto: 4x the last-level cache, at
    /// least 1GiB, capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub probe_region: AutoSize,
    /// Individually timed probe operations per point [default: 50000; 200000 with --full].
    #[arg(long)]
    pub samples: Option<Count>,
    /// CPUs: the first measures, the others generate traffic (default: all allowed).
    #[arg(long)]
    pub cpus: Option<Cpus>,
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
        after_help = "The genomes default to the S. aureus references of Debian's ragout-examples (the demo's in-group); each table counts their k-mers once, on the same target.\n\nEXAMPLES:\n  pmscope kmer bench -t shm:4k --threads 2 genomes/*.fa.gz\n  pmscope kmer bench -t file:/mnt/pmem -k 100 genomes/*.fa.gz"
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
