//! What a kind hands to [`crate::map`]: the options every target of a run shares
//! ([`MapOptions`], with the [`DestroyData`] token), what the kind expects to achieve
//! ([`Expectation`]) and its mapping before the pre-fault pass ([`Backing`]: the memory, the
//! file or device behind it, what becomes of a scratch file at the end). A leaf: the kinds,
//! [`crate::verify`], [`crate::pool`] and the mapping itself build on it.
#![allow(unsafe_code)]

use crate::TargetError;
use crate::guard::MemoryGuard;
use pmscope_core::achieved::{FaultEvidence, Persistence};
use pmscope_core::warning::Warning;
use pmscope_sys::dax::ExtentLayout;
use pmscope_sys::mman::RawMap;
use pmscope_sys::scratch;
use pmscope_sys::sysroot::SysRoot;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Proof that the user accepted the destruction of a devdax device's contents. Only the
/// CLI's `--destroy-data` flag constructs one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestroyData(());

impl DestroyData {
    /// The user passed `--destroy-data`.
    pub fn accepted_by_flag() -> DestroyData {
        DestroyData(())
    }
}

/// Options shared by every target of a run.
#[derive(Debug, Clone)]
pub struct MapOptions {
    /// Where /sys and /proc are read.
    pub root: SysRoot,
    /// Keep created files afterwards (`--keep`).
    pub keep: bool,
    /// Refuse non-DAX file mappings (`--require-dax`).
    pub require_dax: bool,
    /// Permission to write devdax devices (`--destroy-data`).
    pub destroy_data: Option<DestroyData>,
    /// The memory guard (`--max-mem`).
    pub guard: MemoryGuard,
    /// CPUs that pre-fault the mapping, each its own equal contiguous part, so every part
    /// is first touched by the CPU whose worker will use it (likwid's and MLC's placement).
    /// Empty: the calling thread pre-faults everything.
    pub first_touch_cpus: Vec<usize>,
    /// The order pages are first touched in.
    pub first_touch_order: FirstTouch,
}

/// The order the pre-fault pass touches a mapping's pages in, which decides which physical
/// page backs which offset: the kernel hands out free pages in its free lists' order, so
/// pages touched in address order from a freshly booted machine's ordered lists give every
/// mapping the same colours at the same offsets (88 % the same, mod 32, on this project's
/// VM), and a repeated measurement samples nothing of the placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FirstTouch {
    /// Ascending addresses.
    #[default]
    Ascending,
    /// A random permutation of the pages (Fisher-Yates from this seed): each offset meets
    /// a page as random as a long-running machine's free lists give.
    Shuffled(u64),
}

impl MapOptions {
    /// Options for the running system with the default guard.
    pub fn host() -> MapOptions {
        let root = SysRoot::host();
        MapOptions {
            guard: MemoryGuard::new(&root, None),
            root,
            keep: false,
            require_dax: false,
            destroy_data: None,
            first_touch_cpus: Vec::new(),
            first_touch_order: FirstTouch::Ascending,
        }
    }
}

/// What a kind expects to achieve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expectation {
    /// The page size it should get.
    pub page_bytes: Option<u64>,
    /// Why (for warnings).
    pub why: &'static str,
    /// How stores become durable.
    pub persistence: Persistence,
}

/// A kind's mapping before the pre-fault pass: the memory, the file behind it, and what
/// the kind knows about it.
pub(crate) struct Backing {
    raw: Option<RawMap>,
    file: Option<File>,
    /// The scratch file we created, and what becomes of it at the end.
    scratch: Option<Scratch>,
    device: Option<PathBuf>,
    keep: bool,
    expect: Option<Expectation>,
    alignment: u64,
    map_sync: Option<bool>,
    persistence: Persistence,
    dax_file: bool,
    filesystem: Option<String>,
    extents: Option<ExtentLayout>,
    notes: Vec<Warning>,
    pmem_region: Option<String>,
}

/// A scratch file of a file or shm target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scratch {
    /// Unnamed (`O_TMPFILE`) in `dir`: it cannot outlive the process, whatever ends it.
    /// `--keep` names it at the end: `name`, or a fresh `pmscope-<pid>-<n>.bin` in `dir`.
    Unnamed { dir: PathBuf, name: Option<PathBuf> },
    /// Named, where the file system has no unnamed files: removed at the end unless kept;
    /// after a SIGKILL the next run's stale-file sweep removes it.
    Named(PathBuf),
}

impl Backing {
    fn empty() -> Backing {
        Backing {
            raw: None,
            file: None,
            scratch: None,
            device: None,
            keep: false,
            expect: None,
            alignment: 4096,
            map_sync: None,
            persistence: Persistence::Volatile,
            dax_file: false,
            filesystem: None,
            extents: None,
            notes: Vec::new(),
            pmem_region: None,
        }
    }

    pub(crate) fn anonymous(raw: RawMap, expect: Expectation, alignment: u64) -> Backing {
        let mut b = Backing::empty();
        b.raw = Some(raw);
        b.expect = Some(expect);
        b.alignment = alignment;
        b
    }

    /// A scratch file we just created; at the end (even if mapping fails) a named one is
    /// removed and an unnamed one vanishes, unless `keep`.
    pub(crate) fn scratch(file: File, scratch: Scratch, keep: bool) -> Backing {
        let mut b = Backing::empty();
        b.file = Some(file);
        b.scratch = Some(scratch);
        b.keep = keep;
        b
    }

    /// The libnvdimm region behind a DAX backing (`region0`), for the verification.
    pub(crate) fn set_pmem_region(&mut self, region: Option<String>) {
        self.pmem_region = region;
    }

    /// A note for the result (stale files removed, ...), merged into the warnings.
    pub(crate) fn note(&mut self, w: Warning) {
        self.notes.push(w);
    }

    /// A device we opened; never removed.
    pub(crate) fn device(file: File, path: PathBuf) -> Backing {
        let mut b = Backing::empty();
        b.file = Some(file);
        b.device = Some(path);
        b
    }

    pub(crate) fn file(&self) -> &File {
        self.file.as_ref().expect("backing has a file")
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn set_mapped(
        &mut self,
        raw: RawMap,
        expect: Expectation,
        alignment: u64,
        map_sync: Option<bool>,
        persistence: Persistence,
        dax_file: bool,
    ) {
        self.raw = Some(raw);
        self.expect = Some(expect);
        self.alignment = alignment;
        self.map_sync = map_sync;
        self.persistence = persistence;
        self.dax_file = dax_file;
    }

    pub(crate) fn set_filesystem(&mut self, fs: String, extents: Option<ExtentLayout>) {
        self.filesystem = Some(fs);
        self.extents = extents;
    }

    /// MADV_HUGEPAGE or MADV_NOHUGEPAGE on the whole mapping.
    pub(crate) fn advise_huge(&self, huge: bool) -> Result<(), TargetError> {
        let raw = self.raw.expect("mapped");
        pmscope_sys::mman::advise_huge_pages(raw, huge)
            .map_err(|e| TargetError::system(format!("madvise failed: {e}")))
    }
}

impl Drop for Backing {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            // SAFETY: the mapping was created by this backing and nothing refers to it any
            // more (a Mapping borrows nothing from it past its own drop). Errors are ignored:
            // munmap of a range we mapped cannot fail in a way we could act on.
            let _ = unsafe { pmscope_sys::mman::munmap(raw) };
        }
        match (self.scratch.take(), self.keep) {
            (Some(Scratch::Named(path)), false) => {
                let _ = std::fs::remove_file(path);
            }
            (Some(Scratch::Named(path)), true) => {
                // A scratch name would be swept as stale by the next run: kept files leave it.
                let scratch_name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(scratch::pid_of)
                    .is_some();
                if scratch_name {
                    let kept = keep_named(&path);
                    match kept {
                        Ok(p) => eprintln!("pmscope: kept {}", p.display()),
                        Err(e) => eprintln!(
                            "pmscope: kept {} under its scratch name ({e}): rename it before the next run",
                            path.display()
                        ),
                    }
                }
            }
            (Some(Scratch::Unnamed { dir, name }), true) => {
                // Drop cannot fail, so the outcome of --keep is said here, in one sentence.
                let file = self.file.as_ref().expect("a scratch backing has a file");
                match keep_unnamed(file, &dir, name.as_deref()) {
                    Ok(path) => eprintln!("pmscope: kept {}", path.display()),
                    Err(e) => eprintln!("pmscope: could not keep the file ({e})"),
                }
            }
            _ => {}
        }
    }
}

/// Gives a named scratch file a kept name beside it (a hard link, so nothing is replaced,
/// then the scratch name goes).
fn keep_named(path: &Path) -> std::io::Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    for seq in 0..1000 {
        let to = dir.join(scratch::kept(std::process::id(), seq));
        match std::fs::hard_link(path, &to) {
            Ok(()) => {
                std::fs::remove_file(path)?;
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "no free name in {}",
        dir.display()
    )))
}

/// Names an unnamed scratch file: `name` if given, else the first free
/// `pmscope-<pid>-<n>-kept.bin` in `dir`. Never replaces an existing file.
fn keep_unnamed(file: &File, dir: &Path, name: Option<&Path>) -> std::io::Result<PathBuf> {
    if let Some(name) = name {
        scratch::link_unnamed(file, name)?;
        return Ok(name.to_path_buf());
    }
    for seq in 0..1000 {
        let path = dir.join(scratch::kept(std::process::id(), seq));
        match scratch::link_unnamed(file, &path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "no free name in {}",
        dir.display()
    )))
}

pub(crate) fn fault_evidence(len: u64, faults: u64) -> FaultEvidence {
    FaultEvidence::from_faults(len, faults)
}

impl Backing {
    /// The mapping `prepare` made.
    pub(crate) fn raw(&self) -> RawMap {
        self.raw.expect("prepare maps the backing")
    }

    /// What the kind expects the mapping to achieve.
    pub(crate) fn expectation(&self) -> &Expectation {
        self.expect.as_ref().expect("kind sets an expectation")
    }

    /// The file's extent layout on its device (DAX files).
    pub(crate) fn extents(&self) -> Option<ExtentLayout> {
        self.extents
    }

    /// The notes for the result (stale files removed, ...).
    pub(crate) fn notes(&self) -> &[Warning] {
        &self.notes
    }

    /// Whether loads and stores reach the medium directly (devdax, or a DAX file).
    pub(crate) fn direct_access(&self) -> bool {
        self.dax_file || self.device.is_some()
    }

    /// The file or device behind the mapping, if any: an unnamed scratch file is this
    /// process's `/proc/<pid>/fd/<n>` link, which opens the same file.
    pub(crate) fn path(&self) -> Option<PathBuf> {
        match &self.scratch {
            Some(Scratch::Named(p)) => Some(p.clone()),
            Some(Scratch::Unnamed { .. }) => self.file.as_ref().map(scratch::proc_path),
            None => self.device.clone(),
        }
    }

    pub(crate) fn alignment(&self) -> u64 {
        self.alignment
    }
    pub(crate) fn map_sync(&self) -> Option<bool> {
        self.map_sync
    }
    pub(crate) fn persistence(&self) -> Persistence {
        self.persistence
    }
    pub(crate) fn dax_file(&self) -> bool {
        self.dax_file
    }
    pub(crate) fn pmem_region(&self) -> Option<&str> {
        self.pmem_region.as_deref()
    }
    pub(crate) fn filesystem(&self) -> Option<String> {
        self.filesystem.clone()
    }
    /// The path the records show: an unnamed file is its directory (or the name `--keep`
    /// will give it) marked `(unnamed)`.
    pub(crate) fn path_string(&self) -> Option<String> {
        match &self.scratch {
            Some(Scratch::Named(p)) => Some(p.display().to_string()),
            Some(Scratch::Unnamed { dir, name }) => Some(format!(
                "{} (unnamed)",
                name.as_deref().unwrap_or(dir).display()
            )),
            None => self.device.as_ref().map(|p| p.display().to_string()),
        }
    }
}
