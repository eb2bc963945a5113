//! K-mers as 2-bit packed integers, their reverse complement and canonical form, and the
//! rolling update that turns a sequence into k-mers with a few shifts per base.
//!
//! ```text
//!  k-mer  b0 b1 ... b(k-1)          A=00 C=01 G=10 T=11 (the order KMC and Jellyfish use)
//!  value  b0·4^(k-1) + ... + b(k-1)  little-endian words: word 0 holds the last 32 bases
//!
//!  word W-1 (top, partly used)        ...        word 0
//!  [ 0 0 .. b0 b1 .. ][ ............................ b(k-1) ]
//! ```
//!
//! Because b0 is the most significant base, comparing values compares strings
//! lexicographically, so the canonical k-mer (the smaller of a k-mer and its reverse
//! complement) is the one KMC and Jellyfish report. `W` = ⌈2k/64⌉ words: 1 up to k = 32,
//! 4 up to [`MAX_K`] = 128.

use std::cmp::Ordering;

/// The largest k supported (4 words of 64 bits).
pub const MAX_K: usize = 128;

/// Words of 64 bits needed for a k-mer of length `k`.
pub const fn words_for(k: usize) -> usize {
    (2 * k).div_ceil(64)
}

/// Code of a base that is not A, C, G or T but a valid IUPAC code or gap: the k-mers
/// containing it are skipped (and counted), as KMC and Jellyfish skip them.
pub const AMBIGUOUS: u8 = 4;
/// Code of a byte that is no nucleotide at all: the input is malformed.
pub const INVALID: u8 = 5;

/// The 2-bit code of every input byte (either case); [`AMBIGUOUS`] or [`INVALID`] otherwise.
pub static BASE_CODE: [u8; 256] = base_codes();

const fn base_codes() -> [u8; 256] {
    let mut t = [INVALID; 256];
    let ambiguous = b"NRYSWKMBDHVU-.";
    let mut i = 0;
    while i < ambiguous.len() {
        t[ambiguous[i] as usize] = AMBIGUOUS;
        t[ambiguous[i].to_ascii_lowercase() as usize] = AMBIGUOUS;
        i += 1;
    }
    let bases = b"ACGT";
    let mut c = 0;
    while c < 4 {
        t[bases[c] as usize] = c as u8;
        t[bases[c].to_ascii_lowercase() as usize] = c as u8;
        c += 1;
    }
    t
}

/// A k-mer of up to 32·W bases, 2 bits per base, word 0 least significant. The length k
/// is not stored: every function that needs it takes it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Kmer<const W: usize>(pub [u64; W]);

impl<const W: usize> Ord for Kmer<W> {
    fn cmp(&self, other: &Self) -> Ordering {
        for i in (0..W).rev() {
            match self.0[i].cmp(&other.0[i]) {
                Ordering::Equal => continue,
                o => return o,
            }
        }
        Ordering::Equal
    }
}

impl<const W: usize> PartialOrd for Kmer<W> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<const W: usize> Kmer<W> {
    /// The k-mer of `k` A's.
    pub const ZERO: Kmer<W> = Kmer([0; W]);

    /// Packs `bases` (A, C, G, T in either case) afresh; `None` if any other byte occurs or
    /// there are more than 32·W of them.
    pub fn from_bases(bases: &[u8]) -> Option<Kmer<W>> {
        if bases.len() > 32 * W {
            return None;
        }
        let mut k = Kmer::ZERO;
        for &b in bases {
            let c = BASE_CODE[b as usize];
            if c > 3 {
                return None;
            }
            k.shift_in(c);
        }
        Some(k)
    }

    /// Shifts one base in at the end (value·4 + code); the caller masks to k bases.
    #[inline(always)]
    fn shift_in(&mut self, code: u8) {
        for i in (1..W).rev() {
            self.0[i] = (self.0[i] << 2) | (self.0[i - 1] >> 62);
        }
        self.0[0] = (self.0[0] << 2) | code as u64;
    }

    /// The code (0..4) of base `i` (0 = first) of this k-mer of length `k`.
    pub fn base(&self, i: usize, k: usize) -> u8 {
        let bit = 2 * (k - 1 - i);
        ((self.0[bit / 64] >> (bit % 64)) & 3) as u8
    }

    /// The bases as ASCII (A, C, G, T), appended to `out`.
    pub fn write_ascii(&self, k: usize, out: &mut Vec<u8>) {
        out.extend((0..k).map(|i| b"ACGT"[self.base(i, k) as usize]));
    }

    /// The bases as a string.
    pub fn to_string(&self, k: usize) -> String {
        let mut v = Vec::with_capacity(k);
        self.write_ascii(k, &mut v);
        String::from_utf8(v).expect("ASCII")
    }

    /// The reverse complement: the other strand read in its own 5'→3' direction.
    pub fn reverse_complement(&self, k: usize) -> Kmer<W> {
        // Complement is 3 - code = code XOR 3; reversing 2-bit groups over all 64·W bits
        // then shifting right by the unused bits puts base k-1 first.
        let mut r = [0u64; W];
        for (i, w) in self.0.iter().enumerate() {
            let x = w.reverse_bits();
            // reverse_bits also swapped the two bits inside each base: swap them back.
            let x = ((x >> 1) & 0x5555_5555_5555_5555) | ((x & 0x5555_5555_5555_5555) << 1);
            r[W - 1 - i] = !x;
        }
        let unused = 64 * W - 2 * k;
        let mut out = Kmer(r);
        out.shift_right(unused);
        out.mask(k);
        out
    }

    fn shift_right(&mut self, bits: usize) {
        let (words, rest) = (bits / 64, bits % 64);
        for i in 0..W {
            let lo = self.0.get(i + words).copied().unwrap_or(0);
            let hi = self.0.get(i + words + 1).copied().unwrap_or(0);
            self.0[i] = if rest == 0 {
                lo
            } else {
                (lo >> rest) | (hi << (64 - rest))
            };
        }
    }

    /// Clears every bit above the 2k used ones.
    fn mask(&mut self, k: usize) {
        for (i, w) in self.0.iter_mut().enumerate() {
            let lo = 64 * i;
            if 2 * k <= lo {
                *w = 0;
            } else if 2 * k < lo + 64 {
                *w &= (1u64 << (2 * k - lo)) - 1;
            }
        }
    }

    /// The smaller of the k-mer and its reverse complement.
    pub fn canonical(&self, k: usize) -> Kmer<W> {
        (*self).min(self.reverse_complement(k))
    }

    /// A 64-bit hash with every bit depending on every base, for table indices (its high
    /// bits) and the distinct-count estimate. Each word is multiplied by its own odd
    /// constant, independently (so the multiplies of a 4-word k-mer run in parallel), and
    /// the combination is finished with the splitmix64 mixer.
    #[inline(always)]
    pub fn hash(&self) -> u64 {
        const C: [u64; 4] = [
            0x9E37_79B9_7F4A_7C15,
            0xC2B2_AE3D_27D4_EB4F,
            0x1656_67B1_9E37_79F9,
            0xD6E8_FEB8_6659_FD93,
        ];
        let mut h: u64 = 0x2545_F491_4F6C_DD1D;
        for (i, &w) in self.0.iter().enumerate() {
            h ^= (w ^ (i as u64).wrapping_mul(0xFF51_AFD7_ED55_8CCD)).wrapping_mul(C[i % 4]);
        }
        h ^= h >> 31;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 29;
        h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
        h ^ (h >> 32)
    }
}

/// The rolling window over a sequence: each base updates the forward k-mer (shift left,
/// add the base) and its reverse complement (shift right, add the complement on top), so a
/// k-mer costs a few shifts instead of a re-pack of k bases.
#[derive(Clone, Debug)]
pub struct Roller<const W: usize> {
    k: usize,
    forward: Kmer<W>,
    reverse: Kmer<W>,
    filled: usize,
    top_mask: u64,
    /// Where the complement of a new base enters the reverse strand: base k-1, always in
    /// the top word (2(k-1) ≥ 64(W-1) because W = ⌈2k/64⌉).
    rc_shift: u32,
}

impl<const W: usize> Roller<W> {
    /// A roller for k-mers of length `k` (1 ≤ k ≤ 32·W).
    pub fn new(k: usize) -> Roller<W> {
        assert!(k >= 1 && k <= 32 * W, "k = {k} does not fit in {W} words");
        let top_bits = 2 * k - 64 * (W - 1);
        let top = 2 * (k - 1);
        debug_assert_eq!(top / 64, W - 1);
        Roller {
            k,
            forward: Kmer::ZERO,
            reverse: Kmer::ZERO,
            filled: 0,
            top_mask: if top_bits == 64 {
                u64::MAX
            } else {
                (1u64 << top_bits) - 1
            },
            rc_shift: (top % 64) as u32,
        }
    }

    /// Forgets the window (after an ambiguous base or at a record boundary).
    #[inline(always)]
    pub fn reset(&mut self) {
        self.filled = 0;
    }

    /// Adds one base (code 0..4); returns whether the window now holds k bases.
    #[inline(always)]
    pub fn push(&mut self, code: u8) -> bool {
        debug_assert!(code < 4);
        self.forward.shift_in(code);
        self.forward.0[W - 1] &= self.top_mask;
        for i in 0..W - 1 {
            self.reverse.0[i] = (self.reverse.0[i] >> 2) | (self.reverse.0[i + 1] << 62);
        }
        self.reverse.0[W - 1] >>= 2;
        self.reverse.0[W - 1] |= ((3 - code) as u64) << self.rc_shift;
        self.filled += 1;
        self.filled >= self.k
    }

    /// The window as read.
    pub fn forward(&self) -> Kmer<W> {
        self.forward
    }

    /// The window's reverse complement.
    pub fn reverse(&self) -> Kmer<W> {
        self.reverse
    }

    /// The canonical k-mer of the window and whether it is the forward one.
    #[inline(always)]
    pub fn canonical(&self) -> (Kmer<W>, bool) {
        // Branch-free: which strand is smaller is a coin toss the predictor cannot learn.
        let mut reverse_smaller = false;
        for i in 0..W {
            let (r, f) = (self.reverse.0[i], self.forward.0[i]);
            reverse_smaller = (r < f) | ((r == f) & reverse_smaller);
        }
        let mut out = Kmer::ZERO;
        for i in 0..W {
            out.0[i] = if reverse_smaller {
                self.reverse.0[i]
            } else {
                self.forward.0[i]
            };
        }
        (out, !reverse_smaller)
    }
}

/// Calls `f(start, canonical, is_forward)` for every k-mer of `seq` made of A, C, G, T
/// only, in order; `start` is the index of its first base in `seq`.
#[inline(always)]
pub fn for_each_kmer<const W: usize>(
    seq: &[u8],
    k: usize,
    mut f: impl FnMut(usize, &Kmer<W>, bool),
) {
    let mut roller = Roller::<W>::new(k);
    for (i, &b) in seq.iter().enumerate() {
        let code = BASE_CODE[b as usize];
        if code > 3 {
            roller.reset();
            continue;
        }
        if roller.push(code) {
            let (kmer, forward) = roller.canonical();
            f(i + 1 - k, &kmer, forward);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dna(max: usize) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"ACGTacgtN".to_vec()), 0..max)
    }

    fn check_roll<const W: usize>(seq: &[u8], k: usize) {
        let mut got = Vec::new();
        for_each_kmer::<W>(seq, k, |start, kmer, fwd| got.push((start, *kmer, fwd)));
        let mut want = Vec::new();
        for start in 0..seq.len().saturating_sub(k - 1) {
            let Some(f) = Kmer::<W>::from_bases(&seq[start..start + k]) else {
                continue;
            };
            let c = f.canonical(k);
            want.push((start, c, c == f));
        }
        assert_eq!(got, want);
    }

    proptest! {
        #[test]
        fn rolling_update_equals_fresh_packing(seq in dna(300), k in 1usize..=128) {
            match words_for(k) {
                1 => check_roll::<1>(&seq, k),
                2 => check_roll::<2>(&seq, k),
                3 => check_roll::<3>(&seq, k),
                _ => check_roll::<4>(&seq, k),
            }
        }

        #[test]
        fn reverse_complement_and_canonical_are_involutions(
            seq in prop::collection::vec(prop::sample::select(b"ACGT".to_vec()), 1..=128)
        ) {
            let k = seq.len();
            let x = Kmer::<4>::from_bases(&seq).unwrap();
            let rc = x.reverse_complement(k);
            prop_assert_eq!(rc.reverse_complement(k), x);
            let c = x.canonical(k);
            prop_assert_eq!(c.canonical(k), c);
            prop_assert_eq!(rc.canonical(k), c);
            // The reverse complement as a string, computed the obvious way.
            let want: Vec<u8> = seq.iter().rev().map(|b| match b {
                b'A' => b'T', b'C' => b'G', b'G' => b'C', _ => b'A',
            }).collect();
            prop_assert_eq!(rc.to_string(k).into_bytes(), want);
            prop_assert_eq!(x.to_string(k).into_bytes(), seq);
        }
    }

    #[test]
    fn canonical_is_the_lexicographically_smaller_strand() {
        let k = 5;
        let x = Kmer::<1>::from_bases(b"TTTGA").unwrap();
        assert_eq!(x.reverse_complement(k).to_string(k), "TCAAA");
        assert_eq!(x.canonical(k).to_string(k), "TCAAA");
        assert_eq!(Kmer::<1>::from_bases(b"acgtn"), None);
        assert_eq!(BASE_CODE[b'n' as usize], AMBIGUOUS);
        assert_eq!(BASE_CODE[b'*' as usize], INVALID);
        assert_eq!(words_for(31), 1);
        assert_eq!(words_for(32), 1);
        assert_eq!(words_for(33), 2);
        assert_eq!(words_for(100), 4);
        assert_eq!(words_for(MAX_K), 4);
    }
}
