//! An estimate of the distinct k-mers of a set of genomes before any table exists
//! (HyperLogLog, Flajolet et al. 2007, with 2^14 registers: about 1 % standard error), so
//! the table is mapped once at the right size instead of growing and rehashing.

use super::encode::for_each_kmer;
use super::read::Genome;

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
    pub fn of_genome<const W: usize>(genome: &Genome, k: usize) -> DistinctSketch {
        let mut s = DistinctSketch::default();
        for c in &genome.contigs {
            for_each_kmer::<W>(genome.contig_seq(c), k, |_, kmer, _| s.add(kmer.hash()));
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
