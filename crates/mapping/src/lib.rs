//! Memory targets: what the user asked for ([`TargetSpec`], one grammar for every
//! experiment), how it is mapped ([`map`], one file per kind in `kinds/`), and what the
//! kernel actually gave ([`Mapping::achieved`], with [`Warning`]s where it differs).
//!
//! ```text
//! spec := kind [ ':' arg ] ( ',' key '=' value )*
//!   dram[:4k|thp|2m|1g]        anonymous private memory (default 4k)
//!   file:PATH                  a file pmscope creates exclusively in directory PATH or at PATH
//!   shm[:4k|thp]               a file in /dev/shm: DRAM-emulated pmem (PM-LDRAM)
//!   devdax:/dev/daxX.Y         a device-DAX character device (needs --destroy-data)
//!   any kind: node=N           mbind(MPOL_BIND) to node N before the first touch
//! ```
//!
//! ```
//! use pmscope_mapping::TargetSpec;
//! let spec: TargetSpec = "dram:thp,node=0".parse().unwrap();
//! assert_eq!(spec.to_string(), "dram:thp,node=0");
//! ```
//!
//! Mapping pre-faults every page (timed, counting minor faults), then reads back the page
//! sizes (smaps, and the fault count where smaps is blind), the NUMA node of the pages
//! (move_pages) and the DAX state. [`verify`] compares that with what the kind expects.
#![deny(missing_docs)]

mod backing;
mod error;
mod guard;
mod heap;
pub mod kinds;
mod mapping;
pub mod pool;
mod room;
pub mod sizing;
mod spec;
pub mod verify;

pub use backing::{DestroyData, FirstTouch, MapOptions};
pub use error::{SpecError, TargetError};
pub use guard::MemoryGuard;
pub use heap::{HeapBacking, HeapPlan};
pub use mapping::{Handoff, Mapping, Pod, map, map_chosen};
pub use pmscope_core::warning::Warning;
pub use spec::TargetSpec;
