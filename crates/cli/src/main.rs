//! The `pmscope` binary: clap arguments ([`args`]) are turned into a validated plan by each
//! command in [`cmd`], which maps targets, measures, and hands [`Record`]s to [`output`].
//!
//! Errors are one sentence with a hint; usage errors exit 2, runtime failures 1. A panic is
//! a bug: it is reported in one line (no backtrace) and exits 1.
//!
//! [`Record`]: pmscope_core::record::Record

mod args;
mod cmd;
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
            // clap prints its own usage errors (exit 2) and --help/--version (exit 0).
            let code = e.exit_code();
            let _ = e.print();
            return ExitCode::from(code as u8);
        }
    };
    let outcome = std::panic::catch_unwind(|| cmd::run(cli));
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e))
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            // The reader went away (`pmscope man | head`): not an error of ours.
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
