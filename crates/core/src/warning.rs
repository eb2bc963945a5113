//! Findings about the configuration. Every warning names the fact and its remedy, because
//! the users of the tools pmscope replaces lost weeks to each of these silently.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A warning attached to a result and printed by the CLI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// A stable identifier (`thp-partial`, `numa-balancing`, ...), for scripts and tests.
    pub code: String,
    /// What was found, in one sentence.
    pub message: String,
    /// What to do about it.
    pub remedy: String,
}

impl Warning {
    /// Builds a warning.
    pub fn new(code: &str, message: impl Into<String>, remedy: impl Into<String>) -> Warning {
        Warning {
            code: code.to_string(),
            message: message.into(),
            remedy: remedy.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}); remedy: {}",
            self.message, self.code, self.remedy
        )
    }
}
