//! What the commands that do file I/O (`fs`, `fio`) share: their `file:DIR` targets, the
//! facts of the file system each directory is on, and the work directory they create
//! exclusively inside it and remove afterwards.
//!
//! A `file:DIR` target is parsed and preflighted like every target (`Env::targets`),
//! then must name an existing directory (`TargetSpec::directory`). The harness still maps
//! each target — a small file in DIR — so every record carries what the kernel granted
//! there (MAP_SYNC or the page cache, the page size) beside what the mount options ask for.

use crate::Env;
use crate::error::usage;
use crate::params::TargetArgs;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::vocab::p;
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_sys::mountinfo::MountInfo;
use std::path::{Path, PathBuf};

/// Bytes the harness maps in each directory: enough for one 2 MiB page, so the record says
/// whether a DAX mount gives huge pages; on hugetlbfs it takes one page of the pool.
pub const PROBE_BYTES: u64 = 2 << 20;

/// One directory to measure in.
#[derive(Debug, Clone)]
pub struct DirTarget {
    /// The target as given.
    pub spec: TargetSpec,
    /// The directory.
    pub dir: PathBuf,
    /// The mount it is on (`None` if mountinfo does not list one).
    pub mount: Option<MountInfo>,
}

impl DirTarget {
    /// `r` with the directory and its file system's facts as params.
    pub fn describe(&self, r: Record) -> Record {
        describe_directory(r, &self.dir, self.mount.as_ref())
    }
}

/// `r` with `dir` and the facts of the file system it is on (`mount`) as params: the one
/// description of a directory every record of file I/O carries (`fs`, `fio`, and the
/// append-only file of `app redis --aof-on`).
pub fn describe_directory(r: Record, dir: &Path, mount: Option<&MountInfo>) -> Record {
    r.param(p::DIRECTORY, dir.display().to_string())
        .param(p::FS_TYPE, mount.map(|m| m.fstype.clone()))
        .param(p::MOUNT_POINT, mount.map(|m| m.mount_point.clone()))
        .param(p::MOUNT_OPTIONS, mount.map(|m| m.options()))
        .param(
            p::DEVICE,
            mount.map(|m| format!("{} ({})", m.source, m.device_number)),
        )
        .param(p::DAX, mount.and_then(|m| m.dax()))
        .param(p::JOURNAL, mount.and_then(|m| m.journal()))
}

/// The `file:DIR` targets of `command` (at least one), preflighted, with their mounts.
pub fn targets(ctx: &Env, command: &str, a: &TargetArgs) -> Result<(Vec<DirTarget>, MapOptions)> {
    if a.targets.is_empty() {
        return Err(usage(format!(
            "{command} needs a directory to work in: give -t file:DIR (e.g. -t file:/tmp)"
        )));
    }
    let (specs, opts) = ctx.targets(a, &[])?;
    let mut out = Vec::new();
    for spec in specs {
        let Some(dir) = spec.directory() else {
            return Err(usage(if spec.kind_name() == "file" {
                format!(
                    "--target {spec}: {command} works in an existing directory and this path is not one: name the directory (file:DIR)"
                )
            } else {
                format!(
                    "--target {spec}: {command} does file I/O in a directory, so it takes file:DIR targets only"
                )
            }));
        };
        let dir = dir.to_path_buf();
        out.push(DirTarget {
            mount: pmscope_sys::mountinfo::of(&ctx.root, &dir),
            dir,
            spec,
        });
    }
    Ok((out, opts))
}

/// A directory pmscope made exclusively (mkdir refuses an existing name, so it never works
/// among someone else's files) and removes with everything in it when dropped: at the end,
/// on an error, and on Ctrl-C (the interrupt returns up the stack like an error). A
/// SIGKILLed run leaves it behind, named `pmscope-<command>-<pid>-<n>`.
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    /// Creates `parent/pmscope-<command>-<pid>-<n>` with mode 0700, the first free `n`.
    pub fn create(parent: &Path, command: &str) -> Result<WorkDir> {
        use std::os::unix::fs::DirBuilderExt;
        for n in 0..1000 {
            let path = parent.join(format!("pmscope-{command}-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(WorkDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(anyhow::anyhow!(
                        "cannot create a work directory in {}: {e}",
                        parent.display()
                    ));
                }
            }
        }
        Err(anyhow::anyhow!(
            "cannot find a free work-directory name in {}",
            parent.display()
        ))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            eprintln!(
                "pmscope: warning: could not remove the work directory {}: {e}",
                self.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_directory_is_new_and_leaves_nothing_behind() {
        let parent = tempfile::tempdir().unwrap();
        let a = WorkDir::create(parent.path(), "fs").unwrap();
        let b = WorkDir::create(parent.path(), "fs").unwrap();
        assert_ne!(a.path(), b.path(), "an existing name is never reused");
        std::fs::write(a.path().join("f"), b"x").unwrap();
        std::fs::create_dir(a.path().join("d")).unwrap();
        drop(a);
        drop(b);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }
}
