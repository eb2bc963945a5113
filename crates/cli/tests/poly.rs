//! `pmscope poly` end to end, for real at preset mini (every kernel runs in microseconds):
//! the Table 1 layout with two targets, records in the results store, checksums that agree,
//! perf counters reported as they are, and one-sentence refusals with exit code 2.

use pmscope_core::record::Record;
use std::path::Path;
use std::process::{Command, Output};

fn pmscope(store: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .env("PMSCOPE_RESULTS", store)
        .args(args)
        .output()
        .expect("run pmscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn records(o: &Output) -> Vec<Record> {
    text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a record ({e}): {l}")))
        .collect()
}

/// Whether perf_event gives this process the cache events, asked the same way poly asks.
fn counters_here() -> bool {
    pmscope_sys::perf::CacheMisses::open().is_ok()
}

#[test]
fn two_targets_print_table_1_and_store_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    let args = [
        "poly", "--preset", "mini", "-t", "dram:4k", "-t", "dram:thp",
    ];
    let o = pmscope(&store, &args);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let header = out
        .lines()
        .find(|l| l.starts_with("kernel"))
        .unwrap_or_else(|| panic!("no table: {out}"));
    for column in [
        "MiB",
        "dram:4k ref",
        "dram:4k opt",
        "ref/opt",
        "dram:thp ref",
        "dram:thp opt",
    ] {
        assert!(header.contains(column), "{column}: {header}");
    }
    // Every kernel has its row, in Table 1's order.
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("kernel"))
        .skip(1)
        .take(22)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let names: Vec<&str> = pmscope_workload::polybench::KERNELS
        .iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(rows, names);
    // The 4K-to-2M columns are there exactly when dram:thp verified 2 MiB pages.
    let thp_2m = out.contains("  dram:thp: 2m");
    assert_eq!(header.contains("dram 4K->2M ref"), thp_2m, "{out}");
    assert_eq!(
        out.contains("2M pages help most: ") || out.contains("2M pages made no kernel faster here"),
        thp_2m,
        "{out}"
    );
    assert_eq!(
        out.contains("no 4K-to-2M speed-up for dram"),
        !thp_2m,
        "{out}"
    );
    assert!(out.contains("  dram:4k: 4k"), "{out}");
    assert!(
        out.contains("checksums: every run of a kernel computed the same result"),
        "{out}"
    );
    assert_eq!(
        out.contains("dTLB and LLC misses: unavailable: "),
        !counters_here(),
        "{out}"
    );

    // The same run's records, from the store.
    let o = pmscope(
        &store,
        &["results", "export", "latest", "--format", "jsonl"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rs = records(&o);
    let poly: Vec<&Record> = rs.iter().filter(|r| r.experiment == "poly").collect();
    assert_eq!(poly.len(), 22 * 2 * 2);
    assert!(rs.iter().any(|r| r.experiment == "comparison"));
    for r in &poly {
        pmscope_core::vocab::check_record(r).unwrap();
        assert_eq!(r.metric.as_deref(), Some("time_s"));
        let s = r.summary.as_ref().unwrap();
        // At least --reps (3) are kept; more while the median's interval is wider than
        // --precision (3 %), up to the cap of max(10 x reps, 50).
        assert!((3..=50).contains(&s.n), "{} repetitions kept", s.n);
        let p = r
            .precision
            .as_ref()
            .expect("every poly point carries its interval");
        assert_eq!(p.n, s.n, "the interval is of the kept repetitions");
        assert!(p.low <= s.p50 && s.p50 <= p.high, "{p:?} around {}", s.p50);
        assert_eq!(p.target, Some(0.03));
        assert!(s.p50 > 0.0);
        assert_eq!(r.threads.len(), 1, "single-threaded");
        assert!(r.values["checksum"].is_finite());
        assert!(!r.warnings.iter().any(|w| w.code == "checksum-mismatch"));
        let counters = r.params["perf_counters"].as_str().unwrap();
        if counters_here() {
            assert_eq!(counters, "available");
            assert!(r.values.contains_key("dtlb_load_misses"));
            assert!(r.values.contains_key("llc_load_misses"));
        } else {
            assert!(counters.starts_with("unavailable: "), "{counters}");
            assert!(!r.values.contains_key("dtlb_load_misses"));
            assert!(!r.values.contains_key("llc_load_misses"));
        }
    }
    // The header gives the range of repetitions kept.
    let kept: Vec<usize> = poly.iter().map(|r| r.summary.as_ref().unwrap().n).collect();
    let (lo, hi) = (*kept.iter().min().unwrap(), *kept.iter().max().unwrap());
    let runs = if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    };
    // In blocks (5 by default), the figure is their medians' geometric mean.
    let blocks = poly[0].blocks.len();
    let said = if blocks > 1 {
        format!("the geometric mean of {blocks} blocks' medians, {runs} run(s) in all")
    } else {
        format!("median of {runs} run(s)")
    };
    assert!(out.contains(&said), "{said}: {out}");
    // ref and opt of a kernel computed the same thing on both targets.
    for k in pmscope_workload::polybench::KERNELS {
        let sums: Vec<f64> = poly
            .iter()
            .filter(|r| r.params["kernel"] == k.name)
            .map(|r| r.values["checksum"])
            .collect();
        assert_eq!(sums.len(), 4, "{}", k.name);
        for s in &sums {
            assert!(
                (s - sums[0]).abs() <= 1e-9 * sums[0].abs(),
                "{}: {sums:?}",
                k.name
            );
        }
    }
}

#[test]
fn one_target_prints_a_row_per_kernel_and_variant() {
    let dir = tempfile::tempdir().unwrap();
    let o = pmscope(
        &dir.path().join("r.sqlite"),
        &[
            "--precision",
            "0",
            "poly",
            "--preset",
            "small",
            "--kernels",
            "jacobi-2d,gemm",
            "--variants",
            "opt",
            "--repetitions",
            "2",
        ],
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.starts_with("kernel"))
        .skip(1)
        .take_while(|l| !l.starts_with("spread of") && !l.starts_with("pages verified"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!((rows[0][0], rows[0][2]), ("jacobi-2d", "opt"));
    assert_eq!((rows[1][0], rows[1][2]), ("gemm", "opt"));
    for r in &rows {
        assert_eq!(r[5], "4k", "{out}");
        if !counters_here() {
            assert_eq!(&r[6..], ["unavailable", "unavailable"], "{out}");
        }
    }
    // Two repetitions over the default 5 blocks: one in each block, 5 in all.
    assert!(
        out.contains("the geometric mean of 5 blocks' medians, 5 run(s) in all"),
        "{out}"
    );
    assert!(
        out.contains("spread of the repetitions (cv): median "),
        "{out}"
    );
}

#[test]
fn bad_input_is_one_sentence_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.sqlite");
    for (args, message) in [
        (
            &["poly", "--preset", "huge"][..],
            "pmscope: --preset huge: unknown preset `huge`; use one of mini, small, medium, large, seed\n",
        ),
        (
            &["poly", "--kernels", "gemm,jacobi-3d"][..],
            "pmscope: --kernels jacobi-3d: unknown kernel `jacobi-3d`; use any of gemm, 3mm, 2mm, correlation, covariance, mvt, gemver, jacobi-1d, doitgen, gramschmidt, fdtd-2d, syrk, jacobi-2d, syr2k, symm, dynprog, durbin, seidel-2d, trisolv, cholesky, lu, reg_detect\n",
        ),
        (
            &["poly", "--variants", "ref,fast"][..],
            "pmscope: --variants fast: unknown variant `fast`; use ref or opt\n",
        ),
        // The seed's sizes need 1.7 GiB for gemver: refused with the figures, nothing mapped.
        (
            &["poly", "--preset", "seed", "--max-mem", "64MiB"][..],
            "pmscope: --preset seed (the arrays of gemver on dram:4k) needs 1.7 GiB but --max-mem allows 64.0 MiB; use a smaller preset or raise --max-mem\n",
        ),
        (
            &[
                "poly",
                "--preset",
                "medium",
                "--kernels",
                "gemm",
                "--max-mem",
                "4MiB",
                "-t",
                "shm",
            ][..],
            "pmscope: --preset medium (the arrays of gemm on shm:4k) needs 8.2 MiB but --max-mem allows 4.0 MiB; use a smaller preset or raise --max-mem\n",
        ),
    ] {
        let o = pmscope(&store, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert_eq!(text(&o.stderr), message, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}
