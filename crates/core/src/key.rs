//! The types of record keys. The keys themselves are declared once, in [`crate::vocab`];
//! a record can only be written and read through them.

/// One documented key of `params` or `values`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The key as it appears in records.
    pub name: &'static str,
    /// What it means (with its unit where the name does not carry one).
    pub doc: &'static str,
}

/// A key of `params`: the only way to name one (see the constants in [`p`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamKey(pub Key);

/// A key of `values`: the only way to name one (see the constants in [`v`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueKey(pub Key);

impl ParamKey {
    /// The key as records spell it.
    pub const fn name(self) -> &'static str {
        self.0.name
    }
}

impl ValueKey {
    /// The key as records spell it.
    pub const fn name(self) -> &'static str {
        self.0.name
    }
}
