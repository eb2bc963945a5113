//! The errors an experiment raises itself: a usage error (exit 2) for what the user asked,
//! and the exit status of a program `pmscope run` ran. Library errors carry their own class
//! (`is_usage`); the binary maps all of them to exit codes in one place.

/// An error caused by the command line or the request itself (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The exit status of a program `pmscope run` ran: pmscope exits with it and prints
/// nothing more (the program said what it had to).
#[derive(Debug)]
pub struct PassThrough(pub u8);

impl std::fmt::Display for PassThrough {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the program exited with status {}", self.0)
    }
}

impl std::error::Error for PassThrough {}

/// Builds a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}
