//! The results store through the binary: `results`, `compare`, `suite --resume` after a
//! SIGKILL, and `report` of stored runs. Every test has its own store in a temporary
//! directory (and a temporary $HOME, so nothing can reach the user's store).

use pmscope_core::record::Record;
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn store(&self) -> PathBuf {
        self.path("results.sqlite")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pmscope"));
        c.current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env_remove("XDG_DATA_HOME")
            .env("PMSCOPE_RESULTS", self.store())
            .stdin(Stdio::null())
            .args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run pmscope")
    }

    /// Runs and expects success.
    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit code `code` and exactly one line on stderr containing `wanted`.
fn refused(o: &Output, code: i32, wanted: &str, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{what}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{what}: one line: {err}");
    assert!(err.contains(wanted), "{what}: {err}");
}

fn parse_jsonl(text: &str) -> Vec<Record> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a record ({e}): {l}")))
        .collect()
}

/// A small latency run written with -o (not stored).
fn latency_jsonl(env: &Env, name: &str) -> PathBuf {
    let file = env.path(name);
    env.ok(&[
        "--null-executor",
        "--no-store",
        "latency",
        "-t",
        "dram:4k",
        "--sizes",
        "64KiB,1MiB",
        "--samples",
        "200",
        "-o",
        file.to_str().unwrap(),
    ]);
    file
}

fn write_jsonl(path: &Path, records: &[Record]) {
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(path, text).unwrap();
}

/// Commands that open the store, each of which must refuse a store it cannot use.
const STORE_COMMANDS: &[&[&str]] = &[
    &["results", "list"],
    &["results", "show", "latest"],
    &["compare", "1", "2"],
    &["report", "latest", "-o", "never.html"],
    &[
        "--null-executor",
        "latency",
        "--sizes",
        "64KiB",
        "--samples",
        "100",
    ],
    &["--null-executor", "suite", "sync", "--resume", "1"],
];

fn refuses_untouched(env: &Env, store: &Path, wanted: &str) {
    let before = std::fs::read(store).unwrap();
    for args in STORE_COMMANDS {
        let mut a = vec!["--results", store.to_str().unwrap()];
        a.extend_from_slice(args);
        let o = env.run(&a);
        refused(&o, 2, wanted, &format!("{args:?}"));
        assert!(
            o.stdout.is_empty(),
            "{args:?} measured or printed something"
        );
        assert_eq!(std::fs::read(store).unwrap(), before, "{args:?} changed it");
        for suffix in ["-wal", "-shm", "-journal"] {
            let side = PathBuf::from(format!("{}{suffix}", store.display()));
            assert!(!side.exists(), "{args:?} left {}", side.display());
        }
    }
    assert!(!env.path("never.html").exists());
}

#[test]
fn a_file_that_is_not_a_store_is_refused_untouched() {
    let env = Env::new();
    let notes = env.path("notes.txt");
    std::fs::write(&notes, "my notes, not a database\n".repeat(20)).unwrap();
    refuses_untouched(&env, &notes, "is not a pmscope results store");
    // Another program's SQLite database is not ours either.
    let foreign = env.path("foreign.sqlite");
    let conn = Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE mine (x); INSERT INTO mine VALUES (1);")
        .unwrap();
    drop(conn);
    refuses_untouched(&env, &foreign, "is not a pmscope results store");
    // A directory given as the store.
    let o = env.run(&[
        "--results",
        env.dir.path().to_str().unwrap(),
        "results",
        "list",
    ]);
    refused(&o, 2, "is not a pmscope results store", "a directory");
}

#[test]
fn a_store_from_a_newer_pmscope_is_refused_untouched() {
    let env = Env::new();
    let store = env.store();
    let file = latency_jsonl(&env, "lat.jsonl");
    env.ok(&["results", "import", file.to_str().unwrap()]); // creates it
    let conn = Connection::open(&store).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(conn);
    refuses_untouched(&env, &store, "newer than this pmscope's");
}

#[test]
fn an_unknown_run_is_one_sentence() {
    let env = Env::new();
    let file = latency_jsonl(&env, "lat.jsonl");
    env.ok(&["results", "import", file.to_str().unwrap()]);
    for args in [
        &["results", "show", "42"][..],
        &["results", "show", "latest~1"],
        &["results", "show", "latest~x"],
        &["results", "show", "no-such-tag"],
        &["results", "export", "1", "42"],
        &["results", "rm", "42", "--yes"],
        &["compare", "1", "42"],
        &["report", "42", "-o", "never.html"],
        &["--null-executor", "suite", "basic", "--resume", "42"],
    ] {
        let o = env.run(args);
        refused(&o, 2, "no run matches", &format!("{args:?}"));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert!(!env.path("never.html").exists());
    // Nothing was removed or added.
    assert_eq!(env.ok(&["results", "list"]).lines().count(), 1);
}

#[test]
fn an_unusable_directory_is_a_runtime_failure_in_one_sentence() {
    let env = Env::new();
    let plain = env.path("plain");
    std::fs::write(&plain, "x").unwrap();
    // Its directory cannot be made: a file is where a directory should be. The default
    // location ($PMSCOPE_RESULTS) is made when needed, so that is the system's failure;
    // the same path given as --results is the user's, refused before anything runs.
    let store = plain.join("sub/results.sqlite");
    let latency = [
        "--null-executor",
        "latency",
        "--sizes",
        "64KiB",
        "--samples",
        "100",
    ];
    for args in [&["results", "list"][..], &latency] {
        let o = env
            .command(args)
            .env("PMSCOPE_RESULTS", &store)
            .output()
            .unwrap();
        refused(&o, 1, "cannot use", &format!("{args:?}"));
        assert!(o.stdout.is_empty());
        let mut a = vec!["--results", store.to_str().unwrap()];
        a.extend_from_slice(args);
        let o = env.run(&a);
        refused(
            &o,
            2,
            "a component of its directory is a file",
            &format!("{args:?}"),
        );
        assert!(o.stdout.is_empty());
    }
    assert_eq!(std::fs::read(&plain).unwrap(), b"x");
}

#[test]
fn a_corrupt_jsonl_file_imports_nothing_and_a_good_one_round_trips() {
    let env = Env::new();
    let good = latency_jsonl(&env, "lat.jsonl");
    let text = std::fs::read_to_string(&good).unwrap();
    let bad = env.path("bad.jsonl");
    std::fs::write(
        &bad,
        format!("{}{{\"experiment\": \"latency\", \"trunc", text),
    )
    .unwrap();
    let lines = text.lines().count();
    let o = env.run(&["results", "import", bad.to_str().unwrap()]);
    refused(
        &o,
        2,
        &format!("line {} of", lines + 1),
        "a truncated last line",
    );
    assert_eq!(env.ok(&["results", "list"]), "", "nothing half-imported");
    let o = env.run(&["results", "import", "missing.jsonl"]);
    refused(&o, 2, "missing.jsonl does not exist", "a missing file");

    let out = env.ok(&["--tag", "lab", "results", "import", good.to_str().unwrap()]);
    assert!(out.contains("as run 1"), "{out}");
    let exported = env.ok(&["results", "export", "lab", "--format", "jsonl"]);
    assert_eq!(
        parse_jsonl(&exported),
        parse_jsonl(&text),
        "every field back"
    );
    let csv = env.ok(&["results", "export", "1"]);
    assert!(csv.lines().count() > parse_jsonl(&text).len(), "{csv}");
}

/// `-` imports standard input (a pipe from another machine's export, gzipped or not), and
/// says which runs it made; the same records again are refused with the run holding them.
#[test]
fn an_import_reads_standard_input_and_never_stores_a_run_twice() {
    let env = Env::new();
    let good = latency_jsonl(&env, "lat.jsonl");
    let piped = |args: &[&str]| {
        let o = env
            .command(args)
            .stdin(std::fs::File::open(&good).unwrap())
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr(&o),
        )
    };
    let (code, out, err) = piped(&["results", "import", "-"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("imported standard input as run 1"), "{out}");
    let (code, _, err) = piped(&["results", "import", "-"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is already in the store as run 1"), "{err}");
    assert_eq!(
        env.ok(&["results", "list"]).lines().count(),
        1,
        "stored once"
    );
}

/// A suite that stops before it stored anything (here a devdax device that is not there)
/// leaves no empty run behind and offers no resume of one (issue 47).
#[test]
fn a_suite_that_stored_nothing_leaves_no_run_to_resume() {
    let env = Env::new();
    let o = env.run(&[
        "--null-executor",
        "suite",
        "basic",
        "-t",
        "devdax:/dev/dax99.99",
        "--destroy-data",
    ]);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("/dev/dax99.99 does not exist"), "{err}");
    assert_eq!(o.status.code(), Some(2), "a device the user named: {err}");
    assert!(!err.contains("--resume"), "no run to resume: {err}");
    assert_eq!(env.ok(&["results", "list"]), "", "no empty run left");
}

#[test]
fn rm_asks_and_refuses_without_a_terminal() {
    let env = Env::new();
    let file = latency_jsonl(&env, "lat.jsonl");
    env.ok(&["results", "import", file.to_str().unwrap()]);
    let o = env.run(&["results", "rm", "latest"]); // stdin is /dev/null
    refused(&o, 2, "pass --yes", "rm without --yes");
    assert_eq!(
        env.ok(&["results", "list"]).lines().count(),
        1,
        "not removed"
    );
    // A "y" over a pipe is not a terminal's answer: still refused, still there.
    let mut child = env
        .command(&["results", "rm", "1"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    // pmscope may refuse and exit before reading: a broken pipe here is fine.
    let _ = child.stdin.take().unwrap().write_all(b"y\n");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        env.ok(&["results", "list"]).lines().count(),
        1,
        "not removed"
    );
    assert!(
        env.ok(&["results", "rm", "1", "--yes"])
            .contains("removed run 1")
    );
    assert_eq!(env.ok(&["results", "list"]), "");
}

/// Latency records with a noise-free spread (every repetition alike) and the first
/// latency point's median scaled by `factor`.
fn scaled(records: &[Record], factor: f64) -> Vec<Record> {
    let mut out = records.to_vec();
    for r in &mut out {
        if let Some(s) = &mut r.summary {
            s.stddev = 0.0;
            s.n = 5;
        }
    }
    let first = out
        .iter_mut()
        .find(|r| r.experiment == "latency" && r.metric.as_deref() == Some("latency_ns"))
        .expect("a latency point");
    let s = first.summary.as_mut().unwrap();
    s.p50 *= factor;
    // What compare reads: the point's blocks.
    for b in &mut first.blocks {
        b.median *= factor;
    }
    out
}

#[test]
fn compare_fail_above_exits_1_only_when_a_point_got_worse() {
    let env = Env::new();
    let base = parse_jsonl(&std::fs::read_to_string(latency_jsonl(&env, "lat.jsonl")).unwrap());
    for (i, (tag, factor)) in [("a", 1.0), ("slower", 1.5), ("faster", 0.5), ("same", 1.0)]
        .into_iter()
        .enumerate()
    {
        let file = env.path(&format!("{tag}.jsonl"));
        // Each a run of its own minute: the same records twice would be one run imported
        // twice, which the store refuses.
        let mut records = scaled(&base, factor);
        for r in &mut records {
            r.timestamp_ms += 60_000 * i as u64;
        }
        write_jsonl(&file, &records);
        env.ok(&["--tag", tag, "results", "import", file.to_str().unwrap()]);
    }
    // 50 % slower at one point: beyond the noise (its blocks agree to about 1 %) and above
    // 10 %.
    let o = env.run(&["compare", "a", "slower", "--fail-above", "10"]);
    refused(
        &o,
        1,
        "1 point(s) got worse by more than 10% beyond the noise",
        "slower",
    );
    let table = String::from_utf8_lossy(&o.stdout);
    let worse_rows = table.lines().filter(|l| l.ends_with("  worse")).count();
    assert_eq!(worse_rows, 1, "{table}");
    assert!(table.contains("1.500"), "{table}");
    // Below the threshold, better, or unchanged: exit 0.
    for (b, pct) in [("slower", "60"), ("faster", "10"), ("same", "0")] {
        let o = env.run(&["compare", "a", b, "--fail-above", pct]);
        assert_eq!(o.status.code(), Some(0), "{b}: {}", stderr(&o));
    }
    // The reverse comparison: the faster run is the baseline, so A got worse.
    let o = env.run(&["compare", "faster", "a", "--fail-above", "10"]);
    assert_eq!(o.status.code(), Some(1));
    // --json: one object with every shared point.
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "compare", "a", "slower"])).unwrap();
    let points = json["points"].as_array().unwrap();
    assert_eq!(
        points.len(),
        base.iter().filter(|r| r.summary.is_some()).count()
    );
    let worse: Vec<_> = points
        .iter()
        .filter(|p| p["beyond_noise"] == true)
        .collect();
    assert_eq!(worse.len(), 1);
    assert!((worse[0]["worse_pct"].as_f64().unwrap() - 50.0).abs() < 1e-6);
    // Every point carries its verdict and the noise it was judged against.
    assert_eq!(worse[0]["verdict"], "worse");
    assert!(points.iter().all(|p| p["verdict"].is_string()
        && p["noise"]["total"].as_f64().is_some_and(|t| t > 0.0)
        && p["ratio_low"].as_f64() <= p["ratio"].as_f64()));
    assert!(json["groups"].as_array().is_some_and(|g| !g.is_empty()));
    // The table lists the called point only, then counts every verdict; --verbose lists
    // every point.
    assert!(table.contains("1 worse, 0 better"), "{table}");
    assert!(table.contains("resolution latency latency_ns:"), "{table}");
    let verbose = env.ok(&["compare", "a", "slower", "--verbose"]);
    assert_eq!(
        verbose.lines().filter(|l| l.starts_with("latency")).count(),
        points.len(),
        "{verbose}"
    );
    // Two targets of one run.
    let o = env.run(&["compare", "--targets", "a", "dram:4k", "dram:thp"]);
    refused(&o, 2, "share no point", "targets absent from the run");
}

/// Thresholds that mean nothing are refused in one sentence before anything is read.
#[test]
fn compare_refuses_meaningless_thresholds() {
    let env = Env::new();
    for (flag, value) in [
        ("--fail-above", "nan"),
        ("--fail-above", "-5"),
        ("--fail-above", "inf"),
        ("--noise-floor", "-1"),
        ("--noise-floor", "NaN"),
        ("--alpha", "0"),
        ("--alpha", "1.5"),
        ("--alpha", "nan"),
    ] {
        let o = env.run(&["compare", "a", "b", &format!("{flag}={value}")]);
        refused(&o, 2, flag, &format!("{flag} {value}"));
    }
    assert!(!env.store().exists(), "a refused compare opened the store");
}

/// A point's identity: which step made it and what it measured (not when).
type Identity = (Option<i64>, String, String, String, String);

fn identities(store: &Path, run: i64) -> BTreeMap<Identity, usize> {
    let conn = Connection::open(store).unwrap();
    let mut stmt = conn
        .prepare("SELECT step, record FROM points WHERE run_id = ?1")
        .unwrap();
    let rows: Vec<(Option<i64>, String)> = stmt
        .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = BTreeMap::new();
    for (step, text) in rows {
        let r: Record = serde_json::from_str(&text).unwrap();
        let key = (
            step,
            r.experiment.clone(),
            r.target.map(|t| t.spec).unwrap_or_default(),
            serde_json::to_string(&r.params).unwrap(),
            r.metric.unwrap_or_default(),
        );
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

const SUITE: &[&str] = &[
    "--null-executor",
    "suite",
    "basic",
    "-t",
    "dram:4k",
    "-t",
    "dram:thp",
];

#[test]
fn a_suite_killed_mid_run_is_valid_and_resumes_without_duplicates() {
    let env = Env::new();
    // The same suite run uninterrupted, in a store of its own: what the resumed run must hold.
    let reference_store = env.path("reference.sqlite");
    let mut a = vec!["--results", reference_store.to_str().unwrap()];
    a.extend_from_slice(SUITE);
    env.ok(&a);
    let want = identities(&reference_store, 1);
    assert!(want.keys().any(|k| k.0 == Some(7)), "every step stored");

    let store = env.store();
    let mut child = env
        .command(SUITE)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it inside a step, after a finished one: some steps done, one half done.
    // The suite is stopped (SIGSTOP) while the store is looked at, so the step
    // seen half done cannot finish between the look and the SIGKILL.
    let pid = child.id().to_string();
    let signal = |name: &str| {
        let sent = Command::new("kill").args([name, &pid]).status().unwrap();
        assert!(sent.success(), "kill {name}");
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(
            Instant::now() < deadline,
            "the suite never got into its second step"
        );
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the suite ended ({status}) before it could be killed");
        }
        signal("-STOP");
        let mid_step = store.exists()
            && Connection::open_with_flags(&store, OpenFlags::SQLITE_OPEN_READ_WRITE)
                .ok()
                .and_then(|c| {
                    // A stopped writer never lets go of its lock: do not wait for it.
                    c.busy_timeout(Duration::ZERO).ok()?;
                    c.query_row(
                        "SELECT (SELECT count(*) FROM run_steps),
                                (SELECT count(*) FROM points WHERE step NOT IN
                                    (SELECT step FROM run_steps))",
                        [],
                        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                    )
                    .ok()
                })
                .is_some_and(|(done, partial)| done >= 1 && partial >= 1);
        if mid_step {
            break;
        }
        signal("-CONT");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL, delivered to a stopped process too
    child.wait().unwrap();

    let conn = Connection::open(&store).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    assert_eq!(count(&conn, "SELECT count(*) FROM runs"), 1);
    assert_eq!(count(&conn, "SELECT complete FROM runs"), 0, "incomplete");
    // Measured in 5 blocks, the 8 steps run as 40 units, round after round.
    let done = count(&conn, "SELECT count(*) FROM run_steps");
    assert!((1..40).contains(&done), "{done} units finished");
    let partial = count(
        &conn,
        "SELECT count(*) FROM points WHERE step NOT IN (SELECT step FROM run_steps)",
    );
    assert!(partial >= 1, "killed inside a step");
    let kept: Vec<(i64, String)> = {
        let mut s = conn
            .prepare(
                "SELECT id, record FROM points WHERE step IN (SELECT step FROM run_steps) ORDER BY id",
            )
            .unwrap();
        s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert!(!kept.is_empty());
    drop(conn);
    let listed = env.ok(&["results", "show", "latest"]);
    assert!(listed.contains("incomplete"), "{listed}");

    // Refusals, one sentence each, and the run untouched.
    for (args, wanted) in [
        (
            &["--null-executor", "suite", "table5", "--resume", "1"][..],
            "is not a `pmscope suite table5` run",
        ),
        (
            &[
                "--null-executor",
                "suite",
                "basic",
                "--full",
                "--resume",
                "1",
            ],
            "is not a `pmscope suite basic --full` run",
        ),
        (
            &[
                "--null-executor",
                "suite",
                "basic",
                "--resume",
                "1",
                "-t",
                "dram:4k",
            ],
            "run 1 measured dram:4k, dram:thp, not dram:4k",
        ),
        (
            &[
                "--null-executor",
                "--no-store",
                "suite",
                "basic",
                "--resume",
                "1",
            ],
            "leave out --no-store",
        ),
        (
            &["suite", "basic", "--resume", "1"],
            "run 1 was made by the null executor, so it is resumed with --null-executor",
        ),
    ] {
        let o = env.run(args);
        refused(&o, 2, wanted, &format!("{args:?}"));
    }

    // Resume: same targets taken from the run, the finished steps kept as they were.
    let out = env.ok(&[
        "--null-executor",
        "--tag",
        "resumed",
        "suite",
        "basic",
        "--resume",
        "latest",
    ]);
    assert!(out.contains("resumed"), "{out}");
    let tagged = env.ok(&["--tag", "resumed", "results", "list"]);
    assert!(tagged.trim_start().starts_with("1 "), "{tagged}");
    let conn = Connection::open(&store).unwrap();
    assert_eq!(count(&conn, "SELECT count(*) FROM runs"), 1, "no new run");
    assert_eq!(count(&conn, "SELECT complete FROM runs"), 1, "complete");
    // The units were merged into their steps and discarded: 8 steps, no unit.
    assert_eq!(count(&conn, "SELECT count(*) FROM run_steps"), 8);
    assert_eq!(
        count(&conn, "SELECT count(*) FROM run_steps WHERE step >= 8"),
        0
    );
    assert_eq!(
        count(&conn, "SELECT count(*) FROM points WHERE step >= 8"),
        0
    );
    // A block finished before the kill is in its point as it was, not measured again.
    let merged: Vec<Record> = {
        let mut stmt = conn.prepare("SELECT record FROM points").unwrap();
        stmt.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|t| serde_json::from_str(&t.unwrap()).unwrap())
            .collect()
    };
    for (_, text) in &kept {
        let block: Record = serde_json::from_str(text).unwrap();
        let (Some(key), Some(b)) = (
            pmscope_core::blocks::point_key(&block, true),
            block.blocks.first(),
        ) else {
            continue;
        };
        let point = merged
            .iter()
            .find(|r| pmscope_core::blocks::point_key(r, true).as_ref() == Some(&key))
            .unwrap_or_else(|| panic!("the point of a kept block is gone: {key}"));
        assert_eq!(point.blocks.len(), 5, "{key}");
        assert!(
            point
                .blocks
                .iter()
                .any(|m| m.median == b.median && m.n == b.n),
            "a finished block was measured again: {key}"
        );
    }
    drop(conn);
    let got = identities(&store, 1);
    // The resumed run holds exactly the points of an uninterrupted one, each as often.
    let differ: Vec<String> = got
        .keys()
        .chain(want.keys())
        .filter(|k| got.get(*k) != want.get(*k))
        .take(5)
        .map(|k| format!("{k:?}: {:?} vs {:?}", got.get(k), want.get(k)))
        .collect();
    assert!(differ.is_empty(), "resumed vs uninterrupted: {differ:#?}");
    let duplicates: Vec<_> = got.iter().filter(|(_, n)| **n > 1).collect();
    let reference_duplicates: Vec<_> = want.iter().filter(|(_, n)| **n > 1).collect();
    assert_eq!(duplicates, reference_duplicates);

    // A complete run is not resumed again; nor is a run of another command.
    let o = env.run(&["--null-executor", "suite", "basic", "--resume", "1"]);
    refused(&o, 2, "run 1 is complete", "a complete run");
    env.ok(&[
        "--null-executor",
        "latency",
        "--sizes",
        "64KiB",
        "--samples",
        "100",
    ]);
    let conn = Connection::open(&store).unwrap();
    conn.execute("UPDATE runs SET complete = 0 WHERE id = 2", [])
        .unwrap();
    drop(conn);
    let o = env.run(&["--null-executor", "suite", "basic", "--resume", "2"]);
    refused(&o, 2, "is not a `pmscope suite basic` run", "a latency run");
}

#[test]
fn report_draws_runs_of_the_store_side_by_side() {
    let env = Env::new();
    env.ok(SUITE);
    let html_path = env.path("r.html");
    let out = env.ok(&["report", "latest", "-o", html_path.to_str().unwrap()]);
    assert!(!out.is_empty(), "observations are printed");
    let html = std::fs::read_to_string(&html_path).unwrap();
    for id in [
        "latency-working-set",
        "latency-histogram",
        "instruction-latency",
        "bandwidth-threads",
        "bandwidth-access-size",
        "bandwidth-mixed",
        "loaded-latency",
    ] {
        let start = html
            .find(&format!("<section id=\"{id}\">"))
            .unwrap_or_else(|| panic!("{id} missing"));
        let section = &html[start..];
        let section = &section[..section.find("</section>").unwrap()];
        assert!(section.contains("<svg"), "{id} has no drawing");
        assert!(section.contains("run 1 —"), "{id} names its run");
    }
    // A second run (another machine's, imported) beside the first, and a file beside both.
    let file = latency_jsonl(&env, "lat.jsonl");
    env.ok(&[
        "--tag",
        "other",
        "results",
        "import",
        file.to_str().unwrap(),
    ]);
    let two = env.path("two.html");
    env.ok(&[
        "report",
        "1",
        "other",
        "lat.jsonl",
        "-o",
        two.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&two).unwrap();
    let start = html.find("<section id=\"latency-working-set\">").unwrap();
    let section = &html[start..];
    let section = &section[..section.find("</section>").unwrap()];
    for label in ["run 1 —", "run 2 —", "lat.jsonl —"] {
        assert!(section.contains(label), "{label} missing");
    }
    assert_eq!(section.matches("<div class=\"panel\">").count(), 3);
    // No argument is the latest run.
    let latest = env.path("latest.html");
    env.ok(&["report", "-o", latest.to_str().unwrap()]);
    let html = std::fs::read_to_string(&latest).unwrap();
    assert!(html.contains("run 2 —") && !html.contains("run 1 —"));
}
