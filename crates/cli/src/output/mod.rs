//! Where records go: JSON Lines on stdout with `--json`, a human table otherwise, and
//! JSON Lines into `-o FILE` (created exclusively unless `--force`). Warnings go to stderr
//! in table mode (they are inside the records in JSON mode). Unless `--no-store`, every
//! record also joins the results store as one point of this command's run.

pub mod progress;
pub mod table;

use crate::args::OutputArgs;
use crate::error::usage;
use anyhow::{Context as _, Result};
use pmscope_core::record::Record;
use pmscope_core::warning::Warning;
use pmscope_store::{RunId, Store};
use std::fs::File;
use std::io::{BufWriter, Write};

/// The destination of a command's records.
pub struct Sink {
    json: bool,
    file: Option<(String, BufWriter<File>)>,
    printed: Vec<String>,
    store: Option<StoreRun>,
}

/// The results store and this command's run in it (begun at the first record).
struct StoreRun {
    store: Store,
    tags: Vec<String>,
    run: Option<RunId>,
}

/// Opens the results store `--results`, `$PMSCOPE_RESULTS` or the default names.
pub fn open_store(a: &OutputArgs) -> Result<Store> {
    let path = a
        .results
        .clone()
        .or_else(pmscope_store::default_path)
        .ok_or_else(|| usage("no results store location: set $HOME, $PMSCOPE_RESULTS or pass --results PATH"))?;
    Ok(Store::open(&path)?)
}

impl Sink {
    /// Opens `-o FILE` now, before anything is measured, so a clobber is refused at once.
    pub fn open(a: &OutputArgs) -> Result<Sink> {
        let file = match &a.output {
            None => None,
            Some(path) => {
                let mut o = std::fs::OpenOptions::new();
                o.write(true);
                if a.force {
                    o.create(true).truncate(true);
                } else {
                    o.create_new(true);
                }
                let f = o.open(path).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        usage(format!(
                            "{} already exists; pass --force to overwrite it or choose another -o file",
                            path.display()
                        ))
                    } else {
                        anyhow::anyhow!("cannot create {}: {e}", path.display())
                    }
                })?;
                Some((path.display().to_string(), BufWriter::new(f)))
            }
        };
        let store = if a.no_store {
            None
        } else {
            Some(StoreRun { store: open_store(a)?, tags: a.tags.clone(), run: None })
        };
        Ok(Sink {
            json: a.json,
            file,
            printed: Vec::new(),
            store,
        })
    }

    /// Whether stdout takes JSON Lines.
    pub fn json(&self) -> bool {
        self.json
    }

    /// Emits one record: to the file (flushed at once, so an interrupted sweep keeps its
    /// finished points) and, with `--json`, to stdout.
    pub fn emit(&mut self, r: &Record) -> Result<()> {
        let line = serde_json::to_string(r).context("serialising a record")?;
        if let Some((name, f)) = &mut self.file {
            writeln!(f, "{line}")
                .and_then(|_| f.flush())
                .with_context(|| format!("writing {name}"))?;
        }
        if let Some(s) = &mut self.store {
            let run = match s.run {
                Some(run) => run,
                None => *s.run.insert(s.store.begin_run(&r.command_line, &s.tags)?),
            };
            s.store.add_record(run, r)?;
        }
        if self.json {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}").context("writing stdout")?;
        }
        Ok(())
    }

    /// Marks the stored run complete: the command ended without error.
    pub fn finish(self) -> Result<()> {
        if let Some(StoreRun { store, run: Some(run), .. }) = &self.store {
            store.finish_run(*run)?;
        }
        Ok(())
    }

    /// Prints warnings once each (table mode), to stderr.
    pub fn warn(&mut self, warnings: &[Warning]) {
        if self.json {
            return;
        }
        for w in warnings {
            let key = format!("{}{}", w.code, w.message);
            if self.printed.contains(&key) {
                continue;
            }
            self.printed.push(key);
            eprintln!("warning: {}\n         remedy: {}", w.message, w.remedy);
        }
    }

    /// Prints human text (table mode only).
    pub fn text(&self, s: &str) {
        if !self.json {
            println!("{s}");
        }
    }
}
