//! The `pmscope` binary: the command line ([`args`]) is parsed into a typed experiment step
//! (`pmscope_experiment::Step`) or one of the commands that measure nothing ([`cmd`]); the
//! experiment plans, measures and hands [`Record`]s to the sink ([`output`]).
//!
//! Errors are one sentence with a hint; usage errors exit 2, runtime failures 1. A panic is
//! a bug: it is reported in one line (no backtrace) and exits 1.
//!
//! [`Record`]: pmscope_core::record::Record

mod args;
mod cmd;
mod environment;
mod error;
mod output;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("pmscope: internal error: {msg}{at}; this is a bug, please report it");
    }));
    if let Err(e) = pmscope_runner::interrupt::install() {
        eprintln!("pmscope: cannot handle Ctrl-C ({e}); an interrupted run may leave files behind");
    }
    let cli = match args::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // A value our parsers refused: the same one sentence as every other usage error.
            if e.kind() == clap::error::ErrorKind::ValueValidation
                && let Some(why) = std::error::Error::source(&e)
            {
                let ctx = |k| match e.get(k) {
                    Some(clap::error::ContextValue::String(s)) => s.clone(),
                    _ => String::new(),
                };
                let flag = ctx(clap::error::ContextKind::InvalidArg);
                let flag = flag.split([' ', '=']).next().unwrap_or_default();
                let value = ctx(clap::error::ContextKind::InvalidValue);
                eprintln!("pmscope: {flag} {value}: {why}");
                return ExitCode::from(2);
            }
            // A word outside an option's set: one sentence naming the set.
            if e.kind() == clap::error::ErrorKind::InvalidValue {
                let ctx = |k| e.get(k).cloned();
                let text = |v: Option<clap::error::ContextValue>| match v {
                    Some(clap::error::ContextValue::String(s)) => s,
                    Some(clap::error::ContextValue::Strings(v)) => v.join(", "),
                    _ => String::new(),
                };
                let flag = text(ctx(clap::error::ContextKind::InvalidArg));
                let flag = flag
                    .split([' ', '='])
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let value = text(ctx(clap::error::ContextKind::InvalidValue));
                let valid = text(ctx(clap::error::ContextKind::ValidValue));
                if valid.is_empty() {
                    // No set to name: an empty value (`-o ''`, `--output=`).
                    eprintln!("pmscope: {flag} needs a value, and an empty one is none; give one");
                } else {
                    eprintln!("pmscope: {flag} {value}: not one of its values: use {valid}");
                }
                return ExitCode::from(2);
            }
            // clap prints its own usage errors (exit 2) and --help/--version (exit 0).
            let code = e.exit_code();
            let _ = e.print();
            return ExitCode::from(code as u8);
        }
    };
    let outcome = std::panic::catch_unwind(|| cmd::run(cli));
    if let Some(why) = pmscope_experiment::stdout::refused() {
        eprintln!("pmscope: cannot write standard output: {why}; the output is incomplete");
        return ExitCode::from(1);
    }
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) if pmscope_experiment::stdout::is_closed(&e) => {
            // The reader went away (`pmscope info | head -1`): it took what it wanted, so
            // exit 0, not 141, and a `set -o pipefail` pipeline does not fail on it.
            ExitCode::SUCCESS
        }
        Ok(Err(e)) if e.downcast_ref::<error::PassThrough>().is_some() => {
            ExitCode::from(error::exit_code(&e))
        }
        Ok(Err(e)) => {
            let code = error::exit_code(&e);
            eprintln!("pmscope: {}", error::describe(&e));
            ExitCode::from(code)
        }
        Err(_) => ExitCode::from(1),
    }
}
