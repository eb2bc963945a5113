//! Genomes from FASTA files, plain or gzipped (flate2 decompresses).
//!
//! Files are read as streams, a chunk of bases at a time ([`stream_fasta`]), so a record
//! of any length never sits whole in a reader's buffers. Not needletail (used before issue
//! 43): its readers hand out whole records, and a bacterial genome is often one record of
//! several megabases, where the binned method wants only its 2-bit packed text.
//!
//! One file is one genome (its records are contigs or chromosomes), or, with
//! [`Split::PerRecord`], every record is a genome of its own. Policy for the bytes of a
//! sequence: A, C, G, T in either case are bases; N and the other IUPAC codes (and gaps)
//! are accepted, and every k-mer containing one is skipped and counted; anything else makes
//! the file malformed. A malformed file is an error naming the file and the line.

use super::encode::{BASE_CODE, INVALID};
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

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

/// Opens a FASTA file, plain or gzipped: its decoded bytes and whether it was gzipped.
fn open(path: &Path) -> Result<(Box<dyn BufRead + Send>, bool), ReadError> {
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
    let decoded: Box<dyn BufRead + Send> = if gzipped {
        Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(buffered),
        ))
    } else {
        Box::new(buffered)
    };
    Ok((decoded, gzipped))
}

/// Bases a reader hands on at once: what a file being read holds in memory besides its
/// decoder's buffers, however long its records.
pub const CHUNK_BASES: usize = 1 << 20;

/// What a FASTA stream hands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A record starts: its identifier (the header up to the first white space).
    Record(&'a str),
    /// The next bases of the current record, without line breaks.
    Bases(&'a [u8]),
}

/// Reads one FASTA file (gzipped or not) as a stream, holding at most `chunk` bases: a
/// [`Piece::Record`] at each record's header, then [`Piece::Bases`] for its bases in pieces
/// of at most `chunk`, each validated (A, C, G, T, N or another IUPAC code). A record's
/// bases may come in several pieces; a piece never holds bases of two records. Returns the
/// number of records.
pub fn stream_fasta(
    path: &Path,
    chunk: usize,
    mut on: impl FnMut(Piece),
) -> Result<usize, ReadError> {
    let chunk = chunk.max(1);
    let (mut reader, gzipped) = open(path)?;
    let mut buf: Vec<u8> = Vec::with_capacity(chunk.min(CHUNK_BASES));
    let mut header: Vec<u8> = Vec::new();
    let mut name = String::new();
    let (mut line, mut records) = (1u64, 0usize);
    let (mut at_line_start, mut in_header) = (true, false);
    loop {
        let avail = match reader.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(stream_error(path, gzipped, line, &e)),
        };
        if avail.is_empty() {
            break;
        }
        let n = avail.len();
        let mut i = 0;
        while i < n {
            if in_header {
                match memchr::memchr(b'\n', &avail[i..]) {
                    Some(p) => {
                        header.extend_from_slice(&avail[i..i + p]);
                        name = record_name(&header);
                        on(Piece::Record(&name));
                        (in_header, at_line_start) = (false, true);
                        line += 1;
                        i += p + 1;
                    }
                    None => {
                        header.extend_from_slice(&avail[i..]);
                        i = n;
                    }
                }
                continue;
            }
            let b = avail[i];
            if b == b'\n' {
                (line, at_line_start) = (line + 1, true);
                i += 1;
                continue;
            }
            if b == b'\r' {
                i += 1;
                continue;
            }
            if at_line_start && b == b'>' {
                if !buf.is_empty() {
                    on(Piece::Bases(&buf));
                    buf.clear();
                }
                records += 1;
                header.clear();
                (in_header, at_line_start) = (true, false);
                i += 1;
                continue;
            }
            if records == 0 {
                return Err(not_fasta(path, line, b));
            }
            at_line_start = false;
            // The rest of the line, validated and copied a chunk at a time.
            let end = memchr::memchr2(b'\n', b'\r', &avail[i..]).map_or(n, |p| i + p);
            for &b in &avail[i..end] {
                if BASE_CODE[b as usize] == INVALID {
                    return Err(not_a_base(path, line, b, &name));
                }
            }
            let mut piece = &avail[i..end];
            while !piece.is_empty() {
                let take = (chunk - buf.len()).min(piece.len());
                buf.extend_from_slice(&piece[..take]);
                piece = &piece[take..];
                if buf.len() == chunk {
                    on(Piece::Bases(&buf));
                    buf.clear();
                }
            }
            i = end;
        }
        reader.consume(n);
    }
    if in_header {
        on(Piece::Record(&record_name(&header)));
    }
    if !buf.is_empty() {
        on(Piece::Bases(&buf));
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
    Ok(records)
}

/// A file whose first byte `b` (on `line`) does not start a FASTA record.
fn not_fasta(path: &Path, line: u64, b: u8) -> ReadError {
    let hint = if b == b'@' {
        "it looks like FASTQ (reads); pmscope kmer reads genomes as FASTA"
    } else {
        "a FASTA file starts with '>' and a record name"
    };
    ReadError::new(
        path,
        Some(line),
        format!(
            "not a FASTA file: it starts with '{}'; {hint}",
            (b as char).escape_default()
        ),
    )
}

/// A byte `b` of record `name` (on `line`) that is no nucleotide code.
fn not_a_base(path: &Path, line: u64, b: u8, name: &str) -> ReadError {
    ReadError::new(
        path,
        Some(line),
        format!(
            "'{}' in record '{name}' is not a nucleotide (A, C, G, T, N or another IUPAC code); is this a FASTA file of DNA?",
            (b as char).escape_default()
        ),
    )
}

/// A header's identifier: up to the first white space.
fn record_name(header: &[u8]) -> String {
    let id = String::from_utf8_lossy(header);
    id.split_whitespace().next().unwrap_or("").to_string()
}

/// An error of the stream itself, on the line it broke on.
fn stream_error(path: &Path, gzipped: bool, line: u64, e: &std::io::Error) -> ReadError {
    if gzipped {
        ReadError::new(
            path,
            Some(line),
            format!(
                "the gzip data is truncated or corrupt ({e}); check the download, e.g. with `gzip -t`"
            ),
        )
    } else {
        ReadError {
            is_usage: false,
            ..ReadError::new(path, Some(line), format!("cannot read it ({e})"))
        }
    }
}

/// The message for a genome without a single k-mer of A, C, G, T.
pub(super) fn no_kmer(path: &Path, name: &str, stats: &GenomeStats, k: usize) -> ReadError {
    let message = if (stats.longest_record as usize) < k {
        format!(
            "genome '{name}' is shorter than k = {k} (its longest record has {} bases); choose a smaller -k or leave the file out",
            stats.longest_record
        )
    } else {
        format!(
            "genome '{name}' has no {k}-mer without N or another ambiguous base; choose a smaller -k or leave the file out"
        )
    };
    ReadError::new(path, None, message)
}

/// Reads the genomes of one FASTA file (gzipped or not) whole, one byte per base, and
/// counts their k-mers of length `k`. Every genome must have at least one k-mer. The
/// one-table method reads this way; the binned one streams ([`super::packed`]).
pub fn read_genomes(path: &Path, split: Split, k: usize) -> Result<Vec<Genome>, ReadError> {
    let file_name = genome_name_of(path);
    let mut genomes: Vec<Genome> = Vec::new();
    stream_fasta(path, CHUNK_BASES, |piece| match piece {
        Piece::Record(name) => {
            if split == Split::PerRecord || genomes.is_empty() {
                let gname = if split == Split::PerRecord {
                    name
                } else {
                    &file_name
                };
                genomes.push(empty_genome(gname, path));
            }
            let g = genomes.last_mut().expect("a genome was just pushed");
            let start = g.seq.len();
            g.contigs.push(Contig {
                name: name.to_string(),
                start,
                end: start,
            });
        }
        Piece::Bases(bases) => {
            let g = genomes.last_mut().expect("bases follow a header");
            g.seq.extend_from_slice(bases);
            let end = g.seq.len();
            g.contigs.last_mut().expect("bases follow a header").end = end;
        }
    })?;
    for g in &mut genomes {
        g.count(k);
        if g.stats.kmers == 0 {
            return Err(no_kmer(path, &g.name, &g.stats, k));
        }
    }
    Ok(genomes)
}

pub(super) fn empty_genome(name: &str, path: &Path) -> Genome {
    Genome {
        name: name.to_string(),
        path: path.to_path_buf(),
        contigs: Vec::new(),
        seq: Vec::new(),
        stats: GenomeStats::default(),
    }
}

/// `ecoli.fasta.gz` → `ecoli`.
pub(super) fn genome_name_of(path: &Path) -> String {
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
