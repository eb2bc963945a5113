//! The seam persistent structures write through: a memory of 64-bit words with 8-byte
//! atomic stores, per-line flushes and fences ([`PersistentWords`]). Production runs it on
//! a mapping through a [`Persister`]; the crash-image checker runs the same
//! structure code on a model of cache lines instead, so what it checks is the real code
//! path. [`Persister::flush_word`] and [`Persister::fence_words`] are the instructions a
//! production implementation runs on a mapping's words.
#![allow(unsafe_code)]

use crate::Persister;
use std::sync::atomic::{AtomicU64, Ordering};

/// Word memory with explicit persistence: what a log-free persistent structure needs.
///
/// Durability model: a store is durable once its line was flushed ([`flush`](Self::flush))
/// and a [`fence`](Self::fence) followed; before that it may or may not have reached the
/// persistence domain (a line can be evicted at any moment).
pub trait PersistentWords: Sync {
    /// Number of words.
    fn len(&self) -> usize;
    /// Whether there are no words.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Loads word `i` (acquire).
    fn load(&self, i: usize) -> u64;
    /// Stores word `i` with one 8-byte store (release).
    fn store(&self, i: usize, v: u64);
    /// Compare-and-swap of word `i`: `Ok(old)` if it held `old`, else `Err(current)`.
    fn compare_exchange(&self, i: usize, old: u64, new: u64) -> Result<u64, u64>;
    /// Writes back the cache line holding word `i` (no ordering by itself).
    fn flush(&self, i: usize);
    /// Writes back the lines holding each of `words` (no ordering by itself): one call for a
    /// group, so an implementation can count them at once.
    fn flush_all(&self, words: &[usize]) {
        for &w in words {
            self.flush(w);
        }
    }
    /// Orders every earlier flush before every later store: flushed lines are durable.
    fn fence(&self);
    /// Starts loading word `i` into the cache (a hint; no effect on durability).
    fn prefetch(&self, _i: usize) {}
}

/// The words a pool's memory layer loads from and stores into: a mapping in production,
/// a [`crate::record::RecordedWords`] in the crash-image checker, which logs every store in
/// the order it took effect. The layer's flushes and fences go through a [`Persister`]
/// either way.
pub trait WordMemory: Send + Sync {
    /// The words, for loads, write-backs and drains.
    fn words(&self) -> &[AtomicU64];
    /// Stores word `i` with one 8-byte store (release).
    #[inline(always)]
    fn store(&self, i: usize, v: u64) {
        self.words()[i].store(v, Ordering::Release)
    }
    /// Compare-and-swap of word `i`: `Ok(old)` if it held `old`, else `Err(current)`.
    #[inline(always)]
    fn compare_exchange(&self, i: usize, old: u64, new: u64) -> Result<u64, u64> {
        self.words()[i].compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)
    }
}

/// Flushes and fences issued, for "per insert" figures.
#[derive(Debug, Default)]
pub struct PersistCounts {
    flushes: AtomicU64,
    fences: AtomicU64,
}

impl PersistCounts {
    /// Counts one flush.
    #[inline]
    pub fn flush(&self) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }
    /// Counts `n` flushes.
    #[inline]
    pub fn flushes(&self, n: u64) {
        self.flushes.fetch_add(n, Ordering::Relaxed);
    }
    /// Counts one fence.
    #[inline]
    pub fn fence(&self) {
        self.fences.fetch_add(1, Ordering::Relaxed);
    }
    /// (flushes, fences) so far.
    pub fn get(&self) -> (u64, u64) {
        (
            self.flushes.load(Ordering::Relaxed),
            self.fences.load(Ordering::Relaxed),
        )
    }
}

impl Persister {
    /// Writes back the cache line holding `word` with this strategy's flush (no drain).
    #[inline]
    pub fn flush_word(&self, word: &AtomicU64) {
        // SAFETY: the pointer comes from a live `&AtomicU64`, so its 8 bytes are mapped and
        // aligned; the byte view is handed only to the flush instructions, which read
        // nothing Rust can observe, so concurrent atomic stores do not race with it.
        let bytes = unsafe { std::slice::from_raw_parts(word.as_ptr().cast::<u8>(), 8) };
        self.flush(bytes);
    }

    /// This strategy's drain for flushes of words in `view` (msync has no per-line form,
    /// so it syncs the pages of the whole view).
    #[inline]
    pub fn fence_words(&self, view: &[AtomicU64]) {
        // SAFETY: as in `flush_word`: a live view, handed only to the fence or to msync,
        // which reads nothing Rust can observe.
        let bytes = unsafe {
            std::slice::from_raw_parts(view.as_ptr().cast::<u8>(), std::mem::size_of_val(view))
        };
        // An msync failure leaves the stores in the page cache: nothing a table can do
        // about it mid-insert, and the next fence tries again.
        let _ = self.drain(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PersistStrategy;
    use pmscope_sys::cpu::CpuFeatures;

    #[test]
    fn flushes_words_and_counts() {
        let mem: Vec<AtomicU64> = (0..16).map(|_| AtomicU64::new(0)).collect();
        let p = Persister::new(PersistStrategy::Clflush, &CpuFeatures::detect()).unwrap();
        mem[3].store(7, Ordering::Relaxed);
        p.flush_word(&mem[3]);
        p.fence_words(&mem);
        let c = PersistCounts::default();
        c.flush();
        c.fence();
        c.fence();
        assert_eq!(c.get(), (1, 2));
        assert_eq!(mem[3].load(Ordering::Relaxed), 7);
    }
}
