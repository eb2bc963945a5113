//! The directory redis keeps its append-only file in (`--aof-on file:DIR`, seed 004
//! Figure 27): a new one made inside DIR, removed afterwards unless kept.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// A directory created exclusively inside a parent (`pmscope-app-<pid>-<n>`), removed with
/// everything in it when dropped unless asked to stay.
#[derive(Debug)]
pub struct AofDir {
    path: PathBuf,
    remove: bool,
}

impl AofDir {
    /// Creates it inside `parent`; `remove`: remove it when dropped.
    pub fn create(parent: &Path, remove: bool) -> Result<AofDir> {
        for n in 0..1000 {
            let path = parent.join(format!("pmscope-app-{}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(AofDir { path, remove }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("creating {}", path.display()));
                }
            }
        }
        bail!(
            "no free directory name pmscope-app-{}-N in {}",
            std::process::id(),
            parent.display()
        )
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The append-only file redis wrote: the largest regular file below the directory
    /// (redis 7 keeps it in `appendonlydir/` there), or `None`.
    pub fn append_only_file(&self) -> Option<PathBuf> {
        largest_file(&self.path)
    }
}

impl Drop for AofDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The largest regular file under `dir`, or `None`.
fn largest_file(dir: &Path) -> Option<PathBuf> {
    let mut best: Option<(u64, PathBuf)> = None;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                dirs.push(e.path());
            } else if m.is_file() && best.as_ref().is_none_or(|b| m.len() > b.0) {
                best = Some((m.len(), e.path()));
            }
        }
    }
    best.map(|b| b.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_file_is_found_below_the_directory() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(largest_file(d.path()), None);
        std::fs::write(d.path().join("small"), b"x").unwrap();
        std::fs::create_dir(d.path().join("appendonlydir")).unwrap();
        let aof = d.path().join("appendonlydir/appendonly.aof.1.incr.aof");
        std::fs::write(&aof, b"*3\r\n$3\r\nSET\r\n").unwrap();
        assert_eq!(largest_file(d.path()), Some(aof));
    }

    #[test]
    fn the_directory_is_new_and_goes_unless_kept() {
        let parent = tempfile::tempdir().unwrap();
        let gone = AofDir::create(parent.path(), true).unwrap();
        let kept = AofDir::create(parent.path(), false).unwrap();
        assert_ne!(gone.path(), kept.path());
        let (gone_path, kept_path) = (gone.path().to_path_buf(), kept.path().to_path_buf());
        drop((gone, kept));
        assert!(!gone_path.exists() && kept_path.is_dir());
    }
}
