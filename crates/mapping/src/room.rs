//! What bounds a default size on one target, before anything is mapped: each kind's
//! answer to `Kind::room` ([`TargetRoom`], with its own capacity as a [`Limit`]), which
//! [`crate::sizing`] folds into the machine's `Room`. A leaf, so that the kinds and the
//! sizing rule both build on it.

/// One bound on what may be mapped at once, besides RAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// Bytes.
    pub bytes: u64,
    /// What it is, for the note (`the 512 free 2MiB huge pages`).
    pub what: String,
    /// How to raise it.
    pub remedy: String,
}

/// What one target contributes to a [`Room`](crate::sizing::Room) (each kind says,
/// `Kind::room`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRoom {
    /// The granule the kind rounds a mapping's length up to.
    pub granule: u64,
    /// Whether its pages are RAM that MemAvailable counts.
    pub ram: bool,
    /// Its own capacity, if it has one.
    pub own: Option<Limit>,
}

impl TargetRoom {
    /// Anonymous or tmpfs memory of base pages: RAM, rounded to 4 KiB.
    pub fn ram(granule: u64) -> TargetRoom {
        TargetRoom {
            granule,
            ram: true,
            own: None,
        }
    }
}
