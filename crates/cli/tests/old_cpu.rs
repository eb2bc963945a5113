//! `tests/data/old_cpu_commands.txt`: every command on a CPU without AVX2, AVX-512, clwb and
//! clflushopt, with its expected outcome (issue 23 part 5). The lab guest runs the same list
//! on such a CPU; here its form is checked on any machine, and with PMSCOPE_QEMU_CPU set
//! (e.g. `Westmere,+rdtscp`) the list runs under `qemu-x86_64 -cpu $PMSCOPE_QEMU_CPU`.

use std::path::Path;
use std::process::Command;

const LIST: &str = include_str!("data/old_cpu_commands.txt");

/// One line of the list.
struct Line<'a> {
    exit: i32,
    command: &'a str,
    first_stderr_line: Option<&'a str>,
}

fn lines() -> Vec<Line<'static>> {
    LIST.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(
                (2..=3).contains(&f.len()),
                "{l:?}: exit<TAB>command[<TAB>first stderr line]"
            );
            Line {
                exit: f[0]
                    .parse()
                    .unwrap_or_else(|_| panic!("{l:?}: exit status")),
                command: f[1],
                first_stderr_line: f.get(2).copied(),
            }
        })
        .collect()
}

fn bin() -> std::ffi::OsString {
    std::env::var_os("PMSCOPE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_pmscope").into())
}

/// The commands `pmscope --help` lists.
fn commands() -> Vec<String> {
    let o = Command::new(bin()).arg("--help").output().unwrap();
    let help = String::from_utf8(o.stdout).unwrap();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_list_is_well_formed_and_covers_every_command() {
    let lines = lines();
    let mut covered = std::collections::BTreeSet::new();
    for l in &lines {
        assert!(l.command.starts_with("pmscope "), "{}", l.command);
        assert!([0, 2].contains(&l.exit), "{}: exit 0 or 2", l.command);
        // A refusal names its one sentence; a run names none.
        assert_eq!(
            l.exit == 2,
            l.first_stderr_line
                .is_some_and(|m| m.starts_with("pmscope: ")),
            "{}",
            l.command
        );
        if let Some(sub) = l.command.split_whitespace().nth(1) {
            covered.insert(sub.to_string());
        }
    }
    let missing: Vec<String> = commands()
        .into_iter()
        .filter(|c| !covered.contains(c))
        .collect();
    assert!(missing.is_empty(), "commands not in the list: {missing:?}");
    assert!(
        lines.iter().any(|l| l.exit == 2),
        "the list checks refusals too"
    );
}

/// Runs the list under qemu user mode: `PMSCOPE_QEMU_CPU=Westmere,+rdtscp cargo test -p
/// pmscope --test old_cpu -- --ignored` (needs `qemu-x86_64`, Debian's qemu-user). Timing
/// figures are meaningless there; only the outcomes are checked. `pmscope numa` is skipped:
/// qemu user mode does not implement mbind.
#[test]
#[ignore = "runs the old-CPU command list under qemu-x86_64 -cpu $PMSCOPE_QEMU_CPU"]
fn the_list_runs_under_qemu_user() {
    let Some(cpu) = std::env::var_os("PMSCOPE_QEMU_CPU") else {
        panic!("set PMSCOPE_QEMU_CPU to a qemu CPU model without avx2/clwb/clflushopt");
    };
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("bin");
    std::fs::create_dir(&wrapper).unwrap();
    let script = format!(
        "#!/bin/sh\nexec qemu-x86_64 -cpu '{}' '{}' \"$@\"\n",
        cpu.to_string_lossy(),
        Path::new(&bin()).display()
    );
    let exe = wrapper.join("pmscope");
    std::fs::write(&exe, script).unwrap();
    Command::new("chmod").arg("+x").arg(&exe).status().unwrap();
    let path = format!(
        "{}:{}",
        wrapper.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    for l in lines() {
        if l.command.starts_with("pmscope numa") {
            continue;
        }
        let o = Command::new("sh")
            .arg("-c")
            .arg(l.command)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("PMSCOPE_RESULTS", dir.path().join("results.sqlite"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        // qemu's own notes (a model's feature TCG lacks) precede pmscope's.
        let first = stderr
            .lines()
            .find(|l| !l.starts_with("qemu-x86_64: warning"))
            .unwrap_or("");
        let crashed =
            stderr.contains("internal error") || stderr.contains("uncaught target signal");
        if o.status.code() != Some(l.exit)
            || crashed
            || l.first_stderr_line.is_some_and(|m| m != first)
        {
            failures.push(format!("{}: {:?}, {first}", l.command, o.status.code()));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
