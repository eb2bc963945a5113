//! A register-blocked Bloom filter over k-mer hashes: one 64-bit word per k-mer with 4 bits
//! set, about 16 bits per k-mer in all, so a filter for a million k-mers is 2 MiB and stays
//! in the cache. It answers "certainly absent" for most k-mers of an out-group before any
//! table is touched (false positives, about 1 in 100, go on to the table).

/// Bits per k-mer.
const BITS_PER_KMER: u64 = 16;

/// A Bloom filter of hashes.
#[derive(Debug, Clone)]
pub struct HashFilter {
    words: Vec<u64>,
}

impl HashFilter {
    /// A filter sized for `n` hashes.
    pub fn with_capacity(n: u64) -> HashFilter {
        let words = ((n * BITS_PER_KMER).div_ceil(64)).max(1) as usize;
        HashFilter {
            words: vec![0; words],
        }
    }

    /// The word and the 4-bit mask of a hash. The table places k-mers by the hash's high
    /// bits; the filter uses its low 56 bits, so the two stay independent.
    #[inline(always)]
    fn locate(&self, hash: u64) -> (usize, u64) {
        let word = ((hash as u32 as u64 * self.words.len() as u64) >> 32) as usize;
        let b = hash >> 32;
        let mask = (1u64 << (b & 63))
            | (1u64 << ((b >> 6) & 63))
            | (1u64 << ((b >> 12) & 63))
            | (1u64 << ((b >> 18) & 63));
        (word, mask)
    }

    /// Adds a hash.
    pub fn insert(&mut self, hash: u64) {
        let (w, m) = self.locate(hash);
        self.words[w] |= m;
    }

    /// False if the hash was certainly never added.
    #[inline(always)]
    pub fn may_contain(&self, hash: u64) -> bool {
        let (w, m) = self.locate(hash);
        self.words[w] & m == m
    }

    /// Bytes used.
    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmer::encode::Kmer;

    #[test]
    fn never_forgets_and_rarely_errs() {
        let n = 100_000u64;
        let mut f = HashFilter::with_capacity(n);
        for i in 0..n {
            f.insert(Kmer::<1>([i]).hash());
        }
        assert!((0..n).all(|i| f.may_contain(Kmer::<1>([i]).hash())));
        let false_positives = (n..2 * n)
            .filter(|&i| f.may_contain(Kmer::<1>([i]).hash()))
            .count();
        assert!(false_positives < (n / 50) as usize, "{false_positives}");
    }
}
