//! What a path given on the command line names, decided once for every option that names a
//! file or a directory (`file:` targets, `-o`, `--kmers`, `--results`, `--pool`,
//! `--svg-dir`, `--aof-on`), before anything is created, mapped or measured.
//!
//! [`look`] refuses, in one sentence, what no option can mean: an empty path, a trailing
//! slash on something that is not a directory (`file:/mnt/pmem/` with nothing mounted there
//! must not become a file called `pmem` in `/mnt`), a new name in a directory that does not
//! exist or is not a directory, a symbolic link to nothing (a later create would follow it
//! or fail after the measurement), and a new name in a directory this process may not
//! write. What remains is a [`Found`]: an existing directory, an existing file, or a new
//! name in a writable directory; each option then says which of those it takes.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What a path names once [`look`] accepted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// An existing directory (or a link to one).
    Directory,
    /// An existing entry that is not a directory: a file, a device (or a link to one).
    File,
    /// Nothing yet; its directory exists and this process may create entries in it.
    New,
}

/// Why a path cannot be used: one sentence with its remedy. Always the user's to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PathError(pub String);

/// The directory a new entry at `path` goes into (`.` for a bare name).
pub fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Whether `path` is spelled as a directory: it ends in `/` or `/.`.
fn spelled_as_directory(path: &Path) -> bool {
    let b = path.as_os_str().as_bytes();
    b.len() > 1 && (b.ends_with(b"/") || b.ends_with(b"/."))
}

/// Decides what `path` names, refusing what no option can mean (see the module doc).
pub fn look(path: &Path) -> Result<Found, PathError> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        return Err(PathError(
            "an empty path names nothing; give a file or directory name".into(),
        ));
    }
    let as_directory = spelled_as_directory(path);
    // The entry itself, without the slashes that spell it as a directory.
    let mut bytes = path.as_os_str().as_bytes();
    while bytes.len() > 1 {
        match bytes
            .strip_suffix(b"/.")
            .or_else(|| bytes.strip_suffix(b"/"))
        {
            Some(b) => bytes = b,
            None => break,
        }
    }
    let bare = Path::new(std::ffi::OsStr::from_bytes(if bytes.is_empty() {
        b"/"
    } else {
        bytes
    }));
    match std::fs::symlink_metadata(bare) {
        Ok(meta) => {
            let followed = if meta.file_type().is_symlink() {
                match std::fs::metadata(bare) {
                    Ok(m) => m,
                    Err(_) => {
                        let to = std::fs::read_link(bare).unwrap_or_default();
                        return Err(PathError(format!(
                            "{shown} is a symbolic link to {}, which does not exist; name the real path or remove the link",
                            to.display()
                        )));
                    }
                }
            } else {
                meta
            };
            if followed.is_dir() {
                Ok(Found::Directory)
            } else if as_directory {
                Err(PathError(format!(
                    "{shown} names a directory (trailing slash), but {} is a file; drop the slash or name a directory",
                    bare.display()
                )))
            } else {
                Ok(Found::File)
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if as_directory {
                return Err(PathError(format!(
                    "{shown} does not exist, and its trailing slash names a directory: create it first (mkdir -p {shown}) or drop the slash"
                )));
            }
            new_in_directory(path)
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Err(PathError(format!(
            "{shown} cannot exist: a component of its directory is a file, not a directory"
        ))),
        Err(e) => Err(PathError(format!("cannot look at {shown}: {e}"))),
    }
}

/// `path` does not exist: its directory must, and must take new entries.
fn new_in_directory(path: &Path) -> Result<Found, PathError> {
    let dir = parent_of(path);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(PathError(format!(
                "{} cannot be created: {} is not a directory",
                path.display(),
                dir.display()
            )));
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(PathError(format!(
                "{} does not exist and neither does its directory {}: create the directory first (mkdir -p {}) or name one that exists",
                path.display(),
                dir.display(),
                dir.display()
            )));
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(PathError(format!(
                "{} cannot be created: a component of {} is a file, not a directory",
                path.display(),
                dir.display()
            )));
        }
        Err(e) => {
            return Err(PathError(format!("cannot look at {}: {e}", dir.display())));
        }
    }
    if let Err(e) = writable(dir) {
        return Err(PathError(format!(
            "{} cannot be created: {} does not take new files ({e}); name a place you may write",
            path.display(),
            dir.display()
        )));
    }
    Ok(Found::New)
}

/// Whether this process may create entries in `dir` (`access(W_OK | X_OK)`; a read-only
/// mount answers `EROFS` even to root).
fn writable(dir: &Path) -> std::io::Result<()> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call; access only
    // reads it.
    let rc = unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The directory `path` names: an existing one, or an error naming `flag` and what it holds.
pub fn existing_directory(flag: &str, path: &Path) -> Result<PathBuf, PathError> {
    match look(path)? {
        Found::Directory => Ok(path.to_path_buf()),
        Found::File => Err(PathError(format!(
            "{flag} {}: a file, not a directory; name a directory",
            path.display()
        ))),
        Found::New => Err(PathError(format!(
            "{flag} {}: no such directory; create it first or name one that exists",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(p: &Path) -> String {
        look(p).unwrap_err().0
    }

    #[test]
    fn every_reading_of_a_path_is_decided_or_refused() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(look(dir), Ok(Found::Directory));
        assert_eq!(look(&dir.join(".")), Ok(Found::Directory));
        assert_eq!(
            look(Path::new(&format!("{}/", dir.display()))),
            Ok(Found::Directory)
        );
        assert_eq!(look(&file), Ok(Found::File));
        assert_eq!(look(&dir.join("new")), Ok(Found::New));
        assert_eq!(look(Path::new("relative-new-name")), Ok(Found::New));

        // A trailing slash on nothing, or on a file.
        let missing = format!("{}/nope/", dir.display());
        assert!(
            err(Path::new(&missing)).starts_with(&format!(
                "{missing} does not exist, and its trailing slash names a directory"
            )),
            "{}",
            err(Path::new(&missing))
        );
        let slash_file = format!("{}/", file.display());
        assert!(err(Path::new(&slash_file)).contains("is a file"));
        // A new name in a missing directory, or under a file.
        assert!(err(&dir.join("no/such")).contains("neither does its directory"));
        assert!(err(&file.join("x")).contains("is a file, not a directory"));
        assert!(err(&file.join("x/y")).contains("is a file, not a directory"));
        // A link to nothing; a link to a directory is the directory.
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("gone/x"), &dangling).unwrap();
        assert!(err(&dangling).contains("is a symbolic link to"));
        let link = dir.join("link");
        std::os::unix::fs::symlink(dir, &link).unwrap();
        assert_eq!(look(&link), Ok(Found::Directory));
        assert!(err(Path::new("")).starts_with("an empty path"));

        assert_eq!(existing_directory("--x", dir), Ok(dir.to_path_buf()));
        assert!(existing_directory("--x", &file).is_err());
        assert!(existing_directory("--x", &dir.join("new")).is_err());
    }

    #[test]
    fn a_directory_without_write_permission_takes_no_new_name() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let locked = d.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o500)).unwrap();
        let verdict = look(&locked.join("new"));
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Root may write anywhere but on a read-only mount, so only an unprivileged run
        // sees the refusal here.
        if crate::process::effective_uid() != 0 {
            assert!(verdict.unwrap_err().0.contains("does not take new files"));
        } else {
            assert_eq!(verdict, Ok(Found::New));
        }
    }
}
