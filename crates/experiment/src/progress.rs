//! Progress for runs longer than two seconds: a bar on stderr that appears only after two
//! seconds, only on a terminal, and never in `--json` mode. It is `Sync`, so the pinned
//! worker threads that do the measuring advance it themselves.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A progress sink; hidden until the run has lasted two seconds.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    shown: AtomicBool,
    allowed: bool,
}

impl Progress {
    /// A bar of `total` steps; `allowed` is false in JSON mode.
    pub fn new(total: u64, what: &str, allowed: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:>12} [{bar:30}] {pos}/{len} {elapsed_precise} (eta {eta})",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        bar.set_message(what.to_string());
        Progress {
            bar,
            started: Instant::now(),
            shown: AtomicBool::new(false),
            allowed,
        }
    }

    /// One step done (from any thread).
    pub fn inc(&self) {
        if self.allowed
            && self.started.elapsed() > Duration::from_secs(2)
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        self.bar.inc(1);
    }

    /// Removes the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

impl pmscope_runner::harness::Progress for Progress {
    fn inc(&self) {
        Progress::inc(self)
    }
}
