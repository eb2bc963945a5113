//! A model of persistence for testing persistent structures: [`CrashModel`] replays a log
//! of stores, write-backs and drains (as [`crate::record::RecordedWords`] records them from
//! the production code) and enumerates the memory images a power failure could leave.
//!
//! The rule (x86 with ADR): a line written back by a thread and then drained by a fence of
//! that same thread holds every store made to it before the write-back; `msync` of a range
//! writes back every store to it. Any other line can be evicted at any moment, so it may
//! persist any *prefix* of the stores made to it since it last persisted (a line never
//! persists a later store without the earlier ones). The images at a crash point are the
//! product over dirty lines of (stores + 1) choices; [`CrashModel::images`] visits every
//! one, or, past a bound, a deterministic sample that always includes the image where no
//! pending store persisted and the one where all did.

use std::collections::BTreeMap;

/// Words per cache line.
pub const LINE_WORDS: usize = 8;

/// A thread as the log numbers it: 0 is the thread that made the memory, the others are
/// numbered in the order they first touched it (in a schedule: worker order).
pub type ThreadNo = u32;

/// One operation on the memory, in the order it took effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// An 8-byte store (or a successful compare-and-swap) of `value` to `word`.
    Store {
        /// Word index.
        word: usize,
        /// Value stored.
        value: u64,
        /// Who stored.
        thread: ThreadNo,
    },
    /// A write-back of the line holding `word`.
    Flush {
        /// Any word of the line.
        word: usize,
        /// Who issued it.
        thread: ThreadNo,
    },
    /// A fence: the write-backs `thread` issued before it are complete.
    Fence {
        /// Who issued it.
        thread: ThreadNo,
    },
    /// `msync` of the whole memory: every store so far is durable.
    Sync,
    /// A marker a test places from `thread` (e.g. "the pool is created", "this worker's
    /// group was acknowledged").
    Mark {
        /// What it marks.
        value: u64,
        /// Who placed it.
        thread: ThreadNo,
    },
}

/// A dirty line: its stores since it last persisted, in order, and per thread how many of
/// them a write-back of that thread (not yet fenced) covers.
#[derive(Debug, Clone, Default)]
struct Dirty {
    /// (word, value, thread that stored it).
    stores: Vec<(usize, u64, ThreadNo)>,
    flushed: Vec<(ThreadNo, usize)>,
}

/// The persistent state of a memory as a log is replayed: what is durable for sure, and
/// per dirty line the stores that may or may not have reached it.
#[derive(Debug, Clone)]
pub struct CrashModel {
    durable: Vec<u64>,
    pending: BTreeMap<usize, Dirty>,
}

impl CrashModel {
    /// Starts from a durable image.
    pub fn new(durable: Vec<u64>) -> CrashModel {
        CrashModel {
            durable,
            pending: BTreeMap::new(),
        }
    }

    /// Applies one operation.
    pub fn apply(&mut self, op: Op) {
        match op {
            Op::Store {
                word,
                value,
                thread,
            } => {
                self.pending
                    .entry(word / LINE_WORDS)
                    .or_default()
                    .stores
                    .push((word, value, thread));
            }
            Op::Flush { word, thread } => {
                if let Some(d) = self.pending.get_mut(&(word / LINE_WORDS)) {
                    let n = d.stores.len();
                    match d.flushed.iter_mut().find(|(t, _)| *t == thread) {
                        Some(f) => f.1 = n,
                        None => d.flushed.push((thread, n)),
                    }
                }
            }
            Op::Fence { thread } => {
                let durable = &mut self.durable;
                self.pending.retain(|_, d| {
                    let Some(i) = d.flushed.iter().position(|(t, _)| *t == thread) else {
                        return true;
                    };
                    let (_, n) = d.flushed.swap_remove(i);
                    for &(w, v, _) in &d.stores[..n] {
                        durable[w] = v;
                    }
                    d.stores.drain(..n);
                    for f in &mut d.flushed {
                        f.1 = f.1.saturating_sub(n);
                    }
                    d.flushed.retain(|f| f.1 > 0);
                    !d.stores.is_empty()
                });
            }
            Op::Sync => {
                for d in std::mem::take(&mut self.pending).into_values() {
                    for (w, v, _) in d.stores {
                        self.durable[w] = v;
                    }
                }
            }
            Op::Mark { .. } => {}
        }
    }

    /// The image where nothing pending persisted.
    pub fn durable(&self) -> &[u64] {
        &self.durable
    }

    /// Lines with stores that may not have persisted.
    pub fn dirty_lines(&self) -> usize {
        self.pending.len()
    }

    /// The first word `thread` stored to that may not have persisted (`None`: every store
    /// of the thread is durable).
    pub fn undurable_store_of(&self, thread: ThreadNo) -> Option<usize> {
        self.pending
            .values()
            .flat_map(|d| &d.stores)
            .find(|s| s.2 == thread)
            .map(|s| s.0)
    }

    /// The first word whose store may not have persisted.
    pub fn undurable_store(&self) -> Option<usize> {
        self.pending
            .values()
            .flat_map(|d| &d.stores)
            .next()
            .map(|s| s.0)
    }

    /// How many images a crash now could leave: the product of (stores + 1) over dirty lines
    /// (saturating).
    pub fn image_count(&self) -> u64 {
        self.pending
            .values()
            .map(|d| d.stores.len() as u64 + 1)
            .fold(1u64, |a, b| a.saturating_mul(b))
    }

    /// Visits every image a crash now could leave, or `limit` of them when there are more
    /// (the none-persisted and all-persisted images first, then pseudo-random prefixes from
    /// a fixed seed); stops early and returns the error if `check` fails. Returns how many
    /// images were visited.
    pub fn images<E>(
        &self,
        limit: u64,
        mut check: impl FnMut(&[u64]) -> Result<(), E>,
    ) -> Result<u64, E> {
        let lines: Vec<&Vec<(usize, u64, ThreadNo)>> =
            self.pending.values().map(|d| &d.stores).collect();
        let mut image = self.durable.clone();
        let mut visit = |choice: &[usize], image: &mut Vec<u64>| {
            image.copy_from_slice(&self.durable);
            for (stores, &n) in lines.iter().zip(choice) {
                for &(w, v, _) in &stores[..n] {
                    image[w] = v;
                }
            }
            check(image)
        };
        if self.image_count() > limit {
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ self.pending.len() as u64;
            for i in 0..limit {
                let choice: Vec<usize> = lines
                    .iter()
                    .map(|s| match i {
                        0 => 0,
                        1 => s.len(),
                        _ => {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            (x % (s.len() as u64 + 1)) as usize
                        }
                    })
                    .collect();
                visit(&choice, &mut image)?;
            }
            return Ok(limit);
        }
        // Every combination (odometer).
        let mut choice = vec![0usize; lines.len()];
        let mut visited = 0;
        loop {
            visit(&choice, &mut image)?;
            visited += 1;
            let mut i = 0;
            loop {
                if i == lines.len() {
                    return Ok(visited);
                }
                choice[i] += 1;
                if choice[i] <= lines[i].len() {
                    break;
                }
                choice[i] = 0;
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(word: usize, value: u64, thread: ThreadNo) -> Op {
        Op::Store {
            word,
            value,
            thread,
        }
    }

    fn all(model: &CrashModel) -> Vec<Vec<u64>> {
        let mut seen = Vec::new();
        model
            .images::<()>(u64::MAX, |img| {
                seen.push(img.to_vec());
                Ok(())
            })
            .unwrap();
        seen.sort();
        seen
    }

    #[test]
    fn unflushed_lines_persist_any_prefix_and_fenced_ones_everything() {
        let mut model = CrashModel::new(vec![0; 16]);
        for op in [store(0, 1, 0), store(1, 2, 0), store(8, 3, 0)] {
            model.apply(op);
        }
        assert_eq!(model.image_count(), 3 * 2);
        let seen: Vec<(u64, u64, u64)> = all(&model).iter().map(|i| (i[0], i[1], i[8])).collect();
        // Never word 1 without word 0 (a prefix of the line's stores).
        assert_eq!(
            seen,
            vec![
                (0, 0, 0),
                (0, 0, 3),
                (1, 0, 0),
                (1, 0, 3),
                (1, 2, 0),
                (1, 2, 3)
            ]
        );
        // Write-back + fence of line 0: durable; a store after the write-back stays pending.
        for op in [
            Op::Flush { word: 0, thread: 0 },
            store(9, 4, 0),
            Op::Fence { thread: 0 },
        ] {
            model.apply(op);
        }
        assert_eq!(model.image_count(), 3, "line 1 has two unfenced stores");
        for img in all(&model) {
            assert_eq!((img[0], img[1]), (1, 2));
        }
    }

    #[test]
    fn a_fence_completes_only_its_own_threads_write_backs() {
        let mut model = CrashModel::new(vec![0; 16]);
        for op in [
            store(0, 1, 1),
            Op::Flush { word: 0, thread: 1 },
            Op::Fence { thread: 2 },
        ] {
            model.apply(op);
        }
        assert_eq!(
            model.image_count(),
            2,
            "thread 2's fence drains nothing of thread 1"
        );
        model.apply(Op::Fence { thread: 1 });
        assert_eq!(model.image_count(), 1);
        assert_eq!(model.durable()[0], 1);
        // msync writes back every store, fenced or not.
        model.apply(store(8, 5, 2));
        model.apply(Op::Sync);
        assert_eq!((model.image_count(), model.durable()[8]), (1, 5));
    }

    #[test]
    fn past_the_limit_a_sample_with_both_extremes_is_visited() {
        let mut model = CrashModel::new(vec![0; 64]);
        for line in 0..8 {
            model.apply(store(line * 8, 1, 0));
            model.apply(store(line * 8 + 1, 2, 0));
        }
        assert_eq!(model.image_count(), 3u64.pow(8));
        let mut seen = Vec::new();
        let n = model
            .images::<()>(10, |img| {
                seen.push(img.iter().sum::<u64>());
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 10);
        assert_eq!((seen[0], seen[1]), (0, 8 * 3));
    }
}
