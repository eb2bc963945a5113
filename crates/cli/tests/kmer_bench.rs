//! `pmscope kmer bench` end to end: the three tables count the same k-mers on one target,
//! each record says how its stores reach persistence and how often it grew, the insert
//! rate leaves growth out, and tx-pm on a non-DAX pool is flagged as flushing with msync.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn pmscope(dir: &Path, force_pmem: bool, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pmscope"));
    c.current_dir(dir)
        .env("PMSCOPE_RESULTS", dir.join("pmscope-test-results.sqlite"))
        .args(args);
    if force_pmem {
        c.env("PMEM_IS_PMEM_FORCE", "1");
    } else {
        c.env_remove("PMEM_IS_PMEM_FORCE");
    }
    c.output().expect("run pmscope")
}

/// Deterministic pseudo-random bases: practically every k-mer distinct.
fn random_bases(n: usize, mut x: u64) -> String {
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b"ACGT"[(x >> 33) as usize % 4] as char
        })
        .collect()
}

/// Two genomes, the second a copy of the first: the distinct k-mers are the first's, so
/// the volatile table is sized for them and must grow to make room for the second's
/// worst case (every k-mer new).
fn genomes() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let bases = random_bases(40_000, 11);
    for name in ["a", "b"] {
        std::fs::write(
            dir.path().join(format!("{name}.fa")),
            format!(">{name}\n{bases}\n"),
        )
        .unwrap();
    }
    dir
}

const BENCH: &[&str] = &[
    "kmer",
    "bench",
    "-t",
    "shm:4k",
    "--threads",
    "2",
    "-k",
    "21",
    "a.fa",
    "b.fa",
];

#[test]
fn three_tables_agree_and_each_record_says_how_it_persisted_and_grew() {
    let dir = genomes();
    let mut args = vec!["--json"];
    args.extend_from_slice(BENCH);
    let o = pmscope(dir.path(), false, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs: Vec<Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tables: Vec<&str> = recs
        .iter()
        .map(|r| r["params"]["table"].as_str().unwrap())
        .collect();
    assert_eq!(tables, ["volatile", "static-pm", "tx-pm"]);
    let value = |r: &Value, key: &str| r["values"][key].as_f64();
    let distinct: Vec<f64> = recs
        .iter()
        .map(|r| value(r, "union_kmers").unwrap())
        .collect();
    assert!(distinct[0] > 39_000.0, "{distinct:?}");
    assert!(distinct.iter().all(|d| *d == distinct[0]), "{distinct:?}");

    let (volatile, static_pm, tx_pm) = (&recs[0], &recs[1], &recs[2]);
    assert_eq!(value(volatile, "mips_vs_volatile"), Some(1.0));
    assert!(value(volatile, "table_grown").unwrap() >= 1.0);
    assert!(value(volatile, "grow_ms").unwrap() > 0.0);
    assert!(
        value(volatile, "insert_mips").unwrap()
            > value(volatile, "insert_mips_with_growth").unwrap()
    );
    assert_eq!(value(volatile, "flushes_per_insert"), Some(0.0));
    assert_eq!(volatile["params"]["persist_means"], "none");

    assert_eq!(value(static_pm, "table_grown"), Some(0.0));
    assert_eq!(value(static_pm, "grow_ms"), Some(0.0));
    assert_eq!(
        static_pm["params"]["persist_means"],
        static_pm["params"]["persist"]
    );
    let flushes = value(static_pm, "flushes_per_insert").unwrap();
    let fences = value(static_pm, "fences_per_insert").unwrap();
    assert!(flushes > 0.0 && flushes <= 1.5, "{flushes}");
    assert!(fences > 0.0 && fences < flushes, "{fences}");

    // libpmemobj's flushes are not counted: no figure rather than a guessed one.
    assert_eq!(value(tx_pm, "flushes_per_insert"), None);
    assert_eq!(
        tx_pm["params"]["flush_count"],
        "not counted (inside libpmemobj)"
    );
    assert_eq!(tx_pm["params"]["persist_means"], "libpmem: msync (not DAX)");
}

#[test]
fn the_table_flags_msync_on_a_non_dax_pool_unless_pmem_is_forced() {
    let dir = genomes();
    let plain = pmscope(dir.path(), false, BENCH);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let out = String::from_utf8(plain.stdout).unwrap();
    assert!(
        out.contains("tx-pm (PMDK-HT, libpmem: msync (not DAX))"),
        "{out}"
    );
    assert!(out.contains("set PMEM_IS_PMEM_FORCE=1"), "{out}");
    assert!(out.contains("growth (not in MIPS)"), "{out}");

    let forced = pmscope(dir.path(), true, BENCH);
    assert!(
        forced.status.success(),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    let out = String::from_utf8(forced.stdout).unwrap();
    assert!(
        out.contains("tx-pm (PMDK-HT, libpmem: CPU flushes (PMEM_IS_PMEM_FORCE=1))"),
        "{out}"
    );
    assert!(!out.contains("set PMEM_IS_PMEM_FORCE=1"), "{out}");
}

#[test]
fn two_targets_are_refused_in_one_sentence() {
    let dir = genomes();
    let o = pmscope(
        dir.path(),
        false,
        &[
            "kmer", "bench", "-t", "shm:4k", "-t", "dram:4k", "-k", "21", "a.fa",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("give it once"), "{err}");
}
