//! The words records are made of: every experiment name, every parameter and value key,
//! every metric, and the enums whose values records carry (`Pattern`). Commands, the store
//! and the report all name things through this table, and `docs/results-schema.md` is
//! generated from it ([`schema_markdown`]; a test fails when the doc differs), so a key
//! cannot be spelled two ways or drift out of the documentation.
//!
//! [`check_record`] holds a record to its experiment's declaration: the CLI's
//! null-executor tests run every command to completion and check every record with it.

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
    pub fn name(self) -> &'static str {
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

/// One documented key of `params` or `values`.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The key as it appears in records.
    pub name: &'static str,
    /// What it means (with its unit where the name does not carry one).
    pub doc: &'static str,
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

macro_rules! keys {
    ($($name:literal => $doc:literal,)*) => { &[$(Key { name: $name, doc: $doc },)*] };
}

/// Every parameter key, in the order the doc lists them.
pub const PARAMS: &[Key] = keys! {
    "access_bytes" => "bytes per access (one block of a stream, one timed access)",
    "cpu_node" => "the NUMA node whose CPUs ran the workers",
    "block_bytes" => "bytes per block of a sync stream (64)",
    "delay_ns" => "busy wait after every traffic access (MLC's injected delay); 0 = flat out",
    "duration_s" => "seconds per repetition",
    "element_bytes" => "bytes per chain element (the stride of sequential chains)",
    "directory" => "the directory a command wrote into",
    "executor" => "`null` when the samples are synthetic (a test run that measured nothing)",
    "fence" => "`none`, `sfence` or `mfence` after each access",
    "flush_count" => "where a table's flushes and fences were counted: `persister` (pmscope issues them), `none issued` (volatile) or `not counted (inside libpmemobj)`",
    "persist_means" => "how a table's stores reach persistence: static-pm's --persist strategy, or for tx-pm libpmem's choice (CPU flushes on DAX or with PMEM_IS_PMEM_FORCE=1, msync elsewhere)",
    "flushed_before" => "whether each loaded line was flushed just before (so memory, not a cache, answers)",
    "genome_files" => "the genome files, in the order given",
    "genome_count_histogram" => "k-mers by the number of in-group genomes holding them",
    "genomes_inserted" => "genomes inserted into the table",
    "genomes_subtracted" => "out-group genomes looked up",
    "distance_lines" => "lines between a persist and the load that reads it back",
    "decoupled" => "whether the walk's addresses come from a DRAM array (only the dereference reads the target)",
    "k" => "k-mer length",
    "kernel" => "the PolyBench kernel (`pmscope poly`, seed 000 Table 1)",
    "data_bytes" => "bytes of the kernel's arrays, all on the target",
    "perf_counters" => "`available`, or `unavailable: ` and why (dTLB and LLC misses are then absent, never estimated)",
    "preset" => "the dataset preset: `mini`, `small`, `medium`, `large` or `seed`",
    "problem_size" => "the kernel's size parameter n at the preset",
    "variant" => "`ref` (textbook loop order) or `opt` (locality-optimised: interchanged, tiled)",
    "knee_found" => "whether the curve has a knee (a rise above 25 % between neighbouring working sets)",
    "lines" => "cache lines of each 256-byte XPLine accessed (1..4)",
    "memory_node" => "the NUMA node the memory was bound to (the target's verified placement says where it really is)",
    "mode" => "read-only, write-only or interleaved",
    "mix" => "the threads' roles, e.g. `1R+1W`, `2:1` (empty: every thread runs `op`)",
    "mixer" => "whether chain pointers are spread over the element offsets",
    "op" => "the operation (see `pmscope list ops`)",
    "operation" => "the k-mer job: `primers`, `count`, `union`, `intersect`, `subtract`",
    "option" => "pmmeter's name of the synchronisation option",
    "partition" => "`none` (one k-mer table) or `nodes` (one sub-table per NUMA node with CPUs)",
    "nodes_without_cpus" => "NUMA nodes with memory but no usable CPU: given no sub-table",
    "pattern" => "`seq`, `rand` or `random-in-page`",
    "persist" => "the persist strategy actually used (without --persist: clwb, else clflushopt, else clflush, the first this CPU has)",
    "persist_default" => "whether the persist strategy was the default's choice for this CPU (no --persist) rather than named",
    "persist_instructions" => "the instructions the persist strategy executed: `clflush`, `clflushopt+sfence`, `clwb+sfence`, `movntdq (16-byte)+sfence, clflush for partial lines`, `none`, `msync`",
    "probe" => "what the loaded-latency probe does, or which buffer probe ran",
    "probe_region_bytes" => "bytes the probe chain covers",
    "program" => "the program `pmscope run` ran, with its arguments",
    "region_bytes" => "bytes mapped and used",
    "region_per_thread_bytes" => "bytes each thread streams over",
    "samples" => "individually timed accesses",
    "pool" => "the pool file of a persistent table",
    "seed" => "random seed",
    "shared" => "whether all threads stream over one shared region",
    "size_bytes" => "bytes mapped",
    "size_source" => "how the working set or region of the record was chosen: `auto` (the option was left at its default, sized to the machine: 4x the last-level cache, at least the command's old fixed default, capped by available memory and --max-mem; a `size-capped` warning says when the cap applied) or `explicit` (given on the command line)",
    "sub_tables" => "per sub-table of `--partition nodes`: node, worker CPUs, k-mers inserted, distinct k-mers, slots, bytes, target, pages by node (move_pages) and the fraction on its own node",
    "table" => "the k-mer table kind",
    "targets" => "the targets compared, with their verified page size",
    "threads" => "worker threads",
    "threshold_bytes" => "allocations of at least this many bytes were placed on the target",
    "tlb_window_pages" => "random order only within groups of this many 4 KiB pages (null: whole region)",
    "traffic_access_bytes" => "bytes per traffic access",
    "traffic_op" => "what the traffic writes with (`write`, `ntstore`, `store+clwb`, `copy`), or `read` for read-only traffic",
    "traffic_pattern" => "the order the traffic visits its region: `seq`, or `rand` (every block once per pass)",
    "traffic_region_bytes" => "bytes each traffic thread streams over",
    "traffic_rw" => "traffic reads:writes per round",
    "traffic_size_source" => "`auto` or `explicit`, as `size_source`, for the traffic region",
    "traffic_threads" => "threads generating traffic",
    "snp_rate" => "substitutions per base of a synthetic strain",
    "indel_rate" => "insertions or deletions per base of a synthetic strain",
    "strains" => "synthetic strains derived from the reference",
    "software_prefetch" => "whether a prefetcht0 of the next XPLine was issued at each visit",
    "unit_bytes" => "bytes per instruction of a sync stream (default 32, pmmeter's; 16 on a CPU without AVX2)",
    "unsupported" => "why the cell could not run on this CPU (no metric then)",
    "vector_bytes" => "vector register width of the stream loops: 64 (AVX-512F), 32 (AVX2) or 16 (SSE2), the widest the CPU has unless --width names one",
    "write" => "the write made at each visit: store+clwb, store+clflushopt, store+clflush or ntstore (by default store+clwb, else the best flush this CPU has)",
    "width_bytes" => "bytes per instruction of an access",
    "working_set_bytes" => "bytes the chain covers",
    "aof_directory" => "the directory redis kept its append-only file in (fsync after every write), made inside `directory`, whose file system the fs keys describe",
    "clients" => "concurrent client connections of the load generator",
    "key_bytes" => "bytes per key",
    "percentiles_bucketed" => "whether p50/p99 are the upper bounds of power-of-two buckets (memaslap) rather than exact",
    "placement" => "pmscope run's report of where the server's large allocations landed: its params and values",
    "requests" => "requests per client run (redis-benchmark -n)",
    "server" => "the key-value server (`memcached`, `redis`)",
    "set_fraction" => "fraction of SET operations in the mix",
    "target" => "the target spec the server's heap was placed on",
    "value_bytes" => "bytes per value",
    "workload" => "the load: memcached `get-heavy` (10 % SET) or `set-heavy` (50 % SET); redis `set`, `get` or `mset` (ten pairs)",
    "file_op" => "the file operation: `create`, `append-4k`, `overwrite-4k`, `overwrite-512`, `read-4k` (open, the I/O, fsync if asked, close)",
    "fsync" => "whether each operation (each write, for fio) is followed by fsync",
    "io_bytes" => "bytes per read or write call",
    "fs_type" => "the file system of the directory (from /proc/self/mountinfo)",
    "mount_point" => "where that file system is mounted",
    "mount_options" => "its mount and super-block options (dax=, data=...)",
    "device" => "its mount source (`/dev/pmem0`) and device number (`259:0`)",
    "dax" => "the DAX mode the mount options ask for (`always`, `never`, `inode`; null: not given); the target's persistence says whether MAP_SYNC was granted",
    "inode_dax" => "whether statx marks the measured file's inode (redis: its append-only file's) DAX (STATX_ATTR_DAX: its reads and writes bypass the page cache); null: the kernel cannot say",
    "journal" => "ext4's data journaling mode (`ordered`, `journal`, `writeback`; null: not given)",
    "jobs" => "fio jobs (processes), each on its own file",
    "rw" => "fio's workload: `read`, `randread`, `write` or `randwrite`",
    "file_bytes" => "bytes of each job's file",
    "ioengine" => "fio's I/O engine",
    "fio_version" => "the fio that ran, as it reports itself",
};

/// Params that say how a parameter was chosen, not what was measured (`size_source`): a
/// point measured at a size given explicitly and one the default chose are the same point,
/// so comparisons leave these out.
pub const PROVENANCE_PARAMS: &[&str] = &["size_source", "traffic_size_source"];

/// Every value key, in the order the doc lists them.
pub const VALUES: &[Key] = keys! {
    "bases" => "bases of the genomes read (of the reference, for kmer-synth)",
    "candidates_kmers" => "primer candidates: in every in-group genome, in no out-group genome",
    "cleared_inserts" => "inserts a crash cut short, cleared by recovery",
    "difference_kmers" => "k-mers of the genomes that no --minus genome has",
    "genome_counts" => "genome counts held by a pool's k-mers",
    "genomes_completed" => "genomes a pool holds completely",
    "genomes_written" => "genome files written",
    "intersection_kmers" => "k-mers in every in-group genome",
    "skipped_kmers" => "k-mers skipped for an N or another IUPAC code",
    "union_kmers" => "distinct k-mers of the in-group genomes",
    "valid_kmers" => "k-mers a pool holds",
    "fences_per_insert" => "fences a persistent table issued per insert",
    "flushes_per_insert" => "cache-line flushes a persistent table issued per insert",
    "mips_vs_volatile" => "insert rate relative to the volatile table on the same target and genomes",
    "table_buckets" => "buckets of a chained (tx-pm) table",
    "after_ns" => "the highest median after the knee",
    "before_ns" => "the median on the plateau before the knee",
    "bytes_per_fault" => "mapped bytes per pre-fault minor fault",
    "checksum" => "position-weighted sum of the kernel's output arrays (the same for both variants)",
    "dtlb_load_misses" => "data-TLB read misses of one timed run (median), from perf_event",
    "llc_load_misses" => "last-level cache read misses of one timed run (median), from perf_event",
    "cv" => "coefficient of variation of the repetitions",
    "estimated_distinct_kmers" => "HyperLogLog estimate used to size the table",
    "estimate_cpu_ms" => "CPU time of the estimate phase",
    "estimate_ms" => "wall time of the estimate phase",
    "grow_ms" => "wall time the table spent growing between genomes (part of insert_ms)",
    "insert_cpu_ms" => "CPU time of the insert phase",
    "hmat_read_latency_ns" => "read latency the firmware declares for the memory node from its nearest initiators (ACPI HMAT, sysfs access0)",
    "hmat_read_bandwidth_mb_s" => "read bandwidth in MB/s the firmware declares for the memory node from its nearest initiators (ACPI HMAT, sysfs access0)",
    "insert_mips" => "million inserts per second",
    "insert_mips_with_growth" => "million inserts per second, the time the table spent growing included",
    "insert_ms" => "wall time of the insert phase",
    "inserts" => "k-mers inserted",
    "knee_bytes" => "the last working set of the plateau: the buffer size as the sweep resolves it",
    "lookup_hits" => "lookups that found their k-mer",
    "lookups" => "k-mers looked up",
    "map_cpu_ms" => "CPU time of mapping the table",
    "map_ms" => "wall time of mapping the table",
    "mean_latency_ns" => "mean probe latency",
    "million_instructions_per_s" => "instructions per second, in millions",
    "minor_faults" => "minor faults of the pre-fault pass",
    "output_cpu_ms" => "CPU time of writing the output",
    "output_ms" => "wall time of writing the output",
    "parse_cpu_ms" => "CPU time of reading the genomes",
    "parse_ms" => "wall time of reading the genomes",
    "peak_rss_bytes" => "peak resident set size of the process",
    "persist_fences" => "fences a persistent table issued (header and genome bookkeeping included)",
    "persist_flushes" => "cache-line write-backs a persistent table issued (header and genome bookkeeping included)",
    "prefault_ms" => "wall time of the pre-fault pass",
    "read_gb_s" => "read bandwidth (median)",
    "result_kmers" => "k-mers in the result",
    "setops_cpu_ms" => "CPU time of the set operation",
    "setops_ms" => "wall time of the set operation",
    "slot_bytes" => "bytes per table slot",
    "table_bytes" => "bytes of the table",
    "table_grown" => "times the table grew",
    "table_load_factor" => "occupied slots / slots",
    "table_slots" => "slots of the table",
    "timer_overhead_ns" => "cost of an empty timed bracket, subtracted from each timing",
    "total_cpu_ms" => "CPU time of the whole job",
    "total_ms" => "wall time of the whole job",
    "traffic_gb_s" => "bandwidth the traffic threads achieved",
    "write_gb_s" => "write bandwidth (median)",
    "mean_us" => "mean latency of a client request, µs",
    "p50_us" => "median latency of a client request, µs",
    "p99_us" => "99th-percentile latency of a client request, µs",
    "max_us" => "largest latency of a client request, µs",
    "exit_code" => "the program's exit status as a shell gives it (128 + N: killed by signal N)",
    "processes" => "processes under the program that reported their placement",
    "served_allocations" => "allocations placed on the target (malloc family and private anonymous mmap)",
    "served_bytes" => "bytes those allocations asked for",
    "mapped_bytes" => "bytes mapped on the target for them (rounded to its page granule)",
    "peak_mapped_bytes" => "most bytes mapped on the target at once (summed over processes)",
    "mmap_served_allocations" => "of the served allocations, the program's own mmap calls",
    "refused_allocations" => "allocations the target refused (left to ordinary memory)",
    "refused_bytes" => "bytes of the refused allocations",
    "below_threshold_allocations" => "allocations below the threshold, left alone",
    "below_threshold_bytes" => "bytes of the allocations below the threshold",
    "verified_regions" => "served regions whose pages were read back from smaps and numa_maps",
    "resident_bytes" => "resident bytes of the regions read back",
    "bytes_on_4k" => "resident served bytes on 4 KiB pages",
    "bytes_on_2m" => "resident served bytes on 2 MiB pages",
    "bytes_on_1g" => "resident served bytes on 1 GiB pages",
    "verified_page_bytes" => "the page size holding most resident served bytes",
    "iops" => "I/O operations per second, all jobs together",
    "lat_mean_ns" => "mean completion latency of one read or write call",
    "lat_p50_ns" => "median completion latency (fio's clat percentile)",
    "lat_p99_ns" => "99th percentile completion latency",
    "lat_p999_ns" => "99.9th percentile completion latency",
};

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
        values: &["mean_us", "p50_us", "p99_us", "max_us"],
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
            "map_ms",
            "insert_ms",
            "setops_ms",
            "output_ms",
            "total_ms",
            "parse_cpu_ms",
            "estimate_cpu_ms",
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
        ],
        values: &["bases", "genomes_written"],
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
        doc: "one table of pmscope kmer bench (seed 003 Table 9): its insert rate beside the volatile table's on the same target and genomes, and its flushes and fences per insert",
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
            "genome_files",
        ],
        values: &[
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
        if !e.values.contains(&k.as_str()) {
            return Err(format!("{}: value '{k}' is not declared", e.name));
        }
    }
    match (&r.metric, e.metric) {
        (None, _) => {}
        (Some(m), Some(declared)) if declared.split(" | ").any(|d| d == m) => {}
        (Some(m), _) => return Err(format!("{}: metric '{m}' is not declared", e.name)),
    }
    if let Some(p) = r.params.get("pattern") {
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
            check_record(&base().param("pattern", "rand").value("cv", 0.1)),
            Ok(())
        );
        assert!(check_record(&base().param("pattern", "random")).is_err());
        assert!(check_record(&base().param("access_bytes", 64)).is_err());
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
