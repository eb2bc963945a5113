//! A recording memory for the crash-image checker: [`RecordedWords`] is the word memory a
//! production memory layer (`PoolWords`) stores into, logging every store and successful
//! compare-and-swap, and it watches itself ([`crate::trace`]) so that every write-back and
//! drain a [`crate::Persister`] executes on it is logged too, in the order they took
//! effect, with the thread that issued each. [`crate::shadow::CrashModel`] replays the log.
//!
//! With a [`Schedule`], the threads that work on the memory in parallel (a driver's
//! workers, a section at a time) take turns: one runs at a time, and at each *switch
//! point* (an operation the schedule names, e.g. a fence that ends a group of inserts) the
//! schedule's next choice says which continues. A worker is known by its spawn order
//! (threads spawned one after another get increasing ids), so a schedule replays exactly:
//! every decision a table takes from a load is re-checked by the compare-and-swap that
//! acts on it, and those run in turn.

use crate::insn::FlushKind;
use crate::shadow::{Op, ThreadNo};
use crate::trace::{self, Drained, Watch, Watcher};
use crate::words::WordMemory;
use std::cell::RefCell;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::ThreadId;

/// How parallel workers take turns on a [`RecordedWords`].
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Workers in each parallel section; each must touch the memory (a section starts once
    /// all of them have).
    pub workers: usize,
    /// At each switch point of a section, the worker (modulo `workers`) that continues; past
    /// the end, the next worker in turn. A finished worker's turn goes to the next one.
    pub choices: Vec<usize>,
    /// Whether a worker may be switched after this operation.
    pub switch_after: fn(&Op) -> bool,
}

/// Word memory that logs what is done to it (see the module comment).
pub struct RecordedWords {
    inner: Arc<Inner>,
    _watch: Watch,
}

struct Inner {
    words: Box<[AtomicU64]>,
    owner: ThreadId,
    state: Mutex<State>,
    turn_changed: Condvar,
}

#[derive(Default)]
struct State {
    log: Vec<Op>,
    /// Threads by their number (index); 0 is the owner.
    threads: Vec<ThreadId>,
    schedule: Option<Turns>,
}

/// A schedule in progress.
struct Turns {
    plan: Schedule,
    /// The section's workers, in spawn order once it is full.
    section: Vec<Member>,
    next_choice: usize,
    turn: usize,
}

struct Member {
    id: ThreadId,
    done: bool,
}

/// A thread's spawn order: std numbers threads as they are spawned.
fn spawn_order(id: ThreadId) -> u64 {
    let s = format!("{id:?}");
    s.trim_start_matches("ThreadId(")
        .trim_end_matches(')')
        .parse()
        .unwrap_or(u64::MAX)
}

impl Turns {
    fn full(&self) -> bool {
        self.section.len() == self.plan.workers
    }

    /// The worker that runs next.
    fn choose(&mut self) -> usize {
        let n = self.section.len().max(1);
        let want = match self.plan.choices.get(self.next_choice) {
            Some(&c) => c % n,
            None => (self.turn + 1) % n,
        };
        self.next_choice += 1;
        (0..n)
            .map(|d| (want + d) % n)
            .find(|&i| !self.section[i].done)
            .unwrap_or(want)
    }
}

thread_local! {
    /// Memories this thread worked on in a schedule: its exit ends its turns there.
    static EXITS: RefCell<Vec<Exit>> = const { RefCell::new(Vec::new()) };
}

/// Marks a worker finished in its section when its thread ends, passing its turn on.
struct Exit {
    inner: Weak<Inner>,
    id: ThreadId,
}

impl Drop for Exit {
    fn drop(&mut self) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        let mut s = inner.lock();
        if let Some(t) = s.schedule.as_mut()
            && let Some(pos) = t.section.iter().position(|m| m.id == self.id)
        {
            t.section[pos].done = true;
            if t.turn == pos {
                t.turn = t.choose();
            }
            inner.turn_changed.notify_all();
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn thread_no(s: &mut State, id: ThreadId) -> ThreadNo {
        match s.threads.iter().position(|&t| t == id) {
            Some(i) => i as ThreadNo,
            None => {
                s.threads.push(id);
                (s.threads.len() - 1) as ThreadNo
            }
        }
    }

    /// Joins this worker thread to the current section (a new one if the last is full).
    fn join(self: &Arc<Self>, s: &mut State, me: ThreadId) {
        let Some(t) = s.schedule.as_mut() else {
            return;
        };
        if me == self.owner || t.section.iter().any(|m| m.id == me) {
            return;
        }
        if t.full() {
            // The driver joined the last section's workers before spawning these.
            t.section.clear();
        }
        t.section.push(Member {
            id: me,
            done: false,
        });
        EXITS.with(|e| {
            e.borrow_mut().push(Exit {
                inner: Arc::downgrade(self),
                id: me,
            })
        });
        if !t.full() {
            return;
        }
        t.section.sort_by_key(|m| spawn_order(m.id));
        t.next_choice = 0;
        t.turn = t.choose();
        let ids: Vec<ThreadId> = t.section.iter().map(|m| m.id).collect();
        for id in ids {
            Self::thread_no(s, id);
        }
        self.turn_changed.notify_all();
    }

    /// Runs `act` when it is this thread's turn, logging the operations it returns.
    fn record<R>(self: &Arc<Self>, act: impl FnOnce(ThreadNo) -> (R, [Option<Op>; 2])) -> R {
        let me = std::thread::current().id();
        let mut s = self.lock();
        self.join(&mut s, me);
        while let Some(t) = s.schedule.as_ref()
            && me != self.owner
            && !(t.full() && t.section.get(t.turn).is_some_and(|m| m.id == me))
        {
            s = self.turn_changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        let no = Self::thread_no(&mut s, me);
        let (r, ops) = act(no);
        for op in ops.into_iter().flatten() {
            s.log.push(op);
            if let Some(t) = s.schedule.as_mut()
                && me != self.owner
                && (t.plan.switch_after)(&op)
            {
                t.turn = t.choose();
                self.turn_changed.notify_all();
            }
        }
        r
    }

    fn word_of(&self, addr: usize) -> Option<usize> {
        let base = self.words.as_ptr() as usize;
        (addr >= base && addr < base + self.words.len() * 8).then(|| (addr - base) / 8)
    }
}

/// A watcher that reaches the memory through a weak reference (the registry keeps it).
struct Watching(Weak<Inner>);

impl Watcher for Watching {
    fn range(&self) -> Range<usize> {
        match self.0.upgrade() {
            Some(i) => {
                let base = i.words.as_ptr() as usize;
                base..base + i.words.len() * 8
            }
            None => 0..0,
        }
    }

    fn flushed(&self, addr: usize, kind: FlushKind) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        let Some(word) = inner.word_of(addr) else {
            return;
        };
        inner.record(|thread| {
            let flush = Op::Flush { word, thread };
            // clflush is ordered with the thread's stores: durable once issued, so it is
            // logged with a fence of its own (the line's stores are in before any later one).
            let fence = (kind == FlushKind::Clflush).then_some(Op::Fence { thread });
            ((), [Some(flush), fence])
        });
    }

    fn drained(&self, _range: Range<usize>, how: Drained) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        inner.record(|thread| {
            let op = match how {
                Drained::Fence => Op::Fence { thread },
                Drained::Msync => Op::Sync,
            };
            ((), [Some(op), None])
        });
    }
}

impl RecordedWords {
    /// A memory holding `image`, owned by the calling thread (never made to wait), logging
    /// from now on.
    pub fn new(image: Vec<u64>) -> RecordedWords {
        let inner = Arc::new(Inner {
            words: image.into_iter().map(AtomicU64::new).collect(),
            owner: std::thread::current().id(),
            state: Mutex::new(State::default()),
            turn_changed: Condvar::new(),
        });
        inner.lock().threads.push(inner.owner);
        let watcher: Arc<dyn Watcher> = Arc::new(Watching(Arc::downgrade(&inner)));
        let watch = trace::watch(&watcher);
        // The registry holds the watcher weakly; the memory keeps it alive.
        std::mem::forget(watcher);
        RecordedWords {
            inner,
            _watch: watch,
        }
    }

    /// Makes parallel workers take turns by `schedule` from now on.
    pub fn schedule(&self, schedule: Schedule) {
        self.inner.lock().schedule = Some(Turns {
            plan: schedule,
            section: Vec::new(),
            next_choice: 0,
            turn: 0,
        });
    }

    /// Places a marker in the log, from this thread (in a schedule, a worker's marker
    /// waits for its turn like its stores, and can be a switch point).
    pub fn mark(&self, value: u64) {
        self.inner
            .record(|thread| ((), [Some(Op::Mark { value, thread }), None]));
    }

    /// The log so far, and clears it.
    pub fn take_log(&self) -> Vec<Op> {
        std::mem::take(&mut self.inner.lock().log)
    }

    /// The current contents.
    pub fn snapshot(&self) -> Vec<u64> {
        self.inner
            .words
            .iter()
            .map(|w| w.load(Ordering::Acquire))
            .collect()
    }
}

impl WordMemory for RecordedWords {
    #[inline]
    fn words(&self) -> &[AtomicU64] {
        let mut s = self.inner.lock();
        if s.schedule.is_some() {
            // A worker joins its section at its first touch (its first probe's load or
            // prefetch), so a worker that stores nothing still takes part in the turns.
            self.inner.join(&mut s, std::thread::current().id());
        }
        drop(s);
        &self.inner.words
    }

    fn store(&self, i: usize, v: u64) {
        self.inner.record(|thread| {
            self.inner.words[i].store(v, Ordering::Release);
            (
                (),
                [
                    Some(Op::Store {
                        word: i,
                        value: v,
                        thread,
                    }),
                    None,
                ],
            )
        })
    }

    fn compare_exchange(&self, i: usize, old: u64, new: u64) -> Result<u64, u64> {
        self.inner.record(|thread| {
            let r =
                self.inner.words[i].compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire);
            let op = r.is_ok().then_some(Op::Store {
                word: i,
                value: new,
                thread,
            });
            (r, [op, None])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PersistStrategy, Persister};
    use pmscope_sys::cpu::CpuFeatures;

    /// What a Persister issues on the memory is logged from its own code path.
    #[test]
    fn a_persisters_write_backs_and_drains_are_logged_as_issued() {
        let f = CpuFeatures::detect();
        for (strategy, want) in [
            (PersistStrategy::Clflush, vec!["store", "flush", "fence"]),
            (PersistStrategy::Clflushopt, vec!["store", "flush", "fence"]),
            (PersistStrategy::Clwb, vec!["store", "flush", "fence"]),
            (PersistStrategy::Msync, vec!["store", "sync"]),
            (PersistStrategy::None, vec!["store"]),
        ] {
            let Ok(p) = Persister::new(strategy, &f) else {
                continue;
            };
            let m = RecordedWords::new(vec![0; 32]);
            m.store(9, 7);
            p.flush_word(&m.words()[9]);
            p.fence_words(m.words());
            let log = m.take_log();
            let names: Vec<&str> = log
                .iter()
                .map(|op| match op {
                    Op::Store { .. } => "store",
                    Op::Flush { word: 9, .. } => "flush",
                    Op::Flush { .. } => "flush of another word",
                    Op::Fence { .. } => "fence",
                    Op::Sync => "sync",
                    Op::Mark { .. } => "mark",
                })
                .collect();
            assert_eq!(names, want, "{strategy}");
        }
        // Another memory's flushes are not this one's.
        let p = Persister::new(PersistStrategy::Clflush, &f).unwrap();
        let m = RecordedWords::new(vec![0; 8]);
        let other: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        p.flush_word(&other[0]);
        p.fence_words(&other);
        assert!(m.take_log().is_empty());
    }

    fn after_marks(op: &Op) -> bool {
        matches!(op, Op::Mark { .. })
    }

    /// Two workers of three sections each store and mark; the log is the same every time.
    fn scheduled_run(choices: Vec<usize>) -> Vec<Op> {
        let m = RecordedWords::new(vec![0; 64]);
        m.schedule(Schedule {
            workers: 2,
            choices,
            switch_after: after_marks,
        });
        for section in 0..3u64 {
            std::thread::scope(|s| {
                for w in 0..2u64 {
                    let m = &m;
                    s.spawn(move || {
                        let _ = m.words();
                        if w == 0 {
                            // The first worker comes late: its turn must not depend on it.
                            std::thread::sleep(std::time::Duration::from_millis(2));
                        }
                        for i in 0..3 {
                            m.store((w * 8 + i) as usize, section * 100 + w * 10 + i);
                            m.mark(w);
                        }
                    });
                }
            });
        }
        m.take_log()
    }

    #[test]
    fn a_schedule_replays_exactly_and_its_choices_decide_the_turns() {
        let a = scheduled_run(vec![1, 1, 0, 1]);
        assert_eq!(a, scheduled_run(vec![1, 1, 0, 1]));
        let stores = |log: &[Op]| -> Vec<u64> {
            log.iter()
                .filter_map(|op| match op {
                    Op::Store { value, .. } => Some(*value),
                    _ => None,
                })
                .collect()
        };
        // Worker 1, 1 again, 0, 1; past the choices in turn, and a finished worker's turn
        // passes on.
        assert_eq!(&stores(&a)[..6], &[10, 11, 0, 12, 1, 2]);
        let b = scheduled_run(vec![0, 1, 0, 1]);
        assert_eq!(&stores(&b)[..6], &[0, 10, 1, 11, 2, 12]);
    }
}
