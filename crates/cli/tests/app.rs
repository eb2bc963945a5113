//! `pmscope app`: real servers with their heap placed by the launch library (in-process: the
//! server is pmscope's own child), their clients, and the lifecycle — a server that fails to
//! start, a killed client and Ctrl-C all leave no process behind.
//! memcached, memaslap, redis-server and redis-benchmark come from ./dev setup; a missing
//! one fails these tests (they are not skipped).

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn pmscope() -> Command {
    // In the lab guest the binary is not at the path Cargo compiled in: PMSCOPE_BIN names it.
    let bin =
        std::env::var_os("PMSCOPE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_pmscope").into());
    let mut c = Command::new(bin);
    c.arg("--no-store");
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn records(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect()
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn which(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed: ./dev setup installs it"))
}

/// Processes whose command line holds `port` as an argument.
fn processes_on(port: u16) -> Vec<String> {
    let port = port.to_string();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmd
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args
            .iter()
            .any(|a| a == &port || a.ends_with(&format!(":{port}")))
        {
            found.push(args.join(" "));
        }
    }
    found
}

/// Nothing listens on `port` and no process names it, within a few seconds.
fn assert_nothing_left(port: u16) {
    let t = Instant::now();
    loop {
        let listening = TcpStream::connect_timeout(
            &(Ipv4Addr::LOCALHOST, port).into(),
            Duration::from_millis(100),
        )
        .is_ok();
        let procs = processes_on(port);
        if !listening && procs.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "left behind on port {port}: listening {listening}, processes {procs:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A directory for PATH holding `links` to real programs and `scripts` written out.
fn fake_path(links: &[&str], scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for l in links {
        std::os::unix::fs::symlink(which(l), d.path().join(l)).unwrap();
    }
    for (name, body) in scripts {
        let p = d.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    d
}

fn path_with(dir: &Path) -> std::ffi::OsString {
    // sh, sleep, kill for the scripts; the fake directory first.
    let mut p = dir.as_os_str().to_owned();
    p.push(":/usr/bin:/bin");
    p
}

#[test]
fn memcached_on_dram_reports_both_mixes_and_its_heap_placement() {
    let port = free_port();
    let o = pmscope()
        .args([
            "--json",
            "app",
            "memcached",
            "-t",
            "dram:4k",
            "--duration",
            "1",
        ])
        .args([
            "--clients",
            "4",
            "--memory",
            "64MiB",
            "--port",
            &port.to_string(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = records(&o);
    let kv: Vec<_> = rs.iter().filter(|r| r["experiment"] == "app-kv").collect();
    let workloads: Vec<&str> = kv
        .iter()
        .map(|r| r["params"]["workload"].as_str().unwrap())
        .collect();
    assert_eq!(workloads, ["get-heavy", "set-heavy"]);
    for r in &kv {
        assert!(r["summary"]["p50"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["params"]["value_bytes"], 1024);
        assert_eq!(r["params"]["target"], "dram:4k");
        assert!(r["values"]["p99_us"].as_f64().unwrap() >= r["values"]["p50_us"].as_f64().unwrap());
    }
    let placement: Vec<_> = rs
        .iter()
        .filter(|r| r["experiment"] == "app-placement")
        .collect();
    assert_eq!(placement.len(), 1);
    assert!(
        placement[0]["params"]["placement"]["params"].is_object(),
        "{}",
        placement[0]
    );
    assert_nothing_left(port);
}

/// Two heap targets in one invocation: each server runs on its target after the other's,
/// each target's records carry its verified placement, a `comparison` record covers both,
/// and the table sets their throughputs side by side.
#[test]
fn two_targets_run_one_after_the_other_and_are_set_side_by_side() {
    for (server, targets, load) in [
        ("memcached", ["dram:4k", "dram:thp"], ["--duration", "1"]),
        // `shm` is recorded as what it means: shm:4k.
        ("redis", ["dram:4k", "shm:4k"], ["--requests", "2000"]),
    ] {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("records.jsonl");
        let o = pmscope()
            .args(["app", server, "-t", targets[0], "-t"])
            .arg(targets[1].trim_end_matches(":4k"))
            .args(load)
            .args(["--clients", "2", "--memory", "64MiB", "--port"])
            .arg(port.to_string())
            .arg("-o")
            .arg(&file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{server}: {}", stderr(&o));
        let rs: Vec<serde_json::Value> = std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let spec_of = |r: &serde_json::Value| r["params"]["target"].as_str().map(String::from);
        // Every record of the first target comes before any of the second.
        let order: Vec<String> = rs.iter().filter_map(spec_of).collect();
        let first_of_second = order.iter().position(|s| s == targets[1]).unwrap();
        assert!(
            order[..first_of_second].iter().all(|s| s == targets[0])
                && order[first_of_second..].iter().all(|s| s == targets[1]),
            "{server}: {order:?}"
        );
        for t in targets {
            let placement: Vec<_> = rs
                .iter()
                .filter(|r| r["experiment"] == "app-placement" && r["params"]["target"] == t)
                .collect();
            assert_eq!(placement.len(), 1, "{server} {t}");
            let achieved = &placement[0]["target"]["achieved"];
            assert!(
                achieved["page_size_source"].is_string(),
                "{server} {t}: {achieved}"
            );
            let kv: Vec<_> = rs
                .iter()
                .filter(|r| r["experiment"] == "app-kv" && r["params"]["target"] == t)
                .collect();
            assert_eq!(kv.len(), 2, "{server} {t}: both workloads");
            for r in kv {
                assert!(r["summary"]["p50"].as_f64().unwrap() > 0.0, "{r}");
                // The point carries the placement it was measured on.
                assert_eq!(r["target"]["spec"], t);
                assert_eq!(&r["target"]["achieved"], achieved);
            }
        }
        let cmp: Vec<_> = rs
            .iter()
            .filter(|r| r["experiment"] == "comparison")
            .collect();
        assert_eq!(cmp.len(), 1, "{server}");
        let specs: Vec<&str> = cmp[0]["params"]["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["spec"].as_str().unwrap())
            .collect();
        assert_eq!(specs, targets);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains(&format!(
                "side by side: kops/s, and ×: against the first target ({})",
                targets[0]
            )),
            "{out}"
        );
        for t in targets {
            assert!(
                out.contains(&format!("\n  {t}: ")),
                "{server}: placement of {t}: {out}"
            );
        }
        assert_nothing_left(port);
    }
}

/// The `Cpus_allowed_list` value of a /proc status text.
fn cpus_allowed(status_line: &str) -> String {
    status_line
        .trim()
        .strip_prefix("Cpus_allowed_list:")
        .unwrap_or_else(|| panic!("not a Cpus_allowed_list line: {status_line:?}"))
        .trim()
        .to_string()
}

/// Seed 004 section 4.3's setup: the client's threads reach memaslap, server and client run
/// on disjoint CPUs (recorded as the kernel holds them: the server's and the client's own
/// /proc status, read while the client runs), and repeated runs give each point a median
/// and a spread.
#[test]
fn client_threads_pinning_and_repetitions_reach_the_processes_and_the_records() {
    let port = free_port();
    let marker = tempfile::tempdir().unwrap();
    let (pid, log) = (marker.path().join("server"), marker.path().join("client"));
    let server = format!(
        "echo $$ > {}; exec {} \"$@\"",
        pid.display(),
        which("memcached").display()
    );
    let client = format!(
        "{{ echo \"args $*\"; grep Cpus_allowed_list /proc/self/status; grep Cpus_allowed_list /proc/$(cat {})/status; }} >> {}; exec {} \"$@\"",
        pid.display(),
        log.display(),
        which("memcaslap").display()
    );
    let fake = fake_path(&[], &[("memcached", &server), ("memcaslap", &client)]);
    let o = pmscope()
        .env("PATH", path_with(fake.path()))
        .args([
            "--json",
            "app",
            "memcached",
            "-t",
            "dram:4k",
            "--duration",
            "1",
        ])
        .args([
            "--client-threads",
            "2",
            "--reps",
            "2",
            "--memory",
            "64MiB",
            "--port",
        ])
        .arg(port.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let seen = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(lines.len(), 3 * 4, "two workloads, two runs each: {seen}");
    let mut client_cpus = Vec::new();
    let mut server_cpus = Vec::new();
    for run in lines.chunks(3) {
        // Two threads, and 12 connections per thread by default.
        assert!(run[0].contains(" -T 2 -c 24 "), "{}", run[0]);
        client_cpus.push(cpus_allowed(run[1]));
        server_cpus.push(cpus_allowed(run[2]));
    }
    let rs = records(&o);
    let kv: Vec<_> = rs.iter().filter(|r| r["experiment"] == "app-kv").collect();
    assert_eq!(kv.len(), 2);
    let one_cpu = std::thread::available_parallelism().unwrap().get() == 1;
    for r in &kv {
        let p = &r["params"];
        assert_eq!(p["client_threads"], 2);
        assert_eq!(p["clients"], 24);
        // What each process was held to is what the records say.
        assert!(
            server_cpus.iter().all(|c| p["server_cpus"] == c.as_str()),
            "{p} {server_cpus:?}"
        );
        assert!(
            client_cpus.iter().all(|c| p["client_cpus"] == c.as_str()),
            "{p} {client_cpus:?}"
        );
        assert_eq!(p["cpus_disjoint"], !one_cpu, "{p}");
        let s = &r["summary"];
        assert_eq!(s["n"], 2, "{r}");
        assert!(s["min"].as_f64().unwrap() <= s["p50"].as_f64().unwrap());
        assert!(s["p50"].as_f64().unwrap() <= s["max"].as_f64().unwrap());
        assert_eq!(r["precision"]["n"], 2, "{r}");
        assert!(
            r["values"]["server_rss_bytes"].as_f64().unwrap() > 0.0,
            "{r}"
        );
    }
    if one_cpu {
        assert!(stderr(&o).contains("share CPU"), "{}", stderr(&o));
    } else {
        assert!(
            server_cpus[0] != client_cpus[0],
            "{server_cpus:?} {client_cpus:?}"
        );
    }
    assert_nothing_left(port);
}

/// A store-size sweep on redis: the server's limit is the store, the client's key space is
/// sized to fill it and its threads reach redis-benchmark; a store beyond the machine's
/// memory is said before it runs, and a store the run left mostly empty is said after.
#[test]
fn store_sizes_set_the_limit_and_key_space_and_say_what_the_store_held() {
    let port = free_port();
    let marker = tempfile::tempdir().unwrap();
    let log = marker.path().join("client");
    let client = format!(
        "echo \"$*\" >> {}; exec {} \"$@\"",
        log.display(),
        which("redis-benchmark").display()
    );
    let fake = fake_path(&["redis-server"], &[("redis-benchmark", &client)]);
    let o = pmscope()
        .env("PATH", path_with(fake.path()))
        .args([
            "--json",
            "app",
            "redis",
            "-t",
            "dram:4k",
            "--requests",
            "2000",
        ])
        .args([
            "--client-threads",
            "2",
            "--clients",
            "4",
            "--store-sizes",
            "64MiB,1TiB",
        ])
        .arg("--port")
        .arg(port.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = records(&o);
    let kv: Vec<_> = rs.iter().filter(|r| r["experiment"] == "app-kv").collect();
    assert_eq!(kv.len(), 4, "two workloads per store");
    for (r, store) in kv.iter().zip([64u64 << 20, 64 << 20, 1 << 40, 1 << 40]) {
        let p = &r["params"];
        assert_eq!(p["store_bytes"], store, "{p}");
        assert_eq!(p["memory_limit_bytes"], store, "{p}");
        assert_eq!(p["key_space"], store.div_ceil(16 + 512), "{p}");
        let v = &r["values"];
        assert!(v["stored_bytes"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["evictions"].is_number(), "{v}");
    }
    // The sets stored keys; 2000 requests fill neither store, and the records say so.
    assert!(kv[0]["values"]["stored_items"].as_f64().unwrap() > 0.0);
    let codes = |r: &serde_json::Value| -> Vec<String> {
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["code"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        codes(kv[3]).contains(&"app-store-not-filled".to_string()),
        "{}",
        kv[3]
    );
    // 1 TiB is beyond this machine's memory: said before anything ran, in every record.
    assert!(
        codes(kv[0]).contains(&"app-store-exceeds-memory".to_string()),
        "{}",
        kv[0]
    );
    let seen = std::fs::read_to_string(&log).unwrap();
    assert_eq!(seen.lines().count(), 4, "{seen}");
    assert!(
        seen.lines().all(|l| l.contains("-c 4 --threads 2 -r ")),
        "{seen}"
    );
    let placements = rs
        .iter()
        .filter(|r| r["experiment"] == "app-placement")
        .count();
    assert_eq!(placements, 2, "a fresh server per store");
    assert_nothing_left(port);
}

#[test]
fn redis_append_only_file_lives_in_a_new_directory_that_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let o = pmscope()
        .args([
            "--json",
            "app",
            "redis",
            "-t",
            "dram:4k",
            "--requests",
            "2000",
        ])
        .args([
            "--clients",
            "4",
            "--memory",
            "64MiB",
            "--port",
            &port.to_string(),
        ])
        .arg("--aof-on")
        .arg(format!("file:{}", dir.path().display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = records(&o);
    let kv: Vec<_> = rs.iter().filter(|r| r["experiment"] == "app-kv").collect();
    assert_eq!(kv.len(), 1);
    assert_eq!(kv[0]["params"]["workload"], "mset");
    let p = &kv[0]["params"];
    let aof = p["aof_directory"].as_str().unwrap();
    assert!(aof.starts_with(dir.path().to_str().unwrap()), "{aof}");
    // The file system the append-only file was on, as `fs` records carry it.
    assert_eq!(p["directory"], dir.path().to_str().unwrap());
    assert!(p["fs_type"].as_str().is_some_and(|f| !f.is_empty()), "{p}");
    assert!(p["device"].as_str().is_some_and(|d| d.contains(':')), "{p}");
    assert!(p["inode_dax"].is_boolean(), "statx read the AOF file: {p}");
    assert_ne!(
        p["inode_dax"], true,
        "a temporary directory is not DAX: {p}"
    );
    assert!(p.get("dax").is_some() && p.get("journal").is_some(), "{p}");
    assert!(kv[0]["summary"]["p50"].as_f64().unwrap() > 0.0);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the AOF directory stayed"
    );
    assert_nothing_left(port);
}

#[test]
fn a_bad_target_fails_before_any_server_starts() {
    let port = free_port();
    let o = pmscope()
        .args([
            "app",
            "memcached",
            "-t",
            "file:/nonexistent-pmscope-dir/x/",
            "--port",
        ])
        .arg(port.to_string())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    assert_nothing_left(port);
}

#[test]
fn a_missing_tool_is_one_sentence_naming_its_package() {
    let empty = fake_path(&[], &[]);
    let o = pmscope()
        .env("PATH", empty.path())
        .args(["app", "redis", "-t", "dram:4k"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(
        e.contains("redis-server is not installed") && e.contains("apt-get install redis-server"),
        "{e}"
    );
}

/// The server is started by `pmscope app` itself, through the launch library: its parent
/// is the `pmscope app` process (no `pmscope run` in between, no second pmscope at all),
/// and its heap is still placed and reported.
#[test]
fn the_server_is_a_child_of_pmscope_app_itself() {
    let port = free_port();
    let marker = tempfile::tempdir().unwrap();
    let parent = marker.path().join("parent");
    let server = format!(
        "echo $PPID > {0}; tr '\\0' ' ' < /proc/$PPID/cmdline >> {0}; exec {1} \"$@\"",
        parent.display(),
        which("memcached").display()
    );
    let fake = fake_path(&["memcaslap"], &[("memcached", &server)]);
    let child = pmscope()
        .env("PATH", path_with(fake.path()))
        .args([
            "--json",
            "app",
            "memcached",
            "-t",
            "dram:4k",
            "--duration",
            "1",
        ])
        .args(["--clients", "2", "--memory", "64MiB", "--port"])
        .arg(port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pmscope_pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let seen = std::fs::read_to_string(&parent).expect("the fake server ran");
    let (ppid, cmdline) = seen.split_once('\n').unwrap();
    assert_eq!(
        ppid.parse::<u32>().unwrap(),
        pmscope_pid,
        "the server's parent is not pmscope app but: {cmdline}"
    );
    let args: Vec<&str> = cmdline.split_whitespace().collect();
    assert!(
        args.contains(&"app") && !args.contains(&"run"),
        "the server's parent: {cmdline}"
    );
    let rs = records(&o);
    let placement: Vec<_> = rs
        .iter()
        .filter(|r| r["experiment"] == "app-placement")
        .collect();
    assert_eq!(placement.len(), 1, "{rs:?}");
    let values = &placement[0]["params"]["placement"]["values"];
    assert!(
        values["processes"].as_f64().unwrap() >= 1.0,
        "the server reported no placement: {}",
        placement[0]
    );
    assert_nothing_left(port);
}

#[test]
fn a_server_that_fails_to_start_is_reported_and_leaves_nothing() {
    let port = free_port();
    let fake = fake_path(
        &["memcaslap"],
        &[("memcached", "echo 'failed to listen: pretend' >&2; exit 3")],
    );
    let o = pmscope()
        .env("PATH", path_with(fake.path()))
        .args([
            "app",
            "memcached",
            "-t",
            "dram:4k",
            "--port",
            &port.to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("exited (exit status 3) before it listened"),
        "{e}"
    );
    assert_nothing_left(port);
}

/// Another process listening on `--port`: refused before any server starts (issue 27: the
/// server could not bind and its client loaded the other listener forever).
#[test]
fn a_busy_port_is_refused_before_any_server_starts() {
    let foreign = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = foreign.local_addr().unwrap().port();
    let t = Instant::now();
    let o = pmscope()
        .args(["app", "memcached", "-t", "dram:4k", "--port"])
        .arg(port.to_string())
        .output()
        .unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with(&format!(
            "pmscope: --port {port}: 127.0.0.1:{port} cannot be bound"
        )),
        "{e}"
    );
    assert!(processes_on(port).is_empty(), "{:?}", processes_on(port));
}

/// A server that exits while its client waits on the port: the supervisor notices within
/// seconds, stops the client and reports the server's exit with its last words.
#[test]
fn a_server_that_exits_while_its_client_runs_is_reported_within_seconds() {
    let port = free_port();
    let server = format!(
        "{} \"$@\" & pid=$!; sleep 1; kill -9 $pid; wait $pid; echo 'failed to listen: pretend' >&2; exit 71",
        which("memcached").display()
    );
    let fake = fake_path(
        &[],
        &[("memcached", &server), ("memcaslap", "exec sleep 120")],
    );
    let t = Instant::now();
    let o = pmscope()
        .env("PATH", path_with(fake.path()))
        .args([
            "app",
            "memcached",
            "-t",
            "dram:4k",
            "--memory",
            "64MiB",
            "--port",
        ])
        .arg(port.to_string())
        .output()
        .unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("exited (exit status 71) while memcaslap ran: failed to listen: pretend"),
        "{e}"
    );
    assert_nothing_left(port);
}

#[test]
fn a_killed_client_stops_the_run_and_the_server() {
    let port = free_port();
    let fake = fake_path(&["memcached"], &[("memcaslap", "kill -9 $$")]);
    let o = pmscope()
        .env("PATH", path_with(fake.path()))
        .args([
            "app",
            "memcached",
            "-t",
            "dram:4k",
            "--memory",
            "64MiB",
            "--port",
        ])
        .arg(port.to_string())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("killed by signal 9"), "{}", stderr(&o));
    assert_nothing_left(port);
}

#[test]
fn ctrl_c_during_a_client_run_stops_client_and_server() {
    let port = free_port();
    let marker = tempfile::tempdir().unwrap();
    let started = marker.path().join("client-pid");
    let fake = fake_path(
        &["memcached"],
        &[(
            "memcaslap",
            &format!("echo $$ > {}; exec sleep 60", started.display()),
        )],
    );
    let mut child = pmscope()
        .env("PATH", path_with(fake.path()))
        .args([
            "app",
            "memcached",
            "-t",
            "dram:4k",
            "--memory",
            "64MiB",
            "--port",
        ])
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !started.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the client never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let client: u32 = std::fs::read_to_string(&started)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        !Path::new(&format!("/proc/{client}")).exists(),
        "the client survived Ctrl-C"
    );
    assert_nothing_left(port);
}

mod needs_fsdax {
    use super::*;

    /// redis with its append-only file (fsync always) on ext4 -o dax: the record carries
    /// the mount, `dax=always` and statx's DAX inode; nothing is left in the mount, running
    /// or listening.
    #[test]
    #[ignore = "needs a real fsdax mount (LABVM_FSDAX_MNT) and redis in the payload: runs in the lab guest via lab/stage.sh"]
    fn redis_append_only_file_on_the_dax_mount_is_recorded_as_dax() {
        let mnt = std::env::var("LABVM_FSDAX_MNT").unwrap_or_else(|_| {
            panic!(
                "LABVM_FSDAX_MNT is not set: this test needs the lab guest (run by lab/stage.sh)"
            )
        });
        let port = free_port();
        let o = pmscope()
            .args([
                "--json",
                "app",
                "redis",
                "-t",
                "dram:4k",
                "--requests",
                "200",
            ])
            .args(["--clients", "2", "--memory", "64MiB", "--port"])
            .arg(port.to_string())
            .arg("--aof-on")
            .arg(format!("file:{mnt}"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let rs = records(&o);
        let kv: Vec<_> = rs.iter().filter(|r| r["experiment"] == "app-kv").collect();
        assert_eq!(kv.len(), 1, "{rs:?}");
        let p = &kv[0]["params"];
        assert_eq!(p["workload"], "mset");
        assert_eq!(p["directory"], mnt.as_str());
        assert_eq!(p["mount_point"], mnt.as_str());
        assert_eq!(p["fs_type"], "ext4", "{p}");
        assert_eq!(p["dax"], "always", "{p}");
        assert!(
            p["device"].as_str().unwrap().starts_with("/dev/pmem"),
            "{p}"
        );
        assert_eq!(
            p["inode_dax"], true,
            "statx: the append-only file is DAX: {p}"
        );
        assert!(
            p["aof_directory"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{mnt}/pmscope-app-")),
            "{p}"
        );
        assert!(kv[0]["summary"]["p50"].as_f64().unwrap() > 0.0);
        let placement: Vec<_> = rs
            .iter()
            .filter(|r| r["experiment"] == "app-placement")
            .collect();
        assert_eq!(placement.len(), 1);
        assert_eq!(placement[0]["target"]["spec"], "dram:4k");
        let left: Vec<String> = std::fs::read_dir(&mnt)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("pmscope-"))
            .collect();
        assert!(left.is_empty(), "left in {mnt}: {left:?}");
        assert_nothing_left(port);
    }
}
