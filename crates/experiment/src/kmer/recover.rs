//! `pmscope kmer recover`: checks a static-pm or tx-pm pool after a crash and says what it
//! holds (a `kmer-recover` record, kept out of the results store: nothing is measured).

use super::table_error;
use crate::Env;
use crate::output::Output;
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};
use pmscope_workload::kmer::table::TableKind;
use pmscope_workload::kmer::table::{static_pm, tx_pm};
use std::path::Path;

/// Checks the pool and emits its record.
pub fn measure(env: &Env, out: &mut dyn Output, pool: &Path) -> anyhow::Result<()> {
    out.keep_out_of_store();
    let record = if tx_pm::stored_layout(pool).is_some() {
        tx(env, pool)?
    } else {
        static_pm(env, pool)?
    };
    out.emit(&record)
}

/// A static-pm pool: its header, then its slots walked (cut-short inserts cleared).
fn static_pm(env: &Env, pool: &Path) -> anyhow::Result<Record> {
    let opts = pmscope_mapping::MapOptions::host();
    let (h, rec) = static_pm::check_pool(pool, &opts).map_err(table_error)?;
    Ok(env
        .record("kmer-recover")
        .param(p::POOL, pool.display().to_string())
        .param(p::TABLE, TableKind::StaticPm.name())
        .param(p::K, h.k)
        .param(p::PERSIST, h.strategy.to_string())
        .value(v::TABLE_SLOTS, h.capacity as f64)
        .value(v::GENOMES_COMPLETED, h.done as f64)
        .value(v::VALID_KMERS, rec.valid as f64)
        .value(v::GENOME_COUNTS, rec.counted as f64)
        .value(v::CLEARED_INSERTS, rec.cleared as f64))
}

/// A tx-pm pool: PMDK's check, then the table's own walk (PMDK rolls back a transaction a
/// crash cut short when the pool is opened).
fn tx(env: &Env, pool: &Path) -> anyhow::Result<Record> {
    let (h, c) = tx_pm::check_pool(pool).map_err(table_error)?;
    Ok(env
        .record("kmer-recover")
        .param(p::POOL, pool.display().to_string())
        .param(p::TABLE, TableKind::TxPm.name())
        .param(p::K, h.k)
        .value(v::TABLE_BUCKETS, h.buckets as f64)
        .value(v::GENOMES_COMPLETED, h.done as f64)
        .value(v::VALID_KMERS, c.entries as f64)
        .value(v::GENOME_COUNTS, c.counted as f64))
}

/// What each checked pool holds, from the `kmer-recover` records.
pub fn render(records: &[Record]) -> String {
    let mut s = String::new();
    for r in records.iter().filter(|r| r.experiment == "kmer-recover") {
        let n = |key| r.val(key).unwrap_or_default();
        let pool = r.text(p::POOL).unwrap_or_default();
        let k = r.count(p::K).unwrap_or_default();
        match r.text(p::TABLE).and_then(|t| t.parse::<TableKind>().ok()) {
            Some(TableKind::TxPm) => {
                s += &format!(
                    "{pool}: tx-pm pool (libpmemobj, consistent by pmemobj_check), K = {k}, {} buckets\n  \
                     {} genomes completed; {} k-mers ({} genome counts)\n",
                    n(v::TABLE_BUCKETS),
                    n(v::GENOMES_COMPLETED),
                    n(v::VALID_KMERS),
                    n(v::GENOME_COUNTS)
                );
            }
            _ => {
                s += &format!(
                    "{pool}: static-pm pool, K = {k}, {} slots, written with --persist {}\n  \
                     {} genomes completed; {} k-mers ({} genome counts); {} cut-short inserts cleared\n",
                    n(v::TABLE_SLOTS),
                    r.text(p::PERSIST).unwrap_or_default(),
                    n(v::GENOMES_COMPLETED),
                    n(v::VALID_KMERS),
                    n(v::GENOME_COUNTS),
                    n(v::CLEARED_INSERTS)
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pool_kind_is_described_from_its_record() {
        let base = || Record::new("kmer-recover", Vec::new(), Default::default());
        let s = base()
            .param(p::POOL, "p.pool")
            .param(p::TABLE, "static-pm")
            .param(p::K, 5)
            .param(p::PERSIST, "clwb")
            .value(v::TABLE_SLOTS, 1024.0)
            .value(v::GENOMES_COMPLETED, 2.0)
            .value(v::VALID_KMERS, 30.0)
            .value(v::GENOME_COUNTS, 40.0)
            .value(v::CLEARED_INSERTS, 0.0);
        let t = base()
            .param(p::POOL, "t.pool")
            .param(p::TABLE, "tx-pm")
            .param(p::K, 5)
            .value(v::TABLE_BUCKETS, 64.0)
            .value(v::GENOMES_COMPLETED, 1.0)
            .value(v::VALID_KMERS, 3.0)
            .value(v::GENOME_COUNTS, 3.0);
        assert_eq!(
            render(&[s, t]),
            "p.pool: static-pm pool, K = 5, 1024 slots, written with --persist clwb\n  \
             2 genomes completed; 30 k-mers (40 genome counts); 0 cut-short inserts cleared\n\
             t.pool: tx-pm pool (libpmemobj, consistent by pmemobj_check), K = 5, 64 buckets\n  \
             1 genomes completed; 3 k-mers (3 genome counts)\n"
        );
    }
}
