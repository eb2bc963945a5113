//! Chasing a chain: many loads timed together (the mean latency, as multichase and MLC
//! report it) or one load at a time (the distribution, which they do not).
#![allow(unsafe_code)]

use crate::Region;
use crate::arch;
use crate::chain::{self, Chain, ChainError, ChainSpec};

/// A chain built in a region, with the position reached so far. Holding the region borrow
/// keeps the memory alive and unmodified while the chain is followed.
pub struct Chaser<'r, 'a> {
    region: &'r mut Region<'a>,
    chain: Chain,
    spec: ChainSpec,
    ws: usize,
    at: *const usize,
    /// The cursors of a parallel chase ([`Self::set_chains`]); empty for one chain.
    cursors: Vec<*const usize>,
    /// The position in the cycle of `at` (of the first cursor when there are several),
    /// counted from the start, mod the elements.
    position: u64,
    warmed: bool,
}

impl<'r, 'a> Chaser<'r, 'a> {
    /// Builds a chain over the first `ws` bytes of `region`.
    pub fn build(
        region: &'r mut Region<'a>,
        ws: usize,
        spec: &ChainSpec,
    ) -> Result<Self, ChainError> {
        let chain = chain::build(region, ws, spec)?;
        Ok(Chaser {
            region,
            at: chain.start,
            chain,
            spec: *spec,
            ws,
            cursors: Vec::new(),
            position: 0,
            warmed: false,
        })
    }

    /// Chases `n` stretches of the cycle side by side from now on (block access: `n`
    /// independent loads in flight, [`chain::spread_slots`]); 1 goes back to one chain.
    ///
    /// The cursors are spread evenly from where the chase stands, the first going on from
    /// there. The lines the last-level cache holds are those the chase visited last, just
    /// behind each cursor; in lockstep no cursor catches up with the trail of the one ahead
    /// (on a chain of more than twice the cache), and cursors spread from the current
    /// position head into stretches visited longest ago. Spread from the chain's start
    /// instead, a cursor could land in the last stretch chased and hit the cache for up to
    /// a cache's worth of loads.
    pub fn set_chains(&mut self, n: usize) {
        if let Some(&lead) = self.cursors.first() {
            self.at = lead;
        }
        self.cursors = if n <= 1 {
            Vec::new()
        } else {
            chain::spread_slots(self.region, self.ws, &self.spec, n, self.position)
        };
    }

    /// The chains chased side by side (1 unless [`Self::set_chains`] asked for more).
    pub fn chains(&self) -> usize {
        self.cursors.len().max(1)
    }

    /// The first time it is called on this chain: `loads` dependent loads, at most once
    /// around the cycle, so that the caches hold what they hold in steady state instead of
    /// what building the chain left; later calls do nothing (the chain stays warm between
    /// the points measured on it).
    pub fn warm_up(&mut self, loads: u64) {
        if !self.warmed {
            let _ = self.run(loads.min(self.chain.elements as u64));
            self.warmed = true;
        }
    }

    /// Elements in the cycle.
    pub fn elements(&self) -> usize {
        self.chain.elements
    }

    /// Performs about `loads` loads: dependent ones (rounded up to a multiple of 16), or
    /// with several chains as many rounds of one load per chain as make `loads` (at least
    /// one). Returns the loads performed.
    pub fn run(&mut self, loads: u64) -> u64 {
        if self.cursors.is_empty() {
            // SAFETY: `at` is a slot of the chain, which lives in the borrowed region;
            // every slot points at another slot (chain::build wrote all n of them).
            self.at = unsafe { arch::chase::chase(self.at, loads) };
            let done = loads.div_ceil(16).max(1) * 16;
            self.advance(done);
            return done;
        }
        let n = self.cursors.len() as u64;
        let rounds = loads.div_ceil(n).max(1);
        // SAFETY: every cursor is a slot of the chain (spread_slots over the same region,
        // working set and spec as chain::build), and each slot points at another.
        unsafe { arch::chase::chase_parallel(&mut self.cursors, rounds) };
        self.advance(rounds);
        rounds * n
    }

    /// Moves the recorded position `steps` along the cycle.
    fn advance(&mut self, steps: u64) {
        self.position =
            (self.position + steps % self.chain.elements as u64) % self.chain.elements as u64;
    }

    /// Times `out.len()` single dependent loads, writing raw ticks (timer overhead
    /// included) into `out`. The timer closes with `rdtscp`: call it only after
    /// [`crate::access::check_timing`] succeeded.
    pub fn time_each(&mut self, out: &mut [u64]) {
        for t in out.iter_mut() {
            // SAFETY: as in `run`.
            let (next, ticks) = unsafe { arch::chase::timed_load(self.at) };
            self.at = next;
            *t = ticks;
        }
        self.advance(out.len() as u64);
    }
}

/// Ticks of an empty timed interval with the same serialisation as
/// [`Chaser::time_each`] (which times with the access kernels' timestamps): the median of
/// `n` tries is the overhead to subtract.
pub fn single_timing_overhead(n: usize) -> u64 {
    crate::access::timing_overhead(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::Order;

    #[repr(align(64))]
    struct Buf([u8; 1 << 16]);

    #[test]
    fn chasing_visits_the_cycle_and_returns() {
        let mut b = Box::new(Buf([0; 1 << 16]));
        let mut r = Region::from_slice(&mut b.0);
        let spec = ChainSpec {
            order: Order::Random,
            ..ChainSpec::default()
        };
        let mut c = Chaser::build(&mut r, 1 << 16, &spec).unwrap();
        let start = c.at;
        let n = c.elements() as u64; // 1024, a multiple of 16
        c.run(n);
        assert_eq!(c.at, start, "n loads go once around the cycle");
        c.run(16);
        assert_ne!(c.at, start);
        let mut ticks = vec![0u64; 100];
        c.time_each(&mut ticks);
        assert!(ticks.iter().all(|&t| t > 0));
    }

    /// Chains chased side by side start evenly spread over the one cycle from where the
    /// chase stands and follow it: after n / N rounds each cursor stands where the next one
    /// started, for every order; back to one chain, the chase goes on from the first.
    #[test]
    fn parallel_chains_follow_disjoint_stretches_of_the_cycle() {
        for order in [Order::Random, Order::Sequential, Order::RandomInPage] {
            let mut b = Box::new(Buf([0; 1 << 16]));
            let mut r = Region::from_slice(&mut b.0);
            let spec = ChainSpec {
                order,
                ..ChainSpec::default()
            };
            let mut c = Chaser::build(&mut r, 1 << 16, &spec).unwrap();
            let n = c.elements() as u64; // 1024
            c.run(48); // not at the start: the cursors spread from here
            let mut lead = c.at;
            for chains in [2usize, 4, 8, 32] {
                c.set_chains(chains);
                assert_eq!(c.chains(), chains);
                let from = c.cursors.clone();
                assert_eq!(
                    from[0], lead,
                    "{order:?}: the first cursor goes on from the chase"
                );
                let mut distinct = from.clone();
                distinct.sort();
                distinct.dedup();
                assert_eq!(distinct.len(), chains, "{order:?}: cursors apart");
                let step = n / chains as u64;
                assert_eq!(c.run(step * chains as u64), step * chains as u64);
                let mut want = from.clone();
                want.rotate_left(1);
                assert_eq!(c.cursors, want, "{order:?} {chains}");
                lead = c.cursors[0];
            }
            c.set_chains(1);
            assert_eq!((c.chains(), c.at), (1, lead));
            // One chain from the lead: n loads go once around to it.
            assert_eq!(c.run(n), n);
            assert_eq!(c.at, lead);
        }
        let mut ticks = vec![0u64; 1];
        let mut b = Box::new(Buf([0; 1 << 16]));
        let mut r = Region::from_slice(&mut b.0);
        let mut c = Chaser::build(&mut r, 1 << 16, &ChainSpec::default()).unwrap();
        c.time_each(&mut ticks);
        assert!(ticks.iter().all(|&t| t > 0));
        assert!(single_timing_overhead(101) > 0);
    }
}
