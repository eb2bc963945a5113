//! Files that appear only when complete (ripgrep's and hyperfine's habit for exported
//! results): `-o` record files and `pmscope kmer` outputs are written to an unnamed file in
//! their directory (`O_TMPFILE`, so not even a SIGKILL leaves a temporary file behind) and
//! linked into place on success.

use crate::error::usage;
use anyhow::{Context as _, Result, anyhow};
use pmscope_sys::path::Found;
use pmscope_sys::scratch;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// An output that appears under its name only when the run succeeded: stdout (`-`), or an
/// unnamed file in the name's directory (a hidden one beside the name where the file
/// system has no unnamed files), linked into place by [`PendingOutput::commit`] and gone if
/// the run fails, is interrupted or killed — so a failed run never leaves a truncated
/// file, never clobbers an existing one, and never leaves a 0-byte file that blocks the
/// next.
pub enum PendingOutput {
    /// `-`: standard output, flushed on commit.
    Stdout(BufWriter<crate::stdout::Stdout>),
    /// A file, written beside its name.
    File {
        /// `None`: the file is unnamed until commit.
        temp: Option<PathBuf>,
        /// The name it takes on commit.
        dest: PathBuf,
        /// Whether it may replace an existing file.
        force: bool,
        /// The option that named it, for the errors.
        flag: &'static str,
        /// Open until commit.
        writer: Option<BufWriter<File>>,
        /// Whether anything was written.
        wrote: bool,
    },
}

impl PendingOutput {
    /// Prepares the `-o` file `dest`.
    pub fn prepare(dest: &Path, force: bool) -> Result<PendingOutput> {
        PendingOutput::prepare_for("-o", dest, force)
    }

    /// Prepares `dest`, given with `flag` (named in the errors).
    pub fn prepare_for(flag: &'static str, dest: &Path, force: bool) -> Result<PendingOutput> {
        if dest == Path::new("-") {
            return Ok(PendingOutput::Stdout(BufWriter::with_capacity(
                1 << 20,
                crate::stdout::Stdout,
            )));
        }
        // The one path resolver: a dangling link, a trailing slash, a missing or unwritable
        // directory are refused here, before anything is measured.
        match pmscope_sys::path::look(dest).map_err(|e| usage(format!("{flag} {e}")))? {
            Found::Directory => {
                return Err(usage(format!(
                    "{flag} {} is a directory; name a file (e.g. {})",
                    dest.display(),
                    dest.join("records.jsonl").display()
                )));
            }
            Found::File if !force => {
                return Err(usage(format!(
                    "{} already exists; pass --force to overwrite it or choose another {flag} file",
                    dest.display()
                )));
            }
            Found::File | Found::New => {}
        }
        let name = dest
            .file_name()
            .ok_or_else(|| usage(format!("{flag} {}: not a file name", dest.display())))?;
        let temp = dest.with_file_name(format!(
            ".{}.pmscope-{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let cannot = |e: std::io::Error| usage(format!("cannot create {}: {e}", dest.display()));
        let (file, temp) = match scratch::create_unnamed(dir) {
            Ok(f) => (f, None),
            Err(e) if scratch::unnamed_unsupported(&e) => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&temp)
                    .map_err(cannot)?;
                (f, Some(temp))
            }
            Err(e) => return Err(cannot(e)),
        };
        Ok(PendingOutput::File {
            temp,
            dest: dest.to_path_buf(),
            force,
            flag,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
            wrote: false,
        })
    }

    /// Appends one line, flushed at once (JSON Lines records).
    pub fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let w = self.writer();
        writeln!(w, "{line}")?;
        w.flush()?;
        if let PendingOutput::File { wrote, .. } = self {
            *wrote = true;
        }
        Ok(())
    }

    /// Whether anything was written.
    pub fn written(&self) -> bool {
        matches!(self, PendingOutput::File { wrote: true, .. })
    }

    /// The writer (for outputs that are not JSON Lines, such as k-mers).
    pub fn writer(&mut self) -> &mut dyn Write {
        match self {
            PendingOutput::Stdout(w) => w,
            PendingOutput::File { writer, .. } => writer.as_mut().expect("open until commit"),
        }
    }

    /// Puts the finished file in place: a hard link fails if the name exists (no clobber
    /// even if it appeared meanwhile); --force renames over it.
    pub fn commit(mut self) -> Result<()> {
        match &mut self {
            PendingOutput::Stdout(w) => w.flush().context("writing stdout"),
            PendingOutput::File {
                temp,
                dest,
                force,
                flag,
                writer,
                ..
            } => {
                let w = writer.take().expect("open until commit");
                let file = w
                    .into_inner()
                    .map_err(|e| anyhow!("writing {}: {e}", dest.display()))?;
                file.sync_all().ok();
                let exists = || {
                    usage(format!(
                        "{} already exists; pass --force to overwrite it or choose another {flag} file",
                        dest.display()
                    ))
                };
                let Some(temp) = temp.as_ref() else {
                    // Unnamed: a link never replaces a name; --force links a hidden name
                    // and renames it over the old file, so the swap is atomic.
                    if !*force {
                        return scratch::link_unnamed(&file, dest).map_err(|e| {
                            if e.kind() == std::io::ErrorKind::AlreadyExists {
                                exists()
                            } else {
                                anyhow!("writing {}: {e}", dest.display())
                            }
                        });
                    }
                    let name = dest.file_name().unwrap_or_default().to_string_lossy();
                    let hidden =
                        dest.with_file_name(format!(".{name}.pmscope-{}.tmp", std::process::id()));
                    scratch::link_unnamed(&file, &hidden)
                        .with_context(|| format!("writing {}", dest.display()))?;
                    return std::fs::rename(&hidden, &*dest).with_context(|| {
                        let _ = std::fs::remove_file(&hidden);
                        format!("writing {}", dest.display())
                    });
                };
                if *force {
                    std::fs::rename(temp, &dest)
                        .with_context(|| format!("writing {}", dest.display()))?;
                } else {
                    match std::fs::hard_link(temp, &dest) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                            return Err(exists());
                        }
                        // File systems without hard links: the existence check above stands.
                        Err(_) => std::fs::rename(temp, &dest)
                            .with_context(|| format!("writing {}", dest.display()))?,
                    }
                }
                Ok(())
            }
        }
    }
}

impl Drop for PendingOutput {
    fn drop(&mut self) {
        if let PendingOutput::File {
            temp: Some(temp), ..
        } = self
        {
            let _ = std::fs::remove_file(temp);
        }
    }
}
