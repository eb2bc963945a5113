//! SIGINT and SIGTERM turned into a flag. The handler does the one async-signal-safe thing
//! (an atomic store); measuring loops look at the flag where stopping is cheap and unwind
//! normally, so every mapping is unmapped and every file removed by its own `Drop`. A second
//! signal while the first is being handled ends the process at once with `_exit`, the shell's
//! exit status for that signal (128 + N).
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicI32, Ordering};

/// The first SIGINT/SIGTERM received, 0 if none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The `si_code` of the first signal: `SI_KERNEL` when the terminal sent it (Ctrl-C reaches
/// the whole foreground process group), `SI_USER` when a process called kill.
static RECEIVED_CODE: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let code = if info.is_null() {
        0
    } else {
        // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t for the handler's
        // duration; reading one field is async-signal-safe.
        unsafe { (*info).si_code }
    };
    if RECEIVED.load(Ordering::SeqCst) == 0 {
        RECEIVED_CODE.store(code, Ordering::SeqCst);
    }
    if RECEIVED
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // SAFETY: _exit is async-signal-safe; it ends the process without running anything
        // that could deadlock in a handler.
        unsafe { libc::_exit(128 + sig) };
    }
}

/// Installs the handler for SIGINT and SIGTERM (idempotent).
pub fn install() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid value to fill in; the handler only performs
        // atomic operations and _exit, both async-signal-safe; SA_RESTART keeps interrupted
        // reads and writes from failing with EINTR.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal
                as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                as usize;
            sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal received (SIGINT = 2, SIGTERM = 15), if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// Whether the signal [`received`] came from the terminal (Ctrl-C, which the kernel sends
/// to every process of the foreground group) rather than from a process's kill: a program
/// `pmscope run` started got a terminal's signal itself, and only a kill needs forwarding.
pub fn received_from_terminal() -> bool {
    received().is_some() && RECEIVED_CODE.load(Ordering::SeqCst) == libc::SI_KERNEL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sets_the_flag_and_does_not_kill() {
        install().unwrap();
        assert_eq!(received(), None);
        // SAFETY: raising a signal we handle, in our own process.
        unsafe { libc::raise(libc::SIGTERM) };
        assert_eq!(received(), Some(libc::SIGTERM));
        assert!(!received_from_terminal(), "raise is a process's signal");
    }
}
