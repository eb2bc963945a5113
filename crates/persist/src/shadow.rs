//! A model of persistence for testing persistent structures: [`ShadowWords`] implements the
//! same [`PersistentWords`] seam as production and records every store, flush and fence;
//! [`CrashModel`] replays that log and enumerates every memory image a crash could leave.
//!
//! The rule (x86 with ADR): a line flushed and then fenced holds every store made to it
//! before the flush. Any other line can be evicted at any moment, so it may persist any
//! *prefix* of the stores made to it since it last persisted (a line never persists a later
//! store without the earlier ones). The images at a crash point are the product over dirty
//! lines of (stores + 1) choices; [`CrashModel::images`] visits every one.

use crate::words::PersistentWords;
use std::sync::Mutex;

/// Words per cache line.
pub const LINE_WORDS: usize = 8;

/// One operation on the memory, in program order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// An 8-byte store (or a successful compare-and-swap) of `value` to `word`.
    Store {
        /// Word index.
        word: usize,
        /// Value stored.
        value: u64,
    },
    /// A write-back of the line holding `word`.
    Flush {
        /// Any word of the line.
        word: usize,
    },
    /// A fence.
    Fence,
    /// A marker the test places (e.g. "insert n acknowledged").
    Mark(u64),
}

/// [`PersistentWords`] over plain memory that logs every operation (single-threaded use).
pub struct ShadowWords {
    state: Mutex<(Vec<u64>, Vec<Op>)>,
}

impl ShadowWords {
    /// `words` words, starting from `image` (its length is the memory's).
    pub fn from_image(image: Vec<u64>) -> ShadowWords {
        ShadowWords {
            state: Mutex::new((image, Vec::new())),
        }
    }

    /// Zeroed memory of `words` words.
    pub fn zeroed(words: usize) -> ShadowWords {
        Self::from_image(vec![0; words])
    }

    /// Places a marker in the log.
    pub fn mark(&self, m: u64) {
        self.state.lock().unwrap().1.push(Op::Mark(m));
    }

    /// The log so far, and clears it.
    pub fn take_log(&self) -> Vec<Op> {
        std::mem::take(&mut self.state.lock().unwrap().1)
    }

    /// The current contents.
    pub fn snapshot(&self) -> Vec<u64> {
        self.state.lock().unwrap().0.clone()
    }
}

impl PersistentWords for ShadowWords {
    fn len(&self) -> usize {
        self.state.lock().unwrap().0.len()
    }
    fn load(&self, i: usize) -> u64 {
        self.state.lock().unwrap().0[i]
    }
    fn store(&self, i: usize, v: u64) {
        let mut s = self.state.lock().unwrap();
        s.0[i] = v;
        s.1.push(Op::Store { word: i, value: v });
    }
    fn compare_exchange(&self, i: usize, old: u64, new: u64) -> Result<u64, u64> {
        let mut s = self.state.lock().unwrap();
        if s.0[i] != old {
            return Err(s.0[i]);
        }
        s.0[i] = new;
        s.1.push(Op::Store {
            word: i,
            value: new,
        });
        Ok(old)
    }
    fn flush(&self, i: usize) {
        self.state.lock().unwrap().1.push(Op::Flush { word: i });
    }
    fn fence(&self) {
        self.state.lock().unwrap().1.push(Op::Fence);
    }
}

/// The persistent state of a memory as a log is replayed: what is durable for sure, and
/// per dirty line the stores that may or may not have reached it.
#[derive(Debug, Clone)]
pub struct CrashModel {
    durable: Vec<u64>,
    /// Per line: stores since it last persisted, in order, and how many of them a flush
    /// (not yet fenced) covers.
    pending: std::collections::BTreeMap<usize, (Vec<(usize, u64)>, usize)>,
}

impl CrashModel {
    /// Starts from a durable image.
    pub fn new(durable: Vec<u64>) -> CrashModel {
        CrashModel {
            durable,
            pending: Default::default(),
        }
    }

    /// Applies one operation.
    pub fn apply(&mut self, op: Op) {
        match op {
            Op::Store { word, value } => {
                self.pending
                    .entry(word / LINE_WORDS)
                    .or_default()
                    .0
                    .push((word, value));
            }
            Op::Flush { word } => {
                if let Some(p) = self.pending.get_mut(&(word / LINE_WORDS)) {
                    p.1 = p.0.len();
                }
            }
            Op::Fence => {
                let durable = &mut self.durable;
                self.pending.retain(|_, (stores, flushed)| {
                    for &(w, v) in &stores[..*flushed] {
                        durable[w] = v;
                    }
                    stores.drain(..*flushed);
                    *flushed = 0;
                    !stores.is_empty()
                });
            }
            Op::Mark(_) => {}
        }
    }

    /// How many images a crash now could leave: the product of (stores + 1) over dirty lines.
    pub fn image_count(&self) -> u64 {
        self.pending
            .values()
            .map(|(s, _)| s.len() as u64 + 1)
            .product()
    }

    /// Visits every image a crash now could leave (exhaustively); stops early and returns
    /// the error if `check` fails.
    pub fn images<E>(&self, mut check: impl FnMut(&[u64]) -> Result<(), E>) -> Result<u64, E> {
        let lines: Vec<&Vec<(usize, u64)>> = self.pending.values().map(|(s, _)| s).collect();
        let mut choice = vec![0usize; lines.len()];
        let mut image = self.durable.clone();
        let mut visited = 0;
        loop {
            image.copy_from_slice(&self.durable);
            for (stores, &n) in lines.iter().zip(&choice) {
                for &(w, v) in &stores[..n] {
                    image[w] = v;
                }
            }
            check(&image)?;
            visited += 1;
            // Next combination (odometer).
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

    #[test]
    fn unflushed_lines_persist_any_prefix_and_fenced_ones_everything() {
        let m = ShadowWords::zeroed(16);
        m.store(0, 1);
        m.store(1, 2);
        m.store(8, 3);
        let mut model = CrashModel::new(vec![0; 16]);
        for op in m.take_log() {
            model.apply(op);
        }
        assert_eq!(model.image_count(), 3 * 2);
        let mut seen = Vec::new();
        model
            .images::<()>(|img| {
                seen.push((img[0], img[1], img[8]));
                Ok(())
            })
            .unwrap();
        seen.sort();
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
        // Flush + fence of line 0: it is durable; a store after the flush stays pending.
        m.flush(0);
        m.store(9, 4);
        m.fence();
        for op in m.take_log() {
            model.apply(op);
        }
        assert_eq!(
            model.image_count(),
            3,
            "line 1 still has two unflushed stores"
        );
        model
            .images::<()>(|img| {
                assert_eq!((img[0], img[1]), (1, 2));
                Ok(())
            })
            .unwrap();
    }
}
