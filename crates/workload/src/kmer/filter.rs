//! A register-blocked Bloom filter over k-mer hashes: one 64-bit word per k-mer with 4 bits
//! set, about 16 bits per k-mer in all, so a filter for a million k-mers is 2 MiB and stays
//! in the cache. It answers "certainly absent" for most k-mers of an out-group before any
//! table is touched (false positives, about 1 in 100, go on to the table).
//!
//! [`StrandFilter`] keys it by a rolling hash of the k-mer *as read* (both strands of every
//! k-mer are added), so a sequence is filtered with one multiply per base, whatever k,
//! without packing, reverse-complementing and hashing every canonical k-mer; only the few
//! windows that pass are packed (`Kmer::from_bases`) and looked up.

use super::encode::{BASE_CODE, Kmer};
use pmscope_sys::mman::HugeWords;

/// Bits per k-mer.
const BITS_PER_KMER: u64 = 16;

/// How many hashes the filter's insertion is ahead of setting their words: enough to
/// cover an L3 miss at a few nanoseconds a k-mer.
const AHEAD: usize = 16;

/// A Bloom filter of hashes.
#[derive(Debug, Clone)]
pub struct HashFilter {
    words: HugeWords,
}

impl HashFilter {
    /// A filter sized for `n` hashes, on huge pages where it is large enough for them.
    pub fn with_capacity(n: u64) -> std::io::Result<HashFilter> {
        let words = ((n * BITS_PER_KMER).div_ceil(64)).max(1) as usize;
        Ok(HashFilter {
            words: HugeWords::zeroed(words)?,
        })
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
        self.has(w, m)
    }

    /// Whether word `w` has every bit of `m` set.
    #[inline(always)]
    fn has(&self, w: usize, m: u64) -> bool {
        self.words[w] & m == m
    }

    /// Bytes used.
    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }
}

/// The base of the polynomial rolling hash (odd, so multiplying by it is invertible).
pub(crate) const POLY: u64 = 0xA076_1D64_78BD_642F;

/// Spreads a polynomial value (whose low bits depend on few bases) over all 64 bits.
#[inline(always)]
pub(crate) fn poly_mix(h: u64) -> u64 {
    let h = (h ^ (h >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^ (h >> 32)
}

/// A Bloom filter of k-mers keyed by a rolling polynomial hash of the bases as read,
/// `Σ (code_j + 1) · POLY^(k-1-j) mod 2^64`, mixed. Both strands of every k-mer are added,
/// so a window of a sequence may hold a k-mer of the filter only if its own strand's hash
/// is in it: no false negatives, whichever strand the k-mer was stored as.
#[derive(Debug, Clone)]
pub struct StrandFilter {
    k: usize,
    /// `(code + 1) · POLY^k` per code: what a base leaving the window takes out.
    leaving: [u64; 4],
    /// The polynomial of the 4 bases of each packed byte, and `POLY^4`: a packed k-mer's
    /// value is computed a byte at a time.
    bytes: Box<[u64; 256]>,
    poly4: u64,
    filter: HashFilter,
}

impl StrandFilter {
    /// A filter for about `n` k-mers of length `k` (room for both strands of each).
    pub fn with_capacity(k: usize, n: u64) -> std::io::Result<StrandFilter> {
        let pk = POLY.wrapping_pow(k as u32);
        let mut bytes = Box::new([0u64; 256]);
        for (b, v) in bytes.iter_mut().enumerate() {
            *v = (0..4).fold(0u64, |h, m| {
                h.wrapping_mul(POLY)
                    .wrapping_add(((b as u64) >> (6 - 2 * m)) & 3)
                    .wrapping_add(1)
            });
        }
        Ok(StrandFilter {
            k,
            leaving: [1, 2, 3, 4].map(|c: u64| c.wrapping_mul(pk)),
            bytes,
            poly4: POLY.wrapping_pow(4),
            filter: HashFilter::with_capacity(2 * n)?,
        })
    }

    /// The filter's hash of a polynomial value.
    #[inline(always)]
    fn mix(h: u64) -> u64 {
        poly_mix(h)
    }

    /// The polynomial value of `kmer` (length k) read as stored: the first k mod 4 bases
    /// one at a time, then the rest a packed byte (4 bases, byte-aligned because the last
    /// base is bit 0) at a time.
    fn poly_of<const W: usize>(&self, kmer: &Kmer<W>) -> u64 {
        let k = self.k;
        let lead = k % 4;
        let mut h = (0..lead).fold(0u64, |h, i| {
            h.wrapping_mul(POLY)
                .wrapping_add(u64::from(kmer.base(i, k)) + 1)
        });
        for j in (0..(k - lead) / 4).rev() {
            let bit = 8 * j;
            let byte = (kmer.0[bit / 64] >> (bit % 64)) & 0xff;
            h = h
                .wrapping_mul(self.poly4)
                .wrapping_add(self.bytes[byte as usize]);
        }
        h
    }

    /// Adds `kmer` (either strand; both are added).
    pub fn insert<const W: usize>(&mut self, kmer: &Kmer<W>) {
        self.insert_all([kmer]);
    }

    /// Adds every k-mer of `kmers` (both strands of each). Each strand's word is prefetched
    /// when it is hashed and set [`AHEAD`] strands later, so the misses of a filter larger
    /// than the L2 overlap (as the scan's do in [`Self::for_each_candidate`]).
    pub fn insert_all<'a, const W: usize>(&mut self, kmers: impl IntoIterator<Item = &'a Kmer<W>>) {
        let mut ring = [(0usize, 0u64); AHEAD];
        let mut pending = 0usize;
        for kmer in kmers {
            let rc = kmer.reverse_complement(self.k);
            for strand in [kmer, &rc] {
                let (word, mask) = self.filter.locate(Self::mix(self.poly_of(strand)));
                pmscope_sys::prefetch::prefetch(&self.filter.words[word]);
                let slot = &mut ring[pending % AHEAD];
                if pending >= AHEAD {
                    self.filter.words[slot.0] |= slot.1;
                }
                *slot = (word, mask);
                pending += 1;
            }
        }
        for n in pending.saturating_sub(AHEAD)..pending {
            let (word, mask) = ring[n % AHEAD];
            self.filter.words[word] |= mask;
        }
    }

    /// Calls `f(start)` for every window of k bases of `seq` made of A, C, G, T only that
    /// may hold a k-mer of the filter (on either strand); `start` is its first base, and
    /// the calls come in the order of the windows. Returns the number of such windows (the
    /// k-mers of `seq`).
    #[inline(always)]
    pub fn for_each_candidate(&self, seq: &[u8], mut f: impl FnMut(usize)) -> u64 {
        // Two passes over blocks of windows. The first hashes each window (one multiply
        // per base) and prefetches its filter word: at an intersection of millions of
        // k-mers the filter is megabytes, beyond the L2, and tested as it was hashed every
        // window waited for its miss (70 % of an out-group scan on the Ice Lake guest,
        // 2026-11-30). The second tests the block's words, which have arrived by then.
        // (A ring of 16 words in flight, tested as the scan went on, was as fast; the scan
        // is now bound by the misses in flight: the instruction after the prefetch took a
        // quarter of the samples of the out-group step on that guest.)
        let k = self.k;
        let mut block = [(0usize, 0usize, 0u64); BLOCK];
        let (mut h, mut run) = (0u64, 0usize);
        let (mut i, mut windows) = (0usize, 0u64);
        while i < seq.len() {
            let mut n = 0;
            while i < seq.len() && n < BLOCK {
                let code = BASE_CODE[seq[i] as usize];
                i += 1;
                if code > 3 {
                    (h, run) = (0, 0);
                    continue;
                }
                h = h.wrapping_mul(POLY).wrapping_add(u64::from(code) + 1);
                run += 1;
                if run > k {
                    h = h.wrapping_sub(self.leaving[BASE_CODE[seq[i - 1 - k] as usize] as usize]);
                }
                if run >= k {
                    let (word, mask) = self.filter.locate(Self::mix(h));
                    pmscope_sys::prefetch::prefetch(&self.filter.words[word]);
                    block[n] = (i - k, word, mask);
                    n += 1;
                }
            }
            windows += n as u64;
            for &(start, word, mask) in &block[..n] {
                if self.filter.has(word, mask) {
                    f(start);
                }
            }
        }
        windows
    }
}

/// Windows a scan hashes (and prefetches the filter words of) before it tests them: the
/// words of a block stay in the L1 (48 KiB, 768 lines, on Ice Lake; 32 KiB on Zen) until
/// they are tested, and the first of them has arrived by the time the block is hashed.
const BLOCK: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn never_forgets_and_rarely_errs() {
        let n = 100_000u64;
        let mut f = HashFilter::with_capacity(n).unwrap();
        for i in 0..n {
            f.insert(Kmer::<1>([i]).hash());
        }
        assert!((0..n).all(|i| f.may_contain(Kmer::<1>([i]).hash())));
        let false_positives = (n..2 * n)
            .filter(|&i| f.may_contain(Kmer::<1>([i]).hash()))
            .count();
        assert!(false_positives < (n / 50) as usize, "{false_positives}");
    }

    /// Every window whose canonical k-mer was added is a candidate (no false negatives),
    /// for one-word to four-word k, with N's and lower case in the sequence; and the
    /// filter lets few other windows through.
    fn check_strands<const W: usize>(seq: &[u8], k: usize, every: usize) {
        use crate::kmer::encode::for_each_kmer;
        let mut all = Vec::new();
        for_each_kmer::<W>(seq, k, |start, x, _| all.push((start, *x)));
        let mut f = StrandFilter::with_capacity(k, all.len() as u64).unwrap();
        let added: std::collections::HashSet<Kmer<W>> =
            all.iter().step_by(every).map(|(_, x)| *x).collect();
        for x in &added {
            f.insert(x);
        }
        // All at once (each word set AHEAD strands after it is hashed), the same filter.
        let mut g = StrandFilter::with_capacity(k, all.len() as u64).unwrap();
        g.insert_all(&added);
        assert_eq!(
            f.filter.words[..],
            g.filter.words[..],
            "k = {k}: insert_all differs"
        );
        let mut order = Vec::new();
        f.for_each_candidate(seq, |start| order.push(start));
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "k = {k}: candidates out of order or repeated: {order:?}"
        );
        let got: std::collections::HashSet<usize> = order.into_iter().collect();
        for (start, x) in &all {
            if added.contains(x) {
                assert!(got.contains(start), "k = {k}: window {start} missed");
            }
        }
        for start in &got {
            let w = Kmer::<W>::from_bases(&seq[*start..*start + k]);
            assert!(w.is_some(), "k = {k}: window {start} has a non-ACGT base");
        }
    }

    proptest! {
        #[test]
        fn strand_filter_never_misses_a_kmer_on_either_strand(
            seq in prop::collection::vec(prop::sample::select(b"ACGTACGTacgtN".to_vec()), 0..600),
            k in 1usize..=128,
            every in 1usize..4,
        ) {
            match crate::kmer::encode::words_for(k) {
                1 => check_strands::<1>(&seq, k, every),
                2 => check_strands::<2>(&seq, k, every),
                3 => check_strands::<3>(&seq, k, every),
                _ => check_strands::<4>(&seq, k, every),
            }
        }
    }

    proptest! {
        #[test]
        fn packed_polynomial_equals_the_base_by_base_one(
            seq in prop::collection::vec(prop::sample::select(b"ACGT".to_vec()), 1..=128)
        ) {
            let k = seq.len();
            let x = Kmer::<4>::from_bases(&seq).unwrap();
            let want = seq.iter().fold(0u64, |h, &b| {
                h.wrapping_mul(POLY).wrapping_add(u64::from(BASE_CODE[b as usize]) + 1)
            });
            prop_assert_eq!(StrandFilter::with_capacity(k, 1).unwrap().poly_of(&x), want);
        }
    }

    fn false_positives<const W: usize>(seq: &[u8], k: usize) -> usize {
        let mut f = StrandFilter::with_capacity(k, 50_000).unwrap();
        let mut n = 0;
        crate::kmer::encode::for_each_kmer::<W>(&seq[..50_000 + k - 1], k, |_, x, _| {
            f.insert(x);
            n += 1;
        });
        assert_eq!(n, 50_000);
        // The rest of the sequence shares (almost) no k-mer with the first part.
        let mut passed = 0usize;
        f.for_each_candidate(&seq[60_000..], |_| passed += 1);
        passed
    }

    #[test]
    fn strand_filter_rarely_errs() {
        let seq = crate::kmer::synth::random_bases(200_000, 7);
        for (k, passed) in [
            (21, false_positives::<1>(&seq, 21)),
            (31, false_positives::<1>(&seq, 31)),
            (100, false_positives::<4>(&seq, 100)),
        ] {
            assert!(passed < 140_000 / 50, "k = {k}: {passed} false positives");
        }
    }
}
