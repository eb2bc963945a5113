//! The `inst` tables, drawn from records alone: seed 003's Table 5 layout, and on request
//! every cell's histogram.

use crate::render::fields::{by_target, short_reason};
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::vocab::p;
use std::fmt::Write;

/// The seed 003 Table 5 layout, from the `inst` records alone: a row per op x fence x size
/// x pattern (in the order measured), a column pair per target, and the slowdown against
/// the first target.
pub fn render(records: &[Record]) -> String {
    let columns = by_target(records, "inst");
    let mut rows: Vec<Key> = Vec::new();
    for (_, rs) in &columns {
        for r in rs {
            let k = key(r);
            if !rows.contains(&k) {
                rows.push(k);
            }
        }
    }
    // The vector width of the cells wider than 8 bytes (8-byte cells use 8-byte moves).
    let width = records
        .iter()
        .filter(|r| r.experiment == "inst" && r.count(p::ACCESS_BYTES).unwrap_or_default() != 8)
        .map(|r| r.count(p::WIDTH_BYTES).unwrap_or_default())
        .next()
        .unwrap_or(8);
    let mut header: Vec<String> = vec![
        "op".into(),
        "fence".into(),
        "bytes".into(),
        "pattern".into(),
    ];
    for (i, (name, _)) in columns.iter().enumerate() {
        header.push(format!("{name} p50 ns"));
        header.push("p99".into());
        if i > 0 {
            header.push("slowdown".into());
        }
    }
    let h: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    let mut t = Table::new(&h);
    for k in &rows {
        t.row(row(&columns, *k));
    }
    format!(
        "single-access latency ({width}-byte instructions; loads flushed first; timer overhead subtracted)\n{}\n",
        t.render()
    )
}

/// A cell of the table, as its records name it: op, fence, bytes, pattern.
type Key<'r> = (&'r str, &'r str, u64, &'r str);

/// A cell of the table, as its records name it.
fn key(r: &Record) -> Key<'_> {
    (
        r.text(p::OP).unwrap_or_default(),
        r.text(p::FENCE).unwrap_or_default(),
        r.count(p::ACCESS_BYTES).unwrap_or_default(),
        r.text(p::PATTERN).unwrap_or_default(),
    )
}

/// The row of cell `k`: its name, then each target's p50 and p99 (and slowdown against the
/// first), or why it was not measured.
fn row<'r>(columns: &[(&str, Vec<&'r Record>)], k: Key<'_>) -> Vec<String> {
    let find = |rs: &[&'r Record]| rs.iter().find(|r| key(r) == k).copied();
    let mut row = vec![
        k.0.to_string(),
        k.1.to_string(),
        k.2.to_string(),
        k.3.to_string(),
    ];
    let first = columns
        .first()
        .and_then(|(_, rs)| find(rs))
        .and_then(|r| r.summary.as_ref())
        .map(|s| s.p50);
    for (i, (_, rs)) in columns.iter().enumerate() {
        let r = find(rs);
        match (r.and_then(|r| r.summary.as_ref()), r) {
            (Some(s), _) => {
                row.push(format!("{:.1}", s.p50));
                row.push(format!("{:.1}", s.p99));
                if i > 0 {
                    row.push(match first {
                        Some(f) if f > 0.0 => format!("{:.2}x", s.p50 / f),
                        _ => "-".into(),
                    });
                }
            }
            (None, r) => {
                row.push(
                    match r.map(|r| r.text(p::UNSUPPORTED).unwrap_or_default()) {
                        Some(why) if !why.is_empty() => format!("n/a: {}", short_reason(why)),
                        _ => "-".into(),
                    },
                );
                row.push("-".into());
                if i > 0 {
                    row.push("-".into());
                }
            }
        }
    }
    row
}

/// Every measured cell's per-access distribution (seed 003 Figures 6-7), from the records.
pub fn histograms(records: &[Record]) -> String {
    let mut out = String::new();
    for r in records.iter().filter(|r| r.experiment == "inst") {
        let (Some(s), Some(h)) = (&r.summary, &r.histogram) else {
            continue;
        };
        let _ = writeln!(
            out,
            "\n{} {} fence={} {} B {}: p50 {:.1} ns, p99 {:.1}, max {:.1} ({} accesses)",
            r.spec().unwrap_or("?"),
            r.text(p::OP).unwrap_or("?"),
            r.text(p::FENCE).unwrap_or("?"),
            r.count(p::ACCESS_BYTES).unwrap_or_default(),
            r.text(p::PATTERN).unwrap_or("?"),
            s.p50,
            s.p99,
            s.max,
            s.n
        );
        out += &crate::render::histogram::text(h);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::summary::Summary;
    use pmscope_core::vocab::Pattern;

    #[test]
    fn table_has_every_cell_for_every_target() {
        let record = |spec: &str, op: &str, fence: &str, size: u64, pattern: Pattern, scale| {
            let mut r = Record::new("inst", vec![], Default::default())
                .param(p::OP, op)
                .param(p::FENCE, fence)
                .param(p::ACCESS_BYTES, size)
                .param(p::PATTERN, pattern.name())
                .param(p::WIDTH_BYTES, if size == 8 { 8 } else { 32 });
            r = crate::render::fields::on_target(r, spec);
            if op == "ntload" && size == 8 {
                r = r.param(
                    p::UNSUPPORTED,
                    "ntload with 8-byte instructions: movntdqa has no 8-byte form",
                );
            } else {
                r.summary = Some(Summary::of(&[100.0 * scale, 200.0 * scale]).unwrap());
            }
            r
        };
        let mut records = Vec::new();
        for (spec, scale) in [("dram:4k", 1.0), ("shm:4k", 2.0)] {
            for op in ["load", "ntload"] {
                for fence in ["none", "mfence"] {
                    for size in [8, 64] {
                        for pattern in [Pattern::Seq, Pattern::Rand] {
                            records.push(record(spec, op, fence, size, pattern, scale));
                        }
                    }
                }
            }
        }
        let text = render(&records);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("single-access latency (32-byte instructions"));
        assert_eq!(lines.len(), 2 + 16, "a title, a header and a row per cell");
        assert!(
            lines[1].contains("dram:4k p50 ns")
                && lines[1].contains("shm:4k p50 ns")
                && lines[1].contains("slowdown")
        );
        for l in &lines[2..] {
            assert!(
                l.contains("2.00x") || l.contains("n/a: movntdqa has no 8-byte form"),
                "{l}"
            );
        }
        assert_eq!(
            text.matches("n/a:").count(),
            2 * 2 * 2,
            "ntload at 8 B, both fences, both patterns, both targets"
        );
    }
}
