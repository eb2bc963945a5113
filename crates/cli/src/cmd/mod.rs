//! One file per command. Each turns its arguments into a plan (targets parsed, sizes
//! checked) before anything is mapped, then measures and hands records to the sink.

mod compare;
mod info;
mod list;
mod report;
mod results;
mod suite;

use crate::args::{Cli, Command};
use crate::error::PassThrough;
use crate::output::Sink;
use anyhow::Result;
use pmscope_experiment::Env as Context;
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt::Interrupted;
use std::io::Write as _;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let executor = if cli.null_executor {
        Executor::Null
    } else {
        Executor::Real
    };
    let mut ctx = Context::new(executor);
    ctx.prefetchers_off = cli.prefetchers == crate::args::Prefetchers::Off;
    ctx.precision = cli.precision.target();
    ctx.blocks = cli.blocks.0;
    match &cli.command {
        Command::Completions { shell } => {
            // Into a buffer first: clap_complete writes with `write_all(..).expect(..)`,
            // which would panic on a closed stdout.
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "pmscope", &mut script);
            pmscope_experiment::stdout::Stdout.write_all(&script)?;
            return Ok(());
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd).render(&mut pmscope_experiment::stdout::Stdout)?;
            return Ok(());
        }
        _ => {}
    }
    crate::environment::check_sysroot()?;
    match &cli.command {
        Command::Results(a) => return results::run(&cli.output, a),
        Command::Compare(a) => return compare::run(&cli.output, a),
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
        if pmscope_experiment::stdout::is_closed(&e) {
            // A reader that quit (`| head -1`) ends the command quietly; the run says so.
            sink.stdout_closed()?;
            return Err(e);
        }
        if e.downcast_ref::<PassThrough>().is_some() {
            // `pmscope run`'s program failed, not pmscope: its record is committed, then
            // pmscope exits with the program's status.
            sink.commit()?;
        }
        if e.downcast_ref::<Interrupted>().is_some() && !sink.json() {
            // The interruption is what the exit status reports, even if stdout is gone too.
            let _ = crate::output::finished::print(sink.records());
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
        Command::Experiment(step) => step.run(ctx, sink),
        Command::List { what } => list::run(ctx, sink, *what),
        Command::Suite(a) => suite::run(ctx, sink, a),
        Command::Completions { .. }
        | Command::Man
        | Command::Results(_)
        | Command::Compare(_)
        | Command::Report(_) => Err(anyhow::anyhow!(
            "this command does not write into a shared record sink"
        )),
    }
}
