//! `pmscope fs` and `pmscope fio` (issue 16): their records under the null executor and
//! for real, their refusals (one sentence, exit 2 for what was asked, 1 for a missing
//! tool), and their work directories, which never outlive a run — finished, failed or
//! interrupted — nor does fio.

use pmscope_core::record::Record;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn pmscope_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    // In the lab guest the binary is not at the path Cargo compiled in: PMSCOPE_BIN names it.
    let bin =
        std::env::var_os("PMSCOPE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_pmscope").into());
    let mut c = Command::new(bin);
    c.env("PMSCOPE_RESULTS", test_store()).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run pmscope")
}

fn pmscope(args: &[&str]) -> Output {
    pmscope_env(args, &[])
}

/// A results store of this test process's own.
fn test_store() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "pmscope-test-{}/results.sqlite",
        std::process::id()
    ))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn records(o: &Output) -> Vec<Record> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a record ({e}): {l}")))
        .collect()
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Every record follows the vocabulary, names its target and carries the file system.
fn check(rs: &[Record], experiment: &str, specs: &[&str], null: bool) {
    assert!(!rs.is_empty());
    for r in rs {
        pmscope_core::vocab::check_record(r).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.system.timer.is_some(), "no timer in the record");
        if r.experiment == "comparison" {
            continue;
        }
        assert_eq!(r.experiment, experiment);
        let spec = r.target.as_ref().expect("a target").spec.as_str();
        assert!(specs.contains(&spec), "{spec}");
        assert!(r.params["fs_type"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(r.params["device"].as_str().is_some_and(|s| s.contains(':')));
        assert!(r.params.contains_key("dax") && r.params.contains_key("journal"));
        assert_eq!(r.params.contains_key("executor"), null);
        assert_eq!(
            r.warnings.iter().any(|w| w.code == "synthetic-samples"),
            null
        );
    }
}

#[test]
fn fs_and_fio_run_to_completion_with_the_null_executor() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (ta, tb) = (
        format!("file:{}", a.path().display()),
        format!("file:{}", b.path().display()),
    );
    let o = pmscope(&[
        "--null-executor",
        "--json",
        "fs",
        "-t",
        &ta,
        "-t",
        &tb,
        "--samples",
        "50",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = records(&o);
    check(&rs, "fs-op", &[&ta, &tb], true);
    // 5 operations x with and without fsync, per target, and the comparison.
    assert_eq!(rs.iter().filter(|r| r.experiment == "fs-op").count(), 20);
    assert_eq!(
        rs.iter().filter(|r| r.experiment == "comparison").count(),
        1
    );
    for r in rs.iter().filter(|r| r.experiment == "fs-op") {
        assert_eq!(r.summary.as_ref().unwrap().n, 50);
        assert!(r.histogram.is_some() && !r.threads.is_empty());
    }
    assert!(entries(a.path()).is_empty() && entries(b.path()).is_empty());
    // fio: the checked-in fio output, parsed into one record per workload and job count.
    let o = pmscope(&[
        "--null-executor",
        "--json",
        "fio",
        "-t",
        &ta,
        "--jobs",
        "1..3",
        "--rw",
        "randread,write",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = records(&o);
    check(&rs, "fio", &[&ta], true);
    assert_eq!(rs.len(), 6);
    let jobs: Vec<u64> = rs
        .iter()
        .map(|r| r.params["jobs"].as_u64().unwrap())
        .collect();
    assert_eq!(jobs, [1, 2, 3, 1, 2, 3]);
    assert_eq!(rs[0].params["fio_version"], "fio-3.33");
    assert_eq!(rs[0].params["fsync"], false);
    assert_eq!(rs[3].params["fsync"], true);
    assert_eq!(rs[3].params["pattern"], "seq");
    assert!((rs[0].summary.as_ref().unwrap().p50 - 55.744063).abs() < 1e-9);
    assert!(entries(a.path()).is_empty());
    // The human tables come from the same records.
    let o = pmscope(&[
        "--null-executor",
        "fs",
        "-t",
        &ta,
        "-t",
        &tb,
        "--samples",
        "20",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("overwrite-512") && out.contains("median us"));
    let o = pmscope(&["--null-executor", "fio", "-t", &ta, "--jobs", "1"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("randwrite") && out.contains("MB/s"));
    assert!(
        !out.contains("× the first"),
        "one target: nothing side by side"
    );
    let o = pmscope(&[
        "--null-executor",
        "fio",
        "-t",
        &ta,
        "-t",
        &tb,
        "--jobs",
        "1",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    let side = out
        .split("MB/s (× the first)")
        .nth(1)
        .expect("the side-by-side table");
    // The same fixture on both: the second target at 1.00x the first.
    let row = side.lines().find(|l| l.starts_with("randread")).unwrap();
    assert!(row.contains("55.7") && row.ends_with("55.7 ×1.00"), "{row}");
}

#[test]
fn fs_measures_for_real_and_leaves_nothing_behind() {
    let a = tempfile::tempdir().unwrap();
    let t = format!("file:{}", a.path().display());
    let o = pmscope(&["--json", "--no-store", "fs", "-t", &t, "--samples", "20"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = records(&o);
    check(&rs, "fs-op", &[&t], false);
    for r in &rs {
        let s = r
            .summary
            .as_ref()
            .expect("every operation works on a temp dir");
        assert_eq!(s.n, 20);
        assert!(s.p50 > 0.0 && s.min <= s.p50 && s.p50 <= s.max);
    }
    assert!(entries(a.path()).is_empty(), "{:?}", entries(a.path()));
}

#[test]
fn fio_runs_the_real_fio_when_it_is_installed() {
    if pmscope_sys::environment::tool_installed("fio").is_none() {
        // ./dev installs fio; without it the command's refusal is what can be checked.
        eprintln!("fio is not installed: only its refusal is tested");
        return;
    }
    // Two file systems side by side: the temporary directory's and tmpfs's.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir_in("/dev/shm").unwrap();
    let (ta, tb) = (
        format!("file:{}", a.path().display()),
        format!("file:{}", b.path().display()),
    );
    let o = pmscope(&[
        "--json",
        "--no-store",
        "fio",
        "-t",
        &ta,
        "-t",
        &tb,
        "--jobs",
        "1,2",
        "--rw",
        "randread,randwrite",
        "--runtime",
        "0.3",
        "--size",
        "1MiB",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = records(&o);
    check(&rs, "fio", &[&ta, &tb], false);
    assert_eq!(
        rs.len(),
        9,
        "2 workloads x 2 job counts per target, and the comparison"
    );
    let runs: Vec<&Record> = rs.iter().filter(|r| r.experiment == "fio").collect();
    for (i, r) in runs.iter().enumerate() {
        let spec = &r.target.as_ref().unwrap().spec;
        assert_eq!(
            spec,
            if i < 4 { &ta } else { &tb },
            "targets one after the other"
        );
        assert_fio_parsed(r);
    }
    assert_eq!(runs[4].params["fs_type"], "tmpfs");
    assert!(entries(a.path()).is_empty(), "{:?}", entries(a.path()));
    assert!(entries(b.path()).is_empty(), "{:?}", entries(b.path()));
}

/// What fio's JSON gave a record: bandwidth, IOPS and ordered latency percentiles, all
/// positive, and fio's version.
fn assert_fio_parsed(r: &Record) {
    assert!(r.summary.as_ref().unwrap().p50 > 0.0, "bandwidth: {r:?}");
    assert!(r.values["iops"] > 0.0);
    let (p50, p99, p999) = (
        r.values["lat_p50_ns"],
        r.values["lat_p99_ns"],
        r.values["lat_p999_ns"],
    );
    assert!(
        r.values["lat_mean_ns"] > 0.0 && 0.0 < p50 && p50 <= p99 && p99 <= p999,
        "{:?}",
        r.values
    );
    assert!(
        r.params["fio_version"]
            .as_str()
            .unwrap()
            .starts_with("fio-")
    );
}

#[test]
fn a_missing_fio_is_one_sentence_naming_the_package() {
    let a = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let t = format!("file:{}", a.path().display());
    let o = pmscope_env(
        &["--no-store", "fio", "-t", &t],
        &[("PATH", empty.path().to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "pmscope: fio is not installed: install it with `apt-get install fio` (Debian, Ubuntu) or `dnf install fio` (Fedora)\n"
    );
    assert!(entries(a.path()).is_empty());
}

#[test]
fn bad_targets_and_arguments_are_one_sentence_and_exit_2() {
    let a = tempfile::tempdir().unwrap();
    let new_file = a.path().join("new.dat");
    let existing = a.path().join("existing.dat");
    std::fs::write(&existing, b"user data").unwrap();
    let dir = format!("file:{}", a.path().display());
    for cmd in ["fs", "fio"] {
        let cases: Vec<(Vec<String>, String)> = vec![
            (
                vec![],
                format!("{cmd} needs a directory to work in: give -t file:DIR (e.g. -t file:/tmp)"),
            ),
            (
                vec!["-t".into(), "dram:4k".into()],
                format!(
                    "--target dram:4k: {cmd} does file I/O in a directory, so it takes file:DIR targets only"
                ),
            ),
            (
                vec!["-t".into(), format!("file:{}", new_file.display())],
                format!(
                    "--target file:{}: {cmd} works in an existing directory and this path is not one: name the directory (file:DIR)",
                    new_file.display()
                ),
            ),
            (
                vec!["-t".into(), format!("file:{}", existing.display())],
                // The preflight every command shares says it, in the same words.
                format!(
                    "{} already exists and pmscope never overwrites a file; name a directory or a new path",
                    existing.display()
                ),
            ),
            (
                vec!["-t".into(), "file:/nonexistent-pmscope/dir".into()],
                "/nonexistent-pmscope/dir does not exist and neither does its directory /nonexistent-pmscope: create the directory first (mkdir -p /nonexistent-pmscope) or name one that exists".into(),
            ),
            (
                vec!["-t".into(), dir.clone(), "-t".into(), dir.clone()],
                format!("--target {dir} is given twice"),
            ),
        ];
        for (args, msg) in cases {
            let mut a2 = vec!["--no-store", cmd];
            a2.extend(args.iter().map(String::as_str));
            let o = pmscope(&a2);
            assert_eq!(o.status.code(), Some(2), "{a2:?}: {}", stderr(&o));
            assert_eq!(stderr(&o), format!("pmscope: {msg}\n"), "{a2:?}");
        }
    }
    for (args, msg) in [
        (
            &["fs", "--ops", "delete"][..],
            "--ops delete: use create, append-4k, overwrite-4k, overwrite-512, read-4k",
        ),
        (
            &["fs", "--fsync", "maybe"][..],
            "--fsync maybe: use both, on or off",
        ),
        (
            &["fio", "--rw", "trim"][..],
            "--rw trim: use read, randread, write or randwrite",
        ),
        (
            &["fio", "--jobs", "0"][..],
            "--jobs 0: job counts run from 1 to 1024",
        ),
        (
            &["fio", "--runtime", "0.01"][..],
            "--runtime 0.01: fio needs at least 0.1 seconds per run",
        ),
    ] {
        let mut a2 = vec!["--no-store"];
        a2.extend_from_slice(args);
        a2.extend(["-t", &dir]);
        let o = pmscope(&a2);
        assert_eq!(o.status.code(), Some(2), "{a2:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), format!("pmscope: {msg}\n"), "{a2:?}");
    }
    // Nothing was created, and the user's file is as it was.
    assert_eq!(entries(a.path()), ["existing.dat"]);
    assert_eq!(std::fs::read(&existing).unwrap(), b"user data");
}

/// The process's children, from /proc (every thread's list).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// fio processes working in `dir` (whoever their parent is now: an orphan counts).
fn fio_in(dir: &Path) -> Vec<u32> {
    let needle = format!("--directory={}", dir.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Ctrl-C and SIGTERM in the middle of `fs` and `fio`: exit 130/143, the finished points
/// printed, the work directory gone, fio stopped; a SIGKILL takes fio with it.
#[test]
fn interrupted_fs_and_fio_leave_no_directory_and_no_fio() {
    let fio = pmscope_sys::environment::tool_installed("fio").is_some();
    let mut lines: Vec<Vec<&str>> = vec![vec!["fs", "--samples", "100000"]];
    if fio {
        lines.push(vec![
            "fio",
            "--jobs",
            "2",
            "--runtime",
            "20",
            "--size",
            "1MiB",
        ]);
    }
    for line in lines {
        for (signal, code, after_ms) in
            [("-INT", 130, 700), ("-TERM", 143, 1500), ("-KILL", 0, 1200)]
        {
            let a = tempfile::tempdir().unwrap();
            let t = format!("file:{}", a.path().display());
            let mut args = line.clone();
            args.extend(["--no-store", "-t", &t]);
            let child = Command::new(env!("CARGO_BIN_EXE_pmscope"))
                .env("PMSCOPE_RESULTS", test_store())
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            std::thread::sleep(Duration::from_millis(after_ms));
            let grandchildren = children_of(pid);
            if line[0] == "fio" {
                assert!(
                    !grandchildren.is_empty(),
                    "{args:?}: fio is not running yet"
                );
            }
            let _ = Command::new("kill")
                .args([signal, &pid.to_string()])
                .status();
            let o = child.wait_with_output().unwrap();
            let err = stderr(&o);
            if signal == "-KILL" {
                assert_eq!(o.status.code(), None, "{args:?}");
                // The kernel kills fio with its parent (PR_SET_PDEATHSIG); give it a moment.
                std::thread::sleep(Duration::from_millis(500));
                for c in grandchildren {
                    assert!(!alive(c), "{args:?}: fio {c} outlived a killed pmscope");
                }
                assert_eq!(
                    fio_in(a.path()),
                    Vec::<u32>::new(),
                    "{args:?}: orphaned fio"
                );
                // A SIGKILL cannot clean up: the work directory says whose it was.
                for e in entries(a.path()) {
                    assert!(e.starts_with(&format!("pmscope-{}-{pid}-", line[0])), "{e}");
                }
                continue;
            }
            assert_eq!(o.status.code(), Some(code), "{args:?} {signal}: {err}");
            assert!(
                err.lines()
                    .last()
                    .unwrap_or("")
                    .starts_with("pmscope: interrupted by"),
                "{args:?}: {err}"
            );
            assert!(
                entries(a.path()).is_empty(),
                "{args:?}: {:?}",
                entries(a.path())
            );
            for c in grandchildren {
                assert!(!alive(c), "{args:?}: fio {c} outlived pmscope");
            }
            assert_eq!(
                fio_in(a.path()),
                Vec::<u32>::new(),
                "{args:?}: orphaned fio"
            );
        }
    }
}

mod needs_fsdax {
    use super::*;

    /// The real fio (shipped in the guest payload by lab/stage.sh) on ext4 -o dax: the
    /// records carry the DAX mount and what the kernel granted there, and fio's JSON was
    /// read (bandwidth, IOPS, percentiles).
    #[test]
    #[ignore = "needs a real fsdax mount (LABVM_FSDAX_MNT) and fio in the payload: runs in the lab guest via lab/stage.sh"]
    fn fio_on_the_dax_mount_records_dax_and_reads_fios_json() {
        let mnt = std::env::var("LABVM_FSDAX_MNT").unwrap_or_else(|_| {
            panic!(
                "LABVM_FSDAX_MNT is not set: this test needs the lab guest (run by lab/stage.sh)"
            )
        });
        let t = format!("file:{mnt}");
        let o = pmscope(&[
            "--json",
            "--no-store",
            "fio",
            "-t",
            &t,
            "--jobs",
            "1",
            "--rw",
            "randread,randwrite",
            "--runtime",
            "0.2",
            "--size",
            "1MiB",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let rs = records(&o);
        check(&rs, "fio", &[&t], false);
        assert_eq!(rs.len(), 2);
        for r in &rs {
            let p = &r.params;
            assert_eq!(p["fs_type"], "ext4", "{p:?}");
            assert_eq!(p["dax"], "always", "{p:?}");
            assert_eq!(p["mount_point"], mnt.as_str());
            assert!(
                p["device"].as_str().unwrap().starts_with("/dev/pmem"),
                "{p:?}"
            );
            let achieved = &r.target.as_ref().unwrap().achieved;
            assert_eq!(
                achieved.persistence,
                pmscope_core::achieved::Persistence::Dax,
                "{achieved:?}"
            );
            assert_eq!(achieved.map_sync, Some(true));
            assert_fio_parsed(r);
        }
        assert_eq!(rs[1].params["fsync"], true);
        let left: Vec<String> = entries(Path::new(&mnt))
            .into_iter()
            .filter(|n| n.starts_with("pmscope-"))
            .collect();
        assert!(left.is_empty(), "left in {mnt}: {left:?}");
    }
}
