//! The `app` tables, drawn from records alone: where server and client ran, the points
//! (with the store and its evictions in a store-size sweep, the spread with --reps), the
//! targets side by side, and where each heap was. What a server did besides serving
//! (evicting, swapping) is in its points' warnings, which the output prints before.

use crate::render::precision::half_width;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{p, v};
use std::fmt::Write;

/// Throughput and latency per target and workload; with several targets, each one's
/// throughput beside the first's (the ratio); then where each server's heap was and, with
/// `--aof-on`, the file system of the append-only file. The run's environment warnings
/// (printed before the tables) are not repeated per target: they are the ones the `app-kv`
/// records carry, which hold the environment's findings and nothing of their target's.
pub fn render(records: &[Record]) -> String {
    let kv: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment == "app-kv")
        .collect();
    let environment: Vec<&str> = kv
        .first()
        .map(|r| r.warnings.iter().map(|w| w.code.as_str()).collect())
        .unwrap_or_default();
    let mut out = setup(&kv);
    out += &points(&kv);
    out += &side_by_side(&kv);
    let _ = writeln!(out, "\nheap placement (pmscope run):");
    for r in records.iter().filter(|r| r.experiment == "app-placement") {
        let achieved = r
            .target
            .as_ref()
            .map(|t| t.achieved.describe())
            .unwrap_or_else(|| "no verified placement".into());
        let store = r
            .count(p::STORE_BYTES)
            .map(|s| format!(" ({} store)", Bytes(s)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}{store}: {achieved}",
            r.text(p::TARGET).unwrap_or_default()
        );
        for w in r
            .warnings
            .iter()
            .filter(|w| !environment.contains(&w.code.as_str()))
        {
            let _ = writeln!(out, "    warning: {}", w.message);
        }
    }
    if let Some(r) = kv.iter().find(|r| r.text(p::AOF_DIRECTORY).is_some()) {
        let inode = match r.flag(p::INODE_DAX) {
            Some(true) => "DAX (no page cache)",
            Some(false) => "not DAX (page cache)",
            None => "unknown to statx",
        };
        let _ = writeln!(
            out,
            "\nappend-only file (fsync always) in {}: {} on {} ({}); its inode: {inode}",
            r.text(p::DIRECTORY).unwrap_or_default(),
            r.text(p::FS_TYPE).unwrap_or_default(),
            r.text(p::DEVICE).unwrap_or_default(),
            r.text(p::MOUNT_OPTIONS).unwrap_or_default(),
        );
    }
    out
}

/// Where server and client ran and how the client loaded: one line per distinct setup.
fn setup(kv: &[&Record]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for r in kv {
        let Some(server) = r.text(p::SERVER_CPUS) else {
            continue;
        };
        let line = format!(
            "server on CPU {server}, client on CPU {}{}: {} thread(s), {} connections{}",
            r.text(p::CLIENT_CPUS).unwrap_or_default(),
            if r.flag(p::CPUS_DISJOINT).unwrap_or_default() {
                ""
            } else {
                " (shared)"
            },
            r.count(p::CLIENT_THREADS).unwrap_or(1),
            r.count(p::CLIENTS).unwrap_or_default(),
            match r.summary.as_ref().map_or(1, |s| s.n) {
                1 => String::new(),
                n => format!(", {n} runs per point (kops/s: their median, ± its 95% interval)"),
            }
        );
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The store column's text: the size asked for and, when known, what the server held.
fn store(r: &Record) -> String {
    let Some(asked) = r.count(p::STORE_BYTES) else {
        return "-".into();
    };
    match r.val(v::STORED_BYTES) {
        Some(held) => format!("{} (held {})", Bytes(asked), Bytes(held as u64).human()),
        None => Bytes(asked).to_string(),
    }
}

/// A point's throughput, kops/s.
fn kops(r: &Record) -> f64 {
    r.summary.as_ref().map_or(f64::NAN, |x| x.p50) / 1e3
}

/// One row per point: target, workload, value size, throughput and latencies.
fn points(kv: &[&Record]) -> String {
    let mut out = String::new();
    let stores = kv.iter().any(|r| r.count(p::STORE_BYTES).is_some());
    let reps = kv
        .iter()
        .any(|r| r.summary.as_ref().is_some_and(|s| s.n > 1));
    let mut header = vec!["target", "workload", "value"];
    if stores {
        header.extend(["store", "evicted"]);
    }
    header.push("kops/s");
    if reps {
        header.push("95% ci");
    }
    header.extend(["mean µs", "p50 µs", "p99 µs"]);
    let mut t = Table::new(&header);
    for r in kv {
        let le = if r.flag(p::PERCENTILES_BUCKETED).unwrap_or_default() {
            "≤"
        } else {
            ""
        };
        let mut row = vec![
            r.text(p::TARGET).unwrap_or_default().into(),
            r.text(p::WORKLOAD).unwrap_or_default().into(),
            Bytes(r.count(p::VALUE_BYTES).unwrap_or_default()).to_string(),
        ];
        if stores {
            row.push(store(r));
            row.push(
                r.val(v::EVICTIONS)
                    .map_or("-".into(), |e| format!("{e:.0}")),
            );
        }
        row.push(format!("{:.1}", kops(r)));
        if reps {
            row.push(half_width(r));
        }
        row.extend([
            format!("{:.0}", r.val(v::MEAN_US).unwrap_or_default()),
            format!("{le}{:.0}", r.val(v::P50_US).unwrap_or_default()),
            format!("{le}{:.0}", r.val(v::P99_US).unwrap_or_default()),
        ]);
        t.row(row);
    }
    let _ = writeln!(out, "{}", t.render());
    if kv
        .iter()
        .any(|r| r.flag(p::PERCENTILES_BUCKETED).unwrap_or_default())
    {
        let _ = writeln!(
            out,
            "(≤: memaslap reports latencies in power-of-two buckets; the bucket's upper bound)"
        );
    }
    out
}

/// With several targets, a row per workload and value size holding each target's
/// throughput and its ratio to the first target's; empty with one target.
fn side_by_side(kv: &[&Record]) -> String {
    let mut targets: Vec<&str> = Vec::new();
    let mut points: Vec<(&str, u64, Option<u64>)> = Vec::new();
    for r in kv {
        if !targets.contains(&r.text(p::TARGET).unwrap_or_default()) {
            targets.push(r.text(p::TARGET).unwrap_or_default());
        }
        let p = (
            r.text(p::WORKLOAD).unwrap_or_default(),
            r.count(p::VALUE_BYTES).unwrap_or_default(),
            r.count(p::STORE_BYTES),
        );
        if !points.contains(&p) {
            points.push(p);
        }
    }
    if targets.len() < 2 {
        return String::new();
    }
    let mut out = format!(
        "\nside by side: kops/s, and ×: against the first target ({})\n",
        targets[0]
    );
    let stores = points.iter().any(|p| p.2.is_some());
    let mut header = vec!["workload", "value"];
    if stores {
        header.push("store");
    }
    header.extend(&targets);
    let mut t = Table::new(&header);
    for (workload, bytes, store) in points {
        let of = |target: &str| {
            kv.iter().find(|r| {
                r.text(p::TARGET).unwrap_or_default() == target
                    && r.text(p::WORKLOAD).unwrap_or_default() == workload
                    && r.count(p::VALUE_BYTES).unwrap_or_default() == bytes
                    && r.count(p::STORE_BYTES) == store
            })
        };
        let first = of(targets[0]).map(|r| kops(r));
        let mut row = vec![workload.to_string(), Bytes(bytes).to_string()];
        if stores {
            row.push(store.map_or("-".into(), |s| Bytes(s).to_string()));
        }
        for (i, target) in targets.iter().enumerate() {
            row.push(match (of(target).map(|r| kops(r)), first) {
                (Some(k), _) if i == 0 => format!("{k:.1}"),
                (Some(k), Some(f)) if f > 0.0 => format!("{k:.1} ×{:.2}", k / f),
                (Some(k), _) => format!("{k:.1}"),
                (None, _) => "-".into(),
            });
        }
        t.row(row);
    }
    let _ = writeln!(out, "{}", t.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::record::SystemSummary;
    use pmscope_core::summary::Summary;
    use pmscope_core::warning::Warning;

    fn kv(target: &str, workload: &str, kops: f64) -> Record {
        let mut r = Record::new("app-kv", Vec::new(), SystemSummary::default())
            .param(p::SERVER, "memcached")
            .param(p::TARGET, target)
            .param(p::WORKLOAD, workload)
            .param(p::VALUE_BYTES, 1024)
            .param(p::PERCENTILES_BUCKETED, false)
            .value(v::MEAN_US, 100.0)
            .value(v::P50_US, 90.0)
            .value(v::P99_US, 300.0);
        r.summary = Summary::of(&[kops * 1e3]);
        r
    }

    #[test]
    fn several_targets_are_set_side_by_side_against_the_first() {
        let recs = vec![
            kv("dram:4k", "get-heavy", 40.0),
            kv("dram:4k", "set-heavy", 20.0),
            kv("dram:thp", "get-heavy", 50.0),
            kv("shm", "get-heavy", 30.0),
        ];
        let out = render(&recs);
        let side = out
            .split("side by side")
            .nth(1)
            .expect("a side-by-side table");
        assert!(side.starts_with(": kops/s, and ×: against the first target (dram:4k)"));
        let header = side.lines().nth(1).unwrap();
        assert!(
            header.contains("dram:4k  dram:thp") && header.ends_with("shm"),
            "{header}"
        );
        let row = side.lines().find(|l| l.starts_with("get-heavy")).unwrap();
        assert!(
            row.contains(" 40.0 ") && row.contains("50.0 ×1.25") && row.ends_with("30.0 ×0.75"),
            "{row}"
        );
        // A point the other targets lack is shown as missing, not as a ratio.
        let row = side.lines().find(|l| l.starts_with("set-heavy")).unwrap();
        assert!(row.contains("20.0") && row.ends_with('-'), "{row}");
        // One target: nothing to compare.
        assert!(!render(&recs[..2]).contains("side by side"));
    }

    #[test]
    fn placement_lines_leave_out_the_environment_warnings_printed_before() {
        let warning = |code: &str, message: &str| Warning {
            code: code.into(),
            message: message.into(),
            remedy: String::new(),
        };
        let numa = warning("numa-balancing", "automatic NUMA balancing is on");
        let placement = |target: &str| {
            let mut r = Record::new("app-placement", Vec::new(), SystemSummary::default())
                .param(p::TARGET, target);
            r.warnings = vec![
                numa.clone(),
                warning("app-heap-not-placed", "its heap stayed in ordinary memory"),
            ];
            r
        };
        // The points carry the environment's findings (as every harness record does).
        let point = |target: &str| {
            let mut r = kv(target, "get-heavy", 40.0);
            r.warnings = vec![numa.clone()];
            r
        };
        let recs = vec![
            placement("dram:4k"),
            point("dram:4k"),
            placement("shm:4k"),
            point("shm:4k"),
        ];
        let out = render(&recs);
        assert_eq!(out.matches("NUMA balancing").count(), 0, "{out}");
        assert_eq!(
            out.matches("heap stayed in ordinary memory").count(),
            2,
            "{out}"
        );
        // Without points to tell the environment's findings, every warning shows.
        let out = render(&[placement("dram:4k"), placement("shm:4k")]);
        assert_eq!(out.matches("NUMA balancing").count(), 2, "{out}");
    }

    #[test]
    fn a_store_sweep_with_repetitions_shows_the_store_its_evictions_and_the_spread() {
        let point = |store: u64, held: f64, evicted: f64, runs: &[f64]| {
            let mut r = kv("dram:4k", "set-heavy", 0.0)
                .param(p::STORE_BYTES, store)
                .param(p::SERVER_CPUS, "0")
                .param(p::CLIENT_CPUS, "1")
                .param(p::CPUS_DISJOINT, true)
                .param(p::CLIENT_THREADS, 2)
                .param(p::CLIENTS, 24)
                .value(v::STORED_BYTES, held)
                .value(v::EVICTIONS, evicted);
            let ops: Vec<f64> = runs.iter().map(|k| k * 1e3).collect();
            r.summary = Summary::of(&ops);
            r.precision = pmscope_core::precision::Precision::of(&ops, None);
            r
        };
        let out = render(&[
            point(64 << 20, 60.0 * 1048576.0, 900.0, &[40.0, 41.0, 42.0]),
            point(1 << 30, 100.0 * 1048576.0, 0.0, &[50.0, 51.0, 52.0]),
        ]);
        assert!(
            out.starts_with(
                "server on CPU 0, client on CPU 1: 2 thread(s), 24 connections, 3 runs per point"
            ),
            "{out}"
        );
        let header = out.lines().nth(1).unwrap();
        assert!(
            header.contains("store") && header.contains("evicted") && header.contains("95% ci"),
            "{header}"
        );
        let row = out.lines().find(|l| l.contains("64MiB")).unwrap();
        assert!(
            row.contains("64MiB (held 60.0 MiB)") && row.contains(" 900 ") && row.contains("41.0"),
            "{row}"
        );
        assert!(
            out.lines().any(|l| l.contains("1GiB (held 100.0 MiB)")),
            "{out}"
        );
    }

    #[test]
    fn the_append_only_files_file_system_is_shown() {
        let r = kv("dram:4k", "mset", 5.0)
            .param(p::AOF_DIRECTORY, "/mnt/pmem/pmscope-app-1-0")
            .param(p::DIRECTORY, "/mnt/pmem")
            .param(p::FS_TYPE, "ext4")
            .param(p::DEVICE, "/dev/pmem0 (259:0)")
            .param(p::MOUNT_OPTIONS, "rw,relatime,dax=always")
            .param(p::INODE_DAX, true);
        let out = render(&[r]);
        assert!(
            out.contains(
                "append-only file (fsync always) in /mnt/pmem: ext4 on /dev/pmem0 (259:0) (rw,relatime,dax=always); its inode: DAX (no page cache)"
            ),
            "{out}"
        );
    }
}
