//! The human summary of a k-mer job: what was read and where the table lived, the k-mer
//! counts and sets, the candidate regions and first results, the phases, the throughput and
//! the table, the sub-tables of `--partition nodes`, and where the k-mers went.

use crate::render::table::Table;
use crate::render::thousands;
use pmscope_core::units::Bytes;
use pmscope_workload::kmer::job::Report;
use pmscope_workload::kmer::table::partition::NodePlan;
use std::path::Path;

/// The summary, section by section.
pub fn summary(
    r: &Report,
    partition: Option<&NodePlan>,
    kmers: Option<&Path>,
    demo: bool,
) -> String {
    let mut s = header(r);
    s += &counts(r).render();
    if !r.histogram.is_empty() {
        s += "\n\n";
        s += &histogram(&r.histogram).render();
    }
    if r.operation == "primers" && !r.regions.is_empty() {
        s += &regions(r, if demo { 5 } else { 3 });
    }
    if !r.preview.is_empty() {
        s += &preview(r);
    }
    s.truncate(s.trim_end().len());
    s += "\n\n";
    s += &phases(r).render();
    s += &throughput(r);
    if let Some((flushes, fences)) = r.persist_per_insert() {
        s += &format!("\n{flushes:.3} flushes and {fences:.5} fences per insert");
    }
    if let Some(plan) = partition {
        s += &partitions(r, plan);
    }
    if let Some(o) = kmers.filter(|o| *o != Path::new("-")) {
        s += &format!(
            "\n{} k-mers written to {}",
            thousands(r.result_kmers),
            o.display()
        );
    }
    s
}

/// The first line: the operation, the genomes, k, threads, and the table's target with
/// its page size as verified.
fn header(r: &Report) -> String {
    let bases: u64 = r.genomes.iter().map(|g| g.bases).sum();
    let a = &r.table.target.achieved;
    let pages = match a.page_size {
        Some(s) if a.pages.smaps_sees_mapping => format!(
            "{} {:.0}%",
            pmscope_core::units::page_size_name(s),
            100.0 * a.pages.fraction(s, a.bytes)
        ),
        Some(s) => pmscope_core::units::page_size_name(s),
        None => "unclear".into(),
    };
    let in_n = r.genomes.iter().filter(|g| g.role == "in").count();
    let group = match r.operation {
        "primers" => format!(
            "{in_n} in-group + {} out-group genomes",
            r.genomes.len() - in_n
        ),
        "subtract" => format!("{in_n} genomes minus {}", r.genomes.len() - in_n),
        _ => format!("{in_n} genomes"),
    };
    let tables = match r.bins {
        Some(_) => "minimizer bins, a table per thread".to_string(),
        None => format!("table {}", r.table.kind),
    };
    format!(
        "pmscope kmer {}: {group}, {:.1} Mbp, k = {}, {} threads, {tables} on {} ({pages})\n\n",
        r.operation,
        bases as f64 / 1e6,
        r.k,
        r.threads,
        r.table.target.spec
    )
}

/// k-mers inserted, looked up, skipped, and the size of every set, as the operation
/// names it.
fn counts(r: &Report) -> Table {
    let skipped: u64 = r.genomes.iter().map(|g| g.skipped_kmers).sum();
    let mut t = Table::new(&["k-mers", "count"]);
    t.row(vec!["inserted".into(), thousands(r.inserts)]);
    if r.lookups > 0 {
        t.row(vec!["looked up (subtracted)".into(), thousands(r.lookups)]);
    }
    t.row(vec!["skipped (N or IUPAC code)".into(), thousands(skipped)]);
    for (name, n) in &r.sets {
        let label = match (r.operation, *name) {
            ("primers", "union") => "distinct in the in-group",
            ("primers", "intersection") => "in every in-group genome",
            ("primers", "candidates") => "primer candidates (also in no out-group genome)",
            ("subtract", "union") => "distinct in the genomes",
            ("subtract", "difference") => "in the genomes, not in --minus",
            (_, "union") => "distinct",
            (_, "intersection") => "in every genome",
            (_, other) => other,
        };
        t.row(vec![label.into(), thousands(*n)]);
    }
    t
}

/// k-mers by the number of genomes holding them.
fn histogram(histogram: &[u64]) -> Table {
    let mut h = Table::new(&["in genomes", "k-mers"]);
    for (g, n) in histogram.iter().enumerate().skip(1) {
        h.row(vec![g.to_string(), thousands(*n)]);
    }
    h
}

/// The longest `shown` runs of overlapping candidates in the first in-group genome.
fn regions(r: &Report, shown: usize) -> String {
    let mut regions = r.regions.clone();
    regions.sort_by_key(|r| std::cmp::Reverse(r.1.end - r.1.start));
    let mut s = format!(
        "\n\n{} candidate regions in {} (runs of overlapping candidates); the longest:\n",
        regions.len(),
        r.genomes[0].name
    );
    let mut t = Table::new(&["record", "from", "to", "bases", "candidates"]);
    for (name, reg) in regions.iter().take(shown) {
        t.row(vec![
            name.clone(),
            (reg.start + 1).to_string(),
            reg.end.to_string(),
            (reg.end - reg.start).to_string(),
            reg.kmers.to_string(),
        ]);
    }
    s += &t.render();
    s
}

/// The first result lines: candidates with their place, or k-mers with their genomes.
fn preview(r: &Report) -> String {
    let short = |kmer: &str| {
        if kmer.len() > 60 {
            format!("{}…", &kmer[..60])
        } else {
            kmer.to_string()
        }
    };
    let mut s = if r.operation == "primers" {
        "\n\nfirst candidates (record:position strand k-mer):\n".to_string()
    } else {
        "\n\nfirst k-mers (k-mer genomes):\n".to_string()
    };
    for line in &r.preview {
        let f: Vec<&str> = line.split('\t').collect();
        let shown = match f.as_slice() {
            [kmer, _genome, record, position, strand] => {
                format!("{record}:{position} {strand} {}", short(kmer))
            }
            [kmer, genomes] => format!("{} {genomes}", short(kmer)),
            _ => line.clone(),
        };
        s += &format!("  {shown}\n");
    }
    s
}

/// Wall and CPU time of each phase.
fn phases(r: &Report) -> Table {
    let (p, c) = (&r.phases, &r.cpu);
    let cpu_total = c.parse + c.estimate + c.split + c.map + c.insert + c.setops + c.output;
    let mut t = Table::new(&["phase", "wall", "cpu"]);
    let rows = match r.bins {
        Some(_) => {
            let mut rows = vec![
                ("parse", p.parse, c.parse),
                ("split into bins", p.split, c.split),
                ("map tables", p.map, c.map),
                ("count bins", p.insert, c.insert),
            ];
            // Primers look the out-group up in the intersection's own table.
            if r.operation == "primers" {
                rows.push(("set operations", p.setops, c.setops));
            }
            rows.push(("output", p.output, c.output));
            rows
        }
        None => vec![
            ("parse", p.parse, c.parse),
            ("estimate", p.estimate, c.estimate),
            ("map table", p.map, c.map),
            ("insert", p.insert, c.insert),
            ("set operations", p.setops, c.setops),
            ("output", p.output, c.output),
        ],
    };
    for (name, d, cpu) in rows.into_iter().chain([("total", r.total(), cpu_total)]) {
        t.row(vec![
            name.into(),
            format!("{:.3} s", d.as_secs_f64()),
            format!("{:.3} s", cpu.as_secs_f64()),
        ]);
    }
    t
}

/// Million inserts per second, the table's geometry and growth, and the peak RSS.
fn throughput(r: &Report) -> String {
    let peak = pmscope_sys::rusage::peak_rss_bytes()
        .map(|b| Bytes(b).human())
        .unwrap_or_else(|| "unknown".into());
    if let Some(b) = &r.bins {
        let out_of_core = if b.partitions > 0 {
            format!(
                "; out of core: {} of bins in a scratch file, counted in {} partitions",
                Bytes(b.scratch_bytes).human(),
                thousands(b.partitions)
            )
        } else {
            String::new()
        };
        return format!(
            "\n\n{:.1} million k-mers counted per second; {} bins by {}-base minimizer, {} super-k-mers, the largest bin {} k-mers; {} tables of {} slots × {} B = {} (load {:.2} on average, doubled {} times){out_of_core}; peak RSS {peak}",
            r.mips(),
            thousands(b.bins),
            b.minimizer_bases,
            thousands(b.super_kmers),
            thousands(b.largest_bin_kmers),
            r.threads,
            thousands(r.table.slots),
            r.table.slot_bytes,
            Bytes(r.table.footprint_bytes / r.threads.max(1) as u64).human(),
            r.table.load_factor,
            r.table.grown,
        );
    }
    format!(
        "\n\n{:.1} million inserts per second; table {} slots × {} B = {} (load {:.2}, {}); peak RSS {}",
        r.mips(),
        thousands(r.table.slots),
        r.table.slot_bytes,
        Bytes(r.table.footprint_bytes).human(),
        r.table.load_factor,
        match r.table.grown {
            0 => "did not grow".to_string(),
            n => format!(
                "grew {n} times in {:.3} s of the insert phase: {:.1} million inserts per second without it",
                r.phases.grow.as_secs_f64(),
                r.mips_excluding_growth()
            ),
        },
        peak
    )
}

/// The sub-tables of `--partition nodes`: node, CPUs, inserts, and where move_pages found
/// their pages.
fn partitions(r: &Report, plan: &NodePlan) -> String {
    let n = r.table.parts.len();
    let mut s = if n == 1 {
        format!(
            "\n\npartitioned by NUMA node: 1 sub-table, as this machine has one node with CPUs (node {})\n",
            r.table.parts[0].node
        )
    } else {
        format!("\n\npartitioned by NUMA node: {n} sub-tables, k-mers routed by hash\n")
    };
    // With one target per node, each row names its target and where its memory is.
    let own_targets = !plan.targets.is_empty();
    let mut head = vec!["node", "cpus"];
    if own_targets {
        head.push("target");
    }
    head.extend(["k-mers inserted", "distinct", "pages on its node"]);
    let mut t = Table::new(&head);
    for p in &r.table.parts {
        let pages: u64 = p.target.achieved.nodes.values().sum();
        let mut row = vec![
            p.node.to_string(),
            pmscope_core::cpulist::format_list(&p.cpus),
        ];
        if own_targets {
            row.push(p.target.spec.clone());
        }
        row.extend([
            thousands(p.inserts),
            thousands(p.distinct),
            match (p.memory_node, p.on_node(), p.achieved_node()) {
                (Some(m), Some(f), _) if m == p.node => {
                    format!("{:.1}% of {pages} pages (move_pages)", 100.0 * f)
                }
                (Some(m), Some(f), _) => {
                    format!(
                        "{:.1}% of {pages} pages on node {m} (move_pages)",
                        100.0 * f
                    )
                }
                (None, _, Some(a)) => {
                    format!(
                        "its file's or device's: most of {pages} pages on node {a} (move_pages)"
                    )
                }
                _ => "unverified".into(),
            },
        ]);
        t.row(row);
    }
    s += &t.render();
    for id in &plan.without_cpus {
        s +=
            &format!("\nnode {id} has memory but no CPUs: no sub-table (no thread is local to it)");
    }
    s
}
