//! Table 9, drawn from the `kmer-bench` records alone: configuration, mode, data structure,
//! MIPS; then the ratio to the volatile table and the persistence cost per insert. With
//! several targets (Fig. 18's layout), a second table sets them side by side: each table's
//! insert time on each target and its ratio to the first target's.

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
        targets(&rows).join(", ")
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
    s += &side_by_side(&rows);
    s += "\n\nMIPS: million inserts per second in the insert phase (every k-mer of every genome, repeats included), without the time a table spent growing between genomes (the volatile table is sized for the job's worst case up front and grows only when the estimate of distinct k-mers fell short; static-pm's pool is sized for the whole job up front): that rehash is not an insert cost of the seed's presized tables, and the growth column gives it; one run per table.\n";
    s
}

/// The targets of the records, in first-seen order.
fn targets(rows: &[&Record]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for r in rows {
        let t = r.spec().unwrap_or_default().to_string();
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    seen
}

/// Seconds of inserting, without growth: what MIPS is the rate of.
pub fn insert_seconds(r: &Record) -> Option<f64> {
    let ms = r.val(v::INSERT_MS)? - r.val(v::GROW_MS).unwrap_or_default();
    Some(ms / 1e3)
}

/// With several targets: one row per table, its insert time on each target, and the
/// ratio of each later target's time to the first's (above 1: slower than the first).
fn side_by_side(rows: &[&Record]) -> String {
    let specs = targets(rows);
    if specs.len() < 2 {
        return String::new();
    }
    let mut head = vec!["data structure".to_string()];
    head.extend(specs.iter().map(|t| format!("{t} (s)")));
    head.extend(specs[1..].iter().map(|t| format!("{t} / {}", specs[0])));
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&head);
    let mut kinds: Vec<String> = Vec::new();
    for r in rows {
        let k = describe(r);
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    for kind in &kinds {
        let time = |spec: &String| {
            rows.iter()
                .find(|r| describe(r) == *kind && r.spec().unwrap_or_default() == spec)
                .and_then(|r| insert_seconds(r))
        };
        let times: Vec<Option<f64>> = specs.iter().map(time).collect();
        let mut row = vec![kind.clone()];
        row.extend(
            times
                .iter()
                .map(|s| s.map_or("-".into(), |s| format!("{s:.3}"))),
        );
        row.extend(times[1..].iter().map(|s| match (s, times[0]) {
            (Some(s), Some(first)) if first > 0.0 => format!("{:.2}x", s / first),
            _ => "-".into(),
        }));
        t.row(row);
    }
    format!(
        "\n\nside by side: insert time without growth per target (one run each), and its ratio to {}'s\n{}",
        specs[0],
        t.render()
    )
}

/// A table as the side-by-side rows name it: its kind, and for static-pm its fence.
fn describe(r: &Record) -> String {
    let table = r.text(p::TABLE).unwrap_or_default();
    match r.text(p::TABLE_FENCE) {
        Some(f) => format!("{table} ({f} fence)"),
        None => table.to_string(),
    }
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
        let fence = r
            .text(p::TABLE_FENCE)
            .map(|f| format!(", {f} fence"))
            .unwrap_or_default();
        ("AD", format!("{table} ({structure}, {means}{fence})"))
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

    #[test]
    fn two_targets_side_by_side_with_the_ratio_to_the_first() {
        let timed = |name: &str, target: &str, ms: f64| {
            let mut r = table(name, "clwb", 10.0, Some(1.0))
                .value(v::INSERT_MS, ms)
                .value(v::GROW_MS, 0.0);
            if name == "static-pm" {
                r = r.param(p::TABLE_FENCE, "per-slot");
            }
            on_target(r, target)
        };
        let s = render(&[
            timed("volatile", "shm:4k", 100.0),
            timed("static-pm", "shm:4k", 200.0),
            timed("volatile", "file:/mnt/pmem", 150.0),
            timed("static-pm", "file:/mnt/pmem", 800.0),
        ]);
        assert!(s.contains("threads, on shm:4k, file:/mnt/pmem\n"), "{s}");
        assert!(
            s.contains("static-pm (Static-HT, clwb, per-slot fence)"),
            "{s}"
        );
        let side = &s[s.find("side by side").expect("a side-by-side table")..];
        assert!(side.contains("file:/mnt/pmem / shm:4k"), "{side}");
        let line = |kind: &str| {
            side.lines()
                .find(|l| l.trim_start().starts_with(kind))
                .unwrap_or_else(|| panic!("no {kind} row: {side}"))
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert!(line("volatile").ends_with("0.100 0.150 1.50x"), "{side}");
        assert!(
            line("static-pm (per-slot fence)").ends_with("0.200 0.800 4.00x"),
            "{side}"
        );
        // One target: no side-by-side table.
        assert!(!render(&[timed("volatile", "shm:4k", 1.0)]).contains("side by side"));
    }
}
