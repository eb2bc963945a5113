//! `pmscope run` end to end: a C probe (tests/run/placement_probe.c, compiled here with the
//! system's C compiler) checks its own placement through /proc/self/smaps and numa_maps
//! under the preload library and exits 1 when it is wrong; pmscope's record must agree.
//! Bad targets fail before the program starts; exit statuses pass through; a program
//! started by a wrapper still reports (the WIP library's python bug).
//!
//! The lab guest runs `needs_fsdax` and `needs_memonly_node` (lab/stage.sh), with the
//! probe compiled on the host (`PMSCOPE_RUN_PROBE`) and the binary at `PMSCOPE_BIN`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

fn bin() -> PathBuf {
    std::env::var_os("PMSCOPE_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_pmscope").into())
        .into()
}

/// The probe: `PMSCOPE_RUN_PROBE` where the stage built it, else compiled once per test
/// process with `$CC` (default `cc`).
fn probe() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        if let Some(p) = std::env::var_os("PMSCOPE_RUN_PROBE") {
            return p.into();
        }
        let dir = std::env::temp_dir().join(format!("pmscope-run-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("placement_probe");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/run/placement_probe.c");
        let status = Command::new(&cc)
            .args(["-O2", "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .unwrap_or_else(|e| panic!("cannot run the C compiler {cc}: {e}"));
        assert!(status.success(), "{cc} failed on {}", src.display());
        out
    })
}

/// `pmscope run` with a record file in `dir`, no store; returns the output and the record.
fn run_in(dir: &Path, pre: &[&str], command: &[&str]) -> (Output, Option<Value>) {
    let record = dir.join(format!("run-{}.jsonl", rand_suffix()));
    let mut args: Vec<String> = vec!["run".into(), "--no-store".into(), "-o".into()];
    args.push(record.display().to_string());
    args.extend(pre.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.extend(command.iter().map(|s| s.to_string()));
    let out = Command::new(bin())
        .args(&args)
        .env("HOME", dir)
        .stdin(Stdio::null())
        .output()
        .expect("run pmscope");
    let rec = std::fs::read_to_string(&record)
        .ok()
        .and_then(|t| t.lines().next().map(|l| serde_json::from_str(l).unwrap()));
    (out, rec)
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs the probe on `target` expecting `expect`; asserts it passed and returns the record.
fn probe_on(target: &str, expect: &str, node: Option<u32>) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let probe = probe().display().to_string();
    let mut cmd = vec![probe.as_str(), expect];
    let node = node.map(|n| n.to_string());
    if let Some(n) = &node {
        cmd.push(n);
    }
    let (o, rec) = run_in(dir.path(), &["-t", target], &cmd);
    assert!(
        o.status.success(),
        "the probe failed on {target}: {}",
        stderr(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("all placed as"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let rec = rec.expect("a run record");
    let v = &rec["values"];
    // malloc(32M), calloc(8M), mmap(16M), realloc(48M); the 100 small ones are not served.
    assert_eq!(v["served_allocations"], 4.0, "{rec}");
    assert_eq!(v["mmap_served_allocations"], 1.0, "{rec}");
    assert!(
        v["below_threshold_allocations"].as_f64().unwrap() >= 100.0,
        "{rec}"
    );
    assert_eq!(v["refused_allocations"], 0.0, "{rec}");
    assert_eq!(v["exit_code"], 0.0);
    assert!(
        v["resident_bytes"].as_f64().unwrap() >= (64 << 20) as f64,
        "{rec}"
    );
    rec
}

#[test]
fn dram_4k_places_large_buffers_with_base_pages_on_the_node() {
    let rec = probe_on("dram:4k,node=0", "4k", Some(0));
    assert_eq!(rec["values"]["verified_page_bytes"], 4096.0, "{rec}");
    assert_eq!(rec["values"]["bytes_on_2m"], 0.0, "{rec}");
    assert_eq!(rec["target"]["spec"], "dram:4k,node=0");
    let nodes = rec["target"]["achieved"]["nodes"].as_object().unwrap();
    assert_eq!(nodes.keys().collect::<Vec<_>>(), ["0"], "{rec}");
}

#[test]
fn dram_thp_places_large_buffers_on_huge_pages() {
    let rec = probe_on("dram:thp", "thp", None);
    assert!(
        rec["values"]["bytes_on_2m"].as_f64().unwrap() > 0.0,
        "{rec}"
    );
}

#[test]
fn dram_2m_places_large_buffers_on_hugetlb_pages() {
    // ./dev test reserves 64 free 2 MiB pages; the probe needs 52 at its peak.
    let rec = probe_on("dram:2m", "2m", None);
    assert_eq!(
        rec["values"]["verified_page_bytes"],
        (2 << 20) as f64,
        "{rec}"
    );
    assert_eq!(rec["values"]["bytes_on_4k"], 0.0, "{rec}");
    let warnings = rec["warnings"].as_array().unwrap();
    assert!(warnings.is_empty(), "{rec}");
}

#[test]
fn shm_places_large_buffers_in_unnamed_files_in_dev_shm() {
    let rec = probe_on("shm", "file:/dev/shm", None);
    assert_eq!(rec["target"]["achieved"]["persistence"], "emulated");
}

#[test]
fn file_dir_places_large_buffers_in_files_there_and_leaves_none_unless_keep() {
    let heap = tempfile::tempdir().unwrap();
    let target = format!("file:{}", heap.path().display());
    let expect = format!("file:{}", heap.path().display());
    probe_on(&target, &expect, None);
    let left: Vec<_> = std::fs::read_dir(heap.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");

    let dir = tempfile::tempdir().unwrap();
    let (o, _) = run_in(
        dir.path(),
        &["-t", &target, "--keep"],
        &[&probe().display().to_string(), &expect],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let kept: Vec<String> = std::fs::read_dir(heap.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!kept.is_empty(), "--keep kept nothing");
    assert!(
        kept.iter()
            .all(|n| n.starts_with("pmscope-") && n.ends_with("-kept.bin")),
        "{kept:?}"
    );
    assert!(stderr(&o).contains("kept: "), "{}", stderr(&o));
}

#[test]
fn bad_targets_fail_with_one_sentence_before_the_program_starts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let existing = dir.path().join("existing.bin");
    std::fs::write(&existing, b"x").unwrap();
    let touch = format!("touch {}", marker.display());
    let cases: Vec<(String, String)> = vec![
        (
            "file:/nonexistent/heap/dir".into(),
            "pmscope: /nonexistent/heap/dir does not exist and neither does its directory /nonexistent/heap: create the directory first (mkdir -p /nonexistent/heap) or name one that exists".into(),
        ),
        (
            format!("file:{}", existing.display()),
            format!(
                "pmscope: {} already exists and pmscope never overwrites a file; name a directory or a new path",
                existing.display()
            ),
        ),
        (
            format!("file:{}/new.bin", dir.path().display()),
            format!(
                "pmscope: pmscope run puts each allocation in a file of its own, so file: must name a directory, not the new file {}/new.bin",
                dir.path().display()
            ),
        ),
        (
            "devdax:/dev/dax0.0".into(),
            "pmscope: writing to /dev/dax0.0 destroys its contents; pass --destroy-data if that is what you want".into(),
        ),
        (
            "ram".into(),
            "pmscope: --target ram: unknown target kind 'ram': use one of dram, file, shm, devdax".into(),
        ),
    ];
    for (target, message) in cases {
        let (o, rec) = run_in(dir.path(), &["-t", &target], &["sh", "-c", &touch]);
        assert_eq!(o.status.code(), Some(2), "{target}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim_end(), message, "{target}");
        assert_eq!(stderr(&o).lines().count(), 1, "{target}");
        assert!(!marker.exists(), "{target}: the program ran");
        assert!(rec.is_none(), "{target}: a record was written");
    }
    let (o, _) = run_in(dir.path(), &["-t", "dram"], &["/nonexistent/program"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim_end(),
        "pmscope: cannot run '/nonexistent/program': no such program (give a path, or a name found in PATH)"
    );
}

#[test]
fn the_programs_exit_status_passes_through() {
    let dir = tempfile::tempdir().unwrap();
    let (o, rec) = run_in(dir.path(), &["-t", "dram"], &["sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert_eq!(rec.unwrap()["values"]["exit_code"], 7.0);
    // Killed by a signal: 128 + N, as a shell reports it.
    let (o, rec) = run_in(dir.path(), &["-t", "dram"], &["sh", "-c", "kill -KILL $$"]);
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    let rec = rec.unwrap();
    assert_eq!(rec["values"]["exit_code"], 137.0);
    assert!(
        rec["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "no-placement-report"),
        "{rec}"
    );
}

/// The WIP library's python bug: the report belonged to the first process that loaded the
/// library (here the shell) and was hidden from its children, so python's 64 MiB bytearray
/// was never reported. Every process now reports; the shell's block places nothing.
#[test]
fn a_program_started_by_a_wrapper_reports_its_placement() {
    if Command::new("python3").arg("-V").output().is_err() {
        panic!("python3 is needed (./dev setup installs it)");
    }
    let dir = tempfile::tempdir().unwrap();
    let script = "b = bytearray(64 << 20)\nb[::4096] = b'x' * (len(b) // 4096)\nb += bytearray(8 << 20)\nprint(len(b))";
    let (o, rec) = run_in(
        dir.path(),
        &["-t", "dram:thp"],
        &["sh", "-c", &format!("python3 -c \"{script}\"; true")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "75497472");
    let rec = rec.unwrap();
    let v = &rec["values"];
    assert!(v["processes"].as_f64().unwrap() >= 2.0, "{rec}");
    assert!(
        v["served_bytes"].as_f64().unwrap() >= (72 << 20) as f64,
        "{rec}"
    );
    assert!(stderr(&o).contains("python3"), "{}", stderr(&o));
}

/// A server holds its slabs until it exits: every region still live at exit is read back
/// (one pass over smaps and numa_maps for all of them), not a first few.
#[test]
fn every_region_live_at_exit_is_read_back() {
    let dir = tempfile::tempdir().unwrap();
    // 700 buffers of 100 KiB, each touched, none freed: libc's exit() runs the library's
    // report but not Python's finalisation, which would free them first.
    let script =
        "import ctypes\nk = [bytearray(100 << 10) for _ in range(700)]\nctypes.CDLL(None).exit(0)";
    let (o, rec) = run_in(
        dir.path(),
        &["-t", "dram:4k", "--threshold", "64KiB"],
        &["python3", "-c", script],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rec = rec.unwrap();
    let v = &rec["values"];
    assert!(v["verified_regions"].as_f64().unwrap() >= 700.0, "{rec}");
    assert!(
        v["bytes_on_4k"].as_f64().unwrap() >= (700 * (100 << 10)) as f64,
        "{rec}"
    );
    let warnings = rec["warnings"].as_array().unwrap();
    assert!(
        !warnings
            .iter()
            .any(|w| w["code"] == "placement-partly-verified"),
        "{rec}"
    );
    let nodes = rec["target"]["achieved"]["nodes"].as_object().unwrap();
    assert!(!nodes.is_empty(), "{rec}");
}

/// SIGTERM sent to pmscope alone reaches the program (a terminal's Ctrl-C reaches both
/// itself); pmscope then exits with the program's status.
#[test]
fn a_kill_of_pmscope_is_forwarded_to_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin())
        .args(["run", "--no-store", "-t", "dram", "--", "sleep", "60"])
        .env("HOME", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until pmscope has started the program (its handler is installed by then).
    let children = format!("/proc/{0}/task/{0}/children", child.id());
    for _ in 0..2000 {
        if std::fs::read_to_string(&children).is_ok_and(|c| !c.trim().is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(143),
        "sleep should die of the forwarded SIGTERM"
    );
}

/// In the lab guest: an fsdax mount (`LABVM_FSDAX_MNT`).
mod needs_fsdax {
    use super::*;

    #[test]
    #[ignore = "needs fsdax: runs in the lab guest via lab/stage.sh"]
    fn run_places_large_buffers_in_map_sync_files_on_fsdax() {
        let mnt = std::env::var("LABVM_FSDAX_MNT")
            .expect("LABVM_FSDAX_MNT is not set: this test needs the lab guest");
        let rec = {
            let dir = tempfile::tempdir().unwrap();
            let expect = format!("file:{mnt}");
            let out = Command::new(bin())
                .args(["run", "--no-store", "-o"])
                .arg(dir.path().join("r.jsonl"))
                .args(["-t", &expect, "--"])
                .arg(probe())
                .arg(&expect)
                .env("PROBE_EXPECT_SYNC", "1")
                .env("HOME", dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            let text = std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap();
            serde_json::from_str::<Value>(text.lines().next().unwrap()).unwrap()
        };
        assert_eq!(rec["target"]["achieved"]["persistence"], "dax", "{rec}");
        assert_eq!(rec["target"]["achieved"]["map_sync"], true, "{rec}");
        assert_eq!(rec["values"]["served_allocations"], 4.0, "{rec}");
        let left: Vec<_> = std::fs::read_dir(&mnt)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().starts_with("pmscope-"))
            .collect();
        assert!(left.is_empty(), "files left on the mount: {left:?}");
    }
}

/// In the lab guest: a memory-only NUMA node (`LABVM_MEMONLY_NODE`).
mod needs_memonly_node {
    use super::*;

    #[test]
    #[ignore = "needs memonly_node: runs in the lab guest via lab/stage.sh"]
    fn run_places_large_buffers_on_the_memory_only_node() {
        let node: u32 = std::env::var("LABVM_MEMONLY_NODE")
            .expect("LABVM_MEMONLY_NODE is not set: this test needs the lab guest")
            .parse()
            .unwrap();
        let rec = probe_on(&format!("dram:4k,node={node}"), "4k", Some(node));
        let nodes = rec["target"]["achieved"]["nodes"].as_object().unwrap();
        assert_eq!(
            nodes.keys().collect::<Vec<_>>(),
            [&node.to_string()],
            "{rec}"
        );
    }
}
