//! Documentation that cannot drift from the binary.
//!
//! **Command pages.** `docs/commands/<command>.md` (`kmer-count.md` for `pmscope kmer count`)
//! is generated from `pmscope <command> --help`: a fixed header, then the long help verbatim
//! in a `text` block (trailing blanks trimmed). The commands are read from the binary itself
//! (the `Commands:` list of `pmscope --help`, and of each command that has subcommands), so a
//! new, renamed or removed command or flag shows up as a failure here. The test fails when a
//! page differs from the help, when a command has no page and when a page has no command;
//! `PMSCOPE_BLESS=1 cargo test --release -p pmscope --test docs` rewrites the pages (and
//! removes pages of commands that are gone): review the diff. README.md's command index must
//! link every top-level command's page and give one example of it.
//!
//! **Examples.** Every example command in README.md and docs/**/*.md runs, with the built
//! binary, and must exit 0 or the exit code its page documents. What counts as an example:
//!
//! - in a fenced block tagged `sh`, every line starting with `pmscope `;
//! - in a fenced block tagged `console`, every line starting with `$ pmscope ` (the lines
//!   after it are output);
//! - in a generated command page, the lines of its `EXAMPLES:` section (the clap
//!   `after_help` texts in `crates/cli/src/args.rs`).
//!
//! A `$ pmscope` line in a block with another tag, and a `pmscope` line in an indented code
//! block, fail the test: tag the block `console` or `sh` so it runs (or `text` for output
//! without a command). Inline code in prose is not an example. A line that occurs on several
//! pages runs once, where it first occurs (README.md first, then docs/ in path order).
//!
//! How an example runs:
//!
//! - through `sh -c`, so quotes, globs, redirections and `&&` mean what they mean to a user,
//!   with `pmscope` a shell function that runs the binary under test with the hidden global
//!   flag `--null-executor` inserted before the command's arguments (a global flag, so this
//!   is the same as appending it, and `pmscope run -- PROGRAM ARGS` keeps the program's
//!   arguments intact). The null executor replaces every timed kernel by synthetic samples,
//!   so each example runs to completion in seconds but still parses, plans, maps and verifies
//!   its targets for real. `pmscope app` has no synthetic mode (it refuses the flag): its
//!   examples run real servers and clients, so they are short (`--duration 1`,
//!   `--requests`);
//! - with a results store of the page's own (`PMSCOPE_RESULTS` in a temporary directory;
//!   `XDG_DATA_HOME` points there too), shared by the page's examples in page order, which
//!   starts with three runs of `pmscope quick`, tagged `before`, `after` and `after` (so
//!   `latest`, `latest~1`, the ids 1 to 3 and both tags name runs; `after` names two, which
//!   `compare` pools). Nothing is written to the user's store or home;
//! - in a fresh temporary working directory (files an example writes with `-o`, `--kmers`,
//!   `>` land there), which holds the fixtures: `genomes/reference.fa.gz` and
//!   `genomes/strain_{1,2,3}.fa.gz` (`pmscope kmer synth --length 100k --strains 3`, gzipped),
//!   `a.fa`, `b.fa`, `c.fa` (strain 1, strain 2 and the reference, plain FASTA), and every
//!   `NAME.jsonl` the example reads (an argument not after `-o`/`--output`), written as the
//!   records of a fourth `pmscope quick -o`, run with `--no-store` (a run from elsewhere:
//!   the store refuses to import a run it already holds).
//!
//! Hardware and the machine. Examples are written for the machine a reader has; the test
//! runs them on any machine, by these rules:
//!
//! - `/mnt/NAME` (an fsdax mount or a disk in the examples) is a directory `mnt/NAME` in the
//!   page's temporary directory under /dev/shm, shared by the page's examples (so a pool
//!   written by one example is recovered by the next). A `file:` target works on any file
//!   system; the ones that need DAX say so (below).
//! - `devdax:/dev/daxX.Y` becomes `devdax:/dev/dax9999.9999`, a device that does not exist:
//!   the test never writes to a real device. Such an example must document its exit code
//!   (`# exits 1 without a devdax device`), and must exit with exactly that code.
//! - An example whose outcome depends on what the machine has (free huge pages, NUMA node 1,
//!   8 CPUs, a DAX file system, an interrupted suite in the store) carries a trailing shell
//!   comment with its exit code there, `# exits N ...`: it must exit 0 or N.
//! - An output redirection to an absolute path (`> /etc/bash_completion.d/pmscope`) writes
//!   the file of that name into the working directory instead.
//! - The programs the examples start beside pmscope (`python3`, `man`, memcached, redis)
//!   are the ones `./dev setup` installs or Debian has; the genomes of `kmer demo` come from
//!   `ragout-examples` and `kaptive-example` (`./dev setup`).
//!
//! An example is killed after 120 s. One taking more than about 20 s must be made smaller
//! (a smaller `--sizes`, one target fewer), never skipped: the whole test should take under
//! four minutes on the 2-core CI machine. The test prints each example with its exit code
//! and seconds.
//!
//! **Links.** Every relative link in README.md, ARCHITECTURE.md and docs/**/*.md names an
//! existing file, and its `#anchor`, if any, a heading of that file.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_pmscope");
const BLESS: &str = "PMSCOPE_BLESS=1 cargo test --release -p pmscope --test docs";
/// The devdax device every `devdax:` example is pointed at: one that does not exist.
const ABSENT_DEVDAX: &str = "/dev/dax9999.9999";
/// An example still running after this is killed and fails.
const EXAMPLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Examples slower than this are flagged in the table (make them smaller).
const SLOW: Duration = Duration::from_secs(20);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

// ---------------------------------------------------------------------------------------------
// Command pages
// ---------------------------------------------------------------------------------------------

/// `pmscope WORDS... --help`, which must succeed.
fn help(words: &[String]) -> String {
    let out = Command::new(EXE)
        .args(words)
        .arg("--help")
        .env("PMSCOPE_RESULTS", "/nonexistent/pmscope-docs-test.sqlite")
        .output()
        .expect("run pmscope --help");
    assert!(
        out.status.success(),
        "pmscope {} --help failed: {}",
        words.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Commands:" {
            inside = true;
        } else if inside {
            if line.trim().is_empty() {
                break;
            }
            if line.starts_with("  ") && !line.starts_with("   ") {
                let name = line.split_whitespace().next().unwrap_or_default();
                if name != "help" {
                    names.push(name.to_owned());
                }
            }
        }
    }
    names
}

/// Every command and subcommand, as word lists, with its help text, depth first in the
/// binary's own order.
fn commands() -> Vec<(Vec<String>, String)> {
    fn walk(prefix: Vec<String>, text: &str, out: &mut Vec<(Vec<String>, String)>) {
        for name in subcommands(text) {
            let mut words = prefix.clone();
            words.push(name);
            let h = help(&words);
            out.push((words.clone(), h.clone()));
            walk(words, &h, out);
        }
    }
    let mut out = Vec::new();
    walk(Vec::new(), &help(&[]), &mut out);
    assert!(
        out.len() >= 10,
        "`pmscope --help` lists only {} commands: is its `Commands:` section still there?",
        out.len()
    );
    out
}

fn page_name(words: &[String]) -> String {
    format!("{}.md", words.join("-"))
}

/// A command page: the fixed header, then the help verbatim (trailing blanks trimmed).
fn page(words: &[String], help: &str) -> String {
    let command = format!("pmscope {}", words.join(" "));
    let mut s = format!(
        "<!-- Generated from `{command} --help` by crates/cli/tests/docs.rs: do not edit.\n     \
         Regenerate with `{BLESS}`. -->\n\n# `{command}`\n\n```text\n"
    );
    for line in help.trim_end().lines() {
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s.push_str("```\n");
    s
}

/// `docs/commands/<command>.md` is the command's `--help`, for every command, and there is
/// no page without a command; README's command index has a row and an example for every
/// top-level command.
#[test]
fn every_command_has_its_help_as_its_page() {
    let dir = root().join("docs/commands");
    let bless = std::env::var_os("PMSCOPE_BLESS").is_some_and(|v| v == "1");
    let mut wanted = BTreeMap::new();
    let all = commands();
    for (words, help) in &all {
        wanted.insert(page_name(words), (words.join(" "), page(words, help)));
    }
    // README's command index: a row linking each top-level command's page, and an example.
    let readme = fs::read_to_string(root().join("README.md")).expect("read README.md");
    let (readme_examples, _) = extract(&readme, false);
    let mut unindexed = Vec::new();
    for (words, _) in all.iter().filter(|(w, _)| w.len() == 1) {
        let name = &words[0];
        if !readme.contains(&format!("(docs/commands/{name}.md)")) {
            unindexed.push(format!("{name}: no row linking docs/commands/{name}.md"));
        }
        let example = format!("pmscope {name}");
        if !readme_examples
            .iter()
            .any(|(_, l)| *l == example || l.starts_with(&format!("{example} ")))
        {
            unindexed.push(format!("{name}: no example `{example} ...`"));
        }
    }
    let existing: BTreeSet<String> = fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".md"))
                .collect()
        })
        .unwrap_or_default();
    if bless {
        fs::create_dir_all(&dir).expect("create docs/commands");
        for (name, (_, text)) in &wanted {
            fs::write(dir.join(name), text).expect("write a command page");
        }
        for name in existing.iter().filter(|n| !wanted.contains_key(*n)) {
            fs::remove_file(dir.join(name)).expect("remove a stale command page");
        }
        eprintln!("blessed {} pages in docs/commands/", wanted.len());
    }
    assert!(
        unindexed.is_empty(),
        "README.md's command index misses commands `pmscope --help` lists (add a row and an \
         example):\n  {}",
        unindexed.join("\n  ")
    );
    if bless {
        return;
    }
    let mut problems = Vec::new();
    for (name, (command, text)) in &wanted {
        match fs::read_to_string(dir.join(name)) {
            Err(_) => problems.push(format!(
                "pmscope {command} has no page docs/commands/{name}"
            )),
            Ok(old) if old != *text => {
                let line = old
                    .lines()
                    .zip(text.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or_else(|| old.lines().count().min(text.lines().count()));
                problems.push(format!(
                    "docs/commands/{name} differs from `pmscope {command} --help` (from line {})",
                    line + 1
                ));
            }
            Ok(_) => {}
        }
    }
    for name in existing.iter().filter(|n| !wanted.contains_key(*n)) {
        problems.push(format!(
            "docs/commands/{name} is the page of no command `pmscope --help` lists"
        ));
    }
    assert!(
        problems.is_empty(),
        "the command pages are not the binary's help:\n  {}\nregenerate them with `{BLESS}` and review the diff",
        problems.join("\n  ")
    );
}

// ---------------------------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------------------------

/// One example command line and where it was found.
#[derive(Debug, Clone)]
struct Example {
    /// The command as a user would type it (comment included).
    line: String,
    /// `path:line` of its first occurrence, relative to the repository.
    place: String,
    /// The page (relative path) whose store and /mnt directories it runs with.
    page: String,
    /// Exit code documented on the page (`# exits N ...`), besides 0.
    documented: Option<i32>,
    /// Pages where the same line occurs again.
    also: Vec<String>,
}

/// README.md, then every Markdown file under docs/, in path order.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .expect("read docs/")
            .map(|e| e.expect("a docs/ entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut out);
    out
}

fn relative(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

/// The byte offset where a shell comment starts in `line` (a `#` at the start of a word,
/// outside quotes), if any.
fn comment_start(line: &str) -> Option<usize> {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return Some(i),
            _ => {}
        }
        prev = c;
    }
    None
}

/// The exit code a line's trailing comment documents: `# ... exits N ...`.
fn documented_exit(line: &str) -> Option<i32> {
    let comment = &line[comment_start(line)?..];
    let mut words = comment.split_whitespace();
    while let Some(w) = words.next() {
        if w == "exits" {
            return words
                .next()
                .and_then(|n| n.trim_end_matches([':', ',', ';']).parse().ok());
        }
    }
    None
}

/// Numbered lines of a page.
type Lines = Vec<(usize, String)>;

/// The example lines of one page, with their line numbers, and the lines that look like
/// examples but would not run (in a block of another kind).
fn extract(text: &str, command_page: bool) -> (Lines, Lines) {
    let mut examples = Vec::new();
    let mut misplaced = Vec::new();
    let mut fence: Option<String> = None;
    let mut in_examples = false;
    let mut prev_blank = true;
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        let n = i + 1;
        i += 1;
        if let Some(rest) = raw.trim_start().strip_prefix("```") {
            fence = match fence {
                None => Some(rest.trim().to_owned()),
                Some(_) => None,
            };
            in_examples = false;
            prev_blank = false;
            continue;
        }
        // Join continuation lines (a trailing backslash).
        let mut line = raw.to_owned();
        while line.ends_with('\\') && i < lines.len() {
            line.pop();
            line.push(' ');
            line.push_str(lines[i].trim_start());
            i += 1;
        }
        match fence.as_deref() {
            Some(_) if command_page => {
                if line == "EXAMPLES:" {
                    in_examples = true;
                } else if in_examples && line.trim().is_empty() {
                    in_examples = false;
                } else if in_examples && line.trim_start().starts_with("pmscope ") {
                    examples.push((n, line.trim().to_owned()));
                }
            }
            Some("sh") => {
                if line.trim_start().starts_with("pmscope ") {
                    examples.push((n, line.trim().to_owned()));
                }
            }
            Some("console") => {
                if let Some(cmd) = line.strip_prefix("$ ")
                    && cmd.starts_with("pmscope ")
                {
                    examples.push((n, cmd.trim().to_owned()));
                }
            }
            Some(_) => {
                if line.trim_start().starts_with("$ pmscope ") {
                    misplaced.push((n, line.clone()));
                }
            }
            None => {
                if prev_blank
                    && line.starts_with("    ")
                    && line.trim_start().starts_with("pmscope ")
                {
                    misplaced.push((n, line.clone()));
                }
            }
        }
        prev_blank = line.trim().is_empty() || (fence.is_none() && line.starts_with("    "));
    }
    (examples, misplaced)
}

/// Every example of README.md and docs/, each line once.
fn examples() -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut misplaced = Vec::new();
    for path in pages() {
        let rel = relative(&path);
        let text = fs::read_to_string(&path).expect("read a page");
        let command_page = rel.starts_with("docs/commands/");
        let (found, bad) = extract(&text, command_page);
        misplaced.extend(bad.into_iter().map(|(n, l)| format!("{rel}:{n}: {l}")));
        for (n, line) in found {
            if let Some(first) = out.iter_mut().find(|e| e.line == line) {
                first.also.push(rel.clone());
                continue;
            }
            out.push(Example {
                documented: documented_exit(&line),
                line,
                place: format!("{rel}:{n}"),
                page: rel.clone(),
                also: Vec::new(),
            });
        }
    }
    assert!(
        misplaced.is_empty(),
        "these pmscope command lines are in blocks the test does not run; put them in a \
         ```console block (with `$ `) or a ```sh block:\n  {}",
        misplaced.join("\n  ")
    );
    out
}

/// Runs `sh -c SCRIPT` in `cwd` with `env`, killed (with its process group) after the
/// timeout. Returns the exit code (`None`: killed or ended by a signal) and the output.
fn run_shell(script: &str, cwd: &Path, env: &[(&str, &Path)]) -> (Option<i32>, String, bool) {
    use std::os::unix::process::CommandExt;
    let out_path = cwd.join(".stdout");
    let err_path = cwd.join(".stderr");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env("PMSCOPE_EXE", EXE)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).expect("create the stdout file"))
        .stderr(fs::File::create(&err_path).expect("create the stderr file"))
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run sh");
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for sh") {
            break status;
        }
        if start.elapsed() > EXAMPLE_TIMEOUT {
            timed_out = true;
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            break child.wait().expect("reap sh");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = fs::read_to_string(&err_path).unwrap_or_default();
    let _ = fs::remove_file(&out_path);
    let _ = fs::remove_file(&err_path);
    (status.code(), stderr, timed_out)
}

/// The shell function every example calls as `pmscope`.
const PRELUDE: &str = r#"pmscope() {
    if [ "$1" = app ]; then "$PMSCOPE_EXE" "$@"; else "$PMSCOPE_EXE" --null-executor "$@"; fi
}
"#;

/// Builds the fixtures once: a seeded store, the records of a run not in it, and genomes.
struct Fixtures {
    dir: tempfile::TempDir,
}

impl Fixtures {
    fn new() -> Fixtures {
        let dir = tempfile::Builder::new()
            .prefix("pmscope-docs-fixtures-")
            .tempdir_in("/dev/shm")
            .expect("a fixture directory in /dev/shm");
        let d = dir.path();
        let store = d.join("r.sqlite");
        let pmscope = |args: &[&str]| {
            let out = Command::new(EXE)
                .args(args)
                .current_dir(d)
                .env("PMSCOPE_RESULTS", &store)
                .env("XDG_DATA_HOME", d)
                .output()
                .expect("run pmscope");
            assert!(
                out.status.success(),
                "fixture `pmscope {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        };
        pmscope(&["--null-executor", "--tag", "before", "quick"]);
        pmscope(&["--null-executor", "--tag", "after", "quick"]);
        pmscope(&["--null-executor", "--tag", "after", "quick"]);
        // A run from elsewhere: not in the store, which refuses a run it already holds.
        pmscope(&["--null-executor", "--no-store", "-o", "seed.jsonl", "quick"]);
        let genomes = d.join("genomes");
        pmscope(&[
            "--no-store",
            "kmer",
            "synth",
            genomes.to_str().unwrap(),
            "--length",
            "100k",
            "--strains",
            "3",
        ]);
        for (plain, from) in [
            ("a.fa", "strain_1"),
            ("b.fa", "strain_2"),
            ("c.fa", "reference"),
        ] {
            fs::copy(genomes.join(format!("{from}.fasta")), d.join(plain)).expect("copy a genome");
        }
        let mut names: Vec<PathBuf> = fs::read_dir(&genomes)
            .expect("read the synthetic genomes")
            .map(|e| e.expect("a genome").path())
            .collect();
        names.sort();
        for fasta in names {
            let ok = Command::new("gzip")
                .args(["-n", "-q"])
                .arg(&fasta)
                .status()
                .expect("run gzip")
                .success();
            assert!(ok, "gzip {}", fasta.display());
            let gz = fasta.with_extension("fasta.gz");
            let stem = fasta.file_stem().unwrap().to_string_lossy().into_owned();
            fs::rename(&gz, genomes.join(format!("{stem}.fa.gz"))).expect("name a genome .fa.gz");
        }
        Fixtures { dir }
    }

    fn store_files(&self) -> Vec<PathBuf> {
        fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("r.sqlite"))
            })
            .collect()
    }

    /// A fresh working directory for one example, with the fixtures and the JSON Lines
    /// files it reads.
    fn workdir(&self, parent: &Path, n: usize, line: &str) -> PathBuf {
        let d = self.dir.path();
        let w = parent.join(format!("ex{n:03}"));
        fs::create_dir_all(w.join("genomes")).expect("create a working directory");
        for e in fs::read_dir(d.join("genomes")).unwrap() {
            let p = e.unwrap().path();
            fs::copy(&p, w.join("genomes").join(p.file_name().unwrap())).unwrap();
        }
        for f in ["a.fa", "b.fa", "c.fa"] {
            fs::copy(d.join(f), w.join(f)).unwrap();
        }
        let code = &line[..comment_start(line).unwrap_or(line.len())];
        let mut prev = "";
        for word in code.split_whitespace() {
            let word = word.trim_matches(|c| c == '\'' || c == '"');
            if word.ends_with(".jsonl")
                && !word.contains('/')
                && prev != "-o"
                && prev != "--output"
                && !w.join(word).exists()
            {
                fs::copy(d.join("seed.jsonl"), w.join(word)).unwrap();
            }
            prev = word;
        }
        w
    }
}

/// The example as the test runs it: `/mnt/NAME` in the page's directory, devdax devices
/// that do not exist, absolute redirections into the working directory.
fn rewrite(line: &str, page_dir: &Path, mounts: &mut BTreeSet<String>) -> String {
    let mut s = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("/mnt/") {
        s.push_str(&rest[..i]);
        let after = &rest[i + 5..];
        let end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .unwrap_or(after.len());
        let name = &after[..end];
        mounts.insert(name.to_owned());
        s.push_str(&page_dir.join("mnt").join(name).to_string_lossy());
        rest = &after[end..];
    }
    s.push_str(rest);
    // devdax:/dev/daxX.Y -> a device that does not exist.
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(i) = rest.find("devdax:/dev/dax") {
        out.push_str(&rest[..i]);
        out.push_str("devdax:");
        out.push_str(ABSENT_DEVDAX);
        let after = &rest[i + "devdax:/dev/dax".len()..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    // > /abs/path -> > path's file name, in the working directory.
    let mut words: Vec<String> = Vec::new();
    let mut redirect = false;
    for w in out.split(' ') {
        if redirect && w.starts_with('/') {
            words.push(
                Path::new(w)
                    .file_name()
                    .map_or(w.to_owned(), |n| n.to_string_lossy().into_owned()),
            );
        } else {
            words.push(w.to_owned());
        }
        if !w.is_empty() {
            redirect = w == ">" || w == ">>";
        }
    }
    words.join(" ")
}

/// Every example of README.md and docs/ runs and exits 0 or its documented code.
#[test]
fn every_example_runs() {
    assert!(
        !Path::new(ABSENT_DEVDAX).exists(),
        "{ABSENT_DEVDAX} exists: the devdax examples would write to it"
    );
    let all = examples();
    assert!(all.len() >= 20, "only {} examples found", all.len());
    let fixtures = Fixtures::new();
    let mut by_page: BTreeMap<usize, (String, Vec<&Example>)> = BTreeMap::new();
    let order: Vec<String> = pages().iter().map(|p| relative(p)).collect();
    for e in &all {
        let k = order.iter().position(|p| *p == e.page).unwrap();
        by_page
            .entry(k)
            .or_insert_with(|| (e.page.clone(), Vec::new()))
            .1
            .push(e);
    }
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let mut n = 0;
    for (page, examples) in by_page.values() {
        let page_dir = tempfile::Builder::new()
            .prefix("pmscope-docs-")
            .tempdir_in("/dev/shm")
            .expect("a page directory in /dev/shm");
        let pd = page_dir.path();
        for f in fixtures.store_files() {
            fs::copy(&f, pd.join(f.file_name().unwrap())).expect("copy the seeded store");
        }
        let store = pd.join("r.sqlite");
        for e in examples {
            n += 1;
            let mut mounts = BTreeSet::new();
            let line = rewrite(&e.line, pd, &mut mounts);
            for m in &mounts {
                fs::create_dir_all(pd.join("mnt").join(m)).expect("create a /mnt stand-in");
            }
            let cwd = fixtures.workdir(pd, n, &e.line);
            let devdax = e.line.contains("devdax:");
            let t0 = Instant::now();
            let (code, stderr, timed_out) = run_shell(
                &format!("{PRELUDE}{line}\n"),
                &cwd,
                &[("PMSCOPE_RESULTS", &store), ("XDG_DATA_HOME", pd)],
            );
            let secs = t0.elapsed();
            let ok = match (code, e.documented) {
                _ if timed_out => false,
                (Some(c), Some(d)) if devdax => c == d,
                (Some(0), _) => true,
                (Some(c), Some(d)) => c == d,
                _ => false,
            };
            let why = if timed_out {
                format!("killed after {} s", EXAMPLE_TIMEOUT.as_secs())
            } else if devdax && e.documented.is_none() {
                "a devdax example must document its exit code (`# exits N without a devdax device`)"
                    .into()
            } else {
                String::new()
            };
            let ok = ok && !(devdax && e.documented.is_none());
            let code_s = code.map_or("signal".to_owned(), |c| c.to_string());
            let expect = match e.documented {
                Some(d) if devdax => d.to_string(),
                Some(d) => format!("0|{d}"),
                None => "0".into(),
            };
            rows.push(format!(
                "{:>6} {:>6} {:>7.1}{} {:<28} {}",
                code_s,
                expect,
                secs.as_secs_f64(),
                if secs > SLOW { "!" } else { " " },
                e.place,
                e.line
            ));
            if !ok {
                let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                failures.push(format!(
                    "{} (page {}): `{}` exited {code_s}, expected {expect}{}{}\n      as run: {line}\n      {}",
                    e.place,
                    page,
                    e.line,
                    if why.is_empty() { "" } else { ": " },
                    why,
                    tail.join("\n      ")
                ));
            }
        }
    }
    eprintln!(
        "\n  exit expect seconds  where                        example (! = over {} s)",
        SLOW.as_secs()
    );
    for r in &rows {
        eprintln!("{r}");
    }
    let repeated: usize = all.iter().map(|e| e.also.len()).sum();
    eprintln!(
        "{} examples run ({} more occurrences of the same lines not run again) in {:.0} s",
        all.len(),
        repeated,
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} example(s) failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

// ---------------------------------------------------------------------------------------------
// Links
// ---------------------------------------------------------------------------------------------

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of the Markdown links `[text](target)` of a text, outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        // Drop inline code spans, then find `](`.
        let mut plain = String::new();
        let mut code = false;
        for c in line.chars() {
            if c == '`' {
                code = !code;
            } else if !code {
                plain.push(c);
            }
        }
        let mut rest = plain.as_str();
        while let Some(j) = rest.find("](") {
            let after = &rest[j + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    out
}

/// Every relative link of the documentation names a file that exists, and its anchor a
/// heading there.
#[test]
fn every_link_resolves() {
    let mut files = pages();
    files.push(root().join("ARCHITECTURE.md"));
    let mut broken = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("read a page");
        for (n, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let here = format!("{}:{n}: {target}", relative(file));
            if !dest.exists() {
                broken.push(format!("{here}: no such file"));
                continue;
            }
            if let Some(a) = anchor {
                let text = fs::read_to_string(&dest).unwrap_or_default();
                if !anchors(&text).contains(a) {
                    broken.push(format!("{here}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken links:\n  {}",
        broken.join("\n  ")
    );
}

/// The extraction and rewriting rules of the module comment, on a made-up page.
#[test]
fn the_example_rules_do_what_the_comment_says() {
    let page = "\
Text with `pmscope inline` code.

```sh
pmscope quick   # a comment
./dev quick
pmscope verify -t devdax:/dev/dax0.0 --destroy-data   # exits 1 without a devdax device
```

```console
$ pmscope latency \\
    -t dram:4k
output line
pmscope: an output line that is no command
```

```text
$ pmscope hidden
```

    pmscope indented

```text
EXAMPLES:
  pmscope in-help
```
";
    let (found, misplaced) = extract(page, false);
    let lines: Vec<&str> = found.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        lines,
        [
            "pmscope quick   # a comment",
            "pmscope verify -t devdax:/dev/dax0.0 --destroy-data   # exits 1 without a devdax device",
            "pmscope latency  -t dram:4k",
        ]
    );
    let bad: Vec<usize> = misplaced.iter().map(|(n, _)| *n).collect();
    assert_eq!(bad, [17, 20]);
    let (found, _) = extract(page, true);
    assert!(found.iter().any(|(_, l)| l == "pmscope in-help"));

    assert_eq!(documented_exit(lines[1]), Some(1));
    assert_eq!(documented_exit(lines[0]), None);
    assert_eq!(
        documented_exit("pmscope run -- sh -c 'echo # exits 3'"),
        None
    );

    let mut mounts = BTreeSet::new();
    let dir = Path::new("/dev/shm/page");
    assert_eq!(
        rewrite(
            "pmscope fs -t file:/mnt/pmem -t file:/mnt/ssd --pool /mnt/pmem/x.pool",
            dir,
            &mut mounts
        ),
        "pmscope fs -t file:/dev/shm/page/mnt/pmem -t file:/dev/shm/page/mnt/ssd --pool /dev/shm/page/mnt/pmem/x.pool"
    );
    assert_eq!(mounts.into_iter().collect::<Vec<_>>(), ["pmem", "ssd"]);
    assert_eq!(
        rewrite(
            "pmscope verify -t devdax:/dev/dax0.0 --destroy-data",
            dir,
            &mut BTreeSet::new()
        ),
        format!("pmscope verify -t devdax:{ABSENT_DEVDAX} --destroy-data")
    );
    assert_eq!(
        rewrite(
            "pmscope completions bash > /etc/bash_completion.d/pmscope",
            dir,
            &mut BTreeSet::new()
        ),
        "pmscope completions bash > pmscope"
    );
}
