//! Exit codes and messages: 2 for what the user asked (usage), 1 for what the system did.

use pmscope_mapping::TargetError;

/// An error caused by the command line or the request itself (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Builds a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// 2 for usage errors anywhere in the chain, 1 otherwise.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    let is_usage = e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<TargetError>()
                .is_some_and(|t| t.is_usage())
            || c.downcast_ref::<pmscope_store::StoreError>()
                .is_some_and(|s| s.is_usage())
    });
    if is_usage { 2 } else { 1 }
}

/// The message: the chain joined on one line.
pub fn describe(e: &anyhow::Error) -> String {
    format!("{e:#}")
}
