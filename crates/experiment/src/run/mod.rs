//! `pmscope run`: an unmodified program with its large allocations on a target
//! (`pmscope_runner::launch` does the work), its placement report on stderr (the program
//! owns stdout), one `run` record, and the program's exit status as pmscope's
//! ([`PassThrough`]).

mod render;

use crate::error::PassThrough;
use crate::output::Output;
use crate::params::Size;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::record::{Record, TargetRecord};
use pmscope_core::vocab::{p, v};
use pmscope_mapping::{DestroyData, MapOptions, MemoryGuard, TargetSpec};
use pmscope_runner::harness::Session;
use pmscope_runner::launch::{self, Launch, Outcome};
use std::ffi::OsString;

/// The help of `run --target`, listing the kinds from their registry.
fn target_help() -> String {
    format!(
        "The target of the program's large allocations. Syntax: {}, each with an optional \
         ,node=N; file: names a directory (one file per allocation).",
        pmscope_mapping::kinds::syntax_summary()
    )
}

/// `pmscope run`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    // The help lists the kinds from their registry.
    /// The target (see [`target_help`]).
    #[arg(short = 't', long = "target", value_name = "SPEC", help = target_help(), required = true)]
    pub target: TargetSpec,
    /// Allocations of at least SIZE (malloc family, private anonymous mmap) go to the
    /// target; smaller ones are left alone.
    #[arg(long, default_value = "2MiB", value_name = "SIZE")]
    pub threshold: Size,
    /// Keep the files created on file: and shm targets (named pmscope-PID-N-kept.bin).
    #[arg(long)]
    pub keep: bool,
    /// Allow writing to devdax devices, destroying their contents.
    #[arg(long)]
    pub destroy_data: bool,
    /// The program and its arguments, after --.
    #[arg(required = true, num_args = 1.., value_name = "COMMAND", allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

/// What `run` starts where (the launch preflights the target before the program starts).
pub struct Plan {
    target: TargetSpec,
    opts: MapOptions,
    threshold: u64,
    command: Vec<OsString>,
}

/// `pmscope run`.
pub struct Run;

impl Experiment for Run {
    const NAME: &'static str = "run";
    const IN_BLOCKS: bool = false;
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, a: &Params) -> Result<Plan> {
        let opts = MapOptions {
            guard: MemoryGuard::new(&env.root, None),
            root: env.root.clone(),
            keep: a.keep,
            require_dax: false,
            destroy_data: a.destroy_data.then(DestroyData::accepted_by_flag),
            first_touch_cpus: Vec::new(),
            first_touch_order: Default::default(),
        };
        Ok(Plan {
            target: a.target.clone(),
            opts,
            threshold: a.threshold.0,
            command: a.command.clone(),
        })
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        let outcome = launch::run(&Launch {
            target: &plan.target,
            opts: &plan.opts,
            threshold: plan.threshold,
            command: &plan.command,
        })?;
        out.emit(&record(env, &plan.command, &plan.target, &outcome))?;
        if out.human() {
            eprint!("{}", render::report(&plan.command, &plan.target, &outcome));
        }
        for w in &outcome.placement.warnings {
            eprintln!("pmscope: warning: {} ({})", w.message, w.remedy);
        }
        if outcome.exit_code != 0 {
            // The binary commits the record, then exits with the program's status.
            return Err(anyhow::Error::new(PassThrough(
                outcome.exit_code.clamp(0, 255) as u8,
            )));
        }
        Ok(())
    }

    /// Nothing on stdout, which is the program's: the placement report goes to stderr
    /// (from `measure`), since it lists every process while the record holds their sum.
    fn render(_records: &[Record]) -> String {
        String::new()
    }

    fn place(params: &mut Params, on: &Placement) {
        // One target: the suite's first, with its file options.
        if let Some(t) = on.targets.targets.first() {
            params.target = t.clone();
        }
        params.keep = on.targets.keep;
        params.destroy_data = on.targets.destroy_data;
    }
}

/// The `run` record of a program run: where its large allocations went (also the
/// `placement` that `app-placement` records carry for a server).
pub fn record(session: &Session, command: &[OsString], target: &TargetSpec, o: &Outcome) -> Record {
    let p = &o.placement;
    let t = &p.total;
    let program: Vec<String> = command
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let mut r = Record::new("run", session.command_line.clone(), session.system.clone())
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
        spec: target.to_string(),
        achieved: p.achieved(),
    });
    r.warnings = p.warnings.clone();
    r
}
