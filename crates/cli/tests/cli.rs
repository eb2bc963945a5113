//! The binary end to end: every malformed input gives one sentence and the right exit code
//! (a table, as likwid's executable tests), output files are never clobbered, and `info`
//! and `quick` produce what the README promises.

use std::process::{Command, Output};

/// Runs pmscope, killed after 120 s: no input may hang.
fn pmscope(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .env("PMSCOPE_RESULTS", test_store())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run pmscope");
    // Drain both pipes while waiting, so a long output cannot block the child.
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).map(|_| v)
    });
    let stderr = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).map(|_| v)
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for pmscope") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            panic!("{args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap().unwrap(),
        stderr: stderr.join().unwrap().unwrap(),
    }
}

/// A results store of this test process's own, so no test writes into the user's store.
fn test_store() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "pmscope-test-{}/results.sqlite",
        std::process::id()
    ))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// (arguments, exit code, exact stderr). One sentence, no backtrace, no panic.
const MALFORMED: &[(&[&str], i32, &str)] = &[
    (
        &["verify", "-t", "ram"],
        2,
        "pmscope: --target ram: unknown target kind 'ram': use one of dram, file, shm, devdax\n",
    ),
    (
        &["verify", "-t", "dram:8k"],
        2,
        "pmscope: --target dram:8k: '8k' is not a page policy for dram: use 4k, thp, 2m or 1g\n",
    ),
    (
        &["verify", "-t", "dram,node=x"],
        2,
        "pmscope: --target dram,node=x: node 'x' is not a node number (node=0, node=1, ...)\n",
    ),
    (
        &["verify", "-t", "file"],
        2,
        "pmscope: --target file: file needs a path: file:/mnt/pmem (a directory) or file:/mnt/pmem/bench.dat (a new file)\n",
    ),
    (
        &["verify", "-t", "devdax:/tmp/x"],
        2,
        "pmscope: --target devdax:/tmp/x: '/tmp/x' is not a device-DAX path: expected /dev/daxX.Y\n",
    ),
    (
        &["verify", "-t", "dram", "-t", "dram:4k"],
        2,
        "pmscope: --target dram:4k is given twice\n",
    ),
    (
        &["verify", "--size", "12Q"],
        2,
        "pmscope: --size 12Q: '12Q' has an unknown unit: use B, K/KiB, M/MiB, G/GiB or T/TiB (binary: 1K = 1024)\n",
    ),
    (
        &["verify", "--size", "0"],
        2,
        "pmscope: --size 0: a size must be greater than zero\n",
    ),
    (
        &["verify", "--max-mem", "lots"],
        2,
        "pmscope: --max-mem lots: 'lots' is not a size: expected a whole number with an optional unit (B, K/KiB, M/MiB, G/GiB, T/TiB)\n",
    ),
    (
        &["verify", "-t", "devdax:/dev/dax9.9"],
        2,
        "pmscope: writing to /dev/dax9.9 destroys its contents; pass --destroy-data if that is what you want\n",
    ),
    (
        &["verify", "--size", "64MiB", "--max-mem", "1MiB"],
        2,
        "pmscope: dram:4k needs 64.0 MiB but --max-mem allows 1.0 MiB; use a smaller size or raise --max-mem\n",
    ),
    (&["verify", "--size", "100TiB"], 2, ""),
    (
        &["latency", "--pattern", "zigzag"],
        2,
        "pmscope: --pattern zigzag: 'zigzag' is not a chain pattern: use rand (random), seq (sequential) or random-in-page\n",
    ),
    (
        &["latency", "--sizes", "64"],
        2,
        "pmscope: every working set must hold at least two 64-byte elements; the smallest given is 64B\n",
    ),
    (
        &["inst", "--ops", "foo"],
        2,
        "pmscope: --ops foo: 'foo' is not an op: use load, ntload, store, store+clflush, store+clflushopt, store+clwb, ntstore\n",
    ),
    (
        &["inst", "--sizes", "100"],
        2,
        "pmscope: access size 100 is not 8 or a multiple of 64 bytes\n",
    ),
    (
        &["sync", "--unit", "12"],
        2,
        "pmscope: --unit 12: use 8, 16, 32 or 64\n",
    ),
    (
        &["rap", "--persist", "bogus"],
        2,
        "pmscope: --persist bogus: 'bogus' is not a persist strategy: use one of clflush, clflushopt, clwb, ntstore, none, msync\n",
    ),
    (
        &["bandwidth", "--mix", "2-1"],
        2,
        "pmscope: --mix 2-1: not a mix: use split (k readers, n-k writers) or a ratio R:W such as 2:1\n",
    ),
    (&["bandwidth", "--threads", "9999"], 2, ""),
    (
        &["loaded", "--probe", "load+mfence"],
        2,
        "pmscope: --probe load+mfence: 'load+mfence' is not a probe: use chase, a persist strategy (clflush, clflushopt, clwb, ntstore, none), or a storing op such as store+clwb+sfence or SW (see `pmscope list ops`)\n",
    ),
    (
        &["loaded", "--rw", "x"],
        2,
        "pmscope: --rw x: give the traffic's read:write ratio, e.g. 1:0, 2:1 or 1:1\n",
    ),
    (&["verify", "-t", "file:/proc/nonexistent-dir/x"], 2, ""),
    // Zero, negative, infinite and NaN values, refused with the flag named (issue 17).
    (
        &["bandwidth", "--duration", "inf"],
        2,
        "pmscope: --duration inf: give a finite number of seconds greater than zero, e.g. 0.5\n",
    ),
    (
        &["bandwidth", "--duration", "NaN"],
        2,
        "pmscope: --duration NaN: give a finite number of seconds greater than zero, e.g. 0.5\n",
    ),
    (
        &["bandwidth", "--duration", "0"],
        2,
        "pmscope: --duration 0: give a finite number of seconds greater than zero, e.g. 0.5\n",
    ),
    (
        &["bandwidth", "--duration=-1"],
        2,
        "pmscope: --duration -1: give a finite number of seconds greater than zero, e.g. 0.5\n",
    ),
    (
        &["sync", "--duration", "inf"],
        2,
        "pmscope: --duration inf: give a finite number of seconds greater than zero, e.g. 0.5\n",
    ),
    (
        &["inst", "--count", "0"],
        2,
        "pmscope: --count 0: must be at least 1\n",
    ),
    (
        &["rap", "--samples", "0"],
        2,
        "pmscope: --samples 0: must be at least 1\n",
    ),
    (
        &["loaded", "--samples", "0"],
        2,
        "pmscope: --samples 0: must be at least 1\n",
    ),
    (
        &["latency", "--reps", "0"],
        2,
        "pmscope: --reps 0: must be at least 1\n",
    ),
    (
        &["bandwidth", "--reps", "0"],
        2,
        "pmscope: --reps 0: must be at least 1\n",
    ),
    (
        &["sync", "--reps", "0"],
        2,
        "pmscope: --reps 0: must be at least 1\n",
    ),
    (
        &["sync", "--threads", "0"],
        2,
        "pmscope: --threads 0: must be at least 1\n",
    ),
    (
        &["latency", "--tlb-window", "0"],
        2,
        "pmscope: --tlb-window 0: must be at least 1\n",
    ),
    (
        &["inst", "--count=-5"],
        2,
        "pmscope: --count -5: not a whole number: give a count of at least 1\n",
    ),
    // One rule for thread counts everywhere.
    (
        &["sync", "--threads", "1000", "--cpus", "0"],
        2,
        "pmscope: 1000 threads asked for but 1 CPUs are available (--cpus 0); pmscope pins one thread per CPU\n",
    ),
    (
        &["bandwidth", "--threads", "1000", "--cpus", "0"],
        2,
        "pmscope: 1000 threads asked for but 1 CPUs are available (--cpus 0); pmscope pins one thread per CPU\n",
    ),
    // A parameter that cannot produce a true figure is refused.
    (
        &["bandwidth", "--region", "32B", "--sizes", "64"],
        2,
        "pmscope: --region 32B per thread is too small for 64-byte accesses: give at least 8KiB (two accesses and two pages), or no true figure can come of it\n",
    ),
    (
        &[
            "loaded",
            "--traffic-region",
            "1KiB",
            "--traffic-access",
            "4KiB",
            "--samples",
            "100",
        ],
        2,
        "pmscope: --traffic-region 1KiB is smaller than one 4096-byte traffic access\n",
    ),
    (
        &["loaded", "--probe-region", "64B", "--delays", "0"],
        2,
        "pmscope: --probe-region 64B cannot hold a chain of two 64-byte elements\n",
    ),
    // pmscope kmer: its two outputs never name one place, and under --json stdout is JSON
    // (refused before any work: the missing genome is never read).
    (
        &[
            "kmer",
            "count",
            "-k",
            "21",
            "missing.fa",
            "-o",
            "same.tsv",
            "--kmers",
            "same.tsv",
        ],
        2,
        "pmscope: --kmers same.tsv and -o same.tsv name the same file: give each output its own\n",
    ),
    (
        &[
            "kmer",
            "count",
            "-k",
            "21",
            "missing.fa",
            "--kmers",
            "same.tsv",
            "--record",
            "same.tsv",
            "--force",
        ],
        2,
        "pmscope: --kmers same.tsv and -o same.tsv name the same file: give each output its own\n",
    ),
    (
        &[
            "kmer",
            "count",
            "-k",
            "5",
            "missing.fa",
            "--json",
            "--kmers",
            "-",
        ],
        2,
        "pmscope: --kmers - with --json: under --json stdout carries only JSON Lines; write the k-mers to a file\n",
    ),
    (
        &[
            "kmer",
            "union",
            "-k",
            "5",
            "missing.fa",
            "-o",
            "-",
            "--kmers",
            "-",
        ],
        2,
        "pmscope: --kmers - and -o - name the same stdout: give each output its own\n",
    ),
    (
        &["kmer", "count", "-k", "5", "missing.fa", "--threads", "0"],
        2,
        "pmscope: --threads 0: must be at least 1\n",
    ),
    (
        &["kmer", "count", "-k", "0", "missing.fa"],
        2,
        "pmscope: -k 0 is out of range: k must be between 1 and 128\n",
    ),
    (
        &["kmer", "synth", "never-created", "--snp-rate", "NaN"],
        2,
        "pmscope: --snp-rate NaN is not a rate per base between 0 and 0.5\n",
    ),
    (
        &["kmer", "synth", "never-created", "--length", "0"],
        2,
        "pmscope: --length '0' must be between 1 and 100G bases\n",
    ),
    (
        &["loaded", "--cpus", "0-x"],
        2,
        "pmscope: --cpus 0-x: '0-x' is not a CPU list: expected numbers and ranges such as 0-3,8\n",
    ),
];

#[test]
fn malformed_inputs_give_one_sentence_and_the_right_exit_code() {
    for (args, code, message) in MALFORMED {
        let o = pmscope(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {err}");
        if message.is_empty() {
            assert!(
                err.starts_with("pmscope: ") && err.lines().count() == 1,
                "{args:?}: {err}"
            );
        } else {
            assert_eq!(&err, message, "{args:?}");
        }
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn clap_usage_errors_exit_2() {
    let o = pmscope(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    let o = pmscope(&["verify", "--sise", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unexpected argument '--sise'"));
}

#[test]
fn output_file_is_never_clobbered_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    std::fs::write(&out, "precious\n").unwrap();
    let path = out.to_str().unwrap();
    let o = pmscope(&["verify", "--size", "4MiB", "-o", path]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "pmscope: {path} already exists; pass --force to overwrite it or choose another -o file\n"
        )
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");
    let o = pmscope(&["verify", "--size", "4MiB", "-o", path, "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let r: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(r["schema_version"], 3);
    assert_eq!(r["experiment"], "verify");
    assert_eq!(r["target"]["spec"], "dram:4k");
}

#[test]
fn info_json_holds_every_field() {
    let o = pmscope(&["info", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in [
        "kernel",
        "cpu",
        "tsc",
        "numa_nodes",
        "hugepages",
        "thp",
        "dax_devices",
        "dax_mounts",
        "pmem_block_devices",
        "cxl",
        "tools",
        "perf_counters",
        "prefetchers",
        "warnings",
    ] {
        assert!(v.get(key).is_some(), "info --json lacks {key}");
    }
    for key in [
        "clflush",
        "clflushopt",
        "clwb",
        "movnti",
        "avx2",
        "avx512f",
        "invariant_tsc",
    ] {
        assert!(v["cpu"]["features"][key].is_boolean(), "cpu.features.{key}");
    }
    assert!(
        v["cpu"]["caches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["level"] == 1)
    );
    assert!(v["tsc"]["timer"]["hz"].as_f64().unwrap() > 1e8);
    let node0 = &v["numa_nodes"][0];
    for key in [
        "id",
        "cpus",
        "mem_total_bytes",
        "distances",
        "memory_only",
        "hugepages",
    ] {
        assert!(node0.get(key).is_some(), "numa node lacks {key}");
    }
    assert!(v["thp"]["enabled"].is_string());
    assert!(v["tools"].get("ndctl").is_some() && v["tools"].get("daxctl").is_some());
    assert!(v["perf_counters"]["available"].is_boolean());
    // Facts of the CI machine (issue 2): compare with the kernel's own view, not a constant,
    // so the test states what it checks on any machine.
    let nodes = std::fs::read_dir("/sys/devices/system/node")
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            let n = n.to_string_lossy();
            n.starts_with("node") && n[4..].parse::<u32>().is_ok()
        })
        .count();
    assert_eq!(v["numa_nodes"].as_array().unwrap().len(), nodes);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    assert_eq!(v["cpu"]["features"]["clwb"], cpuinfo.contains(" clwb"));
    // Platform facts (issue 11), against the kernel's own files.
    let p = &v["platform"];
    assert_eq!(
        p["kernel_cmdline"],
        std::fs::read_to_string("/proc/cmdline").unwrap().trim()
    );
    let smt = std::fs::read_to_string("/sys/devices/system/cpu/smt/active").ok();
    assert_eq!(p["smt_active"].as_bool(), smt.map(|s| s.trim() == "1"));
    let vulns: Vec<String> = std::fs::read_dir("/sys/devices/system/cpu/vulnerabilities")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    std::fs::read_to_string(e.path()).unwrap_or_default().trim() != "Not affected"
                })
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut listed: Vec<String> = p["mitigations"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut vulns = vulns;
    vulns.sort();
    listed.sort();
    assert_eq!(listed, vulns);
    // A figure within 0.2-3x of the TSC, or null with the reason (issue 23: a renamer that
    // folds the chain gave 22 GHz beside a 2.1 GHz TSC).
    match p["observed_core_ghz"].as_f64() {
        Some(ghz) => {
            let tsc_ghz = v["tsc"]["timer"]["hz"].as_f64().unwrap() / 1e9;
            assert!(
                (0.2 * tsc_ghz..=3.0 * tsc_ghz).contains(&ghz),
                "{ghz} vs TSC {tsc_ghz}"
            );
            assert!(p["core_clock_unmeasurable"].is_null());
        }
        None => assert!(
            p["core_clock_unmeasurable"]
                .as_str()
                .unwrap()
                .contains("TSC")
        ),
    }
    // libnvdimm regions: as many as sysfs lists (none on the CI host; the lab guest has 3).
    let regions = std::fs::read_dir("/sys/bus/nd/devices")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("region"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(v["pmem_regions"].as_array().unwrap().len(), regions);
    // CXL memory devices and regions: as many as /sys/bus/cxl lists (none without CXL).
    let cxl = |prefix: &str| {
        std::fs::read_dir("/sys/bus/cxl/devices")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .strip_prefix(prefix)
                            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(v["cxl"]["memdevs"].as_array().unwrap().len(), cxl("mem"));
    assert_eq!(v["cxl"]["regions"].as_array().unwrap().len(), cxl("region"));
}

#[test]
fn quick_verifies_the_default_targets() {
    let o = pmscope(&["quick", "--size", "32MiB", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |experiment: &str| -> Vec<&serde_json::Value> {
        records
            .iter()
            .filter(|r| r["experiment"] == experiment)
            .collect()
    };
    let verified = of("verify");
    let specs: Vec<&str> = verified
        .iter()
        .map(|r| r["target"]["spec"].as_str().unwrap())
        .collect();
    assert_eq!(specs, ["dram:4k", "dram:thp", "shm:4k"]);
    assert_eq!(verified[0]["target"]["achieved"]["page_size"], 4096);
    assert_eq!(verified[1]["target"]["achieved"]["page_size"], 2 << 20);
    assert_eq!(verified[2]["target"]["achieved"]["map_sync"], false);
    // A first latency and bandwidth figure per target, each with its configuration.
    let figures = of("quick");
    assert_eq!(figures.len(), 6);
    for (spec, pair) in specs.iter().zip(figures.chunks(2)) {
        assert_eq!(pair[0]["metric"], "latency_ns");
        assert_eq!(pair[1]["metric"], "bandwidth_gb_s");
        for r in pair {
            assert_eq!(r["target"]["spec"], *spec);
            assert!(r["summary"]["p50"].as_f64().unwrap() > 0.0);
        }
    }
    // Comparing 4 KiB with 2 MiB targets is pointed out (seed 000).
    let human = pmscope(&["quick", "--size", "32MiB"]);
    assert!(stderr(&human).contains("is backed by 4 KiB pages but dram:thp by 2 MiB pages"));
    assert!(String::from_utf8_lossy(&human.stdout).contains("configuration achieved:"));
}

#[test]
fn list_comes_from_the_registries() {
    let o = pmscope(&["list", "targets"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for syntax in [
        "dram[:4k|thp|2m|1g]",
        "file:PATH",
        "shm[:4k|thp]",
        "devdax:/dev/daxX.Y",
    ] {
        assert!(text.contains(syntax), "{syntax}");
    }
    let o = pmscope(&["list", "strategies"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for s in ["clflush", "clflushopt", "clwb", "ntstore", "none", "msync"] {
        assert!(text.contains(s), "{s}");
    }
    // One line per catalog row, with its aliases, and one JSON object per row.
    let o = pmscope(&["list", "ops"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for row in pmscope_loops::catalog::CATALOG {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(row.id))
            .unwrap_or_else(|| panic!("no line for {}", row.id));
        for alias in row.names().skip(1) {
            assert!(line.contains(alias), "{}: {alias}", row.id);
        }
    }
    // Then one line per bandwidth op (after the catalog, whose rows may share a name).
    for op in pmscope_loops::stream::STREAM_OPS {
        let line = text
            .lines()
            .rev()
            .find(|l| l.split_whitespace().next() == Some(op.name()))
            .unwrap_or_else(|| panic!("no line for bandwidth op {}", op.name()));
        assert!(line.contains(op.doc()), "{line}");
    }
    for name in ["stosb-write", "movsb-copy", "ntcopy-pages"] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{name}");
    }
    let o = pmscope(&["--json", "list", "ops"]);
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<String> = records
        .iter()
        .filter(|r| r.get("op").is_some())
        .map(|r| r["op"].to_string())
        .collect();
    assert_eq!(ids.len(), pmscope_loops::catalog::CATALOG.len());
    assert!(ids.contains(&"\"store+clwb+mfence\"".to_string()));
    let stream: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r.get("bandwidth_op").is_some())
        .collect();
    assert_eq!(stream.len(), pmscope_loops::stream::STREAM_OPS.len());
    let stosb = stream
        .iter()
        .find(|r| r["bandwidth_op"] == "stosb-write")
        .unwrap();
    assert_eq!(stosb["features"], serde_json::json!(["erms"]));
}

#[test]
fn a_failed_run_leaves_the_output_file_exactly_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prev.jsonl");
    std::fs::write(&out, "old\n").unwrap();
    // node 99 does not exist: the second target is refused when it is mapped, after the
    // output was prepared and the first target's record was written.
    let o = pmscope(&[
        "verify",
        "-t",
        "dram:4k",
        "-t",
        "dram:4k,node=99",
        "--size",
        "4MiB",
        "-o",
        out.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no node 99"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old\n");
    // Nothing else is left in the directory: no temporary file, no empty file.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // Without --force a failed run leaves nothing that would block the next one.
    let new = dir.path().join("new.jsonl");
    let o = pmscope(&[
        "verify",
        "-t",
        "dram:4k",
        "-t",
        "dram:4k,node=99",
        "--size",
        "4MiB",
        "-o",
        new.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!new.exists());
    let o = pmscope(&["verify", "--size", "4MiB", "-o", new.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&new).unwrap().lines().count(), 1);
}

#[test]
fn dash_means_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .env("PMSCOPE_RESULTS", test_store())
        .args(["verify", "--size", "4MiB", "-o", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let r: serde_json::Value = serde_json::from_str(line).expect("only JSON on stdout");
        assert_eq!(r["experiment"], "verify");
    }
    assert!(
        !dir.path().join("-").exists(),
        "a file named '-' was created"
    );
}

#[test]
fn json_mode_prints_only_json_lines() {
    for args in [
        &["info", "--json"][..],
        &["list", "targets", "--json"],
        &["list", "strategies", "--json"],
        &["verify", "--size", "4MiB", "--json"],
    ] {
        let o = pmscope(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(!text.trim().is_empty(), "{args:?}");
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {line}"));
        }
    }
}

#[test]
fn version_completions_and_manual_come_from_the_cli_definition() {
    let o = pmscope(&["--version"]);
    let v = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        v.starts_with("pmscope 0.") && v.contains("(commit ") && v.contains(" build)"),
        "{v}"
    );
    let o = pmscope(&["completions", "bash"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains("_pmscope()") && text.contains("latency"));
    let o = pmscope(&["man"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains(".TH pmscope 1") && text.contains("bandwidth"));
    // Every measuring command's help shows examples, and the axis grammar where it takes one.
    for cmd in [
        "quick",
        "verify",
        "latency",
        "inst",
        "sync",
        "rap",
        "bandwidth",
        "loaded",
    ] {
        let o = pmscope(&[cmd, "--help"]);
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(
            help.contains("EXAMPLES:\n  pmscope "),
            "{cmd} --help has no examples"
        );
        if ["latency", "inst", "rap", "bandwidth", "loaded"].contains(&cmd) {
            assert!(
                help.contains("AXIS is a list"),
                "{cmd} --help lacks the axis grammar"
            );
        }
    }
}

/// `file:PATH` is an existing directory or a new file in an existing one, and never a new
/// file in /dev: refused before the first target is mapped, with nothing created.
#[test]
fn file_targets_must_name_a_directory_or_a_new_file_in_one() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir/bench.dat");
    let cases = [
        (
            "file:/dev/pmscope-no-such-mount".to_string(),
            "pmscope: /dev/pmscope-no-such-mount does not exist, and pmscope creates no files in /dev: if it is a mount point (e.g. hugetlbfs), mount it first; otherwise name a directory on the file system to measure\n".to_string(),
        ),
        (
            format!("file:{}", missing.display()),
            format!(
                "pmscope: {} does not exist and neither does its directory {}: create the directory first (mkdir -p {}) or name one that exists\n",
                missing.display(),
                missing.parent().unwrap().display(),
                missing.parent().unwrap().display()
            ),
        ),
        // A trailing slash names a directory: never a file in its parent (issue 27).
        (
            format!("file:{}/", missing.parent().unwrap().display()),
            format!(
                "pmscope: {}/ does not exist, and its trailing slash names a directory: create it first (mkdir -p {}/) or drop the slash\n",
                missing.parent().unwrap().display(),
                missing.parent().unwrap().display()
            ),
        ),
    ];
    for (target, message) in cases {
        // The good first target must not be measured before the bad second one is refused.
        let o = pmscope(&["verify", "-t", "dram:4k", "-t", &target, "--size", "4MiB"]);
        assert_eq!(o.status.code(), Some(2), "{target}: {}", stderr(&o));
        assert_eq!(stderr(&o), message, "{target}");
        assert!(o.stdout.is_empty(), "{target}: measured before refusing");
    }
    assert!(!std::path::Path::new("/dev/pmscope-no-such-mount").exists());
    assert!(!missing.parent().unwrap().exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was created beside the missing directory"
    );

    // Both accepted forms, and the output says which file each became.
    let new_file = dir.path().join("bench.dat");
    for (target, file) in [
        (format!("file:{}", dir.path().display()), None),
        (format!("file:{}", new_file.display()), Some(&new_file)),
    ] {
        let o = pmscope(&["verify", "-t", &target, "--size", "4MiB", "--no-store"]);
        assert_eq!(o.status.code(), Some(0), "{target}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{target}: ")))
            .unwrap_or_else(|| panic!("{target}: no line naming the file in {out}"));
        let path = line.split_once(": ").unwrap().1;
        let unnamed = " (unnamed: O_TMPFILE, it vanishes with the process unless --keep names it)";
        match file {
            Some(f) => assert_eq!(path, format!("{}{unnamed}", f.display())),
            None => assert_eq!(path, format!("{}{unnamed}", dir.path().display())),
        }
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the files were removed afterwards"
    );
}

/// `--prefetchers off` either turns them off (bare metal, root, msr driver) or says in the
/// records why it could not, and the run goes on.
#[test]
fn prefetchers_off_is_done_or_explained_in_the_records() {
    let o = pmscope(&[
        "latency",
        "-t",
        "dram:4k",
        "--sizes",
        "64KiB",
        "--reps",
        "2",
        "--samples",
        "1000",
        "--prefetchers",
        "off",
        "--json",
        "--no-store",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!records.is_empty());
    let left_on = |r: &serde_json::Value| {
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["code"] == "prefetchers-left-on")
            .map(|w| w["message"].as_str().unwrap().to_string())
    };
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    for r in &records {
        if cpuinfo.contains(" hypervisor") {
            let why = left_on(r).unwrap_or_else(|| panic!("no reason in {r}"));
            assert!(why.contains("under a hypervisor"), "{why}");
        } else if left_on(r).is_none() {
            // Turned off: nothing may call them on or unknown during the run.
            assert!(
                !r["warnings"]
                    .to_string()
                    .contains("hardware prefetchers are"),
                "{r}"
            );
        }
    }
    let o = pmscope(&["latency", "-t", "dram:4k", "--prefetchers", "sometimes"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Sequential accesses larger than the 64 MiB the measuring loop hands a kernel per call
/// move their bytes too: every op, a vector write and copy included, reports a positive
/// figure (an access that fit in no call once read 0.00 GB/s, silently).
#[test]
fn sequential_accesses_larger_than_a_call_are_measured() {
    let o = pmscope(&[
        "bandwidth",
        "--json",
        "--no-store",
        "-t",
        "dram:4k",
        "--ops",
        "write,ntstore,copy,ntcopy",
        "--pattern",
        "seq",
        "--sizes",
        "128MiB",
        "--region",
        "512MiB",
        "--threads",
        "1",
        "--reps",
        "1",
        "--precision",
        "0",
        "--duration",
        "0.01",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rates: Vec<(String, f64)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["experiment"] == "bandwidth")
        .map(|r| {
            let v = &r["values"];
            let gbs = v["read_gb_s"].as_f64().unwrap() + v["write_gb_s"].as_f64().unwrap();
            (r["params"]["op"].as_str().unwrap_or("?").to_string(), gbs)
        })
        .collect();
    assert_eq!(rates.len(), 4, "{rates:?}");
    assert!(rates.iter().all(|(_, gbs)| *gbs > 0.1), "{rates:?}");
}

/// Each op streams at its own default width and its record says which (ntcopy-pages at
/// glibc's 32 bytes where AVX2 is, the others at the widest), the table's header names the
/// odd one out, and `--width` sets every op's.
#[test]
fn each_op_records_the_vector_width_it_streamed_with() {
    let f = pmscope_sys::cpu::CpuFeatures::detect();
    const RUN: [&str; 20] = [
        "bandwidth",
        "--no-store",
        "-t",
        "dram:4k",
        "--ops",
        "ntcopy,ntcopy-pages",
        "--pattern",
        "seq",
        "--sizes",
        "64KiB",
        "--region",
        "64MiB",
        "--threads",
        "1",
        "--reps",
        "1",
        "--precision",
        "0",
        "--duration",
        "0.01",
    ];
    let widths = |extra: &[&str]| {
        let args: Vec<&str> = RUN
            .iter()
            .copied()
            .chain(["--json"])
            .chain(extra.iter().copied())
            .collect();
        let o = pmscope(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["experiment"] == "bandwidth")
            .map(|r| {
                let op = r["params"]["op"].as_str().unwrap().to_string();
                (op, r["params"]["vector_bytes"].as_u64().unwrap())
            })
            .collect::<Vec<_>>()
    };
    let widest = pmscope_loops::stream::Streamer::widest(&f) as u64;
    let pages = if f.avx2 { 32 } else { 16 };
    assert_eq!(
        widths(&[]),
        [
            ("ntcopy".to_string(), widest),
            ("ntcopy-pages".to_string(), pages)
        ]
    );
    assert_eq!(
        widths(&["--width", "16"]),
        [("ntcopy".to_string(), 16), ("ntcopy-pages".to_string(), 16)]
    );
    if widest != pages {
        let o = pmscope(&RUN);
        let header = format!("{widest}-byte vectors (ntcopy-pages {pages})");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(&header),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

/// Runs pmscope with a standard output whose reader is already gone (`| true`), and a
/// results store of `dir`'s own.
fn with_closed_stdout(dir: &std::path::Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .current_dir(dir)
        .env("PMSCOPE_RESULTS", dir.join("results.sqlite"))
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run pmscope")
}

/// Issue 47, class 1: a reader that quits (`| head -1`, `| true`) ends pmscope quietly
/// with exit 0 (as documented in docs/cli.md), never with a panic, and a measuring run says
/// in the store that its output was cut: complete when only the table after its points was
/// lost, incomplete (and resumable) when a record could not be written.
#[test]
fn a_closed_stdout_is_a_quiet_end_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("g.fa"),
        ">g\nACGTTGCAACGTAGCTAGCTAGGATCGATCGGATCCGATCGATGCTAGCTAGCTAGCTGATCG\n",
    )
    .unwrap();
    let quiet: &[&[&str]] = &[
        &["info"],
        &["--json", "info"],
        &["completions", "bash"],
        &["man"],
        &["list", "ops"],
        &["--json", "list", "targets"],
    ];
    // (arguments, whether every point was measured before the write that failed)
    let measuring: &[(&[&str], bool)] = &[
        (&["verify", "-t", "dram:4k", "--size", "4MiB"], true),
        (&["bandwidth", "-t", "dram:4k", "--sizes", "64KiB"], true),
        (&["kmer", "count", "-k", "5", "g.fa"], true),
        (
            &[
                "--json",
                "bandwidth",
                "-t",
                "dram:4k",
                "--sizes",
                "64KiB..1MiB",
            ],
            false,
        ),
    ];
    let all = quiet.iter().copied().chain(measuring.iter().map(|m| m.0));
    for args in all {
        let mut full = vec!["--null-executor"];
        full.extend_from_slice(args);
        let o = with_closed_stdout(dir.path(), &full);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("internal error") && !err.contains("pmscope: "),
            "{args:?} said more than warnings: {err}"
        );
    }
    let list = pmscope_in(dir.path(), &["--json", "results", "list"]);
    let runs: Vec<serde_json::Value> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), measuring.len(), "one run per measuring command");
    for (run, (args, whole)) in runs.iter().zip(measuring) {
        assert!(
            run["tags"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!("stdout-closed")),
            "{args:?}: {run}"
        );
        assert_eq!(
            run["complete"],
            serde_json::json!(*whole),
            "{args:?}: {run}"
        );
    }
}

fn pmscope_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .current_dir(dir)
        .env("PMSCOPE_RESULTS", dir.join("results.sqlite"))
        .args(args)
        .output()
        .expect("run pmscope")
}

/// Issue 47, class 3: the environment is checked before anything is measured, as the
/// command line is: a variable naming what cannot be used is refused in one sentence naming
/// the variable and the path (exit 2), and a relative XDG_DATA_HOME is ignored.
#[test]
fn the_environment_is_checked_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &[&str], &str)] = &[
        (
            "PMSCOPE_RESULTS",
            "/proc/pmscope-x",
            &["verify", "-t", "dram:4k", "--size", "4MiB"],
            "pmscope: the environment variable PMSCOPE_RESULTS: /proc/pmscope-x cannot be written",
        ),
        (
            "PMSCOPE_RESULTS",
            "/proc/pmscope-x/r.sqlite",
            &["verify", "-t", "dram:4k", "--size", "4MiB"],
            "pmscope: the environment variable PMSCOPE_RESULTS: /proc/pmscope-x/r.sqlite cannot be written",
        ),
        (
            "PMSCOPE_SYSROOT",
            "/nonexistent",
            &["verify", "-t", "dram:4k", "--size", "4MiB"],
            "pmscope: the environment variable PMSCOPE_SYSROOT: /nonexistent does not exist",
        ),
        (
            "PMSCOPE_SYSROOT",
            "/nonexistent",
            &["info"],
            "pmscope: the environment variable PMSCOPE_SYSROOT: /nonexistent does not exist",
        ),
    ];
    for (var, value, args, first) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_pmscope"))
            .current_dir(dir.path())
            .env("PMSCOPE_RESULTS", dir.path().join("results.sqlite"))
            .env(var, value)
            .arg("--null-executor")
            .args(*args)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{var}={value} {args:?}: {err}");
        assert!(err.starts_with(first), "{var}={value} {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one sentence: {err}");
        assert!(o.stdout.is_empty(), "nothing measured");
    }
    assert!(!dir.path().join("results.sqlite").exists());
    // A relative XDG_DATA_HOME is ignored (XDG Base Directory specification): the store
    // goes under $HOME, not under the working directory.
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .current_dir(dir.path())
        .env_remove("PMSCOPE_RESULTS")
        .env("HOME", &home)
        .env("XDG_DATA_HOME", "relative-data")
        .args([
            "--null-executor",
            "verify",
            "-t",
            "dram:4k",
            "--size",
            "4MiB",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!dir.path().join("relative-data").exists());
    assert!(home.join(".local/share/pmscope/results.sqlite").is_file());
}

/// Only a closed stdout is a quiet end: a stdout that refuses the bytes (`> /dev/full`, a
/// full disk) loses output the user asked for, so it is exit 1 with one sentence, never a
/// silent 0.
#[test]
fn a_full_stdout_is_a_failure_not_a_quiet_end() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let o = Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .arg("info")
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains("cannot write standard output"),
        "stderr: {err}"
    );
    assert!(!err.contains("panicked"), "stderr: {err}");
}

/// Block-access latency (`latency --mlp`) on DRAM: with a working set the caches cannot
/// hold (`auto`: 4x the last-level cache, at least 1 GiB), chains chased side by side
/// overlap their misses, so the ns per load falls as the chains grow. The shape is checked
/// (falling to 4 chains, 8 and 16 well under one chain), not a time; the table gives the
/// overlap per row.
#[test]
fn block_access_latency_falls_as_loads_overlap() {
    let args = [
        "latency",
        "--no-store",
        "-t",
        "dram:4k",
        "--sizes",
        "auto",
        "--samples",
        "0",
        "--reps",
        "3",
        "--mlp",
        "1,2,4,8,16",
    ];
    let o = pmscope(&[&["--json"][..], &args[..]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let per_load: Vec<(u64, f64)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["experiment"] == "latency-mlp")
        .map(|r| {
            (
                r["params"]["chains"].as_u64().unwrap(),
                r["summary"]["p50"].as_f64().unwrap(),
            )
        })
        .collect();
    let chains: Vec<u64> = per_load.iter().map(|p| p.0).collect();
    assert_eq!(chains, [1, 2, 4, 8, 16]);
    // Up to 4 chains every core overlaps the misses well (each doubling at least 15 %
    // faster per load); beyond the fill buffers' and page walkers' limit the curve may
    // flatten or rise a little (16 chains above 8 on the Ice Lake guest, 4 KiB pages), but
    // stays far below one chain.
    for w in per_load[..3].windows(2) {
        assert!(
            w[1].1 < w[0].1 * 0.85,
            "ns per load did not fall from {} to {} chains: {per_load:?}",
            w[0].0,
            w[1].0
        );
    }
    assert!(
        per_load[3..].iter().all(|p| p.1 < 0.6 * per_load[0].1),
        "8 and 16 chains side by side do not overlap their misses: {per_load:?}"
    );
    let o = pmscope(&args);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("block access at") && text.contains("overlap x"),
        "{text}"
    );
}
