//! `--fence`, static-pm's fence policy, as the job commands and `bench` parse it: the
//! workload's policies ([`Fence`]) with their help lines.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use pmscope_workload::kmer::table::Fence;

/// `--fence`: static-pm's fence policies, each with its help line.
pub fn fences() -> impl TypedValueParser<Value = Fence> {
    PossibleValuesParser::new(Fence::ALL.map(|f| PossibleValue::new(f.name()).help(f.about())))
        .map(|s| s.parse::<Fence>().expect("a listed policy parses"))
}
