//! Persistent pools: a file that outlives the process, created exclusively or reopened,
//! mapped shared (MAP_SYNC where the file system is DAX) and verified like every other
//! mapping. Unlike a `file:` target, a pool file is never removed: it is the user's data.
//!
//! Creating never leaves a half-made pool under its name: [`Pool::create`] makes the file
//! unnamed (`O_TMPFILE`; on a file system without it, a scratch name that later runs sweep
//! once its process is gone), and [`Pool::publish`] gives it its name — exclusively, after
//! the caller wrote its header and the file was synced — then syncs the directory. A kill
//! at any moment leaves no pool file or a complete one.
//!
//! Reopening never writes: the pre-fault pass reads one byte per page, so a pool that the
//! caller then refuses (foreign, corrupt, truncated) is left byte-for-byte as it was.
#![allow(unsafe_code)]

use crate::backing::{Backing, Expectation, MapOptions};
use crate::{TargetError, TargetSpec, Warning, verify};
use pmscope_core::achieved::{Achieved, Persistence};
use pmscope_core::record::TargetRecord;
use pmscope_sys::mman::{self, FileMapMode, RawMap};
use pmscope_sys::{dax, scratch};
use std::fs::{File, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Scratch names of pools created where `O_TMPFILE` is missing: clear of the mapping's own
/// scratch sequence and tx-pm's.
static POOL_SEQ: AtomicU32 = AtomicU32::new(2 << 20);

/// Where a created pool's file is until [`Pool::publish`] names it.
enum Naming {
    /// Reopened, or published: the file has its name.
    Named,
    /// Created unnamed (`O_TMPFILE`).
    Unnamed,
    /// Created under a scratch name in the pool's directory (no `O_TMPFILE`); removed if
    /// the pool is dropped unpublished, swept by a later run if the process is killed.
    Scratch(PathBuf),
}

/// A mapped pool file.
pub struct Pool {
    spec: TargetSpec,
    path: PathBuf,
    created: bool,
    naming: Naming,
    // Unmaps and closes on drop; a device-style backing never removes the file.
    backing: Backing,
    raw: RawMap,
    achieved: Achieved,
    warnings: Vec<Warning>,
}

// SAFETY: the Pool owns its mapping; it hands out only `&[AtomicU64]` views, through
// which threads share the memory with atomic operations.
unsafe impl Send for Pool {}
// SAFETY: as above.
unsafe impl Sync for Pool {}

impl Pool {
    /// Creates a zero-filled pool of `bytes` bytes (rounded up to 2 MiB) to be named `path`,
    /// and maps it. The file has no name until [`publish`](Self::publish); `path` must not
    /// exist (it is never touched if it does).
    pub fn create(path: &Path, bytes: u64, opts: &MapOptions) -> Result<Pool, TargetError> {
        let refused = |e: String| {
            TargetError::usage(format!("cannot create the pool {}: {e}", path.display()))
        };
        if path.symlink_metadata().is_ok() {
            return Err(refused("it exists".into()));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (file, naming) = match scratch::create_unnamed(&dir) {
            Ok(f) => (f, Naming::Unnamed),
            Err(e) if scratch::unnamed_unsupported(&e) => {
                scratch::remove_stale(&dir);
                let seq = POOL_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let at = dir.join(scratch::named(std::process::id(), seq));
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&at)
                    .map_err(|e| refused(e.to_string()))?;
                (f, Naming::Scratch(at))
            }
            Err(e) => return Err(refused(e.to_string())),
        };
        let len = bytes.next_multiple_of(2 << 20);
        if let Err(e) = mman::allocate_file(&file, len) {
            if let Naming::Scratch(at) = &naming {
                let _ = std::fs::remove_file(at);
            }
            return Err(TargetError::system(format!(
                "cannot allocate {len} bytes for the pool {}: {e}",
                path.display()
            )));
        }
        let mut pool = Self::map(path, &dir, file, len, opts, true)?;
        pool.naming = naming;
        Ok(pool)
    }

    /// Gives a created pool its name, once the caller has written and persisted its header:
    /// syncs the file, links it as `path` (never replacing a file that appeared meanwhile),
    /// then syncs the directory so the name is durable too. Nothing to do for a reopened
    /// pool.
    pub fn publish(&mut self) -> Result<(), TargetError> {
        let path = self.path.clone();
        let failed = |what: &str, e: std::io::Error| {
            let e = if e.kind() == std::io::ErrorKind::AlreadyExists {
                "it exists".to_string()
            } else {
                e.to_string()
            };
            TargetError::usage(format!(
                "cannot create the pool {}: {what}: {e}",
                path.display()
            ))
        };
        let file = self.backing.file();
        match &self.naming {
            Naming::Named => return Ok(()),
            Naming::Unnamed => {
                file.sync_all().map_err(|e| failed("fsync", e))?;
                scratch::link_unnamed(file, &path).map_err(|e| failed("link", e))?;
            }
            Naming::Scratch(at) => {
                file.sync_all().map_err(|e| failed("fsync", e))?;
                std::fs::hard_link(at, &path).map_err(|e| failed("link", e))?;
                let _ = std::fs::remove_file(at);
            }
        }
        self.naming = Naming::Named;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| failed("fsync of its directory", e))
    }

    /// Opens the existing pool file `path` as it is (its length is the file's).
    pub fn open(path: &Path, opts: &MapOptions) -> Result<Pool, TargetError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| {
                TargetError::usage(format!("cannot open the pool {}: {e}", path.display()))
            })?;
        let len = file
            .metadata()
            .map_err(|e| TargetError::system(format!("stat {}: {e}", path.display())))?
            .len();
        if len == 0 || !len.is_multiple_of(4096) {
            return Err(TargetError::usage(format!(
                "{} is not a pmscope pool: its size ({len} bytes) is not a whole number of pages",
                path.display()
            )));
        }
        Self::map(path, path, file, len, opts, false)
    }

    /// Maps `file`, the pool to be called `path`; `facts_of` is a path on its file system
    /// (the pool itself, or its directory while the pool has no name).
    fn map(
        path: &Path,
        facts_of: &Path,
        file: File,
        len: u64,
        opts: &MapOptions,
        created: bool,
    ) -> Result<Pool, TargetError> {
        let spec: TargetSpec = format!("file:{}", path.display())
            .parse()
            .map_err(|e| TargetError::usage(format!("{e}")))?;
        let facts = dax::fs_facts(facts_of).map_err(|e| {
            TargetError::system(format!("statfs {} failed: {e}", facts_of.display()))
        })?;
        let in_ram = facts.magic == dax::TMPFS_MAGIC || facts.magic == dax::HUGETLBFS_MAGIC;
        // A device backing: closed on drop, never removed.
        let mut backing = Backing::device(file, path.to_path_buf());
        let fd = backing.file().as_fd();
        let (raw, map_sync) = match mman::map_file(fd, len as usize, 2 << 20, FileMapMode::Sync) {
            Ok(raw) => (raw, true),
            Err(_) if opts.require_dax => {
                return Err(TargetError::usage(format!(
                    "{} is on {} without DAX (MAP_SYNC refused), and --require-dax was given",
                    path.display(),
                    facts.fstype
                )));
            }
            Err(_) => (
                mman::map_file(fd, len as usize, 2 << 20, FileMapMode::Shared).map_err(|e| {
                    TargetError::system(format!("mmap of {} failed: {e}", path.display()))
                })?,
                false,
            ),
        };
        let persistence = if map_sync {
            Persistence::Dax
        } else if in_ram {
            Persistence::Emulated
        } else {
            Persistence::PageCache
        };
        backing.set_mapped(
            raw,
            Expectation {
                page_bytes: None,
                why: "a pool maps what its file system gives",
                persistence,
            },
            2 << 20,
            Some(map_sync),
            persistence,
            map_sync,
        );
        backing.set_filesystem(facts.fstype.clone(), None);
        let (prefault_ns, faults) = prefault_reading(raw);
        let achieved = verify::probe(&backing, raw, &spec, prefault_ns, faults, opts);
        let warnings = verify::against_expectation(
            &spec,
            &achieved,
            &Expectation {
                page_bytes: None,
                why: "a pool maps what its file system gives",
                persistence,
            },
            None,
        );
        Ok(Pool {
            spec,
            path: path.to_path_buf(),
            created,
            naming: Naming::Named,
            backing,
            raw,
            achieved,
            warnings,
        })
    }

    /// The pool file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this process created the file (as opposed to reopening it).
    pub fn created(&self) -> bool {
        self.created
    }

    /// Bytes mapped (the file's length).
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Whether the pool is empty (never: pools are whole pages).
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// The pool as 64-bit words, the only view: every access is atomic, so threads share
    /// it without data races.
    pub fn atomics(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is page-aligned (so 8-byte aligned), `len` bytes long and
        // live as long as `self`; AtomicU64 has the layout of u64 and any bit pattern is
        // valid; no `&mut` view of it exists.
        unsafe { std::slice::from_raw_parts(self.raw.ptr.cast::<AtomicU64>(), self.raw.len / 8) }
    }

    /// What the kernel gave.
    pub fn achieved(&self) -> &Achieved {
        &self.achieved
    }

    /// Where that differs from what a pool expects.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The pool as a target record.
    pub fn record(&self) -> TargetRecord {
        TargetRecord {
            spec: self.spec.to_string(),
            achieved: self.achieved.clone(),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // A pool dropped before it was published (its creation failed) leaves nothing.
        if let Naming::Scratch(at) = &self.naming {
            let _ = std::fs::remove_file(at);
        }
    }
}

/// Reads one byte per page (a write would change a pool the caller may yet refuse),
/// timing the pass and counting this thread's minor faults.
fn prefault_reading(raw: RawMap) -> (u64, u64) {
    let faults_before = pmscope_sys::memory::thread_minor_faults();
    let t0 = pmscope_sys::tsc::monotonic_raw_ns();
    let mut off = 0;
    let mut sum = 0u8;
    while off < raw.len {
        if crate::mapping::stop_touching(off) {
            break;
        }
        // SAFETY: off < len, inside the live mapping; a volatile read so it is not elided.
        sum = sum.wrapping_add(unsafe { raw.ptr.add(off).read_volatile() });
        off += 4096;
    }
    std::hint::black_box(sum);
    let t1 = pmscope_sys::tsc::monotonic_raw_ns();
    let faults = pmscope_sys::memory::thread_minor_faults() - faults_before;
    (t1 - t0, faults)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn created_exclusively_reopened_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool");
        let opts = MapOptions::host();
        {
            let mut p = Pool::create(&path, 4096, &opts).unwrap();
            assert!(p.created());
            p.atomics()[1].store(42, Ordering::Relaxed);
            assert!(!path.exists(), "no name before the pool is published");
            p.publish().unwrap();
            p.publish().unwrap();
        }
        assert!(path.exists(), "a pool is never removed");
        let err = Pool::create(&path, 4096, &opts).err().unwrap();
        assert!(err.to_string().contains("cannot create the pool"), "{err}");
        let p = Pool::open(&path, &opts).unwrap();
        assert!(!p.created());
        assert_eq!(p.atomics()[1].load(Ordering::Relaxed), 42);
        assert_eq!(p.len(), 2 << 20);
    }

    #[test]
    fn an_unpublished_pool_leaves_nothing_and_a_name_taken_meanwhile_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool");
        let opts = MapOptions::host();
        drop(Pool::create(&path, 4096, &opts).unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut p = Pool::create(&path, 4096, &opts).unwrap();
        std::fs::write(&path, b"the user's").unwrap();
        let e = p.publish().err().unwrap();
        assert!(e.to_string().contains("it exists"), "{e}");
        drop(p);
        assert_eq!(std::fs::read(&path).unwrap(), b"the user's");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn odd_sized_files_are_refused_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, b"not a pool").unwrap();
        let err = Pool::open(&path, &MapOptions::host()).err().unwrap();
        assert!(err.to_string().contains("is not a pmscope pool"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"not a pool");
    }
}
