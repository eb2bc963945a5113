//! `pmscope run`: an unmodified program with its large allocations on a target
//! (`pmscope_runner::launch` does the work), its placement report on stderr (the program
//! owns stdout), one `run` record, and the program's exit status as pmscope's.

use crate::args::RunArgs;
use crate::error::PassThrough;
use crate::output::Sink;
use anyhow::Result;
use pmscope_core::record::{Record, TargetRecord};
use pmscope_core::units::{Bytes, page_size_name};
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::render::table::Table;
use pmscope_mapping::{DestroyData, MapOptions, MemoryGuard};
use pmscope_runner::launch::{self, Launch, Outcome};

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &RunArgs) -> Result<()> {
    let opts = MapOptions {
        guard: MemoryGuard::new(&ctx.root, None),
        root: ctx.root.clone(),
        keep: a.keep,
        require_dax: false,
        destroy_data: a.destroy_data.then(DestroyData::accepted_by_flag),
        first_touch_cpus: Vec::new(),
    };
    let outcome = launch::run(&Launch {
        target: &a.target,
        opts: &opts,
        threshold: a.threshold.0,
        command: &a.command,
    })?;
    let record = record(ctx, a, &outcome);
    sink.emit(&record)?;
    if !sink.json() {
        print_report(a, &outcome);
    }
    for w in &outcome.placement.warnings {
        eprintln!("pmscope: warning: {} ({})", w.message, w.remedy);
    }
    sink.commit()?;
    if outcome.exit_code != 0 {
        return Err(anyhow::Error::new(PassThrough(
            outcome.exit_code.clamp(0, 255) as u8,
        )));
    }
    Ok(())
}

fn record(ctx: &Context, a: &RunArgs, o: &Outcome) -> Record {
    let p = &o.placement;
    let t = &p.total;
    let program: Vec<String> = a
        .command
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let mut r = Record::new("run", ctx.command_line.clone(), ctx.system.clone())
        .param(p::PROGRAM, program.join(" "))
        .param(p::THRESHOLD_BYTES, p.threshold)
        .value(v::EXIT_CODE, o.exit_code as f64)
        .value(v::PROCESSES, p.processes.len() as f64)
        .value(v::SERVED_ALLOCATIONS, t.served_count as f64)
        .value(v::SERVED_BYTES, t.served_bytes as f64)
        .value(v::MAPPED_BYTES, t.mapped_bytes as f64)
        .value(v::PEAK_MAPPED_BYTES, t.peak_bytes as f64)
        .value(v::MMAP_SERVED_ALLOCATIONS, t.mmap_served_count as f64)
        .value(v::REFUSED_ALLOCATIONS, t.failed_count as f64)
        .value(v::REFUSED_BYTES, t.failed_bytes as f64)
        .value(v::BELOW_THRESHOLD_ALLOCATIONS, t.below_count as f64)
        .value(v::BELOW_THRESHOLD_BYTES, t.below_bytes as f64)
        .value(v::VERIFIED_REGIONS, t.verified_count as f64)
        .value(v::RESIDENT_BYTES, t.resident_bytes as f64)
        .value(v::BYTES_ON_4K, t.pages.bytes_4k as f64)
        .value(v::BYTES_ON_2M, t.pages.bytes_2m as f64)
        .value(v::BYTES_ON_1G, t.pages.bytes_1g as f64);
    if let Some(page) = p.verified_page_bytes() {
        r = r.value(v::VERIFIED_PAGE_BYTES, page as f64);
    }
    r.target = Some(TargetRecord {
        spec: a.target.to_string(),
        achieved: p.achieved(),
    });
    r.warnings = p.warnings.clone();
    r
}

/// The placement report, on stderr: one row per process that placed something, then the
/// total.
fn print_report(a: &RunArgs, o: &Outcome) {
    let p = &o.placement;
    let mut t = Table::new(&[
        "process",
        "placed",
        "bytes",
        "resident 4K / 2M / 1G",
        "nodes",
        "below threshold",
        "refused",
    ]);
    let row = |name: String, r: &launch::ProcessReport| {
        let nodes = if r.node_bytes.is_empty() {
            "-".to_string()
        } else {
            r.node_bytes
                .iter()
                .map(|(n, b)| format!("{n}:{}", Bytes(*b).human()))
                .collect::<Vec<_>>()
                .join(" ")
        };
        vec![
            name,
            r.served_count.to_string(),
            Bytes(r.served_bytes).human(),
            format!(
                "{} / {} / {}",
                Bytes(r.pages.bytes_4k).human(),
                Bytes(r.pages.bytes_2m).human(),
                Bytes(r.pages.bytes_1g).human()
            ),
            nodes,
            format!("{} ({})", r.below_count, Bytes(r.below_bytes).human()),
            r.failed_count.to_string(),
        ]
    };
    let placing: Vec<_> = p
        .processes
        .iter()
        .filter(|r| r.served_count + r.failed_count > 0)
        .collect();
    for r in &placing {
        let exe = r.exe.rsplit('/').next().unwrap_or(&r.exe);
        t.row(row(format!("{} {exe}", r.pid), r));
    }
    let others = p.processes.len() - placing.len();
    t.row(row(
        format!(
            "total ({} process{}{})",
            p.processes.len(),
            if p.processes.len() == 1 { "" } else { "es" },
            if others > 0 {
                format!(", {others} placed nothing")
            } else {
                String::new()
            }
        ),
        &p.total,
    ));
    let verified = match p.verified_page_bytes() {
        Some(b) => page_size_name(b),
        None => "not verified (nothing resident when read back)".into(),
    };
    eprintln!(
        "\npmscope run: {} on {} (allocations >= {}), exit status {}",
        a.command
            .first()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default(),
        a.target,
        Bytes(p.threshold),
        o.exit_code
    );
    eprintln!("{}", t.render().trim_end());
    eprintln!(
        "verified page size: {verified} (asked {}); {} region(s) read back from smaps",
        page_size_name(p.plan.expected_page_bytes),
        p.total.verified_count
    );
    for f in &p.kept_files {
        eprintln!("kept: {}", f.display());
    }
}
