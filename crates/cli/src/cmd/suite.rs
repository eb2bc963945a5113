//! `pmscope suite`: the studies are library code (`pmscope_experiment::suite`); the binary
//! adds only what needs the command-line grammar: reading back the parameters of the run
//! `--resume` continues from its stored command line.

use crate::args::{Cli, Command};
use crate::output::Sink;
use anyhow::Result;
use clap::Parser;
use pmscope_experiment::Env;
use pmscope_experiment::suite::{self, Original};

/// Runs the study into `sink`.
pub fn run(env: &mut Env, sink: &mut Sink, params: &suite::Params) -> Result<()> {
    suite::run(env, sink, params, &decode)
}

/// The suite parameters of a stored command line, if it ran `pmscope suite`.
fn decode(command_line: &[String]) -> Option<Original> {
    match Cli::try_parse_from(command_line) {
        Ok(Cli {
            command: Command::Suite(params),
            null_executor,
            blocks,
            ..
        }) => Some(Original {
            params,
            null_executor,
            blocks: blocks.0,
        }),
        _ => None,
    }
}
