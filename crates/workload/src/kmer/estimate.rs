//! An estimate of the distinct k-mers of a set of genomes before any table exists
//! (HyperLogLog, Flajolet et al. 2007, with 2^14 registers: about 1 % standard error), so
//! the table is mapped once at the right size instead of growing and rehashing.
//!
//! Beyond k = 32 the sketch hashes k-mers with [`CanonicalPoly`], a rolling polynomial
//! hash of both strands (two multiplies per base, whatever k), not with the table's hash
//! of the packed canonical k-mer: it needs only a hash that is the same for a k-mer and
//! its reverse complement, and at k = 100 packing and hashing four words per k-mer cost
//! three times as much.

use super::encode::{BASE_CODE, for_each_kmer};
use super::filter::{POLY, poly_mix};
use super::read::Genome;

/// `POLY`⁻¹ mod 2^64 (Newton's iteration doubles the correct low bits each step).
const POLY_INV: u64 = {
    let mut inv = POLY;
    let mut i = 0;
    while i < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(POLY.wrapping_mul(inv)));
        i += 1;
    }
    inv
};

/// A strand-independent hash of every k-mer of a sequence, rolled one base at a time:
/// `min(F, R)` mixed, where F is the polynomial `Σ (code_j + 1) · POLY^(k-1-j)` of the
/// window as read and R that of its reverse complement.
pub struct CanonicalPoly {
    k: usize,
    /// `POLY^i` for i = 0..k.
    powers: Vec<u64>,
}

impl CanonicalPoly {
    /// The hash for k-mers of length `k` (1..=128).
    pub fn new(k: usize) -> CanonicalPoly {
        let mut powers = vec![1u64; k + 1];
        for i in 1..=k {
            powers[i] = powers[i - 1].wrapping_mul(POLY);
        }
        CanonicalPoly { k, powers }
    }

    /// Calls `f(start, hash)` for every k-mer of A, C, G, T only in `seq`, in order.
    #[inline(always)]
    pub fn for_each(&self, seq: &[u8], mut f: impl FnMut(usize, u64)) {
        let k = self.k;
        let (pk, top) = (self.powers[k], self.powers[k - 1]);
        let (mut fwd, mut rev, mut run) = (0u64, 0u64, 0usize);
        for (i, &b) in seq.iter().enumerate() {
            let c = BASE_CODE[b as usize];
            if c > 3 {
                (fwd, rev, run) = (0, 0, 0);
                continue;
            }
            let (c, comp) = (u64::from(c) + 1, 4 - u64::from(c));
            fwd = fwd.wrapping_mul(POLY).wrapping_add(c);
            if run < k {
                rev = rev.wrapping_add(comp.wrapping_mul(self.powers[run]));
            } else {
                let out = u64::from(BASE_CODE[seq[i - k] as usize]);
                fwd = fwd.wrapping_sub((out + 1).wrapping_mul(pk));
                rev = rev
                    .wrapping_sub(3 - out + 1)
                    .wrapping_mul(POLY_INV)
                    .wrapping_add(comp.wrapping_mul(top));
            }
            run += 1;
            if run >= k {
                f(i + 1 - k, poly_mix(fwd.min(rev)));
            }
        }
    }
}

const P: u32 = 14;
const M: usize = 1 << P;

/// A HyperLogLog sketch of k-mer hashes; sketches of several genomes merge into the
/// sketch of their union.
#[derive(Clone, Debug)]
pub struct DistinctSketch {
    registers: Vec<u8>,
}

impl Default for DistinctSketch {
    fn default() -> Self {
        DistinctSketch {
            registers: vec![0; M],
        }
    }
}

impl DistinctSketch {
    /// Adds one hash.
    #[inline(always)]
    pub fn add(&mut self, hash: u64) {
        let index = (hash >> (64 - P)) as usize;
        let rest = (hash << P) | (1 << (P - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        let r = &mut self.registers[index];
        if rank > *r {
            *r = rank;
        }
    }

    /// The sketch of a genome's canonical k-mers.
    /// The sketch of a genome's canonical k-mers: hashed as the table hashes them for
    /// one-word k-mers (k ≤ 32, which roll in a few instructions), with [`CanonicalPoly`]
    /// for longer ones.
    pub fn of_genome<const W: usize>(genome: &Genome, k: usize) -> DistinctSketch {
        let mut s = DistinctSketch::default();
        if W == 1 {
            for c in &genome.contigs {
                for_each_kmer::<W>(genome.contig_seq(c), k, |_, kmer, _| s.add(kmer.hash()));
            }
            return s;
        }
        let hash = CanonicalPoly::new(k);
        for c in &genome.contigs {
            hash.for_each(genome.contig_seq(c), |_, h| s.add(h));
        }
        s
    }

    /// Merges `other` in: the sketch of the union.
    pub fn merge(&mut self, other: &DistinctSketch) {
        for (a, b) in self.registers.iter_mut().zip(&other.registers) {
            *a = (*a).max(*b);
        }
    }

    /// The estimated number of distinct hashes added.
    pub fn estimate(&self) -> f64 {
        let m = M as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self.registers.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let raw = alpha * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            // Small range: linear counting is exact-er.
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmer::encode::{Kmer, words_for};
    use proptest::prelude::*;

    fn poly(x: &Kmer<4>, k: usize) -> u64 {
        (0..k).fold(0u64, |h, i| {
            h.wrapping_mul(POLY)
                .wrapping_add(u64::from(x.base(i, k)) + 1)
        })
    }

    proptest! {
        /// The rolled hash of every window is that of its canonical k-mer computed afresh
        /// (so a k-mer and its reverse complement hash alike), at every window for_each_kmer
        /// yields.
        #[test]
        fn rolled_canonical_hash_equals_the_fresh_one(
            seq in prop::collection::vec(prop::sample::select(b"ACGTacgtN".to_vec()), 0..400),
            k in 1usize..=128,
        ) {
            let mut got = Vec::new();
            CanonicalPoly::new(k).for_each(&seq, |start, h| got.push((start, h)));
            let mut want = Vec::new();
            for start in 0..(seq.len() + 1).saturating_sub(k) {
                let Some(x) = Kmer::<4>::from_bases(&seq[start..start + k]) else {
                    continue;
                };
                let rc = x.reverse_complement(k);
                prop_assert_eq!(poly_mix(poly(&x, k).min(poly(&rc, k))),
                    poly_mix(poly(&rc, k).min(poly(&x, k))));
                want.push((start, poly_mix(poly(&x, k).min(poly(&rc, k)))));
            }
            prop_assert_eq!(&got, &want);
            let mut windows = 0;
            match words_for(k) {
                1 => for_each_kmer::<1>(&seq, k, |_, _, _| windows += 1),
                2 => for_each_kmer::<2>(&seq, k, |_, _, _| windows += 1),
                3 => for_each_kmer::<3>(&seq, k, |_, _, _| windows += 1),
                _ => for_each_kmer::<4>(&seq, k, |_, _, _| windows += 1),
            }
            prop_assert_eq!(got.len(), windows);
        }
    }

    #[test]
    fn estimates_a_genome_within_a_few_percent() {
        let seq = crate::kmer::synth::random_bases(400_000, 11);
        for k in [21, 31, 100] {
            let g = Genome::from_records("g", &[("a", &seq), ("b", &seq[1000..5000])], k);
            let e = match words_for(k) {
                1 => DistinctSketch::of_genome::<1>(&g, k),
                _ => DistinctSketch::of_genome::<4>(&g, k),
            }
            .estimate();
            let n = (seq.len() + 1 - k) as f64;
            assert!((e - n).abs() / n < 0.04, "k = {k}: {e} for {n}");
        }
    }

    #[test]
    fn estimates_within_a_few_percent() {
        for n in [100u64, 10_000, 1_000_000] {
            let mut s = DistinctSketch::default();
            let mut t = DistinctSketch::default();
            for i in 0..n {
                let h = crate::kmer::encode::Kmer::<1>([i]).hash();
                if i % 2 == 0 {
                    s.add(h)
                } else {
                    t.add(h)
                }
                s.add(h);
            }
            s.merge(&t);
            let e = s.estimate();
            assert!((e - n as f64).abs() / (n as f64) < 0.04, "{n}: {e}");
        }
    }
}
