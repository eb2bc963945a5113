//! Genomes read as streams into 2-bit text, the binned method's input.
//!
//! A file is read a chunk at a time ([`stream_fasta`]); each chunk's bases are appended to
//! the genome's 2-bit text (32 bases a word, a quarter of a byte per base) and the chunk is
//! dropped, so what a genome keeps in memory is its packed text, never its bytes. A base
//! that is not A, C, G or T is packed as A, and what says it was not is the list of
//! *segments*: the runs of A, C, G, T within one record, at least k long, where every
//! k-mer lies. A segment goes on across chunks (its state is carried from one chunk to the
//! next, never restarted), and ends at an N (or another ambiguous base) and at a record's
//! end, so k-mers are neither lost at a chunk's edge nor made across an N or two records.

use super::encode::BASE_CODE;
use super::read::{
    CHUNK_BASES, Contig, Genome, GenomeStats, Piece, ReadError, Split, genome_name_of, stream_fasta,
};
use std::path::{Path, PathBuf};

/// A genome as 2-bit text with its segments.
#[derive(Debug, Clone, Default)]
pub struct PackedGenome {
    /// The file name without its extensions, or the record name with `PerRecord`.
    pub name: String,
    /// The file it came from.
    pub path: PathBuf,
    /// Its records (start and end in bases of the text).
    pub contigs: Vec<Contig>,
    /// The bases, 2 bits each, base i in bits 2(i mod 32) of word i / 32.
    pub words: Vec<u64>,
    /// Bases in the text.
    pub len: usize,
    /// Runs of A, C, G, T within one record, at least k long: `start..end` in bases.
    pub segments: Vec<(usize, usize)>,
    /// Counts for k.
    pub stats: GenomeStats,
}

impl PackedGenome {
    /// The 2-bit code of base `i`.
    #[inline(always)]
    pub fn code(&self, i: usize) -> u8 {
        code_at(&self.words, i)
    }

    /// Packs a genome read whole (primers read their in-group whole for the out-group step).
    pub fn of(g: &Genome, k: usize) -> PackedGenome {
        let mut p = Packer::new(k, &g.name, &g.path);
        for c in &g.contigs {
            p.record(&c.name);
            p.bases(g.contig_seq(c));
        }
        p.finish()
    }
}

/// The 2-bit code of base `i` of a packed text.
#[inline(always)]
pub fn code_at(words: &[u64], i: usize) -> u8 {
    ((words[i >> 5] >> ((i & 31) << 1)) & 3) as u8
}

/// Builds one packed genome from a stream of records and bases.
pub struct Packer {
    k: usize,
    g: PackedGenome,
    /// Where the current run of A, C, G, T started.
    run_start: usize,
}

impl Packer {
    /// An empty genome for k-mers of length `k`.
    pub fn new(k: usize, name: &str, path: &Path) -> Packer {
        Packer {
            k,
            g: PackedGenome {
                name: name.to_string(),
                path: path.to_path_buf(),
                ..PackedGenome::default()
            },
            run_start: 0,
        }
    }

    /// A record starts: the run of the previous one ends with it.
    pub fn record(&mut self, name: &str) {
        self.end_run();
        let at = self.g.len;
        self.g.contigs.push(Contig {
            name: name.to_string(),
            start: at,
            end: at,
        });
    }

    /// The next bases of the current record.
    pub fn bases(&mut self, bases: &[u8]) {
        let g = &mut self.g;
        g.words.reserve(bases.len().div_ceil(32) + 1);
        for &b in bases {
            let code = BASE_CODE[b as usize];
            let i = g.len;
            if i & 31 == 0 {
                g.words.push(0);
            }
            if code < 4 {
                g.words[i >> 5] |= (code as u64) << ((i & 31) << 1);
                g.len += 1;
            } else {
                g.stats.ambiguous_bases += 1;
                g.len += 1;
                if i - self.run_start >= self.k {
                    g.segments.push((self.run_start, i));
                }
                self.run_start = g.len;
            }
        }
        if let Some(c) = g.contigs.last_mut() {
            c.end = g.len;
        }
    }

    fn end_run(&mut self) {
        let end = self.g.len;
        if end - self.run_start >= self.k {
            self.g.segments.push((self.run_start, end));
        }
        self.run_start = end;
    }

    /// The genome, its counts made.
    pub fn finish(mut self) -> PackedGenome {
        self.end_run();
        let k = self.k;
        let g = &mut self.g;
        g.words.shrink_to_fit();
        let s = &mut g.stats;
        s.bases = g.len as u64;
        let mut windows = 0u64;
        for c in &g.contigs {
            let len = c.end - c.start;
            s.longest_record = s.longest_record.max(len as u64);
            windows += (len + 1).saturating_sub(k) as u64;
        }
        s.kmers = g
            .segments
            .iter()
            .map(|&(a, b)| (b - a + 1 - k) as u64)
            .sum();
        s.skipped_kmers = windows - s.kmers;
        self.g
    }
}

/// Reads the genomes of one FASTA file (gzipped or not) as a stream into 2-bit text, `chunk`
/// bases at a time. Every genome must have at least one k-mer.
pub fn read_packed(
    path: &Path,
    split: Split,
    k: usize,
    chunk: usize,
) -> Result<Vec<PackedGenome>, ReadError> {
    let file_name = genome_name_of(path);
    let mut done: Vec<PackedGenome> = Vec::new();
    let mut current: Option<Packer> = None;
    stream_fasta(path, chunk, |piece| match piece {
        Piece::Record(name) => {
            if split == Split::PerRecord {
                if let Some(p) = current.take() {
                    done.push(p.finish());
                }
                current = Some(Packer::new(k, name, path));
            } else if current.is_none() {
                current = Some(Packer::new(k, &file_name, path));
            }
            current.as_mut().expect("made above").record(name);
        }
        Piece::Bases(bases) => current
            .as_mut()
            .expect("bases follow a header")
            .bases(bases),
    })?;
    done.extend(current.map(Packer::finish));
    for g in &done {
        if g.stats.kmers == 0 {
            return Err(super::read::no_kmer(path, &g.name, &g.stats, k));
        }
    }
    Ok(done)
}

/// [`read_packed`] with the usual chunk.
pub fn read_packed_file(
    path: &Path,
    split: Split,
    k: usize,
) -> Result<Vec<PackedGenome>, ReadError> {
    read_packed(path, split, k, CHUNK_BASES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::io::Write;

    /// The k-mers (as text, not canonical: the test is about positions) of a genome read
    /// whole, the obvious way: every window of one record without an ambiguous base.
    fn reference(records: &[(String, Vec<u8>)], k: usize) -> BTreeMap<Vec<u8>, usize> {
        let mut m = BTreeMap::new();
        for (_, seq) in records {
            for w in seq.windows(k) {
                if w.iter().all(|&b| BASE_CODE[b as usize] < 4) {
                    let up: Vec<u8> = w.iter().map(|b| b.to_ascii_uppercase()).collect();
                    *m.entry(up).or_insert(0) += 1;
                }
            }
        }
        m
    }

    /// The k-mers of a packed genome: every window of every segment, read from the text.
    fn streamed(g: &PackedGenome, k: usize) -> BTreeMap<Vec<u8>, usize> {
        let mut m = BTreeMap::new();
        for &(a, b) in &g.segments {
            for s in a..=b - k {
                let w: Vec<u8> = (s..s + k).map(|i| b"ACGT"[g.code(i) as usize]).collect();
                *m.entry(w).or_insert(0) += 1;
            }
        }
        m
    }

    fn fasta(records: &[(String, Vec<u8>)], line: usize) -> Vec<u8> {
        let mut f = Vec::new();
        for (name, seq) in records {
            writeln!(f, ">{name} some description").unwrap();
            for l in seq.chunks(line.max(1)) {
                f.extend_from_slice(l);
                f.push(b'\n');
            }
        }
        f
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn record() -> impl Strategy<Value = (String, Vec<u8>)> {
        (
            "[a-z]{1,6}",
            prop::collection::vec(prop::sample::select(b"ACGTACGTacgtNR".to_vec()), 0..150),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Read in chunks of any size, plain or gzipped, a multi-record file yields the
        /// k-mers the whole-genome reading yields, no more, no fewer: the chunk sizes
        /// include 1, k - 1, k and k + 1, where a k-mer lost at a chunk's edge (or made
        /// across an N or two records) would show.
        #[test]
        fn chunked_reading_yields_the_kmers_of_whole_reading(
            records in prop::collection::vec(record(), 1..5),
            k in 1usize..12,
            line in 1usize..80,
            extra in 1usize..300,
            gz in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let text = fasta(&records, line);
            let path = dir.path().join(if gz { "g.fa.gz" } else { "g.fa" });
            std::fs::write(&path, if gz { gzip(&text) } else { text }).unwrap();
            let want = reference(&records, k);
            let whole = crate::kmer::read::Genome::from_records(
                "g",
                &records.iter().map(|(n, s)| (n.as_str(), s.as_slice())).collect::<Vec<_>>(),
                k,
            );
            for chunk in [1, k.saturating_sub(1).max(1), k, k + 1, 2 * k + 1, extra, CHUNK_BASES] {
                match read_packed(&path, Split::PerFile, k, chunk) {
                    Ok(g) => {
                        prop_assert_eq!(g.len(), 1);
                        prop_assert_eq!(&streamed(&g[0], k), &want, "chunk {}", chunk);
                        prop_assert_eq!(g[0].stats, whole.stats, "chunk {}", chunk);
                        prop_assert_eq!(g[0].contigs.len(), records.len());
                    }
                    Err(e) => {
                        prop_assert!(want.is_empty(), "chunk {chunk}: {e}");
                        prop_assert!(e.to_string().contains("choose a smaller -k"), "{}", e);
                    }
                }
                // The whole-genome reader streams too, whatever its chunk: its bytes are
                // the file's bases.
                if let Ok(g) = crate::kmer::read::read_genomes(&path, Split::PerFile, k) {
                    prop_assert_eq!(&g[0].seq, &whole.seq);
                }
            }
        }
    }

    /// One record a genome: each genome's k-mers are its record's only.
    #[test]
    fn genome_per_record_splits_at_each_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.fa");
        std::fs::write(&path, b">a\nACGTAC\nGT\n>b\nTTTTGGGG\n").unwrap();
        for chunk in [1, 3, 4, 5, 100] {
            let g = read_packed(&path, Split::PerRecord, 4, chunk).unwrap();
            assert_eq!(g.len(), 2);
            assert_eq!((g[0].name.as_str(), g[1].name.as_str()), ("a", "b"));
            assert_eq!(g[0].segments, vec![(0, 8)]);
            assert_eq!(g[1].segments, vec![(0, 8)]);
            assert_eq!(g[0].stats.kmers, 5);
            let one = read_packed(&path, Split::PerFile, 4, chunk).unwrap();
            // The record boundary breaks the run: no k-mer spans "GT|TTTT".
            assert_eq!(one[0].segments, vec![(0, 8), (8, 16)]);
            assert_eq!(one[0].stats.kmers, 10);
        }
    }

    /// Packing is 2 bits a base, and what the reader holds besides is one chunk: a genome
    /// of a million bases keeps 250 kB of text.
    #[test]
    fn the_text_is_a_quarter_byte_a_base() {
        let dir = tempfile::tempdir().unwrap();
        let seq = crate::kmer::synth::random_bases(1_000_000, 3);
        let path = dir.path().join("big.fa");
        std::fs::write(&path, fasta(&[("x".into(), seq.clone())], 60)).unwrap();
        let g = read_packed(&path, Split::PerFile, 31, 4096).unwrap();
        assert_eq!(g[0].len, 1_000_000);
        assert!(g[0].words.capacity() * 8 <= 1_000_000 / 4 + 64);
        assert!((0..seq.len()).all(|i| b"ACGT"[g[0].code(i) as usize] == seq[i]));
    }
}
