//! The placement report: the block every process under the program appends to the report
//! file at exit, parsed, summed into a [`Placement`], and judged ([`findings`]).

use pmscope_core::achieved::{Achieved, FaultEvidence, PageMix, Persistence};
use pmscope_core::units::{Bytes, GIB1, KIB4, MIB2, page_size_name};
use pmscope_core::warning::Warning;
use pmscope_mapping::{HeapBacking, HeapPlan};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What one process under the program reported: its served allocations and what the
/// kernel backed them with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessReport {
    /// Its PID.
    pub pid: u32,
    /// Its executable.
    pub exe: String,
    /// Allocations placed on the target.
    pub served_count: u64,
    /// Bytes those allocations asked for.
    pub served_bytes: u64,
    /// Bytes mapped for them (rounded to the target's page granule).
    pub mapped_bytes: u64,
    /// Most bytes mapped on the target at once.
    pub peak_bytes: u64,
    /// Of `served_count`, the program's own anonymous mmaps (the rest: the malloc family).
    pub mmap_served_count: u64,
    /// Allocations the target refused (e.g. no free hugetlb page): left to ordinary memory.
    pub failed_count: u64,
    /// Bytes of those.
    pub failed_bytes: u64,
    /// Allocations below the threshold, left alone.
    pub below_count: u64,
    /// Bytes of those.
    pub below_bytes: u64,
    /// Served files the kernel mapped with MAP_SYNC (a DAX file system).
    pub sync_count: u64,
    /// Served regions a fork child copied off the shared target.
    pub fork_copies: u64,
    /// Served regions read back from smaps.
    pub verified_count: u64,
    /// Bytes of those.
    pub verified_bytes: u64,
    /// Served regions released during the run and not read back (past the library's budget
    /// of 512 per process; the regions still live at exit are all read back).
    pub unverified_count: u64,
    /// Resident bytes of the regions read back.
    pub resident_bytes: u64,
    /// Resident bytes on 4 KiB, 2 MiB and 1 GiB pages.
    pub pages: PageMix,
    /// Resident bytes per NUMA node (numa_maps).
    pub node_bytes: BTreeMap<u32, u64>,
}

impl ProcessReport {
    fn add(&mut self, o: &ProcessReport) {
        self.served_count += o.served_count;
        self.served_bytes += o.served_bytes;
        self.mapped_bytes += o.mapped_bytes;
        self.peak_bytes += o.peak_bytes;
        self.mmap_served_count += o.mmap_served_count;
        self.failed_count += o.failed_count;
        self.failed_bytes += o.failed_bytes;
        self.below_count += o.below_count;
        self.below_bytes += o.below_bytes;
        self.sync_count += o.sync_count;
        self.fork_copies += o.fork_copies;
        self.verified_count += o.verified_count;
        self.verified_bytes += o.verified_bytes;
        self.unverified_count += o.unverified_count;
        self.resident_bytes += o.resident_bytes;
        self.pages.bytes_4k += o.pages.bytes_4k;
        self.pages.bytes_2m += o.pages.bytes_2m;
        self.pages.bytes_1g += o.pages.bytes_1g;
        for (n, b) in &o.node_bytes {
            *self.node_bytes.entry(*n).or_default() += b;
        }
    }
}

/// Parses the report file: one block per process, `key value` lines, `end` closing each.
/// A block without its `end` (a process killed while writing) is dropped.
pub fn parse_reports(text: &str) -> Vec<ProcessReport> {
    let mut out = Vec::new();
    let mut cur: Option<ProcessReport> = None;
    for line in text.lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        if key == "process" {
            cur = Some(ProcessReport {
                pid: rest.parse().unwrap_or(0),
                ..ProcessReport::default()
            });
            continue;
        }
        let Some(r) = cur.as_mut() else { continue };
        let n = || rest.parse::<u64>().unwrap_or(0);
        match key {
            "end" => out.extend(cur.take()),
            "exe" => r.exe = rest.to_string(),
            "served_count" => r.served_count = n(),
            "served_bytes" => r.served_bytes = n(),
            "mapped_bytes" => r.mapped_bytes = n(),
            "peak_bytes" => r.peak_bytes = n(),
            "mmap_served_count" => r.mmap_served_count = n(),
            "failed_count" => r.failed_count = n(),
            "failed_bytes" => r.failed_bytes = n(),
            "below_count" => r.below_count = n(),
            "below_bytes" => r.below_bytes = n(),
            "sync_count" => r.sync_count = n(),
            "fork_copies" => r.fork_copies = n(),
            "verified_count" => r.verified_count = n(),
            "verified_bytes" => r.verified_bytes = n(),
            "unverified_count" => r.unverified_count = n(),
            "resident_bytes" => r.resident_bytes = n(),
            "bytes_4k" => r.pages.bytes_4k = n(),
            "bytes_2m" => r.pages.bytes_2m = n(),
            "bytes_1g" => r.pages.bytes_1g = n(),
            "node_bytes" => {
                if let Some((node, bytes)) = rest.split_once(' ')
                    && let (Ok(node), Ok(bytes)) = (node.parse(), bytes.parse())
                {
                    r.node_bytes.insert(node, bytes);
                }
            }
            _ => {}
        }
    }
    out
}

/// Where a program's allocations went.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The target's heap recipe.
    pub plan: HeapPlan,
    /// The threshold used.
    pub threshold: u64,
    /// Every process that reported, in the order they exited.
    pub processes: Vec<ProcessReport>,
    /// Their sum.
    pub total: ProcessReport,
    /// Files `--keep` left on the target.
    pub kept_files: Vec<PathBuf>,
    /// Findings: page size or node short of the request, refused allocations, ...
    pub warnings: Vec<Warning>,
}

impl Placement {
    /// The page size backing most resident served bytes, if any was resident.
    pub fn verified_page_bytes(&self) -> Option<u64> {
        self.total.pages.dominant()
    }

    /// The placement as an [`Achieved`], for the record's target.
    pub fn achieved(&self) -> Achieved {
        let persistence = match (&self.plan.backing, self.total.sync_count) {
            (HeapBacking::Anonymous { .. }, _) => Persistence::Volatile,
            (HeapBacking::Directory { .. }, n) if n > 0 => Persistence::Dax,
            (HeapBacking::Directory { dir, .. }, _) if dir.starts_with("/dev/shm") => {
                Persistence::Emulated
            }
            (HeapBacking::Directory { .. }, _) => Persistence::PageCache,
        };
        let mut pages = self.total.pages;
        pages.smaps_sees_mapping = self.total.resident_bytes > 0;
        // Read back but never touched: the program mapped more than it used.
        pages.bytes_unmapped = self
            .total
            .verified_bytes
            .saturating_sub(self.total.resident_bytes);
        let page_size = self.verified_page_bytes();
        Achieved {
            bytes: self.total.mapped_bytes,
            pages,
            faults: FaultEvidence::from_faults(0, 0),
            page_size,
            page_size_source: "smaps".into(),
            nodes: self
                .total
                .node_bytes
                .iter()
                .map(|(n, b)| (*n, b / page_size.unwrap_or(KIB4)))
                .collect(),
            nodes_unknown: 0,
            nodes_sampled: false,
            persistence,
            map_sync: match self.plan.backing {
                HeapBacking::Anonymous { .. } => None,
                HeapBacking::Directory { .. } => Some(self.total.sync_count > 0),
            },
            path: match &self.plan.backing {
                HeapBacking::Anonymous { .. } => None,
                HeapBacking::Directory { dir, .. } => Some(dir.display().to_string()),
            },
            filesystem: None,
            alignment: None,
            prefault_ns: 0,
            pmem_region: None,
            cxl: None,
        }
    }
}

impl Placement {
    /// The placement the report file's `text` describes, for a program planned as `plan`
    /// whose launch found `warnings` already; `killed_by` is the signal that ended it.
    pub(super) fn read(
        plan: HeapPlan,
        threshold: u64,
        text: &str,
        keep: bool,
        warnings: Vec<Warning>,
        killed_by: Option<i32>,
    ) -> Placement {
        let processes = parse_reports(text);
        let mut total = ProcessReport::default();
        for p in &processes {
            total.add(p);
        }
        let kept_files = match (&plan.backing, keep) {
            (HeapBacking::Directory { dir, .. }, true) => kept_in(dir, &processes),
            _ => Vec::new(),
        };
        let mut placement = Placement {
            plan,
            threshold,
            processes,
            total,
            kept_files,
            warnings,
        };
        placement.warnings.extend(findings(&placement, killed_by));
        placement
    }
}

/// The files `--keep` left in `dir` for the processes that reported.
fn kept_in(dir: &std::path::Path, processes: &[ProcessReport]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut kept: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            processes.iter().any(|p| {
                name.starts_with(&format!("pmscope-{}-", p.pid)) && name.ends_with("-kept.bin")
            })
        })
        .map(|e| e.path())
        .collect();
    kept.sort();
    kept
}

/// What falls short of the request, each a warning with its remedy.
pub fn findings(p: &Placement, killed_by: Option<i32>) -> Vec<Warning> {
    let mut w = Vec::new();
    let t = &p.total;
    if p.processes.is_empty() {
        w.push(Warning::new(
            "no-placement-report",
            match killed_by {
                Some(s) => format!("the program was killed by signal {s} before any process reported its placement"),
                None => "no process reported its placement: the program ended without running exit handlers (_exit, exec) or is statically linked".into(),
            },
            "run a dynamically linked program that exits normally; the library reports from its destructor",
        ));
    }
    if t.failed_count > 0 {
        w.push(Warning::new(
            "placement-refused",
            format!(
                "{} allocation(s) ({}) could not be placed on the target and went to ordinary memory",
                t.failed_count,
                Bytes(t.failed_bytes).human()
            ),
            match p.plan.backing {
                HeapBacking::Anonymous { pages: "2m" | "1g" } => {
                    "reserve more huge pages (/sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages)"
                }
                _ => "check the target's free space and the node's free memory",
            },
        ));
    }
    let want = p.plan.expected_page_bytes;
    let resident = t.pages.bytes_4k + t.pages.bytes_2m + t.pages.bytes_1g;
    if t.sync_count > 0 && resident == 0 && t.verified_bytes > 0 {
        w.push(Warning::new(
            "page-size-unverified",
            "the served files are on a DAX file system, whose pages smaps does not show: the page size is not verified",
            "measure the same file system with `pmscope verify -t file:DIR`, which counts faults",
        ));
    } else if resident > 0 && want > KIB4 {
        let short = resident
            - match want {
                GIB1 => t.pages.bytes_1g,
                _ => t.pages.bytes_2m + t.pages.bytes_1g,
            };
        if short > 0 {
            w.push(Warning::new(
                "page-size-mismatch",
                format!(
                    "{} of {} resident served bytes are on pages smaller than the {} asked for",
                    Bytes(short).human(),
                    Bytes(resident).human(),
                    page_size_name(want)
                ),
                if want == MIB2 && matches!(p.plan.backing, HeapBacking::Directory { .. }) {
                    "tmpfs huge pages follow /sys/kernel/mm/transparent_hugepage/shmem_enabled (advise or always)"
                } else {
                    "check /sys/kernel/mm/transparent_hugepage/enabled and defrag, or use dram:2m for hugetlb pages"
                },
            ));
        }
    }
    if let Some(node) = p.plan.node {
        let elsewhere: u64 = t
            .node_bytes
            .iter()
            .filter(|(n, _)| **n != node)
            .map(|(_, b)| b)
            .sum();
        if elsewhere > 0 {
            w.push(Warning::new(
                "node-mismatch",
                format!(
                    "{} of the served bytes are not on node {node}",
                    Bytes(elsewhere).human()
                ),
                "check the node's free memory (numactl -H)",
            ));
        }
    }
    if t.unverified_count > 0 {
        w.push(Warning::new(
            "placement-partly-verified",
            format!(
                "{} served region(s) released during the run were not read back from smaps (the library reads back at most 512 released regions per process, and every region still live at exit)",
                t.unverified_count
            ),
            "the verified figures describe the first regions only",
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_parse_and_an_unfinished_block_is_dropped() {
        let text = "process 12\nexe /usr/bin/python3\nserved_count 2\nserved_bytes 100\n\
                    bytes_2m 4194304\nnode_bytes 0 4194304\nend\nprocess 13\nserved_count 9\n";
        let r = parse_reports(text);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].pid, 12);
        assert_eq!(r[0].exe, "/usr/bin/python3");
        assert_eq!((r[0].served_count, r[0].served_bytes), (2, 100));
        assert_eq!(r[0].pages.bytes_2m, 4 << 20);
        assert_eq!(r[0].node_bytes.get(&0), Some(&(4 << 20)));
    }

    #[test]
    fn a_heap_mapped_but_partly_untouched_is_described_so() {
        let text = "process 12\nserved_count 4\nmapped_bytes 10485760\nverified_count 4\n\
                    verified_bytes 10485760\nresident_bytes 4194304\nbytes_4k 4194304\n\
                    node_bytes 0 4194304\nend\n";
        let total = parse_reports(text).remove(0);
        let placement = Placement {
            plan: HeapPlan {
                backing: HeapBacking::Anonymous { pages: "4k" },
                node: None,
                expected_page_bytes: 4096,
            },
            threshold: 1 << 20,
            processes: vec![total.clone()],
            total,
            kept_files: Vec::new(),
            warnings: Vec::new(),
        };
        assert_eq!(
            placement.achieved().describe(),
            "4k 40% (smaps), 60% untouched, node 0, volatile"
        );
    }
}
