//! The core clock actually observed, as MLC and LATTester report it beside their figures: a
//! chain of dependent integer adds retires one add per cycle on every x86-64 core, so
//! counting them against the monotonic clock gives the frequency the core ran at during
//! the run (turbo, power capping, a hypervisor's share), which neither the TSC (constant
//! rate) nor cpufreq (absent in most VMs) tells.
#![allow(unsafe_code)]

/// Dependent adds per loop iteration; the loop's own `dec`/`jnz` run beside the chain.
const ADDS_PER_ITERATION: u64 = 16;

/// Runs `iterations` × 16 dependent adds: as many core cycles.
#[inline(never)]
fn add_chain(iterations: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut acc: u64 = 0;
        // SAFETY: register-only arithmetic and a counted loop; no memory is touched.
        unsafe {
            core::arch::asm!(
                "2:",
                "add {acc}, 1", "add {acc}, 1", "add {acc}, 1", "add {acc}, 1",
                "add {acc}, 1", "add {acc}, 1", "add {acc}, 1", "add {acc}, 1",
                "add {acc}, 1", "add {acc}, 1", "add {acc}, 1", "add {acc}, 1",
                "add {acc}, 1", "add {acc}, 1", "add {acc}, 1", "add {acc}, 1",
                "dec {n}",
                "jnz 2b",
                acc = inout(reg) acc,
                n = inout(reg) iterations.max(1) => _,
                options(nomem, nostack)
            );
        }
        acc
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        iterations * ADDS_PER_ITERATION
    }
}

/// The core clock in Hz observed over about `budget_ns` nanoseconds on the calling thread:
/// the best of many short windows (interruptions and steal time only ever slow a window
/// down, and a short window often escapes them).
pub fn observed_hz(budget_ns: u64) -> Option<f64> {
    const WINDOWS: u64 = 20;
    let window = (budget_ns / WINDOWS).max(200_000);
    // Size the windows from a short trial run.
    let trial = 10_000u64;
    let t0 = crate::tsc::monotonic_raw_ns();
    std::hint::black_box(add_chain(trial));
    let trial_ns = (crate::tsc::monotonic_raw_ns() - t0).max(1);
    let iterations = (trial as u128 * window as u128 / trial_ns as u128).max(1000) as u64;
    let mut best: Option<f64> = None;
    for _ in 0..WINDOWS {
        let t0 = crate::tsc::monotonic_raw_ns();
        let done = std::hint::black_box(add_chain(iterations));
        let ns = crate::tsc::monotonic_raw_ns().saturating_sub(t0);
        if ns == 0 || done != iterations * ADDS_PER_ITERATION {
            continue;
        }
        let hz = (iterations * ADDS_PER_ITERATION) as f64 / (ns as f64 * 1e-9);
        best = Some(best.map_or(hz, |b: f64| b.max(hz)));
    }
    best
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_chain_counts_what_it_ran() {
        assert_eq!(super::add_chain(3), 48);
        assert_eq!(super::add_chain(1000), 16_000);
    }

    #[test]
    fn an_observed_clock_is_a_plausible_clock() {
        // Not a timing assertion: any x86-64 core runs between 0.1 and 10 GHz; a broken
        // measurement (a chain the compiler removed, a wrong count) lands far outside.
        let hz = super::observed_hz(20_000_000).unwrap();
        assert!((1e8..1e10).contains(&hz), "{hz}");
    }
}
