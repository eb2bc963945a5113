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
mod results;
mod sync;
mod verify;

use crate::args::{Cli, Command};
use crate::context::Context;
use crate::output::Sink;
use anyhow::Result;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let mut ctx = Context::new();
    // Opened per arm: `pmscope kmer` writes its k-mer sets to -o itself and opens its own
    // record sink, every other command sends its records to this one.
    // `with_sink` marks the stored run complete when the command succeeds.
    let with_sink = |f: &mut dyn FnMut(&mut Sink) -> Result<()>| -> Result<()> {
        let mut sink = Sink::open(&cli.output)?;
        f(&mut sink)?;
        sink.finish()
    };
    let no_store = crate::args::OutputArgs { no_store: true, ..cli.output.clone() };
    match &cli.command {
        Command::Info => info::run(&mut ctx, &mut Sink::open(&no_store)?),
        Command::Quick(a) => with_sink(&mut |s| quick::run(&mut ctx, s, a)),
        Command::Verify(a) => with_sink(&mut |s| verify::run(&mut ctx, s, a)),
        Command::Latency(a) => with_sink(&mut |s| latency::run(&mut ctx, s, a)),
        Command::Inst(a) => with_sink(&mut |s| inst::run(&mut ctx, s, a)),
        Command::Sync(a) => with_sink(&mut |s| sync::run(&mut ctx, s, a)),
        Command::Rap(a) => with_sink(&mut |s| rap::run(&mut ctx, s, a)),
        Command::Bandwidth(a) => with_sink(&mut |s| bandwidth::run(&mut ctx, s, a)),
        Command::Loaded(a) => with_sink(&mut |s| loaded::run(&mut ctx, s, a)),
        Command::List { what } => list::run(&ctx, &mut Sink::open(&no_store)?, *what),
        Command::Kmer(a) => kmer::run(&mut ctx, &cli.output, a),
        Command::Results(a) => results::run(&cli.output, a),
        Command::Compare(a) => results::compare(&cli.output, a),
    }
}
