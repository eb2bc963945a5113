//! `pmscope verify`: map each target, pre-fault it, and report what the kernel gave.

use crate::args::VerifyArgs;
use crate::context::{Context, parse_size};
use crate::output::Sink;
use crate::output::table::Table;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::units::{Bytes, page_size_name};
use pmscope_mapping::{MapOptions, Mapping, TargetSpec, verify::compare_targets};
use pmscope_runner::sanity;

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &VerifyArgs) -> Result<()> {
    let size = parse_size(&a.size)?;
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let records = verify_targets(ctx, sink, &specs, size, &opts, &mut |_, _, _| Ok(()))?;
    print_table(sink, &records);
    Ok(())
}

/// What a caller does with each verified mapping before it is unmapped.
pub type WithMapping<'a> = dyn FnMut(&mut Sink, &mut Mapping, &Record) -> Result<()> + 'a;

/// Maps, verifies and unmaps each target in turn; emits one `verify` record per target and
/// hands each mapping to `then` (quick measures it there).
pub fn verify_targets(
    ctx: &Context,
    sink: &mut Sink,
    specs: &[TargetSpec],
    size: u64,
    opts: &MapOptions,
    then: &mut WithMapping<'_>,
) -> Result<Vec<Record>> {
    let facts = sanity::EnvFacts::probe(&ctx.root, &[]);
    let env = sanity::check(
        &facts,
        &sanity::Context {
            timer: None,
            memory_working_set: None,
            times_single_accesses: false,
        },
    );
    let mut records = Vec::new();
    for spec in specs {
        let mut m = pmscope_mapping::map(spec, size, opts)?;
        let a = m.achieved();
        let mut r = ctx
            .record("verify")
            .param("size_bytes", size)
            .value("prefault_ms", a.prefault_ns as f64 / 1e6)
            .value("minor_faults", a.faults.minor_faults as f64)
            .value("bytes_per_fault", a.faults.bytes_per_fault);
        r.target = Some(m.record());
        r.warnings = m.warnings().to_vec();
        r.warnings.extend(env.iter().cloned());
        sink.warn(m.warnings());
        sink.emit(&r)?;
        then(sink, &mut m, &r)?;
        records.push(r);
    }
    let pairs: Vec<(String, &pmscope_core::achieved::Achieved)> = records
        .iter()
        .filter_map(|r| r.target.as_ref().map(|t| (t.spec.clone(), &t.achieved)))
        .collect();
    let cross = compare_targets(&pairs);
    sink.warn(&cross);
    // Environment findings last: an error in a target is reported before any of them.
    sink.warn(&env);
    Ok(records)
}

/// The human summary of verify records.
pub fn print_table(sink: &Sink, records: &[Record]) {
    let mut t = Table::new(&[
        "target",
        "mapped",
        "page size",
        "evidence",
        "faults",
        "pre-fault",
        "nodes",
        "persistence",
        "MAP_SYNC",
    ]);
    for r in records {
        let Some(tr) = &r.target else { continue };
        let a = &tr.achieved;
        let page = match a.page_size {
            Some(s) if a.pages.smaps_sees_mapping => format!(
                "{} {:.0}%",
                page_size_name(s),
                100.0 * a.pages.fraction(s, a.bytes)
            ),
            Some(s) => page_size_name(s),
            None => "unclear".into(),
        };
        let nodes = if a.nodes.is_empty() {
            "unknown".into()
        } else {
            a.nodes
                .iter()
                .map(|(n, c)| format!("{n}:{c}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        t.row(vec![
            tr.spec.clone(),
            Bytes(a.bytes).to_string(),
            page,
            a.page_size_source.clone(),
            a.faults.minor_faults.to_string(),
            format!("{:.1} ms", a.prefault_ns as f64 / 1e6),
            nodes,
            a.persistence.describe().into(),
            match a.map_sync {
                Some(true) => "accepted".into(),
                Some(false) => "refused".into(),
                None => "-".into(),
            },
        ]);
    }
    sink.text(&t.render());
}
