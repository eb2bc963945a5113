//! The memory layer of a static-pm table: [`PoolWords`], the [`PersistentWords`] the table
//! writes through, over the pool's words ([`Backing`] in production: a `--pool` file or a
//! fresh mapping of the target), flushing and fencing with the user's [`Persister`] and
//! counting what it issues. It is generic over the memory ([`PoolMemory`]) so that the
//! crash-image checker runs this very code over a recording memory.

use pmscope_core::record::TargetRecord;
use pmscope_core::warning::Warning;
use pmscope_mapping::Mapping;
use pmscope_mapping::pool::Pool;
use pmscope_persist::{PersistCounts, PersistentWords, Persister, WordMemory};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where production pools live: a reopenable `--pool` file or a fresh target mapping.
pub enum Backing {
    /// A `--pool` file.
    Pool(Pool),
    /// A fresh mapping of the target.
    Mapping(Mapping),
}

impl WordMemory for Backing {
    #[inline(always)]
    fn words(&self) -> &[AtomicU64] {
        match self {
            Backing::Pool(p) => p.atomics(),
            Backing::Mapping(m) => m.atomics(),
        }
    }
}

/// The word memory of a pool and what the record says about it: the production
/// [`Backing`], or the crash-image checker's recording memory.
pub trait PoolMemory: WordMemory {
    /// The target as asked and as achieved.
    fn target_record(&self) -> TargetRecord;
    /// Where it differs from the request.
    fn target_warnings(&self) -> Vec<Warning>;
}

impl PoolMemory for Backing {
    fn target_record(&self) -> TargetRecord {
        match self {
            Backing::Pool(p) => p.record(),
            Backing::Mapping(m) => m.record(),
        }
    }
    fn target_warnings(&self) -> Vec<Warning> {
        match self {
            Backing::Pool(p) => p.warnings().to_vec(),
            Backing::Mapping(m) => m.warnings().to_vec(),
        }
    }
}

/// [`PersistentWords`] on a pool's memory, persisted with the user's strategy, counting
/// what it issues. Generic over the memory so that the crash-image checker runs this very
/// code (its write-backs, its drain) over a recording memory.
pub struct PoolWords<B = Backing> {
    backing: B,
    persister: Persister,
    counts: PersistCounts,
}

impl<B: PoolMemory> PoolWords<B> {
    /// `backing`, persisted by `persister`.
    pub fn over(backing: B, persister: Persister) -> PoolWords<B> {
        PoolWords {
            backing,
            persister,
            counts: PersistCounts::default(),
        }
    }

    /// The memory.
    pub fn backing(&self) -> &B {
        &self.backing
    }

    pub(super) fn backing_mut(&mut self) -> &mut B {
        &mut self.backing
    }

    pub(super) fn into_backing(self) -> B {
        self.backing
    }

    pub(super) fn set_persister(&mut self, persister: Persister) {
        self.persister = persister;
    }

    pub(super) fn persister_strategy(&self) -> pmscope_persist::PersistStrategy {
        self.persister.strategy()
    }

    #[inline(always)]
    fn words(&self) -> &[AtomicU64] {
        self.backing.words()
    }
}

/// What the record needs from a table's memory.
pub trait PoolInfo {
    /// The target as asked and as achieved.
    fn target_record(&self) -> TargetRecord;
    /// Where it differs from the request.
    fn target_warnings(&self) -> Vec<Warning>;
    /// (flushes, fences) issued so far.
    fn counts(&self) -> (u64, u64);
    /// The persister every flush and fence goes through.
    fn persister(&self) -> Persister;
}

impl<B: PoolMemory> PersistentWords for PoolWords<B> {
    #[inline]
    fn len(&self) -> usize {
        self.words().len()
    }
    #[inline]
    fn load(&self, i: usize) -> u64 {
        self.words()[i].load(Ordering::Acquire)
    }
    #[inline]
    fn store(&self, i: usize, v: u64) {
        self.backing.store(i, v)
    }
    #[inline]
    fn compare_exchange(&self, i: usize, old: u64, new: u64) -> Result<u64, u64> {
        self.backing.compare_exchange(i, old, new)
    }
    #[inline]
    fn prefetch(&self, i: usize) {
        pmscope_sys::prefetch::prefetch(&self.words()[i]);
    }
    #[inline]
    fn flush(&self, i: usize) {
        self.counts.flush();
        self.persister.flush_word(&self.words()[i]);
    }
    #[inline]
    fn flush_all(&self, words: &[usize]) {
        // Counted once for the group: a locked add between write-backs would wait for them.
        self.counts.flushes(words.len() as u64);
        let all = self.words();
        for &i in words {
            self.persister.flush_word(&all[i]);
        }
    }
    #[inline]
    fn fence(&self) {
        self.counts.fence();
        self.persister.fence_words(self.words());
    }
}

impl<B: PoolMemory> PoolInfo for PoolWords<B> {
    fn target_record(&self) -> TargetRecord {
        self.backing.target_record()
    }
    fn target_warnings(&self) -> Vec<Warning> {
        self.backing.target_warnings()
    }
    fn counts(&self) -> (u64, u64) {
        self.counts.get()
    }
    fn persister(&self) -> Persister {
        self.persister
    }
}
