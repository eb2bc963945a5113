//! A program started under a target: [`Launched`], supervised without blocking until it is
//! waited for or stopped, which reads its placement report.

use super::{LaunchError, Outcome, Placement, Supervision};
use crate::child::{Captured, describe_status, last_line};
use crate::interrupt;
use pmscope_core::warning::Warning;
use pmscope_mapping::HeapPlan;
use pmscope_sys::process::{self, SIGKILL, SIGTERM};
use pmscope_sys::signal;
use std::fs::File;
use std::io::{Read, Seek};
use std::net::{Ipv4Addr, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// What a launch holds for the program's whole life.
pub(super) struct Held {
    /// The program as given.
    pub program: String,
    /// The target as given.
    pub spec: String,
    /// The preload library's memfd: every process under the program loads it through its
    /// /proc path, so it must stay open while any of them may start.
    pub _library: File,
    /// The report memfd every process appends its block to.
    pub report: File,
    /// The target's heap recipe.
    pub plan: HeapPlan,
    /// The threshold used.
    pub threshold: u64,
    /// Whether `--keep` named the files.
    pub keep: bool,
    /// What the launch found before the program started (stale files removed).
    pub warnings: Vec<Warning>,
}

/// A program running with its large allocations on a target. Its outcome comes from
/// [`wait`](Launched::wait) or [`stop`](Launched::stop); dropped while it runs, it is killed
/// (a [`Supervision::Background`] program with its whole process group), so an early
/// return or Ctrl-C leaves nothing running.
pub struct Launched {
    child: Child,
    how: Supervision,
    held: Held,
    output: Captured,
    /// Set once the program has ended and been reaped.
    status: Option<ExitStatus>,
}

impl Launched {
    pub(super) fn new(mut child: Child, how: Supervision, held: Held) -> Launched {
        let output = Captured::start(&mut child);
        Launched {
            child,
            how,
            held,
            output,
            status: None,
        }
    }

    /// The program's PID (a [`Supervision::Background`] program's is also its process
    /// group's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The program's name in messages: the file name of what was run.
    pub fn name(&self) -> &str {
        let p = self.held.program.as_str();
        p.rsplit('/').next().unwrap_or(p)
    }

    /// Whether the program still runs (without blocking). Once it has ended, whatever it
    /// left in a process group of its own is killed.
    pub fn running(&mut self) -> Result<bool, LaunchError> {
        if self.status.is_some() {
            return Ok(false);
        }
        match self.child.try_wait() {
            Ok(None) => Ok(true),
            Ok(Some(status)) => {
                self.status = Some(status);
                if self.how == Supervision::Background && process::group_alive(self.pid()) {
                    let _ = process::signal_group(self.pid(), SIGKILL);
                }
                Ok(false)
            }
            Err(e) => Err(LaunchError::System(format!(
                "cannot wait for the program: {e}"
            ))),
        }
    }

    /// Waits for the program to end and returns its outcome. The first SIGINT or SIGTERM
    /// pmscope receives is passed on to the program once, unless the terminal already sent
    /// it to a [`Supervision::Foreground`] program itself (Ctrl-C reaches its whole group).
    pub fn wait(mut self) -> Result<Outcome, LaunchError> {
        let mut forwarded = false;
        while self.running()? {
            if !forwarded && let Some(sig) = signal::received() {
                forwarded = true;
                if self.how == Supervision::Background || !signal::received_from_terminal() {
                    let _ = process::send_signal(self.pid(), sig);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.outcome()
    }

    /// Asks the program to end (SIGTERM to the program alone, so it exits normally and
    /// every process under it reports), waits up to `grace`, and returns its outcome. A
    /// program still running then is killed (with its process group, in the background)
    /// and that is an error.
    pub fn stop(mut self, grace: Duration) -> Result<Outcome, LaunchError> {
        if self.running()? {
            let _ = process::send_signal(self.pid(), SIGTERM);
        }
        let t0 = Instant::now();
        while self.running()? {
            if t0.elapsed() > grace {
                self.kill();
                return Err(LaunchError::Program(format!(
                    "{} did not exit within {} s of SIGTERM; killed",
                    self.name(),
                    grace.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.outcome()
    }

    /// Waits, for at most `timeout`, until something accepts connections on
    /// 127.0.0.1:`port` while the program runs. A program that ends first is an error
    /// quoting the last line it printed (a [`Supervision::Background`] program's output is
    /// collected); so is the timeout; Ctrl-C stops the wait with `Interrupted`.
    pub fn wait_until_listening(&mut self, port: u16, timeout: Duration) -> anyhow::Result<()> {
        let t0 = Instant::now();
        loop {
            interrupt::check()?;
            let addr = (Ipv4Addr::LOCALHOST, port).into();
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if !self.running()? {
                return Err(self
                    .ended(&format!("before it listened on 127.0.0.1:{port}"))
                    .into());
            }
            if t0.elapsed() > timeout {
                return Err(LaunchError::Program(format!(
                    "{} on {} did not listen on 127.0.0.1:{port} within {} s",
                    self.name(),
                    self.held.spec,
                    timeout.as_secs()
                ))
                .into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Ok while the program runs; once it has ended (and been reaped, so no defunct
    /// process is left), one sentence saying so `when` (e.g. "while memaslap ran"),
    /// quoting the last line it printed. What supervises a partner of the program (its
    /// benchmark client) asks this on every poll.
    pub fn still_running(&mut self, when: &str) -> anyhow::Result<()> {
        if self.running()? {
            return Ok(());
        }
        Err(self.ended(when).into())
    }

    /// The error of a program that ended `when`.
    fn ended(&mut self, when: &str) -> LaunchError {
        let status = self.status.map_or("unknown status".into(), describe_status);
        let (out, err) = self.output.join();
        LaunchError::Program(format!(
            "{} on {} exited ({status}) {when}: {}",
            self.name(),
            self.held.spec,
            last_line(&err)
                .or_else(|| last_line(&out))
                .unwrap_or("it printed nothing")
        ))
    }

    /// Kills the program (with its group in the background) and reaps it.
    fn kill(&mut self) {
        match self.how {
            Supervision::Background => {
                let _ = process::signal_group(self.pid(), SIGKILL);
            }
            Supervision::Foreground => {
                let _ = process::send_signal(self.pid(), SIGKILL);
            }
        }
        if let Ok(s) = self.child.wait() {
            self.status = Some(s);
        }
    }

    /// The outcome of the program that ended: its status and its report, read back.
    fn outcome(&mut self) -> Result<Outcome, LaunchError> {
        let status = self.status.expect("the program has ended");
        let (exit_code, killed_by) = match (status.code(), status.signal()) {
            (Some(c), _) => (c, None),
            (None, Some(s)) => (128 + s, Some(s)),
            (None, None) => (1, None),
        };
        let mut text = String::new();
        let report = &mut self.held.report;
        report
            .rewind()
            .and_then(|_| report.read_to_string(&mut text))
            .map_err(|e| LaunchError::System(format!("cannot read the placement report: {e}")))?;
        let placement = Placement::read(
            self.held.plan.clone(),
            self.held.threshold,
            &text,
            self.held.keep,
            std::mem::take(&mut self.held.warnings),
            killed_by,
        );
        Ok(Outcome {
            exit_code,
            signal: killed_by,
            placement,
        })
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.kill();
        }
    }
}
