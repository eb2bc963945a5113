//! Pool files the user names with `--pool`: never stranded, never changed by a refusal.
//!
//! * Killed while the pool is created (SIGKILL at 24 moments from a fixed seed, from the
//!   process's start to twice the moment the pool got its name): there is no pool file, or
//!   one that `kmer recover` accepts and the rerun resumes to exact counts; no scratch file
//!   outlives the next run. For static-pm and tx-pm.
//! * Refused pools — truncated, foreign, a corrupt header, the other table's pool, a newer
//!   layout version — are refused by `kmer count` and `kmer recover` with exit 2, and are
//!   byte for byte what they were (the whole file compared). For static-pm and tx-pm.
//!
//! This proves process death (SIGKILL): the caches survive a kill, so these tests say
//! nothing about flushes; power failure is the crash-image checker's
//! (`crates/workload/src/kmer/table/crash_check`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    std::env::var_os("PMSCOPE_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_pmscope").into())
        .into()
}

fn pmscope(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .arg("--no-store")
        .output()
        .expect("run pmscope")
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "pmscope failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Synthetic genomes in `dir`: a reference and `strains` strains of `length` bases.
fn genomes(dir: &Path, length: &str, strains: &str) -> Vec<String> {
    let g = dir.join("g");
    ok(&pmscope(&[
        "kmer",
        "synth",
        "--length",
        length,
        "--strains",
        strains,
        g.to_str().unwrap(),
    ]));
    let mut files: Vec<String> = std::fs::read_dir(&g)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    files.sort();
    files
}

fn count_args<'a>(
    files: &'a [String],
    table: &'a str,
    pool: &'a Path,
    out: &'a Path,
) -> Vec<&'a str> {
    let mut a = vec!["kmer", "count", "-k", "31", "--threads", "2", "--sorted"];
    a.extend(files.iter().map(String::as_str));
    a.extend(["--table", table, "--pool", pool.to_str().unwrap()]);
    a.extend(["--kmers", out.to_str().unwrap(), "--force"]);
    a
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// A xorshift generator of the kill moments (deterministic per seed).
fn moments(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Files in `dir` other than `keep`.
fn others(dir: &Path, keep: &[&Path]) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !keep.contains(&p.as_path()))
        .collect()
}

/// Kills `kmer count --table TABLE --pool P` (a new P each round) `rounds` times between
/// its start and a little after P got its name in an uninterrupted run, and checks what
/// each kill left (see the module comment).
fn killed_while_creating(table: &str, length: &str, rounds: usize) {
    let work = tempfile::tempdir().unwrap();
    let files = genomes(work.path(), length, "1");
    let pools = tempfile::tempdir_in("/dev/shm").unwrap();
    let truth_file = work.path().join("truth.tsv");
    let probe = pools.path().join("probe.pool");
    let args = count_args(&files, table, &probe, &truth_file);
    let mut child = Command::new(bin())
        .args(&args)
        .arg("--no-store")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !probe.exists() && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let named = start.elapsed();
    assert!(child.wait().unwrap().success(), "the uninterrupted run");
    let truth = std::fs::read_to_string(&truth_file).unwrap();
    std::fs::remove_file(&probe).unwrap();
    assert!(truth.lines().count() > 1000, "too few k-mers to test");

    let mut next = moments(0x9E37_79B9_7F4A_7C15);
    let (mut absent, mut accepted) = (0, 0);
    for round in 0..rounds {
        let pool = pools.path().join(format!("{round}.pool"));
        let out = work.path().join(format!("{round}.tsv"));
        let args = count_args(&files, table, &pool, &out);
        let mut child = Command::new(bin())
            .args(&args)
            .arg("--no-store")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Anywhere from the start to twice the moment the probe's pool was named.
        let at = next() % (named.as_micros() as u64 * 2).max(1);
        std::thread::sleep(Duration::from_micros(at));
        let _ = child.kill();
        let finished = child.wait().unwrap().success();
        if !pool.exists() {
            assert!(!finished, "round {round}: the run finished without a pool");
            absent += 1;
        } else {
            let recover = pmscope(&["kmer", "recover", "--pool", pool.to_str().unwrap()]);
            assert!(
                recover.status.success(),
                "round {round} (killed {at} µs in): kmer recover refused the pool the kill left: {}",
                String::from_utf8_lossy(&recover.stderr)
            );
            accepted += 1;
        }
        // Every fourth round, and whenever a pool was left, the rerun finishes the job.
        if round % 4 == 3 || pool.exists() {
            ok(&pmscope(&args));
            assert_eq!(
                std::fs::read_to_string(&out).unwrap(),
                truth,
                "round {round}: the rerun's counts differ from an uninterrupted run's"
            );
            assert!(
                others(pools.path(), &[&pool]).is_empty(),
                "round {round}: files left beside the pool after the rerun: {:?}",
                others(pools.path(), &[&pool])
            );
        }
        let _ = std::fs::remove_file(&pool);
    }
    eprintln!(
        "{table}: {rounds} kills during creation (pool named after {named:?}): {absent} left no pool, {accepted} a pool that recovers"
    );
    assert!(
        absent >= rounds / 4,
        "only {absent} of {rounds} kills landed before the pool was named: {named:?} is too short a window"
    );
}

#[test]
fn static_pm_killed_while_creating_leaves_no_pool_or_one_that_resumes() {
    // Two 400 kbp genomes: a 64 MiB pool, whose allocation and pre-fault take a while.
    killed_while_creating("static-pm", "400k", 24);
}

#[test]
fn tx_pm_killed_while_creating_leaves_no_pool_or_one_that_resumes() {
    killed_while_creating("tx-pm", "30k", 24);
}

/// Writes `bytes` at `offset` of `path`.
fn patch(path: &Path, offset: u64, bytes: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(bytes).unwrap();
}

/// `kmer count --table TABLE` (and, unless the pool is the other table's, which it
/// recognises, `kmer recover`) refuse `pool` with exit 2 and leave it byte for byte.
fn refused_untouched(files: &[String], table: &str, pool: &Path, why: &str, recover: bool) {
    let before = bytes(pool);
    let out = pool.with_extension("tsv");
    let mut runs = vec![("kmer count", pmscope(&count_args(files, table, pool, &out)))];
    if recover {
        runs.push((
            "kmer recover",
            pmscope(&["kmer", "recover", "--pool", pool.to_str().unwrap()]),
        ));
    }
    for (what, o) in &runs {
        let said = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{table} {why}: {what}: {said}");
        assert!(!said.contains("panicked"), "{said}");
        assert!(
            bytes(pool) == before,
            "{table} {why}: {what} changed the refused pool ({said})"
        );
    }
}

#[test]
fn refused_pools_are_left_byte_for_byte() {
    let work = tempfile::tempdir().unwrap();
    let files = genomes(work.path(), "20k", "1");
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let made = |table: &str| {
        let pool = dir.path().join(format!("{table}.pool"));
        ok(&pmscope(&count_args(
            &files,
            table,
            &pool,
            &work.path().join("x.tsv"),
        )));
        pool
    };
    let (static_pm, tx_pm) = (made("static-pm"), made("tx-pm"));
    let copy = |from: &Path, name: &str| {
        let to = dir.path().join(name);
        std::fs::copy(from, &to).unwrap();
        to
    };
    let foreign = dir.path().join("foreign.pool");
    std::fs::write(&foreign, vec![0x5au8; 4 << 20]).unwrap();
    for (table, pool) in [("static-pm", &static_pm), ("tx-pm", &tx_pm)] {
        let len = std::fs::metadata(pool).unwrap().len();
        let truncated = copy(pool, &format!("{table}-truncated.pool"));
        // A third, in whole pages (static-pm maps pages; PMDK reads any length).
        std::fs::File::options()
            .write(true)
            .open(&truncated)
            .unwrap()
            .set_len(len / 3 / 4096 * 4096)
            .unwrap();
        refused_untouched(&files, table, &truncated, "truncated", true);
        refused_untouched(&files, table, &foreign, "foreign", true);
        let corrupt = copy(pool, &format!("{table}-corrupt.pool"));
        let newer = copy(pool, &format!("{table}-newer.pool"));
        match table {
            "static-pm" => {
                patch(&corrupt, 2 * 8, &32u64.to_le_bytes()); // K, under the checksum
                patch(&newer, 8, &3u64.to_le_bytes()); // the layout version
            }
            _ => {
                patch(&corrupt, 100, &[0xff]); // PMDK's pool header, under its checksum
                patch(&newer, 4096, b"pmscope-kmer-tx-2"); // the layout name's version
            }
        }
        refused_untouched(&files, table, &corrupt, "with a corrupt header", true);
        refused_untouched(&files, table, &newer, "of a newer version", true);
    }
    refused_untouched(&files, "tx-pm", &static_pm, "(a static-pm pool)", false);
    refused_untouched(&files, "static-pm", &tx_pm, "(a tx-pm pool)", false);
}
