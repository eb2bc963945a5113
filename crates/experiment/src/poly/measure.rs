//! How `poly` runs a kernel on a target: the repetitions on the pinned thread, perf_event's
//! counters around each, and the checksum held against every earlier run of the kernel.

use super::{COUNTERS_AVAILABLE, Plan};
use crate::Env;
use crate::measure::with_repetitions;
use crate::output::Output;
use crate::progress::Progress;
use anyhow::Result;
use pmscope_core::summary::Summary;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_runner::executor::Executor;
use pmscope_runner::repeat::{RepeatPolicy, Repeated, SystemWatch, Workers, repeat};
use pmscope_sys::perf::{CacheMisses, MissCounts};
use pmscope_workload::polybench::{Kernel, Preset, Variant};
use std::time::Instant;

/// Relative difference of two checksums above which two runs did not compute the same
/// result. The variants add the same terms in other orders (interchange, tiling), which
/// moves a sum by about n * 2^-53 of its magnitude (n <= 10^4 here), many orders below this;
/// a wrong index or a missing term moves it by far more.
const CHECKSUM_TOLERANCE: f64 = 1e-9;

/// One kernel in one variant, its repetitions done.
struct Outcome {
    /// Seconds of each kept repetition, with their precision.
    seconds: Repeated<f64>,
    checksum: f64,
    /// Per repetition, or why perf_event gave no counts.
    misses: Result<Vec<MissCounts>, String>,
}

/// Runs the repetitions on the calling (pinned) thread as `policy` says: prepare the arrays
/// (not timed), then time the kernel with the counters around it. The first repetition is
/// dropped.
fn run_kernel(
    k: &Kernel,
    p: Preset,
    v: Variant,
    (policy, watch): (&RepeatPolicy, &mut SystemWatch),
    buf: &mut [f64],
) -> Result<Outcome> {
    let counters = CacheMisses::open();
    let runs = repeat(
        policy,
        watch,
        |(secs, _)| *secs,
        |_| {
            k.prepare(p, buf);
            if let Ok(c) = &counters {
                c.start();
            }
            let t = Instant::now();
            k.compute(p, v, buf);
            let secs = t.elapsed().as_secs_f64();
            let counts = match &counters {
                Ok(c) => Some(c.stop().map_err(anyhow::Error::msg)?),
                Err(_) => None,
            };
            Ok((secs, counts))
        },
    )?;
    let misses = match counters {
        Ok(_) => Ok(runs.kept.iter().filter_map(|(_, c)| *c).collect()),
        Err(why) => Err(why),
    };
    Ok(Outcome {
        seconds: runs.map(|(s, _)| *s),
        checksum: k.checksum(p, buf),
        misses,
    })
}

/// The null executor's outcome: the arrays prepared (so the target is written), the kernel
/// not run, synthetic times that differ by kernel and variant.
fn synthetic(k: &Kernel, p: Preset, v: Variant, policy: &RepeatPolicy, buf: &mut [f64]) -> Outcome {
    k.prepare(p, buf);
    let centre = 0.01 * (1 + k.name.len()) as f64 * if v == Variant::Ref { 2.0 } else { 1.0 };
    Outcome {
        seconds: Repeated::fixed(Executor::synthetic(policy.min, centre), policy.target),
        checksum: k.checksum(p, buf),
        misses: Err("the null executor ran no kernel".into()),
    }
}

/// A checksum seen earlier in the run.
struct Seen {
    kernel: &'static str,
    variant: Variant,
    spec: String,
    checksum: f64,
}

/// The first earlier run of the same kernel whose result differs from `checksum`, as a
/// warning for the record.
fn checksum_finding(
    seen: &[Seen],
    kernel: &str,
    variant: Variant,
    spec: &str,
    checksum: f64,
) -> Option<Warning> {
    let here = format!("{kernel} {} on {spec}", variant.name());
    if !checksum.is_finite() {
        return Some(Warning::new(
            "checksum-mismatch",
            format!("{here}: the checksum is {checksum}, not a number: the result is wrong"),
            "do not use this time; report it as a pmscope bug with the command line",
        ));
    }
    let other = seen.iter().filter(|s| s.kernel == kernel).find(|s| {
        (s.checksum - checksum).abs() > CHECKSUM_TOLERANCE * s.checksum.abs().max(checksum.abs())
    })?;
    Some(Warning::new(
        "checksum-mismatch",
        format!(
            "{here}: checksum {checksum:e} differs from {:e} of {} on {} (relative {:.1e}): the runs did not compute the same result",
            other.checksum,
            other.variant.name(),
            other.spec,
            (other.checksum - checksum).abs() / other.checksum.abs().max(checksum.abs())
        ),
        "do not compare these times; report it as a pmscope bug with the command line",
    ))
}

fn median(v: impl Iterator<Item = u64>) -> f64 {
    let v: Vec<f64> = v.map(|x| x as f64).collect();
    Summary::of(&v).map_or(0.0, |s| s.p50)
}

pub(super) fn measure(env: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let points = p.kernels.len() * p.variants.len() * p.specs.len();
    let progress = Progress::new(points as u64, "poly", out.human());
    let mut seen: Vec<Seen> = Vec::new();
    let mut h = env.start(out, &[p.cpu], Some(p.bytes), false)?;
    h.per_target(&p.specs, p.bytes, &p.opts, None, |run, m| {
        let spec = run.target().spec.clone();
        let executor = run.executor();
        let all: &mut [f64] = m.slice_mut::<f64>()?;
        for &k in &p.kernels {
            let layout = k.layout(p.preset);
            for &v in &p.variants {
                run.check_interrupt()?;
                let buf = &mut all[..layout.total()];
                let policy = run.repeat_policy(p.reps);
                let mut watch = run.watch(&[p.cpu], Workers::Busy(1));
                let out = run.on_cpu(p.cpu, buf, |buf| match executor {
                    Executor::Real => run_kernel(k, p.preset, v, (&policy, &mut watch), buf),
                    Executor::Null => Ok(synthetic(k, p.preset, v, &policy, buf)),
                })??;
                let mut r = run
                    .record("poly")
                    .param(p::KERNEL, k.name)
                    .param(p::VARIANT, v.name())
                    .param(p::PRESET, p.preset.name())
                    .param(p::PROBLEM_SIZE, layout.n)
                    .param(p::DATA_BYTES, layout.bytes())
                    .value(v::CHECKSUM, out.checksum);
                r = match &out.misses {
                    Ok(counts) => r
                        .param(p::PERF_COUNTERS, COUNTERS_AVAILABLE)
                        .value(
                            v::DTLB_LOAD_MISSES,
                            median(counts.iter().map(|c| c.dtlb_load_misses)),
                        )
                        .value(
                            v::LLC_LOAD_MISSES,
                            median(counts.iter().map(|c| c.llc_load_misses)),
                        ),
                    Err(why) => r.param(p::PERF_COUNTERS, format!("unavailable: {why}")),
                };
                r.warnings
                    .extend(checksum_finding(&seen, k.name, v, &spec, out.checksum));
                let mut r = with_repetitions(r, &out.seconds);
                r.metric = Some("time_s".into());
                run.emit(&r)?;
                seen.push(Seen {
                    kernel: k.name,
                    variant: v,
                    spec: spec.clone(),
                    checksum: out.checksum,
                });
                progress.inc();
            }
        }
        Ok(())
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_held_to_every_earlier_run_of_the_kernel() {
        let seen = vec![Seen {
            kernel: "gemm",
            variant: Variant::Ref,
            spec: "dram:4k".into(),
            checksum: 1000.0,
        }];
        assert!(
            checksum_finding(
                &seen,
                "gemm",
                Variant::Opt,
                "dram:4k",
                1000.0 * (1.0 + 1e-12)
            )
            .is_none()
        );
        assert!(checksum_finding(&seen, "lu", Variant::Opt, "dram:4k", 5.0).is_none());
        let w = checksum_finding(&seen, "gemm", Variant::Opt, "dram:thp", 1001.0).unwrap();
        assert_eq!(w.code, "checksum-mismatch");
        assert!(
            w.message.starts_with("gemm opt on dram:thp: checksum"),
            "{}",
            w.message
        );
        assert!(w.message.contains("of ref on dram:4k"), "{}", w.message);
        assert!(checksum_finding(&[], "gemm", Variant::Ref, "dram:4k", f64::NAN).is_some());
    }
}
