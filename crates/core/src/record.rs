//! THE result schema. Every measurement pmscope makes, in every experiment, is one
//! [`Record`]: JSON Lines with `--json` or `-o FILE`, a table row otherwise. Field names
//! carry their unit (`latency_ns`, `bandwidth_gb_s`); `docs/results-schema.md` describes
//! each field and must change together with [`SCHEMA_VERSION`].

use crate::achieved::Achieved;
use crate::key::{ParamKey, ValueKey};
use crate::precision::Precision;
use crate::summary::{LogHistogram, Summary};
use crate::warning::Warning;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the record layout. Bump it whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 3;

/// One measurement (or one verified configuration) with everything needed to interpret it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// [`SCHEMA_VERSION`] at the time of writing.
    pub schema_version: u32,
    /// Version of the pmscope binary that wrote it.
    pub pmscope_version: String,
    /// The experiment (`verify`, `latency`, `bandwidth`, ...).
    pub experiment: String,
    /// Milliseconds since the Unix epoch when the measurement finished.
    pub timestamp_ms: u64,
    /// The command line, argument by argument.
    pub command_line: Vec<String>,
    /// The target measured, as asked and as achieved.
    pub target: Option<TargetRecord>,
    /// The machine.
    pub system: SystemSummary,
    /// Parameters of this point (access size, threads, pattern, ...).
    pub params: BTreeMap<String, serde_json::Value>,
    /// Name and unit of the summarised quantity (`latency_ns`, `bandwidth_gb_s`).
    pub metric: Option<String>,
    /// Summary of the samples of `metric`.
    pub summary: Option<Summary>,
    /// The 95 % interval of the point's statistic (the median of `summary`), how many
    /// repetitions it took and whether the precision target was met; `None` in records
    /// written before pmscope measured it, and for records that summarise no repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
    /// The blocks the point was measured in, each on a mapping of its own ([`crate::blocks`]):
    /// their medians, of which `summary.p50` is the geometric mean and `precision` the
    /// interval; empty for a point measured in one block (`--blocks 1`, the commands that
    /// do not map memory) and in records written before blocks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Block>,
    /// Distribution of individual samples of `metric` on a log scale, where one was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<LogHistogram>,
    /// Further named figures of this point, each with its unit in the name.
    pub values: BTreeMap<String, f64>,
    /// Where each worker thread asked to run and where it ran.
    pub threads: Vec<ThreadPlacement>,
    /// Findings about the configuration, each with a remedy.
    pub warnings: Vec<Warning>,
}

/// One block of a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// The block's statistic: the median of its repetitions, or of its single timings
    /// (interpolated within the timer's steps), in the metric's unit.
    pub median: f64,
    /// Repetitions or timings behind it.
    pub n: usize,
    /// Repetitions the machine disturbed in it (see [`Precision::disturbed`](crate::precision::Precision::disturbed)).
    #[serde(default)]
    pub disturbed: usize,
    /// How the block's mapping relates to the one before it; `None` for the first block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
}

/// What the block's mapping had in common with the previous block's, checked from the
/// physical frame numbers in `/proc/self/pagemap` at up to [`PLACEMENT_SAMPLE`](crate::blocks::PLACEMENT_SAMPLE) pages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Whether it was mapped while the previous block's mapping still held its pages (so
    /// the kernel had to hand out others); false where two did not fit (`--max-mem`, the
    /// free huge pages), and then `shared_frames` says what came back.
    pub beside_previous: bool,
    /// Share of its sampled pages whose physical page also backed the previous block's
    /// mapping (devdax: 1, the same device memory every time); `None` where the frame
    /// numbers are unreadable (not root).
    pub shared_frames: Option<f64>,
    /// Share of its sampled pages whose page colour (frame number mod [`COLOURS`](crate::blocks::COLOURS)) equals
    /// that of the page at the same offset in the previous block: 1/64 for independent
    /// placements, near 1 when the offsets met the same cache sets again (pages faulted in
    /// address order from a free list in address order); `None` where unreadable.
    pub same_colour: Option<f64>,
}

/// A target as asked for and as the kernel gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRecord {
    /// The canonical target spec (`dram:thp,node=0`).
    pub spec: String,
    /// The verified configuration.
    pub achieved: Achieved,
}

/// Where one worker thread ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPlacement {
    /// Worker index.
    pub worker: usize,
    /// The CPU it was pinned to.
    pub cpu_requested: usize,
    /// The CPU `sched_getcpu` reported at the end of its work.
    pub cpu_observed: usize,
}

/// The timer behind every time in a record.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimerInfo {
    /// `tsc` (rdtsc/rdtscp, calibrated) or `clock_gettime` (CLOCK_MONOTONIC_RAW fallback).
    pub source: TimerSource,
    /// Ticks per second (TSC frequency measured against CLOCK_MONOTONIC_RAW; 1e9 for
    /// clock_gettime).
    pub hz: f64,
    /// Whether the CPU declares an invariant TSC (CPUID 0x80000007 EDX bit 8).
    pub invariant_tsc: bool,
    /// Median cost of one start/stop pair, in nanoseconds; subtracted where single
    /// accesses are timed.
    pub overhead_ns: f64,
    /// The smallest step the timer advances by, in nanoseconds (1/hz on bare metal; a
    /// virtualised TSC may advance in coarser steps, which quantises single timings).
    pub resolution_ns: f64,
}

/// Which clock a timer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerSource {
    /// The time-stamp counter.
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC_RAW)`.
    ClockGettime,
}

/// The facts about the machine that every record repeats (the full inventory is
/// `pmscope info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SystemSummary {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU brand string.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus_online: usize,
    /// NUMA nodes with memory or CPUs.
    pub numa_nodes: usize,
    /// Whether the machine runs under a hypervisor (CPUID leaf 1 ECX bit 31).
    pub hypervisor: bool,
    /// The timer used, if one was calibrated for this run.
    pub timer: Option<TimerInfo>,
    /// `/sys/kernel/mm/transparent_hugepage/enabled`, active value.
    pub thp_enabled: String,
    /// `/sys/kernel/mm/transparent_hugepage/defrag`, active value.
    pub thp_defrag: String,
    /// Whether SMT is active (`None`: the kernel does not say).
    #[serde(default)]
    pub smt_active: Option<bool>,
    /// The kernel command line.
    #[serde(default)]
    pub kernel_cmdline: String,
    /// The CPU vulnerabilities the kernel reports as mitigated or vulnerable, by name
    /// (those the CPU is not affected by are left out).
    #[serde(default)]
    pub mitigations: BTreeMap<String, String>,
    /// The core clock observed at the start of the measurement (a chain of dependent
    /// register multiplies against the monotonic clock, cross-checked with the TSC), in GHz;
    /// `None` when not measured or unmeasurable.
    #[serde(default)]
    pub observed_core_ghz: Option<f64>,
    /// Why the core clock is not given although it was measured (a figure outside 0.2-3x
    /// of the TSC rate); `None` when a figure was observed or nothing was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_clock_unmeasurable: Option<String>,
}

impl Record {
    /// A record of `experiment` with the given context and nothing measured yet.
    pub fn new(experiment: &str, command_line: Vec<String>, system: SystemSummary) -> Record {
        Record {
            schema_version: SCHEMA_VERSION,
            pmscope_version: env!("CARGO_PKG_VERSION").to_string(),
            experiment: experiment.to_string(),
            timestamp_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            command_line,
            target: None,
            system,
            params: BTreeMap::new(),
            metric: None,
            summary: None,
            precision: None,
            blocks: Vec::new(),
            histogram: None,
            values: BTreeMap::new(),
            threads: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// A record of `experiment` made from this one's points (the best thread count of a
    /// bandwidth sweep, a curve's knee): the same machine, command line, target, warnings
    /// and workers, and of its parameters those in `keep` (the null executor's mark), nothing
    /// measured.
    pub fn derived(&self, experiment: &str, keep: &[ParamKey]) -> Record {
        Record {
            experiment: experiment.to_string(),
            params: self
                .params
                .iter()
                .filter(|(k, _)| keep.iter().any(|p| p.name() == k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            metric: None,
            summary: None,
            precision: None,
            blocks: Vec::new(),
            histogram: None,
            values: BTreeMap::new(),
            ..self.clone()
        }
    }

    /// Sets one parameter.
    pub fn param(mut self, key: ParamKey, value: impl Into<serde_json::Value>) -> Record {
        self.params.insert(key.name().to_string(), value.into());
        self
    }

    /// Sets one named figure. A non-finite figure (no faults: infinite bytes per fault) is
    /// left out: JSON has no infinity, and a record must read back as it was written.
    pub fn value(mut self, key: ValueKey, v: f64) -> Record {
        if v.is_finite() {
            self.values.insert(key.name().to_string(), v);
        }
        self
    }

    // The reads. One policy for every reader (the terminal tables, the report, the store's
    // comparisons): a key that is absent, or holds another type, reads as `None`; the
    // reader says what it shows instead.

    /// A parameter as stored.
    pub fn get(&self, key: ParamKey) -> Option<&serde_json::Value> {
        self.params.get(key.name())
    }

    /// A string parameter.
    pub fn text(&self, key: ParamKey) -> Option<&str> {
        self.get(key).and_then(|v| v.as_str())
    }

    /// An unsigned integer parameter.
    pub fn count(&self, key: ParamKey) -> Option<u64> {
        self.get(key).and_then(|v| v.as_u64())
    }

    /// A boolean parameter.
    pub fn flag(&self, key: ParamKey) -> Option<bool> {
        self.get(key).and_then(|v| v.as_bool())
    }

    /// A numeric parameter.
    pub fn number(&self, key: ParamKey) -> Option<f64> {
        self.get(key).and_then(|v| v.as_f64())
    }

    /// A named figure.
    pub fn val(&self, key: ValueKey) -> Option<f64> {
        self.values.get(key.name()).copied()
    }

    /// The target's spec as given, for records of one target.
    pub fn spec(&self) -> Option<&str> {
        self.target.as_ref().map(|t| t.spec.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{p, v};

    #[test]
    fn serialises_with_version_and_round_trips() {
        let r = Record::new("verify", vec!["pmscope".into()], SystemSummary::default())
            .param(p::THREADS, 2)
            .value(v::PREFAULT_MS, 1.5);
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"schema_version\":3"));
        let back: Record = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }

    /// A target that took no fault (pages populated beforehand) has infinite bytes per
    /// fault; its record, written as JSON, must read back (the store, `report` and
    /// `pmscope app` read records written by other pmscope processes).
    #[test]
    fn a_record_without_faults_reads_back() {
        let mut r = Record::new("run", vec![], SystemSummary::default())
            .value(v::BYTES_PER_FAULT, f64::INFINITY)
            .value(v::SERVED_BYTES, 4096.0);
        assert!(r.val(v::BYTES_PER_FAULT).is_none());
        // As `pmscope run` wrote it (serde_json writes the infinite quotient as null).
        let achieved: crate::achieved::Achieved = serde_json::from_str(
            r#"{"bytes":10485760,"pages":{"bytes_4k":0,"bytes_2m":10485760,"bytes_1g":0,"bytes_unmapped":0,"smaps_sees_mapping":true},"faults":{"minor_faults":0,"bytes_per_fault":null,"page_size":null},"page_size":2097152,"page_size_source":"smaps","nodes":{"0":5},"nodes_unknown":0,"nodes_sampled":false,"persistence":"volatile","map_sync":null,"path":null,"filesystem":null,"alignment":null,"prefault_ns":0}"#,
        )
        .unwrap();
        assert_eq!(
            achieved.faults,
            crate::achieved::FaultEvidence::from_faults(10485760, 0)
        );
        r.target = Some(TargetRecord {
            spec: "dram:thp".into(),
            achieved,
        });
        let json = serde_json::to_string(&r).unwrap();
        let back: Record = serde_json::from_str(&json).unwrap();
        assert!(
            back.target
                .unwrap()
                .achieved
                .faults
                .bytes_per_fault
                .is_infinite()
        );
        assert_eq!(back.values, r.values);
    }
}
