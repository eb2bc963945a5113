//! Hardware-gated end-to-end tests: the `pmscope` binary (and the persist strategies) on real
//! fsdax, devdax, memory-only and dax/kmem NUMA nodes.
//!
//! Each module is named for what its tests need and every test is `#[ignore]`d with that
//! reason, so `cargo test` elsewhere lists them as ignored, never as passed;
//! `lab/stage.sh` runs them inside the project's qemu lab guest (`lab/vm.sh`), where a
//! missing `LABVM_*` variable fails the test. The mapping-level tests are in
//! `crates/mapping/tests/hardware.rs`.
//!
//! In the guest the binary is not at the path Cargo compiled in, so `PMSCOPE_BIN` names it.

use serde_json::Value;
use std::process::{Command, Output};

/// The value of a variable the lab guest sets (`/etc/labvm/env`); missing is a failure.
fn lab(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: this test needs the lab guest (run by lab/stage.sh)")
    })
}

fn pmscope(args: &[&str]) -> Output {
    let bin =
        std::env::var_os("PMSCOPE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_pmscope").into());
    Command::new(bin)
        .env("PMSCOPE_RESULTS", test_store())
        .args(args)
        .output()
        .expect("run pmscope")
}

/// A results store of this test process's own, so no test writes into the user's store.
fn test_store() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "pmscope-test-{}/results.sqlite",
        std::process::id()
    ))
}

fn success(o: &Output) -> String {
    assert!(
        o.status.success(),
        "pmscope failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `pmscope verify --json` for one target: its record.
fn verify_json(args: &[&str]) -> Value {
    let mut all = vec!["verify", "--json"];
    all.extend_from_slice(args);
    let out = success(&pmscope(&all));
    serde_json::from_str(out.lines().next().expect("one record")).unwrap()
}

/// `pmscope info --json`: node `id`.
fn info_node(id: u64) -> Value {
    let v: Value = serde_json::from_str(&success(&pmscope(&["info", "--json"]))).unwrap();
    v["numa_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("pmscope info lists no node {id}"))
        .clone()
}

/// `pmscope info` (the human form): the line of node `id`.
fn info_node_line(id: u64) -> String {
    let human = success(&pmscope(&["info"]));
    human
        .lines()
        .find(|l| l.starts_with(&format!("numa node {id} ")))
        .unwrap_or_else(|| panic!("pmscope info lists no node {id}: {human}"))
        .to_string()
}

/// An HMAT figure as sysfs holds it (0 when HMAT gave none), as pmscope reports it.
fn sysfs_hmat(node: u64, file: &str) -> Value {
    let path = format!("/sys/devices/system/node/node{node}/access0/initiators/{file}");
    match std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
    {
        Some(v) if v > 0 => Value::from(v),
        _ => Value::Null,
    }
}

mod needs_fsdax {
    use super::*;
    use pmscope_mapping::{MapOptions, map};
    use pmscope_persist::{Persister, STRATEGIES};
    use pmscope_sys::cpu::CpuFeatures;

    #[test]
    #[ignore = "needs a real fsdax mount (LABVM_FSDAX_MNT): runs in the lab guest via lab/stage.sh"]
    fn verify_records_dax_map_sync_and_the_fault_evidence() {
        let mnt = lab("LABVM_FSDAX_MNT");
        let r = verify_json(&[
            "-t",
            &format!("file:{mnt}"),
            "--size",
            "64MiB",
            "--require-dax",
        ]);
        let a = &r["target"]["achieved"];
        assert_eq!(a["persistence"], "dax", "{a}");
        assert_eq!(a["map_sync"], true);
        assert_eq!(a["filesystem"], "ext4");
        assert_eq!(a["page_size"], 2 << 20);
        assert_eq!(a["page_size_source"], "faults");
        assert_eq!(a["pages"]["smaps_sees_mapping"], false);
        let faults = a["faults"]["minor_faults"].as_u64().unwrap();
        assert!((32..=34).contains(&faults), "{faults} faults for 64 MiB");
        // The guest's NVDIMM is QEMU's: DAX semantics, but emulated, and pmscope says so
        // (issue 11), with the region's persistence domain (QEMU declares none).
        let region = &a["pmem_region"];
        assert_eq!(region["origin"], "virtual-nfit", "{a}");
        assert_eq!(region["emulated"], true);
        assert!(region["region"].as_str().unwrap().starts_with("region"));
        assert_eq!(region["persistence_domain"], Value::Null);
        assert_eq!(region["interleave_ways"], 1);
        assert!(
            region["description"]
                .as_str()
                .unwrap()
                .contains("virtual NVDIMM (QEMU)"),
            "{region}"
        );
        assert!(
            r["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["code"] == "pmem-emulated"),
            "{r}"
        );
        let codes: Vec<&Value> = r["warnings"].as_array().unwrap().iter().collect();
        assert!(
            !codes
                .iter()
                .any(|w| w["code"] == "page-size-mismatch" || w["code"] == "not-dax"),
            "{codes:?}"
        );
        let left = std::fs::read_dir(&mnt)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("pmscope-")
            })
            .count();
        assert_eq!(left, 0, "pmscope removes its file from {mnt}");
    }

    #[test]
    #[ignore = "needs a real fsdax mount (LABVM_FSDAX_MNT) and a CPU with clwb and clflushopt: runs in the lab guest via lab/stage.sh"]
    fn every_persist_strategy_runs_on_a_map_sync_mapping() {
        let mnt = lab("LABVM_FSDAX_MNT");
        let opts = MapOptions {
            keep: true,
            ..MapOptions::host()
        };
        // An explicit name: the scratch file is unnamed while mapped and --keep links it
        // there at the end, so what the file holds can be read back afterwards.
        let path = std::path::PathBuf::from(format!("{mnt}/strategies-{}.bin", std::process::id()));
        let mut m = map(
            &format!("file:{}", path.display()).parse().unwrap(),
            4 << 20,
            &opts,
        )
        .unwrap();
        assert_eq!(m.achieved().map_sync, Some(true));
        assert!(!path.exists(), "unnamed while mapped");
        let f = CpuFeatures::detect();
        let region = 64 << 10;
        let mut expected = vec![0u8; m.len()];
        for (i, s) in STRATEGIES.into_iter().enumerate() {
            let p = Persister::new(s, &f).unwrap_or_else(|e| panic!("{s}: {e}"));
            // An unaligned range, so head, body and tail of copy_persist all run.
            let at = i * region + 13;
            let src: Vec<u8> = (0..region - 100)
                .map(|j| (j as u8).wrapping_mul(29) ^ (i as u8 + 1))
                .collect();
            let dst = &mut m.bytes_mut()[at..at + src.len()];
            p.copy_persist(dst, &src).unwrap();
            expected[at..at + src.len()].copy_from_slice(&src);
            // In-place stores persisted afterwards.
            m.bytes_mut()[at + 7] = 0xA5;
            p.persist(&m.bytes_mut()[at..at + 64]).unwrap();
            expected[at + 7] = 0xA5;
        }
        drop(m);
        // What the strategies wrote through the MAP_SYNC mapping is what the file holds.
        let on_disk = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(on_disk.len(), expected.len());
        assert!(
            on_disk == expected,
            "the file differs from what was persisted"
        );
    }

    /// `pmscope fs` records on ext4 -o dax, beside tmpfs (/tmp, page cache).
    fn fs_records(mnt: &str) -> Vec<Value> {
        let o = pmscope(&[
            "fs",
            "--json",
            "--no-store",
            "-t",
            &format!("file:{mnt}"),
            "-t",
            "file:/tmp",
            "--samples",
            "30",
        ]);
        success(&o)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    #[ignore = "needs a real fsdax mount (LABVM_FSDAX_MNT): runs in the lab guest via lab/stage.sh"]
    fn fs_records_the_dax_mount_the_dax_inode_and_map_sync() {
        let mnt = lab("LABVM_FSDAX_MNT");
        let rs = fs_records(&mnt);
        let of = |spec: &str| -> Vec<&Value> {
            rs.iter()
                .filter(|r| r["experiment"] == "fs-op" && r["target"]["spec"] == spec)
                .collect()
        };
        let dax = of(&format!("file:{mnt}"));
        let tmp = of("file:/tmp");
        assert_eq!((dax.len(), tmp.len()), (10, 10));
        for r in &dax {
            let p = &r["params"];
            assert_eq!(p["fs_type"], "ext4", "{p}");
            assert_eq!(p["dax"], "always", "{p}");
            assert_eq!(p["mount_point"], mnt.as_str());
            assert!(
                p["device"].as_str().unwrap().starts_with("/dev/pmem"),
                "{p}"
            );
            assert_eq!(p["inode_dax"], true, "statx: the files are DAX");
            assert_eq!(r["target"]["achieved"]["persistence"], "dax");
            assert_eq!(r["summary"]["n"], 30, "{r}");
        }
        for r in &tmp {
            let p = &r["params"];
            assert_eq!(p["fs_type"], "tmpfs", "{p}");
            assert_eq!(p["dax"], Value::Null);
            assert_ne!(p["inode_dax"], true);
            assert_ne!(r["target"]["achieved"]["persistence"], "dax");
        }
        let left: Vec<_> = std::fs::read_dir(&mnt)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("pmscope-"))
            .collect();
        assert!(left.is_empty(), "left in {mnt}: {left:?}");
    }

    const TRACING: &str = "/sys/kernel/tracing";

    /// Calls of each kernel function made by `pmscope fs` (and only by it: the function
    /// tracer follows this test's thread and the tasks it forks) on one target.
    fn kernel_calls(target: &str, functions: &[&str]) -> Vec<usize> {
        let w = |file: &str, v: &str| {
            std::fs::write(format!("{TRACING}/{file}"), v)
                .unwrap_or_else(|e| panic!("{TRACING}/{file}: {e}"))
        };
        w("tracing_on", "0");
        w("current_tracer", "nop");
        w("set_ftrace_filter", &functions.join(" "));
        w("options/function-fork", "1");
        // ftrace filters tasks (threads): this test's thread forks pmscope, and
        // function-fork follows pmscope's threads from there.
        let me = std::fs::read_link("/proc/thread-self").unwrap();
        let tid = me.file_name().unwrap().to_string_lossy().into_owned();
        w("set_ftrace_pid", &tid);
        w("trace", "");
        w("current_tracer", "function");
        w("tracing_on", "1");
        let o = pmscope(&[
            "fs",
            "--no-store",
            "-t",
            target,
            "--ops",
            "overwrite-4k,read-4k",
            "--fsync",
            "off",
            "--samples",
            "20",
        ]);
        w("tracing_on", "0");
        let trace = std::fs::read_to_string(format!("{TRACING}/trace")).unwrap();
        // Back to the kernel's defaults for the next test in this guest: tracing on, no
        // tracer, no pid or function filter (a write of nothing would clear nothing).
        w("current_tracer", "nop");
        w("set_ftrace_pid", "\n");
        w("set_ftrace_filter", "\n");
        w("options/function-fork", "0");
        w("tracing_on", "1");
        success(&o);
        functions
            .iter()
            .map(|f| {
                trace
                    .lines()
                    .filter(|l| l.contains(&format!(" {f} <-")))
                    .count()
            })
            .collect()
    }

    /// The code paths, as the kernel's function tracer sees them: on ext4 -o dax the
    /// writes and reads go through dax_iomap_rw and never through the page cache's
    /// generic_perform_write; on tmpfs the other way round.
    #[test]
    #[ignore = "needs a real fsdax mount (LABVM_FSDAX_MNT) and the function tracer: runs in the lab guest via lab/stage.sh"]
    fn fs_on_dax_goes_through_dax_iomap_rw_and_not_the_page_cache() {
        let mnt = lab("LABVM_FSDAX_MNT");
        let functions = ["dax_iomap_rw", "generic_perform_write"];
        // 20 timed + 10 untimed overwrites and reads each.
        let dax = kernel_calls(&format!("file:{mnt}"), &functions);
        assert!(dax[0] >= 60 && dax[1] == 0, "ext4 -o dax: {dax:?}");
        let tmp = kernel_calls("file:/tmp", &functions);
        assert!(tmp[0] == 0 && tmp[1] >= 30, "tmpfs: {tmp:?}");
    }
}

mod needs_legacy_pmem {
    use super::*;

    /// The memmap= region (e820) is listed as DRAM emulating pmem, beside the NFIT ones.
    #[test]
    #[ignore = "needs a memmap= (e820) pmem region (LABVM_LEGACY_PMEM): runs in the lab guest via lab/stage.sh"]
    fn info_tells_emulated_regions_from_nvdimms() {
        lab("LABVM_LEGACY_PMEM");
        let o = pmscope(&["info", "--json"]);
        let v: Value = serde_json::from_str(&success(&o)).unwrap();
        let regions = v["pmem_regions"].as_array().unwrap();
        let origins: Vec<&str> = regions
            .iter()
            .map(|r| r["origin"].as_str().unwrap())
            .collect();
        assert!(origins.contains(&"e820"), "{origins:?}");
        assert!(origins.contains(&"virtual-nfit"), "{origins:?}");
        let text = success(&pmscope(&["info"]));
        assert!(
            text.lines()
                .any(|l| l.starts_with("pmem region")
                    && l.contains("memmap= (e820 type 12): emulated")),
            "{text}"
        );
    }
}

mod needs_devdax {
    use super::*;

    #[test]
    #[ignore = "needs a devdax device (LABVM_DEVDAX): runs in the lab guest via lab/stage.sh"]
    fn verify_refuses_without_destroy_data_and_maps_2m_pages_with_it() {
        let dev = lab("LABVM_DEVDAX");
        let target = format!("devdax:{dev}");
        let o = pmscope(&["verify", "-t", &target, "--size", "64MiB"]);
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!(
                "pmscope: writing to {dev} destroys its contents; pass --destroy-data if that is what you want\n"
            )
        );
        let r = verify_json(&["-t", &target, "--size", "64MiB", "--destroy-data"]);
        let a = &r["target"]["achieved"];
        assert_eq!(a["persistence"], "dax", "{a}");
        assert_eq!(a["alignment"], 2 << 20);
        assert_eq!(a["page_size"], 2 << 20);
        assert_eq!(a["page_size_source"], "smaps+faults");
        assert_eq!(a["pages"]["bytes_2m"], 64 << 20);
        assert_eq!(a["pmem_region"]["origin"], "virtual-nfit", "{a}");
        assert_eq!(a["pmem_region"]["emulated"], true);
    }
}

mod needs_memonly_node {
    use super::*;

    /// The NUMA matrix has a cell from every CPU node to every memory node, the memory-only
    /// node included, each with its pages verified on the node it names. (Under TCG the
    /// guest's nodes are all host memory, so the cells' figures are not compared.)
    #[test]
    #[ignore = "needs a memory-only NUMA node and two CPU nodes (LABVM_MEMONLY_NODE): runs in the lab guest via lab/stage.sh"]
    fn numa_matrix_covers_every_cpu_node_and_the_memory_only_node() {
        let memonly: u64 = lab("LABVM_MEMONLY_NODE").parse().unwrap();
        let out = success(&pmscope(&[
            "numa",
            "--json",
            "--size",
            "16MiB",
            "--reps",
            "1",
            "--duration",
            "0.02",
        ]));
        let records: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let cells = |exp: &str| -> Vec<(u64, u64)> {
            records
                .iter()
                .filter(|r| r["experiment"] == exp)
                .map(|r| {
                    (
                        r["params"]["cpu_node"].as_u64().unwrap(),
                        r["params"]["memory_node"].as_u64().unwrap(),
                    )
                })
                .collect()
        };
        let lat = cells("numa-latency");
        let cpu_nodes: std::collections::BTreeSet<u64> = lat.iter().map(|c| c.0).collect();
        let mem_nodes: std::collections::BTreeSet<u64> = lat.iter().map(|c| c.1).collect();
        assert!(cpu_nodes.len() >= 2, "{lat:?}");
        assert!(
            mem_nodes.contains(&memonly) && !cpu_nodes.contains(&memonly),
            "{lat:?}"
        );
        assert_eq!(lat.len(), cpu_nodes.len() * mem_nodes.len());
        assert_eq!(cells("numa-bandwidth").len(), lat.len());
        for r in records.iter().filter(|r| r["experiment"] == "numa-latency") {
            let m = r["params"]["memory_node"].as_u64().unwrap();
            let nodes = r["target"]["achieved"]["nodes"].as_object().unwrap();
            assert_eq!(
                nodes.keys().collect::<Vec<_>>(),
                vec![&m.to_string()],
                "{r}"
            );
            assert!(r["summary"]["p50"].as_f64().unwrap() > 0.0);
        }
        // TCG runs every guest node on the same host memory, so the measured cells cannot
        // tell the tiers apart; the guest's firmware (ACPI HMAT) declares them, and the
        // matrix carries the declared figures: the memory-only node is the slower one.
        let declared = |node: u64| -> f64 {
            records
                .iter()
                .find(|r| r["experiment"] == "numa-latency" && r["params"]["memory_node"] == node)
                .and_then(|r| r["values"]["hmat_read_latency_ns"].as_f64())
                .unwrap_or_else(|| panic!("no HMAT latency recorded for node {node}"))
        };
        for &c in &cpu_nodes {
            assert!(declared(memonly) > declared(c), "{records:?}");
        }
        let bandwidth_declared = records.iter().any(|r| {
            r["experiment"] == "numa-bandwidth"
                && r["params"]["memory_node"] == memonly
                && r["values"]["hmat_read_bandwidth_mb_s"]
                    .as_f64()
                    .is_some_and(|v| v > 0.0)
        });
        assert!(bandwidth_declared, "{records:?}");
    }

    #[test]
    #[ignore = "needs a NUMA node with memory, no CPUs and HMAT figures (LABVM_MEMONLY_NODE): runs in the lab guest via lab/stage.sh"]
    fn info_lists_the_memory_only_node_with_its_hmat_figures() {
        let id: u64 = lab("LABVM_MEMONLY_NODE").parse().unwrap();
        let n = info_node(id);
        assert_eq!(n["memory_only"], true, "{n}");
        assert_eq!(n["cpus"], Value::Array(vec![]));
        assert!(n["mem_total_bytes"].as_u64().unwrap() > 0);
        // The figures pmscope reports are sysfs's, and the guest's HMAT does provide them.
        for (field, file) in [
            ("read_latency_ns", "read_latency"),
            ("write_latency_ns", "write_latency"),
            ("read_bandwidth_mb_s", "read_bandwidth"),
            ("write_bandwidth_mb_s", "write_bandwidth"),
        ] {
            let sys = sysfs_hmat(id, file);
            assert!(
                !sys.is_null(),
                "the guest's HMAT should give node {id} a {file}"
            );
            assert_eq!(n["hmat"][field], sys, "{field}");
        }
        let line = info_node_line(id);
        let want = format!(
            "HMAT read {} ns / {} MB/s",
            sysfs_hmat(id, "read_latency"),
            sysfs_hmat(id, "read_bandwidth")
        );
        assert!(
            line.contains("memory-only, CPUs []") && line.contains(&want),
            "{line}"
        );
    }

    /// The guest's HMAT declares a 64 MiB memory-side cache in front of the memory-only
    /// node (lab/vm.sh): `info` lists it as sysfs has it, and a working set within it
    /// carries the `memory-side-cache` warning while one beyond it does not.
    #[test]
    #[ignore = "needs a memory-only NUMA node behind a memory-side cache (LABVM_MEMONLY_NODE): runs in the lab guest via lab/stage.sh"]
    fn the_memory_side_cache_in_front_of_the_memory_only_node_is_listed_and_warned_about() {
        let id: u64 = lab("LABVM_MEMONLY_NODE").parse().unwrap();
        let sysfs = format!("/sys/devices/system/node/node{id}/memory_side_cache/index1/size");
        let size: u64 = std::fs::read_to_string(&sysfs)
            .unwrap_or_else(|e| panic!("{sysfs}: {e}: the guest's HMAT declares no cache"))
            .trim()
            .parse()
            .unwrap();
        assert_eq!(size, 64 << 20, "lab/vm.sh declares 64 MiB");
        let n = info_node(id);
        let cache = &n["memory_side_caches"][0];
        assert_eq!(cache["size_bytes"], size, "{n}");
        assert_eq!(cache["level"], 1, "{n}");
        assert_eq!(cache["line_bytes"], 64, "{n}");
        assert_eq!(cache["indexing"], "direct-mapped", "{n}");
        assert_eq!(cache["write_policy"], "write-back", "{n}");
        let human = success(&pmscope(&["info"]));
        assert!(
            human.contains(&format!(
                "64MiB L1 memory-side cache (64B lines, direct-mapped, write-back) in front of node {id}"
            )),
            "{human}"
        );
        let target = format!("dram,node={id}");
        let out = success(&pmscope(&[
            "latency",
            "--json",
            "-t",
            &target,
            "--sizes",
            "4MiB,128MiB",
            "--reps",
            "1",
            "--samples",
            "1000",
            "--precision",
            "0",
        ]));
        let mut seen = Vec::new();
        for r in out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
        {
            if r["experiment"] != "latency" {
                continue;
            }
            let ws = r["params"]["working_set_bytes"].as_u64().unwrap();
            let warned = r["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|w| w["code"] == "memory-side-cache");
            match warned {
                Some(w) => assert!(
                    ws <= size
                        && w["message"]
                            .as_str()
                            .unwrap()
                            .contains(&format!("fits node {id}'s 64MiB")),
                    "{r}"
                ),
                None => assert!(ws > size, "a {ws}-byte working set within the cache: {r}"),
            }
            seen.push(ws);
        }
        assert_eq!(seen, [4 << 20, 128 << 20], "{out}");
    }

    /// Nodes (from sysfs, not from pmscope) that have CPUs.
    fn sysfs_cpu_nodes() -> Vec<u64> {
        let mut ids: Vec<u64> = std::fs::read_dir("/sys/devices/system/node")
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                let id: u64 = name.strip_prefix("node")?.parse().ok()?;
                let cpus =
                    std::fs::read_to_string(format!("/sys/devices/system/node/node{id}/cpulist"))
                        .ok()?;
                (!cpus.trim().is_empty()).then_some(id)
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// `kmer count --partition nodes` on the guest's two CPU nodes: one sub-table per CPU
    /// node, each with every verified page on its own node, none for the memory-only
    /// node (and the output says so), and exactly the counts of one table; for the
    /// volatile table on dram and the static-pm table on shm (tmpfs honours the binding).
    #[test]
    #[ignore = "needs two CPU nodes and a memory-only NUMA node (LABVM_MEMONLY_NODE): runs in the lab guest via lab/stage.sh"]
    fn kmer_count_partitioned_by_node_places_each_sub_table_on_its_node() {
        let memonly: u64 = lab("LABVM_MEMONLY_NODE").parse().unwrap();
        let cpu_nodes = sysfs_cpu_nodes();
        assert!(cpu_nodes.len() >= 2, "{cpu_nodes:?}");
        assert!(!cpu_nodes.contains(&memonly));
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Three related genomes of 20 kbp (small: the guest runs under TCG).
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let base: Vec<u8> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b"ACGT"[(x >> 62) as usize]
            })
            .collect();
        let mut files = Vec::new();
        for g in 0..3usize {
            let mut seq = base.clone();
            for i in (g * 97..seq.len()).step_by(311 + g * 50) {
                seq[i] = b"ACGT"[(i + g) % 4];
            }
            let path = d.join(format!("g{g}.fa"));
            std::fs::write(&path, [b">g\n".as_slice(), seq.as_slice(), b"\n"].concat()).unwrap();
            files.push(path.display().to_string());
        }
        let threads = cpu_nodes.len().to_string();
        let run = |name: &str, extra: &[&str]| -> (String, Value, String) {
            let kmers = d.join(format!("{name}.tsv"));
            let record = d.join(format!("{name}.jsonl"));
            let mut args = vec![
                "kmer",
                "count",
                "-k",
                "31",
                "--sorted",
                "--threads",
                threads.as_str(),
            ];
            args.extend(files.iter().map(|f| f.as_str()));
            args.extend_from_slice(extra);
            let (k, r) = (kmers.display().to_string(), record.display().to_string());
            args.extend_from_slice(&["--kmers", k.as_str(), "-o", r.as_str()]);
            let human = success(&pmscope(&args));
            let rec: Value =
                serde_json::from_str(std::fs::read_to_string(&record).unwrap().trim()).unwrap();
            (std::fs::read_to_string(&kmers).unwrap(), rec, human)
        };
        let (truth, one, _) = run("one", &["-t", "dram:4k"]);
        assert_eq!(one["params"]["partition"], "none");
        for (name, extra) in [
            ("volatile", ["-t", "dram:4k", "--table", "volatile"]),
            ("static-pm", ["-t", "shm:4k", "--table", "static-pm"]),
        ] {
            let mut args = extra.to_vec();
            args.extend_from_slice(&["--partition", "nodes"]);
            let (counts, rec, human) = run(name, &args);
            assert_eq!(counts, truth, "{name}: counts differ from one table's");
            assert_eq!(rec["params"]["partition"], "nodes");
            let subs = rec["params"]["sub_tables"].as_array().unwrap();
            let nodes: Vec<u64> = subs.iter().map(|s| s["node"].as_u64().unwrap()).collect();
            assert_eq!(
                nodes, cpu_nodes,
                "{name}: one sub-table per CPU node: {rec}"
            );
            for s in subs {
                let node = s["node"].as_u64().unwrap();
                let pages = s["pages_by_node"].as_object().unwrap();
                assert_eq!(
                    pages.keys().collect::<Vec<_>>(),
                    vec![&node.to_string()],
                    "{name}: sub-table of node {node}: {s}"
                );
                assert_eq!(s["pages_on_node_fraction"], 1.0, "{s}");
                assert!(s["inserts"].as_u64().unwrap() > 0, "{s}");
                // Its workers run on its own node.
                for cpu in s["cpus"].as_array().unwrap() {
                    let list = std::fs::read_to_string(format!(
                        "/sys/devices/system/node/node{node}/cpulist"
                    ))
                    .unwrap();
                    let cpu = cpu.as_u64().unwrap() as usize;
                    assert!(
                        pmscope_core::cpulist::parse_list(list.trim())
                            .unwrap()
                            .contains(&cpu),
                        "{name}: CPU {cpu} is not on node {node}"
                    );
                }
            }
            let inserted: u64 = subs.iter().map(|s| s["inserts"].as_u64().unwrap()).sum();
            assert_eq!(inserted as f64, rec["values"]["inserts"].as_f64().unwrap());
            assert_eq!(
                rec["params"]["nodes_without_cpus"],
                serde_json::json!([memonly]),
                "{rec}"
            );
            let codes: Vec<&Value> = rec["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| &w["code"])
                .collect();
            assert!(
                !codes.contains(&&Value::from("sub-table-off-node"))
                    && !codes.contains(&&Value::from("node-mismatch")),
                "{rec}"
            );
            assert!(
                human.contains(&format!(
                    "partitioned by NUMA node: {} sub-tables",
                    cpu_nodes.len()
                )),
                "{human}"
            );
            assert!(
                human.contains(&format!(
                    "node {memonly} has memory but no CPUs: no sub-table"
                )),
                "{human}"
            );
        }
    }

    /// `kmer count --partition nodes` with one target per CPU node, both on the
    /// memory-only node (far memory, seed 003's remote placement): each sub-table's record
    /// names its own target, the node its memory was asked on and the node move_pages
    /// found it on (the memory-only one, every page), with its workers still on their own
    /// CPU node; the counts are one table's.
    #[test]
    #[ignore = "needs two CPU nodes and a memory-only NUMA node (LABVM_MEMONLY_NODE): runs in the lab guest via lab/stage.sh"]
    fn kmer_count_partitioned_onto_far_memory_one_target_per_node() {
        let memonly: u64 = lab("LABVM_MEMONLY_NODE").parse().unwrap();
        let cpu_nodes = sysfs_cpu_nodes();
        assert_eq!(cpu_nodes.len(), 2, "{cpu_nodes:?}");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let bases: Vec<u8> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b"ACGT"[(x >> 62) as usize]
            })
            .collect();
        let genome = d.join("g.fa");
        std::fs::write(&genome, [b">g\n".as_slice(), &bases, b"\n"].concat()).unwrap();
        let genome = genome.display().to_string();
        // Two distinct specs on one node: the same spec twice is refused as a repeat.
        let targets = [
            format!("dram:4k,node={memonly}"),
            format!("shm:4k,node={memonly}"),
        ];
        let run = |name: &str, extra: &[&str]| -> (String, Value) {
            let kmers = d.join(format!("{name}.tsv")).display().to_string();
            let record = d.join(format!("{name}.jsonl")).display().to_string();
            let mut args = vec![
                "kmer",
                "count",
                "-k",
                "31",
                "--sorted",
                "--threads",
                "2",
                genome.as_str(),
            ];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["--kmers", kmers.as_str(), "-o", record.as_str()]);
            success(&pmscope(&args));
            let rec: Value =
                serde_json::from_str(std::fs::read_to_string(&record).unwrap().trim()).unwrap();
            (std::fs::read_to_string(&kmers).unwrap(), rec)
        };
        let (truth, _) = run("one", &["-t", "dram:4k"]);
        let (counts, rec) = run(
            "far",
            &["--partition", "nodes", "-t", &targets[0], "-t", &targets[1]],
        );
        assert_eq!(counts, truth, "counts differ from one table's");
        let subs = rec["params"]["sub_tables"].as_array().unwrap();
        assert_eq!(subs.len(), 2, "{rec}");
        for ((s, node), target) in subs.iter().zip(&cpu_nodes).zip(&targets) {
            assert_eq!(s["node"].as_u64(), Some(*node), "{s}");
            assert_eq!(s["target"], target.as_str(), "{s}");
            assert_eq!(s["memory_node"].as_u64(), Some(memonly), "{s}");
            assert_eq!(s["achieved_node"].as_u64(), Some(memonly), "{s}");
            assert_eq!(s["pages_on_node_fraction"], 1.0, "{s}");
        }
        let codes: Vec<&Value> = rec["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| &w["code"])
            .collect();
        assert!(
            !codes.contains(&&Value::from("sub-table-off-node")),
            "{rec}"
        );
    }
}

mod needs_kmem_node {
    use super::*;

    /// `memory_tier22` -> 22. A larger id is a slower (lower) tier.
    fn tier(n: &Value) -> u64 {
        n["memory_tier"]
            .as_str()
            .and_then(|t| t.strip_prefix("memory_tier"))
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no memory tier: {n}"))
    }

    #[test]
    #[ignore = "needs a dax/kmem (CXL-like) node onlined from pmem (LABVM_KMEM_NODE, lab/vm.sh -l kmem): runs in the lab guest via lab/stage.sh"]
    fn info_lists_the_kmem_node_as_memory_only_in_a_lower_tier() {
        let id: u64 = lab("LABVM_KMEM_NODE").parse().unwrap();
        let n = info_node(id);
        assert_eq!(n["memory_only"], true, "{n}");
        assert!(n["mem_total_bytes"].as_u64().unwrap() > 0);
        assert!(tier(&n) > tier(&info_node(0)), "{n}");
        // HMAT described no such target at boot: sysfs reads 0, which is no figure.
        for (field, file) in [
            ("read_latency_ns", "read_latency"),
            ("read_bandwidth_mb_s", "read_bandwidth"),
        ] {
            let got = if n["hmat"].is_null() {
                Value::Null
            } else {
                n["hmat"][field].clone()
            };
            assert_eq!(got, sysfs_hmat(id, file), "{field}");
        }
        let line = info_node_line(id);
        assert!(line.contains("memory-only"), "{line}");
        assert!(!line.contains("HMAT read 0 ns"), "{line}");
    }
}

mod needs_cxl {
    use super::*;

    /// `cxl list` (ndctl's libcxl, not pmscope's reader) as JSON, `[]` when it lists nothing.
    fn cxl_list(args: &[&str]) -> Vec<Value> {
        let o = Command::new("cxl")
            .arg("list")
            .args(args)
            .output()
            .expect("cxl (ndctl) in the guest");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        if text.trim().is_empty() {
            return vec![];
        }
        match serde_json::from_str(&text).unwrap() {
            Value::Array(v) => v,
            one => vec![one],
        }
    }

    fn warning_codes(r: &Value) -> Vec<String> {
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["code"].as_str().unwrap().to_string())
            .collect()
    }

    /// `pmscope info` lists both memory devices and the region with the interleave libcxl
    /// reports, and what it became: one dax device onlined as the kmem node, one devdax.
    #[test]
    #[ignore = "needs a CXL region with a kmem node and a devdax device (LABVM_CXL_REGION, lab/vm.sh -l cxl): runs in the lab guest via lab/stage.sh"]
    fn info_lists_the_devices_the_region_and_its_node() {
        let node: u64 = lab("LABVM_CXL_NODE").parse().unwrap();
        let name = lab("LABVM_CXL_REGION");
        let devdax = lab("LABVM_CXL_DEVDAX");
        let v: Value = serde_json::from_str(&success(&pmscope(&["info", "--json"]))).unwrap();
        let cxl = &v["cxl"];

        let mut listed: Vec<String> = cxl_list(&["-M"])
            .iter()
            .map(|m| m["memdev"].as_str().unwrap().to_string())
            .collect();
        listed.sort();
        let memdevs = cxl["memdevs"].as_array().unwrap();
        let mut ours: Vec<String> = memdevs
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        ours.sort();
        assert_eq!(ours, listed);
        assert_eq!(ours.len(), 2, "{cxl}");
        for m in memdevs {
            let name = m["name"].as_str().unwrap();
            let serial =
                std::fs::read_to_string(format!("/sys/bus/cxl/devices/{name}/serial")).unwrap();
            assert_eq!(m["serial"], serial.trim(), "{m}");
            assert_eq!(m["pmem_bytes"], 512u64 << 20, "{m}");
            assert_eq!(m["ram_bytes"], 0, "{m}");
            assert!(m["host_bridge"].as_str().unwrap().starts_with("pci"), "{m}");
        }

        let regions = cxl["regions"].as_array().unwrap();
        assert_eq!(regions.len(), 1, "{cxl}");
        let r = &regions[0];
        assert_eq!(r["name"], name.as_str());
        let libcxl = &cxl_list(&["-R", "-r", &name])[0];
        assert_eq!(r["mode"], "pmem", "{r}");
        assert_eq!(r["size_bytes"], libcxl["size"], "{r} vs {libcxl}");
        assert_eq!(r["interleave_ways"], libcxl["interleave_ways"], "{libcxl}");
        assert_eq!(r["interleave_ways"], 2);
        assert_eq!(
            r["interleave_granularity"], libcxl["interleave_granularity"],
            "{libcxl}"
        );
        assert_eq!(r["committed"], true);
        // The devices libcxl finds below the region's root decoder are the region's.
        let decoder = r["root_decoder"].as_str().unwrap();
        let mut below: Vec<String> = cxl_list(&["-M", "-d", decoder])
            .iter()
            .map(|m| m["memdev"].as_str().unwrap().to_string())
            .collect();
        below.sort();
        let mut mine: Vec<String> = r["memdevs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_string())
            .collect();
        mine.sort();
        assert_eq!(mine, below, "{r}");
        assert_eq!(r["node"], node, "{r}");
        let dax = r["dax_devices"].as_array().unwrap();
        assert_eq!(dax.len(), 2, "{r}");
        let kmem = dax
            .iter()
            .find(|d| d["system_ram"] == true)
            .expect("a kmem dax device");
        assert_eq!(kmem["target_node"], node);
        let plain = dax
            .iter()
            .find(|d| d["system_ram"] == false)
            .expect("a devdax device");
        assert_eq!(format!("/dev/{}", plain["name"].as_str().unwrap()), devdax);

        // The nd region it became is a CXL pmem region, emulated by QEMU.
        let nd = r["nd_region"].as_str().unwrap();
        let pr = v["pmem_regions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == nd)
            .unwrap_or_else(|| panic!("no pmem region {nd}"));
        assert_eq!(pr["origin"], "virtual-cxl", "{pr}");

        let text = success(&pmscope(&["info"]));
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("cxl region    {name}:")))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"));
        assert!(line.contains("2-way interleaved at 256 B"), "{line}");
        assert!(line.contains("onlined as system RAM"), "{line}");
        assert!(line.contains(&format!("node {node}")), "{line}");
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("cxl device "))
                .count(),
            2,
            "{text}"
        );
        assert!(
            info_node_line(node).contains("memory-only"),
            "the kmem node is a CPU-less node"
        );
    }

    /// `-t dram,node=N` on the node the interleaved region became: every page there, and the
    /// record names the region, its devices and interleave, and says the device is emulated.
    #[test]
    #[ignore = "needs a CXL region onlined as a NUMA node (LABVM_CXL_NODE, lab/vm.sh -l cxl): runs in the lab guest via lab/stage.sh"]
    fn verify_on_the_cxl_node_records_the_region() {
        let node: u64 = lab("LABVM_CXL_NODE").parse().unwrap();
        let region = lab("LABVM_CXL_REGION");
        let r = verify_json(&["-t", &format!("dram,node={node}"), "--size", "16MiB"]);
        let a = &r["target"]["achieved"];
        assert_eq!(
            a["nodes"],
            serde_json::json!({ node.to_string(): (16u64 << 20) / 4096 }),
            "{a}"
        );
        let c = &a["cxl"];
        assert_eq!(c["region"], region.as_str(), "{a}");
        assert_eq!(c["node"], node);
        assert_eq!(c["system_ram"], true);
        assert_eq!(c["interleave_ways"], 2);
        assert_eq!(c["interleave_granularity"], 256);
        assert_eq!(c["memdevs"].as_array().unwrap().len(), 2);
        assert_eq!(c["serials"].as_array().unwrap().len(), 2);
        assert_eq!(c["emulated"], true);
        let codes = warning_codes(&r);
        assert!(codes.iter().any(|c| c == "cxl-emulated"), "{codes:?}");
        assert!(!codes.iter().any(|c| c == "node-mismatch"), "{codes:?}");
        // Memory of an ordinary node carries no CXL facts.
        let r0 = verify_json(&["-t", "dram,node=0", "--size", "16MiB"]);
        assert_eq!(r0["target"]["achieved"]["cxl"], Value::Null, "{r0}");
    }

    /// A devdax target on the region's other namespace: the pmem region is a CXL one, the
    /// record names the CXL region, and the emulation is said once (pmem-emulated). The
    /// memory holds what is written (a latency chase follows its pointers).
    #[test]
    #[ignore = "needs a devdax device on a CXL pmem region (LABVM_CXL_DEVDAX, lab/vm.sh -l cxl): runs in the lab guest via lab/stage.sh"]
    fn devdax_on_the_cxl_pmem_region_records_the_region() {
        let dev = lab("LABVM_CXL_DEVDAX");
        let region = lab("LABVM_CXL_REGION");
        let r = verify_json(&[
            "-t",
            &format!("devdax:{dev}"),
            "--size",
            "16MiB",
            "--destroy-data",
        ]);
        let a = &r["target"]["achieved"];
        assert_eq!(a["persistence"], "dax", "{a}");
        assert_eq!(a["pmem_region"]["origin"], "virtual-cxl", "{a}");
        assert_eq!(a["pmem_region"]["emulated"], true);
        let c = &a["cxl"];
        assert_eq!(c["region"], region.as_str(), "{a}");
        assert_eq!(c["interleave_ways"], 2);
        assert_eq!(c["memdevs"].as_array().unwrap().len(), 2);
        // Its pages are the device's own (ZONE_DEVICE), on no node move_pages can tell.
        assert_eq!(a["page_size"], 2 << 20, "{a}");
        let codes = warning_codes(&r);
        assert!(codes.iter().any(|c| c == "pmem-emulated"), "{codes:?}");
        assert!(!codes.iter().any(|c| c == "cxl-emulated"), "{codes:?}");
        let o = pmscope(&[
            "latency",
            "-t",
            &format!("devdax:{dev}"),
            "--sizes",
            "4KiB,1MiB",
            "--reps",
            "1",
            "--samples",
            "200",
            "--destroy-data",
        ]);
        success(&o);
    }
}
