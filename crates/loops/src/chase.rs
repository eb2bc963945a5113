//! Chasing a chain: many loads timed together (the mean latency, as multichase and MLC
//! report it) or one load at a time (the distribution, which they do not).
#![allow(unsafe_code)]

use crate::Region;
use crate::arch;
use crate::chain::{self, Chain, ChainError, ChainSpec};

/// A chain built in a region, with the position reached so far. Holding the region borrow
/// keeps the memory alive and unmodified while the chain is followed.
pub struct Chaser<'r, 'a> {
    _region: &'r mut Region<'a>,
    chain: Chain,
    at: *const usize,
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
            _region: region,
            at: chain.start,
            chain,
            warmed: false,
        })
    }

    /// The first time it is called on this chain: `loads` dependent loads, at most once
    /// around the cycle, so that the caches hold what they hold in steady state instead of
    /// what building the chain left; later calls do nothing (the chain stays warm between
    /// the points measured on it).
    pub fn warm_up(&mut self, loads: u64) {
        if !self.warmed {
            self.run(loads.min(self.chain.elements as u64));
            self.warmed = true;
        }
    }

    /// Elements in the cycle.
    pub fn elements(&self) -> usize {
        self.chain.elements
    }

    /// Performs `loads` dependent loads (rounded up to a multiple of 16).
    pub fn run(&mut self, loads: u64) {
        // SAFETY: `at` is a slot of the chain, which lives in the borrowed region; every
        // slot points at another slot (chain::build wrote all n of them).
        self.at = unsafe { arch::chase::chase(self.at, loads) };
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
        assert!(single_timing_overhead(101) > 0);
    }
}
