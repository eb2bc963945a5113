//! `pmscope report [RUN|FILE.jsonl...]`: the offline HTML report of runs of the results
//! store or written with `-o` (one file per run), side by side; no argument is the store's
//! latest run. Everything it draws comes from the records (pmscope-report).

use crate::args::{OutputArgs, ReportArgs};
use crate::error::usage;
use crate::output::atomic_file::PendingOutput;
use crate::output::open_store;
use anyhow::{Context as _, Result};
use pmscope_core::record::Record;
use pmscope_experiment::Env as Context;
use pmscope_report::{CacheLevel, Options, Reference, Run};
use pmscope_sys::path::{self, Found};
use std::path::{Path, PathBuf};

/// Whether a report argument names a JSON Lines file rather than a run of the store: an
/// existing file, or something spelled like a path.
fn is_file_argument(arg: &str) -> bool {
    Path::new(arg).is_file() || arg.contains('/') || arg.ends_with(".jsonl")
}

/// Reads one run of the store, labelled by its id, host and start time.
fn store_run(store: &pmscope_store::Store, selector: &str) -> Result<Run> {
    let id = store.resolve(selector)?;
    let records = store.records(id)?;
    let Some(first) = records.first() else {
        return Err(usage(format!(
            "run {id} holds no records; see `pmscope results list`"
        )));
    };
    let label = format!("run {id} — {}", when(first));
    Ok(Run { label, records })
}

/// A record's host and time: "host (YYYY-MM-DD HH:MM UTC)".
fn when(first: &Record) -> String {
    format!("{} ({})", first.system.hostname, utc(first.timestamp_ms))
}

/// Milliseconds since the epoch as "YYYY-MM-DD HH:MM UTC".
pub(crate) fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    format!(
        "{} {:02}:{:02} UTC",
        date(days),
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Reads one JSON Lines file as one run, labelled by its host and first record's time.
fn read_run(path: &Path) -> Result<Run> {
    let records = pmscope_store::read_jsonl(path)?;
    let first = &records[0];
    let label = format!(
        "{} — {}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        when(first)
    );
    Ok(Run { label, records })
}

/// Days since 1970-01-01 as YYYY-MM-DD (civil calendar).
fn date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `--svg-dir DIR`: an existing directory, or a new one in an existing directory (a
/// trailing slash is allowed here: the option names a directory it may create).
fn svg_directory(dir: &Path) -> Result<()> {
    let bytes = dir.as_os_str().to_string_lossy();
    let bare = Path::new(bytes.trim_end_matches('/'));
    let bare = if bare.as_os_str().is_empty() {
        dir
    } else {
        bare
    };
    match path::look(bare).map_err(|e| usage(format!("--svg-dir {e}")))? {
        Found::Directory | Found::New => Ok(()),
        Found::File => Err(usage(format!(
            "--svg-dir {} is a file; name a directory",
            dir.display()
        ))),
    }
}

/// Runs `pmscope report`.
pub fn run(ctx: &Context, out: &OutputArgs, a: &ReportArgs) -> Result<()> {
    let reference = match &a.reference {
        None => None,
        Some(name) => Some(Reference::named(name).ok_or_else(|| {
            usage(format!(
                "unknown reference profile '{name}'; known: {}",
                Reference::names().join(", ")
            ))
        })?),
    };
    let path: PathBuf = out
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("report.html"));
    // Refuse a clobber, a dangling link or a missing directory before reading or writing
    // anything (the SVGs are written before the HTML, which appears only when complete).
    let mut html = PendingOutput::prepare(&path, out.force)?;
    if let Some(dir) = &a.svg_dir {
        svg_directory(dir)?;
    }
    let latest = ["latest".to_string()];
    let args: &[String] = if a.runs.is_empty() { &latest } else { &a.runs };
    // The store is opened only when a run is read from it.
    let mut store = None;
    let mut runs = Vec::new();
    for arg in args {
        if is_file_argument(arg) {
            runs.push(read_run(Path::new(arg))?);
        } else {
            if store.is_none() {
                store = Some(open_store(out)?);
            }
            runs.push(store_run(store.as_ref().expect("opened above"), arg)?);
        }
    }
    // Records carry no cache sizes: mark this machine's caches only when every run was
    // measured here, so no figure shows another machine's caches.
    let here = &ctx.system.hostname;
    let caches = if runs
        .iter()
        .all(|r| r.records.iter().all(|x| &x.system.hostname == here))
    {
        pmscope_sys::cpu::caches(&ctx.root, 0)
            .into_iter()
            .filter(|c| c.kind != "Instruction")
            .map(|c| CacheLevel {
                name: format!("L{}{}", c.level, if c.kind == "Data" { "d" } else { "" }),
                bytes: c.size_bytes,
            })
            .collect()
    } else {
        Vec::new()
    };
    let options = Options {
        title: None,
        caches,
        reference,
    };
    if let Some(dir) = &a.svg_dir {
        let written = pmscope_report::svg_files(&runs, &options, dir, out.force).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                usage(format!("{} already holds report SVG files; pass --force to overwrite them or choose another --svg-dir", dir.display()))
            } else {
                anyhow::anyhow!("cannot write SVG files into {}: {e}", dir.display())
            }
        })?;
        eprintln!("wrote {} SVG files into {}", written.len(), dir.display());
    }
    html.writer()
        .write_all(pmscope_report::html(&runs, &options).as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    html.commit()?;
    eprintln!("wrote {}", path.display());
    for o in pmscope_report::observations(&runs) {
        pmscope_experiment::stdout::line(&format!("{}  [{}]", o.text, o.run))?;
    }
    Ok(())
}
