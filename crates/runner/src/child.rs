//! Children pmscope supervises (a launched server, its benchmark client): each in a
//! process group of its own that the kernel signals if pmscope dies
//! (`pmscope_sys::process::spawn_group`), its output collected while it runs, bounded by a
//! timeout and by Ctrl-C, and killed with its whole group on any early return, so no child
//! is ever left behind.

use crate::interrupt;
use anyhow::{Context, Result, bail};
use pmscope_sys::process::{SIGKILL, signal_group, spawn_group};
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// How long the output of a child that has ended is waited for: a process it left behind
/// (outside its group) may hold its pipes open forever, so reading them is bounded too.
pub const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// A child's stdout and stderr, read to the end by a thread each while it runs (so a
/// talkative child never blocks on a full pipe).
#[derive(Debug, Default)]
pub struct Captured {
    stdout: Option<Receiver<String>>,
    stderr: Option<Receiver<String>>,
}

fn collect(mut r: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        let _ = tx.send(s);
    });
    rx
}

impl Captured {
    /// Starts reading the pipes `child` was spawned with (`Stdio::piped()`).
    pub fn start(child: &mut Child) -> Captured {
        Captured {
            stdout: child.stdout.take().map(collect),
            stderr: child.stderr.take().map(collect),
        }
    }

    /// What it printed on stdout and stderr, once every holder of the pipes has closed
    /// them or [`OUTPUT_GRACE`] has passed (empty for a pipe not captured, already read,
    /// or still held open then).
    pub fn join(&mut self) -> (String, String) {
        let deadline = Instant::now() + OUTPUT_GRACE;
        let read = |rx: Option<Receiver<String>>| {
            rx.and_then(|rx| {
                rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .ok()
            })
            .unwrap_or_default()
        };
        (read(self.stdout.take()), read(self.stderr.take()))
    }
}

/// How a child ended, in the words of the error messages: `exit status 3`, `killed by
/// signal 9`.
pub fn describe_status(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown status".into(),
    }
}

/// The last line of `s` that is not blank: what a failed child said last.
pub fn last_line(s: &str) -> Option<&str> {
    s.lines().map(str::trim).rfind(|l| !l.is_empty())
}

/// A port on 127.0.0.1 nobody listens on now (a server binds it a moment later).
pub fn free_port() -> Result<u16> {
    let l =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// A bounded child that ran to its end.
#[derive(Debug)]
pub struct Finished {
    /// How it ended (judged by the caller).
    pub status: ExitStatus,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
}

/// Runs `cmd` (stdin from /dev/null, its output collected) in a process group of its own
/// and waits for it, for at most `timeout`. Ctrl-C ([`interrupt::check`]) and the timeout
/// kill its whole group and return an error (`Interrupted`, or one sentence naming `what`);
/// an exit of any status is a [`Finished`].
pub fn run_bounded(cmd: &mut Command, what: &str, timeout: Duration) -> Result<Finished> {
    run_supervised(cmd, what, timeout, &mut || Ok(()))
}

/// [`run_bounded`], also asking `partner` every poll whether what the child depends on is
/// still there (a client's server): the first error it returns kills the child's group and
/// is returned, so a child can never wait on a partner that has gone.
pub fn run_supervised(
    cmd: &mut Command,
    what: &str,
    timeout: Duration,
    partner: &mut dyn FnMut() -> Result<()>,
) -> Result<Finished> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_group(cmd).with_context(|| format!("starting {what}"))?;
    let pgid = child.id();
    let mut output = Captured::start(&mut child);
    let kill = |child: &mut Child| {
        let _ = signal_group(pgid, SIGKILL);
        let _ = child.wait();
    };
    let t0 = Instant::now();
    let status = loop {
        if let Err(e) = interrupt::check() {
            kill(&mut child);
            return Err(e.into());
        }
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => {
                kill(&mut child);
                return Err(e).with_context(|| format!("waiting for {what}"));
            }
        }
        if let Err(e) = partner() {
            kill(&mut child);
            return Err(e);
        }
        if t0.elapsed() > timeout {
            kill(&mut child);
            bail!(
                "{what} did not finish within {} s; stopped",
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Whatever it left in its group goes with it, so nothing there holds the pipes.
    let _ = signal_group(pgid, SIGKILL);
    let (stdout, stderr) = output.join();
    Ok(Finished {
        status,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_child_is_collected_or_stopped() {
        let f = run_bounded(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            "sh",
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(describe_status(f.status), "exit status 3");
        assert_eq!((f.stdout.as_str(), f.stderr.as_str()), ("out\n", "err\n"));
        let e = run_bounded(
            Command::new("sleep").arg("30"),
            "sleep",
            Duration::from_millis(100),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "sleep did not finish within 0 s; stopped");
        // A partner that went away stops the child at once.
        let t0 = Instant::now();
        let mut polls = 0;
        let e = run_supervised(
            Command::new("sleep").arg("30"),
            "sleep",
            Duration::from_secs(60),
            &mut || {
                polls += 1;
                if polls > 2 {
                    bail!("the server exited")
                }
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "the server exited");
        assert!(t0.elapsed() < Duration::from_secs(20), "not waited for");
        // A grandchild outside the group holding the pipes cannot hold up the result.
        let f = run_bounded(
            Command::new("sh").args(["-c", "setsid sleep 5 & echo started; exit 0"]),
            "sh",
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(describe_status(f.status), "exit status 0");
        assert_eq!(last_line("a\nb  \n\n"), Some("b"));
        assert_eq!(last_line(" \n"), None);
    }
}
