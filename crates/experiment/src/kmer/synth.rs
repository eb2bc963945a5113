//! `pmscope kmer synth`: a random reference and strains derived from it by SNPs and indels,
//! or with `--preset` a pangenome shaped like one of seed 003's datasets (a `kmer-synth`
//! record, kept out of the results store: nothing is measured).

use super::params::SynthArgs;
use crate::Env;
use crate::error::usage;
use crate::output::Output;
use crate::render::thousands;
use anyhow::{Result, anyhow};
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};
use pmscope_workload::kmer::synth::{PRESETS, Pangenome, SynthSpec, write_dataset};
use std::path::PathBuf;

/// The data set to write, checked.
pub struct Plan {
    dir: PathBuf,
    what: Dataset,
}

enum Dataset {
    /// A reference and strains of it.
    Strains(SynthSpec),
    /// A preset's pangenome, at a scale.
    Pangenome {
        preset: String,
        scale: f64,
        model: Pangenome,
    },
}

/// Checks the preset, or the length and the rates.
pub fn plan(a: &SynthArgs) -> Result<Plan> {
    if let Some(name) = &a.preset {
        let scale = a.scale.unwrap_or(1.0);
        if !(scale > 0.0 && scale <= 1.0) {
            return Err(usage(format!(
                "--scale {scale} is not a fraction of the preset's genomes: give a number above 0 and at most 1"
            )));
        }
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        let model = Pangenome::preset(name, scale).ok_or_else(|| {
            usage(format!(
                "--preset {name} is not a preset: use one of {}",
                names.join(", ")
            ))
        })?;
        return Ok(Plan {
            dir: a.dir.clone(),
            what: Dataset::Pangenome {
                preset: name.clone(),
                scale,
                model: Pangenome {
                    seed: model.seed ^ a.seed.wrapping_sub(1),
                    ..model
                },
            },
        });
    }
    let length = parse_bases(&a.length)?;
    for (name, rate) in [("--snp-rate", a.snp_rate), ("--indel-rate", a.indel_rate)] {
        if !(0.0..=0.5).contains(&rate) {
            return Err(usage(format!(
                "{name} {rate} is not a rate per base between 0 and 0.5"
            )));
        }
    }
    Ok(Plan {
        dir: a.dir.clone(),
        what: Dataset::Strains(SynthSpec {
            length,
            strains: a.strains,
            snp_rate: a.snp_rate,
            indel_rate: a.indel_rate,
            seed: a.seed,
        }),
    })
}

/// Writes the data set into a new directory and emits its record.
pub fn measure(env: &Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    out.keep_out_of_store();
    std::fs::create_dir_all(&p.dir)
        .map_err(|e| usage(format!("cannot create {}: {e}", p.dir.display())))?;
    let written = match &p.what {
        Dataset::Strains(s) => write_dataset(&p.dir, s).map(|paths| (paths, s.length as u64)),
        Dataset::Pangenome { model, .. } => model.write(&p.dir),
    };
    let (paths, bases) = written.map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            usage(format!(
                "{} already holds a synthetic data set; choose an empty directory",
                p.dir.display()
            ))
        } else {
            anyhow!("writing into {}: {e}", p.dir.display())
        }
    })?;
    let record = env
        .record("kmer-synth")
        .param(p::DIRECTORY, p.dir.display().to_string())
        .param(
            p::GENOME_FILES,
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
        )
        .value(v::BASES, bases as f64)
        .value(v::GENOMES_WRITTEN, paths.len() as f64);
    let record = match &p.what {
        Dataset::Strains(s) => record
            .param(p::STRAINS, s.strains)
            .param(p::SNP_RATE, s.snp_rate)
            .param(p::INDEL_RATE, s.indel_rate)
            .param(p::SEED, s.seed),
        Dataset::Pangenome {
            preset,
            scale,
            model,
        } => record
            .param(p::PRESET, preset.as_str())
            .param(p::PRESET_SCALE, *scale)
            .param(p::CORE_BASES, model.core)
            .param(p::ACCESSORY_GENES, model.genes)
            .param(p::CARRIAGE, model.carriage)
            .param(p::SNP_RATE, model.snp_rate)
            .param(p::SEED, model.seed)
            .value(v::DISTINCT_KMERS_MODEL, model.distinct_estimate(100)),
    };
    out.emit(&record)
}

/// What was written, from the `kmer-synth` records.
pub fn render(records: &[Record]) -> String {
    let mut s = String::new();
    for r in records.iter().filter(|r| r.experiment == "kmer-synth") {
        match r.text(p::PRESET) {
            Some(preset) => {
                s += &format!(
                    "wrote {} genomes of preset {preset} ({} bases; about {} distinct 100-mers by the model) into {}\n",
                    r.val(v::GENOMES_WRITTEN).unwrap_or_default(),
                    thousands(r.val(v::BASES).unwrap_or_default() as u64),
                    thousands(r.val(v::DISTINCT_KMERS_MODEL).unwrap_or_default() as u64),
                    r.text(p::DIRECTORY).unwrap_or_default()
                )
            }
            None => {
                s += &format!(
                    "wrote {} genomes of about {} bases into {}\n",
                    r.val(v::GENOMES_WRITTEN).unwrap_or_default(),
                    thousands(r.val(v::BASES).unwrap_or_default() as u64),
                    r.text(p::DIRECTORY).unwrap_or_default()
                )
            }
        }
    }
    s
}

/// `5M` = 5,000,000 bases (decimal, as genome sizes are given).
fn parse_bases(s: &str) -> Result<usize> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000.0),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000.0),
        Some((i, 'g' | 'G')) => (&t[..i], 1_000_000_000.0),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| usage(format!("--length '{s}' is not a number of bases (e.g. 5M)")))?;
    let n = (v * mult).round();
    if !(1.0..=1e11).contains(&n) {
        return Err(usage(format!(
            "--length '{s}' must be between 1 and 100G bases"
        )));
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_take_decimal_suffixes_and_refuse_the_rest() {
        assert_eq!(parse_bases("5M").unwrap(), 5_000_000);
        assert_eq!(parse_bases("20k").unwrap(), 20_000);
        assert_eq!(parse_bases("1.5G").unwrap(), 1_500_000_000);
        assert!(parse_bases("0").is_err());
        assert!(parse_bases("x").is_err());
    }

    #[test]
    fn the_table_reads_the_record() {
        let r = Record::new("kmer-synth", Vec::new(), Default::default())
            .param(p::DIRECTORY, "syn")
            .value(v::BASES, 20_000.0)
            .value(v::GENOMES_WRITTEN, 4.0);
        assert_eq!(
            render(&[r]),
            "wrote 4 genomes of about 20 000 bases into syn\n"
        );
    }
}
