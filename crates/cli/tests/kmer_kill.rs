//! SIGKILL in the middle of `pmscope kmer count --table static-pm --pool`: at random
//! moments the process is killed, `kmer recover` must accept the pool (its invariants
//! hold), and the same command run again must finish the job with exactly the counts of an
//! uninterrupted run. On shm here; on a real fsdax file in the lab guest (`needs_fsdax`).
//! SIGINT and SIGTERM inside a genome: both persistent tables stop there, within
//! milliseconds, and resume the same way.
//!
//! What this proves: process death. A killed process's stores stay in the CPU caches and
//! reach the file, so a kill cannot see a missing flush or fence (with every flush and
//! fence removed this test still passes); power failure is the crash-image checker's
//! (`crates/workload/src/kmer/table/crash_check`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    std::env::var_os("PMSCOPE_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_pmscope").into())
        .into()
}

/// A results store of this test process's own, so no test writes into the user's store.
fn test_store() -> PathBuf {
    std::env::temp_dir().join(format!(
        "pmscope-test-{}/results.sqlite",
        std::process::id()
    ))
}

fn pmscope(args: &[String]) -> Output {
    Command::new(bin())
        .env("PMSCOPE_RESULTS", test_store())
        .args(args)
        .output()
        .expect("run pmscope")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "pmscope failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A reference and `strains` strains of `length` bases each in `dir`: several genomes, so
/// kills land inside different genomes and resumes skip the completed ones.
fn genomes(dir: &Path, length: &str, strains: usize) -> Vec<String> {
    let o = pmscope(
        &[
            "kmer",
            "synth",
            "--length",
            length,
            "--strains",
            &strains.to_string(),
            "--no-store",
        ]
        .map(String::from)
        .into_iter()
        .chain([dir.display().to_string()])
        .collect::<Vec<_>>(),
    );
    ok(&o);
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".fasta"))
        .collect();
    files.sort();
    files
}

/// The k-mers with their genome counts, sorted (tables iterate in different orders).
fn counts(path: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.sort_unstable();
    lines
}

fn count_args(files: &[String], extra: &[&str], out: &Path) -> Vec<String> {
    let mut a: Vec<String> = ["kmer", "count", "-k", "31", "--threads", "2", "--no-store"]
        .map(String::from)
        .to_vec();
    a.extend(files.iter().cloned());
    a.extend(extra.iter().map(|s| s.to_string()));
    a.extend([
        "--kmers".into(),
        out.display().to_string(),
        "--force".into(),
    ]);
    a
}

/// A xorshift generator of the moments the kills are sent at (deterministic per seed).
fn moments(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Whether `pool` begins with the pool magic ("PMSCKMER").
fn has_magic(pool: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    std::fs::File::open(pool)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| &magic == b"PMSCKMER")
}

/// What the kill rounds did.
#[derive(Debug, Default)]
struct Rounds {
    /// Killed mid-run, recovered and resumed.
    resumed: usize,
    /// Killed before the pool got its name (it is named once its header is durable): no
    /// pool file, and the run starts over.
    killed_while_creating: usize,
    /// Finished before the kill.
    finished: usize,
}

/// Until `wanted` runs were killed mid-way and resumed (at most `max_rounds` rounds): start
/// a static-pm count into a new pool in `pool_dir`, SIGKILL it at a random moment of its
/// run, check the pool with `kmer recover`, run the same command again and compare its
/// counts with the volatile table's uninterrupted run.
fn kill_and_resume(
    pool_dir: &Path,
    files: &[String],
    persist: &[&str],
    wanted: usize,
    max_rounds: usize,
) -> Rounds {
    let work = tempfile::tempdir().unwrap();
    let truth_file = work.path().join("truth.tsv");
    ok(&pmscope(&count_args(files, &[], &truth_file)));
    let truth = counts(&truth_file);
    assert!(truth.len() > 1000, "the genomes give too few k-mers");

    // The length of an uninterrupted static-pm run sets the range of the kill moments.
    let probe = pool_dir.join(format!("pmscope-test-{}-probe.pool", std::process::id()));
    let out = work.path().join("probe.tsv");
    let pool_args = |pool: &Path| {
        let mut args = vec!["--table", "static-pm"];
        args.extend_from_slice(persist);
        args.extend_from_slice(&["--pool", pool.to_str().unwrap()]);
        args.into_iter().map(String::from).collect::<Vec<String>>()
    };
    let extra = pool_args(&probe);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let started = Instant::now();
    ok(&pmscope(&count_args(files, &extra, &out)));
    let mut full = started.elapsed().as_millis() as u64;
    std::fs::remove_file(&probe).unwrap();
    assert_eq!(counts(&out), truth, "an uninterrupted static-pm run");

    let mut next = moments(0x5851_F42D_4C95_7F2D);
    let mut done = Rounds::default();
    for round in 0..max_rounds {
        if done.resumed >= wanted {
            break;
        }
        let pool = pool_dir.join(format!("pmscope-test-{}-{round}.pool", std::process::id()));
        let extra = pool_args(&pool);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let out = work.path().join(format!("{round}.tsv"));
        let args = count_args(files, &extra, &out);
        let mut child = Command::new(bin())
            .env("PMSCOPE_RESULTS", test_store())
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Once the pool's header is durable (its magic is written last), anywhere from
        // there to a little past the end of a run; a few rounds earlier, during creation.
        let start = Instant::now();
        if round % 8 != 7 {
            while !has_magic(&pool) && start.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let left = full.saturating_sub(start.elapsed().as_millis() as u64);
        std::thread::sleep(Duration::from_millis(next() % (left + left / 8 + 1)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.success() {
            // The run was shorter than the probe's (a busier machine then, a warmer page
            // cache now): later kills come sooner.
            done.finished += 1;
            full = (full * 3 / 4).max(1);
        } else {
            let recover = pmscope(&[
                "kmer".into(),
                "recover".into(),
                "--pool".into(),
                pool.display().to_string(),
            ]);
            let said = String::from_utf8_lossy(&recover.stderr).into_owned();
            if pool.exists() {
                // Whenever it was killed, a pool file that exists is one that opens.
                assert!(
                    recover.status.success(),
                    "round {round}: kmer recover refused the pool of a killed run: {said}"
                );
                done.resumed += 1;
            } else {
                done.killed_while_creating += 1;
            }
            ok(&pmscope(&args));
        }
        assert_eq!(
            counts(&out),
            truth,
            "round {round}: the counts after the kill and the resumed run"
        );
        let _ = std::fs::remove_file(&pool);
    }
    eprintln!("static-pm kill rounds ({}): {done:?}", persist.join(" "));
    done
}

#[test]
fn static_pm_killed_at_random_moments_resumes_to_exact_counts_on_shm() {
    let dir = tempfile::tempdir().unwrap();
    let files = genomes(dir.path(), "500k", 4);
    let done = kill_and_resume(
        Path::new("/dev/shm"),
        &files,
        &["--persist", "clwb"],
        20,
        48,
    );
    assert!(
        done.resumed >= 20,
        "only {} of 48 runs were killed mid-way and resumed: {done:?}",
        done.resumed
    );
}

/// The same with `--fence per-slot` (the seed's Static-HT): a flush and a fence after every
/// written slot, fewer rounds.
#[test]
fn static_pm_with_per_slot_fences_killed_at_random_moments_resumes_to_exact_counts() {
    let dir = tempfile::tempdir().unwrap();
    let files = genomes(dir.path(), "500k", 4);
    let options = ["--persist", "clwb", "--fence", "per-slot"];
    let done = kill_and_resume(Path::new("/dev/shm"), &files, &options, 6, 16);
    assert!(done.resumed >= 6, "{done:?}");
}

mod needs_fsdax {
    use super::*;

    #[test]
    #[ignore = "needs fsdax: runs in the lab guest via lab/stage.sh"]
    fn static_pm_killed_at_random_moments_resumes_to_exact_counts_on_fsdax() {
        let mnt = std::env::var("LABVM_FSDAX_MNT").unwrap_or_else(|_| {
            panic!(
                "LABVM_FSDAX_MNT is not set: this test needs the lab guest (run by lab/stage.sh)"
            )
        });
        let dir = tempfile::tempdir().unwrap();
        let files = genomes(dir.path(), "200k", 3);
        let done = kill_and_resume(Path::new(&mnt), &files, &["--persist", "clwb"], 3, 12);
        assert!(done.resumed >= 3, "{done:?}");
    }
}

/// `kmer recover`'s count of completed genomes and of k-mers in `pool`.
fn recovered(pool: &Path) -> (u64, u64) {
    let o = pmscope(&[
        "kmer".into(),
        "recover".into(),
        "--pool".into(),
        pool.display().to_string(),
    ]);
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    // "  N genomes completed; M k-mers (...)"
    let line = out
        .lines()
        .find(|l| l.contains("genomes completed;"))
        .unwrap_or_else(|| panic!("no genome count in: {out}"));
    let number = |s: &str| -> u64 {
        s.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"))
    };
    let (done, rest) = line.split_once("genomes completed;").unwrap();
    (number(done), number(rest))
}

/// SIGINT and SIGTERM in the middle of a genome: the workers stop inside it rather than at
/// its end, the run exits 130/143 within seconds, the pool keeps what was inserted (with
/// the genome not marked complete), and the same command resumes it to exactly the
/// volatile table's counts. The tables persist through msync on a file of the disk the
/// build is on, so one genome takes seconds (static-pm) or minutes (tx-pm): a stop that
/// waited for the genome's end could not be this quick.
#[test]
fn persistent_tables_interrupted_mid_genome_resume_to_exact_counts() {
    let genomes_dir = tempfile::tempdir().unwrap();
    let files = genomes(genomes_dir.path(), "1M", 2);
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let truth_file = work.path().join("truth.tsv");
    ok(&pmscope(&count_args(&files, &[], &truth_file)));
    let truth = counts(&truth_file);

    // The distinct k-mers of the first genome alone: a run stopped inside it holds fewer.
    let first_file = work.path().join("first.tsv");
    ok(&pmscope(&count_args(&files[..1], &[], &first_file)));
    let first = counts(&first_file)
        .iter()
        .filter(|l| !l.starts_with("kmer\t"))
        .count() as u64;

    // Each table, its signal and exit code, and when the signal comes after the pool is
    // named: inside the first genome (about 2 s of static-pm; minutes of tx-pm, which
    // first formats its pool).
    let cases: [(&str, &[&str], &str, i32, u64); 2] = [
        (
            "static-pm",
            &["--table", "static-pm", "--persist", "msync"],
            "-INT",
            130,
            300,
        ),
        ("tx-pm", &["--table", "tx-pm"], "-TERM", 143, 2000),
    ];
    for (name, table, signal, code, after_ms) in cases {
        let pool = work.path().join(format!("{name}.pool"));
        let out = work.path().join(format!("{name}.tsv"));
        let mut extra: Vec<&str> = table.to_vec();
        let pool_arg = pool.display().to_string();
        extra.extend(["--pool", &pool_arg]);
        let args = count_args(&files, &extra, &out);
        let child = Command::new(bin())
            .env("PMSCOPE_RESULTS", test_store())
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Inside the first genome: the pool is named once its header is durable.
        let start = Instant::now();
        while !pool.exists() && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(after_ms));
        let _ = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        let signalled = Instant::now();
        let mut child = child;
        while child.try_wait().unwrap().is_none() {
            if signalled.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{name}: still running 10 s after {signal}");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let took = signalled.elapsed();
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{name} {signal}: {err}");
        assert!(
            took < Duration::from_secs(5),
            "{name}: {took:?} from {signal} to the exit"
        );
        assert!(
            err.contains("keeps the genomes it completed: run the same command to resume"),
            "{name}: {err}"
        );
        let (completed, kmers) = recovered(&pool);
        assert!(
            completed == 0 && kmers > 0 && kmers < first,
            "{name}: stopped with {completed} of 3 genomes complete and {kmers} k-mers: \
             not inside the first genome ({first} k-mers)"
        );
        eprintln!(
            "{name}: {signal} stopped the run in {took:?} with {completed} of 3 genomes complete and {kmers} k-mers"
        );
        // Resumed: libpmem flushes with CPU instructions instead of msync here (tx-pm would
        // take minutes); the pool's contents are the same either way.
        let resumed = Command::new(bin())
            .env("PMSCOPE_RESULTS", test_store())
            .env("PMEM_IS_PMEM_FORCE", "1")
            .args(&args)
            .output()
            .unwrap();
        ok(&resumed);
        assert_eq!(
            counts(&out),
            truth,
            "{name}: the counts after the interrupt and the resumed run"
        );
    }
}

/// SIGKILL while the bins are written out of core leaves nothing in the scratch directory:
/// the scratch file has no name (or loses it as it is made), so no exit path can leave it.
/// The kill lands once the file, seen through /proc/PID/fd, holds bins.
#[test]
fn a_kill_while_counting_out_of_core_leaves_no_scratch_file() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let mut child = Command::new(bin())
        .env("PMSCOPE_RESULTS", test_store())
        .args([
            "kmer",
            "count",
            "-k",
            "31",
            "synth:seed-2,scale=0.2",
            "--bins",
            "disk",
        ])
        .arg("--tmp")
        .arg(&scratch)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run pmscope");
    let fds = PathBuf::from(format!("/proc/{}/fd", child.id()));
    let deadline = Instant::now() + Duration::from_secs(60);
    let written = loop {
        let bins = std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .find_map(|fd| {
                let target = std::fs::read_link(fd.path()).ok()?;
                let len = std::fs::metadata(fd.path()).ok()?.len();
                (target.starts_with(&scratch) && len > 0).then_some(len)
            });
        if let Some(len) = bins {
            break len;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the count ended before its scratch file held bins"
        );
        assert!(Instant::now() < deadline, "no scratch file in 60 s");
        std::thread::sleep(Duration::from_millis(5));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        left.is_empty(),
        "killed with {written} bytes of bins, it left {left:?}"
    );
}
