//! pmscope without PMDK (issue 23): libpmemobj is loaded at run time, not linked, so the
//! binary starts on a machine without it; what needs it (the tx-pm table: `kmer count
//! --table tx-pm`, `kmer bench`, `kmer recover` of a tx-pm pool) exits 1 with one sentence
//! saying what to install, before any work, and everything else works.
//!
//! A machine without PMDK is simulated by pointing `PMSCOPE_LIBPMEMOBJ` (which overrides
//! the library search) at a file that does not exist.

use std::path::Path;
use std::process::{Command, Output};

fn bin() -> std::ffi::OsString {
    // In the lab guest the binary is not at the path Cargo compiled in: PMSCOPE_BIN names it.
    std::env::var_os("PMSCOPE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_pmscope").into())
}

const MISSING: &str = "/nonexistent/libpmemobj.so.1";

/// The whole of stderr when libpmemobj is missing: one line, the one sentence.
const SENTENCE: &str = "pmscope: the tx-pm table needs PMDK's libpmemobj, which is not installed \
     (PMSCOPE_LIBPMEMOBJ=/nonexistent/libpmemobj.so.1 not found): install it with \
     `apt-get install libpmemobj1` (Debian/Ubuntu), or set PMSCOPE_LIBPMEMOBJ to its path\n";

/// pmscope run in `dir` as on a machine without libpmemobj, with a results store of its own.
fn without_pmdk(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .current_dir(dir)
        .env("PMSCOPE_LIBPMEMOBJ", MISSING)
        .env("PMSCOPE_RESULTS", dir.join("pmscope-test-results.sqlite"))
        .args(args)
        .output()
        .expect("run pmscope")
}

/// A directory with one genome, a.fa.
fn genome() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut fasta = b">a\n".to_vec();
    fasta.extend(pmscope_workload::kmer::synth::random_bases(5_000, 7));
    fasta.push(b'\n');
    std::fs::write(dir.path().join("a.fa"), fasta).unwrap();
    dir
}

fn says_what_to_install(o: &Output) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr, SENTENCE);
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn kmer_count_tx_pm_without_libpmemobj_says_what_to_install_and_creates_no_pool() {
    let dir = genome();
    let pools = dir.path().join("pools");
    std::fs::create_dir(&pools).unwrap();
    let target = format!("file:{}", pools.display());
    // A scratch pool on the target, and a named pool.
    let o = without_pmdk(
        dir.path(),
        &[
            "kmer", "count", "--table", "tx-pm", "-t", &target, "-k", "11", "a.fa",
        ],
    );
    says_what_to_install(&o);
    let pool = pools.join("tx.pool");
    let o = without_pmdk(
        dir.path(),
        &[
            "--json",
            "kmer",
            "count",
            "--table",
            "tx-pm",
            "--pool",
            pool.to_str().unwrap(),
            "-k",
            "11",
            "a.fa",
        ],
    );
    says_what_to_install(&o);
    assert_eq!(entries(&pools), Vec::<String>::new(), "no pool file");
    assert_eq!(
        entries(dir.path()),
        ["a.fa", "pools"],
        "no record, no store"
    );
}

#[test]
fn kmer_bench_without_libpmemobj_refuses_before_measuring_anything() {
    let dir = genome();
    let pools = dir.path().join("pools");
    std::fs::create_dir(&pools).unwrap();
    let target = format!("file:{}", pools.display());
    // Human output: a bench that measured a table first would have said so on stderr.
    let o = without_pmdk(
        dir.path(),
        &[
            "kmer",
            "bench",
            "-t",
            &target,
            "--threads",
            "1",
            "-k",
            "11",
            "a.fa",
        ],
    );
    says_what_to_install(&o);
    assert_eq!(entries(&pools), Vec::<String>::new(), "no table file");
    assert_eq!(
        entries(dir.path()),
        ["a.fa", "pools"],
        "no record, no store"
    );
}

#[test]
fn kmer_recover_of_a_tx_pm_pool_without_libpmemobj_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    // What pmscope reads of a tx-pm pool before PMDK checks it: the pool signature, and
    // the layout name at 4 KiB.
    let mut header = vec![0u8; 8192];
    header[..8].copy_from_slice(b"PMEMOBJ\0");
    let layout = b"pmscope-kmer-tx-1 k=11 inputs=00000000000000ab";
    header[4096..4096 + layout.len()].copy_from_slice(layout);
    let pool = dir.path().join("tx.pool");
    std::fs::write(&pool, &header).unwrap();
    let o = without_pmdk(
        dir.path(),
        &["kmer", "recover", "--pool", pool.to_str().unwrap()],
    );
    says_what_to_install(&o);
    assert_eq!(
        std::fs::read(&pool).unwrap(),
        header,
        "the pool is untouched"
    );
}

#[test]
fn the_other_tables_work_without_libpmemobj() {
    let dir = genome();
    let pool = dir.path().join("static.pool");
    for args in [
        &["kmer", "count", "-t", "shm", "-k", "11", "a.fa"][..],
        &[
            "kmer",
            "count",
            "--table",
            "static-pm",
            "--pool",
            pool.to_str().unwrap(),
            "-k",
            "11",
            "a.fa",
        ],
    ] {
        let o = without_pmdk(dir.path(), args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(pool.exists());
}

/// The binary needs no PMDK library to start: none is among the libraries it is linked
/// with (what the dynamic loader must find before `main`).
#[test]
fn the_pmscope_binary_does_not_link_libpmemobj() {
    let o = Command::new("ldd")
        .arg(bin())
        .output()
        .expect("run ldd (libc-bin)");
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && listed.contains("libc.so"),
        "ldd lists no libraries: {listed}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let pmem: Vec<&str> = listed.lines().filter(|l| l.contains("pmem")).collect();
    assert!(pmem.is_empty(), "pmscope is linked with {pmem:?}");
}
