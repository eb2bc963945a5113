//! Application workloads that put their data structures on pmscope targets, so that an
//! application's speed can be compared across memory tiers with the configuration each
//! target achieved.
//!
//! * [`kmer`] — k-mer set analysis for PCR primer design (seed 003): FASTA genomes, 2-bit
//!   canonical k-mers, a concurrent hash table on a target, set operations, and a record
//!   of inserts, set sizes, phase times and the table's verified configuration.
//! * [`kvstore`] — the key-value servers and load generators `pmscope app` drives (seed 004):
//!   their arguments on 127.0.0.1, the seed's workloads, the bounded runs of the clients
//!   and parsers of their output.
//!
//! This crate sits above `target`, `runner` and `core`; it contains no `unsafe` (the
//! software prefetch it uses is `pmscope_sys::prefetch`).
//!
//! ```
//! use pmscope_workload::kmer::encode::Kmer;
//! let x = Kmer::<1>::from_bases(b"TTTGA").unwrap();
//! assert_eq!(x.canonical(5).to_string(5), "TCAAA");
//! ```
#![deny(missing_docs)]

pub mod kmer;
pub mod kvstore;
pub mod polybench;
