//! One file per command. Each turns its arguments into a plan (targets parsed, sizes
//! checked) before anything is mapped, then measures and hands records to the sink.

mod app;
mod bandwidth;
mod info;
pub(crate) mod inst;
mod latency;
mod list;
mod loaded;
mod numa;
mod poly;
mod probe;
mod quick;
mod report;
mod results;
mod run;
mod suite;
mod sync;
mod verify;

use crate::args::{Cli, Command};
use crate::output::Sink;
use anyhow::Result;
use pmscope_experiment::Env as Context;
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt::Interrupted;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let executor = if cli.null_executor {
        Executor::Null
    } else {
        Executor::Real
    };
    let mut ctx = Context::new(executor);
    ctx.prefetchers_off = cli.prefetchers == "off";
    match &cli.command {
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "pmscope", &mut std::io::stdout());
            return Ok(());
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
            return Ok(());
        }
        _ => {}
    }
    if let Command::Run(a) = &cli.command {
        // `pmscope run` exits with the program's status, after its record is committed.
        let mut sink = Sink::open(&cli.output)?;
        return run::run(&mut ctx, &mut sink, a);
    }
    match &cli.command {
        Command::Results(a) => return results::run(&cli.output, a),
        Command::Compare(a) => return results::compare(&cli.output, a),
        Command::Report(a) => return report::run(&ctx, &cli.output, a),
        _ => {}
    }
    // `info` and `list` measure nothing: they do not touch the results store.
    let measures = !matches!(cli.command, Command::Info | Command::List { .. });
    let mut sink = Sink::open(&crate::args::OutputArgs {
        no_store: cli.output.no_store || !measures,
        ..cli.output.clone()
    })?;
    let sink = &mut sink;
    let outcome = dispatch(&mut ctx, sink, &cli.command);
    if let Err(e) = outcome {
        if e.downcast_ref::<Interrupted>().is_some() && !sink.json() {
            crate::output::finished::print(sink.records());
        }
        return Err(e);
    }
    // Only a run that succeeded puts its -o file in place.
    sink.commit()
}

/// Runs one record-producing command into `sink` (the suite runs its steps through here).
pub fn dispatch(ctx: &mut Context, sink: &mut Sink, command: &Command) -> Result<()> {
    match command {
        Command::Info => info::run(ctx, sink),
        Command::Quick(a) => quick::run(ctx, sink, a),
        Command::Verify(a) => verify::run(ctx, sink, a),
        Command::Latency(a) => latency::run(ctx, sink, a),
        Command::Inst(a) => inst::run(ctx, sink, a),
        Command::Sync(a) => sync::run(ctx, sink, a),
        Command::Experiment(step) => step.run(ctx, sink),
        Command::Bandwidth(a) => bandwidth::run(ctx, sink, a),
        Command::Loaded(a) => loaded::run(ctx, sink, a),
        Command::List { what } => list::run(ctx, sink, *what),
        Command::Suite(a) => suite::run(ctx, sink, a),
        Command::Numa(a) => numa::run(ctx, sink, a),
        Command::Poly(a) => poly::run(ctx, sink, a),
        Command::Probe(a) => probe::run(ctx, sink, a),
        Command::App(a) => app::run(ctx, sink, a),
        Command::Run(_)
        | Command::Completions { .. }
        | Command::Man
        | Command::Results(_)
        | Command::Compare(_)
        | Command::Report(_) => Err(anyhow::anyhow!(
            "this command does not write into a shared record sink"
        )),
    }
}
