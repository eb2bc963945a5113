//! The `quick` output, drawn from records alone: what the run was on, the configuration
//! each target achieved (the `verify` table), then the first figures per target.

use crate::render::fields::by_target;
use crate::render::precision::half_width;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::units::{Bytes, page_size_name};
use pmscope_core::vocab::p;
use pmscope_mapping::sizing::Source;

/// A target's first figures.
struct Figures {
    target: String,
    page: String,
    persistence: String,
    latency_ns: f64,
    read_gb_s: f64,
    /// The half-widths of their 95 % intervals (`±1.2%`).
    latency_ci: String,
    read_ci: String,
}

/// Each target's first figures, from the records.
fn figures(records: &[Record]) -> Vec<Figures> {
    let mut out: Vec<Figures> = Vec::new();
    for r in records.iter().filter(|r| r.experiment == "quick") {
        let (Some(t), Some(s)) = (&r.target, &r.summary) else {
            continue;
        };
        if !out.iter().any(|f| f.target == t.spec) {
            let a = &t.achieved;
            out.push(Figures {
                target: t.spec.clone(),
                page: a
                    .page_size
                    .map(page_size_name)
                    .unwrap_or_else(|| "unclear".into()),
                persistence: a.persistence.describe().into(),
                latency_ns: f64::NAN,
                read_gb_s: f64::NAN,
                latency_ci: "-".into(),
                read_ci: "-".into(),
            });
        }
        let f = out.iter_mut().find(|f| f.target == t.spec).expect("pushed");
        match r.metric.as_deref() {
            Some("latency_ns") => (f.latency_ns, f.latency_ci) = (s.p50, half_width(r)),
            Some("bandwidth_gb_s") => (f.read_gb_s, f.read_ci) = (s.p50, half_width(r)),
            _ => {}
        }
    }
    out
}

/// The header, the configuration table and the figures.
pub fn render(records: &[Record]) -> String {
    let verified = by_target(records, "verify");
    let Some(first) = verified.first().map(|(_, rs)| rs[0]) else {
        return String::new();
    };
    let specs: Vec<&str> = verified.iter().map(|(s, _)| *s).collect();
    let system = &first.system;
    let mut out = format!(
        "pmscope quick: {} on {} ({} CPUs, {} NUMA node{})\n\n",
        specs.join(", "),
        system.cpu_model,
        system.cpus_online,
        system.numa_nodes,
        if system.numa_nodes == 1 { "" } else { "s" }
    );
    out += "configuration achieved:\n";
    out += &crate::verify::render::render(records);
    let quick: Vec<&Record> = records.iter().filter(|r| r.experiment == "quick").collect();
    // Both figures of every target share the size's parameters.
    let Some(sized) = quick.first() else {
        return out;
    };
    let threads = quick
        .iter()
        .find_map(|r| r.count(p::THREADS))
        .unwrap_or_default();
    let why = match sized.text(p::SIZE_SOURCE) {
        Some(s) if s == Source::Auto.name() => format!(
            "; --size auto: {}",
            sized.text(p::SIZE_WHY).unwrap_or_default()
        ),
        _ => String::new(),
    };
    out += &format!(
        "\nfirst figures: random-chain latency over {} (one thread{why}), sequential read bandwidth ({threads} threads); \
         `pmscope latency` and `pmscope bandwidth` give the full curves\n",
        Bytes(sized.count(p::WORKING_SET_BYTES).unwrap_or_default()),
    );
    let mut t = Table::new(&[
        "target",
        "page size",
        "persistence",
        "latency ns",
        "read GB/s",
    ]);
    for f in figures(records) {
        t.row(vec![
            f.target,
            f.page,
            f.persistence,
            format!("{:.1} {}", f.latency_ns, f.latency_ci),
            format!("{:.2} {}", f.read_gb_s, f.read_ci),
        ]);
    }
    out += &format!("{}\n", t.render());
    out
}
