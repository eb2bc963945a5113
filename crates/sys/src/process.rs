//! Processes pmscope starts: anonymous in-memory files (`memfd_create`) a child reaches by
//! `/proc/<pid>/fd/<n>` while pmscope lives (`pmscope run`'s preload library), signals, and
//! children pmscope must never leave behind (the servers of `pmscope app`): each runs in a
//! process group of its own, so one signal reaches it and everything it started, and the
//! kernel sends it SIGTERM if pmscope dies first (even by SIGKILL, when no `Drop` runs).
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// An anonymous in-memory file (close-on-exec) holding `bytes`. Nothing names it on any
/// file system: the kernel frees it with its last descriptor, however pmscope ends.
pub fn memfd_with(name: &str, bytes: &[u8]) -> io::Result<File> {
    let name = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the name"))?;
    // SAFETY: `name` is a valid NUL-terminated string that outlives the call; the flags are
    // plain bits.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: memfd_create just returned this descriptor and nothing else owns it.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(bytes)?;
    Ok(file)
}

/// Sends `signal` to process `pid`.
pub fn send_signal(pid: u32, signal: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill has no memory-safety preconditions; a positive pid names one process.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// SIGTERM, for callers without libc.
pub const SIGTERM: i32 = libc::SIGTERM;
/// SIGKILL, for callers without libc.
pub const SIGKILL: i32 = libc::SIGKILL;

/// Makes the child started by `cmd` receive `signal` when the thread that starts it exits
/// (pmscope dying included, even by SIGKILL, when no `Drop` runs). Start it from a thread
/// that outlives it (the main thread).
pub fn dies_with_parent(cmd: &mut Command, signal: i32) -> &mut Command {
    // SAFETY: getpid is async-signal-safe and is read before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (prctl, getppid, _exit); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the prctl: then nobody would signal us.
            if libc::getppid() != parent {
                libc::_exit(128 + signal);
            }
            Ok(())
        })
    }
}

/// Spawns `cmd` as the leader of a new process group (one signal reaches it and everything
/// it starts; a terminal's Ctrl-C does not) that receives SIGTERM when pmscope dies, so a
/// server or client pmscope started ends with it.
pub fn spawn_group(cmd: &mut Command) -> std::io::Result<Child> {
    cmd.process_group(0);
    dies_with_parent(cmd, libc::SIGTERM);
    cmd.spawn()
}

/// Sends `signal` to every process of the group `pgid`. Ok(false) if the group is gone.
pub fn signal_group(pgid: u32, signal: i32) -> std::io::Result<bool> {
    let pgid =
        libc::pid_t::try_from(pgid).map_err(|_| std::io::Error::other("pid out of range"))?;
    // SAFETY: kill with a negative pid only sends a signal; no memory is involved.
    if unsafe { libc::kill(-pgid, signal) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ESRCH) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// The children of `pid` (from /proc/PID/task/*/children); empty if it is gone.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out: Vec<u32> = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The effective user id of this process.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether any process of the group `pgid` is still alive.
pub fn group_alive(pgid: u32) -> bool {
    signal_group(pgid, 0).unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::{Duration, Instant};

    #[test]
    fn a_memfd_holds_its_bytes_and_is_reachable_through_proc() {
        let f = memfd_with("pmscope-test", b"hello").unwrap();
        let mut back = String::new();
        File::open(crate::scratch::proc_path(&f))
            .unwrap()
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, "hello");
    }

    #[test]
    fn signal_zero_reaches_this_process() {
        send_signal(std::process::id(), 0).unwrap();
    }

    #[test]
    fn a_child_set_up_to_die_with_its_parent_still_runs() {
        let o = dies_with_parent(Command::new("sh").args(["-c", "echo ok"]), libc::SIGKILL)
            .output()
            .unwrap();
        assert!(o.status.success());
        assert_eq!(o.stdout, b"ok\n");
    }

    #[test]
    fn a_group_is_signalled_with_its_children() {
        // sh starts a grandchild in the same group; one signal ends both.
        let mut c =
            spawn_group(Command::new("sh").args(["-c", "sleep 30 & sleep 30; wait"])).unwrap();
        let pgid = c.id();
        assert!(group_alive(pgid));
        assert!(signal_group(pgid, libc::SIGKILL).unwrap());
        c.wait().unwrap();
        let t = Instant::now();
        while group_alive(pgid) && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !group_alive(pgid),
            "the grandchild survived its group's SIGKILL"
        );
        assert!(!signal_group(pgid, 0).unwrap());
    }

    #[test]
    fn children_are_listed() {
        let mut c = spawn_group(Command::new("sh").args(["-c", "sleep 30 & wait"])).unwrap();
        let t = Instant::now();
        let mut kids = Vec::new();
        while kids.is_empty() && t.elapsed() < Duration::from_secs(5) {
            kids = children(c.id());
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(kids.len(), 1, "sh's one child");
        send_signal(kids[0], libc::SIGKILL).unwrap();
        c.wait().unwrap();
        assert!(children(c.id()).is_empty());
    }
}

/// A field of /proc/`pid`/status (`Cpus_allowed_list`, `VmSwap`), its value trimmed;
/// `None` when the process is gone or has no such field.
pub fn status_field(pid: u32, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// A `kB` field of /proc/`pid`/status (`VmRSS`, `VmSwap`) in bytes.
pub fn status_bytes(pid: u32, name: &str) -> Option<u64> {
    let v = status_field(pid, name)?;
    let kb: u64 = v.strip_suffix("kB")?.trim().parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn own_status_fields_are_read() {
        let me = std::process::id();
        let cpus = status_field(me, "Cpus_allowed_list").unwrap();
        // The main thread's mask: the test harness never pins it.
        assert!(!pmscope_core::cpulist::parse_list(&cpus).unwrap().is_empty());
        assert!(status_bytes(me, "VmRSS").unwrap() > 0);
        assert_eq!(status_field(me, "NoSuchField"), None);
    }
}
