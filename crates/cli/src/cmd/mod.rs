//! One file per command. Each turns its arguments into a plan (targets parsed, sizes
//! checked) before anything is mapped, then measures and hands records to the sink.

mod bandwidth;
mod info;
pub(crate) mod inst;
mod kmer;
mod latency;
mod list;
mod loaded;
mod quick;
mod rap;
mod report;
mod sync;
mod verify;

use crate::args::{Cli, Command};
use crate::context::Context;
use crate::output::Sink;
use anyhow::Result;
use pmscope_runner::executor::Executor;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let executor = if cli.null_executor {
        Executor::Null
    } else {
        Executor::Real
    };
    let mut ctx = Context::new(executor);
    // Opened per arm: `pmscope kmer` writes its k-mer sets to -o itself and opens its own
    // record sink, every other command sends its records to this one.
    let sink = || Sink::open(&cli.output);
    match &cli.command {
        Command::Info => info::run(&mut ctx, &mut sink()?),
        Command::Quick(a) => quick::run(&mut ctx, &mut sink()?, a),
        Command::Verify(a) => verify::run(&mut ctx, &mut sink()?, a),
        Command::Latency(a) => latency::run(&mut ctx, &mut sink()?, a),
        Command::Inst(a) => inst::run(&mut ctx, &mut sink()?, a),
        Command::Sync(a) => sync::run(&mut ctx, &mut sink()?, a),
        Command::Rap(a) => rap::run(&mut ctx, &mut sink()?, a),
        Command::Bandwidth(a) => bandwidth::run(&mut ctx, &mut sink()?, a),
        Command::Loaded(a) => loaded::run(&mut ctx, &mut sink()?, a),
        Command::Report(a) => report::run(&ctx, &cli.output, a),
        Command::List { what } => list::run(&ctx, &mut sink()?, *what),
        Command::Kmer(a) => kmer::run(&mut ctx, &cli.output, a),
    }
}
