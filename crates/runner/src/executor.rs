//! Who does the measuring: the real kernels, or nothing at all. The [`Executor::Null`]
//! executor (fio's null engine, hyperfine's mock executor) yields deterministic synthetic
//! samples instead of running a timed kernel, so every measuring command can be run to
//! completion — plan, mapping, verification, records, rendering — in a test on any machine.
//! Records made by it say so: a `null` executor parameter and a warning.

use pmscope_core::warning::Warning;

/// Real measurement, or synthetic samples for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Executor {
    /// Runs the kernels.
    #[default]
    Real,
    /// Runs nothing timed; every measurement returns deterministic synthetic values.
    Null,
}

impl Executor {
    /// `real()` with the real executor, `synthetic()` with the null one. Commands put the
    /// whole timed part (chain building included) in `real`.
    pub fn run<T>(self, real: impl FnOnce() -> T, synthetic: impl FnOnce() -> T) -> T {
        match self {
            Executor::Real => real(),
            Executor::Null => synthetic(),
        }
    }

    /// `n` deterministic samples spread ±5 % around `center`, in a fixed shuffled order
    /// (so medians, spreads and histograms have something to summarise). Each call of the
    /// process continues the order where the last one stopped, so the blocks of a point,
    /// made by successive calls, differ as measured blocks do and their spread has
    /// something to judge.
    pub fn synthetic(n: usize, center: f64) -> Vec<f64> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = n.max(1);
        let first = NEXT.fetch_add(n, Ordering::Relaxed);
        (first..first + n)
            .map(|i| center * (0.95 + 0.1 * ((i * 7919 % 101) as f64 / 100.0)))
            .collect()
    }

    /// The warning every record of a null run carries.
    pub fn warning(self) -> Option<Warning> {
        (self == Executor::Null).then(|| {
            Warning::new(
                "synthetic-samples",
                "the null executor measured nothing: every figure of this run is synthetic",
                "run without the null executor to measure",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_runs_only_the_synthetic_side() {
        let mut ran = false;
        let v = Executor::Null.run(
            || {
                ran = true;
                1
            },
            || 2,
        );
        assert_eq!((v, ran), (2, false));
        assert_eq!(Executor::Real.run(|| 1, || 2), 1);
        let s = Executor::synthetic(100, 10.0);
        assert_eq!(s.len(), 100);
        assert!(s.iter().all(|&x| (9.5..=10.5).contains(&x)));
        assert!(s.iter().any(|&x| x != s[0]));
        assert!(Executor::Null.warning().is_some() && Executor::Real.warning().is_none());
    }
}
