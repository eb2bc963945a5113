//! The one writer of standard output. Rust ignores SIGPIPE, so `println!` to a reader that
//! went away (`pmscope info | head -1`) panics; every byte pmscope sends to stdout goes
//! through here instead, and a closed stdout becomes [`StdoutClosed`]: the command stops
//! at that write as a shell tool would, the binary records it on the run and exits 0
//! quietly (a reader that took what it wanted is not a failure, even under `pipefail`).
//!
//! A test (`crates/cli/tests/architecture.rs`) keeps `println!` and `std::io::stdout`
//! out of every other file.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set at the first write that found stdout closed; every later write fails at once, so
/// a command never measures on for a reader that is gone.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// The reader of standard output went away.
#[derive(Debug, Clone, Copy)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed by its reader")
    }
}

impl std::error::Error for StdoutClosed {}

/// Whether a write found stdout closed.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Whether `e` (anywhere in its chain) is a closed stdout: ours, or a broken pipe an
/// `std::io` writer (a `BufWriter` over [`Stdout`]) reported.
pub fn is_closed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<StdoutClosed>().is_some()
            || c.downcast_ref::<std::io::Error>().is_some_and(|io| {
                io.kind() == std::io::ErrorKind::BrokenPipe
                    || io
                        .get_ref()
                        .is_some_and(|inner| inner.downcast_ref::<StdoutClosed>().is_some())
            })
    })
}

/// Writes `text` as is and flushes it. Any failure stops the command as a closed stdout
/// does (so it unwinds and removes what it made); one that is not a quit reader (`>
/// /dev/full`, a full disk under `> file`) lost output the user asked for, and is kept for
/// [`refused`] so the binary ends with one sentence and exit 1, never a silent 0.
pub fn print(text: &str) -> Result<(), StdoutClosed> {
    match Stdout.write_all(text.as_bytes()) {
        Ok(()) => Ok(()),
        Err(e) => {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                let _ = REFUSED.set(e.to_string());
                CLOSED.store(true, Ordering::Relaxed);
            }
            Err(StdoutClosed)
        }
    }
}

/// Why stdout refused a write, where it was not a reader that quit.
static REFUSED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The error of a write stdout refused for another reason than a closed pipe, if any.
pub fn refused() -> Option<&'static str> {
    REFUSED.get().map(String::as_str)
}

/// Writes `text` and a newline.
pub fn line(text: &str) -> Result<(), StdoutClosed> {
    let mut s = String::with_capacity(text.len() + 1);
    s.push_str(text);
    s.push('\n');
    print(&s)
}

/// Standard output as an [`std::io::Write`] for code that streams (`-o -`, `results
/// export`): a closed stdout is an error whose source is [`StdoutClosed`]. Any other
/// failure (a full disk under `> file`) is passed on as it is: that one is an error.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        still_open()?;
        guard(std::io::stdout().lock().write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        still_open()?;
        let mut out = std::io::stdout().lock();
        guard(out.write_all(buf).and_then(|()| out.flush()))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        still_open()?;
        guard(std::io::stdout().lock().flush())
    }
}

fn still_open() -> std::io::Result<()> {
    if closed() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            StdoutClosed,
        ));
    }
    Ok(())
}

fn guard<T>(r: std::io::Result<T>) -> std::io::Result<T> {
    r.map_err(|e| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            CLOSED.store(true, Ordering::Relaxed);
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, StdoutClosed)
        } else {
            e
        }
    })
}
