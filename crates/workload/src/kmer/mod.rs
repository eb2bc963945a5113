//! K-mer set analysis (seed 003, sections 2.2 and 5): the PCR-primer workload.
//!
//! Primer candidates for detecting an in-group of bacteria are the k-mers present in
//! every in-group genome and in no out-group genome (in-group intersection minus
//! out-group union). The pipeline, module by module:
//!
//! ```text
//!  FASTA(.gz) ──read──▶ Genome ──encode (2-bit, rolling, canonical)──▶ k-mers
//!     ──build (threads, prefetch ring)──▶ table (KmerTable: volatile on a target)
//!     ──job (set operations on the trait)──▶ output (TSV / FASTA) + Report
//! ```
//!
//! * [`read`] — genomes from FASTA and gzipped FASTA, streamed a chunk at a time, with the N/IUPAC policy;
//! * [`packed`] — genomes streamed into 2-bit text and their runs of A, C, G, T (the binned method's input);
//! * [`encode`] — 2-bit k-mers up to k = 128, reverse complement, canonical form, rolling;
//! * [`estimate`] — a HyperLogLog estimate of distinct k-mers that sizes the table;
//! * [`table`] — the table interface and the volatile table;
//! * [`filter`] — a Bloom filter that answers most out-group lookups from the cache;
//! * [`binned`] — counting by minimizer bins in L2-sized tables (KMC's method, `--method binned`);
//! * [`build`] — inserting, marking and scanning with pinned threads;
//! * [`job`] — the operations (count, union, intersect, subtract, primers) in timed phases;
//! * [`output`] — TSV and FASTA writers, candidate regions;
//! * [`source`] — inputs: FASTA files, or a pangenome generated as it is read (`synth:seed-3,scale=0.1`);
//! * [`spill`] — the binned method out of core: bins in a scratch file when they do not fit the budget;
//! * [`synth`] — synthetic reference and strains for scale tests.

pub mod binned;
pub mod build;
pub mod encode;
pub mod estimate;
pub mod filter;
pub mod job;
pub mod output;
pub mod packed;
pub mod read;
mod rendezvous;
pub mod source;
pub mod spill;
pub mod synth;
pub mod table;

#[cfg(test)]
mod tests;
