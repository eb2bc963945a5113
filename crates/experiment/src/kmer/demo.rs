//! `pmscope kmer demo`'s genomes: in-group the S. aureus references, out-group every other
//! genome the Debian example packages ship (including a draft assembly of S. aureus
//! USA300). `kmer bench` counts the same in-group by default.

use anyhow::{Context as _, Result, anyhow};
use pmscope_workload::kmer::job::Operation;
use std::path::{Path, PathBuf};

/// Where `./dev setup` (Debian's ragout-examples and kaptive-example) puts the genomes.
pub const RAGOUT: &str = "/usr/share/doc/ragout/examples";
/// See [`RAGOUT`].
pub const KAPTIVE: &str = "/usr/share/doc/kaptive/examples";

/// The demo's primer job and its first line (which genomes are which).
pub fn operation(ragout: &Path, kaptive: &Path) -> Result<(Operation, String)> {
    let (in_group, out_group) = genomes(ragout, kaptive)?;
    let intro = format!(
        "in-group: the {} S. aureus reference genomes; out-group: the other {} genomes of ragout-examples and kaptive-example\n",
        in_group.len(),
        out_group.len()
    );
    let op = Operation::Primers {
        in_group,
        out_group,
    };
    Ok((op, intro))
}

/// The demo's genome files, sorted; an error naming the packages if they are missing.
pub fn genomes(ragout: &Path, kaptive: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let missing = || {
        anyhow!(
            "the Debian example genomes are not installed ({} or {} is missing); install them with `./dev setup` or `apt-get install ragout-examples kaptive-example`",
            ragout.display(),
            kaptive.display()
        )
    };
    if !ragout.is_dir() || !kaptive.is_dir() {
        return Err(missing());
    }
    let mut all = Vec::new();
    collect_fasta(ragout, &mut all)?;
    collect_fasta(kaptive, &mut all)?;
    all.sort();
    let (in_group, out_group): (Vec<PathBuf>, Vec<PathBuf>) = all.into_iter().partition(|p| {
        p.parent().and_then(|d| d.file_name()) == Some("references".as_ref())
            && p.components().any(|c| c.as_os_str() == "S.Aureus")
    });
    if in_group.is_empty() || out_group.is_empty() {
        return Err(missing());
    }
    Ok((in_group, out_group))
}

fn collect_fasta(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            collect_fasta(&p, out)?;
        } else if p.to_string_lossy().ends_with(".fasta.gz") {
            out.push(p);
        }
    }
    Ok(())
}
