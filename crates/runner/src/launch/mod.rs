//! Running an unmodified program with its large allocations on a target (`pmscope run`, the
//! role PMDK's libvmmalloc played in seed 000), for every command that starts a program:
//! [`spawn`] takes a target and a command and returns the running program as a
//! [`Launched`], which the caller supervises without blocking (`pmscope app` waits for its
//! server to listen, loads it, then [`Launched::stop`]s it) and which ends with the
//! program's exit status and its verified [`Placement`] (an [`Outcome`]); [`run`] is spawn
//! and [`Launched::wait`] (`pmscope run`).
//!
//! ```text
//! heap_plan (preflight)     a bad target is refused here: the program never starts
//! preload library           built from shim/pmscope_preload.c by build.rs, embedded in the
//!                           binary, written to a memfd: LD_PRELOAD=/proc/<pmscope>/fd/<n>
//! report file               a memfd too; every process under the program (a wrapper
//!                           script, the program, its children: LD_PRELOAD is inherited)
//!                           appends its own block at exit
//! spawn                     Foreground: in pmscope's process group (a terminal's Ctrl-C
//!                           reaches the program itself; a signal sent to pmscope by kill
//!                           is forwarded once); Background: a group of its own that the
//!                           kernel signals if pmscope dies, its output collected
//! wait or stop              stop: SIGTERM to the program, then SIGKILL to its group
//! parse, sum, warn          bytes per page size and node, read back by the library from
//!                           /proc/self/smaps and numa_maps before each served range is
//!                           released and at exit
//! ```
//!
//! Nothing is left on disk: the library and the report are memfds, the library's files on a
//! `file:` or `shm` target are unnamed (`O_TMPFILE`; named and unlinked at once where the
//! file system has none, with the scratch naming the next run sweeps) unless `--keep`,
//! which names them `pmscope-<pid>-<n>-kept.bin`.

mod launched;
mod report;

pub use launched::Launched;
pub use report::{Placement, ProcessReport, findings, parse_reports};

use pmscope_core::warning::Warning;
use pmscope_mapping::{HeapBacking, MapOptions, TargetError, TargetSpec};
use pmscope_sys::{process, scratch};
use std::ffi::OsString;
use std::process::{Command, Stdio};

/// The preload library, compiled by build.rs.
const PRELOAD_LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libpmscope_preload.so"));

/// Allocations of at least this many bytes go to the target by default: one huge page, so
/// a huge-page target never spends more than twice what was asked.
pub const DEFAULT_THRESHOLD: u64 = 2 << 20;

/// What to run where.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The target of the large allocations.
    pub target: &'a TargetSpec,
    /// `keep` (name the files of `file:`/`shm` targets instead of leaving them unnamed)
    /// and `destroy_data` are read; the rest is the preflight's.
    pub opts: &'a MapOptions,
    /// Allocations (malloc family, private anonymous mmap) of at least this many bytes are
    /// placed on the target.
    pub threshold: u64,
    /// The program and its arguments.
    pub command: &'a [OsString],
}

/// Why a program could not be run, or did not behave under its supervisor.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The target was refused before the program started.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The command cannot be started as given (usage).
    #[error("{0}")]
    Command(String),
    /// The system refused (memfd, spawn, wait).
    #[error("{0}")]
    System(String),
    /// The program did not do what its supervisor waited for (it ended before it listened,
    /// or did not stop when asked).
    #[error("{0}")]
    Program(String),
}

impl LaunchError {
    /// Whether the request itself was wrong (exit 2) rather than the system (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            LaunchError::Target(t) => t.is_usage(),
            LaunchError::Command(_) => true,
            LaunchError::System(_) | LaunchError::Program(_) => false,
        }
    }
}

/// How the started program is supervised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supervision {
    /// In pmscope's process group with pmscope's stdin, stdout and stderr: a terminal's
    /// Ctrl-C reaches it directly, and [`Launched::wait`] forwards a signal sent to pmscope
    /// alone (`pmscope run`).
    Foreground,
    /// In a process group of its own, which the kernel sends SIGTERM if pmscope dies and
    /// which is killed when the [`Launched`] is dropped; stdin from /dev/null, stdout and
    /// stderr collected (a server `pmscope app` loads, then stops).
    Background,
}

/// The program's end and where its memory went.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The exit status as a shell gives it: the code, or 128 + the signal that killed it.
    pub exit_code: i32,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// Where its large allocations went.
    pub placement: Placement,
}

impl Outcome {
    /// How it ended: `exit status 3`, `killed by signal 9`.
    pub fn describe_status(&self) -> String {
        match self.signal {
            Some(s) => format!("killed by signal {s}"),
            None => format!("exit status {}", self.exit_code),
        }
    }
}

/// Runs `launch.command` with its large allocations on `launch.target` in the foreground
/// and waits for it. The target is preflighted first: a bad one returns
/// [`LaunchError::Target`] and the program never starts.
pub fn run(launch: &Launch<'_>) -> Result<Outcome, LaunchError> {
    spawn(launch, Supervision::Foreground)?.wait()
}

/// Starts `launch.command` with its large allocations on `launch.target`, supervised as
/// `how`, and returns at once. The target is preflighted first: a bad one returns
/// [`LaunchError::Target`] and the program never starts.
pub fn spawn(launch: &Launch<'_>, how: Supervision) -> Result<Launched, LaunchError> {
    let plan = launch.target.heap_plan(launch.opts)?;
    let Some(program) = launch.command.first() else {
        return Err(LaunchError::Command(
            "no program to run: give one after --, e.g. pmscope run -t dram:2m -- python3 app.py"
                .into(),
        ));
    };
    let mut warnings = Vec::new();
    let mut cmd = Command::new(program);
    cmd.args(&launch.command[1..]);
    match &plan.backing {
        HeapBacking::Anonymous { pages } => {
            cmd.env("PMSCOPE_RUN_BACKING", "anon")
                .env("PMSCOPE_RUN_PAGES", pages);
        }
        HeapBacking::Directory { dir, pages } => {
            let stale = scratch::remove_stale(dir);
            if !stale.is_empty() {
                warnings.push(Warning::new(
                    "stale-files-removed",
                    format!(
                        "removed {} file(s) that killed runs left in {}",
                        stale.len(),
                        dir.display()
                    ),
                    "nothing to do: pmscope sweeps these files at the next run",
                ));
            }
            cmd.env("PMSCOPE_RUN_BACKING", "dir")
                .env("PMSCOPE_RUN_PAGES", pages)
                .env("PMSCOPE_RUN_DIR", dir);
        }
    }
    match plan.node {
        Some(n) => cmd.env("PMSCOPE_RUN_NODE", n.to_string()),
        None => cmd.env_remove("PMSCOPE_RUN_NODE"),
    };
    let system = |what: &str, e: std::io::Error| LaunchError::System(format!("{what}: {e}"));
    let library = process::memfd_with("pmscope-preload.so", PRELOAD_LIBRARY)
        .map_err(|e| system("cannot hold the preload library in memory", e))?;
    let report = process::memfd_with("pmscope-run-report", b"")
        .map_err(|e| system("cannot create the report file", e))?;
    let mut preload = OsString::from(scratch::proc_path(&library));
    if let Some(theirs) = std::env::var_os("LD_PRELOAD").filter(|p| !p.is_empty()) {
        preload.push(":");
        preload.push(theirs);
    }
    cmd.env("LD_PRELOAD", preload)
        .env("PMSCOPE_RUN_REPORT", scratch::proc_path(&report))
        .env("PMSCOPE_RUN_THRESHOLD", launch.threshold.to_string())
        .env("PMSCOPE_RUN_KEEP", if launch.opts.keep { "1" } else { "0" });
    let spawned = match how {
        Supervision::Foreground => cmd.spawn(),
        Supervision::Background => process::spawn_group(
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        ),
    };
    let child = spawned.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LaunchError::Command(format!(
            "cannot run '{}': no such program (give a path, or a name found in PATH)",
            program.to_string_lossy()
        )),
        std::io::ErrorKind::PermissionDenied => LaunchError::Command(format!(
            "cannot run '{}': permission denied (is it executable?)",
            program.to_string_lossy()
        )),
        _ => system(&format!("cannot run '{}'", program.to_string_lossy()), e),
    })?;
    Ok(Launched::new(
        child,
        how,
        launched::Held {
            program: program.to_string_lossy().into_owned(),
            spec: launch.target.to_string(),
            _library: library,
            report,
            plan,
            threshold: launch.threshold,
            keep: launch.opts.keep,
            warnings,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn background(script: &str) -> Launched {
        let target: TargetSpec = "dram:4k".parse().unwrap();
        let command: Vec<OsString> = ["sh", "-c", script].map(OsString::from).to_vec();
        let launch = Launch {
            target: &target,
            opts: &MapOptions::host(),
            threshold: DEFAULT_THRESHOLD,
            command: &command,
        };
        spawn(&launch, Supervision::Background).unwrap()
    }

    fn gone(pgid: u32) -> bool {
        let t = Instant::now();
        while process::group_alive(pgid) && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        !process::group_alive(pgid)
    }

    #[test]
    fn a_background_program_is_stopped_with_its_group() {
        let p = background("sleep 30 & exec sleep 30");
        let pgid = p.pid();
        let o = p.stop(Duration::from_secs(10)).unwrap();
        assert_eq!((o.exit_code, o.signal), (143, Some(15)));
        assert_eq!(o.describe_status(), "killed by signal 15");
        assert!(gone(pgid), "the program's child outlived it");
    }

    #[test]
    fn a_dropped_program_is_killed_with_its_group() {
        let p = background("sleep 30 & sleep 30; wait");
        let pgid = p.pid();
        drop(p);
        assert!(gone(pgid));
    }

    #[test]
    fn a_program_that_ends_before_it_listens_is_one_sentence_quoting_it() {
        let mut p = background("echo 'cannot bind' >&2; exit 3");
        let port = crate::child::free_port().unwrap();
        let e = p
            .wait_until_listening(port, Duration::from_secs(20))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "sh on dram:4k exited (exit status 3) before it listened on 127.0.0.1:{port}: cannot bind"
            )
        );
        let o = p.wait().unwrap();
        assert_eq!(o.exit_code, 3);
    }

    #[test]
    fn the_library_is_embedded_and_is_a_shared_object() {
        assert_eq!(&PRELOAD_LIBRARY[..4], b"\x7fELF");
        assert_eq!(PRELOAD_LIBRARY[16], 3, "ET_DYN");
    }
}
