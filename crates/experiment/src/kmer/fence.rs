//! `--fence`, static-pm's fence policy, and `--table`/`--tables`, the table kinds, as the
//! job commands and `bench` parse them: the workload's registries ([`Fence`],
//! [`TableKind`]) with their help lines.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use pmscope_workload::kmer::table::{Fence, TableKind};

/// `--fence`: static-pm's fence policies, each with its help line.
pub fn fences() -> impl TypedValueParser<Value = Fence> {
    PossibleValuesParser::new(Fence::ALL.map(|f| PossibleValue::new(f.name()).help(f.about())))
        .map(|s| s.parse::<Fence>().expect("a listed policy parses"))
}

/// `--table`: the workload's table registry, each kind with its help line.
pub fn table_kinds() -> impl TypedValueParser<Value = TableKind> {
    PossibleValuesParser::new(TableKind::ALL.map(|k| PossibleValue::new(k.name()).help(k.about())))
        .map(|s| s.parse::<TableKind>().expect("a listed kind parses"))
}
