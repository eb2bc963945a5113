//! Recovery of a static-pm pool when it is opened: what a crash can leave in the slots, and
//! how it is made a table again.
//!
//! A crash can leave three things besides complete entries:
//!
//! * a slot claimed but never published (CLAIMED without VALID): an insert cut short. It is
//!   cleared.
//! * a **hole in a probe sequence**: a published entry whose sequence passes an empty slot
//!   before reaching it. Inserts persist their slots independently (a group's lines are
//!   written back together, two threads' groups in any order), so the entry that made a
//!   later k-mer probe further may be lost while the later one is durable — or it was a
//!   claim cut short, cleared above. A lookup stops at the hole and misses the entry, and
//!   the resumed run would insert the k-mer a second time in the hole. The entry is moved
//!   into the hole: its copy written and made durable first, then the old slot cleared.
//! * a k-mer in two slots with the same meta word: a move cut short. The later copy (in the
//!   k-mer's probe order) is cleared.
//!
//! Anything else (a count of 0 or above its tag, a tag beyond the genome in progress, both
//! flags, one k-mer in two slots with different counts) breaks the table's invariants: the
//! pool is refused, and [`StaticPm::survey`] finds that before anything is written.

use super::{CLAIMED, COUNT_MASK, META, SLOT_WORDS, StaticPm, TAG_MASK, TAG_SHIFT, VALID};
use crate::kmer::encode::Kmer;
use pmscope_persist::PersistentWords;

/// What opening a pool found and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Published k-mers.
    pub valid: u64,
    /// Claimed but never published slots (an insert cut short), cleared.
    pub cleared: u64,
    /// Entries moved into an empty slot earlier in their probe sequence (a hole a crash
    /// left).
    pub moved: u64,
    /// Second copies of an entry (a move cut short), cleared.
    pub duplicates: u64,
    /// Slots that break an invariant (count 0 or above the tag, tag beyond the genomes,
    /// one k-mer in two slots with different counts).
    pub corrupt: u64,
    /// Sum of the genome counts.
    pub counted: u64,
}

/// Where a published entry stands in its probe sequence.
enum Placement {
    /// Every slot before it in its sequence is occupied by other k-mers.
    Placed,
    /// The first empty slot of its sequence, before it.
    Hole(usize),
    /// An earlier slot of its sequence holds the same k-mer, with this meta word.
    Copy(u64),
}

impl<const W: usize, M: PersistentWords> StaticPm<W, M> {
    /// The slots of `hash`'s probe sequence, in order (every slot once).
    fn probe_sequence(&self, hash: u64) -> impl Iterator<Item = usize> + use<W, M> {
        let mask = self.header.capacity - 1;
        let mut next = self.start(hash);
        (0..self.header.capacity).map(move |step| {
            let slot = next;
            next = (next + step + 1) & mask;
            slot
        })
    }

    fn meta(&self, slot: usize) -> u64 {
        self.mem.load(self.base(slot) + META)
    }

    fn key(&self, slot: usize) -> Kmer<W> {
        let base = self.base(slot);
        let mut kmer = Kmer::<W>::ZERO;
        for (j, w) in kmer.0.iter_mut().enumerate() {
            *w = self.mem.load(base + j);
        }
        kmer
    }

    /// Whether a published meta word keeps the invariants.
    fn sound(&self, m: u64) -> bool {
        let count = m & COUNT_MASK;
        let tag = (m >> TAG_SHIFT) & TAG_MASK;
        // Genome ids count up from 1 and each genome counts a k-mer once: count <= tag,
        // and no genome beyond the one in progress has touched the table.
        count > 0 && count <= tag && tag <= self.header.done as u64 + 1 && m & CLAIMED == 0
    }

    /// Where the published entry in `slot` stands, counting a claimed-but-unpublished slot
    /// as the empty slot recovery makes of it.
    fn placement(&self, slot: usize) -> Placement {
        let key = self.key(slot);
        for p in self.probe_sequence(key.hash()) {
            if p == slot {
                break;
            }
            let m = self.meta(p);
            if m & VALID == 0 {
                return Placement::Hole(p);
            }
            if self.key(p) == key {
                return Placement::Copy(m);
            }
        }
        Placement::Placed
    }

    /// Reads every slot without writing anything: what [`recover`](Self::recover) will
    /// find, and whether the pool keeps the invariants at all.
    pub(super) fn survey(&self) -> Recovery {
        let mut r = Recovery::default();
        for slot in 0..self.header.capacity {
            let m = self.meta(slot);
            if m == 0 {
                continue;
            }
            if m & VALID == 0 {
                r.cleared += 1;
                continue;
            }
            if !self.sound(m) {
                r.corrupt += 1;
                continue;
            }
            match self.placement(slot) {
                Placement::Placed => {}
                Placement::Hole(_) => r.moved += 1,
                Placement::Copy(theirs) if theirs == m => r.duplicates += 1,
                Placement::Copy(_) => r.corrupt += 1,
            }
            r.valid += 1;
            r.counted += m & COUNT_MASK;
        }
        r
    }

    /// Clears `slot` (meta first: a slot whose meta is 0 is empty whatever its keys) and
    /// makes that durable.
    fn clear(&self, slot: usize) {
        let base = self.base(slot);
        self.mem.store(base + META, 0);
        for j in 0..SLOT_WORDS - 1 {
            self.mem.store(base + j, 0);
        }
        self.mem.flush(base);
        self.fence();
    }

    /// Makes a surveyed pool a table again (see the module comment); returns what it holds
    /// and what was done. Every step is durable before the next, so a crash during
    /// recovery leaves a pool the next recovery finishes.
    pub(super) fn recover(&mut self, found: Recovery) -> Recovery {
        let mut r = Recovery {
            cleared: found.cleared,
            ..Recovery::default()
        };
        if found.cleared > 0 {
            for slot in 0..self.header.capacity {
                let m = self.meta(slot);
                if m != 0 && m & VALID == 0 {
                    for j in 0..SLOT_WORDS {
                        self.mem.store(self.base(slot) + j, 0);
                    }
                    self.mem.flush(self.base(slot));
                }
            }
            self.fence();
        }
        // A move empties a slot, which can open a hole before another entry: repeat until
        // every entry is placed (each move brings an entry strictly earlier in its sequence).
        let mut changed = found.moved + found.duplicates > 0 || found.cleared > 0;
        while changed {
            changed = false;
            for slot in 0..self.header.capacity {
                let m = self.meta(slot);
                if m & VALID == 0 {
                    continue;
                }
                match self.placement(slot) {
                    Placement::Placed => continue,
                    Placement::Hole(to) => {
                        let (from, dest) = (self.base(slot), self.base(to));
                        for j in 0..W {
                            self.mem.store(dest + j, self.mem.load(from + j));
                        }
                        self.mem.store(dest + META, m);
                        self.mem.flush(dest);
                        self.fence();
                        r.moved += 1;
                    }
                    Placement::Copy(_) => r.duplicates += 1,
                }
                self.clear(slot);
                changed = true;
            }
        }
        for slot in 0..self.header.capacity {
            let m = self.meta(slot);
            if m & VALID != 0 {
                r.valid += 1;
                r.counted += m & COUNT_MASK;
            }
        }
        r
    }
}
