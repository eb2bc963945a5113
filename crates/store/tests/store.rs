//! Behaviour of the results store: durability under SIGKILL, concurrent writers,
//! export/import round trips and refusal of files that are not ours.

use pmscope_core::record::Record;
use pmscope_store::{Settings, Store, StoreError, Verdict, compare_records, to_csv, to_jsonl};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/latency.jsonl");

fn fixture() -> Vec<Record> {
    std::fs::read_to_string(FIXTURE)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn points_are_stored_and_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/results.sqlite");
    let store = Store::open(&path).unwrap();
    let run = store
        .begin_run(&["pmscope".into(), "latency".into()], &["base".into()])
        .unwrap();
    for r in fixture() {
        store.add_record(run, &r).unwrap();
    }
    assert!(!store.run(run).unwrap().complete);
    store.finish_run(run).unwrap();
    let listed = store.runs(Some("base")).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].complete);
    assert_eq!(listed[0].points, 3);
    assert_eq!(listed[0].tags, vec!["base".to_string()]);
    assert_eq!(
        listed[0].host.as_ref().unwrap().hostname,
        fixture()[0].system.hostname
    );
    assert_eq!(store.records(run).unwrap(), fixture());
    assert!(store.runs(Some("other")).unwrap().is_empty());
}

#[test]
fn selectors_resolve_ids_latest_and_tags() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    let a = store.begin_run(&[], &["old".into()]).unwrap();
    let b = store.begin_run(&[], &[]).unwrap();
    assert_eq!(store.resolve("latest").unwrap(), b);
    assert_eq!(store.resolve("latest~1").unwrap(), a);
    assert_eq!(store.resolve("old").unwrap(), a);
    assert_eq!(store.resolve(&b.to_string()).unwrap(), b);
    for bad in ["latest~2", "999", "nosuchtag", "latest~x"] {
        assert!(
            matches!(store.resolve(bad), Err(StoreError::UnknownRun(_))),
            "{bad}"
        );
    }
    store.remove_run(a).unwrap();
    assert!(store.resolve("old").is_err());
    assert!(matches!(
        store.remove_run(a),
        Err(StoreError::UnknownRun(_))
    ));
}

#[test]
fn export_then_import_gives_back_identical_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    let [first] = store.import_jsonl(Path::new(FIXTURE), &[]).unwrap()[..] else {
        panic!("the fixture is one run");
    };
    assert!(store.run(first).unwrap().complete);
    let exported = to_jsonl(&store.records(first).unwrap()).unwrap();
    let file = dir.path().join("export.jsonl");
    std::fs::write(&file, &exported).unwrap();
    // Into another store: this one already holds those records (see below).
    let other = Store::open(&dir.path().join("other.sqlite")).unwrap();
    let [second] = other.import_jsonl(&file, &["again".into()]).unwrap()[..] else {
        panic!("one run");
    };
    let store = other;
    let first_records = Store::open(&dir.path().join("r.sqlite"))
        .unwrap()
        .records(first)
        .unwrap();
    assert_eq!(store.records(second).unwrap(), fixture());
    assert_eq!(first_records, store.records(second).unwrap());
    // Exported again, the same text: nothing drifts through a store round trip. (Not always
    // byte-identical to the original file: serde_json without `float_roundtrip` may parse
    // the last digit of a float differently.)
    let again = to_jsonl(&store.records(second).unwrap()).unwrap();
    assert_eq!(exported, again);
}

#[test]
fn csv_has_one_row_per_point_and_statistic() {
    let records = fixture();
    let csv = to_csv(&[(7, records.clone())]).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "run,point,experiment,target,metric,params,statistic,value"
    );
    let expected: usize = records
        .iter()
        .map(|r| r.values.len() + if r.summary.is_some() { 9 } else { 0 })
        .sum();
    assert_eq!(lines.clone().count(), expected);
    let p50 = records[0].summary.as_ref().unwrap().p50;
    assert!(
        lines.any(|l| l.starts_with("7,0,latency,dram:4k,") && l.ends_with(&format!(",p50,{p50}")))
    );
}

#[test]
fn two_writers_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    Store::open(&path).unwrap();
    let record = fixture().remove(0);
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (path, record) = (path.clone(), record.clone());
            std::thread::spawn(move || {
                let store = Store::open(&path).unwrap();
                let run = store.begin_run(&[], &[]).unwrap();
                for _ in 0..100 {
                    store.add_record(run, &record).unwrap();
                }
                store.finish_run(run).unwrap();
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let store = Store::open(&path).unwrap();
    let runs = store.runs(None).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.points == 100 && r.complete));
}

/// The child side of `sigkill_mid_run_leaves_a_valid_store`: writes points until killed.
#[test]
#[ignore = "helper: run as a child process by sigkill_mid_run_leaves_a_valid_store"]
fn writer_child() {
    let path = std::env::var("PMSCOPE_STORE_TEST_PATH").unwrap();
    let store = Store::open(Path::new(&path)).unwrap();
    let run = store.begin_run(&["writer".into()], &[]).unwrap();
    let records = fixture();
    for i in 0.. {
        store.add_record(run, &records[i % records.len()]).unwrap();
        println!("stored {}", i + 1);
    }
}

#[test]
fn sigkill_mid_run_leaves_a_valid_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "writer_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PMSCOPE_STORE_TEST_PATH", &path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reported = 0;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        if let Some(n) = line.unwrap().strip_prefix("stored ") {
            reported = n.parse::<i64>().unwrap();
            if reported >= 20 {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(reported >= 20);
    let store = Store::open(&path).unwrap();
    assert!(store.integrity_ok().unwrap());
    let run = store.run(store.resolve("latest").unwrap()).unwrap();
    assert!(!run.complete);
    // Every point the child reported as stored is there (it may have committed one more).
    assert!(run.points >= reported, "{} < {reported}", run.points);
    let fixture = fixture();
    for (i, r) in store.records(run.id).unwrap().iter().enumerate() {
        assert_eq!(r, &fixture[i % fixture.len()]);
    }
}

fn refused_untouched(path: &Path, want: impl Fn(&StoreError) -> bool) {
    let before = std::fs::read(path).unwrap();
    let err = match Store::open(path) {
        Err(e) => e,
        Ok(_) => panic!("{} was accepted", path.display()),
    };
    assert!(want(&err), "{err}");
    let message = err.to_string();
    assert_eq!(message.matches(". ").count(), 0, "one sentence: {message}");
    assert_eq!(std::fs::read(path).unwrap(), before);
    let wal = path.with_extension("sqlite-wal");
    assert!(!wal.exists());
}

#[test]
fn a_file_that_is_not_a_store_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.sqlite");
    std::fs::write(&text, "these are my notes, not a database\n".repeat(10)).unwrap();
    refused_untouched(&text, |e| matches!(e, StoreError::NotAStore(_)));
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, "").unwrap();
    refused_untouched(&empty, |e| matches!(e, StoreError::NotAStore(_)));

    let foreign = dir.path().join("foreign.sqlite");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE mine (x); INSERT INTO mine VALUES (1);")
        .unwrap();
    drop(conn);
    refused_untouched(&foreign, |e| matches!(e, StoreError::NotAStore(_)));
}

#[test]
fn a_store_from_a_newer_pmscope_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(conn);
    refused_untouched(&path, |e| matches!(e, StoreError::TooNew { found: 99, .. }));
}

#[test]
fn an_unusable_directory_is_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let err = Store::open(&file.join("sub/r.sqlite")).err().unwrap();
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[test]
fn a_corrupt_jsonl_file_imports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    let bad = dir.path().join("bad.jsonl");
    let good = std::fs::read_to_string(FIXTURE).unwrap();
    let first = good.lines().next().unwrap();
    std::fs::write(&bad, format!("{first}\n{{\"truncated\": \n")).unwrap();
    let err = store.import_jsonl(&bad, &[]).err().unwrap();
    assert!(
        matches!(err, StoreError::BadRecord { line: 2, .. }),
        "{err}"
    );
    assert!(store.runs(None).unwrap().is_empty());
}

#[test]
fn compare_finds_a_slower_point_beyond_noise() {
    // Three runs a side, their medians 1 % apart: one block each, pooled by side.
    let runs = |factor: f64| -> Vec<Record> {
        [1.0, 1.01, 0.99]
            .iter()
            .flat_map(|f| {
                let mut run = fixture();
                for r in &mut run {
                    if let Some(s) = r.summary.as_mut() {
                        s.p50 *= factor * f;
                    }
                }
                run
            })
            .collect()
    };
    let (a, b) = (runs(1.0), runs(2.0));
    let same = compare_records(&a, &a, true, &Settings::default());
    assert_eq!(
        same.points.len(),
        fixture()
            .iter()
            .filter(|r| r.summary.is_some() && r.metric.is_some())
            .count()
    );
    assert_eq!(same.worse_than(0.0).count(), 0);
    assert!(same.points.iter().all(|p| p.noise.runs == [3, 3]));
    let worse = compare_records(&a, &b, true, &Settings::default());
    assert!(worse.points.iter().all(|p| (p.ratio - 2.0).abs() < 1e-9));
    // Latency doubled: 100 % worse, called wherever the runs' spread lets us tell.
    assert!(
        worse
            .points
            .iter()
            .all(|p| (p.worse_pct - 100.0).abs() < 1e-6)
    );
    assert!(worse.worse_than(50.0).count() > 0);
    assert_eq!(worse.worse_than(150.0).count(), 0);
    // One run a side has no spread to judge by: nothing is called.
    let (one_a, one_b) = (fixture(), {
        let mut b = fixture();
        for r in &mut b {
            if let Some(s) = r.summary.as_mut() {
                s.p50 *= 2.0;
            }
        }
        b
    });
    let c = compare_records(&one_a, &one_b, true, &Settings::default());
    assert_eq!(c.worse_than(0.0).count(), 0);
    assert!(c.points.iter().all(|p| p.verdict == Verdict::NotResolvable));
}

#[test]
fn a_version_1_store_is_migrated_forward_keeping_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    // The layout pmscope wrote before suite steps were stored.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA application_id = 1347244867;
         CREATE TABLE runs (id INTEGER PRIMARY KEY, started_ms INTEGER NOT NULL,
             ended_ms INTEGER, command_line TEXT NOT NULL, host TEXT,
             complete INTEGER NOT NULL DEFAULT 0);
         CREATE TABLE run_tags (run_id INTEGER NOT NULL, tag TEXT NOT NULL);
         CREATE TABLE points (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL,
             experiment TEXT NOT NULL, target_spec TEXT, metric TEXT, p50 REAL,
             record TEXT NOT NULL);
         INSERT INTO runs (started_ms, command_line, complete) VALUES (1, '[\"pmscope\"]', 1);
         PRAGMA user_version = 1;",
    )
    .unwrap();
    let record = fixture().remove(0);
    conn.execute(
        "INSERT INTO points (run_id, experiment, record) VALUES (1, ?1, ?2)",
        [&record.experiment, &serde_json::to_string(&record).unwrap()],
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.records(1).unwrap(), vec![record.clone()]);
    assert_eq!(store.step_records(1).unwrap(), vec![(None, record.clone())]);
    assert!(store.finished_steps(1).unwrap().is_empty());
    let run = store.begin_run(&["pmscope".into()], &[]).unwrap();
    store.add_step_record(run, Some(0), &record).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, pmscope_store::STORE_SCHEMA_VERSION);
}

#[test]
fn a_restarted_step_replaces_only_its_own_partial_points() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    let records = fixture();
    let run = store.begin_run(&["pmscope".into()], &[]).unwrap();
    for r in &records[..2] {
        store.add_step_record(run, Some(0), r).unwrap();
    }
    store.finish_step(run, 0, "first").unwrap();
    for r in [&records[2], &records[0]] {
        store.add_step_record(run, Some(1), r).unwrap();
    }
    // Killed here: step 1 half done. Running it again starts from nothing.
    assert_eq!(
        store.finished_steps(run).unwrap(),
        vec![(0, "first".into())]
    );
    assert_eq!(store.restart_step(run, 1).unwrap(), 2);
    let kept: Vec<_> = store.step_records(run).unwrap();
    assert_eq!(
        kept,
        records[..2]
            .iter()
            .map(|r| (Some(0), r.clone()))
            .collect::<Vec<_>>()
    );
    store.add_step_record(run, Some(1), &records[2]).unwrap();
    store.finish_step(run, 1, "second").unwrap();
    assert_eq!(store.finished_steps(run).unwrap().len(), 2);
    store.remove_run(run).unwrap();
    assert!(store.finished_steps(run).unwrap().is_empty());
}

/// A record a newer pmscope stored (same store layout, newer record schema) is refused
/// when read back, with the run named, instead of being read as if it meant what ours do;
/// a missing store is refused by `open_existing` and not created (issue 27).
#[test]
fn newer_records_and_missing_stores_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    assert!(matches!(
        Store::open_existing(&path),
        Err(StoreError::Missing(_))
    ));
    assert!(!path.exists(), "looking created the store");
    let store = Store::open(&path).unwrap();
    let run = store.begin_run(&["pmscope".into()], &[]).unwrap();
    let mut newer = fixture()[0].clone();
    newer.schema_version = pmscope_core::record::SCHEMA_VERSION + 1;
    store.add_record(run, &newer).unwrap();
    let e = store.records(run).unwrap_err();
    assert!(e.is_usage(), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "a point of run {run} is a record of schema version {}, newer than this pmscope's {}; use a newer pmscope",
            pmscope_core::record::SCHEMA_VERSION + 1,
            pmscope_core::record::SCHEMA_VERSION
        )
    );
    assert!(Store::open_existing(&path).is_ok());
}

/// A file imported twice, or the export of a stored run imported back, is refused with the
/// run that holds it, and nothing is stored; a file holding the records of two runs (as
/// `cat a.jsonl b.jsonl` makes, or two commands' files) becomes two runs; a gzipped file is
/// read as the plain one.
#[test]
fn imports_never_store_a_run_twice_and_split_what_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    let ids = store.import_jsonl(Path::new(FIXTURE), &[]).unwrap();
    assert_eq!(ids.len(), 1);
    let before = store.runs(None).unwrap().len();
    let again = store.import_jsonl(Path::new(FIXTURE), &[]).unwrap_err();
    assert!(
        matches!(again, StoreError::AlreadyImported { run, .. } if run == ids[0]),
        "{again}"
    );
    assert!(again.is_usage());
    let exported = dir.path().join("export.jsonl");
    std::fs::write(
        &exported,
        to_jsonl(&store.records(ids[0]).unwrap()).unwrap(),
    )
    .unwrap();
    assert!(matches!(
        store.import_jsonl(&exported, &[]),
        Err(StoreError::AlreadyImported { .. })
    ));
    assert_eq!(store.runs(None).unwrap().len(), before, "nothing stored");

    // Two runs of the same command in one file, then a third of another command.
    let one = fixture();
    let mut other_command = one.clone();
    for r in &mut other_command {
        r.command_line.push("--other".into());
    }
    let mut two = one.clone();
    for r in &mut two {
        r.timestamp_ms += 60_000;
    }
    let mixed: Vec<Record> = two
        .iter()
        .chain(&one)
        .chain(&other_command)
        .cloned()
        .collect();
    let file = dir.path().join("mixed.jsonl");
    std::fs::write(&file, to_jsonl(&mixed).unwrap()).unwrap();
    let fresh = Store::open(&dir.path().join("fresh.sqlite")).unwrap();
    let ids = fresh.import_jsonl(&file, &[]).unwrap();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(fresh.records(ids[0]).unwrap(), two);
    assert_eq!(fresh.records(ids[1]).unwrap(), one);
    assert_eq!(fresh.records(ids[2]).unwrap(), other_command);

    // Gzipped, whatever its name: the same records.
    use std::io::Write;
    let gz = dir.path().join("run.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(to_jsonl(&one).unwrap().as_bytes()).unwrap();
    enc.finish().unwrap();
    assert_eq!(pmscope_store::read_jsonl(&gz).unwrap(), one);
    // A directory, a missing file and bytes that are not text: one sentence each.
    for (path, wanted) in [
        (dir.path().to_path_buf(), "is a directory"),
        (dir.path().join("nope.jsonl"), "does not exist"),
    ] {
        let e = pmscope_store::read_jsonl(&path).unwrap_err();
        assert!(e.is_usage() && e.to_string().contains(wanted), "{e}");
    }
    let binary = dir.path().join("binary.jsonl");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let e = pmscope_store::read_jsonl(&binary).unwrap_err();
    assert!(
        e.is_usage() && e.to_string().contains("not UTF-8 text"),
        "{e}"
    );
}
