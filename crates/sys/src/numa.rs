//! NUMA: the node inventory from sysfs (including memory-only, CXL-like nodes and their
//! HMAT figures), binding a range to a node before first touch (`mbind(MPOL_BIND)`), and
//! asking where each page actually is (`move_pages` with `nodes = NULL`).
//! Rustix has none of these syscalls; they go through `libc::syscall`.
#![allow(unsafe_code)]

use crate::sysroot::SysRoot;
use pmscope_core::cpulist::parse_list;
use serde::{Deserialize, Serialize};
use std::io;

/// One NUMA node as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Node id.
    pub id: u32,
    /// CPUs of the node; empty for a memory-only node.
    pub cpus: Vec<usize>,
    /// Memory of the node in bytes (`MemTotal` of its meminfo).
    pub mem_total_bytes: u64,
    /// Free memory of the node in bytes.
    pub mem_free_bytes: u64,
    /// Distances to every node, in node order (`distance`).
    pub distances: Vec<u32>,
    /// ACPI HMAT figures for accesses from this node's best initiators, where sysfs has
    /// them (`access0/initiators/read_latency` in ns, `read_bandwidth` in MB/s, ...).
    pub hmat: Option<Hmat>,
    /// The memory tier the node belongs to (`/sys/devices/virtual/memory_tiering`).
    pub memory_tier: Option<String>,
    /// Hardware caches in front of the node's memory (ACPI HMAT, `memory_side_cache/`):
    /// Optane Memory Mode's DRAM, a CXL expander's cache. A working set that fits one
    /// measures the cache, not the memory behind it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_side_caches: Vec<MemorySideCache>,
}

/// One memory-side cache of a node, as `nodeN/memory_side_cache/indexL/` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySideCache {
    /// Its level (the `L` of `indexL`; 1 is nearest the CPUs).
    pub level: u32,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Line size in bytes.
    pub line_bytes: u64,
    /// `direct-mapped` or `complex` (the kernel's `indexing`: 0 direct, else complex).
    pub indexing: String,
    /// `write-back`, `write-through` or `other` (the kernel's `write_policy`: 0, 1, else).
    pub write_policy: String,
}

impl MemorySideCache {
    /// "64 MiB L1 memory-side cache (64 B lines, direct-mapped, write-back)", with `human`
    /// formatting byte counts.
    pub fn describe(&self, human: impl Fn(u64) -> String) -> String {
        format!(
            "{} L{} memory-side cache ({} lines, {}, {})",
            human(self.size_bytes),
            self.level,
            human(self.line_bytes),
            self.indexing,
            self.write_policy
        )
    }
}

/// The memory-side caches under a node's sysfs directory `dir`, by level.
fn memory_side_caches(root: &SysRoot, dir: &str) -> Vec<MemorySideCache> {
    let base = format!("{dir}/memory_side_cache");
    let mut caches: Vec<MemorySideCache> = root
        .list(&base)
        .iter()
        .filter_map(|d| {
            let level = d.strip_prefix("index")?.parse().ok()?;
            let read = |f: &str| root.read_u64(&format!("{base}/{d}/{f}"));
            Some(MemorySideCache {
                level,
                size_bytes: read("size").filter(|&s| s > 0)?,
                line_bytes: read("line_size").unwrap_or(0),
                indexing: match read("indexing") {
                    Some(0) => "direct-mapped",
                    Some(_) => "complex",
                    None => "indexing unknown",
                }
                .into(),
                write_policy: match read("write_policy") {
                    Some(0) => "write-back",
                    Some(1) => "write-through",
                    Some(_) => "other",
                    None => "write policy unknown",
                }
                .into(),
            })
        })
        .collect();
    caches.sort_by_key(|c| c.level);
    caches
}

impl Node {
    /// A node with memory and no CPUs: CXL-attached memory, dax/kmem, or an emulated one.
    pub fn is_memory_only(&self) -> bool {
        self.cpus.is_empty() && self.mem_total_bytes > 0
    }
}

/// HMAT performance attributes of a memory target as seen from its local initiators.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hmat {
    /// Read latency in nanoseconds.
    pub read_latency_ns: Option<u64>,
    /// Write latency in nanoseconds.
    pub write_latency_ns: Option<u64>,
    /// Read bandwidth in MB/s.
    pub read_bandwidth_mb_s: Option<u64>,
    /// Write bandwidth in MB/s.
    pub write_bandwidth_mb_s: Option<u64>,
}

/// Every node listed in `/sys/devices/system/node/possible` that has a directory, ascending.
pub fn nodes(root: &SysRoot) -> Vec<Node> {
    let tiers = memory_tiers(root);
    let mut ids: Vec<u32> = root
        .list("sys/devices/system/node")
        .iter()
        .filter_map(|d| d.strip_prefix("node")?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids.into_iter()
        .map(|id| {
            let dir = format!("sys/devices/system/node/node{id}");
            let meminfo = root.read(&format!("{dir}/meminfo")).unwrap_or_default();
            let field = |name: &str| -> u64 {
                meminfo
                    .lines()
                    .find(|l| l.contains(&format!(" {name}:")))
                    .and_then(|l| l.split(':').nth(1))
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|n| n.parse::<u64>().ok())
                    .map(|kb| kb * 1024)
                    .unwrap_or(0)
            };
            let hmat_dir = format!("{dir}/access0/initiators");
            // The kernel creates these files for every node that has an initiator and writes
            // 0 where HMAT gave no figure (a dax/kmem node onlined after boot, as in the lab
            // guest's node 3): 0 ns and 0 MB/s mean "not provided", never a measurement.
            let hm = |f: &str| root.read_u64(&format!("{hmat_dir}/{f}")).filter(|&v| v > 0);
            let hmat = Hmat {
                read_latency_ns: hm("read_latency"),
                write_latency_ns: hm("write_latency"),
                read_bandwidth_mb_s: hm("read_bandwidth"),
                write_bandwidth_mb_s: hm("write_bandwidth"),
            };
            Node {
                id,
                cpus: root
                    .read(&format!("{dir}/cpulist"))
                    .and_then(|s| parse_list(&s).ok())
                    .unwrap_or_default(),
                mem_total_bytes: field("MemTotal"),
                mem_free_bytes: field("MemFree"),
                distances: root
                    .read(&format!("{dir}/distance"))
                    .map(|s| {
                        s.split_whitespace()
                            .filter_map(|d| d.parse().ok())
                            .collect()
                    })
                    .unwrap_or_default(),
                hmat: (hmat != Hmat::default()).then_some(hmat),
                memory_tier: tiers
                    .iter()
                    .find(|(_, nodes)| nodes.contains(&(id as usize)))
                    .map(|(t, _)| t.clone()),
                memory_side_caches: memory_side_caches(root, &dir),
            }
        })
        .collect()
}

fn memory_tiers(root: &SysRoot) -> Vec<(String, Vec<usize>)> {
    let base = "sys/devices/virtual/memory_tiering";
    root.list(base)
        .into_iter()
        .filter(|d| d.starts_with("memory_tier"))
        .filter_map(|d| {
            let list = root.read(&format!("{base}/{d}/nodelist"))?;
            Some((d, parse_list(&list).ok()?))
        })
        .collect()
}

const MPOL_BIND: libc::c_int = 2;
const MPOL_MF_STRICT: libc::c_uint = 1;
const MPOL_MF_MOVE: libc::c_uint = 2;

/// Binds `[ptr, ptr + len)` to `node` with `MPOL_BIND` (strict: pages already elsewhere are
/// moved or the call fails). Call it before the first touch so every page is allocated there.
///
/// # Safety
/// The range must be a mapping owned by the caller (page-aligned); the binding changes where
/// its future pages come from, and may move existing pages.
pub unsafe fn bind_to_node(ptr: *mut u8, len: usize, node: u32) -> io::Result<()> {
    let bits = 8 * std::mem::size_of::<libc::c_ulong>();
    let words = (node as usize / bits) + 1;
    let mut mask = vec![0 as libc::c_ulong; words];
    mask[node as usize / bits] |= 1 << (node as usize % bits);
    // SAFETY: forwarded to the caller's promise about the range; the mask is a live vector of
    // `words` words and maxnode counts its bits (+1, as the kernel's off-by-one requires).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            ptr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            (words * bits + 1) as libc::c_ulong,
            MPOL_MF_STRICT | MPOL_MF_MOVE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Where the pages of a range live.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PagePlacement {
    /// Pages found per node id.
    pub per_node: std::collections::BTreeMap<u32, u64>,
    /// Pages for which the kernel reported an error (not present, or not movable).
    pub unknown: u64,
    /// Whether only a sample of the pages was queried.
    pub sampled: bool,
}

/// Asks the kernel which node holds each page of `[ptr, ptr + len)`, stepping by `step`
/// bytes; at most `max_queries` pages are asked for (evenly spread) so that a terabyte
/// mapping costs no more than a megabyte one. Read-only: `move_pages` with `nodes = NULL`
/// moves nothing.
pub fn page_nodes(ptr: *const u8, len: usize, step: usize, max_queries: usize) -> PagePlacement {
    let step = step.max(4096);
    let total = len.div_ceil(step);
    let stride = total.div_ceil(max_queries.max(1)).max(1);
    let pages: Vec<*const libc::c_void> = (0..total)
        .step_by(stride)
        .map(|i| (ptr as usize + i * step) as *const libc::c_void)
        .collect();
    let mut status = vec![0 as libc::c_int; pages.len()];
    let mut out = PagePlacement {
        sampled: stride > 1,
        ..Default::default()
    };
    for (chunk_pages, chunk_status) in pages.chunks(4096).zip(status.chunks_mut(4096)) {
        // SAFETY: with nodes = NULL move_pages only reports; it reads `count` page addresses
        // and writes `count` status ints, both live slices of that length.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0,
                chunk_pages.len() as libc::c_ulong,
                chunk_pages.as_ptr(),
                std::ptr::null::<libc::c_int>(),
                chunk_status.as_mut_ptr(),
                0,
            )
        };
        if rc != 0 {
            out.unknown += chunk_pages.len() as u64;
            chunk_status.fill(-1);
        }
    }
    for s in status {
        if s >= 0 {
            *out.per_node.entry(s as u32).or_default() += 1;
        } else {
            out.unknown += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_has_node_zero_with_cpus() {
        let n = nodes(&SysRoot::at("/"));
        assert!(!n.is_empty());
        assert_eq!(n[0].id, 0);
        assert!(!n[0].cpus.is_empty());
        assert!(n[0].mem_total_bytes > 0);
        assert_eq!(n[0].distances.len(), n.len());
    }

    /// A fake `/sys/devices/system/node` with node 0 (CPUs, HMAT figures) and node 3
    /// (memory only, onlined by dax/kmem: HMAT files present but 0), as the lab guest
    /// shows them with `--kmem`.
    #[test]
    fn hmat_zero_means_no_figure() {
        let root = tempfile::tempdir().unwrap();
        let node = |id: u32, cpus: &str, hmat: (&str, &str)| {
            let dir = root
                .path()
                .join(format!("sys/devices/system/node/node{id}"));
            let ini = dir.join("access0/initiators");
            std::fs::create_dir_all(&ini).unwrap();
            std::fs::write(dir.join("cpulist"), cpus).unwrap();
            std::fs::write(
                dir.join("meminfo"),
                format!("Node {id} MemTotal:  917504 kB\nNode {id} MemFree:   917504 kB\n"),
            )
            .unwrap();
            std::fs::write(dir.join("distance"), "10 40\n").unwrap();
            for (f, v) in [
                ("read_latency", hmat.0),
                ("write_latency", hmat.0),
                ("read_bandwidth", hmat.1),
                ("write_bandwidth", hmat.1),
            ] {
                std::fs::write(ini.join(f), format!("{v}\n")).unwrap();
            }
        };
        node(0, "0\n", ("80", "20480"));
        node(3, "\n", ("0", "0"));
        let n = nodes(&SysRoot::at(root.path()));
        assert_eq!(n.len(), 2);
        assert_eq!(
            n[0].hmat,
            Some(Hmat {
                read_latency_ns: Some(80),
                write_latency_ns: Some(80),
                read_bandwidth_mb_s: Some(20480),
                write_bandwidth_mb_s: Some(20480),
            })
        );
        assert!(n[1].is_memory_only());
        assert_eq!(n[1].hmat, None, "0 ns / 0 MB/s is no HMAT figure");
    }

    /// Each `memory_side_cache/indexL` becomes one cache, by level, with the kernel's codes
    /// for indexing and write policy in words; a size of 0 is no cache.
    #[test]
    fn memory_side_caches_from_a_fake_tree() {
        let root = tempfile::tempdir().unwrap();
        let base = root
            .path()
            .join("sys/devices/system/node/node2/memory_side_cache");
        for (index, size, indexing, policy) in [
            ("index2", "1073741824", "1", "1"),
            ("index1", "67108864", "0", "0"),
            ("index3", "0", "0", "0"),
        ] {
            let d = base.join(index);
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [
                ("size", size),
                ("line_size", "64"),
                ("indexing", indexing),
                ("write_policy", policy),
            ] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        }
        let caches = memory_side_caches(&SysRoot::at(root.path()), "sys/devices/system/node/node2");
        assert_eq!(
            caches,
            [
                MemorySideCache {
                    level: 1,
                    size_bytes: 64 << 20,
                    line_bytes: 64,
                    indexing: "direct-mapped".into(),
                    write_policy: "write-back".into(),
                },
                MemorySideCache {
                    level: 2,
                    size_bytes: 1 << 30,
                    line_bytes: 64,
                    indexing: "complex".into(),
                    write_policy: "write-through".into(),
                },
            ]
        );
        assert_eq!(
            caches[0].describe(|b| format!("{b} B")),
            "67108864 B L1 memory-side cache (64 B lines, direct-mapped, write-back)"
        );
        let none = memory_side_caches(&SysRoot::at(root.path()), "sys/devices/system/node/node0");
        assert!(none.is_empty());
    }

    #[test]
    fn touched_pages_are_on_a_node() {
        let v = vec![5u8; 1 << 20];
        let p = page_nodes(v.as_ptr(), v.len(), 4096, 1 << 20);
        assert_eq!(p.per_node.values().sum::<u64>() + p.unknown, 256);
        assert!(p.per_node.contains_key(&0));
        assert!(!p.sampled);
        let s = page_nodes(v.as_ptr(), v.len(), 4096, 16);
        assert!(s.sampled);
        assert_eq!(s.per_node.values().sum::<u64>() + s.unknown, 16);
    }
}
