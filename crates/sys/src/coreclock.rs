//! The core clock actually observed, as MLC and LATTester report it beside their figures:
//! counting core cycles against the monotonic clock gives the frequency the core ran at
//! during the run (turbo, power capping, a hypervisor's share), which neither the TSC
//! (constant rate) nor cpufreq (absent in most VMs) tells.
//!
//! Cycles are counted with a chain of dependent `imul r64, r64`: each waits for the one
//! before, and a 64-bit register multiply takes 3 cycles on every x86-64 core of the last
//! fifteen years (Intel since Nehalem, AMD since K10 and every Zen). A chain of `add reg,
//! imm` was used before and is wrong on newer Intel cores: their renamer folds immediate
//! adds, so the chain ran faster than one add per cycle and reported 22 GHz. No renamer
//! folds or eliminates a multiply of two registers.
//!
//! The figure is cross-checked against the TSC counted over the same windows: a core clock
//! below 0.2x or above 3x the TSC rate is not a clock any CPU runs at (turbo stays well under
//! 2x of base, and the TSC ticks at about the base rate), so it is reported as
//! [`CoreClock::Unmeasurable`] with the reason, never as a number.
#![allow(unsafe_code)]

/// Multiplies per loop iteration; the loop's own `dec`/`jnz` run beside the chain.
const IMULS_PER_ITERATION: u64 = 16;
/// The latency of `imul r64, r64` in core cycles (Intel and AMD optimisation manuals,
/// Agner Fog's instruction tables: 3 on every core pmscope runs on).
pub const IMUL_LATENCY_CYCLES: u64 = 3;
/// The multiplier: odd, so the chain never collapses to zero, and far from any value a
/// core could special-case.
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
/// The plausible range of the core clock as a multiple of the TSC rate.
pub const PLAUSIBLE_TSC_RATIO: (f64, f64) = (0.2, 3.0);

/// Runs `iterations` × 16 dependent multiplies (3 core cycles each) starting from `seed`,
/// and returns the product, so the caller can check the chain really ran.
#[inline(never)]
fn imul_chain(seed: u64, iterations: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut acc = seed;
        // SAFETY: register-only arithmetic and a counted loop; no memory is touched.
        unsafe {
            core::arch::asm!(
                "2:",
                "imul {acc}, {k}", "imul {acc}, {k}", "imul {acc}, {k}", "imul {acc}, {k}",
                "imul {acc}, {k}", "imul {acc}, {k}", "imul {acc}, {k}", "imul {acc}, {k}",
                "imul {acc}, {k}", "imul {acc}, {k}", "imul {acc}, {k}", "imul {acc}, {k}",
                "imul {acc}, {k}", "imul {acc}, {k}", "imul {acc}, {k}", "imul {acc}, {k}",
                "dec {n}",
                "jnz 2b",
                acc = inout(reg) acc,
                k = in(reg) MULTIPLIER,
                n = inout(reg) iterations.max(1) => _,
                options(nomem, nostack)
            );
        }
        acc
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        expected_product(seed, iterations)
    }
}

/// What [`imul_chain`] must return: `seed × MULTIPLIER^(16 × iterations)` modulo 2^64.
fn expected_product(seed: u64, iterations: u64) -> u64 {
    let mut acc = seed;
    for _ in 0..iterations.max(1) * IMULS_PER_ITERATION {
        acc = acc.wrapping_mul(MULTIPLIER);
    }
    acc
}

/// The core clock of a run: a figure, or the reason there is none.
#[derive(Debug, Clone, PartialEq)]
pub enum CoreClock {
    /// Observed in Hz, with the ratio to the TSC rate measured over the same windows.
    Observed {
        /// Core cycles per second.
        hz: f64,
        /// `hz` divided by the TSC's ticks per second over the same windows.
        tsc_ratio: f64,
    },
    /// No plausible figure could be had; the sentence says why.
    Unmeasurable {
        /// Why, with the implausible figures if there were any.
        reason: String,
    },
}

impl CoreClock {
    /// The figure in GHz rounded to 10 MHz, if there is one.
    pub fn ghz(&self) -> Option<f64> {
        match self {
            CoreClock::Observed { hz, .. } => Some((hz / 1e7).round() / 100.0),
            CoreClock::Unmeasurable { .. } => None,
        }
    }

    /// Why there is no figure, if there is none.
    pub fn unmeasurable_reason(&self) -> Option<&str> {
        match self {
            CoreClock::Observed { .. } => None,
            CoreClock::Unmeasurable { reason } => Some(reason),
        }
    }
}

/// Judges a core-clock figure against the TSC rate seen over the same time: outside
/// [`PLAUSIBLE_TSC_RATIO`] the method failed on this CPU (or the TSC is not what it claims),
/// and the figure must not be shown as a clock.
pub fn judge(core_hz: f64, tsc_hz: f64) -> CoreClock {
    if !(core_hz.is_finite() && core_hz > 0.0) {
        return CoreClock::Unmeasurable {
            reason: "the multiply chain gave no usable timing".into(),
        };
    }
    if !(tsc_hz.is_finite() && tsc_hz > 0.0) {
        return CoreClock::Unmeasurable {
            reason: format!(
                "the TSC did not advance, so the {:.2} GHz the multiply chain gave cannot be cross-checked",
                core_hz / 1e9
            ),
        };
    }
    let ratio = core_hz / tsc_hz;
    let (lo, hi) = PLAUSIBLE_TSC_RATIO;
    if (lo..=hi).contains(&ratio) {
        CoreClock::Observed {
            hz: core_hz,
            tsc_ratio: ratio,
        }
    } else {
        CoreClock::Unmeasurable {
            reason: format!(
                "the multiply chain gave {:.2} GHz, {ratio:.2}x the TSC's {:.2} GHz, outside the plausible {lo}-{hi}x (the chain does not run at {IMUL_LATENCY_CYCLES} cycles per multiply on this CPU, or the TSC rate is not what it claims)",
                core_hz / 1e9,
                tsc_hz / 1e9
            ),
        }
    }
}

/// The core clock observed over about `budget_ns` nanoseconds on the calling thread: the
/// best of many short windows (interruptions and steal time only ever slow a window down,
/// and a short window often escapes them), judged against the TSC of the same windows.
pub fn observe(budget_ns: u64) -> CoreClock {
    const WINDOWS: u64 = 20;
    let window = (budget_ns / WINDOWS).max(200_000);
    // Size the windows from a short trial run.
    let trial = 10_000u64;
    let t0 = crate::tsc::monotonic_raw_ns();
    std::hint::black_box(imul_chain(1, trial));
    let trial_ns = (crate::tsc::monotonic_raw_ns() - t0).max(1);
    let iterations = (trial as u128 * window as u128 / trial_ns as u128).max(1000) as u64;
    let expected = expected_product(1, iterations);
    let mut best: Option<(f64, f64)> = None; // (core Hz, TSC Hz) of the fastest window
    for _ in 0..WINDOWS {
        let (t0, c0) = (crate::tsc::monotonic_raw_ns(), crate::tsc::start());
        let product = imul_chain(std::hint::black_box(1), iterations);
        let (c1, t1) = (crate::tsc::start(), crate::tsc::monotonic_raw_ns());
        let ns = t1.saturating_sub(t0);
        if ns == 0 || product != expected {
            continue;
        }
        let seconds = ns as f64 * 1e-9;
        let hz = (iterations * IMULS_PER_ITERATION * IMUL_LATENCY_CYCLES) as f64 / seconds;
        let tsc_hz = c1.wrapping_sub(c0) as f64 / seconds;
        if best.is_none_or(|(b, _)| hz > b) {
            best = Some((hz, tsc_hz));
        }
    }
    match best {
        Some((hz, tsc_hz)) => judge(hz, tsc_hz),
        None => CoreClock::Unmeasurable {
            reason: "no timing window completed (the monotonic clock did not advance, or the chain's product was wrong)".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_computes_what_it_ran() {
        // A chain that ran fewer multiplies (or none) returns another product.
        assert_eq!(imul_chain(1, 3), expected_product(1, 3));
        assert_eq!(imul_chain(7, 1000), expected_product(7, 1000));
        assert_ne!(expected_product(1, 3), expected_product(1, 4));
    }

    #[test]
    fn an_observed_clock_is_a_plausible_clock_or_says_why_not() {
        // Not a timing assertion: any x86-64 core runs between 0.1 and 10 GHz and within
        // 0.2-3x of its TSC; a broken measurement (a chain the compiler removed, a renamer
        // that folds the chain, a wrong count) lands far outside, and must then say so.
        match observe(20_000_000) {
            CoreClock::Observed { hz, tsc_ratio } => {
                assert!((1e8..1e10).contains(&hz), "{hz}");
                assert!((0.2..=3.0).contains(&tsc_ratio), "{tsc_ratio}");
            }
            CoreClock::Unmeasurable { reason } => {
                // Allowed (a VM whose TSC is emulated), but only with a reason.
                assert!(
                    reason.contains("GHz") || reason.contains("window"),
                    "{reason}"
                );
            }
        }
    }

    #[test]
    fn a_clock_beyond_three_times_the_tsc_is_unmeasurable() {
        // The figure the add chain gave on a Sapphire Rapids VM: 22.3 GHz beside a 2.1 GHz TSC.
        let c = judge(22.3e9, 2.1e9);
        assert_eq!(c.ghz(), None);
        let why = c.unmeasurable_reason().unwrap();
        assert!(why.contains("22.30 GHz") && why.contains("10.62x"), "{why}");
        assert_eq!(judge(0.3e9, 2.1e9).ghz(), None, "below 0.2x");
        assert_eq!(judge(3.0e9, 0.0).ghz(), None, "no TSC");
        assert_eq!(judge(f64::NAN, 2.1e9).ghz(), None);
    }

    #[test]
    fn a_clock_near_the_tsc_is_a_figure() {
        assert_eq!(judge(3.456e9, 2.6e9).ghz(), Some(3.46));
        assert_eq!(
            judge(1.0e9, 2.6e9).ghz(),
            Some(1.0),
            "a throttled VM's share"
        );
    }
}
