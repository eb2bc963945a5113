//! `pmscope report` end to end: records written with -o by the null executor, read back
//! as runs, rendered to HTML and SVG files; never clobbers; bad input is one sentence.

use std::process::{Command, Output};

fn pmscope(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmscope"))
        .current_dir(dir)
        // The runs that make the files must not reach the user's results store.
        .env("PMSCOPE_RESULTS", dir.join("results.sqlite"))
        .args(args)
        .output()
        .expect("run pmscope")
}

#[test]
fn report_renders_runs_written_with_o_and_never_clobbers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lat = [
        "--null-executor",
        "latency",
        "-t",
        "dram:4k",
        "-t",
        "dram:thp",
        "--sizes",
        "4KiB..16MiB",
        "-o",
        "lat.jsonl",
    ];
    assert!(pmscope(d, &lat).status.success());
    let bw = [
        "--null-executor",
        "bandwidth",
        "-t",
        "dram:4k",
        "--threads",
        "1",
        "-o",
        "bw.jsonl",
    ];
    assert!(pmscope(d, &bw).status.success());
    let o = pmscope(
        d,
        &[
            "report",
            "lat.jsonl",
            "bw.jsonl",
            "--reference",
            "optane-g1",
            "--svg-dir",
            "svg",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    for id in [
        "latency-working-set",
        "latency-histogram",
        "bandwidth-threads",
        "bandwidth-access-size",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "{id} missing"
        );
    }
    assert!(html.contains("page sizes differ (dram:4k 4k, dram:thp 2m)"));
    assert!(html.contains("synthetic-samples"), "run warnings are shown");
    assert!(std::fs::read_dir(d.join("svg")).unwrap().count() >= 4);
    // No clobber without --force, and nothing written on refusal.
    let again = pmscope(d, &["report", "lat.jsonl", "-o", "report.html"]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(d.join("report.html")).unwrap(),
        html
    );
    let svg_again = pmscope(
        d,
        &[
            "report",
            "lat.jsonl",
            "-o",
            "second.html",
            "--svg-dir",
            "svg",
        ],
    );
    assert_eq!(svg_again.status.code(), Some(2));
    assert!(!d.join("second.html").exists());
    assert!(
        pmscope(d, &["report", "lat.jsonl", "--force"])
            .status
            .success()
    );
    // Bad input: one sentence each.
    std::fs::write(d.join("bad.jsonl"), "not json\n").unwrap();
    for (args, code) in [
        (&["report", "bad.jsonl", "-o", "x.html"][..], 2),
        (&["report", "missing.jsonl", "-o", "x.html"][..], 2),
        (
            &["report", "lat.jsonl", "--reference", "nope", "-o", "x.html"][..],
            2,
        ),
    ] {
        let o = pmscope(d, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!d.join("x.html").exists());
    }
}
