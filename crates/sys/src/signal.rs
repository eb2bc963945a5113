//! SIGINT and SIGTERM turned into a flag. The handler does the one async-signal-safe thing
//! (an atomic store); measuring loops look at the flag where stopping is cheap and unwind
//! normally, so every mapping is unmapped and every file removed by its own `Drop`. A second
//! signal while the first is being handled ends the process at once with `_exit`, the shell's
//! exit status for that signal (128 + N).
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicI32, Ordering};

/// The first SIGINT/SIGTERM received, 0 if none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
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
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
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
    }
}
