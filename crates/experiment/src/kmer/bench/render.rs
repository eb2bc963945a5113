//! Table 9, drawn from the `kmer-bench` records alone: configuration, mode, data structure,
//! MIPS; then the ratio to the volatile table and the persistence cost per insert.

use super::NOT_COUNTED;
use crate::render::table::Table;
use crate::render::thousands;
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};
use pmscope_workload::kmer::table::TableKind;

/// The table of every `kmer-bench` record (empty without any).
pub fn render(records: &[Record]) -> String {
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment == "kmer-bench")
        .collect();
    let Some(r0) = rows.first() else {
        return String::new();
    };
    let n = |r: &Record, key| r.val(key).unwrap_or_default();
    let mut s = format!(
        "pmscope kmer bench: {} genomes, {:.1} Mbp, {} k-mers inserted, {} distinct, k = {}, {} threads, on {}\n\n",
        r0.get(p::GENOME_FILES)
            .and_then(|g| g.as_array())
            .map_or(0, |g| g.len()),
        n(r0, v::BASES) / 1e6,
        thousands(n(r0, v::INSERTS) as u64),
        thousands(n(r0, v::UNION_KMERS) as u64),
        r0.count(p::K).unwrap_or_default(),
        r0.count(p::THREADS).unwrap_or_default(),
        r0.spec().unwrap_or_default()
    );
    let mut t = Table::new(&[
        "target (persistence)",
        "mode",
        "data structure",
        "MIPS",
        "vs volatile",
        "flushes/insert",
        "fences/insert",
        "load",
        "growth (not in MIPS)",
    ]);
    for r in &rows {
        t.row(row(r));
    }
    s += &t.render();
    if rows.iter().any(|r| libpmem_msyncs(r)) {
        s += "\n\nnote: tx-pm's pool is not on DAX, so libpmem makes it durable with msync while static-pm uses CPU flushes: set PMEM_IS_PMEM_FORCE=1 to have libpmem flush with CPU instructions as the seed did on emulated pmem, and compare like with like.";
    }
    s += "\n\nMIPS: million inserts per second in the insert phase (every k-mer of every genome, repeats included), without the time a table spent growing between genomes (the volatile table grows when the next genome could overfill it; static-pm's pool is sized for the whole job up front): that rehash is not an insert cost of the seed's presized tables, and the growth column gives it; one run per table.\n";
    s
}

/// One table's row.
fn row(r: &Record) -> Vec<String> {
    let n = |key| r.val(key).unwrap_or_default();
    let table = r.text(p::TABLE).unwrap_or_default();
    let means = r.text(p::PERSIST_MEANS).unwrap_or_default();
    let structure = table.parse::<TableKind>().map_or("", |k| k.structure());
    // A table that makes nothing durable is the volatile mode; the others are App Direct.
    let (mode, structure) = if means == "none" {
        ("volatile", format!("{table} ({structure})"))
    } else {
        ("AD", format!("{table} ({structure}, {means})"))
    };
    let (flushes, fences) = match (r.val(v::FLUSHES_PER_INSERT), r.val(v::FENCES_PER_INSERT)) {
        (Some(f), Some(n)) => (format!("{f:.3}"), format!("{n:.3}")),
        _ => (NOT_COUNTED.to_string(), NOT_COUNTED.to_string()),
    };
    let persistence = r
        .target
        .as_ref()
        .map(|t| t.achieved.persistence.describe())
        .unwrap_or_default();
    vec![
        format!("{} ({persistence})", r.spec().unwrap_or_default()),
        mode.into(),
        structure,
        format!("{:.2}", n(v::INSERT_MIPS)),
        format!("{:.2}", n(v::MIPS_VS_VOLATILE)),
        flushes,
        fences,
        format!("{:.2}", n(v::TABLE_LOAD_FACTOR)),
        growth(r),
    ]
}

/// Whether libpmem made this table durable with msync (tx-pm's pool not on DAX).
fn libpmem_msyncs(r: &Record) -> bool {
    r.text(p::PERSIST_MEANS)
        .is_some_and(|m| m.starts_with("libpmem") && m.contains("msync"))
}

/// How often the table grew during the insert phase, and the time that took.
fn growth(r: &Record) -> String {
    match r.val(v::TABLE_GROWN).map(|g| g as u64) {
        None | Some(0) => "none".into(),
        Some(n) => format!(
            "{n}x, {:.2} s ({:.2} MIPS with it)",
            r.val(v::GROW_MS).unwrap_or_default() / 1e3,
            r.val(v::INSERT_MIPS_WITH_GROWTH).unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fields::on_target;

    fn table(name: &str, means: &str, mips: f64, per_insert: Option<f64>) -> Record {
        let mut r = Record::new("kmer-bench", Vec::new(), Default::default())
            .param(p::TABLE, name)
            .param(p::PERSIST_MEANS, means)
            .param(p::K, 21)
            .param(p::GENOME_FILES, vec!["a.fa", "b.fa"])
            .value(v::BASES, 80_000.0)
            .value(v::INSERTS, 79_960.0)
            .value(v::UNION_KMERS, 39_980.0)
            .value(v::INSERT_MIPS, mips)
            .value(v::MIPS_VS_VOLATILE, mips / 20.0)
            .value(v::TABLE_GROWN, 0.0);
        if let Some(f) = per_insert {
            r = r
                .value(v::FLUSHES_PER_INSERT, f)
                .value(v::FENCES_PER_INSERT, f / 2.0);
        }
        on_target(r, "shm:4k")
    }

    #[test]
    fn table_9_from_the_records() {
        let s = render(&[
            table("volatile", "none", 20.0, Some(0.0)),
            table("static-pm", "clwb", 10.0, Some(1.0)),
            table("tx-pm", "libpmem: msync (not DAX)", 0.1, None),
        ]);
        assert!(
            s.starts_with("pmscope kmer bench: 2 genomes, 0.1 Mbp, 79 960 k-mers inserted, 39 980 distinct, k = 21"),
            "{s}"
        );
        assert!(s.contains("volatile (open addressing)"), "{s}");
        assert!(s.contains("static-pm (Static-HT, clwb)"), "{s}");
        assert!(
            s.contains("tx-pm (PMDK-HT, libpmem: msync (not DAX))"),
            "{s}"
        );
        assert!(s.contains(NOT_COUNTED), "{s}");
        assert!(s.contains("set PMEM_IS_PMEM_FORCE=1"), "{s}");
        assert_eq!(render(&[]), "");
    }
}
