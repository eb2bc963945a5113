//! A barrier that a failing worker breaks. `std::sync::Barrier` waits forever for a
//! party that panicked, so one worker's failure (a table-full guard, say) would hang the
//! exchange between workers instead of ending the run with an error. Here a worker that
//! unwinds breaks the rendezvous on its way out, and everyone waiting, or arriving later,
//! unwinds too, quietly (the first panic is the one reported).

use std::sync::{Condvar, Mutex, MutexGuard};

pub struct Rendezvous {
    parties: usize,
    state: Mutex<State>,
    turned: Condvar,
}

#[derive(Default)]
struct State {
    arrived: usize,
    generation: u64,
    broken: bool,
}

impl Rendezvous {
    pub fn new(parties: usize) -> Rendezvous {
        Rendezvous {
            parties: parties.max(1),
            state: Mutex::new(State::default()),
            turned: Condvar::new(),
        }
    }

    /// Waits until every party has arrived; unwinds if another party failed.
    pub fn wait(&self) {
        let mut s = self.lock();
        if s.broken {
            drop(s);
            Self::leave();
        }
        s.arrived += 1;
        if s.arrived == self.parties {
            s.arrived = 0;
            s.generation += 1;
            self.turned.notify_all();
            return;
        }
        let generation = s.generation;
        while s.generation == generation && !s.broken {
            s = self.turned.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if s.generation == generation {
            drop(s);
            Self::leave();
        }
    }

    /// A guard that breaks the rendezvous if its thread unwinds while holding it.
    pub fn break_on_panic(&self) -> BreakOnPanic<'_> {
        BreakOnPanic(self)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn leave() -> ! {
        // Without the panic hook: the worker that failed has said why.
        std::panic::resume_unwind(Box::new("another worker of the exchange failed"))
    }
}

pub struct BreakOnPanic<'a>(&'a Rendezvous);

impl Drop for BreakOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().broken = true;
            self.0.turned.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `parties` threads through `rounds` rendezvous, thread 0 panicking before round
    /// `fail_at` (if any); reports each thread's outcome, or None if they hung.
    fn outcome(parties: usize, rounds: usize, fail_at: Option<usize>) -> Option<Vec<bool>> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let r = Rendezvous::new(parties);
            let done = std::thread::scope(|s| {
                let hs: Vec<_> = (0..parties)
                    .map(|t| {
                        let r = &r;
                        s.spawn(move || {
                            let _guard = r.break_on_panic();
                            for round in 0..rounds {
                                if t == 0 && fail_at == Some(round) {
                                    std::panic::resume_unwind(Box::new("table full"));
                                }
                                r.wait();
                            }
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().is_ok()).collect::<Vec<_>>()
            });
            let _ = tx.send(done);
        });
        rx.recv_timeout(Duration::from_secs(20)).ok()
    }

    #[test]
    fn every_party_passes_every_round() {
        assert_eq!(outcome(3, 50, None), Some(vec![true; 3]));
    }

    #[test]
    fn a_failing_party_releases_the_others_instead_of_hanging_them() {
        for fail_at in [0, 1, 7] {
            let got = outcome(3, 10, Some(fail_at));
            assert_eq!(got, Some(vec![false; 3]), "failure before round {fail_at}");
        }
    }
}
