//! pmscope's vocabulary: the types every other crate speaks, with no I/O and no `unsafe`.
//!
//! * [`units`] — byte sizes (binary prefixes) and their grammar;
//! * [`range`] — the one grammar for every sweep axis (`64..4KiB:x2`, `1,2,4`);
//! * [`cpulist`] — CPU and node lists as the kernel writes them (`0-3,8`);
//! * [`knee`] — where a curve over a sweep steps (buffer sizes, cache plateaus);
//! * [`summary`] — n, min, percentiles, max, mean, stddev of a sample;
//! * [`precision`] — the 95 % interval of a point's median and whether it is precise enough;
//! * [`blocks`] — points measured in blocks on fresh placements: merging them, their interval;
//! * [`stats`] — the normal tail, Holm's correction and a robust scale, for tests against noise;
//! * [`warning`] — a finding about the configuration, always with its remedy;
//! * [`achieved`] — what the kernel actually gave a target (page sizes, nodes, DAX);
//! * [`record`] — THE result schema, with its version;
//! * [`vocab`] — every experiment, parameter and value key, and the enums records carry.
//!
//! ```
//! use pmscope_core::units::Bytes;
//! assert_eq!("2MiB".parse::<Bytes>().unwrap(), Bytes(2 << 20));
//! assert_eq!(Bytes(1 << 30).to_string(), "1GiB");
//! ```
#![deny(missing_docs)]

pub mod achieved;
pub mod best;
pub mod blocks;
pub mod cpulist;
pub mod fence;
pub mod key;
pub mod knee;
pub mod precision;
pub mod range;
pub mod record;
pub mod stats;
pub mod summary;
pub mod units;
pub mod vocab;
pub mod warning;
pub mod whole;
