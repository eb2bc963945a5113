//! Watching what a [`Persister`](crate::Persister) executes: every line write-back and every
//! drain it issues on memory a [`Watcher`] watches is reported to that watcher, from the
//! code that executes the instruction (the per-line loop of a flush, the arms of a drain).
//!
//! Why: the crash-image checker must consume the flushes and fences production issues —
//! the table's, its memory layer's (`PoolWords`), the persister's own loops — not a model
//! of them written again. It watches the memory it hands the production code, and the real
//! instructions are still executed.
//!
//! Watchers are found by address, so tests running in parallel in one process only see
//! what is issued on their own memory. A fence has no address: it is reported to the
//! watchers of the range the caller drains (a persistent table drains its whole pool).
//! Cost when nothing is watched: one relaxed load per flush or drain call.

use crate::insn::FlushKind;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, Weak};

/// How a drain made earlier write-backs durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// `sfence` or `mfence`: every write-back this thread issued before it is complete.
    Fence,
    /// `msync`: every dirty page of the range is written back, whoever stored to it.
    Msync,
}

/// Receives what persisters issue on a range of addresses.
pub trait Watcher: Send + Sync {
    /// The addresses watched.
    fn range(&self) -> Range<usize>;
    /// The cache line holding `addr` is being written back with `kind`.
    fn flushed(&self, addr: usize, kind: FlushKind);
    /// A drain of `range` (which overlaps the watched range) completed.
    fn drained(&self, range: Range<usize>, how: Drained);
}

/// Watchers registered, so that the unwatched case costs one load.
static WATCHED: AtomicUsize = AtomicUsize::new(0);
static WATCHERS: RwLock<Vec<Weak<dyn Watcher>>> = RwLock::new(Vec::new());

/// A registration: the watcher is told about its range until this is dropped.
pub struct Watch {
    watcher: Weak<dyn Watcher>,
}

/// Starts reporting what persisters issue on `watcher`'s range to it.
pub fn watch(watcher: &Arc<dyn Watcher>) -> Watch {
    let weak = Arc::downgrade(watcher);
    WATCHERS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .push(weak.clone());
    WATCHED.fetch_add(1, Ordering::SeqCst);
    Watch { watcher: weak }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut all = WATCHERS.write().unwrap_or_else(|p| p.into_inner());
        all.retain(|w| !w.ptr_eq(&self.watcher));
        WATCHED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether any watcher is registered.
#[inline(always)]
pub(crate) fn watching() -> bool {
    WATCHED.load(Ordering::Relaxed) != 0
}

fn each_overlapping(range: Range<usize>, f: impl Fn(&dyn Watcher)) {
    // Collected first: a watcher may block (a schedule's turn), and must not do so while
    // holding the registry's lock, which other threads' registrations wait for.
    let found: Vec<Arc<dyn Watcher>> = WATCHERS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|w| {
            let r = w.range();
            range.start < r.end && r.start < range.end
        })
        .collect();
    for w in found {
        f(&*w);
    }
}

/// Reports a write-back of the line holding `addr`.
#[cold]
pub(crate) fn flushed(addr: usize, kind: FlushKind) {
    each_overlapping(addr..addr + 1, |w| w.flushed(addr, kind));
}

/// Reports a completed drain of `range`.
#[cold]
pub(crate) fn drained(range: &[u8], how: Drained) {
    let r = range.as_ptr() as usize..range.as_ptr() as usize + range.len();
    each_overlapping(r.clone(), |w| w.drained(r.clone(), how));
}
