//! The `sync` table, drawn from records alone.

use crate::render::fields::{by_target, short_reason};
use crate::render::table::Table;
use pmscope_core::fence::fence_cost;
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};

/// A table per target, from the `sync` records alone: pmmeter's options in its order.
pub fn render(records: &[Record]) -> String {
    let mut out = String::new();
    for (spec, rows) in by_target(records, "sync") {
        let first = rows[0];
        let threads = first.count(p::THREADS).unwrap_or_default();
        // The `+F` rows carry the fence `--fence` chose.
        let plus_f = rows
            .iter()
            .find(|r| r.text(p::OPTION).unwrap_or_default().ends_with("+F"))
            .map_or("mfence", |r| r.text(p::FENCE).unwrap_or_default());
        out += &format!(
            "{spec}: 64-byte blocks of {}-byte instructions, {threads} thread{}, GB/s = 10^9 B/s, +F = {plus_f} after each block\n",
            first.count(p::UNIT_BYTES).unwrap_or_default(),
            if threads == 1 { "" } else { "s" },
        );
        let mut t = Table::new(&[
            "option",
            "pattern",
            "GB/s",
            "min",
            "max",
            "M instr/s",
            "x -> x+F",
        ]);
        for r in &rows {
            let (name, pattern) = (
                r.text(p::OPTION).unwrap_or_default().to_string(),
                r.text(p::PATTERN).unwrap_or_default().to_string(),
            );
            match &r.summary {
                Some(s) => t.row(vec![
                    name,
                    pattern,
                    format!("{:.2}", s.p50),
                    format!("{:.2}", s.min),
                    format!("{:.2}", s.max),
                    format!(
                        "{:.0}",
                        r.val(v::MILLION_INSTRUCTIONS_PER_S).unwrap_or_default()
                    ),
                    fence_cost(&rows, r).map_or(String::new(), |c| c.to_string()),
                ]),
                None => t.row(vec![
                    name,
                    pattern,
                    format!(
                        "n/a: {}",
                        short_reason(r.text(p::UNSUPPORTED).unwrap_or_default())
                    ),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    String::new(),
                ]),
            }
        }
        out += &format!("{}\n", t.render());
        out += "x -> x+F: what the fence after each block costs (seed 002's headline): the +F option's throughput against the option without it, and the time it adds per block on each thread\n\n";
    }
    out
}
