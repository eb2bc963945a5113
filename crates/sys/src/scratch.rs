//! Scratch files that cannot outlive the process.
//!
//! A file target's memory is a file pmscope creates; if pmscope is killed (SIGKILL, the OOM
//! killer, a crash) no handler runs, and a named file would hold its RAM (tmpfs) or its
//! persistent-memory capacity (fsdax) until someone finds it. So scratch files are created
//! unnamed (`O_TMPFILE`): the kernel frees them with the last descriptor, whatever ends the
//! process. `--keep` gives one a name at the end with `linkat`. File systems without
//! `O_TMPFILE` get a named file carrying the PID and a marker, and each run removes the
//! files of that exact naming whose process is gone ([`remove_stale`]).

#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Creates an unnamed regular file in `dir` (`O_TMPFILE`), readable and writable, mode 0600.
/// Fails with `EOPNOTSUPP` (or `EISDIR` on kernels before 3.11) where the file system has no
/// unnamed files.
pub fn create_unnamed(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)
}

/// Whether an error from [`create_unnamed`] means "this file system has no unnamed files"
/// (so a named file is the fallback) rather than a real failure.
pub fn unnamed_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
    )
}

/// Gives an unnamed file the name `to` (never replacing an existing file: `EEXIST`).
pub fn link_unnamed(file: &File, to: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let from =
        CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL in a number");
    let to = CString::new(to.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: both arguments are valid NUL-terminated strings that outlive the call;
    // AT_SYMLINK_FOLLOW makes linkat resolve the /proc magic link to the open file itself
    // (linking by descriptor without needing CAP_DAC_READ_SEARCH, unlike AT_EMPTY_PATH).
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The path by which this process can reopen an open file, named or not.
pub fn proc_path(file: &File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!(
        "/proc/{}/fd/{}",
        std::process::id(),
        file.as_raw_fd()
    ))
}

/// The name of the `seq`-th named scratch file of process `pid`.
pub fn named(pid: u32, seq: u32) -> String {
    format!("pmscope-{pid}-{seq}.bin")
}

/// The name `--keep` gives the `seq`-th scratch file of process `pid`: outside the
/// [`named`] form, so no later sweep ever takes a kept file for a stale one.
pub fn kept(pid: u32, seq: u32) -> String {
    format!("pmscope-{pid}-{seq}-kept.bin")
}

/// The PID in a scratch file name of exactly the form [`named`] writes, else `None`.
pub fn pid_of(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("pmscope-")?.strip_suffix(".bin")?;
    let (pid, seq) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(seq)).then(|| pid.parse().ok())?
}

/// Whether process `pid` exists (a zombie counts: its files may still be in use).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 performs only the existence and permission checks; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes the scratch files a killed pmscope left in `dir`: only regular files named
/// exactly as [`named`] writes, owned by this user, whose process no longer exists.
/// Returns what it removed; anything it cannot read or remove is left alone.
pub fn remove_stale(dir: &Path) -> Vec<PathBuf> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(pid_of) else {
            continue;
        };
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        if !meta.file_type().is_file() || meta.uid() != uid || process_alive(pid) {
            continue;
        }
        if std::fs::remove_file(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    #[test]
    fn names_round_trip_and_nothing_else_matches() {
        assert_eq!(pid_of(&named(4242, 7)), Some(4242));
        assert_eq!(pid_of(&kept(4242, 7)), None, "kept files are never swept");
        for other in [
            "pmscope-4242-7.bin.tmp",
            "pmscope-4242.bin",
            "pmscope--1.bin",
            "pmscope-x-1.bin",
            "xpmscope-1-1.bin",
            "pmscope-1-1-1.bin",
            "results.sqlite",
        ] {
            assert_eq!(pid_of(other), None, "{other}");
        }
    }

    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        assert!(!process_alive(pid));
        pid
    }

    #[test]
    fn only_files_of_dead_processes_in_the_exact_naming_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let stale = dir.path().join(named(dead, 0));
        let live = dir.path().join(named(std::process::id(), 0));
        let foreign = dir.path().join(format!("pmscope-{dead}-0.bin.keep"));
        let subdir = dir.path().join(named(dead, 1));
        for f in [&stale, &live, &foreign] {
            std::fs::write(f, b"x").unwrap();
        }
        std::fs::create_dir(&subdir).unwrap();
        assert_eq!(remove_stale(dir.path()), vec![stale.clone()]);
        assert!(!stale.exists());
        assert!(live.exists() && foreign.exists() && subdir.exists());
        assert_eq!(remove_stale(dir.path()), Vec::<PathBuf>::new());
    }

    #[test]
    fn an_unnamed_file_has_no_name_until_linked() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = match create_unnamed(dir.path()) {
            Ok(f) => f,
            Err(e) if unnamed_unsupported(&e) => panic!("the test's tmpfs/ext4 has O_TMPFILE"),
            Err(e) => panic!("{e}"),
        };
        f.write_all(b"kept").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut again = File::open(proc_path(&f)).unwrap();
        let mut s = String::new();
        again.read_to_string(&mut s).unwrap();
        assert_eq!(s, "kept");
        let to = dir.path().join("kept.bin");
        link_unnamed(&f, &to).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"kept");
        // A name is never replaced.
        std::fs::write(dir.path().join("taken"), b"precious").unwrap();
        let g = create_unnamed(dir.path()).unwrap();
        let e = link_unnamed(&g, &dir.path().join("taken")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            std::fs::read(dir.path().join("taken")).unwrap(),
            b"precious"
        );
        f.rewind().unwrap();
    }

    #[test]
    fn tmpfs_has_unnamed_files() {
        // /dev/shm is where shm targets live; it must never fall back to named files.
        create_unnamed(Path::new("/dev/shm")).unwrap();
    }
}
