//! The `probe` tables, drawn from records alone.

use super::KNEE_RISE;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{p, v};
use std::fmt::Write;

/// A curve's name: the parameters of its records that are not the point's or the run's
/// (`lines=2 pattern=rand`).
fn variant(r: &Record) -> String {
    let common = [
        p::PROBE,
        p::WORKING_SET_BYTES,
        p::SAMPLES,
        p::KNEE_FOUND,
        p::EXECUTOR,
    ];
    r.params
        .iter()
        .filter(|(k, _)| !common.iter().any(|c| c.name() == k.as_str()))
        .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Per target: a row per working set and a column per variant (median ns per visit), then
/// the knee of each curve.
pub fn render(records: &[Record]) -> String {
    let mut out = String::new();
    let mut targets: Vec<&str> = records.iter().filter_map(|r| r.spec()).collect();
    targets.dedup();
    for t in targets {
        let of = |e: &str| -> Vec<&Record> {
            records
                .iter()
                .filter(|r| r.experiment == e && r.spec() == Some(t))
                .collect()
        };
        let points = of("probe");
        let Some(first) = points.first() else {
            continue;
        };
        let _ = writeln!(
            out,
            "{t}: probe {}, median ns per visit (loads flushed first)",
            first.text(p::PROBE).unwrap_or("?")
        );
        out += &table(&points);
        for k in of("probe-knee") {
            let _ = match (
                k.val(v::KNEE_BYTES),
                k.val(v::BEFORE_NS),
                k.val(v::AFTER_NS),
            ) {
                (Some(b), Some(x), Some(y)) => writeln!(
                    out,
                    "  {}: knee at {} ({x:.1} -> {y:.1} ns)",
                    variant(k),
                    Bytes(b as u64)
                ),
                _ => writeln!(
                    out,
                    "  {}: no knee (no rise above {:.0}% between neighbouring working sets)",
                    variant(k),
                    100.0 * KNEE_RISE
                ),
            };
        }
        out.push('\n');
    }
    out
}

/// One target's points: a row per working set, a column per curve.
fn table(points: &[&Record]) -> String {
    let mut variants: Vec<String> = points.iter().map(|r| variant(r)).collect();
    variants.dedup();
    let mut sizes: Vec<u64> = points
        .iter()
        .filter_map(|r| r.count(p::WORKING_SET_BYTES))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut header = vec!["working set".to_string()];
    header.extend(variants.iter().cloned());
    let header: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    let mut table = Table::new(&header);
    for ws in sizes {
        let mut row = vec![Bytes(ws).to_string()];
        for v in &variants {
            row.push(
                points
                    .iter()
                    .find(|r| variant(r) == *v && r.count(p::WORKING_SET_BYTES) == Some(ws))
                    .and_then(|r| r.summary.as_ref())
                    .map(|s| format!("{:.1}", s.p50))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        table.row(row);
    }
    format!("{}\n", table.render())
}
