//! pmscope's experiments, as library code. Each experiment is one module implementing
//! [`Experiment`]: typed parameters (whose clap derive is also its command line) → a plan,
//! validated before anything is mapped → a measurement through the runner's harness, which
//! emits typed records → a terminal table drawn from those records only. The registry
//! ([`registry`]) lists them once; the binary parses a [`Step`] and calls [`Step::run`], and
//! `suite` composes steps as typed values.

/// How sweep axes are written, for every command that takes one.
#[macro_export]
macro_rules! axis_help {
    () => {
        "AXIS is a list (1,2,4) or a range a..b with a step: :x2 multiplies (the default for \
sizes), :+N adds (the default for counts is +1); e.g. 64..4KiB:x2, 1..8, 4KiB..1GiB,1536MiB. \
Sizes are binary: 4K = 4KiB = 4096."
    };
}

pub mod app;
pub mod atomic_file;
pub mod bandwidth;
pub mod env;
pub mod error;
pub mod fallback;
pub mod filedir;
pub mod fio;
pub mod fs;
pub mod inst;
pub mod kmer;
pub mod latency;
pub mod loaded;
pub mod measure;
pub mod numa;
pub mod output;
pub mod params;
pub mod poly;
pub mod probe;
pub mod progress;
pub mod quick;
pub mod rap;
pub mod registry;
pub mod render;
pub mod run;
pub mod stdout;
pub mod suite;
pub mod sync;
pub mod verify;

pub use env::Env;
pub use error::{PassThrough, UsageError, usage};
pub use output::Output;
pub use registry::{EXPERIMENTS, Step};

use anyhow::Result;
use pmscope_core::record::Record;

/// One experiment: typed parameters → plan → measure → records; rendering reads records.
pub trait Experiment {
    /// The name of its command and suite steps.
    const NAME: &'static str;
    /// Whether its points are measured in blocks (`--blocks`), each on a mapping of its own:
    /// true for the timed measurements of memory; false where a point is not a repeated
    /// timing of a mapping (a verification, file I/O in a directory, a workload that maps
    /// its own tables, a program or server run whole).
    const IN_BLOCKS: bool = true;
    /// Its parameters; the clap derive is the command line, and a suite builds them as
    /// values (`Params { full: true, ..defaults() }`).
    type Params: clap::Args + clap::FromArgMatches + Clone + std::fmt::Debug;
    /// What it will measure, checked before anything is mapped.
    type Plan;

    /// Checks the parameters against the machine and the targets: a usage error (exit 2)
    /// before any mapping.
    fn plan(env: &mut Env, params: &Self::Params) -> Result<Self::Plan>;

    /// Measures the plan, emitting its records into `out`.
    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Self::Plan) -> Result<()>;

    /// The terminal table of its records (every record the run emitted is passed; it
    /// picks its own).
    fn render(records: &[Record]) -> String;

    /// The records it derives from its points once every block of them is measured (the
    /// best thread count of a bandwidth sweep, a probe curve's knee): made from the
    /// points as recorded, never from one block's. None by default.
    fn derive(records: &[Record]) -> Vec<Record> {
        let _ = records;
        Vec::new()
    }

    /// What a terminal shows after the run: the table, and whatever the parameters'
    /// display options add (`inst --histograms`); by default the table alone.
    fn show(params: &Self::Params, records: &[Record]) -> String {
        let _ = params;
        Self::render(records)
    }

    /// Puts a suite step on the suite's targets and CPUs (`cpus` as the suite's `--cpus`
    /// list; an experiment of one CPU takes the first).
    fn place(params: &mut Self::Params, on: &Placement);

    /// Leaves out of a suite step what this CPU cannot execute (an op a study names whose
    /// instructions are missing), as the experiment's own defaults do; returns what was
    /// left out. Most experiments choose for the CPU themselves and leave out nothing.
    fn fit_to_cpu(params: &mut Self::Params, f: &pmscope_sys::cpu::CpuFeatures) -> Vec<String> {
        let _ = (params, f);
        Vec::new()
    }
}

/// What a suite imposes on each of its steps.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The targets and mapping options.
    pub targets: params::TargetArgs,
    /// The CPUs, if the suite was given `--cpus`.
    pub cpus: Option<params::Cpus>,
}

/// Runs one experiment: plan, measure, derive, and (on a terminal) its table. In a round
/// of a suite (one block of each point) nothing is derived: the suite derives from the
/// points once every round is in.
pub fn run<E: Experiment>(env: &mut Env, out: &mut dyn Output, params: &E::Params) -> Result<()> {
    let plan = E::plan(env, params)?;
    let before = out.records().len();
    E::measure(env, out, &plan)?;
    if env.round.is_none() {
        for r in E::derive(&out.records()[before..]) {
            out.emit(&r)?;
        }
    }
    if out.human() {
        stdout::print(&E::show(params, out.records()))?;
        stdout::print(&render::precision::footer(out.records()))?;
    }
    Ok(())
}

/// The parameters as the command line gives them when no option is given: the defaults a
/// suite step starts from, written once (in the clap attributes).
pub fn defaults<P: clap::Args + clap::FromArgMatches>() -> P {
    let cmd = P::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let m = cmd
        .try_get_matches_from(std::iter::empty::<&str>())
        .expect("every experiment's parameters parse with no option given");
    P::from_arg_matches(&m).expect("the defaults are valid parameters")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults a suite starts from are the command line's: one source, the clap
    /// attributes.
    #[test]
    fn defaults_are_the_command_lines() {
        let p: rap::Params = defaults();
        assert_eq!(p.seed, 0x5EED);
        assert!(!p.full);
        assert!(p.targets.targets.is_empty());
        assert_eq!(p.region, params::AutoSize::Auto);
    }
}
