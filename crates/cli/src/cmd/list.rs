//! `pmscope list targets|strategies|ops`: generated from the registries, so it cannot drift.
//! What this CPU lacks is marked with the missing CPUID feature, from the same checks the
//! commands make before anything runs.

use crate::args::ListWhat;
use crate::output::Sink;
use anyhow::Result;
use pmscope_experiment::Env as Context;
use pmscope_experiment::render::table::Table;
use pmscope_experiment::stdout::line;
use pmscope_loops::access::Width;
use pmscope_loops::catalog::{CATALOG, OpSpec};
use pmscope_loops::stream::STREAM_OPS;
use pmscope_persist::{DEFAULT_ORDER, PersistStrategy, STRATEGIES};
use pmscope_sys::cpu::{CpuFeatures, Feature};

/// "this CPU lacks clwb (CPUID.(EAX=07H,ECX=0):EBX[24])".
fn lacks(x: Feature) -> String {
    format!("this CPU lacks {x} ({})", x.cpuid())
}

/// Whether this CPU runs a catalog row at its widest width, as `pmscope list ops` marks
/// it: `yes`, or `no: ` and the first missing CPUID feature, or only streams (`sync`) when
/// there is no `rdtscp` to time single accesses. A pure function of the features.
pub fn op_support(r: &OpSpec, f: &CpuFeatures) -> (bool, String) {
    if let Some(x) = r.features().into_iter().find(|&x| !f.has(x)) {
        return (false, format!("no: {}", lacks(x)));
    }
    if !f.rdtscp {
        return (
            true,
            format!(
                "streams only (sync); inst and loaded --probe need rdtscp: {}",
                lacks(Feature::Rdtscp)
            ),
        );
    }
    (true, "yes".into())
}

/// Whether this CPU runs a persist strategy, as `pmscope list strategies` marks it: `yes`
/// (and `the default here` for the default's choice), or `no: ` and the missing feature.
pub fn strategy_support(s: PersistStrategy, f: &CpuFeatures) -> (bool, String) {
    match s.missing_feature(f) {
        Some(x) => (false, format!("no: {}", lacks(x))),
        None if s == PersistStrategy::default_for(f) => {
            (true, "yes, the default here (no --persist)".into())
        }
        None => (true, "yes".into()),
    }
}

pub fn run(ctx: &Context, sink: &mut Sink, what: ListWhat) -> Result<()> {
    let f = &ctx.features;
    match what {
        ListWhat::Targets => {
            if sink.json() {
                for k in pmscope_mapping::kinds::KINDS.iter() {
                    line(
                        &serde_json::json!({"kind": k.name, "syntax": k.syntax, "doc": k.doc})
                            .to_string(),
                    )?;
                }
            } else {
                for k in pmscope_mapping::kinds::KINDS.iter() {
                    line(&format!("{}\n    {}\n", k.syntax, k.doc))?;
                }
            }
        }
        ListWhat::Strategies => {
            let mut t = Table::new(&["strategy", "supported here"]);
            for s in STRATEGIES {
                let (ok, why) = strategy_support(s, f);
                if sink.json() {
                    line(
                        &serde_json::json!({
                            "strategy": s.name(),
                            "supported": ok,
                            "default": s == PersistStrategy::default_for(f),
                            "missing_feature": s.missing_feature(f).map(|x| x.name()),
                        })
                        .to_string(),
                    )?;
                }
                t.row(vec![s.name().into(), why]);
            }
            let order: Vec<&str> = DEFAULT_ORDER.iter().map(|s| s.name()).collect();
            sink.text(&format!(
                "{}\n(without --persist: the first of {} this CPU has; here {})",
                t.render(),
                order.join(", "),
                PersistStrategy::default_for(f)
            ))?;
        }
        ListWhat::Ops => {
            let width = Width::widest(f);
            let mut t = Table::new(&["op", "aliases", "needs", "supported here", "what it does"]);
            for r in &CATALOG {
                let aliases: Vec<&str> = r.names().skip(1).collect();
                let features: Vec<&str> = r.features().iter().map(|f| f.name()).collect();
                let (ok, why) = op_support(r, f);
                if sink.json() {
                    line(&serde_json::json!({
                            "op": r.id,
                            "aliases": aliases,
                            "access": r.op.name(),
                            "flush": r.flush().name(),
                            "fence": r.fence.name(),
                            "features": features,
                            "strategy": r.strategy().map(|s| s.name()),
                            "supported": ok,
                            "missing_feature": r.features().into_iter().find(|&x| !f.has(x)).map(|x| x.name()),
                            "doc": r.doc,
                        }).to_string())?;
                }
                t.row(vec![
                    r.id.into(),
                    aliases.join(", "),
                    features.join(", "),
                    why,
                    r.doc.into(),
                ]);
            }
            let widths = match width {
                Width::W64 => "64-byte (AVX-512F)",
                Width::W32 => "32-byte (AVX2; no AVX-512F here)",
                _ => "16-byte (SSE2; no AVX2 here)",
            };
            sink.text(&format!(
                "{}\n(supported here: with {widths} instructions, the widest this CPU has)\n",
                t.render(),
            ))?;
            // The bandwidth ops: `pmscope bandwidth --ops`, `loaded --traffic-op`.
            let mut t = Table::new(&["bandwidth op", "needs", "supported here", "what it does"]);
            for op in STREAM_OPS {
                let missing = op.feature().filter(|&x| !f.has(x));
                if sink.json() {
                    line(&serde_json::json!({
                            "bandwidth_op": op.name(),
                            "features": op.feature().map(|x| x.name()).into_iter().collect::<Vec<_>>(),
                            "supported": missing.is_none(),
                            "missing_feature": missing.map(|x| x.name()),
                            "doc": op.doc(),
                        }).to_string())?;
                }
                t.row(vec![
                    op.name().into(),
                    op.feature().map(|x| x.name()).unwrap_or("").into(),
                    match missing {
                        Some(x) => format!("no: {}", lacks(x)),
                        None => "yes".into(),
                    },
                    op.doc().into(),
                ]);
            }
            sink.text(&format!(
                "{}\n(bandwidth ops: pmscope bandwidth --ops, loaded --traffic-op)",
                t.render()
            ))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_loops::catalog::find;

    /// The marking as a function of the features: on the x86-64 baseline (no clwb,
    /// clflushopt, AVX or rdtscp) the newer flushes are marked with their CPUID bit, the
    /// rest stream only; the default strategy is clflush. This fails when a row or the
    /// default is marked runnable without its instruction.
    #[test]
    fn marks_what_this_cpu_lacks_with_its_cpuid_bit() {
        let old = CpuFeatures::baseline();
        let row = |id| find(id).unwrap();
        assert_eq!(
            op_support(row("store+clwb+sfence"), &old),
            (
                false,
                "no: this CPU lacks clwb (CPUID.(EAX=07H,ECX=0):EBX[24])".into()
            )
        );
        assert_eq!(
            op_support(row("store+clflushopt"), &old).1,
            "no: this CPU lacks clflushopt (CPUID.(EAX=07H,ECX=0):EBX[23])"
        );
        assert_eq!(
            op_support(row("ntload"), &old).1,
            "no: this CPU lacks movntdqa (CPUID.01H:ECX[19])"
        );
        let (ok, why) = op_support(row("store+clflush"), &old);
        assert!(ok && why.starts_with("streams only"), "{why}");
        let westmere = CpuFeatures {
            rdtscp: true,
            movntdqa: true,
            ..old
        };
        for r in &CATALOG {
            let runs = !matches!(
                r.flush(),
                pmscope_persist::insn::FlushKind::Clwb
                    | pmscope_persist::insn::FlushKind::Clflushopt
            );
            assert_eq!(op_support(r, &westmere).0, runs, "{}", r.id);
            if runs {
                assert_eq!(op_support(r, &westmere).1, "yes", "{}", r.id);
                // What is marked runnable is: the check the commands make agrees.
                assert!(r.sequence(Width::widest(&westmere), &westmere).is_ok());
            }
        }
        let marks: Vec<(PersistStrategy, String)> = STRATEGIES
            .into_iter()
            .map(|s| (s, strategy_support(s, &westmere).1))
            .collect();
        assert_eq!(
            marks[..3],
            [
                (
                    PersistStrategy::Clflush,
                    "yes, the default here (no --persist)".into()
                ),
                (
                    PersistStrategy::Clflushopt,
                    "no: this CPU lacks clflushopt (CPUID.(EAX=07H,ECX=0):EBX[23])".into()
                ),
                (
                    PersistStrategy::Clwb,
                    "no: this CPU lacks clwb (CPUID.(EAX=07H,ECX=0):EBX[24])".into()
                ),
            ]
        );
        let modern = CpuFeatures {
            clflushopt: true,
            clwb: true,
            ..westmere
        };
        assert_eq!(
            strategy_support(PersistStrategy::Clwb, &modern).1,
            "yes, the default here (no --persist)"
        );
        assert_eq!(strategy_support(PersistStrategy::Clflush, &modern).1, "yes");
    }
}
