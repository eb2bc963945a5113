//! Ctrl-C and SIGTERM at random moments in every command that maps a target: the run stops,
//! exits 130 or 143, prints the points it finished (SIGINT/SIGTERM in table mode), and leaves
//! no file behind in /dev/shm or in the file target's directory.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each command with a shm and a file target, sized to run a few seconds.
fn command_lines(dir: &str) -> Vec<Vec<String>> {
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
    ]
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

#[test]
fn interrupted_runs_stop_report_and_leave_nothing_behind() {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut runs = 0;
    let mut interrupted = 0;
    for round in 0..4 {
        for line in command_lines("DIR") {
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
                    assert!(
                        out.contains("finished before the interruption"),
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

/// A results store of this test process's own, so no test writes into the user's store.
fn test_store() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "pmscope-test-{}/results.sqlite",
        std::process::id()
    ))
}
