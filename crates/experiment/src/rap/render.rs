//! The `rap` table, drawn from records alone.

use crate::render::fields::by_target;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::vocab::p;

/// A table per target, from the records alone: the `rap` curve, then its `rap-idle`
/// baseline.
pub fn render(records: &[Record]) -> String {
    let mut out = String::new();
    for (spec, idle) in by_target(records, "rap-idle") {
        let persist = idle[0].text(p::PERSIST).unwrap_or_default();
        let Some(idle) = idle[0].summary.as_ref() else {
            continue;
        };
        out += &format!(
            "{spec}: load of the line persisted d lines earlier ({} + its fence), random lines; timer overhead subtracted\n",
            persist
        );
        let mut t = Table::new(&["distance d", "p50 ns", "p99 ns", "vs idle load"]);
        let curve = records
            .iter()
            .filter(|r| r.experiment == "rap" && r.spec().unwrap_or_default() == spec);
        for r in curve {
            let Some(s) = &r.summary else { continue };
            t.row(vec![
                r.count(p::DISTANCE_LINES).unwrap_or_default().to_string(),
                format!("{:.1}", s.p50),
                format!("{:.1}", s.p99),
                format!("{:.2}x", s.p50 / idle.p50.max(0.1)),
            ]);
        }
        t.row(vec![
            "idle (flushed line)".into(),
            format!("{:.1}", idle.p50),
            format!("{:.1}", idle.p99),
            "1.00x".into(),
        ]);
        out += &format!("{}\n\n", t.render());
    }
    out
}
