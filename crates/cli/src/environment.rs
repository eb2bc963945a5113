//! The environment, checked before anything is mapped or measured, as the command line is:
//! a variable naming something pmscope cannot use is refused in one sentence that names the
//! variable and the path (exit 2), not found out after the measurement by the code that
//! reads it.

use crate::error::usage;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The results store's path, and what named it (for the messages).
pub struct StoreLocation {
    pub path: PathBuf,
    named_by: &'static str,
}

/// Where the results store is: `--results`, else `$PMSCOPE_RESULTS`, else the XDG default.
/// A path given by option or variable passes the one path resolver (its directory must
/// exist, no dangling link, no trailing slash); the default location's directories are made
/// when a command records.
pub fn store_location(results: Option<&Path>) -> Result<StoreLocation> {
    if let Some(p) = results {
        pmscope_sys::path::look(p).map_err(|e| usage(format!("--results {e}")))?;
        return Ok(StoreLocation {
            path: p.to_path_buf(),
            named_by: "--results",
        });
    }
    if let Some(p) = std::env::var_os("PMSCOPE_RESULTS").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(p);
        if !parent(&path).exists() {
            // Its directories are made with the first record, as the default location's
            // are (tests and scripts point it into a fresh temporary directory);
            // `check_writable` probes the nearest directory that exists.
            return Ok(StoreLocation {
                path,
                named_by: "the environment variable PMSCOPE_RESULTS:",
            });
        }
        let found = pmscope_sys::path::look(&path).map_err(|e| {
            usage(format!(
                "the environment variable PMSCOPE_RESULTS: {e} (or unset the variable)"
            ))
        })?;
        if found == pmscope_sys::path::Found::Directory {
            return Err(usage(format!(
                "the environment variable PMSCOPE_RESULTS: {} is a directory, not a results store; name a file such as {} (or unset the variable)",
                path.display(),
                path.join("results.sqlite").display()
            )));
        }
        return Ok(StoreLocation {
            path,
            named_by: "the environment variable PMSCOPE_RESULTS:",
        });
    }
    let path = pmscope_store::default_path().ok_or_else(|| {
        usage("no results store location: set $HOME or $PMSCOPE_RESULTS, or pass --results PATH")
    })?;
    Ok(StoreLocation {
        path,
        named_by: "the results store",
    })
}

/// A store a command records into must take writes: its file, and its directory (SQLite
/// writes its journal beside the file, and a new store is created there under a temporary
/// name). Root passes `access(2)` on a read-only mount's files and in `/proc`, so the
/// directory is probed by creating (and removing) a file in it.
pub fn check_writable(loc: &StoreLocation) -> Result<()> {
    let path = &loc.path;
    // Directories still to be made are made with the first record: the nearest one that
    // exists must take them.
    let mut dir = parent(path);
    while !dir.exists() {
        match dir.parent() {
            Some(d) if !d.as_os_str().is_empty() => dir = d,
            _ => return Ok(()),
        }
    }
    if !dir.is_dir() {
        return Ok(());
    }
    let refuse = |e: std::io::Error| {
        usage(format!(
            "{} {} cannot be written ({e}); name a results store in a directory you may write",
            loc.named_by,
            path.display()
        ))
    };
    if path.is_file() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(refuse)?;
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let probe = dir.join(format!(".{name}.pmscope-{}.probe", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(refuse(e)),
    }
}

/// The directory of `path` (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// `PMSCOPE_SYSROOT` names a copy of a machine's `/sys` and `/proc`: a directory holding at
/// least one of them. Anything else would read as a machine with no CPUs, no memory and
/// no devices, and its refusals would blame those.
pub fn check_sysroot() -> Result<()> {
    let Some(root) = std::env::var_os("PMSCOPE_SYSROOT").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let root = PathBuf::from(root);
    if root.join("sys").is_dir() || root.join("proc").is_dir() {
        return Ok(());
    }
    let what = if root.is_dir() {
        "holds neither sys/ nor proc/"
    } else if root.exists() {
        "is not a directory"
    } else {
        "does not exist"
    };
    Err(usage(format!(
        "the environment variable PMSCOPE_SYSROOT: {} {what}; it names a copy of a machine's /sys and /proc (unset it to read this machine's)",
        root.display()
    )))
}
