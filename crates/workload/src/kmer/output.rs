//! Writing k-mer sets: TSV (a header row, then one k-mer per line) or FASTA (one record
//! per k-mer, so the candidates go straight into primer-design tools).

use super::encode::Kmer;
use super::table::Entry;
use std::io::{self, Write};

/// The format of a k-mer list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Tab-separated values with a header row.
    Tsv,
    /// One FASTA record per k-mer.
    Fasta,
}

impl Format {
    /// Every format, as `--format` lists them.
    pub const ALL: [Format; 2] = [Format::Tsv, Format::Fasta];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Tsv => "tsv",
            Format::Fasta => "fasta",
        }
    }

    /// One line for `--help`.
    pub fn about(self) -> &'static str {
        match self {
            Format::Tsv => "Tab-separated, with a header row",
            Format::Fasta => "One FASTA record per k-mer",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown format '{s}': choose tsv or fasta"))
    }
}

/// A primer candidate: a k-mer of the relative complement and where it first occurs in the
/// first in-group genome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<const W: usize> {
    /// The canonical k-mer.
    pub kmer: Kmer<W>,
    /// Index of the record in the first in-group genome.
    pub contig: usize,
    /// 0-based offset of its first base in that record.
    pub offset: usize,
    /// Whether the record reads the canonical k-mer (`+`) or its reverse complement (`-`).
    pub forward: bool,
}

/// A run of overlapping candidates along the first in-group genome: a stretch where every
/// k-mer is a candidate, the natural unit a primer is designed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Index of the record.
    pub contig: usize,
    /// 0-based start of the first k-mer.
    pub start: usize,
    /// End (exclusive) of the last k-mer.
    pub end: usize,
    /// Candidates in it.
    pub kmers: usize,
}

/// Groups candidates (in genome order) into regions of consecutive offsets.
pub fn regions<const W: usize>(candidates: &[Candidate<W>], k: usize) -> Vec<Region> {
    let mut out: Vec<Region> = Vec::new();
    for c in candidates {
        match out.last_mut() {
            Some(r) if r.contig == c.contig && r.end - k + 1 == c.offset => {
                r.end += 1;
                r.kmers += 1;
            }
            _ => out.push(Region {
                contig: c.contig,
                start: c.offset,
                end: c.offset + k,
                kmers: 1,
            }),
        }
    }
    out
}

/// Writes k-mers with their genome counts.
pub fn write_kmers<const W: usize>(
    out: &mut dyn Write,
    format: Format,
    k: usize,
    kmers: &[(Kmer<W>, Entry)],
) -> io::Result<()> {
    let mut line = Vec::with_capacity(k + 32);
    if format == Format::Tsv {
        out.write_all(b"kmer\tgenomes\n")?;
    }
    for (i, (kmer, e)) in kmers.iter().enumerate() {
        line.clear();
        match format {
            Format::Tsv => {
                kmer_row(&mut line, k, kmer, e);
                line.push(b'\n');
            }
            Format::Fasta => {
                writeln!(line, ">kmer_{} genomes={}", i + 1, e.genomes)?;
                kmer.write_ascii(k, &mut line);
                line.push(b'\n');
            }
        }
        out.write_all(&line)?;
    }
    Ok(())
}

/// One TSV row (without its newline) of a k-mer and its genome count.
pub fn kmer_row<const W: usize>(line: &mut Vec<u8>, k: usize, kmer: &Kmer<W>, e: &Entry) {
    kmer.write_ascii(k, line);
    line.extend_from_slice(format!("\t{}", e.genomes).as_bytes());
}

/// One TSV row (without its newline) of a primer candidate.
pub fn candidate_row<const W: usize>(
    line: &mut Vec<u8>,
    k: usize,
    genome: &str,
    contigs: &[String],
    c: &Candidate<W>,
) {
    let strand = if c.forward { '+' } else { '-' };
    c.kmer.write_ascii(k, line);
    line.extend_from_slice(
        format!(
            "\t{genome}\t{}\t{}\t{strand}",
            contigs[c.contig],
            c.offset + 1
        )
        .as_bytes(),
    );
}

/// Writes primer candidates with their place in the first in-group genome (1-based).
pub fn write_candidates<const W: usize>(
    out: &mut dyn Write,
    format: Format,
    k: usize,
    genome: &str,
    contigs: &[String],
    candidates: &[Candidate<W>],
) -> io::Result<()> {
    let mut line = Vec::with_capacity(k + 64);
    if format == Format::Tsv {
        out.write_all(b"kmer\tgenome\trecord\tposition\tstrand\n")?;
    }
    for (i, c) in candidates.iter().enumerate() {
        line.clear();
        let strand = if c.forward { '+' } else { '-' };
        let record = &contigs[c.contig];
        match format {
            Format::Tsv => {
                candidate_row(&mut line, k, genome, contigs, c);
                line.push(b'\n');
            }
            Format::Fasta => {
                writeln!(
                    line,
                    ">candidate_{} genome={genome} record={record} position={} strand={strand}",
                    i + 1,
                    c.offset + 1
                )?;
                c.kmer.write_ascii(k, &mut line);
                line.push(b'\n');
            }
        }
        out.write_all(&line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_regions() {
        let k = 3;
        let x = Kmer::<1>::from_bases(b"ACG").unwrap();
        let mut out = Vec::new();
        write_kmers(
            &mut out,
            Format::Tsv,
            k,
            &[(
                x,
                Entry {
                    genomes: 2,
                    marked: false,
                },
            )],
        )
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "kmer\tgenomes\nACG\t2\n");
        let c = |offset, forward| Candidate {
            kmer: x,
            contig: 0,
            offset,
            forward,
        };
        let cands = [c(4, true), c(5, false), c(9, true)];
        let mut out = Vec::new();
        write_candidates(
            &mut out,
            Format::Fasta,
            k,
            "g1",
            &["chr".into()],
            &cands[..1],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            ">candidate_1 genome=g1 record=chr position=5 strand=+\nACG\n"
        );
        let r = regions(&cands, k);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].start, r[0].end, r[0].kmers), (4, 8, 2));
        assert_eq!((r[1].start, r[1].end, r[1].kmers), (9, 12, 1));
    }
}
