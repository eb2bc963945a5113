//! Progress for runs longer than two seconds: a bar on stderr that appears only after two
//! seconds, only on a terminal, and never in `--json` mode.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

/// A progress sink; hidden until the run has lasted two seconds.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
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
            shown: false,
            allowed,
        }
    }

    /// One step done.
    pub fn inc(&mut self) {
        if self.allowed && !self.shown && self.started.elapsed() > Duration::from_secs(2) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.inc(1);
    }

    /// Removes the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
