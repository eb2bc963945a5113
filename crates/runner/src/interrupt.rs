//! Ctrl-C and SIGTERM as an ordinary error. Measuring code calls [`check`] where stopping is
//! cheap — between targets, points and repetitions — and returns [`Interrupted`] up the
//! stack like any error: the mappings unmap and remove their files on the way, the records
//! already emitted stay emitted, and the binary exits 130 (SIGINT) or 143 (SIGTERM).

/// The run was stopped by a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by {}: stopped after the points finished so far; the files pmscope created are removed", signal_name(*.signal))]
pub struct Interrupted {
    /// The signal number.
    pub signal: i32,
}

impl Interrupted {
    /// The shell's exit status for this signal (128 + N).
    pub fn exit_code(self) -> u8 {
        (128 + self.signal).clamp(0, 255) as u8
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        2 => "SIGINT (Ctrl-C)",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

/// Starts turning SIGINT and SIGTERM into [`Interrupted`] (the binary calls it first).
pub fn install() -> std::io::Result<()> {
    pmscope_sys::signal::install()
}

/// `Err(Interrupted)` once a signal has arrived.
pub fn check() -> Result<(), Interrupted> {
    match pmscope_sys::signal::received() {
        None => Ok(()),
        Some(signal) => Err(Interrupted { signal }),
    }
}
