//! A small, fast, seedable generator (SplitMix64) for chains and random address lists, so
//! a run can be repeated exactly from its recorded seed.

/// SplitMix64 (Steele, Lea, Flood 2014): one 64-bit state, passes BigCrush.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (Lemire's multiply-shift; bias below 2^-32 for the sizes
    /// used here).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Shuffles a slice uniformly (Fisher-Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// A pseudo-random permutation of `0..n` computed one index at a time, with no table: a
/// four-round Feistel network on the smallest even number of bits that holds `n`, its
/// round function SplitMix64's finaliser keyed from the seed, and cycle walking (apply
/// again while the result is `n` or more) to stay below `n`, which takes under two rounds
/// on average since the domain is less than four times `n`. A random chain over a 1 GiB
/// working set (16 Mi elements) needs no 64 MiB table shuffled by 16 Mi cache-missing
/// swaps: building it took 2 s that way, a share of every block of every point.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `0..n` from a seed.
    pub fn new(n: u64, seed: u64) -> Permutation {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        let half = bits.div_ceil(2);
        let mut rng = SplitMix64::new(seed);
        Permutation {
            n,
            half,
            mask: (1u64 << half) - 1,
            keys: [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ],
        }
    }

    #[inline(always)]
    fn round(&self, x: u64, key: u64) -> u64 {
        let mut z = x ^ key;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) & self.mask
    }

    #[inline(always)]
    fn feistel(&self, i: u64) -> u64 {
        let (mut l, mut r) = (i >> self.half, i & self.mask);
        for &k in &self.keys {
            let next = l ^ self.round(r, k);
            l = r;
            r = next;
        }
        (l << self.half) | r
    }

    /// The image of `i` (which must be below `n`).
    #[inline(always)]
    pub fn at(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        let mut x = self.feistel(i);
        while x >= self.n {
            x = self.feistel(x);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
            assert_eq!(a.below(10), b.below(10));
            assert!(a.below(10) < 10 && b.below(10) < 10);
        }
        let mut v: Vec<u32> = (0..100).collect();
        a.shuffle(&mut v);
        let mut s = v.clone();
        s.sort();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
        assert_ne!(v, s);
    }

    /// Every size, from the smallest: each of 0..n exactly once, and not the identity.
    #[test]
    fn the_permutation_takes_every_index_once() {
        for n in [1u64, 2, 3, 5, 64, 1000, 4096, 65_537] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.at(i) as usize;
                assert!(!seen[x], "n={n}: {x} twice");
                seen[x] = true;
            }
            if n >= 1000 {
                assert!((0..n).filter(|&i| p.at(i) == i).count() < 8, "n={n}");
                // Consecutive indexes land far apart, as a shuffle's would (a random
                // permutation puts about 7 of them within 4 of each other).
                let close = (0..n - 1)
                    .filter(|&i| p.at(i).abs_diff(p.at(i + 1)) < 4)
                    .count();
                assert!(close * 50 < n as usize, "n={n}: {close} near neighbours");
            }
        }
    }
}
