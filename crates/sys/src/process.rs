//! What `pmscope run` needs from the kernel to start a program under its preload library:
//! anonymous in-memory files (`memfd_create`) that a child reaches by
//! `/proc/<pid>/fd/<n>` while pmscope lives, and signals sent to the child.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::FromRawFd;

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

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
}
