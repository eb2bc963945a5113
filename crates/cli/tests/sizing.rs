//! Defaults sized to the machine, end to end: under a fake /sys and /proc
//! (`PMSCOPE_SYSROOT`) whose L3 is 480 MiB, the size options left at `auto` measure 4x the
//! cache, a cap (`--max-mem`, little memory) says so in every record and once on stderr,
//! and a size the user gives is never changed. The null executor measures nothing, so only
//! the mapping costs time.

use pmscope_core::record::Record;
use std::process::{Command, Output};

const MIB: u64 = 1 << 20;

/// A fake tree: CPU 0's caches with an L3 of `l3_kib` KiB, and `available` bytes of
/// MemAvailable.
fn fake_root(l3_kib: u64, available: u64) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let w = |rel: &str, v: String| {
        let p = t.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v).unwrap();
    };
    for (i, level, kind, kib) in [
        (0, 1, "Data", 48),
        (1, 1, "Instruction", 32),
        (2, 2, "Unified", 2048),
        (3, 3, "Unified", l3_kib),
    ] {
        let dir = format!("sys/devices/system/cpu/cpu0/cache/index{i}");
        w(&format!("{dir}/level"), format!("{level}\n"));
        w(&format!("{dir}/type"), format!("{kind}\n"));
        w(&format!("{dir}/size"), format!("{kib}K\n"));
    }
    w(
        "proc/meminfo",
        format!(
            "MemTotal:       {} kB\nMemAvailable:   {} kB\n",
            2 * available / 1024,
            available / 1024
        ),
    );
    t
}

/// pmscope under the fake tree, with the null executor and a results store of its own.
fn pmscope(root: &tempfile::TempDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .env("PMSCOPE_SYSROOT", root.path())
        .env("PMSCOPE_RESULTS", root.path().join("results.sqlite"))
        .args(["--null-executor", "--no-store"])
        .args(args)
        .output()
        .expect("run pmscope")
}

fn records(o: &Output, experiment: &str) -> Vec<Record> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Record>(l).unwrap())
        .filter(|r| r.experiment == experiment)
        .collect()
}

fn param_u64(r: &Record, k: &str) -> u64 {
    r.params[k]
        .as_u64()
        .unwrap_or_else(|| panic!("{k} in {:?}", r.params))
}

fn has_note(r: &Record) -> bool {
    r.warnings.iter().any(|w| w.code == "size-capped")
}

/// The machine: 480 MiB of L3 and plenty of memory. quick maps 4x the cache
/// (1920 MiB) per target, and its records say it was the default's choice.
#[test]
fn quick_measures_four_times_a_480_mib_cache() {
    let root = fake_root(480 << 10, 16 << 30);
    let o = pmscope(&root, &["--json", "quick", "-t", "dram:thp"]);
    let quick = records(&o, "quick");
    assert_eq!(quick.len(), 2);
    for r in &quick {
        assert!(
            param_u64(r, "working_set_bytes") >= 1920 * MIB,
            "{:?}",
            r.params
        );
        assert_eq!(param_u64(r, "working_set_bytes"), 1920 * MIB);
        assert_eq!(r.params["size_source"], "auto");
        assert!(!has_note(r));
        assert!(!r.warnings.iter().any(|w| w.code == "fits-in-llc"));
    }
}

/// `--max-mem` below 4x the cache: the default shrinks to fit, and every record carries
/// the note naming the cap; the table prints it once.
#[test]
fn a_capped_default_says_what_capped_it() {
    let root = fake_root(480 << 10, 16 << 30);
    let args = ["quick", "-t", "dram:4k", "--max-mem", "256MiB"];
    let o = pmscope(&root, &[&["--json"][..], &args].concat());
    let quick = records(&o, "quick");
    assert_eq!(quick.len(), 2);
    for r in &quick {
        let ws = param_u64(r, "working_set_bytes");
        assert!((128 * MIB..256 * MIB).contains(&ws), "{ws}");
        assert_eq!(r.params["size_source"], "auto");
        let w = r.warnings.iter().find(|w| w.code == "size-capped").unwrap();
        assert!(
            w.message.starts_with("the default --size was capped at ")
                && w.message.contains("by --max-mem 256.0 MiB")
                && w.message.contains(
                    "below the 1.9 GiB the rule asks for (4x the 480.0 MiB last-level cache)"
                ),
            "{}",
            w.message
        );
    }
    let o = pmscope(&root, &args);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.matches("the default --size was capped at").count(),
        1,
        "{err}"
    );
}

/// A size the user gives is measured as given, under any cache and cap.
#[test]
fn explicit_sizes_are_never_changed() {
    let root = fake_root(480 << 10, 16 << 30);
    let o = pmscope(
        &root,
        &["--json", "quick", "-t", "dram:4k", "--size", "8MiB"],
    );
    for r in records(&o, "quick") {
        assert_eq!(param_u64(&r, "working_set_bytes"), 8 * MIB);
        assert_eq!(r.params["size_source"], "explicit");
        assert!(!has_note(&r));
    }
    let o = pmscope(
        &root,
        &[
            "--json",
            "latency",
            "--sizes",
            "64KiB,1MiB",
            "--samples",
            "0",
            "--max-mem",
            "256MiB",
        ],
    );
    let sizes: Vec<u64> = records(&o, "latency")
        .iter()
        .map(|r| {
            assert_eq!(r.params["size_source"], "explicit");
            assert!(!has_note(r));
            param_u64(r, "working_set_bytes")
        })
        .collect();
    assert_eq!(sizes, [64 << 10, MIB]);
}

/// `auto` in a latency sweep is the sized end, capped here, and the sweep ends there.
#[test]
fn the_latency_sweep_ends_at_the_auto_end() {
    let root = fake_root(480 << 10, 16 << 30);
    let o = pmscope(
        &root,
        &[
            "--json",
            "latency",
            "--sizes",
            "1MiB,auto",
            "--samples",
            "0",
            "--max-mem",
            "256MiB",
        ],
    );
    let lat = records(&o, "latency");
    let sizes: Vec<u64> = lat
        .iter()
        .map(|r| param_u64(r, "working_set_bytes"))
        .collect();
    assert_eq!(sizes.len(), 2);
    assert_eq!(sizes[0], MIB);
    assert!((128 * MIB..256 * MIB).contains(&sizes[1]), "{sizes:?}");
    assert!(
        lat.iter()
            .all(|r| r.params["size_source"] == "auto" && has_note(r))
    );
}
