//! What every option's check shares: the error that names a bad option, and the bound of a
//! millisecond option. A leaf, so that a policy's own options (the quota's) can be checked
//! where they are defined without that file and `options.rs` needing each other.

use std::fmt;

/// A bad option: which one, and what range is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    pub option: &'static str,
    pub message: String,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for OptionError {}

/// Upper bound for millisecond options: about 24.8 days, what setTimeout accepts.
pub const MAX_MS: u64 = 2_147_483_647;
