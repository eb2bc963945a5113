//! Errors of parsing and mapping a target. Each is one sentence with its remedy;
//! `is_usage` tells the CLI whether the user asked for something impossible (exit 2) or
//! the system refused (exit 1).

/// Why a spec did not parse; the message is one sentence naming the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// Why a target could not be mapped.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The spec or options ask for something pmscope refuses to do as asked.
    #[error("{0}")]
    Usage(String),
    /// The system refused, or a resource is missing.
    #[error("{0}")]
    System(String),
}

impl TargetError {
    /// Whether this is the user's request rather than the machine's state.
    pub fn is_usage(&self) -> bool {
        matches!(self, TargetError::Usage(_))
    }

    pub(crate) fn usage(msg: impl Into<String>) -> TargetError {
        TargetError::Usage(msg.into())
    }

    pub(crate) fn system(msg: impl Into<String>) -> TargetError {
        TargetError::System(msg.into())
    }
}
