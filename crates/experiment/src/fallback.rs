//! What a command does on a CPU without the newer instructions (AVX2, AVX-512F, clwb,
//! clflushopt): the defaults fall back to what the CPU has and the records say so; what the
//! user named explicitly is refused in one sentence (exit 2). CPUID (`CpuFeatures::detect`)
//! is the only authority on what may be executed.

use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::vocab::p;
use pmscope_core::warning::Warning;
use pmscope_persist::{PersistChoice, PersistStrategy, Persister};
use pmscope_sys::cpu::CpuFeatures;

/// The persister of `--persist` as given (`None`: not given, the default's fallback): a
/// named strategy this CPU lacks is a usage error (the strategy's own error, which carries
/// its exit code).
pub fn persister(given: Option<PersistStrategy>, f: &CpuFeatures) -> Result<Persister> {
    let choice = given.map_or(PersistChoice::Default, PersistChoice::Named);
    Ok(Persister::choose(choice, f)?)
}

/// The record's note that a default fell back to an older instruction (code
/// `cpu-fallback`): carried by every record of the run, shown once on the terminal.
pub fn note(message: impl Into<String>) -> Warning {
    Warning::new(
        "cpu-fallback",
        message,
        "none needed: it is the best this CPU has (see `pmscope info` and `pmscope list ops`); name the option to choose another",
    )
}

/// The persister's note, if its default fell back.
pub fn persist_note(p: &Persister) -> Option<Warning> {
    p.fallback_note().map(note)
}

/// The record's persistence parameters: the strategy used, whether it was the default's
/// choice, and the instructions it executes (`clflush`, `clwb+sfence`, ...).
pub fn persist_params(r: Record, p: &Persister) -> Record {
    r.param(p::PERSIST, p.strategy().name())
        .param(p::PERSIST_DEFAULT, p.defaulted())
        .param(p::PERSIST_INSTRUCTIONS, p.instructions())
}
