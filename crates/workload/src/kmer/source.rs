//! Where genomes come from: FASTA files, or a pangenome generated while it is read.
//!
//! An input named `synth:PRESET[,scale=F][,seed=N]` is the pangenome `kmer synth --preset
//! PRESET --scale F --seed N` writes, generated genome by genome as counting reads it (the
//! core and the gene pool once, then each genome from its own seed), so a 60 Gbp dataset
//! of seed 003 is counted without a file of that size. Its genomes are named as the
//! written files are (`genome_1`, ...), and count to the same k-mers.

use super::packed::{PackedGenome, Packer};
use super::read::{Genome, ReadError, Split};
use super::synth::{PRESETS, Pangenome};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The prefix that names a generated input.
pub const SYNTH_PREFIX: &str = "synth:";

/// A generated pangenome: its model, its core and its gene pool.
#[derive(Debug)]
pub struct Generated {
    /// The input as named (`synth:seed-3,scale=0.1`), the genomes' path.
    pub spec: PathBuf,
    /// The model.
    pub model: Pangenome,
    core: Vec<u8>,
    pool: Vec<Vec<u8>>,
}

impl Generated {
    /// The pangenome an input names, if it names one: `None` for a file.
    pub fn parse(input: &Path) -> Option<Result<Pangenome, ReadError>> {
        let text = input.to_str()?.strip_prefix(SYNTH_PREFIX)?;
        let usage = |message: String| ReadError {
            path: input.to_path_buf(),
            line: None,
            message,
            is_usage: true,
        };
        let mut parts = text.split(',');
        let name = parts.next().unwrap_or_default();
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        let Some(mut model) = Pangenome::preset(name, 1.0) else {
            return Some(Err(usage(format!(
                "'{name}' is not a preset of a generated input: use synth:{}[,scale=F][,seed=N]",
                names.join("|")
            ))));
        };
        let full = model.genomes;
        for part in parts {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            match key {
                "scale" => match value.parse::<f64>() {
                    Ok(f) if f > 0.0 && f <= 1.0 => {
                        model.genomes = ((full as f64 * f).round() as usize).max(1);
                    }
                    _ => {
                        return Some(Err(usage(format!(
                            "scale={value} is not a fraction of the preset's genomes: give a number above 0 and at most 1"
                        ))));
                    }
                },
                "seed" => match pmscope_core::whole::parse::<u64>(value) {
                    Ok(s) => model.seed = s,
                    Err(e) => return Some(Err(usage(format!("seed={value}: {e}")))),
                },
                _ => {
                    return Some(Err(usage(format!(
                        "'{part}' is not an option of a generated input: use scale=F or seed=N"
                    ))));
                }
            }
        }
        Some(Ok(model))
    }

    /// The pangenome ready to generate: its core and gene pool made.
    pub fn new(spec: &Path, model: Pangenome) -> Generated {
        Generated {
            spec: spec.to_path_buf(),
            model,
            core: model.core_bases(),
            pool: (0..model.genes).map(|j| model.gene(j)).collect(),
        }
    }

    /// Genome `index` (1-based) as its records: `core`, then one per gene carried.
    fn records(&self, index: usize) -> (Vec<u8>, Vec<usize>) {
        self.model.genome(&self.core, index)
    }

    /// Genome `index` (1-based) packed, as [`super::packed::read_packed`] packs its file.
    pub fn packed(&self, index: usize, k: usize) -> PackedGenome {
        let (core, genes) = self.records(index);
        let name = format!("genome_{index}");
        let mut p = Packer::new(k, &name, &self.spec);
        p.record(&name);
        p.bases(&core);
        for &j in &genes {
            p.record(&name);
            p.bases(&self.pool[j]);
        }
        p.finish()
    }

    /// Genome `index` (1-based) whole, as [`super::read::read_genomes`] reads its file.
    pub fn whole(&self, index: usize, k: usize) -> Genome {
        let (core, genes) = self.records(index);
        let name = format!("genome_{index}");
        let mut records: Vec<(&str, &[u8])> = vec![(&name, &core)];
        for &j in &genes {
            records.push((&name, &self.pool[j]));
        }
        let mut g = Genome::from_records(&name, &records, k);
        g.path = self.spec.clone();
        g
    }
}

/// One genome of the inputs, for readers that take the genomes one at a time.
#[derive(Debug, Clone)]
pub enum GenomeInput {
    /// A FASTA file holding one genome.
    File(PathBuf),
    /// Genome `.1` (1-based) of a generated pangenome.
    Generated(Arc<Generated>, usize),
}

impl GenomeInput {
    /// The genome's k-mers packed: the file streamed into 2-bit text, or the genome made.
    pub fn packed(&self, k: usize) -> Result<PackedGenome, ReadError> {
        match self {
            GenomeInput::File(path) => {
                let mut g = super::packed::read_packed_file(path, super::read::Split::PerFile, k)?;
                Ok(g.pop().expect("a file is one genome"))
            }
            GenomeInput::Generated(p, i) => Ok(p.packed(*i, k)),
        }
    }

    /// The input's genomes read whole: a file's (one, or one per record with
    /// [`Split::PerRecord`]), or the genome made.
    pub fn read_whole(&self, split: Split, k: usize) -> Result<Vec<Genome>, ReadError> {
        match self {
            GenomeInput::File(path) => super::read::read_genomes(path, split, k),
            GenomeInput::Generated(p, i) => Ok(vec![p.whole(*i, k)]),
        }
    }

    /// The input's genomes streamed into 2-bit text, as [`Self::read_whole`] splits them.
    pub fn read_packed(&self, split: Split, k: usize) -> Result<Vec<PackedGenome>, ReadError> {
        match self {
            GenomeInput::File(path) => super::packed::read_packed_file(path, split, k),
            GenomeInput::Generated(p, i) => Ok(vec![p.packed(*i, k)]),
        }
    }

    /// The file, or the generated input as named.
    pub fn path(&self) -> &Path {
        match self {
            GenomeInput::File(path) => path,
            GenomeInput::Generated(p, _) => &p.spec,
        }
    }

    /// Bases the genome is expected to hold, before it is read: a plain file's size, a
    /// gzipped one's four times (DNA compresses about that much), a generated one's mean.
    pub fn expected_bases(&self) -> u64 {
        match self {
            GenomeInput::File(path) => {
                let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
                let gz = path
                    .extension()
                    .is_some_and(|e| e == "gz" || e == "bgz" || e == "gzip");
                if gz { 4 * bytes } else { bytes }
            }
            GenomeInput::Generated(p, _) => p.model.mean_bases() as u64,
        }
    }
}

/// The inputs as genomes, one file one genome, a generated input its genomes; each
/// generated pangenome is made once.
pub fn genome_inputs(files: &[PathBuf]) -> Result<Vec<GenomeInput>, ReadError> {
    let mut out = Vec::new();
    for f in files {
        match Generated::parse(f) {
            None => out.push(GenomeInput::File(f.clone())),
            Some(model) => {
                let g = Arc::new(Generated::new(f, model?));
                out.extend((1..=g.model.genomes).map(|i| GenomeInput::Generated(g.clone(), i)));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_input_names_a_preset_its_scale_and_seed() {
        let m = Generated::parse(Path::new("synth:seed-3,scale=0.1,seed=7"))
            .unwrap()
            .unwrap();
        assert_eq!((m.genomes, m.seed), (1_301, 7));
        assert!(Generated::parse(Path::new("genome.fa")).is_none());
        for (bad, says) in [
            ("synth:seed-9", "is not a preset"),
            ("synth:seed-2,scale=2", "not a fraction"),
            ("synth:seed-2,scale=x", "not a fraction"),
            ("synth:seed-2,seed=-1", "seed=-1"),
            ("synth:seed-2,size=3", "is not an option"),
        ] {
            let e = Generated::parse(Path::new(bad)).unwrap().unwrap_err();
            assert!(e.is_usage && e.message.contains(says), "{bad}: {e}");
        }
    }

    /// A generated genome is the genome `kmer synth --preset` writes: packed from its
    /// file or made, the same text, records and counts.
    #[test]
    fn a_generated_genome_is_its_written_file() {
        let model = Pangenome {
            genomes: 3,
            core: 20_000,
            genes: 40,
            gene_bases: 300,
            carriage: 0.3,
            snp_rate: 1e-3,
            seed: 5,
        };
        let dir = tempfile::tempdir().unwrap();
        let (paths, _) = model.write(dir.path()).unwrap();
        let g = Generated::new(Path::new("synth:x"), model);
        for (i, path) in paths.iter().enumerate() {
            let file = GenomeInput::File(path.clone()).packed(31).unwrap();
            let made = g.packed(i + 1, 31);
            assert_eq!(file.words, made.words);
            assert_eq!(file.segments, made.segments);
            assert_eq!(file.stats, made.stats);
            assert_eq!(file.name, made.name);
            let whole = g.whole(i + 1, 31);
            assert_eq!(whole.stats, file.stats);
        }
    }
}
