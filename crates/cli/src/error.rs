//! Exit codes and messages: 2 for what the user asked (usage), 1 for what the system did.

use pmscope_mapping::TargetError;
use pmscope_runner::interrupt::Interrupted;

pub use pmscope_experiment::error::{PassThrough, UsageError, usage};

/// 130/143 for a run stopped by SIGINT/SIGTERM, 2 for usage errors anywhere in the chain,
/// 1 otherwise. Library errors carry their own class (`is_usage`), so a call site only passes
/// them on with `?`.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if let Some(i) = e.chain().find_map(|c| c.downcast_ref::<Interrupted>()) {
        return i.exit_code();
    }
    if let Some(p) = e.downcast_ref::<PassThrough>() {
        return p.0;
    }
    let is_usage = e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<TargetError>()
                .is_some_and(|t| t.is_usage())
            || c.downcast_ref::<pmscope_loops::Unavailable>()
                .is_some_and(|u| u.is_usage())
            || c.downcast_ref::<pmscope_persist::StrategyError>()
                .is_some_and(|s| s.is_usage())
            || c.downcast_ref::<pmscope_store::StoreError>()
                .is_some_and(|s| s.is_usage())
            || c.downcast_ref::<pmscope_runner::launch::LaunchError>()
                .is_some_and(|l| l.is_usage())
            || c.downcast_ref::<pmscope_workload::kmer::job::JobError>()
                .is_some_and(|j| j.is_usage())
    });
    if is_usage { 2 } else { 1 }
}

/// The message: the chain joined on one line.
pub fn describe(e: &anyhow::Error) -> String {
    format!("{e:#}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_loops::access::{FenceKind, Op, Sequence, Width};
    use pmscope_sys::cpu::CpuFeatures;

    /// The class comes from the error's type, whatever the call site wraps around it.
    #[test]
    fn library_errors_carry_their_exit_code() {
        let timer_only = CpuFeatures {
            rdtscp: true,
            ..CpuFeatures::default()
        };
        let asked =
            Sequence::new(Op::StoreClwb, FenceKind::None, Width::W8, &timer_only).unwrap_err();
        assert_eq!(exit_code(&anyhow::Error::new(asked)), 2);
        let no_timer = Sequence::new(
            Op::Load,
            FenceKind::None,
            Width::W8,
            &CpuFeatures::default(),
        )
        .unwrap_err();
        assert_eq!(exit_code(&anyhow::Error::new(no_timer.clone())), 1);
        assert_eq!(
            exit_code(&anyhow::Error::new(no_timer).context("measuring")),
            1
        );
        let unknown = "clwbx"
            .parse::<pmscope_persist::PersistStrategy>()
            .unwrap_err();
        assert_eq!(
            exit_code(&anyhow::Error::new(unknown).context("--persist")),
            2
        );
        let missing = pmscope_persist::Persister::new(
            pmscope_persist::PersistStrategy::Clwb,
            &CpuFeatures::default(),
        )
        .unwrap_err();
        assert_eq!(exit_code(&anyhow::Error::new(missing)), 2);
    }
}
