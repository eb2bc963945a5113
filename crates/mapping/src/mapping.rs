//! A mapped, pre-faulted and verified target.
//!
//! ```text
//!  TargetSpec ──Kind::prepare──▶ Backing (mapped, untouched)
//!                                   │ mbind(node) before the first touch
//!                                   │ pre-fault: one write per 4 KiB, timed, faults counted
//!                                   ▼
//!                                 Mapping { memory, Achieved, warnings }  ──drop──▶ munmap,
//!                                                                          remove the file
//! ```
//!
//! Invariants of a [`Mapping`] (checked with `debug_assert!` where cheap):
//! * `raw.ptr` is the start of a live mapping of exactly `raw.len` bytes, readable and
//!   writable, owned by this value alone, until drop;
//! * `raw.ptr` is page-aligned (so aligned for every [`Pod`] type) and `raw.len` is a
//!   multiple of 4 KiB and of the alignment recorded in `achieved`;
//! * every page was touched once by the pre-fault pass, so no later access faults;
//! * safe code reaches the memory only through `&mut self` (`bytes_mut`, `slice_mut`:
//!   exclusive, so no other view exists while they live) or `&self` (`atomics`: shared
//!   mutation through atomics only). No `&[u8]` is ever handed out from `&self`, because
//!   another thread may store through `atomics` at the same time;
//! * `as_mut_ptr` hands out a raw pointer; dereferencing it is the caller's `unsafe`, and
//!   the caller must not let it alias a live `bytes_mut`/`slice_mut` borrow.
#![allow(unsafe_code)]

use crate::guard::MemoryGuard;
use crate::verify;
use crate::{TargetError, TargetSpec};
use pmscope_core::achieved::{Achieved, FaultEvidence, Persistence};
use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_sys::dax::ExtentLayout;
use pmscope_sys::mman::RawMap;
use pmscope_sys::scratch;
use pmscope_sys::sysroot::SysRoot;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

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

/// A mapped, pre-faulted, verified target. Dropping it unmaps the memory and removes a
/// created file unless `--keep` was given.
pub struct Mapping {
    spec: TargetSpec,
    backing: Backing,
    raw: RawMap,
    achieved: Achieved,
    warnings: Vec<Warning>,
}

// SAFETY: the Mapping owns its memory (no thread-local state is tied to it), so moving it
// to another thread moves sole ownership; munmap from any thread is fine.
unsafe impl Send for Mapping {}
// SAFETY: through `&Mapping` safe code gets only `&[AtomicU64]` (data-race free by
// construction) and a raw pointer whose dereference is the caller's own `unsafe`; plain
// references to the bytes require `&mut Mapping`.
unsafe impl Sync for Mapping {}

mod sealed {
    pub trait Sealed {}
}

/// Plain old data: every bit pattern is a valid value, no padding, no drop. Sealed: only
/// the primitive integers and floats below implement it, which is what makes
/// [`Mapping::slice_mut`] sound on memory of any content.
pub trait Pod: sealed::Sealed + Copy + 'static {}
macro_rules! pod {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl Pod for $t {})* };
}
pod!(u8, u16, u32, u64, i32, i64, f32, f64);

/// How another process can map the same memory: the file or device, the range, and how
/// it was mapped. Only file-backed kinds have one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    /// The file or device to open.
    pub path: PathBuf,
    /// Offset of the mapping in it, in bytes.
    pub offset: u64,
    /// Length of the mapping, in bytes.
    pub len: u64,
    /// Whether the mapping is MAP_SYNC (`None`: not asked for, e.g. a plain shared map).
    pub map_sync: Option<bool>,
    /// Whether loads and stores reach the medium directly (devdax, or a DAX file).
    pub dax: bool,
}

/// Maps `spec` with at least `bytes` bytes (rounded up to its page size or alignment),
/// binds it to its node, pre-faults it and verifies what the kernel gave.
pub fn map(spec: &TargetSpec, bytes: u64, opts: &MapOptions) -> Result<Mapping, TargetError> {
    if bytes == 0 {
        return Err(TargetError::usage(
            "a target of 0 bytes cannot be mapped; give a size",
        ));
    }
    let backing = spec.kind().prepare(spec, bytes, opts)?;
    let raw = backing.raw.expect("prepare maps the backing");
    debug_assert!(raw.len % 4096 == 0 && (raw.ptr as usize).is_multiple_of(4096));
    if let Some(node) = spec.node {
        // SAFETY: the range is the backing's own mapping, untouched so far.
        unsafe { pmscope_sys::numa::bind_to_node(raw.ptr, raw.len, node) }.map_err(|e| {
            TargetError::system(format!(
                "cannot bind {spec} to node {node} (mbind: {e}); `pmscope info` lists the nodes with memory"
            ))
        })?;
    }
    let (prefault_ns, faults) = if opts.first_touch_cpus.len() > 1 {
        prefault_parallel(raw, &opts.first_touch_cpus)
    } else {
        prefault(raw)
    };
    let achieved = verify::probe(&backing, raw, spec, prefault_ns, faults, opts);
    let mut warnings = verify::against_expectation(
        spec,
        &achieved,
        backing.expect.as_ref().expect("kind sets an expectation"),
        backing.extents,
    );
    warnings.extend(backing.notes.iter().cloned());
    warnings.extend(verify::rounded_up(
        spec,
        bytes,
        raw.len as u64,
        backing.expect.as_ref().expect("kind sets an expectation"),
    ));
    Ok(Mapping {
        spec: spec.clone(),
        backing,
        raw,
        achieved,
        warnings,
    })
}

/// Writes one byte in every 4 KiB of the range, timing the pass and counting this thread's
/// minor faults: faults × page size = mapped bytes gives the page size on any kind.
/// Pre-faults part `i` of `n` equal, page-aligned parts from a thread pinned to `cpus[i]`;
/// the fault counts of the threads are summed, the time is the wall time of the whole.
fn prefault_parallel(raw: RawMap, cpus: &[usize]) -> (u64, u64) {
    let n = cpus.len();
    let part = (raw.len / n) & !4095;
    let t0 = pmscope_sys::tsc::monotonic_raw_ns();
    let faults: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let start = i * part;
                let len = if i + 1 == n { raw.len - start } else { part };
                // SAFETY: start + len <= raw.len: each part lies inside the mapping, and the
                // parts do not overlap.
                let ptr = unsafe { raw.ptr.add(start) };
                let piece = RawMap { ptr, len };
                s.spawn(move || {
                    // A CPU we may not run on only loses the placement, not the pre-fault.
                    let _ = pmscope_sys::affinity::pin_current_thread(cpu);
                    prefault(piece).1
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    (pmscope_sys::tsc::monotonic_raw_ns() - t0, faults)
}

fn prefault(raw: RawMap) -> (u64, u64) {
    let faults_before = pmscope_sys::memory::thread_minor_faults();
    let t0 = pmscope_sys::tsc::monotonic_raw_ns();
    let mut off = 0;
    while off < raw.len {
        // SAFETY: off < len, inside the live mapping owned by the caller; a volatile write
        // so the touch is not elided.
        unsafe { raw.ptr.add(off).write_volatile(0) };
        off += 4096;
    }
    let t1 = pmscope_sys::tsc::monotonic_raw_ns();
    let faults = pmscope_sys::memory::thread_minor_faults() - faults_before;
    (t1 - t0, faults)
}

impl Mapping {
    /// The spec it was mapped from.
    pub fn spec(&self) -> &TargetSpec {
        &self.spec
    }

    /// What the kernel gave.
    pub fn achieved(&self) -> &Achieved {
        &self.achieved
    }

    /// Differences between the request and what was achieved.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The spec and verified configuration, as records carry them.
    pub fn record(&self) -> TargetRecord {
        TargetRecord {
            spec: self.spec.to_string(),
            achieved: self.achieved.clone(),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Never true: a mapping has at least one page.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// The first byte, for kernels that partition the range themselves (inline-asm loops).
    /// The pointer is valid for `len()` bytes while `self` lives.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.raw.ptr
    }

    /// The whole range as bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is live, `len` bytes long, readable and writable, and `&mut
        // self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr, self.raw.len) }
    }

    /// The whole range as a slice of `T`. Errors if the length is not a multiple of
    /// `size_of::<T>()` or the start is not aligned for `T` (never, for a page-aligned
    /// mapping, but checked rather than assumed).
    pub fn slice_mut<T: Pod>(&mut self) -> Result<&mut [T], TargetError> {
        let size = std::mem::size_of::<T>();
        if !self.raw.len.is_multiple_of(size)
            || !(self.raw.ptr as usize).is_multiple_of(std::mem::align_of::<T>())
        {
            return Err(TargetError::system(format!(
                "a mapping of {} bytes at {:p} cannot be viewed as {}",
                self.raw.len,
                self.raw.ptr,
                std::any::type_name::<T>()
            )));
        }
        // SAFETY: the mapping is live, `len` bytes long, readable and writable; the start
        // is aligned for T and len is a whole number of T (checked above); T is Pod, so any
        // bytes are a valid T; `&mut self` makes this the only view.
        Ok(
            unsafe {
                std::slice::from_raw_parts_mut(self.raw.ptr.cast::<T>(), self.raw.len / size)
            },
        )
    }

    /// How another process can map the same memory: `None` for anonymous kinds (dram).
    pub fn handoff(&self) -> Option<Handoff> {
        let path = self.path()?;
        Some(Handoff {
            path,
            offset: 0,
            len: self.raw.len as u64,
            map_sync: self.backing.map_sync,
            dax: self.backing.dax_file || self.backing.device.is_some(),
        })
    }

    /// The range as 64-bit atomics, for structures shared between threads.
    pub fn atomics(&self) -> &[AtomicU64] {
        debug_assert!((self.raw.ptr as usize).is_multiple_of(8));
        // SAFETY: the mapping is page-aligned, live, `len` bytes long; AtomicU64 has the size
        // and alignment of u64 and allows shared mutation.
        unsafe { std::slice::from_raw_parts(self.raw.ptr as *const AtomicU64, self.raw.len / 8) }
    }

    /// The file or device behind the mapping, if any.
    ///
    /// An unnamed scratch file has no name: its path is this process's `/proc/<pid>/fd/<n>`
    /// link, which opens the same file (for this process and its children).
    pub fn path(&self) -> Option<PathBuf> {
        match &self.backing.scratch {
            Some(Scratch::Named(p)) => Some(p.clone()),
            Some(Scratch::Unnamed { .. }) => self.backing.file.as_ref().map(scratch::proc_path),
            None => self.backing.device.clone(),
        }
    }
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping")
            .field("spec", &self.spec.to_string())
            .field("len", &self.raw.len)
            .field("achieved", &self.achieved)
            .finish()
    }
}

pub(crate) fn fault_evidence(len: u64, faults: u64) -> FaultEvidence {
    FaultEvidence::from_faults(len, faults)
}

impl Backing {
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
