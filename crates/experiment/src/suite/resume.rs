//! `suite --resume RUN`: which run of the store is continued, and what it finished.

use super::Params;
use crate::error::usage;
use crate::{Env, Output, Step};
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_mapping::TargetSpec;
use pmscope_runner::executor::Executor;
use pmscope_store::RunId;
use std::collections::BTreeMap;

/// A stored run's suite parameters, as the binary decoded them from its command line.
#[derive(Debug, Clone)]
pub struct Original {
    /// The suite's parameters.
    pub params: Params,
    /// Whether it ran with the null executor.
    pub null_executor: bool,
    /// The blocks it measured each point in (`--blocks`).
    pub blocks: usize,
}

/// What `--resume RUN` continues: the run, its targets, and the records of each step it
/// finished (in the order they were stored).
pub(super) struct Resumed {
    pub(super) run: RunId,
    pub(super) targets: Vec<TargetSpec>,
    /// The blocks the run measures each point in: the original's, whatever `--blocks`
    /// says now.
    pub(super) blocks: usize,
    pub(super) finished: BTreeMap<usize, Vec<Record>>,
}

/// Checks that `selector` names an incomplete run of this very suite (same study, same
/// `--full`, same targets when `-t` is given) and reads what it finished.
pub(super) fn plan(
    env: &Env,
    out: &dyn Output,
    a: &Params,
    selector: &str,
    steps: &[(&'static str, Step)],
    decode: &dyn Fn(&[String]) -> Option<Original>,
) -> Result<Resumed> {
    let store = out.store().ok_or_else(|| {
        usage("--resume continues a run of the results store; leave out --no-store")
    })?;
    let id = store.resolve(selector)?;
    let run = store.run(id)?;
    if run.complete {
        return Err(usage(format!(
            "run {id} is complete, so there is nothing to resume; start a new run without --resume"
        )));
    }
    let (original, blocks) = same_suite(env, a, id, &run.command_line, decode)?;
    let (targets, _) = env.targets(&original.targets, &["dram:4k"])?;
    if !a.targets.targets.is_empty() {
        let (given, _) = env.targets(&a.targets, &["dram:4k"])?;
        if given != targets {
            return Err(usage(format!(
                "run {id} measured {}, not {}; resume it with the same targets, or without -t",
                join(&targets),
                join(&given)
            )));
        }
    }
    let finished = finished_steps(store, id, a, steps, blocks)?;
    Ok(Resumed {
        run: id,
        targets,
        blocks,
        finished,
    })
}

/// The stored run's parameters and blocks, if it is a run of this very suite made the same
/// way (synthetic and measured points never share a run).
fn same_suite(
    env: &Env,
    a: &Params,
    id: RunId,
    command_line: &[String],
    decode: &dyn Fn(&[String]) -> Option<Original>,
) -> Result<(Params, usize)> {
    let shown = std::iter::once("pmscope")
        .chain(command_line.iter().skip(1).map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    match decode(command_line) {
        Some(o)
            if o.params.study == a.study
                && o.params.full == a.full
                && o.params.resume.is_none() =>
        {
            let null_now = env.executor == Executor::Null;
            if o.null_executor != null_now {
                let (was, now) = if o.null_executor {
                    ("made by", "with")
                } else {
                    ("measured without", "without")
                };
                return Err(usage(format!(
                    "run {id} was {was} the null executor, so it is resumed {now} --null-executor"
                )));
            }
            Ok((o.params, o.blocks))
        }
        _ => Err(usage(format!(
            "run {id} is not a `pmscope {}` run (it ran `{shown}`); resume it with its own study or start a new run",
            a.title()
        ))),
    }
}

/// The records of each step (or block of a step) the run finished, checked against this
/// pmscope's steps in the run's blocks.
fn finished_steps(
    store: &pmscope_store::Store,
    id: RunId,
    a: &Params,
    steps: &[(&'static str, Step)],
    blocks: usize,
) -> Result<BTreeMap<usize, Vec<Record>>> {
    let done = store.finished_steps(id)?;
    let names = super::rounds::step_names(steps);
    let units = super::rounds::units(&names, blocks);
    for (i, name) in &done {
        if super::rounds::expected_name(&names, &units, *i).as_ref() != Some(name) {
            return Err(usage(format!(
                "run {id} was made by a pmscope whose {} had other steps (step {} was '{name}'); start a new run",
                a.title(),
                i + 1
            )));
        }
    }
    let mut finished: BTreeMap<usize, Vec<Record>> =
        done.iter().map(|(i, _)| (*i, Vec::new())).collect();
    for (step, record) in store.step_records(id)? {
        let Some(step) = step else {
            return Err(usage(format!(
                "run {id} holds points without their suite step (stored by an older pmscope), so it cannot be resumed; start a new run"
            )));
        };
        // Points of an unfinished step are replaced when that step runs again.
        if let Some(records) = finished.get_mut(&step) {
            records.push(record);
        }
    }
    Ok(finished)
}

/// Targets as a message lists them.
pub(super) fn join(targets: &[TargetSpec]) -> String {
    targets
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
