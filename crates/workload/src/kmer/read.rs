//! Genomes from FASTA files, plain or gzipped (needletail parses, flate2 decompresses).
//!
//! One file is one genome (its records are contigs or chromosomes), or, with
//! [`Split::PerRecord`], every record is a genome of its own. Policy for the bytes of a
//! sequence: A, C, G, T in either case are bases; N and the other IUPAC codes (and gaps)
//! are accepted, and every k-mer containing one is skipped and counted; anything else makes
//! the file malformed. A malformed file is an error naming the file and the line.

use super::encode::{BASE_CODE, INVALID};
use flate2::read::MultiGzDecoder;
use needletail::errors::ParseErrorKind;
use needletail::parser::{FastaReader, FastxReader};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How files map to genomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Each file is one genome (default).
    PerFile,
    /// Each record of each file is one genome (`--genome-per-record`).
    PerRecord,
}

/// One record of a genome: its name and where its bases sit in [`Genome::seq`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contig {
    /// The record's identifier (the header up to the first white space).
    pub name: String,
    /// Start of its bases in the genome's sequence.
    pub start: usize,
    /// End (exclusive).
    pub end: usize,
}

/// Counts of a genome's bases and k-mers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GenomeStats {
    /// Bases, ambiguous ones included.
    pub bases: u64,
    /// N and other IUPAC codes.
    pub ambiguous_bases: u64,
    /// k-mers made of A, C, G, T only: the ones inserted.
    pub kmers: u64,
    /// k-mer windows skipped because they contain an ambiguous base.
    pub skipped_kmers: u64,
    /// The longest record, in bases.
    pub longest_record: u64,
}

/// A genome: its records' bases back to back (without line breaks), as in the file.
#[derive(Debug, Clone)]
pub struct Genome {
    /// The file name without its extensions, or the record name with `PerRecord`.
    pub name: String,
    /// The file it came from.
    pub path: PathBuf,
    /// Its records.
    pub contigs: Vec<Contig>,
    /// Their bases, concatenated.
    pub seq: Vec<u8>,
    /// Counts for k.
    pub stats: GenomeStats,
}

impl Genome {
    /// Builds a genome from named sequences (tests, the synthetic generator), validating
    /// them as a file would be.
    pub fn from_records(name: &str, records: &[(&str, &[u8])], k: usize) -> Genome {
        let mut g = Genome {
            name: name.to_string(),
            path: PathBuf::from(name),
            contigs: Vec::new(),
            seq: Vec::new(),
            stats: GenomeStats::default(),
        };
        for (n, s) in records {
            g.push_record(n.to_string(), s);
        }
        g.count(k);
        g
    }

    fn push_record(&mut self, name: String, seq: &[u8]) {
        let start = self.seq.len();
        self.seq.extend_from_slice(seq);
        self.contigs.push(Contig {
            name,
            start,
            end: self.seq.len(),
        });
    }

    /// Fills in the counts for k-mers of length `k`.
    fn count(&mut self, k: usize) {
        let mut s = GenomeStats::default();
        for c in &self.contigs {
            let bases = &self.seq[c.start..c.end];
            s.bases += bases.len() as u64;
            s.longest_record = s.longest_record.max(bases.len() as u64);
            let windows = (bases.len() + 1).saturating_sub(k) as u64;
            let mut valid = 0u64;
            let mut run = 0usize;
            for &b in bases {
                if BASE_CODE[b as usize] < 4 {
                    run += 1;
                    if run >= k {
                        valid += 1;
                    }
                } else {
                    s.ambiguous_bases += 1;
                    run = 0;
                }
            }
            s.kmers += valid;
            s.skipped_kmers += windows - valid;
        }
        self.stats = s;
    }

    /// The bases of one record.
    pub fn contig_seq(&self, c: &Contig) -> &[u8] {
        &self.seq[c.start..c.end]
    }
}

/// Why a file could not be read as genomes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// The line (1-based) where the problem is, if it has one.
    pub line: Option<u64>,
    /// What is wrong and what to do, in one sentence.
    pub message: String,
    /// Whether the input is at fault (exit 2) rather than the system (exit 1).
    pub is_usage: bool,
}

impl ReadError {
    fn new(path: &Path, line: Option<u64>, message: impl Into<String>) -> ReadError {
        ReadError {
            path: path.to_path_buf(),
            line,
            message: message.into(),
            is_usage: true,
        }
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Counts the line breaks that pass through, so that an error of the stream itself (a
/// truncated gzip member) can name the line where it happened.
struct LineCounter<R> {
    inner: R,
    lines: Arc<AtomicU64>,
}

impl<R: Read> Read for LineCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let breaks = buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        self.lines.fetch_add(breaks, Ordering::Relaxed);
        Ok(n)
    }
}

/// Reads the genomes of one FASTA file (gzipped or not) and counts their k-mers of
/// length `k`. Every genome must have at least one k-mer.
pub fn read_genomes(path: &Path, split: Split, k: usize) -> Result<Vec<Genome>, ReadError> {
    let file = File::open(path).map_err(|e| {
        let mut err = ReadError::new(path, None, format!("cannot open it ({e})"));
        err.is_usage = matches!(
            e.kind(),
            std::io::ErrorKind::NotFound
                | std::io::ErrorKind::PermissionDenied
                | std::io::ErrorKind::IsADirectory
        );
        err
    })?;
    let mut buffered = BufReader::with_capacity(1 << 16, file);
    let head = buffered
        .fill_buf()
        .map_err(|e| ReadError {
            is_usage: e.kind() == std::io::ErrorKind::IsADirectory,
            ..ReadError::new(path, None, format!("cannot read it ({e})"))
        })?
        .to_vec();
    if head.is_empty() {
        return Err(ReadError::new(
            path,
            None,
            "the file is empty; a genome file holds FASTA records ('>name' then bases)",
        ));
    }
    let gzipped = head.starts_with(&GZIP_MAGIC);
    let decoded: Box<dyn Read + Send> = if gzipped {
        Box::new(MultiGzDecoder::new(buffered))
    } else {
        Box::new(buffered)
    };
    let lines = Arc::new(AtomicU64::new(0));
    let reader = LineCounter {
        inner: decoded,
        lines: lines.clone(),
    };
    let mut fasta = FastaReader::with_capacity(reader, 1 << 20);
    let file_name = genome_name_of(path);
    let mut genomes: Vec<Genome> = Vec::new();
    let mut records = 0usize;
    while let Some(rec) = fasta.next() {
        let rec = rec.map_err(|e| {
            // A stream that breaks breaks on the line after the last complete one read.
            let at = lines.load(Ordering::Relaxed) + 1;
            parse_error(path, gzipped, records, at, e)
        })?;
        records += 1;
        let header_line = rec.start_line_number();
        let id = String::from_utf8_lossy(rec.id());
        let name = id.split_whitespace().next().unwrap_or("").to_string();
        let seq = rec.seq();
        if let Some(pos) = seq.iter().position(|&b| BASE_CODE[b as usize] == INVALID) {
            let line = line_of(rec.raw_seq(), pos, header_line);
            return Err(ReadError::new(
                path,
                Some(line),
                format!(
                    "'{}' in record '{name}' is not a nucleotide (A, C, G, T, N or another IUPAC code); is this a FASTA file of DNA?",
                    (seq[pos] as char).escape_default()
                ),
            ));
        }
        match split {
            Split::PerRecord => {
                let mut g = empty_genome(&name, path);
                g.push_record(name.clone(), &seq);
                genomes.push(g);
            }
            Split::PerFile => {
                if genomes.is_empty() {
                    genomes.push(empty_genome(&file_name, path));
                }
                genomes[0].push_record(name, &seq);
            }
        }
    }
    if records == 0 {
        let what = if gzipped {
            "the gzip data holds nothing"
        } else {
            "the file holds no FASTA record"
        };
        return Err(ReadError::new(
            path,
            None,
            format!("{what}; a genome file holds FASTA records ('>name' then bases)"),
        ));
    }
    for g in &mut genomes {
        g.count(k);
        if g.stats.kmers == 0 {
            let message = if (g.stats.longest_record as usize) < k {
                format!(
                    "genome '{}' is shorter than k = {k} (its longest record has {} bases); choose a smaller -k or leave the file out",
                    g.name, g.stats.longest_record
                )
            } else {
                format!(
                    "genome '{}' has no {k}-mer without N or another ambiguous base; choose a smaller -k or leave the file out",
                    g.name
                )
            };
            return Err(ReadError::new(path, None, message));
        }
    }
    Ok(genomes)
}

fn empty_genome(name: &str, path: &Path) -> Genome {
    Genome {
        name: name.to_string(),
        path: path.to_path_buf(),
        contigs: Vec::new(),
        seq: Vec::new(),
        stats: GenomeStats::default(),
    }
}

/// `ecoli.fasta.gz` → `ecoli`.
fn genome_name_of(path: &Path) -> String {
    let mut name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    for ext in [".gz", ".fasta", ".fa", ".fna", ".fas", ".ffn", ".seq"] {
        if let Some(stem) = name.strip_suffix(ext)
            && !stem.is_empty()
        {
            name = stem.to_string();
        }
    }
    name
}

/// The line of the `pos`-th base of a record whose header is on `header_line`, counting
/// the line breaks in its raw bytes.
fn line_of(raw: &[u8], pos: usize, header_line: u64) -> u64 {
    let mut line = header_line + 1;
    let mut seen = 0usize;
    for &b in raw {
        match b {
            b'\n' => line += 1,
            b'\r' => {}
            _ => {
                if seen == pos {
                    return line;
                }
                seen += 1;
            }
        }
    }
    line
}

fn parse_error(
    path: &Path,
    gzipped: bool,
    records: usize,
    last_line: u64,
    e: needletail::errors::ParseError,
) -> ReadError {
    match e.kind {
        ParseErrorKind::Io if gzipped => ReadError::new(
            path,
            Some(last_line),
            format!(
                "the gzip data is truncated or corrupt ({}); check the download, e.g. with `gzip -t`",
                e.msg
            ),
        ),
        ParseErrorKind::Io => ReadError {
            is_usage: false,
            ..ReadError::new(path, Some(last_line), format!("cannot read it ({})", e.msg))
        },
        ParseErrorKind::InvalidStart if records == 0 => {
            // needletail says "Expected '>' but found 'x".
            let found = e.msg.split("found '").nth(1).unwrap_or("?");
            let found = found.trim_end_matches('\'').to_string();
            let hint = if found == "@" {
                "it looks like FASTQ (reads); pmscope kmer reads genomes as FASTA"
            } else {
                "a FASTA file starts with '>' and a record name"
            };
            ReadError::new(
                path,
                Some(1),
                format!("not a FASTA file: it starts with '{found}'; {hint}"),
            )
        }
        _ => ReadError::new(
            path,
            Some(e.position.line.max(1)),
            format!("malformed FASTA ({e}); a record is a '>name' line followed by bases"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn reads_plain_and_gzipped_multi_line_fasta() {
        let dir = tempfile::tempdir().unwrap();
        let text = b">chr1 first\nACGTN\nacgtA\n>plasmid\nGGGCC\n";
        for (name, bytes) in [("a.fasta", text.to_vec()), ("a.fa.gz", gzip(text))] {
            let p = write(dir.path(), name, &bytes);
            let g = read_genomes(&p, Split::PerFile, 3).unwrap();
            assert_eq!(g.len(), 1);
            assert_eq!(g[0].name, "a");
            assert_eq!(g[0].seq, b"ACGTNacgtAGGGCC");
            assert_eq!(g[0].contigs[1].name, "plasmid");
            // chr1: 10 bases, 8 windows, those overlapping N (index 4) skipped: 3.
            // plasmid: 3 windows.
            assert_eq!(g[0].stats.kmers, 5 + 3);
            assert_eq!(g[0].stats.skipped_kmers, 3);
            assert_eq!(g[0].stats.ambiguous_bases, 1);
            let per = read_genomes(&p, Split::PerRecord, 3).unwrap();
            assert_eq!(per.len(), 2);
            assert_eq!(per[1].name, "plasmid");
        }
    }

    #[test]
    fn malformed_files_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases: &[(&str, Vec<u8>, &str)] = &[
            ("empty.fa", vec![], "the file is empty"),
            (
                "text.fa",
                b"hello\n".to_vec(),
                "line 1: not a FASTA file: it starts with 'h'",
            ),
            (
                "reads.fq",
                b"@r1\nACGT\n+\nIIII\n".to_vec(),
                "it looks like FASTQ",
            ),
            (
                "bad.fa",
                b">a\nACGT\nAC*T\n".to_vec(),
                "line 3: '*' in record 'a' is not a nucleotide",
            ),
            (
                "short.fa",
                b">a\nACG\n".to_vec(),
                "genome 'short' is shorter than k = 4",
            ),
            ("ns.fa", b">a\nNNNNNN\n".to_vec(), "has no 4-mer without N"),
        ];
        for (name, bytes, want) in cases {
            let p = write(dir.path(), name, bytes);
            let e = read_genomes(&p, Split::PerFile, 4).unwrap_err();
            assert!(e.to_string().contains(want), "{name}: {e}");
            assert!(e.to_string().starts_with(&p.display().to_string()), "{e}");
            assert!(e.is_usage);
        }
        let mut gz = gzip(b">a\nACGTACGTACGT\n>b\nACGTACGTTTTT\n");
        gz.truncate(gz.len() - 12);
        let p = write(dir.path(), "cut.fa.gz", &gz);
        let e = read_genomes(&p, Split::PerFile, 4).unwrap_err();
        assert!(e.to_string().contains("truncated or corrupt"), "{e}");
        let e = read_genomes(&dir.path().join("missing.fa"), Split::PerFile, 4).unwrap_err();
        assert!(e.to_string().contains("cannot open it"), "{e}");
    }
}
