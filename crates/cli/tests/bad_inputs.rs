//! The audit of bad inputs (issue 27): every line of `data/bad_inputs.txt` is a command
//! line pmscope must refuse with its exit code and a first line of stderr holding the
//! expected fragment, printing nothing on stdout, never panicking, and leaving its working
//! directory, the results store and the fixtures exactly as they were. The file's header
//! says its format and what each class of lines tests.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const TABLE: &str = include_str!("data/bad_inputs.txt");

/// One line of the table.
struct Case {
    line: usize,
    code: i32,
    args: String,
    fragment: String,
}

fn cases() -> Vec<Case> {
    TABLE
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(
                f.len(),
                3,
                "line {}: three TAB-separated fields: {l}",
                i + 1
            );
            Case {
                line: i + 1,
                code: f[0].parse().expect("an exit code"),
                args: f[1].to_string(),
                fragment: f[2].to_string(),
            }
        })
        .collect()
}

/// Every file under `dir` with its bytes (a symbolic link as its target): what "nothing
/// was created or changed" is checked against.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                let to = std::fs::read_link(&p).unwrap();
                out.insert(p, to.into_os_string().into_encoded_bytes());
            } else if t.is_dir() {
                out.insert(p.clone(), b"<dir>".to_vec());
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The fixtures every case may name: see the table's header.
struct Fixtures {
    root: tempfile::TempDir,
}

impl Fixtures {
    fn fx(&self) -> PathBuf {
        self.root.path().join("fx")
    }

    /// A store holding one run, copied for each case.
    fn template_store(&self) -> PathBuf {
        self.root.path().join("template.sqlite")
    }

    fn new() -> Fixtures {
        let root = tempfile::tempdir().unwrap();
        let fx = root.path().join("fx");
        std::fs::create_dir(&fx).unwrap();
        std::fs::create_dir(fx.join("adir")).unwrap();
        std::fs::write(fx.join("afile"), "x\n").unwrap();
        std::os::unix::fs::symlink(fx.join("gone/x"), fx.join("dangling")).unwrap();
        std::fs::write(
            fx.join("genome.fa"),
            ">g\nACGTTGCAACGTAGCTAGCTAGGATCGATCGGATCCGATCGATGCTAGCTAGCTAGCTGATCG\n",
        )
        .unwrap();
        let good = fx.join("good.jsonl");
        let made = Command::new(env!("CARGO_BIN_EXE_pmscope"))
            .current_dir(root.path())
            .env("HOME", root.path())
            .args(["--null-executor", "--no-store", "verify", "--size", "4MiB"])
            .arg("-o")
            .arg(&good)
            .output()
            .unwrap();
        assert!(made.status.success(), "{}", stderr(&made));
        let text = std::fs::read_to_string(&good).unwrap();
        let first = text.lines().next().unwrap();
        let mut future: serde_json::Value = serde_json::from_str(first).unwrap();
        future["schema_version"] = 99.into();
        std::fs::write(fx.join("future.jsonl"), format!("{future}\n")).unwrap();
        std::fs::write(fx.join("empty.jsonl"), "").unwrap();
        std::fs::write(fx.join("blank.jsonl"), "\n   \n\n").unwrap();
        std::fs::write(fx.join("text.jsonl"), "these are my notes\n").unwrap();
        std::fs::write(fx.join("object.jsonl"), "{\"cpu\": \"x86\"}\n").unwrap();
        std::fs::write(
            fx.join("truncated.jsonl"),
            format!("{first}\n{{\"experiment\": \"verify\", \"trunc"),
        )
        .unwrap();
        let f = Fixtures { root };
        let import = Command::new(env!("CARGO_BIN_EXE_pmscope"))
            .current_dir(f.root.path())
            .env("HOME", f.root.path())
            .arg("--results")
            .arg(f.template_store())
            .arg("results")
            .arg("import")
            .arg(&good)
            .output()
            .unwrap();
        assert!(import.status.success(), "{}", stderr(&import));
        f
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// How a line runs pmscope beyond its arguments: leading `VAR=value` words set the
/// environment, and a last word `>closed` gives it a standard output whose reader is gone.
struct Setting {
    env: Vec<(String, String)>,
    closed: bool,
}

fn setting(args: &mut Vec<String>) -> Setting {
    let mut env = Vec::new();
    while let Some((k, v)) = args.first().and_then(|a| a.split_once('=')) {
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
            break;
        }
        env.push((k.to_string(), v.to_string()));
        args.remove(0);
    }
    let closed = args.last().map(String::as_str) == Some(">closed");
    if closed {
        args.pop();
    }
    Setting { env, closed }
}

/// Runs pmscope in `cwd`, killed after 30 s: no bad input may hang.
fn run(cwd: &Path, home: &Path, store: &Path, args: &[String], how: &Setting) -> Output {
    let stdout = if how.closed {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Stdio::from(writer)
    } else {
        Stdio::piped()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env("PMSCOPE_RESULTS", store)
        .envs(how.env.iter().map(|(k, v)| (k, v)))
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pmscope");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            child.kill().ok();
            let o = child.wait_with_output().unwrap();
            panic!("{args:?} hung: {}", stderr(&o));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What went wrong with one case, or nothing.
fn check(case: &Case, f: &Fixtures, port: u16) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("cwd");
    let home = dir.path().join("home");
    let store_dir = dir.path().join("store");
    for d in [&cwd, &home, &store_dir] {
        std::fs::create_dir(d).unwrap();
    }
    let store = store_dir.join("results.sqlite");
    std::fs::copy(f.template_store(), &store).unwrap();
    let fill = |s: &str| {
        s.replace("{cwd}", &cwd.display().to_string())
            .replace("{fx}", &f.fx().display().to_string())
            .replace("{store}", &store.display().to_string())
            .replace("{port}", &port.to_string())
    };
    let mut args: Vec<String> = fill(&case.args).split(' ').map(String::from).collect();
    let how = setting(&mut args);
    if args.first().map(String::as_str) != Some("app") {
        args.insert(0, "--null-executor".into());
    }
    let before = (snapshot(dir.path()), snapshot(&f.fx()));
    let o = run(&cwd, &home, &store, &args, &how);
    let err = stderr(&o);
    let first = err.lines().next().unwrap_or_default();
    let fragment = fill(&case.fragment);
    let mut wrong = Vec::new();
    if o.status.code() != Some(case.code) {
        wrong.push(format!(
            "exit {:?}, expected {}",
            o.status.code(),
            case.code
        ));
    }
    if how.closed {
        // A quiet end: no sentence of pmscope's at all (warnings may precede it).
        if err.lines().any(|l| l.starts_with("pmscope: ")) {
            wrong.push("a closed stdout is not a quiet end".into());
        }
    } else {
        if !first.contains(&fragment) {
            wrong.push(format!("first line lacks '{fragment}'"));
        }
        if first.starts_with("pmscope: ") && err.lines().count() != 1 {
            wrong.push("more than one line".into());
        }
        if !first.starts_with("pmscope: ") && !first.starts_with("error: ") {
            wrong.push("neither pmscope's sentence nor clap's usage error".into());
        }
    }
    if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
        wrong.push("a panic".into());
    }
    if !o.stdout.is_empty() {
        wrong.push(format!(
            "printed on stdout: {}",
            String::from_utf8_lossy(&o.stdout)
        ));
    }
    if (snapshot(dir.path()), snapshot(&f.fx())) != before {
        wrong.push("created or changed a file (working directory, store or fixtures)".into());
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "line {}: pmscope {}: {}\n    stderr: {}",
            case.line,
            args.join(" "),
            wrong.join("; "),
            err.trim_end().replace('\n', "\n            ")
        )
    })
}

#[test]
fn every_bad_input_is_refused_in_one_sentence_and_creates_nothing() {
    let t0 = Instant::now();
    let cases = cases();
    assert!(cases.len() >= 100, "the audit holds {} lines", cases.len());
    let f = Fixtures::new();
    // A port another process (this test) listens on.
    let busy = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = busy.local_addr().unwrap().port();
    let failures: Vec<String> = cases.iter().filter_map(|c| check(c, &f, port)).collect();
    assert!(
        failures.is_empty(),
        "{} of {} bad inputs were not refused as the table says:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // The whole audit stays cheap enough for every CI run (generous: CI machines are busy).
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "the audit took {:?}",
        t0.elapsed()
    );
    drop(busy);
}
