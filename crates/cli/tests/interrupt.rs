//! Ctrl-C, SIGTERM and SIGKILL at random moments in every command that maps a target: on
//! SIGINT/SIGTERM the run stops, exits 130 or 143 and prints the points it finished (table
//! mode); whatever the signal, no file is left behind in /dev/shm or in the file target's
//! directory (scratch files are unnamed: a SIGKILL cannot leak them) and no child process
//! outlives it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each command with a shm and a file target, sized to run a few seconds; `fasta` is the
/// genome of the k-mer job, whose table lives on the file target.
fn command_lines(dir: &str, fasta: &str) -> Vec<Vec<String>> {
    let file = format!("file:{dir}");
    let t = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        v.extend(["-t".into(), "shm:4k".into(), "-t".into(), file.clone()]);
        v
    };
    vec![
        t(&["verify", "--size", "256MiB"]),
        t(&["latency", "--sizes", "64KiB..64MiB", "--samples", "20000"]),
        t(&[
            "inst", "--region", "64MiB", "--count", "20000", "--sizes", "64,256",
        ]),
        t(&["sync", "--region", "64MiB"]),
        t(&["rap", "--region", "64MiB", "--samples", "5000"]),
        t(&[
            "bandwidth",
            "--region",
            "64MiB",
            "--sizes",
            "64,4KiB",
            "--threads",
            "1",
        ]),
        t(&[
            "loaded",
            "--probe-region",
            "16MiB",
            "--traffic-region",
            "32MiB",
            "--samples",
            "2000",
            "--delays",
            "0,100,1000",
        ]),
        t(&["quick", "--size", "64MiB"]),
        vec![
            "kmer".into(),
            "count".into(),
            "-k".into(),
            "31".into(),
            fasta.into(),
            "-t".into(),
            format!("file:{dir}"),
        ],
    ]
}

/// A synthetic genome big enough that a k-mer count takes a few seconds.
fn genome() -> &'static str {
    static GENOME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    GENOME.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("pmscope-test-{}-genome", std::process::id()));
        let o = Command::new(env!("CARGO_BIN_EXE_pmscope"))
            .args([
                "kmer",
                "synth",
                "--length",
                "30M",
                "--strains",
                "1",
                "--no-store",
            ])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dir.join("reference.fasta").display().to_string()
    })
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

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Files of process `pid` in /dev/shm (pmscope names them pmscope-<pid>-...).
fn shm_files_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(&format!("pmscope-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

/// A xorshift generator of the moments signals are sent at (deterministic per seed).
fn moments(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[test]
fn interrupted_runs_stop_report_and_leave_nothing_behind() {
    let mut next = moments(0x9E37_79B9_7F4A_7C15u64);
    let mut runs = 0;
    let mut interrupted = 0;
    for round in 0..4 {
        for line in command_lines("DIR", genome()) {
            let dir = tempfile::tempdir().unwrap();
            let args: Vec<String> = line
                .iter()
                .map(|a| a.replace("DIR", dir.path().to_str().unwrap()))
                .collect();
            let (signal, code) = if (round + runs) % 2 == 0 {
                ("-INT", 130)
            } else {
                ("-TERM", 143)
            };
            let child = Command::new(env!("CARGO_BIN_EXE_pmscope"))
                .env("PMSCOPE_RESULTS", test_store())
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            std::thread::sleep(Duration::from_millis(150 + next() % 1200));
            let _ = Command::new("kill")
                .args([signal, &pid.to_string()])
                .status();
            let t0 = Instant::now();
            let o = child.wait_with_output().unwrap();
            let waited = t0.elapsed();
            let err = String::from_utf8_lossy(&o.stderr);
            let out = String::from_utf8_lossy(&o.stdout);
            runs += 1;
            match o.status.code() {
                Some(0) => {} // finished before the signal arrived
                Some(c) => {
                    assert_eq!(c, code, "{args:?} {signal}: {err}");
                    interrupted += 1;
                    assert!(
                        err.lines()
                            .last()
                            .unwrap_or_default()
                            .starts_with("pmscope: interrupted by"),
                        "{args:?}: {err}"
                    );
                    // A k-mer job is one point: nothing is finished before its end.
                    assert!(
                        args[0] == "kmer" || out.contains("finished before the interruption"),
                        "{args:?}: {out}"
                    );
                    assert!(
                        waited < Duration::from_secs(5),
                        "{args:?}: took {waited:?} to stop"
                    );
                }
                None => panic!("{args:?}: killed by a signal instead of stopping: {err}"),
            }
            assert_eq!(shm_files_of(pid), Vec::<String>::new(), "{args:?}");
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert!(left.is_empty(), "{args:?}: left {left:?}");
        }
    }
    assert!(runs >= 30, "{runs} runs");
    // The moments are spread so that most runs are interrupted mid-way.
    assert!(
        interrupted * 2 >= runs,
        "only {interrupted} of {runs} runs were interrupted"
    );
}

#[test]
fn killed_runs_leave_no_file_and_no_child_process() {
    use std::os::unix::process::ExitStatusExt;
    let mut next = moments(0x2545_F491_4F6C_DD1Du64);
    let mut runs = 0;
    let mut killed = 0;
    for _round in 0..2 {
        for line in command_lines("DIR", genome()) {
            let dir = tempfile::tempdir().unwrap();
            // The records go to DIR too: their pending file is unnamed until the run
            // succeeds, so a kill leaves no temporary file there either.
            let records = dir.path().join("records.jsonl");
            let mut args: Vec<String> = line
                .iter()
                .map(|a| a.replace("DIR", dir.path().to_str().unwrap()))
                .collect();
            args.extend(["-o".into(), records.display().to_string()]);
            let mut child = Command::new(env!("CARGO_BIN_EXE_pmscope"))
                .env("PMSCOPE_RESULTS", test_store())
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let pid = child.id();
            std::thread::sleep(Duration::from_millis(150 + next() % 1200));
            let grandchildren = children_of(pid);
            let _ = child.kill();
            let status = child.wait().unwrap();
            runs += 1;
            if status.signal() == Some(9) {
                killed += 1;
            } else {
                assert_eq!(status.code(), Some(0), "{args:?}: {status:?}");
            }
            assert_eq!(shm_files_of(pid), Vec::<String>::new(), "{args:?}");
            let left: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| !(status.success() && *p == records))
                .collect();
            assert!(left.is_empty(), "{args:?}: left {left:?}");
            for c in grandchildren {
                assert!(!alive(c), "{args:?}: child {c} outlived pmscope");
            }
        }
    }
    assert!(runs >= 18, "{runs} runs");
    assert!(
        killed * 2 >= runs,
        "only {killed} of {runs} runs were killed mid-way"
    );
}

/// A results store of this test process's own, so no test writes into the user's store.
fn test_store() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "pmscope-test-{}/results.sqlite",
        std::process::id()
    ))
}
