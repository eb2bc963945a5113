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

use crate::backing::{Backing, FirstTouch, MapOptions};
use crate::verify;
use crate::{TargetError, TargetSpec};
use pmscope_core::achieved::Achieved;
use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_sys::mman::RawMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;

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
/// binds it to its node, pre-faults it and verifies what the kernel gave. `bytes` is the
/// size the user named: a rounding up to whole huge pages is noted with how to avoid it.
pub fn map(spec: &TargetSpec, bytes: u64, opts: &MapOptions) -> Result<Mapping, TargetError> {
    map_sized(spec, bytes, opts, true)
}

/// [`map`] of a size pmscope chose itself (a k-mer table sized from its input): rounding
/// it up is no finding, and a note telling the user to "give a multiple" of the page
/// would name a size they never gave, so none is made.
pub fn map_chosen(
    spec: &TargetSpec,
    bytes: u64,
    opts: &MapOptions,
) -> Result<Mapping, TargetError> {
    map_sized(spec, bytes, opts, false)
}

fn map_sized(
    spec: &TargetSpec,
    bytes: u64,
    opts: &MapOptions,
    size_named: bool,
) -> Result<Mapping, TargetError> {
    if bytes == 0 {
        return Err(TargetError::usage(
            "a target of 0 bytes cannot be mapped; give a size",
        ));
    }
    if let Some(node) = spec.node {
        node_with_memory(spec, node)?;
    }
    let backing = spec.prepare(bytes, opts)?;
    let raw = backing.raw();
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
        prefault_parallel(raw, &opts.first_touch_cpus, opts.first_touch_order)
    } else {
        prefault(raw, opts.first_touch_order)
    };
    let achieved = verify::probe(&backing, raw, spec, prefault_ns, faults, opts);
    let mut warnings =
        verify::against_expectation(spec, &achieved, backing.expectation(), backing.extents());
    warnings.extend(backing.notes().iter().cloned());
    if size_named {
        warnings.extend(verify::rounded_up(
            spec,
            bytes,
            raw.len as u64,
            backing.expectation(),
        ));
    }
    Ok(Mapping {
        spec: spec.clone(),
        backing,
        raw,
        achieved,
        warnings,
    })
}

/// Refuses `,node=N` for a node this machine lacks or that has no memory (a usage error,
/// before anything is created), naming the nodes that have memory. Without NUMA in sysfs
/// the check is left to mbind.
fn node_with_memory(spec: &TargetSpec, node: u32) -> Result<(), TargetError> {
    let nodes = pmscope_sys::numa::nodes(&pmscope_sys::sysroot::SysRoot::host());
    if nodes.is_empty() {
        return Ok(());
    }
    let with_memory: Vec<String> = nodes
        .iter()
        .filter(|n| n.mem_total_bytes > 0)
        .map(|n| n.id.to_string())
        .collect();
    let problem = match nodes.iter().find(|n| n.id == node) {
        Some(n) if n.mem_total_bytes > 0 => return Ok(()),
        Some(_) => format!("node {node} has no memory (its CPUs only)"),
        None => format!("this machine has no node {node}"),
    };
    Err(TargetError::usage(format!(
        "{spec}: {problem}; nodes with memory here: {} (`pmscope info` lists them)",
        with_memory.join(", ")
    )))
}

/// Pre-faults part `i` of `n` equal, page-aligned parts from a thread pinned to `cpus[i]`;
/// the fault counts of the threads are summed, the time is the wall time of the whole.
fn prefault_parallel(raw: RawMap, cpus: &[usize], order: FirstTouch) -> (u64, u64) {
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
                    let order = match order {
                        FirstTouch::Shuffled(seed) => FirstTouch::Shuffled(seed ^ i as u64),
                        o => o,
                    };
                    prefault(piece, order).1
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    (pmscope_sys::tsc::monotonic_raw_ns() - t0, faults)
}

/// Whether a pre-fault pass at byte `off` should stop short: a signal arrived (checked
/// every 16 MiB). Touching a large mapping takes seconds (0.7 s per GiB of a file here)
/// and a run stops within half a second of Ctrl-C; the caller checks for the interrupt
/// before it measures, so a short pass is never measured or reported.
#[inline]
pub(crate) fn stop_touching(off: usize) -> bool {
    off.is_multiple_of(16 << 20) && off > 0 && pmscope_sys::signal::received().is_some()
}

/// Writes one byte in every 4 KiB of the range in `order`, timing the pass and counting
/// this thread's minor faults: faults × page size = mapped bytes gives the page size on any
/// kind.
fn prefault(raw: RawMap, order: FirstTouch) -> (u64, u64) {
    let faults_before = pmscope_sys::memory::thread_minor_faults();
    let t0 = pmscope_sys::tsc::monotonic_raw_ns();
    let touch = |off: usize| {
        // SAFETY: off < len, inside the live mapping owned by the caller; a volatile write
        // so the touch is not elided.
        unsafe { raw.ptr.add(off).write_volatile(0) };
    };
    match order {
        FirstTouch::Ascending => {
            let mut off = 0;
            while off < raw.len {
                if stop_touching(off) {
                    break;
                }
                touch(off);
                off += 4096;
            }
        }
        FirstTouch::Shuffled(seed) => {
            for (i, page) in shuffled_pages(raw.len / 4096, seed).into_iter().enumerate() {
                if stop_touching(i * 4096) {
                    break;
                }
                touch(page as usize * 4096);
            }
        }
    }
    let t1 = pmscope_sys::tsc::monotonic_raw_ns();
    let faults = pmscope_sys::memory::thread_minor_faults() - faults_before;
    (t1 - t0, faults)
}

/// 0..n in a random order (Fisher-Yates driven by SplitMix64 from `seed`; 4 bytes a page,
/// 1 MiB for 1 GiB of 4 KiB pages).
fn shuffled_pages(n: usize, seed: u64) -> Vec<u32> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut pages: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        pages.swap(i, j);
    }
    pages
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
            map_sync: self.backing.map_sync(),
            dax: self.backing.direct_access(),
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
        self.backing.path()
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
