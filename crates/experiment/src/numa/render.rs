//! The `numa` matrices, drawn from records alone: MLC's two matrices (rows: CPU nodes,
//! columns: memory nodes), what the firmware declares, and where each memory node's pages
//! really were.

use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::vocab::{ValueKey, p, v};

/// The two matrices, the declared figures and the verified placement.
pub fn render(records: &[Record]) -> String {
    let cells: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment.starts_with("numa-"))
        .collect();
    let node = |r: &Record, key| r.count(key).unwrap_or_default();
    let mut cpu_nodes: Vec<u64> = cells.iter().map(|r| node(r, p::CPU_NODE)).collect();
    let mut mem_nodes: Vec<u64> = cells.iter().map(|r| node(r, p::MEMORY_NODE)).collect();
    cpu_nodes.sort_unstable();
    cpu_nodes.dedup();
    mem_nodes.sort_unstable();
    mem_nodes.dedup();
    // The record of `experiment` for memory node `m` (and CPU node `c`, if given).
    let find = |experiment: &str, c: Option<u64>, m: u64| {
        cells.iter().copied().find(|r| {
            r.experiment == experiment
                && c.is_none_or(|c| node(r, p::CPU_NODE) == c)
                && node(r, p::MEMORY_NODE) == m
        })
    };
    let mut out = String::new();
    for (experiment, title, decimals) in [
        (
            "numa-latency",
            "idle latency, ns per load (random chain)",
            1usize,
        ),
        (
            "numa-bandwidth",
            "read bandwidth, GB/s (all CPUs of the node)",
            2,
        ),
    ] {
        let mut header = vec!["CPU node \\ memory node".to_string()];
        header.extend(mem_nodes.iter().map(|m| m.to_string()));
        let header: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
        let mut t = Table::new(&header);
        for &c in &cpu_nodes {
            let mut row = vec![c.to_string()];
            for &m in &mem_nodes {
                row.push(
                    find(experiment, Some(c), m)
                        .and_then(|r| r.summary.as_ref())
                        .map(|s| format!("{:.*}", decimals, s.p50))
                        .unwrap_or_else(|| "-".into()),
                );
            }
            t.row(row);
        }
        out += &format!("{title}\n{}\n\n", t.render());
    }
    out += "declared by the firmware (ACPI HMAT, read from each memory node's nearest CPUs):\n";
    for &m in &mem_nodes {
        let declared =
            |experiment: &str, key: ValueKey| find(experiment, None, m).and_then(|r| r.val(key));
        out += &match (
            declared("numa-latency", v::HMAT_READ_LATENCY_NS),
            declared("numa-bandwidth", v::HMAT_READ_BANDWIDTH_MB_S),
        ) {
            (None, None) => format!("  memory node {m}: nothing declared\n"),
            (ns, mb) => format!(
                "  memory node {m}: {} read latency, {} read bandwidth\n",
                ns.map_or("no".into(), |v| format!("{v:.0} ns")),
                mb.map_or("no".into(), |v| format!("{:.1} GB/s", v / 1000.0)),
            ),
        };
    }
    out += "placement verified (move_pages):\n";
    for &m in &mem_nodes {
        if let Some(t) = find("numa-latency", None, m).and_then(|r| r.target.as_ref()) {
            out += &format!(
                "  memory node {m}: {} -> {}\n",
                t.spec,
                t.achieved.describe()
            );
        }
    }
    out
}
