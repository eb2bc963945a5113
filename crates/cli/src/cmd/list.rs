//! `pmscope list targets|strategies`: generated from the registries, so it cannot drift.

use crate::args::ListWhat;
use crate::context::Context;
use crate::output::Sink;
use crate::output::table::Table;
use anyhow::Result;
use pmscope_persist::{Persister, STRATEGIES};

pub fn run(ctx: &Context, sink: &mut Sink, what: ListWhat) -> Result<()> {
    match what {
        ListWhat::Targets => {
            if sink.json() {
                for k in pmscope_mapping::kinds::KINDS {
                    println!(
                        "{}",
                        serde_json::json!({"kind": k.name, "syntax": k.syntax, "doc": k.doc})
                    );
                }
            } else {
                for k in pmscope_mapping::kinds::KINDS {
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
    }
    Ok(())
}
