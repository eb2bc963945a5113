//! Where `/sys` and `/proc` are read from. `PMSCOPE_SYSROOT` points pmscope at a fake tree
//! (tests, or a copy of another machine's files); the default is `/`.
//!
//! Only file reads go through a `SysRoot`; syscalls always talk to the running kernel.

use std::path::{Path, PathBuf};

/// A root directory under which `proc/...` and `sys/...` are looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    root: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        SysRoot::host()
    }
}

impl SysRoot {
    /// The running system (`/`), or the tree named by `PMSCOPE_SYSROOT`.
    pub fn host() -> SysRoot {
        match std::env::var_os("PMSCOPE_SYSROOT") {
            Some(p) if !p.is_empty() => SysRoot { root: p.into() },
            _ => SysRoot { root: "/".into() },
        }
    }

    /// A fake tree rooted at `root`.
    pub fn at(root: impl Into<PathBuf>) -> SysRoot {
        SysRoot { root: root.into() }
    }

    /// Whether this is the real system, so syscall results and file contents agree.
    pub fn is_host(&self) -> bool {
        self.root == Path::new("/")
    }

    /// The full path of `rel` (given without a leading slash, e.g. `proc/meminfo`).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// Reads a file as text; `None` if it is missing or unreadable.
    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    /// Reads a file and trims it.
    pub fn read_trim(&self, rel: &str) -> Option<String> {
        self.read(rel).map(|s| s.trim().to_string())
    }

    /// Reads a file holding one unsigned integer.
    pub fn read_u64(&self, rel: &str) -> Option<u64> {
        self.read_trim(rel)?.parse().ok()
    }

    /// Names of the entries of a directory, sorted; empty if it is missing.
    pub fn list(&self, rel: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path(rel))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Whether a path exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }
}

/// The active value of a sysfs "choice" file such as `always [madvise] never`.
pub fn active_choice(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_active_choice() {
        assert_eq!(
            active_choice("always [madvise] never\n"),
            Some("madvise".into())
        );
        assert_eq!(active_choice("never"), None);
    }
}
