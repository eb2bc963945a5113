//! Synthetic genomes for scale tests beyond what the Debian packages hold: a random
//! reference, and strains derived from it by SNPs and short indels at given rates, so the
//! k-mer sets overlap the way related bacteria do; and pangenomes shaped like seed 003's
//! Table 6 datasets ([`Pangenome`], [`PRESETS`]).

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
    write_records(dir, name, &[(format!("{name} synthetic"), seq)])
}

/// A bacterial pangenome: every genome is a strain of one species, its core genome (shared,
/// with SNPs of its own at `snp_rate`) and the accessory genes it carries (each gene of the
/// pool with probability `carriage`), each accessory gene a FASTA record of its own, so no
/// k-mer spans two genes. Distinct k-mers, to first order: the core, the pool, and K new
/// k-mers per SNP (`distinct_estimate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pangenome {
    /// Genomes (strains) written.
    pub genomes: usize,
    /// Bases of the core genome.
    pub core: usize,
    /// Accessory genes in the pool.
    pub genes: usize,
    /// Bases per accessory gene.
    pub gene_bases: usize,
    /// Probability that a strain carries a gene of the pool.
    pub carriage: f64,
    /// Substitutions per core base, independent in each strain.
    pub snp_rate: f64,
    /// Seed: the same pangenome and seed give the same genomes.
    pub seed: u64,
}

/// A named pangenome reproducing the shape of one of seed 003's datasets (Table 6).
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// `seed-2` etc.
    pub name: &'static str,
    /// The dataset it reproduces, as Table 6 names it.
    pub dataset: &'static str,
    /// Table 6's figures: genomes, bases, distinct 100-mers.
    pub table6: (usize, f64, f64),
    /// The model, calibrated to them (docs/kmer.md).
    pub model: Pangenome,
}

/// Salmonella-like core: 4.0 Mbp; accessory genes of 1 kbp.
const CORE: usize = 4_000_000;
const GENE: usize = 1_000;

/// Calibration (docs/kmer.md, "Seed-sized datasets"): the mean genome is core + carriage x
/// genes x 1 kbp = Table 6's bases / genomes; the distinct 100-mers are core + pool + 100 x
/// SNPs, which sets the SNP rate.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "seed-2",
        dataset: "#2 Salmonella Virchow",
        table6: (336, 1.58e9, 25.7e6),
        model: Pangenome {
            genomes: 336,
            core: CORE,
            genes: 2_000,
            gene_bases: GENE,
            carriage: 0.351,
            snp_rate: 1.481e-4,
            seed: 2,
        },
    },
    Preset {
        name: "seed-3",
        dataset: "#3 Salmonella Enterica",
        table6: (13_014, 60.6e9, 923.3e6),
        model: Pangenome {
            genomes: 13_014,
            core: CORE,
            genes: 20_000,
            gene_bases: GENE,
            carriage: 0.0328,
            snp_rate: 1.731e-4,
            seed: 3,
        },
    },
    Preset {
        name: "seed-1",
        dataset: "#1 Salmonella",
        table6: (48_200, 232e9, 605.9e6),
        model: Pangenome {
            genomes: 48_200,
            core: CORE,
            genes: 20_000,
            gene_bases: GENE,
            carriage: 0.0407,
            snp_rate: 3.028e-5,
            seed: 1,
        },
    },
];

impl Pangenome {
    /// The preset named `name`, with its genome count scaled by `scale` (at least 1 genome).
    pub fn preset(name: &str, scale: f64) -> Option<Pangenome> {
        let p = PRESETS.iter().find(|p| p.name == name)?;
        Some(Pangenome {
            genomes: ((p.model.genomes as f64 * scale).round() as usize).max(1),
            ..p.model
        })
    }

    /// Mean bases of a genome.
    pub fn mean_bases(&self) -> f64 {
        self.core as f64 + self.carriage * (self.genes * self.gene_bases) as f64
    }

    /// Distinct k-mers to first order: the core's, the pool's genes carried at least once,
    /// and `k` per SNP (two SNPs closer than `k` in one strain, or at one base in two, are
    /// rare at these rates).
    pub fn distinct_estimate(&self, k: usize) -> f64 {
        let carried = 1.0 - (1.0 - self.carriage).powi(self.genomes as i32);
        let gene_kmers = self.gene_bases.saturating_sub(k - 1) as f64;
        let snps = self.genomes as f64 * self.snp_rate * self.core as f64;
        self.core.saturating_sub(k - 1) as f64
            + carried * self.genes as f64 * gene_kmers
            + snps * k as f64
    }

    /// The core genome.
    pub(crate) fn core_bases(&self) -> Vec<u8> {
        random_bases(self.core, self.seed)
    }

    /// Gene `j` of the accessory pool.
    pub(crate) fn gene(&self, j: usize) -> Vec<u8> {
        random_bases(
            self.gene_bases,
            self.seed ^ 0xACCE_5500_0000_0000 ^ (j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        )
    }

    /// Genome `index` (1-based): its core with its SNPs (skipped to geometrically: one
    /// random number per SNP, not per base), and the indices of the genes it carries.
    pub fn genome(&self, core: &[u8], index: usize) -> (Vec<u8>, Vec<usize>) {
        let mut rng = Rng(self.seed ^ (index as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        let mut seq = core.to_vec();
        if self.snp_rate > 0.0 {
            let log_keep = (1.0 - self.snp_rate).ln();
            let mut at = 0usize;
            loop {
                let u = rng.unit().max(f64::MIN_POSITIVE);
                at += (u.ln() / log_keep) as usize;
                if at >= seq.len() {
                    break;
                }
                let b = seq[at];
                let mut c = rng.base();
                while c == b {
                    c = rng.base();
                }
                seq[at] = c;
                at += 1;
            }
        }
        let genes = (0..self.genes)
            .filter(|_| rng.unit() < self.carriage)
            .collect();
        (seq, genes)
    }

    /// Writes `genome_N.fasta` (N = 1..=genomes) into `dir`: a `core` record and one record
    /// per gene carried, lines of 80 bases; one genome in memory at a time. Existing files
    /// are not overwritten. Returns the paths and the bases written.
    pub fn write(&self, dir: &Path) -> io::Result<(Vec<PathBuf>, u64)> {
        let core = self.core_bases();
        let pool: Vec<Vec<u8>> = (0..self.genes).map(|j| self.gene(j)).collect();
        let mut paths = Vec::with_capacity(self.genomes);
        let mut bases = 0u64;
        for g in 1..=self.genomes {
            let (seq, genes) = self.genome(&core, g);
            let name = format!("genome_{g}");
            let mut records: Vec<(String, &[u8])> = vec![(format!("{name} core"), &seq[..])];
            for &j in &genes {
                records.push((format!("{name} gene_{j}"), &pool[j][..]));
            }
            bases += records.iter().map(|r| r.1.len() as u64).sum::<u64>();
            paths.push(write_records(dir, &name, &records)?);
        }
        Ok((paths, bases))
    }
}

/// Writes `name.fasta` into `dir` (never over an existing file): each record a header line
/// and its bases in lines of 80.
fn write_records(dir: &Path, name: &str, records: &[(String, &[u8])]) -> io::Result<PathBuf> {
    let path = dir.join(format!("{name}.fasta"));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    let mut w = io::BufWriter::with_capacity(1 << 20, file);
    for (header, seq) in records {
        writeln!(w, ">{header}")?;
        for line in seq.chunks(80) {
            w.write_all(line)?;
            w.write_all(b"\n")?;
        }
    }
    w.flush()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The presets' models give Table 6's genome count, mean genome and distinct 100-mers
    /// (to first order) within 2 %.
    #[test]
    fn presets_match_table_6_to_first_order() {
        for p in PRESETS {
            let (genomes, bases, distinct) = p.table6;
            let m = &p.model;
            assert_eq!(m.genomes, genomes, "{}", p.name);
            let total = m.mean_bases() * m.genomes as f64;
            assert!(
                (total / bases - 1.0).abs() < 0.02,
                "{}: {total} bases",
                p.name
            );
            let d = m.distinct_estimate(100);
            assert!(
                (d / distinct - 1.0).abs() < 0.02,
                "{}: {d} distinct",
                p.name
            );
        }
        let tenth = Pangenome::preset("seed-3", 0.1).unwrap();
        assert_eq!(tenth.genomes, 1_301);
        assert!(Pangenome::preset("seed-9", 1.0).is_none());
    }

    /// A small pangenome, counted exactly: its distinct k-mers are what the model says
    /// (within a few %, the SNPs closer than k in one strain being the difference), its
    /// genomes are deterministic, and strains carry genes at about the carriage.
    #[test]
    fn a_small_pangenome_has_the_distinct_kmers_the_model_says() {
        let m = Pangenome {
            genomes: 12,
            core: 200_000,
            genes: 200,
            gene_bases: 500,
            carriage: 0.3,
            snp_rate: 2e-3,
            seed: 9,
        };
        let core = m.core_bases();
        let pool: Vec<Vec<u8>> = (0..m.genes).map(|j| m.gene(j)).collect();
        let k = 31;
        let mut set = std::collections::HashSet::new();
        let mut carried = 0usize;
        for g in 1..=m.genomes {
            let (seq, genes) = m.genome(&core, g);
            assert_eq!(
                (seq.clone(), genes.clone()),
                m.genome(&core, g),
                "deterministic"
            );
            assert_eq!(seq.len(), core.len());
            carried += genes.len();
            for w in seq.windows(k) {
                set.insert(w.to_vec());
            }
            for &j in &genes {
                for w in pool[j].windows(k) {
                    set.insert(w.to_vec());
                }
            }
        }
        let share = carried as f64 / (m.genomes * m.genes) as f64;
        assert!((share - 0.3).abs() < 0.05, "carriage {share}");
        let want = m.distinct_estimate(k);
        let got = set.len() as f64;
        assert!(
            (got / want - 1.0).abs() < 0.05,
            "{got} distinct, model {want}"
        );
        // Without SNPs, the strains' cores are the core: only the core's and the pool's.
        let clonal = Pangenome { snp_rate: 0.0, ..m };
        assert_eq!(clonal.genome(&core, 3).0, core);
    }

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
