//! What the kernel actually gave a target, as data. `pmscope-mapping` fills it in after
//! mapping and pre-faulting; every record carries it.

use crate::units::{GIB1, KIB4, MIB2, page_size_name};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How stores to a target become durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// Ordinary DRAM: nothing survives a power failure.
    Volatile,
    /// A DAX mapping (MAP_SYNC accepted, or a devdax device): cache-line flushes and a
    /// fence make a store durable.
    Dax,
    /// A page-cache mapping of a file: durable only after `msync`.
    PageCache,
    /// DRAM standing in for pmem (tmpfs, `/dev/shm`): the seeds' PM-LDRAM configuration.
    /// Flushes cost what they would, but nothing survives a power failure.
    Emulated,
}

impl Persistence {
    /// The phrase the CLI prints.
    pub fn describe(self) -> &'static str {
        match self {
            Persistence::Volatile => "volatile",
            Persistence::Dax => "dax",
            Persistence::PageCache => "page-cache (msync needed)",
            Persistence::Emulated => "emulated (DRAM-backed tmpfs: not durable)",
        }
    }
}

/// Bytes of the range backed by each page size, as `/proc/self/smaps` reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMix {
    /// Bytes mapped with 4 KiB pages.
    pub bytes_4k: u64,
    /// Bytes mapped with 2 MiB pages (THP, hugetlb 2M, devdax or PMD-mapped file).
    pub bytes_2m: u64,
    /// Bytes mapped with 1 GiB pages.
    pub bytes_1g: u64,
    /// Bytes of the range not resident at all (e.g. never touched or reclaimed).
    pub bytes_unmapped: u64,
    /// Whether smaps can see this mapping's page sizes. It cannot for fsdax files (DAX pages
    /// are devmap and smaps skips them), where the fault count is the only evidence.
    pub smaps_sees_mapping: bool,
}

impl PageMix {
    /// Fraction of `len` backed by pages of `size` bytes.
    pub fn fraction(&self, size: u64, len: u64) -> f64 {
        if len == 0 {
            return 0.0;
        }
        let b = match size {
            KIB4 => self.bytes_4k,
            MIB2 => self.bytes_2m,
            GIB1 => self.bytes_1g,
            _ => 0,
        };
        b as f64 / len as f64
    }

    /// The page size backing most of the range, if anything is resident.
    pub fn dominant(&self) -> Option<u64> {
        let options = [
            (self.bytes_1g, GIB1),
            (self.bytes_2m, MIB2),
            (self.bytes_4k, KIB4),
        ];
        options
            .iter()
            .filter(|(b, _)| *b > 0)
            .max_by_key(|(b, _)| *b)
            .map(|(_, s)| *s)
    }
}

/// The page size inferred from the pre-fault pass: mapped bytes / minor faults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FaultEvidence {
    /// Minor faults counted (getrusage, this thread) during the pre-fault pass.
    pub minor_faults: u64,
    /// Mapped bytes / minor faults (infinite when nothing faulted: JSON `null`, read back as
    /// infinity, so a record with no faults still round-trips).
    #[serde(deserialize_with = "null_is_infinite")]
    pub bytes_per_fault: f64,
    /// The page size that quotient is closest to (on a log scale), when it is clear.
    pub page_size: Option<u64>,
}

/// serde_json writes a non-finite f64 as `null`; read it back as infinity.
fn null_is_infinite<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

impl FaultEvidence {
    /// Infers a page size from `faults` while touching `len` bytes. A quotient within a
    /// factor of two of 4 KiB, 2 MiB or 1 GiB names that size; anything else is unclear.
    pub fn from_faults(len: u64, faults: u64) -> FaultEvidence {
        let bytes_per_fault = if faults == 0 {
            f64::INFINITY
        } else {
            len as f64 / faults as f64
        };
        let page_size = [KIB4, MIB2, GIB1].into_iter().find(|&s| {
            let r = bytes_per_fault / s as f64;
            (0.5..2.0).contains(&r)
        });
        FaultEvidence {
            minor_faults: faults,
            bytes_per_fault,
            page_size,
        }
    }
}

/// The verified configuration of one mapped target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Achieved {
    /// Length of the mapping in bytes.
    pub bytes: u64,
    /// Page sizes seen in smaps.
    pub pages: PageMix,
    /// Page size inferred from the fault count of the pre-fault pass.
    pub faults: FaultEvidence,
    /// The page size pmscope believes backs the range, and from which evidence.
    pub page_size: Option<u64>,
    /// `smaps`, `faults` or `smaps+faults`: which evidence `page_size` rests on.
    pub page_size_source: String,
    /// Pages found on each NUMA node (move_pages with nodes = NULL), by node id.
    pub nodes: BTreeMap<u32, u64>,
    /// Pages whose node move_pages could not tell (negative status), if any.
    pub nodes_unknown: u64,
    /// Whether the node query sampled the range rather than asking for every page.
    pub nodes_sampled: bool,
    /// How stores become durable.
    pub persistence: Persistence,
    /// Whether the kernel accepted MAP_SHARED_VALIDATE | MAP_SYNC (None: not attempted).
    pub map_sync: Option<bool>,
    /// The backing file or device, if any.
    pub path: Option<String>,
    /// The file system type of the backing file (`ext4`, `tmpfs`, `hugetlbfs`, ...).
    pub filesystem: Option<String>,
    /// Mapping alignment required by the device (devdax) or chosen (huge pages).
    pub alignment: Option<u64>,
    /// Wall time of the pre-fault pass, in nanoseconds.
    pub prefault_ns: u64,
    /// The persistent-memory region behind a DAX target (fsdax file or devdax), as sysfs
    /// describes it; absent for other targets (and in records of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmem_region: Option<PmemRegionFacts>,
    /// The CXL region behind the memory: a DAX target's nd region made from one, or the
    /// node a CXL region was onlined on through kmem; absent otherwise (and in records of
    /// older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cxl: Option<CxlFacts>,
}

/// Which CXL devices and interleave a target's memory is, as `/sys/bus/cxl` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CxlFacts {
    /// The CXL region (`region0`).
    pub region: String,
    /// `pmem` or `ram`.
    pub mode: String,
    /// The memory devices interleaved in it, in interleave order (`mem0`).
    pub memdevs: Vec<String>,
    /// Their serial numbers, in the same order (where the device gives one).
    pub serials: Vec<String>,
    /// Devices interleaved.
    pub interleave_ways: u32,
    /// Bytes given to one device before the next.
    pub interleave_granularity: u32,
    /// The NUMA node its memory belongs to (for a kmem-onlined region, the node measured).
    pub node: Option<u32>,
    /// Whether the region's memory was onlined as system RAM (kmem).
    pub system_ram: bool,
    /// Whether the devices are a hypervisor's emulation (QEMU's cxl-type3).
    pub emulated: bool,
    /// One sentence describing the region.
    pub description: String,
}

/// Where a DAX target's memory comes from: whether it is persistent memory at all, and
/// what makes its stores durable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmemRegionFacts {
    /// The libnvdimm region (`region0`).
    pub region: String,
    /// `nfit` (a real NVDIMM), `virtual-nfit` (a hypervisor's), `e820` (DRAM reserved
    /// with memmap=), `of-pmem`, `nfit-test` or `unknown`.
    pub origin: String,
    /// Whether the region only emulates persistent memory.
    pub emulated: bool,
    /// `cpu_cache` (eADR), `memory_controller` (ADR), or absent when not declared.
    pub persistence_domain: Option<String>,
    /// DIMMs interleaved in the region (0 for memmap= regions).
    pub interleave_ways: u32,
    /// One sentence describing the region.
    pub description: String,
}

impl Achieved {
    /// A mapping of `bytes` about which nothing is verified yet (no page, fault or node
    /// evidence, no path): the base that verifiers, and tests, fill in.
    pub fn unverified(bytes: u64, persistence: Persistence) -> Achieved {
        Achieved {
            bytes,
            pages: PageMix::default(),
            faults: FaultEvidence::from_faults(bytes, 0),
            page_size: None,
            page_size_source: String::new(),
            nodes: BTreeMap::new(),
            nodes_unknown: 0,
            nodes_sampled: false,
            persistence,
            map_sync: None,
            path: None,
            filesystem: None,
            alignment: None,
            prefault_ns: 0,
            pmem_region: None,
            cxl: None,
        }
    }

    /// A one-line description for tables: `2m 100% (smaps+faults), node 0, volatile`;
    /// memory a program mapped but never touched (no page behind it yet) is said apart, so
    /// `4k 34%` is not read as 66 % of something else: `4k 34% (smaps), 66% untouched, ...`.
    pub fn describe(&self) -> String {
        let pages = match self.page_size {
            Some(s) => {
                let pct = if self.pages.smaps_sees_mapping {
                    format!(" {:.0}%", 100.0 * self.pages.fraction(s, self.bytes))
                } else {
                    String::new()
                };
                let untouched = if self.pages.smaps_sees_mapping
                    && self.pages.bytes_unmapped > 0
                    && self.bytes > 0
                {
                    format!(
                        ", {:.0}% untouched",
                        100.0 * self.pages.bytes_unmapped as f64 / self.bytes as f64
                    )
                } else {
                    String::new()
                };
                format!(
                    "{}{} ({}){untouched}",
                    page_size_name(s),
                    pct,
                    self.page_size_source
                )
            }
            None => "page size unclear".to_string(),
        };
        let nodes: Vec<String> = self.nodes.keys().map(|n| n.to_string()).collect();
        let nodes = match nodes.len() {
            0 => "node unknown".to_string(),
            1 => format!("node {}", nodes[0]),
            _ => format!("nodes {}", nodes.join(",")),
        };
        format!("{pages}, {nodes}, {}", self.persistence.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_evidence_matches_labvm_figures() {
        // labvm README: 64 MiB in 33 faults is PMD-mapped, 16 385 faults is 4 KiB.
        let pmd = FaultEvidence::from_faults(64 << 20, 33);
        assert_eq!(pmd.page_size, Some(MIB2));
        let pte = FaultEvidence::from_faults(64 << 20, 16_385);
        assert_eq!(pte.page_size, Some(KIB4));
        let mixed = FaultEvidence::from_faults(64 << 20, 2_000);
        assert_eq!(mixed.page_size, None);
        assert_eq!(FaultEvidence::from_faults(1 << 30, 1).page_size, Some(GIB1));
        assert_eq!(FaultEvidence::from_faults(1 << 20, 0).page_size, None);
    }

    #[test]
    fn untouched_memory_is_said_apart_in_the_description() {
        let bytes: u64 = 3 << 20;
        let mut a = Achieved {
            pages: PageMix {
                bytes_4k: 1 << 20,
                bytes_unmapped: 2 << 20,
                smaps_sees_mapping: true,
                ..PageMix::default()
            },
            faults: FaultEvidence::from_faults(bytes, 256),
            page_size: Some(KIB4),
            page_size_source: "smaps".into(),
            nodes: BTreeMap::from([(0, 256)]),
            ..Achieved::unverified(bytes, Persistence::Volatile)
        };
        assert_eq!(
            a.describe(),
            "4k 33% (smaps), 67% untouched, node 0, volatile"
        );
        a.pages.bytes_4k = bytes;
        a.pages.bytes_unmapped = 0;
        assert_eq!(a.describe(), "4k 100% (smaps), node 0, volatile");
    }

    #[test]
    fn page_mix_dominant_and_fraction() {
        let m = PageMix {
            bytes_4k: 1 << 20,
            bytes_2m: 6 << 20,
            bytes_1g: 0,
            bytes_unmapped: 1 << 20,
            smaps_sees_mapping: true,
        };
        assert_eq!(m.dominant(), Some(MIB2));
        assert!((m.fraction(MIB2, 8 << 20) - 0.75).abs() < 1e-12);
        assert_eq!(PageMix::default().dominant(), None);
    }
}
