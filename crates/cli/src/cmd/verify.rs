//! `pmscope verify`: map each target, pre-fault it, and report what the kernel gave.

use crate::args::VerifyArgs;
use crate::output::Sink;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::units::{Bytes, page_size_name};
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::render::table::Table;
use pmscope_mapping::{MapOptions, Mapping, TargetSpec};
use pmscope_runner::harness::{Harness, TargetRun};

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &VerifyArgs) -> Result<()> {
    let size = a.size.0;
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let cpus = pmscope_sys::affinity::allowed_cpus()?;
    let mut h = ctx.start(sink, &cpus, None, false)?;
    verify_targets(&mut h, &specs, size, &opts, &mut |_, _| Ok(()))?;
    h.finish()?;
    print_table(sink, &sink.of("verify").cloned().collect::<Vec<_>>());
    Ok(())
}

/// What a caller does with each verified mapping before it is unmapped.
pub type WithMapping<'a> = dyn FnMut(&mut TargetRun<'_, '_>, &mut Mapping) -> Result<()> + 'a;

/// Maps, verifies and unmaps each target in turn; emits one `verify` record per target and
/// hands each mapping to `then` (quick measures it there).
pub fn verify_targets(
    h: &mut Harness<'_>,
    specs: &[TargetSpec],
    size: u64,
    opts: &MapOptions,
    then: &mut WithMapping<'_>,
) -> Result<()> {
    h.per_target(specs, size, opts, None, |run, m| {
        let a = m.achieved();
        let r = run
            .record("verify")
            .param(p::SIZE_BYTES, size)
            .value(v::PREFAULT_MS, a.prefault_ns as f64 / 1e6)
            .value(v::MINOR_FAULTS, a.faults.minor_faults as f64)
            .value(v::BYTES_PER_FAULT, a.faults.bytes_per_fault);
        run.emit(&r)?;
        then(run, m)
    })
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
    // Which file a file: or shm target became (a directory gets a new file in it), since
    // the spec alone does not say.
    for r in records {
        if let Some(tr) = &r.target
            && let Some(path) = &tr.achieved.path
        {
            let path = match path.strip_suffix(" (unnamed)") {
                Some(p) => format!(
                    "{p} (unnamed: O_TMPFILE, it vanishes with the process unless --keep names it)"
                ),
                None => path.clone(),
            };
            sink.text(&format!("{}: {path}", tr.spec));
        }
    }
}
