//! `pmscope list targets|strategies|ops`: generated from the registries, so it cannot drift.

use crate::args::ListWhat;
use crate::context::Context;
use crate::output::Sink;
use crate::output::table::Table;
use anyhow::Result;
use pmscope_loops::access::Width;
use pmscope_loops::catalog::CATALOG;
use pmscope_persist::{Persister, STRATEGIES};

pub fn run(ctx: &Context, sink: &mut Sink, what: ListWhat) -> Result<()> {
    match what {
        ListWhat::Targets => {
            if sink.json() {
                for k in pmscope_mapping::kinds::KINDS.iter() {
                    println!(
                        "{}",
                        serde_json::json!({"kind": k.name, "syntax": k.syntax, "doc": k.doc})
                    );
                }
            } else {
                for k in pmscope_mapping::kinds::KINDS.iter() {
                    println!("{}\n    {}\n", k.syntax, k.doc);
                }
            }
        }
        ListWhat::Strategies => {
            let mut t = Table::new(&["strategy", "supported here"]);
            for s in STRATEGIES {
                let ok = match Persister::new(s, &ctx.features) {
                    Ok(_) => "yes".to_string(),
                    Err(e) => format!("no: {e}"),
                };
                if sink.json() {
                    println!(
                        "{}",
                        serde_json::json!({"strategy": s.name(), "supported": ok == "yes"})
                    );
                }
                t.row(vec![s.name().into(), ok]);
            }
            sink.text(&t.render());
        }
        ListWhat::Ops => {
            let width = Width::widest(&ctx.features);
            let mut t = Table::new(&["op", "aliases", "needs", "supported here", "what it does"]);
            for r in &CATALOG {
                let aliases: Vec<&str> = r.names().skip(1).collect();
                let features: Vec<&str> = r.features().iter().map(|f| f.name()).collect();
                let ok = match r.sequence(width, &ctx.features) {
                    Ok(_) => "yes".to_string(),
                    Err(e) => format!("no: {}", e.reason),
                };
                if sink.json() {
                    println!(
                        "{}",
                        serde_json::json!({
                            "op": r.id,
                            "aliases": aliases,
                            "access": r.op.name(),
                            "flush": r.flush().name(),
                            "fence": r.fence.name(),
                            "features": features,
                            "strategy": r.strategy().map(|s| s.name()),
                            "supported": ok == "yes",
                            "doc": r.doc,
                        })
                    );
                }
                t.row(vec![
                    r.id.into(),
                    aliases.join(", "),
                    features.join(", "),
                    ok,
                    r.doc.into(),
                ]);
            }
            sink.text(&format!(
                "{}\n(supported here: with {}-byte instructions, the widest this CPU has)",
                t.render(),
                width.bytes()
            ));
        }
    }
    Ok(())
}
