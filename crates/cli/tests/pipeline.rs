//! Every measuring command run to completion with the null executor (synthetic samples,
//! real mappings): the plan → harness → records → rendering pipeline on any machine. Each
//! record is held to its experiment's declaration in `core::vocab`; the findings that matter
//! most (mixed page sizes, persisting on the page cache) are inside the records under
//! `--json` and `-o`; and the same failure exits with the same code in every command.

use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};
use std::process::{Command, Output};

fn pmscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .env("PMSCOPE_RESULTS", test_store())
        .args(args)
        .output()
        .expect("run pmscope")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Each measuring command with small sizes, as a user would run it.
const COMMANDS: &[(&str, &[&str])] = &[
    ("verify", &["--size", "4MiB"]),
    ("quick", &["--size", "8MiB"]),
    (
        "probe",
        &["read-buffer", "--sizes", "1KiB..64KiB", "--count", "200"],
    ),
    (
        "probe",
        &["chase-write", "--sizes", "1KiB..64KiB", "--count", "200"],
    ),
    ("poly", &["--preset", "mini", "--kernels", "gemm,jacobi-2d"]),
    ("suite", &["basic"]),
    ("suite", &["table5"]),
    (
        "latency",
        &["--sizes", "64KiB,1MiB", "--samples", "500", "--mlp", "1,4"],
    ),
    (
        "inst",
        &["--sizes", "8,64", "--count", "100", "--region", "1MiB"],
    ),
    ("sync", &["--region", "4MiB"]),
    (
        "rap",
        &[
            "--distances",
            "0,1,8",
            "--samples",
            "100",
            "--region",
            "1MiB",
        ],
    ),
    (
        "bandwidth",
        &[
            "--sizes",
            "64,4KiB",
            "--threads",
            "1",
            "--region",
            "4MiB",
            "--mix",
            "2:1",
        ],
    ),
    (
        "loaded",
        &[
            "--delays",
            "0,500",
            "--samples",
            "100",
            "--probe-region",
            "1MiB",
            "--traffic-region",
            "4MiB",
        ],
    ),
];

/// Loaded-latency traffic of every op, in both orders (seed 004 Figure 14): each run
/// completes and its records say what the traffic was.
#[test]
fn loaded_traffic_of_every_op_and_pattern() {
    for (op, rw, written) in [
        (None, None, "read"),
        (Some("read"), None, "read"),
        (Some("read-ahead"), None, "read-ahead"),
        (Some("write"), Some("2:1"), "write"),
        (Some("ntstore"), None, "ntstore"),
        (Some("store+clwb"), Some("1:1"), "store+clwb"),
        (Some("store+clwb+sfence"), None, "store+clwb"),
    ] {
        for pattern in ["seq", "rand"] {
            let mut a = vec![
                "--null-executor",
                "--json",
                "loaded",
                "-t",
                "dram:4k",
                "--delays",
                "0,500",
                "--samples",
                "100",
                "--probe-region",
                "1MiB",
                "--traffic-region",
                "4MiB",
                "--traffic-pattern",
                pattern,
            ];
            if let Some(op) = op {
                a.extend(["--traffic-op", op]);
            }
            if let Some(rw) = rw {
                a.extend(["--rw", rw]);
            }
            let o = pmscope(&a);
            if written == "store+clwb"
                && !std::fs::read_to_string("/proc/cpuinfo")
                    .unwrap()
                    .contains(" clwb")
            {
                assert_eq!(o.status.code(), Some(2), "{a:?}: {}", stderr(&o));
                continue;
            }
            assert!(o.status.success(), "{a:?}: {}", stderr(&o));
            let rs = records(&o);
            check_all("loaded", &rs, "dram:4k");
            let want_rw = rw.unwrap_or(if written.starts_with("read") {
                "1:0"
            } else {
                "0:1"
            });
            assert_eq!(rs.len(), 3, "idle and two delays");
            for r in &rs {
                assert_eq!(r.params["traffic_op"], written, "{a:?}");
                assert_eq!(r.params["traffic_pattern"], pattern, "{a:?}");
                assert_eq!(r.params["traffic_rw"], want_rw, "{a:?}");
            }
            // The table names the traffic.
            let human: Vec<&str> = a.iter().copied().filter(|x| *x != "--json").collect();
            let o = pmscope(&human);
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success() && text.contains("traffic "), "{text}");
            assert_eq!(
                text.contains("in random order"),
                pattern == "rand",
                "{text}"
            );
            assert_eq!(
                text.contains("traffic read-ahead reads"),
                written == "read-ahead",
                "{text}"
            );
        }
    }
    for (args, msg) in [
        (
            &["--traffic-op", "load+mfence"][..],
            "pmscope: --traffic-op load+mfence: use read, read-ahead, write, stosb-write, ntstore",
        ),
        (
            &["--traffic-op", "read", "--rw", "1:1"][..],
            "pmscope: --rw 1:1 asks for writes but --traffic-op read writes nothing",
        ),
        (
            &["--traffic-op", "read-ahead", "--rw", "2:1"][..],
            "pmscope: --rw 2:1 asks for writes but --traffic-op read-ahead writes nothing",
        ),
        // A word outside a closed set: one sentence naming the choices (exit 2).
        (
            &["--traffic-pattern", "random"][..],
            "pmscope: --traffic-pattern random: not one of its values: use seq, rand",
        ),
    ] {
        let mut a = vec!["--null-executor", "loaded", "-t", "dram:4k"];
        a.extend_from_slice(args);
        let o = pmscope(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).starts_with(msg), "{args:?}: {}", stderr(&o));
    }
}

fn records(o: &Output) -> Vec<Record> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a record ({e}): {l}")))
        .collect()
}

#[test]
fn every_measuring_command_runs_to_completion_with_the_null_executor() {
    for (cmd, args) in COMMANDS {
        let mut a = vec!["--null-executor", "--json", cmd, "-t", "dram:4k"];
        a.extend_from_slice(args);
        let o = pmscope(&a);
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
        check_all(cmd, &records(&o), "dram:4k");
        // The human rendering of the same run works from the records.
        let mut a = vec!["--null-executor", cmd, "-t", "dram:4k"];
        a.extend_from_slice(args);
        let o = pmscope(&a);
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
        assert!(!o.stdout.is_empty(), "{cmd}: printed nothing");
    }
    // numa makes its own targets: one per memory node, here node 0.
    let o = pmscope(&["--null-executor", "--json", "numa", "--size", "4MiB"]);
    assert!(o.status.success(), "numa: {}", stderr(&o));
    let rs = records(&o);
    check_all("numa", &rs, "dram:4k,node=0");
    assert!(rs.iter().any(|r| r.experiment == "numa-latency"));
    assert!(rs.iter().any(|r| r.experiment == "numa-bandwidth"));
    let o = pmscope(&["--null-executor", "numa", "--size", "4MiB"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("CPU node \\ memory node"));
}

/// Over several --threads, `bandwidth` says per access size which thread count gave the
/// highest median (a `bandwidth-best` record and a table line), as seed 004 Figure 11
/// picks each curve's best count; over one thread count, or with a mix, it says nothing.
#[test]
fn bandwidth_names_the_best_thread_count_per_access_size() {
    let args = [
        "--null-executor",
        "--json",
        "bandwidth",
        "-t",
        "dram:4k",
        "--ops",
        "read",
        "--pattern",
        "seq",
        "--sizes",
        "64,4KiB",
        "--threads",
        "1,2",
        "--region",
        "4MiB",
    ];
    let o = pmscope(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = records(&o);
    let best: Vec<&Record> = rs
        .iter()
        .filter(|r| r.experiment == "bandwidth-best")
        .collect();
    assert_eq!(best.len(), 2, "one per access size");
    for b in &best {
        pmscope_core::vocab::check_record(b).unwrap();
        let access = b.count(p::ACCESS_BYTES).unwrap();
        let points: Vec<&Record> = rs
            .iter()
            .filter(|r| r.experiment == "bandwidth" && r.count(p::ACCESS_BYTES) == Some(access))
            .collect();
        let top = points
            .iter()
            .max_by(|a, b| {
                a.summary
                    .as_ref()
                    .unwrap()
                    .p50
                    .total_cmp(&b.summary.as_ref().unwrap().p50)
            })
            .unwrap();
        assert_eq!(b.count(p::BEST_THREADS), top.count(p::THREADS), "{access}");
        assert_eq!(b.val(v::BEST_GB_S), Some(top.summary.as_ref().unwrap().p50));
        assert_eq!(b.params["threads_tried"], serde_json::json!([1, 2]));
        assert!(b.count(p::RUNNER_UP_THREADS).is_some() && b.flag(p::BEST_CLEAR).is_some());
    }
    let human: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
    let o = pmscope(&human);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = text
        .split("best thread count per access size")
        .nth(1)
        .unwrap_or_else(|| panic!("no best-thread table: {text}"));
    let row = table
        .lines()
        .find(|l| l.contains(" 4KiB "))
        .unwrap_or_else(|| panic!("{table}"));
    let expected = best[1].count(p::BEST_THREADS).unwrap().to_string();
    assert!(row.contains(&format!(" {expected} ")), "{row}");

    // One thread count: nothing to choose.
    let mut one: Vec<&str> = args.to_vec();
    *one.iter_mut().find(|a| **a == "1,2").unwrap() = "2";
    let rs = records(&pmscope(&one));
    assert!(!rs.iter().any(|r| r.experiment == "bandwidth-best"));
}

fn check_all(cmd: &str, rs: &[Record], spec: &str) {
    {
        assert!(!rs.is_empty(), "{cmd}: no records");
        for r in rs {
            pmscope_core::vocab::check_record(r).unwrap_or_else(|e| panic!("{cmd}: {e}"));
            assert_eq!(r.schema_version, pmscope_core::record::SCHEMA_VERSION);
            assert_eq!(r.params["executor"], "null", "{cmd}");
            assert!(
                r.warnings.iter().any(|w| w.code == "synthetic-samples"),
                "{cmd}"
            );
            assert_eq!(
                r.target.as_ref().map(|t| t.spec.as_str()),
                Some(spec),
                "{cmd}"
            );
            if r.summary.is_some() {
                assert!(
                    !r.threads.is_empty(),
                    "{cmd}: a measured point without its threads"
                );
            }
            assert!(r.system.timer.is_some(), "{cmd}: no timer in the record");
        }
    }
}

#[test]
fn findings_about_several_targets_are_inside_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.jsonl");
    let file_target = format!("file:{}", dir.path().display());
    let o = pmscope(&[
        "--null-executor",
        "--json",
        "-o",
        out.to_str().unwrap(),
        "rap",
        "-t",
        "dram:thp",
        "-t",
        &file_target,
        "--distances",
        "0,1",
        "--samples",
        "50",
        "--region",
        "4MiB",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let from_stdout = records(&o);
    let from_file: Vec<Record> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(from_stdout, from_file);
    let has = |code: &str, spec: Option<&str>| {
        from_file.iter().any(|r| {
            r.warnings.iter().any(|w| w.code == code)
                && spec.is_none_or(|s| r.target.as_ref().is_some_and(|t| t.spec.starts_with(s)))
        })
    };
    // The page-cache file cannot be made durable by clwb: said in its own records.
    assert!(has("persist-on-page-cache", Some("file:")));
    assert!(!has("persist-on-page-cache", Some("dram:")));
    // 2 MiB against 4 KiB pages (seed 000): in the later target's records and in the
    // comparison record that closes the run.
    assert!(has("mixed-page-sizes", Some("file:")));
    let comparison: Vec<&Record> = from_file
        .iter()
        .filter(|r| r.experiment == "comparison")
        .collect();
    assert_eq!(comparison.len(), 1);
    assert!(
        comparison[0]
            .warnings
            .iter()
            .any(|w| w.code == "mixed-page-sizes")
    );
    // Under --json nothing but records reaches stdout, and no warning is printed twice.
    assert!(!stderr(&o).contains("warning:"), "{}", stderr(&o));
}

#[test]
fn the_same_failure_exits_with_the_same_code_in_every_command() {
    let failures: &[(&[&str], i32, &str)] = &[
        (&["-t", "bogus"], 2, "pmscope: --target bogus: "),
        (&["--max-mem", "1KiB"], 2, "pmscope: "),
        (
            &["-t", "dram:4k", "-t", "dram:4k"],
            2,
            "pmscope: --target dram:4k is given twice",
        ),
    ];
    // loaded needs two CPUs (probe and traffic); every other command one, and the
    // commands of one CPU name it --cpu.
    let cpu_flag = |cmd: &str| if cmd == "loaded" { "0,9999" } else { "9999" };
    for (cmd, args) in COMMANDS
        .iter()
        .filter(|(c, _)| *c != "verify" && *c != "quick")
    {
        for (extra, code, prefix) in failures {
            let mut a = vec!["--null-executor", cmd];
            a.extend_from_slice(extra);
            a.extend_from_slice(args);
            let o = pmscope(&a);
            assert_eq!(
                o.status.code(),
                Some(*code),
                "{cmd} {extra:?}: {}",
                stderr(&o)
            );
            assert!(
                stderr(&o).starts_with(prefix),
                "{cmd} {extra:?}: {}",
                stderr(&o)
            );
            assert_eq!(
                stderr(&o).lines().count(),
                1,
                "{cmd} {extra:?}: {}",
                stderr(&o)
            );
        }
        // A CPU pmscope may not use: the same sentence, exit 2, whatever the command.
        // `--cpu` where the command runs on one CPU, `--cpus` where it takes a list.
        let help = String::from_utf8_lossy(&pmscope(&[cmd, "--help"]).stdout).into_owned();
        let flag = if help.contains("--cpu <CPU>") {
            "--cpu"
        } else {
            "--cpus"
        };
        let mut a = vec!["--null-executor", cmd, flag, cpu_flag(cmd)];
        a.extend_from_slice(args);
        let o = pmscope(&a);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("CPU 9999 is not available to pmscope"),
            "{cmd}: {}",
            stderr(&o)
        );
    }
}

/// Every buffer probe measures for real on the three kinds of this machine, each curve with
/// its knee record (found or not), every visit timed.
#[test]
fn every_probe_runs_on_dram_thp_and_shm() {
    for kind in [
        "read-buffer",
        "write-buffer",
        "rw-buffer",
        "prefetch",
        "chase-write",
    ] {
        let o = pmscope(&[
            "--json",
            "probe",
            kind,
            "-t",
            "dram:4k",
            "-t",
            "dram:thp",
            "-t",
            "shm:4k",
            "--sizes",
            "1KiB,16KiB,256KiB",
            "--count",
            "300",
        ]);
        assert!(o.status.success(), "{kind}: {}", stderr(&o));
        let rs = records(&o);
        for r in &rs {
            pmscope_core::vocab::check_record(r).unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
        for spec in ["dram:4k", "dram:thp", "shm:4k"] {
            let mine = |e: &str| {
                rs.iter()
                    .filter(|r| r.experiment == e && r.target.as_ref().unwrap().spec == spec)
                    .count()
            };
            let curves = mine("probe-knee");
            assert!(curves >= 2, "{kind} {spec}: {curves} curves");
            assert_eq!(mine("probe"), 3 * curves, "{kind} {spec}");
            for r in rs.iter().filter(|r| r.experiment == "probe") {
                assert_eq!(r.summary.as_ref().unwrap().n, 300);
            }
        }
    }
}

/// A results store of this test process's own, so no test writes into the user's store.
fn test_store() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "pmscope-test-{}/results.sqlite",
        std::process::id()
    ))
}

/// The tier study on a dram target under the null executor: the thread sweep gives a best
/// thread count per access size, the K-mer bench measures the tables dram can hold and
/// leaves tx-pm out with a warning (as `kmer bench -t dram:4k` itself does), and the
/// memcached step, which has no synthetic mode, is passed over
/// with a line saying so. Needs ./dev setup's example genomes.
#[test]
fn tier_study_skips_the_tables_a_target_cannot_hold_and_passes_over_app_without_real_servers() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tiers.jsonl");
    let o = pmscope(&[
        "--null-executor",
        "suite",
        "tiers",
        "-t",
        "dram:4k",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("[3/7] memcached by store size: not run under --null-executor"),
        "{err}"
    );
    let rs: Vec<Record> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let best = rs
        .iter()
        .filter(|r| r.experiment == "bandwidth-best")
        .count();
    assert!(best > 0, "the thread sweep names a best count per size");
    let tables: Vec<&str> = rs
        .iter()
        .filter(|r| r.experiment == "kmer-bench")
        .map(|r| r.params["table"].as_str().unwrap())
        .collect();
    assert_eq!(
        tables,
        ["volatile", "static-pm"],
        "tx-pm has no pool on dram"
    );
    let skipped = rs
        .iter()
        .filter(|r| r.experiment == "kmer-bench")
        .flat_map(|r| r.warnings.iter())
        .find(|w| w.code == "kmer-table-skipped")
        .expect("the skipped table is a warning");
    assert!(
        skipped.message.contains("tx-pm") && skipped.message.contains("dram:4k"),
        "{}",
        skipped.message
    );
}
