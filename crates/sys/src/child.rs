//! External tools pmscope runs (fio): a child that cannot outlive pmscope. SIGINT and
//! SIGTERM are handled by the caller (it kills and reaps the child); a SIGKILL of pmscope
//! leaves no chance for that, so the kernel is asked to kill the child when its parent dies
//! (`PR_SET_PDEATHSIG`).
#![allow(unsafe_code)]

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the child started by `cmd` receive SIGKILL when the thread that starts it exits
/// (pmscope dying included). Start it from a thread that outlives it (the main thread).
pub fn dies_with_parent(cmd: &mut Command) -> &mut Command {
    // SAFETY: getpid is async-signal-safe and is read before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (prctl, getppid, _exit); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the prctl: then nobody would kill us.
            if libc::getppid() != parent {
                libc::_exit(137);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_set_up_to_die_with_its_parent_still_runs() {
        let o = dies_with_parent(Command::new("sh").args(["-c", "echo ok"]))
            .output()
            .unwrap();
        assert!(o.status.success());
        assert_eq!(o.stdout, b"ok\n");
    }
}
