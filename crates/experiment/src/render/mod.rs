//! What the terminal tables share: a table layout, a histogram, grouping records.

pub mod fields;
pub mod histogram;
pub mod table;
