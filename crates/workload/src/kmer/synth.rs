//! Synthetic genomes for scale tests beyond what the Debian packages hold: a random
//! reference, and strains derived from it by SNPs and short indels at given rates, so the
//! k-mer sets overlap the way related bacteria do.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynthSpec {
    /// Bases of the reference.
    pub length: usize,
    /// Strains derived from it.
    pub strains: usize,
    /// Probability per base of a substitution.
    pub snp_rate: f64,
    /// Probability per base of an insertion or deletion of 1 to 10 bases.
    pub indel_rate: f64,
    /// Seed: the same spec and seed give the same genomes.
    pub seed: u64,
}

/// SplitMix64: small, fast, and good enough for sequences.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn base(&mut self) -> u8 {
        b"ACGT"[(self.next() >> 62) as usize]
    }
}

/// The random reference genome.
pub fn reference(spec: &SynthSpec) -> Vec<u8> {
    random_bases(spec.length, spec.seed)
}

/// `length` uniformly random bases, the same for the same seed (tests' genomes too).
pub fn random_bases(length: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..length).map(|_| rng.base()).collect()
}

/// Strain `index` (1-based), derived from `reference`.
pub fn strain(reference: &[u8], spec: &SynthSpec, index: usize) -> Vec<u8> {
    let mut rng = Rng(spec.seed ^ (index as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let mut out = Vec::with_capacity(reference.len() + reference.len() / 100);
    let mut i = 0;
    while i < reference.len() {
        let u = rng.unit();
        if u < spec.indel_rate {
            let len = 1 + (rng.next() % 10) as usize;
            if rng.next() & 1 == 0 {
                i += len; // deletion
                continue;
            }
            out.extend((0..len).map(|_| rng.base())); // insertion
        } else if u < spec.indel_rate + spec.snp_rate {
            let b = reference[i];
            let mut c = rng.base();
            while c == b {
                c = rng.base();
            }
            out.push(c);
            i += 1;
            continue;
        }
        out.push(reference[i]);
        i += 1;
    }
    out
}

/// Writes `reference.fasta` and `strain_N.fasta` (N = 1..=strains) into `dir`, lines of
/// 80 bases, and returns the paths in that order. Existing files are not overwritten.
pub fn write_dataset(dir: &Path, spec: &SynthSpec) -> io::Result<Vec<PathBuf>> {
    let r = reference(spec);
    let mut paths = vec![write_fasta(dir, "reference", &r)?];
    for s in 1..=spec.strains {
        paths.push(write_fasta(
            dir,
            &format!("strain_{s}"),
            &strain(&r, spec, s),
        )?);
    }
    Ok(paths)
}

fn write_fasta(dir: &Path, name: &str, seq: &[u8]) -> io::Result<PathBuf> {
    let path = dir.join(format!("{name}.fasta"));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    let mut w = io::BufWriter::new(file);
    writeln!(w, ">{name} synthetic")?;
    for line in seq.chunks(80) {
        w.write_all(line)?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strains_differ_from_the_reference_at_about_the_rates() {
        let spec = SynthSpec {
            length: 200_000,
            strains: 2,
            snp_rate: 0.01,
            indel_rate: 0.0,
            seed: 7,
        };
        let r = reference(&spec);
        assert_eq!(r, reference(&spec), "deterministic");
        let s = strain(&r, &spec, 1);
        assert_eq!(s.len(), r.len());
        let diff = r.iter().zip(&s).filter(|(a, b)| a != b).count() as f64 / r.len() as f64;
        assert!((diff - 0.01).abs() < 0.002, "{diff}");
        assert_ne!(s, strain(&r, &spec, 2));
        let indels = SynthSpec {
            snp_rate: 0.0,
            indel_rate: 0.001,
            ..spec
        };
        assert_ne!(strain(&r, &indels, 1).len(), r.len());
    }
}
