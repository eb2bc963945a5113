//! The words records are made of: every experiment name, every parameter and value key,
//! every metric, and the enums whose values records carry (`Pattern`). Commands, the store
//! and the report all name things through this table, and `docs/results-schema.md` is
//! generated from it ([`schema_markdown`]; a test fails when the doc differs), so a key
//! cannot be spelled two ways or drift out of the documentation.
//!
//! [`check_record`] holds a record to its experiment's declaration: the CLI's
//! null-executor tests run every command to completion and check every record with it.

pub use crate::key::{Key, ParamKey, ValueKey};
use crate::record::Record;
use serde::{Deserialize, Serialize};

/// An address pattern, as every command and record spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Consecutive addresses.
    Seq,
    /// Random addresses (a random cycle or permutation over the region).
    Rand,
    /// Random within each 4 KiB page, the pages in sequence.
    RandomInPage,
}

impl Pattern {
    /// The spelling in records and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Pattern::Seq => "seq",
            Pattern::Rand => "rand",
            Pattern::RandomInPage => "random-in-page",
        }
    }

    /// `true` for [`Pattern::Rand`]: the commands that take `seq|rand|both`.
    pub fn from_random(random: bool) -> Pattern {
        if random { Pattern::Rand } else { Pattern::Seq }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One experiment: its name, what one record of it is, its metric and its keys.
#[derive(Debug, Clone, Copy)]
pub struct ExperimentDoc {
    /// The `experiment` field.
    pub name: &'static str,
    /// What one record is.
    pub doc: &'static str,
    /// The `metric` field (absent for records that summarise nothing).
    pub metric: Option<&'static str>,
    /// Keys of `params`.
    pub params: &'static [&'static str],
    /// Keys of `values`.
    pub values: &'static [&'static str],
}

/// Declares each key once: a typed constant in module `$module` and a row of `$table`
/// (the documentation's order).
macro_rules! keys {
    ($kind:ident in $module:ident, $table:ident: $($id:ident = $name:literal => $doc:literal,)*) => {
        #[doc = concat!("The `", stringify!($table), "` keys as typed constants.")]
        pub mod $module {
            use super::{Key, $kind};
            $(
                #[doc = $doc]
                pub const $id: $kind = $kind(Key { name: $name, doc: $doc });
            )*
        }
        #[doc = concat!("Every `", stringify!($table), "` key, in the order the doc lists them.")]
        pub const $table: &[Key] = &[$($module::$id.0,)*];
    };
}

keys! {
    ParamKey in p, PARAMS:
    ACCESS_BYTES = "access_bytes" => "bytes per access (one block of a stream, one timed access)",
    CPU_NODE = "cpu_node" => "the NUMA node whose CPUs ran the workers",
    BLOCK_BYTES = "block_bytes" => "bytes per block of a sync stream (64)",
    CHAINS = "chains" => "stretches of one chain chased side by side (block access: that many independent loads in flight)",
    DELAY_NS = "delay_ns" => "busy wait after every traffic access (MLC's injected delay); 0 = flat out",
    DURATION_S = "duration_s" => "seconds per repetition",
    ELEMENT_BYTES = "element_bytes" => "bytes per chain element (the stride of sequential chains)",
    DIRECTORY = "directory" => "the directory a command wrote into",
    EXECUTOR = "executor" => "`null` when the samples are synthetic (a test run that measured nothing)",
    FENCE = "fence" => "`none`, `sfence` or `mfence` after each access",
    FLUSH_COUNT = "flush_count" => "where a table's flushes and fences were counted: `persister` (pmscope issues them), `none issued` (volatile) or `not counted (inside libpmemobj)`",
    PERSIST_MEANS = "persist_means" => "how a table's stores reach persistence: static-pm's --persist strategy, or for tx-pm libpmem's choice (CPU flushes on DAX or with PMEM_IS_PMEM_FORCE=1, msync elsewhere)",
    FLUSHED_BEFORE = "flushed_before" => "whether each loaded line was flushed just before (so memory, not a cache, answers)",
    GENOME_FILES = "genome_files" => "the genome files, in the order given",
    GENOME_COUNT_HISTOGRAM = "genome_count_histogram" => "k-mers by the number of in-group genomes holding them",
    GENOMES_INSERTED = "genomes_inserted" => "genomes inserted into the table",
    GENOMES_SUBTRACTED = "genomes_subtracted" => "out-group genomes looked up",
    DISTANCE_LINES = "distance_lines" => "lines between a persist and the load that reads it back",
    DECOUPLED = "decoupled" => "whether the walk's addresses come from a DRAM array (only the dereference reads the target)",
    K = "k" => "k-mer length",
    KERNEL = "kernel" => "the PolyBench kernel (`pmscope poly`, seed 000 Table 1)",
    DATA_BYTES = "data_bytes" => "bytes of the kernel's arrays, all on the target",
    PERF_COUNTERS = "perf_counters" => "`available`, or `unavailable: ` and why (dTLB and LLC misses are then absent, never estimated)",
    PRESET = "preset" => "the dataset preset: `mini`, `small`, `medium`, `large` or `seed` (poly); `seed-1`, `seed-2` or `seed-3` (kmer-synth: a pangenome shaped like seed 003's Table 6 dataset)",
    PRESET_SCALE = "preset_scale" => "the fraction of the preset's genomes written (kmer-synth --scale)",
    CORE_BASES = "core_bases" => "bases of a synthetic pangenome's core genome",
    ACCESSORY_GENES = "accessory_genes" => "accessory genes in a synthetic pangenome's pool (1 kbp each, each carried by a genome with probability carriage)",
    CARRIAGE = "carriage" => "probability that a synthetic genome carries a gene of the accessory pool",
    PROBLEM_SIZE = "problem_size" => "the kernel's size parameter n at the preset",
    VARIANT = "variant" => "`ref` (textbook loop order) or `opt` (locality-optimised: interchanged, tiled)",
    KNEE_FOUND = "knee_found" => "whether the curve has a knee (a rise above 25 % between neighbouring working sets)",
    LINES = "lines" => "cache lines of each 256-byte XPLine accessed (1..4)",
    MEMORY_NODE = "memory_node" => "the NUMA node the memory was bound to (the target's verified placement says where it really is)",
    MODE = "mode" => "read-only, write-only or interleaved",
    BEST_THREADS = "best_threads" => "the thread count whose median bandwidth was highest at this op, pattern and access size (seed 004 Figure 11)",
    BEST_CLEAR = "best_clear" => "whether the best thread count's 95 % interval lies wholly above the runner-up's (false: the two are within the noise)",
    RUNNER_UP_THREADS = "runner_up_threads" => "the thread count with the next highest median bandwidth",
    THREADS_TRIED = "threads_tried" => "the thread counts measured at this op, pattern and access size",
    MIX = "mix" => "the threads' roles, e.g. `1R+1W`, `2:1` (empty: every thread runs `op`)",
    MIXER = "mixer" => "whether chain pointers are spread over the element offsets",
    OP = "op" => "the operation (see `pmscope list ops`)",
    OPERATION = "operation" => "the k-mer job: `primers`, `count`, `union`, `intersect`, `subtract`",
    OPTION = "option" => "pmmeter's name of the synchronisation option",
    PARTITION = "partition" => "`none` (one k-mer table) or `nodes` (one sub-table per NUMA node with CPUs)",
    NODES_WITHOUT_CPUS = "nodes_without_cpus" => "NUMA nodes with memory but no usable CPU: given no sub-table",
    PATTERN = "pattern" => "`seq`, `rand` or `random-in-page`",
    PERSIST = "persist" => "the persist strategy actually used (without --persist: clwb, else clflushopt, else clflush, the first this CPU has)",
    PERSIST_DEFAULT = "persist_default" => "whether the persist strategy was the default's choice for this CPU (no --persist) rather than named",
    PERSIST_INSTRUCTIONS = "persist_instructions" => "the instructions the persist strategy executed: `clflush`, `clflushopt+sfence`, `clwb+sfence`, `movntdq (16-byte)+sfence, clflush for partial lines`, `none`, `msync`",
    PROBE = "probe" => "what the loaded-latency probe does, or which buffer probe ran",
    PROBE_REGION_BYTES = "probe_region_bytes" => "bytes the probe chain covers",
    PROGRAM = "program" => "the program `pmscope run` ran, with its arguments",
    REGION_BYTES = "region_bytes" => "bytes mapped and used",
    REGION_PER_THREAD_BYTES = "region_per_thread_bytes" => "bytes each thread streams over",
    SAMPLES = "samples" => "individually timed accesses",
    POOL = "pool" => "the pool file of a persistent table",
    SEED = "seed" => "random seed",
    SHARED = "shared" => "whether all threads stream over one shared region",
    SIZE_BYTES = "size_bytes" => "bytes mapped",
    SIZE_SOURCE = "size_source" => "how the working set or region of the record was chosen: `auto` (the option was left at its default, sized to the machine: 4x the last-level cache, at least the command's old fixed default, capped by available memory and --max-mem; a `size-capped` warning says when the cap applied) or `explicit` (given on the command line)",
    SIZE_WHY = "size_why" => "why an `auto` size is what it is, in words (`4x the 480.0 MiB last-level cache`, `capped by --max-mem 256.0 MiB`); absent for an explicit size",
    SUB_TABLES = "sub_tables" => "per sub-table of `--partition nodes`: node (of its workers), worker CPUs, k-mers inserted, distinct k-mers, slots, bytes, target, the node its memory was asked on (`memory_node`, null for a file or device target), pages by node (move_pages), the node holding most of them (`achieved_node`) and the fraction on the asked node",
    TABLE = "table" => "the k-mer table kind (`binned` for --method binned: one L2-sized table per worker)",
    METHOD = "method" => "how a k-mer job counted: `table` (one table for every k-mer, on the target) or `binned` (minimizer bins, each counted in an L2-sized table on the target)",
    MINIMIZER_BASES = "minimizer_bases" => "bases of the m-mers whose smallest hash bins a k-mer (--method binned)",
    TABLE_FENCE = "table_fence" => "when static-pm fences the slots it wrote: `per-group` (one fence per group of up to 256 written slots, pmscope's default) or `per-slot` (a flush and a fence after each written slot, the seed's Static-HT)",
    TARGETS = "targets" => "the targets compared, with their verified page size",
    THREADS = "threads" => "worker threads",
    THRESHOLD_BYTES = "threshold_bytes" => "allocations of at least this many bytes were placed on the target",
    TLB_WINDOW_PAGES = "tlb_window_pages" => "random order only within groups of this many 4 KiB pages (null: whole region)",
    TRAFFIC_ACCESS_BYTES = "traffic_access_bytes" => "bytes per traffic access",
    TRAFFIC_OP = "traffic_op" => "what the traffic writes with (`write`, `ntstore`, `store+clwb`, `copy`), or `read` for read-only traffic",
    TRAFFIC_PATTERN = "traffic_pattern" => "the order the traffic visits its region: `seq`, or `rand` (every block once per pass)",
    TRAFFIC_REGION_BYTES = "traffic_region_bytes" => "bytes each traffic thread streams over",
    TRAFFIC_RW = "traffic_rw" => "traffic reads:writes per round",
    TRAFFIC_SIZE_SOURCE = "traffic_size_source" => "`auto` or `explicit`, as `size_source`, for the traffic region",
    TRAFFIC_THREADS = "traffic_threads" => "threads generating traffic",
    SNP_RATE = "snp_rate" => "substitutions per base of a synthetic strain",
    INDEL_RATE = "indel_rate" => "insertions or deletions per base of a synthetic strain",
    STRAINS = "strains" => "synthetic strains derived from the reference",
    SOFTWARE_PREFETCH = "software_prefetch" => "whether a prefetcht0 of the next XPLine was issued at each visit",
    UNIT_BYTES = "unit_bytes" => "bytes per instruction of a sync stream (default 32, pmmeter's; 16 on a CPU without AVX2)",
    UNSUPPORTED = "unsupported" => "why the cell could not run on this CPU (no metric then)",
    VECTOR_BYTES = "vector_bytes" => "vector register width of the stream loops: 64 (AVX-512F), 32 (AVX2) or 16 (SSE2), the widest the CPU has unless --width names one (bandwidth: ntcopy-pages 32 where AVX2 is, glibc's width for that loop)",
    WRITE = "write" => "the write made at each visit: store+clwb, store+clflushopt, store+clflush or ntstore (by default store+clwb, else the best flush this CPU has)",
    WIDTH_BYTES = "width_bytes" => "bytes per instruction of an access",
    WORKING_SET_BYTES = "working_set_bytes" => "bytes the chain covers",
    AOF_DIRECTORY = "aof_directory" => "the directory redis kept its append-only file in (fsync after every write), made inside `directory`, whose file system the fs keys describe",
    CLIENT_THREADS = "client_threads" => "threads of the load generator (memaslap -T, redis-benchmark --threads; 1: its single event loop)",
    SERVER_CPUS = "server_cpus" => "the CPUs the server was allowed to run on, as the kernel reported them (Cpus_allowed_list of its /proc status)",
    CLIENT_CPUS = "client_cpus" => "the CPUs the load generator was allowed to run on (the affinity it was started with)",
    CPUS_DISJOINT = "cpus_disjoint" => "whether the server's and the client's CPUs share none",
    STORE_BYTES = "store_bytes" => "the store size asked for (--store-sizes): the server's memory limit and the client's key space times the item size; null: --memory alone, key space the client's default",
    MEMORY_LIMIT_BYTES = "memory_limit_bytes" => "the server's memory limit (memcached -m, redis maxmemory)",
    KEY_SPACE = "key_space" => "distinct keys the client draws from (memaslap window x concurrency, redis-benchmark -r)",
    CLIENTS = "clients" => "concurrent client connections of the load generator",
    KEY_BYTES = "key_bytes" => "bytes per key",
    PERCENTILES_BUCKETED = "percentiles_bucketed" => "whether p50/p99 are the upper bounds of power-of-two buckets (memaslap) rather than exact",
    PLACEMENT = "placement" => "pmscope run's report of where the server's large allocations landed: its params and values",
    REQUESTS = "requests" => "requests per client run (redis-benchmark -n)",
    SERVER = "server" => "the key-value server (`memcached`, `redis`)",
    SET_FRACTION = "set_fraction" => "fraction of SET operations in the mix",
    TARGET = "target" => "the target spec the server's heap was placed on",
    VALUE_BYTES = "value_bytes" => "bytes per value",
    WORKLOAD = "workload" => "the load: memcached `get-heavy` (10 % SET) or `set-heavy` (50 % SET); redis `set`, `get` or `mset` (ten pairs)",
    FILE_OP = "file_op" => "the file operation: `create`, `append-4k`, `overwrite-4k`, `overwrite-512`, `read-4k` (open, the I/O, fsync if asked, close)",
    FSYNC = "fsync" => "whether each operation (each write, for fio) is followed by fsync",
    IO_BYTES = "io_bytes" => "bytes per read or write call",
    FS_TYPE = "fs_type" => "the file system of the directory (from /proc/self/mountinfo)",
    MOUNT_POINT = "mount_point" => "where that file system is mounted",
    MOUNT_OPTIONS = "mount_options" => "its mount and super-block options (dax=, data=...)",
    DEVICE = "device" => "its mount source (`/dev/pmem0`) and device number (`259:0`)",
    DAX = "dax" => "the DAX mode the mount options ask for (`always`, `never`, `inode`; null: not given); the target's persistence says whether MAP_SYNC was granted",
    INODE_DAX = "inode_dax" => "whether statx marks the measured file's inode (redis: its append-only file's) DAX (STATX_ATTR_DAX: its reads and writes bypass the page cache); null: the kernel cannot say",
    JOURNAL = "journal" => "ext4's data journaling mode (`ordered`, `journal`, `writeback`; null: not given)",
    JOBS = "jobs" => "fio jobs (processes), each on its own file",
    RW = "rw" => "fio's workload: `read`, `randread`, `write` or `randwrite`",
    FILE_BYTES = "file_bytes" => "bytes of each job's file",
    IOENGINE = "ioengine" => "fio's I/O engine",
    FIO_VERSION = "fio_version" => "the fio that ran, as it reports itself",
}

/// Params that say how a parameter was chosen, not what was measured (`size_source`): a
/// point measured at a size given explicitly and one the default chose are the same point,
/// so comparisons leave these out.
pub const PROVENANCE_PARAMS: &[&str] = &["size_source", "traffic_size_source"];

keys! {
    ValueKey in v, VALUES:
    BEST_GB_S = "best_gb_s" => "the median bandwidth of the best thread count",
    RUNNER_UP_GB_S = "runner_up_gb_s" => "the median bandwidth of the runner-up thread count",
    STORED_BYTES = "stored_bytes" => "bytes the server held at the end of the point (memcached `bytes`, redis `used_memory`)",
    STORED_ITEMS = "stored_items" => "items the server held at the end of the point (memcached `curr_items`, redis keys of db0)",
    EVICTIONS = "evictions" => "items the server evicted to stay within its memory limit during the point (memcached `evictions`, redis `evicted_keys`)",
    SERVER_RSS_BYTES = "server_rss_bytes" => "the server's resident memory at the end of the point (VmRSS)",
    SERVER_SWAP_BYTES = "server_swap_bytes" => "the server's memory swapped out at the end of the point (VmSwap)",
    BASES = "bases" => "bases of the genomes read (of the reference, for kmer-synth; of all genomes written, for a kmer-synth preset)",
    DISTINCT_KMERS_MODEL = "distinct_kmers_model" => "distinct 100-mers a kmer-synth preset's model predicts, to first order (core, pool and 100 per SNP)",
    CANDIDATES_KMERS = "candidates_kmers" => "primer candidates: in every in-group genome, in no out-group genome",
    CLEARED_INSERTS = "cleared_inserts" => "inserts a crash cut short, cleared by recovery",
    DIFFERENCE_KMERS = "difference_kmers" => "k-mers of the genomes that no --minus genome has",
    GENOME_COUNTS = "genome_counts" => "genome counts held by a pool's k-mers",
    GENOMES_COMPLETED = "genomes_completed" => "genomes a pool holds completely",
    GENOMES_WRITTEN = "genomes_written" => "genome files written",
    INTERSECTION_KMERS = "intersection_kmers" => "k-mers in every in-group genome",
    SKIPPED_KMERS = "skipped_kmers" => "k-mers skipped for an N or another IUPAC code",
    UNION_KMERS = "union_kmers" => "distinct k-mers of the in-group genomes",
    VALID_KMERS = "valid_kmers" => "k-mers a pool holds",
    FENCES_PER_INSERT = "fences_per_insert" => "fences a persistent table issued per insert",
    FLUSHES_PER_INSERT = "flushes_per_insert" => "cache-line flushes a persistent table issued per insert",
    MIPS_VS_VOLATILE = "mips_vs_volatile" => "insert rate relative to the volatile table on the same target and genomes",
    TABLE_BUCKETS = "table_buckets" => "buckets of a chained (tx-pm) table",
    AFTER_NS = "after_ns" => "the highest median after the knee",
    BEFORE_NS = "before_ns" => "the median on the plateau before the knee",
    BYTES_PER_FAULT = "bytes_per_fault" => "mapped bytes per pre-fault minor fault",
    CHECKSUM = "checksum" => "position-weighted sum of the kernel's output arrays (the same for both variants)",
    DTLB_LOAD_MISSES = "dtlb_load_misses" => "data-TLB read misses of one timed run (median), from perf_event",
    LLC_LOAD_MISSES = "llc_load_misses" => "last-level cache read misses of one timed run (median), from perf_event",
    CV = "cv" => "coefficient of variation of the repetitions",
    STEAL_PCT = "steal_pct" => "time the hypervisor stole from the workers' CPUs while the point was measured, % of its wall time (any measured point; absent where /proc/stat does not say or the point took under 200 ms, 20 of its 10 ms ticks)",
    CPU_SHARE = "cpu_share" => "CPU time the process got while the point was measured / (wall time x busy threads): below 1 when other work shared the CPUs (any measured point whose workers never wait by design)",
    LOAD_AVG = "load_avg" => "1-minute load average when the point was measured (any measured point)",
    OTHER_CPU_PCT = "other_cpu_pct" => "CPU time other processes ran on the machine while the point was measured, % of its wall time (100: one CPU's worth of other work throughout; any measured point of at least 200 ms where /proc/stat says)",
    ESTIMATED_DISTINCT_KMERS = "estimated_distinct_kmers" => "HyperLogLog estimate used to size the table",
    ESTIMATE_CPU_MS = "estimate_cpu_ms" => "CPU time of the estimate phase",
    ESTIMATE_MS = "estimate_ms" => "wall time of the estimate phase",
    GROW_MS = "grow_ms" => "wall time the table spent growing between genomes (part of insert_ms)",
    INSERT_CPU_MS = "insert_cpu_ms" => "CPU time of the insert phase",
    HMAT_READ_LATENCY_NS = "hmat_read_latency_ns" => "read latency the firmware declares for the memory node from its nearest initiators (ACPI HMAT, sysfs access0)",
    HMAT_READ_BANDWIDTH_MB_S = "hmat_read_bandwidth_mb_s" => "read bandwidth in MB/s the firmware declares for the memory node from its nearest initiators (ACPI HMAT, sysfs access0)",
    INSERT_MIPS = "insert_mips" => "million inserts per second",
    INSERT_MIPS_WITH_GROWTH = "insert_mips_with_growth" => "million inserts per second, the time the table spent growing included",
    INSERT_MS = "insert_ms" => "wall time of the insert phase",
    INSERTS = "inserts" => "k-mers inserted",
    KNEE_BYTES = "knee_bytes" => "the last working set of the plateau: the buffer size as the sweep resolves it",
    LOOKUP_HITS = "lookup_hits" => "lookups that found their k-mer",
    LOOKUPS = "lookups" => "k-mers looked up",
    MAP_CPU_MS = "map_cpu_ms" => "CPU time of mapping the table",
    MAP_MS = "map_ms" => "wall time of mapping the table",
    MEAN_LATENCY_NS = "mean_latency_ns" => "mean probe latency",
    MILLION_INSTRUCTIONS_PER_S = "million_instructions_per_s" => "instructions per second, in millions",
    MINOR_FAULTS = "minor_faults" => "minor faults of the pre-fault pass",
    OUTPUT_CPU_MS = "output_cpu_ms" => "CPU time of writing the output",
    OUTPUT_MS = "output_ms" => "wall time of writing the output",
    PARSE_CPU_MS = "parse_cpu_ms" => "CPU time of reading the genomes",
    PARSE_MS = "parse_ms" => "wall time of reading the genomes",
    PEAK_RSS_BYTES = "peak_rss_bytes" => "peak resident set size of the process",
    PERSIST_FENCES = "persist_fences" => "fences a persistent table issued (header and genome bookkeeping included)",
    PERSIST_FLUSHES = "persist_flushes" => "cache-line write-backs a persistent table issued (header and genome bookkeeping included)",
    PREFAULT_MS = "prefault_ms" => "wall time of the pre-fault pass",
    READ_GB_S = "read_gb_s" => "read bandwidth (median)",
    RESULT_KMERS = "result_kmers" => "k-mers in the result",
    SETOPS_CPU_MS = "setops_cpu_ms" => "CPU time of the set operation",
    SETOPS_MS = "setops_ms" => "wall time of the set operation",
    SLOT_BYTES = "slot_bytes" => "bytes per table slot",
    TABLE_BYTES = "table_bytes" => "bytes of the table",
    TABLE_GROWN = "table_grown" => "times the table grew (--method binned: times a bin's table doubled)",
    BINS = "bins" => "minimizer bins (--method binned)",
    SUPER_KMERS = "super_kmers" => "super-k-mers over all bins: runs of consecutive k-mers whose minimizers share a bin (--method binned)",
    BIN_PARTITIONS = "bin_partitions" => "partitions of the bins counted one at a time out of core (--method binned; 0: the bins were in memory)",
    SCRATCH_BYTES = "scratch_bytes" => "bytes of bins written to the scratch file out of core (--method binned)",
    LARGEST_BIN_KMERS = "largest_bin_kmers" => "k-mers (with repeats) of the largest bin, which sizes each worker's table (--method binned)",
    SPLIT_MS = "split_ms" => "wall time of splitting the genomes into super-k-mers by bin (--method binned)",
    SPLIT_CPU_MS = "split_cpu_ms" => "CPU time of the split (--method binned)",
    TABLE_LOAD_FACTOR = "table_load_factor" => "occupied slots / slots",
    TABLE_SLOTS = "table_slots" => "slots of the table",
    TIMER_OVERHEAD_NS = "timer_overhead_ns" => "cost of an empty timed bracket, subtracted from each timing",
    TOTAL_CPU_MS = "total_cpu_ms" => "CPU time of the whole job",
    TOTAL_MS = "total_ms" => "wall time of the whole job",
    TRAFFIC_GB_S = "traffic_gb_s" => "bandwidth the traffic threads achieved",
    WRITE_GB_S = "write_gb_s" => "write bandwidth (median)",
    MEAN_US = "mean_us" => "mean latency of a client request, µs",
    P50_US = "p50_us" => "median latency of a client request, µs",
    P99_US = "p99_us" => "99th-percentile latency of a client request, µs",
    MAX_US = "max_us" => "largest latency of a client request, µs",
    EXIT_CODE = "exit_code" => "the program's exit status as a shell gives it (128 + N: killed by signal N)",
    PROCESSES = "processes" => "processes under the program that reported their placement",
    SERVED_ALLOCATIONS = "served_allocations" => "allocations placed on the target (malloc family and private anonymous mmap)",
    SERVED_BYTES = "served_bytes" => "bytes those allocations asked for",
    MAPPED_BYTES = "mapped_bytes" => "bytes mapped on the target for them (rounded to its page granule)",
    PEAK_MAPPED_BYTES = "peak_mapped_bytes" => "most bytes mapped on the target at once (summed over processes)",
    MMAP_SERVED_ALLOCATIONS = "mmap_served_allocations" => "of the served allocations, the program's own mmap calls",
    REFUSED_ALLOCATIONS = "refused_allocations" => "allocations the target refused (left to ordinary memory)",
    REFUSED_BYTES = "refused_bytes" => "bytes of the refused allocations",
    BELOW_THRESHOLD_ALLOCATIONS = "below_threshold_allocations" => "allocations below the threshold, left alone",
    BELOW_THRESHOLD_BYTES = "below_threshold_bytes" => "bytes of the allocations below the threshold",
    VERIFIED_REGIONS = "verified_regions" => "served regions whose pages were read back from smaps and numa_maps",
    RESIDENT_BYTES = "resident_bytes" => "resident bytes of the regions read back",
    BYTES_ON_4K = "bytes_on_4k" => "resident served bytes on 4 KiB pages",
    BYTES_ON_2M = "bytes_on_2m" => "resident served bytes on 2 MiB pages",
    BYTES_ON_1G = "bytes_on_1g" => "resident served bytes on 1 GiB pages",
    VERIFIED_PAGE_BYTES = "verified_page_bytes" => "the page size holding most resident served bytes",
    IOPS = "iops" => "I/O operations per second, all jobs together",
    LAT_MEAN_NS = "lat_mean_ns" => "mean completion latency of one read or write call",
    LAT_P50_NS = "lat_p50_ns" => "median completion latency (fio's clat percentile)",
    LAT_P99_NS = "lat_p99_ns" => "99th percentile completion latency",
    LAT_P999_NS = "lat_p999_ns" => "99.9th percentile completion latency",
}

/// Every experiment.
pub const EXPERIMENTS: &[ExperimentDoc] = &[
    ExperimentDoc {
        name: "app-kv",
        doc: "one workload and value size of a key-value server on a target, as its own client measured it",
        metric: Some("throughput_ops_s"),
        params: &[
            "server",
            "target",
            "workload",
            "value_bytes",
            "key_bytes",
            "set_fraction",
            "clients",
            "client_threads",
            "server_cpus",
            "client_cpus",
            "cpus_disjoint",
            "store_bytes",
            "memory_limit_bytes",
            "key_space",
            "duration_s",
            "requests",
            "percentiles_bucketed",
            "aof_directory",
            "directory",
            "fs_type",
            "mount_point",
            "mount_options",
            "device",
            "dax",
            "journal",
            "inode_dax",
        ],
        values: &[
            "mean_us",
            "p50_us",
            "p99_us",
            "max_us",
            "stored_bytes",
            "stored_items",
            "evictions",
            "server_rss_bytes",
            "server_swap_bytes",
        ],
    },
    ExperimentDoc {
        name: "app-placement",
        doc: "where a key-value server's heap landed on a target (pmscope run's verified report)",
        metric: None,
        params: &["server", "target", "placement"],
        values: &[],
    },
    ExperimentDoc {
        name: "verify",
        doc: "one target mapped, pre-faulted and verified",
        metric: None,
        params: &["size_bytes"],
        values: &["prefault_ms", "minor_faults", "bytes_per_fault"],
    },
    ExperimentDoc {
        name: "quick",
        doc: "a first figure of `pmscope quick`: random-chain latency or sequential read bandwidth",
        metric: Some("latency_ns | bandwidth_gb_s"),
        params: &[
            "pattern",
            "working_set_bytes",
            "op",
            "threads",
            "size_source",
            "size_why",
        ],
        values: &[],
    },
    ExperimentDoc {
        name: "latency",
        doc: "ns per dependent load of a chain over one working set (median of repetitions)",
        metric: Some("latency_ns"),
        params: &[
            "pattern",
            "element_bytes",
            "working_set_bytes",
            "tlb_window_pages",
            "mixer",
            "seed",
            "size_source",
        ],
        values: &["cv"],
    },
    ExperimentDoc {
        name: "latency-distribution",
        doc: "individually timed loads of the chain at the largest working set, with a histogram",
        metric: Some("latency_ns"),
        params: &[
            "pattern",
            "element_bytes",
            "working_set_bytes",
            "samples",
            "size_source",
        ],
        values: &[],
    },
    ExperimentDoc {
        name: "latency-mlp",
        doc: "ns per load with several stretches of the chain chased side by side at the largest working set (block access, memory-level parallelism)",
        metric: Some("latency_ns"),
        params: &[
            "pattern",
            "element_bytes",
            "working_set_bytes",
            "chains",
            "size_source",
        ],
        values: &["cv"],
    },
    ExperimentDoc {
        name: "inst",
        doc: "one cell of the instruction table: individually timed accesses of op + fence",
        metric: Some("latency_ns"),
        params: &[
            "op",
            "fence",
            "access_bytes",
            "pattern",
            "width_bytes",
            "flushed_before",
            "region_bytes",
            "size_source",
            "unsupported",
        ],
        values: &["timer_overhead_ns"],
    },
    ExperimentDoc {
        name: "sync",
        doc: "throughput of 64-byte block streams under one synchronisation option (pmmeter)",
        metric: Some("bandwidth_gb_s"),
        params: &[
            "option",
            "op",
            "fence",
            "unit_bytes",
            "block_bytes",
            "pattern",
            "threads",
            "region_bytes",
            "size_source",
            "unsupported",
        ],
        values: &["million_instructions_per_s"],
    },
    ExperimentDoc {
        name: "rap-idle",
        doc: "load latency of flushed lines far from any recent persist (the baseline of `rap`)",
        metric: Some("latency_ns"),
        params: &[
            "persist",
            "persist_default",
            "persist_instructions",
            "region_bytes",
            "size_source",
            "samples",
        ],
        values: &[],
    },
    ExperimentDoc {
        name: "rap",
        doc: "load latency of a line persisted `distance_lines` lines earlier",
        metric: Some("latency_ns"),
        params: &[
            "persist",
            "persist_default",
            "persist_instructions",
            "region_bytes",
            "size_source",
            "samples",
            "distance_lines",
        ],
        values: &[],
    },
    ExperimentDoc {
        name: "bandwidth",
        doc: "bandwidth of one op × pattern × access size × threads point (median of repetitions)",
        metric: Some("bandwidth_gb_s"),
        params: &[
            "op",
            "pattern",
            "access_bytes",
            "threads",
            "shared",
            "vector_bytes",
            "region_per_thread_bytes",
            "size_source",
            "duration_s",
            "mix",
        ],
        values: &["read_gb_s", "write_gb_s"],
    },
    ExperimentDoc {
        name: "bandwidth-best",
        doc: "the best thread count of one op × pattern × access size, over the --threads measured (seed 004 Figure 11)",
        metric: None,
        params: &[
            "op",
            "pattern",
            "access_bytes",
            "best_threads",
            "runner_up_threads",
            "best_clear",
            "threads_tried",
            "shared",
        ],
        values: &["best_gb_s", "runner_up_gb_s"],
    },
    ExperimentDoc {
        name: "loaded",
        doc: "probe latency at one traffic delay (MLC's loaded latency)",
        metric: Some("latency_ns"),
        params: &[
            "probe",
            "delay_ns",
            "traffic_threads",
            "traffic_rw",
            "traffic_op",
            "traffic_pattern",
            "traffic_access_bytes",
            "probe_region_bytes",
            "size_source",
            "traffic_region_bytes",
            "traffic_size_source",
            "samples",
        ],
        values: &["traffic_gb_s", "mean_latency_ns"],
    },
    ExperimentDoc {
        name: "numa-latency",
        doc: "idle latency of a random chain from a CPU of one node over memory bound to another (MLC's matrix)",
        metric: Some("latency_ns"),
        params: &[
            "cpu_node",
            "memory_node",
            "pattern",
            "working_set_bytes",
            "size_source",
        ],
        values: &["hmat_read_latency_ns"],
    },
    ExperimentDoc {
        name: "numa-bandwidth",
        doc: "sequential read bandwidth of all CPUs of one node over memory bound to another",
        metric: Some("bandwidth_gb_s"),
        params: &[
            "cpu_node",
            "memory_node",
            "op",
            "threads",
            "access_bytes",
            "working_set_bytes",
            "size_source",
        ],
        values: &["hmat_read_bandwidth_mb_s"],
    },
    ExperimentDoc {
        name: "probe",
        doc: "one working set of a buffer probe (seed 001): median ns per visit of one variant",
        metric: Some("latency_ns"),
        params: &[
            "probe",
            "working_set_bytes",
            "samples",
            "lines",
            "pattern",
            "mode",
            "software_prefetch",
            "write",
            "decoupled",
        ],
        values: &[],
    },
    ExperimentDoc {
        name: "probe-knee",
        doc: "the knee of one probe curve, or knee_found = false",
        metric: None,
        params: &[
            "probe",
            "knee_found",
            "lines",
            "pattern",
            "mode",
            "software_prefetch",
            "write",
            "decoupled",
        ],
        values: &["knee_bytes", "before_ns", "after_ns"],
    },
    ExperimentDoc {
        name: "run",
        doc: "one program run under `pmscope run`: where its large allocations went, at which verified page size",
        metric: None,
        params: &["program", "threshold_bytes"],
        values: &[
            "exit_code",
            "processes",
            "served_allocations",
            "served_bytes",
            "mapped_bytes",
            "peak_mapped_bytes",
            "mmap_served_allocations",
            "refused_allocations",
            "refused_bytes",
            "below_threshold_allocations",
            "below_threshold_bytes",
            "verified_regions",
            "resident_bytes",
            "bytes_on_4k",
            "bytes_on_2m",
            "bytes_on_1g",
            "verified_page_bytes",
        ],
    },
    ExperimentDoc {
        name: "kmer",
        doc: "one k-mer job: its phases, table and throughput",
        metric: Some("insert_mips"),
        params: &[
            "operation",
            "k",
            "threads",
            "table",
            "genomes_inserted",
            "genomes_subtracted",
            "genome_files",
            "genome_count_histogram",
            "partition",
            "sub_tables",
            "nodes_without_cpus",
            "persist",
            "persist_default",
            "persist_instructions",
            "table_fence",
            "method",
            "minimizer_bases",
        ],
        values: &[
            "bases",
            "skipped_kmers",
            "union_kmers",
            "intersection_kmers",
            "difference_kmers",
            "candidates_kmers",
            "inserts",
            "lookups",
            "lookup_hits",
            "estimated_distinct_kmers",
            "result_kmers",
            "parse_ms",
            "estimate_ms",
            "split_ms",
            "map_ms",
            "insert_ms",
            "setops_ms",
            "output_ms",
            "total_ms",
            "parse_cpu_ms",
            "estimate_cpu_ms",
            "split_cpu_ms",
            "map_cpu_ms",
            "insert_cpu_ms",
            "grow_ms",
            "setops_cpu_ms",
            "output_cpu_ms",
            "total_cpu_ms",
            "insert_mips",
            "table_bytes",
            "table_slots",
            "slot_bytes",
            "table_load_factor",
            "table_grown",
            "bins",
            "super_kmers",
            "largest_bin_kmers",
            "bin_partitions",
            "scratch_bytes",
            "peak_rss_bytes",
            "persist_flushes",
            "persist_fences",
            "flushes_per_insert",
            "fences_per_insert",
        ],
    },
    ExperimentDoc {
        name: "kmer-synth",
        doc: "one synthetic data set written by pmscope kmer synth",
        metric: None,
        params: &[
            "directory",
            "genome_files",
            "strains",
            "snp_rate",
            "indel_rate",
            "seed",
            "preset",
            "preset_scale",
            "core_bases",
            "accessory_genes",
            "carriage",
        ],
        values: &["bases", "genomes_written", "distinct_kmers_model"],
    },
    ExperimentDoc {
        name: "kmer-recover",
        doc: "one static-pm or tx-pm pool checked by pmscope kmer recover",
        metric: None,
        params: &["pool", "table", "k", "persist"],
        values: &[
            "table_slots",
            "table_buckets",
            "genomes_completed",
            "valid_kmers",
            "genome_counts",
            "cleared_inserts",
        ],
    },
    ExperimentDoc {
        name: "fs-op",
        doc: "individually timed file operations of one kind in a directory of a file system, with a histogram (seed 004 Figure 23)",
        metric: Some("latency_ns"),
        params: &[
            "file_op",
            "fsync",
            "io_bytes",
            "samples",
            "directory",
            "fs_type",
            "mount_point",
            "mount_options",
            "device",
            "dax",
            "journal",
            "inode_dax",
            "unsupported",
        ],
        values: &["timer_overhead_ns"],
    },
    ExperimentDoc {
        name: "fio",
        doc: "one run of the real fio in a directory: bandwidth of all jobs, IOPS and latency percentiles from its JSON (seed 004 Figure 24)",
        metric: Some("bandwidth_mb_s"),
        params: &[
            "rw",
            "pattern",
            "io_bytes",
            "jobs",
            "fsync",
            "file_bytes",
            "duration_s",
            "ioengine",
            "fio_version",
            "directory",
            "fs_type",
            "mount_point",
            "mount_options",
            "device",
            "dax",
            "journal",
        ],
        values: &[
            "iops",
            "lat_mean_ns",
            "lat_p50_ns",
            "lat_p99_ns",
            "lat_p999_ns",
        ],
    },
    ExperimentDoc {
        name: "poly",
        doc: "one PolyBench kernel in one variant on one target: its run time over the repetitions",
        metric: Some("time_s"),
        params: &[
            "kernel",
            "variant",
            "preset",
            "problem_size",
            "data_bytes",
            "perf_counters",
        ],
        values: &["checksum", "dtlb_load_misses", "llc_load_misses"],
    },
    ExperimentDoc {
        name: "kmer-bench",
        doc: "one table on one target of pmscope kmer bench (seed 003 Table 9, Fig. 18): its insert rate beside the volatile table's on the same target and genomes, and its flushes and fences per insert",
        metric: Some("insert_mips"),
        params: &[
            "k",
            "threads",
            "table",
            "persist",
            "persist_default",
            "persist_instructions",
            "flush_count",
            "persist_means",
            "table_fence",
            "genome_files",
        ],
        values: &[
            "bases",
            "inserts",
            "insert_ms",
            "insert_mips",
            "insert_mips_with_growth",
            "grow_ms",
            "table_grown",
            "table_load_factor",
            "mips_vs_volatile",
            "flushes_per_insert",
            "fences_per_insert",
            "union_kmers",
            "table_bytes",
        ],
    },
    ExperimentDoc {
        name: "comparison",
        doc: "the findings about the targets of one run taken together (e.g. mixed page sizes, seed 000); its warnings hold them",
        metric: None,
        params: &["targets"],
        values: &[],
    },
];

/// Values any measured point may carry, whatever its experiment: the state of the machine
/// while it was measured (`runner::repeat` records them), for the report's account of how
/// far a run can be trusted.
pub const CONDITION_VALUES: &[&str] = &["steal_pct", "cpu_share", "load_avg"];

/// The value key spelled `name`, for figures named at run time (a k-mer set's size).
pub fn value_key(name: &str) -> Option<ValueKey> {
    VALUES.iter().find(|k| k.name == name).map(|k| ValueKey(*k))
}

/// The declaration of `experiment`.
pub fn experiment(name: &str) -> Option<&'static ExperimentDoc> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}

/// Why `r` does not follow its experiment's declaration, if it does not.
pub fn check_record(r: &Record) -> Result<(), String> {
    let e = experiment(&r.experiment)
        .ok_or_else(|| format!("experiment '{}' is not in the vocabulary", r.experiment))?;
    for k in r.params.keys() {
        if k != "executor" && !e.params.contains(&k.as_str()) {
            return Err(format!("{}: param '{k}' is not declared", e.name));
        }
    }
    for k in r.values.keys() {
        if !e.values.contains(&k.as_str()) && !CONDITION_VALUES.contains(&k.as_str()) {
            return Err(format!("{}: value '{k}' is not declared", e.name));
        }
    }
    match (&r.metric, e.metric) {
        (None, _) => {}
        (Some(m), Some(declared)) if declared.split(" | ").any(|d| d == m) => {}
        (Some(m), _) => return Err(format!("{}: metric '{m}' is not declared", e.name)),
    }
    if let Some(p) = r.get(p::PATTERN) {
        let ok = [Pattern::Seq, Pattern::Rand, Pattern::RandomInPage]
            .iter()
            .any(|x| p.as_str() == Some(x.name()));
        if !ok {
            return Err(format!("{}: pattern {p} is not a Pattern", e.name));
        }
    }
    Ok(())
}

/// The generated part of `docs/results-schema.md`: experiments, then every key.
pub fn schema_markdown() -> String {
    let mut s = String::new();
    s.push_str(
        "| experiment | one record is | metric | params | values |\n|---|---|---|---|---|\n",
    );
    let ticks = |v: &[&str]| {
        v.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for e in EXPERIMENTS {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            e.name,
            e.doc,
            e.metric
                .map(|m| format!("`{m}`"))
                .unwrap_or_else(|| "-".into()),
            ticks(e.params),
            ticks(e.values),
        ));
    }
    for (title, keys) in [("params", PARAMS), ("values", VALUES)] {
        s.push_str(&format!("\n| {title} key | meaning |\n|---|---|\n"));
        for k in keys {
            s.push_str(&format!("| `{}` | {} |\n", k.name, k.doc));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_key_is_documented_once() {
        for e in EXPERIMENTS {
            for p in e.params {
                assert!(PARAMS.iter().any(|k| k.name == *p), "{}: {p}", e.name);
            }
            for v in e.values {
                assert!(VALUES.iter().any(|k| k.name == *v), "{}: {v}", e.name);
            }
        }
        for c in CONDITION_VALUES {
            assert!(VALUES.iter().any(|k| k.name == *c), "{c}");
        }
        for keys in [PARAMS, VALUES] {
            let mut names: Vec<&str> = keys.iter().map(|k| k.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), keys.len(), "a key is documented twice");
        }
    }

    #[test]
    fn records_are_held_to_their_declaration() {
        let base = || Record::new("latency", vec![], Default::default());
        assert_eq!(
            check_record(&base().param(p::PATTERN, "rand").value(v::CV, 0.1)),
            Ok(())
        );
        assert!(check_record(&base().param(p::PATTERN, "random")).is_err());
        // The machine's state during a point is any experiment's value.
        assert_eq!(check_record(&base().value(v::STEAL_PCT, 0.5)), Ok(()));
        assert_eq!(check_record(&base().value(v::CPU_SHARE, 0.98)), Ok(()));
        assert!(check_record(&base().param(p::ACCESS_BYTES, 64)).is_err());
        let mut r = base();
        r.metric = Some("bandwidth_gb_s".into());
        assert!(check_record(&r).is_err());
        assert!(check_record(&Record::new("nonsense", vec![], Default::default())).is_err());
    }

    /// The schema doc is generated from this table: it fails when they differ (run the
    /// test with PMSCOPE_BLESS=1 to rewrite the doc's generated part).
    #[test]
    fn schema_doc_matches_the_vocabulary() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/results-schema.md");
        let doc = std::fs::read_to_string(path).expect("docs/results-schema.md");
        let (begin, end) = ("<!-- generated: vocab -->\n", "<!-- end generated -->");
        let start = doc.find(begin).expect("generated-part marker") + begin.len();
        let stop = doc[start..].find(end).expect("end marker") + start;
        let generated = schema_markdown();
        if std::env::var_os("PMSCOPE_BLESS").is_some() {
            let new = format!("{}{}{}", &doc[..start], generated, &doc[stop..]);
            std::fs::write(path, new).unwrap();
            return;
        }
        assert!(
            doc[start..stop] == generated,
            "docs/results-schema.md differs from core::vocab; rerun with PMSCOPE_BLESS=1"
        );
    }
}
