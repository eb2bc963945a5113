//! `pmscope poly`: the PolyBench kernels of seed 000 Table 1 with their arrays on each
//! target, single-threaded and pinned. Per kernel x variant x target: the median time of the
//! repetitions, the page size the target verifiably achieved, dTLB and LLC read misses from
//! perf_event where the hardware has them ("unavailable" and why where it does not), and the
//! checksum of the result held against the other variant's and the other targets'. With
//! several targets the table takes Table 1's layout: time per target and variant, the
//! ref/opt ratio, and the 4K-to-2M speed-up per memory kind.

mod cells;
mod measure;
mod render;
mod table1;

use crate::error::usage;
use crate::output::Output;
use crate::params::{Count, TargetArgs};
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::record::Record;
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_workload::polybench::{KERNELS, Kernel, Preset, Variant};
use std::str::FromStr;

/// What records say of perf_event's counters when it counted them (`perf_counters`); else
/// `unavailable: ` and why.
const COUNTERS_AVAILABLE: &str = "available";

/// A kernel of [`KERNELS`], by name.
#[derive(Clone, Copy)]
pub struct KernelName(pub &'static Kernel);

impl std::fmt::Debug for KernelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl FromStr for KernelName {
    type Err = String;
    fn from_str(s: &str) -> Result<KernelName, String> {
        let name = s.trim();
        pmscope_workload::polybench::find(name)
            .map(KernelName)
            .ok_or_else(|| {
                format!(
                    "unknown kernel `{name}`; use any of {}",
                    KERNELS
                        .iter()
                        .map(|k| k.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

/// A variant as `--variants` lists it (spaces around a name allowed).
fn variant(s: &str) -> Result<Variant, String> {
    s.trim().parse()
}

/// `pmscope poly`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options (default: dram:4k); every kernel's arrays are carved
    /// from one mapping of the largest kernel's size on each target.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Dataset size: mini, small, medium, large, or seed (seed 000 Table 1's sizes, up to
    /// about 1 GiB per kernel).
    #[arg(long, default_value = "medium")]
    pub preset: Preset,
    /// Kernels, comma-separated (default: all 22 of seed 000 Table 1; `pmscope poly --kernels
    /// list` names them).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub kernels: Option<Vec<KernelName>>,
    /// Variants, comma-separated: ref (textbook loop order), opt (interchanged, tiled).
    #[arg(
        long,
        default_value = "ref,opt",
        value_name = "LIST",
        value_delimiter = ',',
        value_parser = variant
    )]
    pub variants: Vec<Variant>,
    /// Timed runs per kernel, variant and target, at least (one more is run first and dropped; more until --precision is met).
    #[arg(long, visible_alias = "reps", default_value = "3")]
    pub repetitions: Count,
    /// CPU to pin the kernels to.
    #[arg(long, value_name = "CPU", value_parser = pmscope_core::whole::parse::<usize>)]
    pub cpu: Option<usize>,
}

/// What `poly` runs, validated before anything is mapped.
pub struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    preset: Preset,
    kernels: Vec<&'static Kernel>,
    variants: Vec<Variant>,
    reps: usize,
    cpu: usize,
    /// Bytes of the largest kernel's arrays: each target maps this once and every kernel
    /// carves its arrays from the start of it.
    bytes: u64,
}

fn plan(env: &Env, a: &Params) -> Result<Plan> {
    // The kernels in the order given (default: all, in Table 1's order), each once.
    let mut kernels: Vec<&'static Kernel> = Vec::new();
    match &a.kernels {
        None => kernels.extend(KERNELS.iter()),
        Some(named) => {
            for k in named {
                if !kernels.iter().any(|o| o.name == k.0.name) {
                    kernels.push(k.0);
                }
            }
        }
    }
    let mut variants: Vec<Variant> = Vec::new();
    for &v in &a.variants {
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    let (specs, opts) = env.targets(&a.targets, &["dram:4k"])?;
    let (largest, bytes) = kernels
        .iter()
        .map(|k| (k.name, k.layout(a.preset).bytes() as u64))
        .max_by_key(|(_, b)| *b)
        .expect("at least one kernel");
    check_memory(&opts, &specs, a.preset, largest, bytes)?;
    let cpu = match a.cpu {
        Some(c) => c,
        None => *pmscope_sys::affinity::allowed_cpus()?
            .first()
            .ok_or_else(|| anyhow::anyhow!("this process may run on no CPU"))?,
    };
    Ok(Plan {
        specs,
        opts,
        preset: a.preset,
        kernels,
        variants,
        reps: a.repetitions.0,
        cpu,
        bytes,
    })
}

/// Refuses a preset whose largest kernel does not fit in the memory `--max-mem` allows, on
/// each target whose pages are RAM that MemAvailable counts (as its kind says: hugetlb
/// pools, file systems and devices are checked by the mapping against their own capacity),
/// with the figures, before anything is mapped.
fn check_memory(
    opts: &MapOptions,
    specs: &[TargetSpec],
    preset: Preset,
    largest: &str,
    bytes: u64,
) -> Result<()> {
    for spec in specs.iter().filter(|s| s.room(opts).ram) {
        opts.guard
            .check(
                bytes,
                &format!("--preset {preset} (the arrays of {largest} on {spec})"),
            )
            .map_err(|e| usage(e.to_string().replace("a smaller size", "a smaller preset")))?;
    }
    Ok(())
}

/// `pmscope poly`.
pub struct Poly;

impl Experiment for Poly {
    const NAME: &'static str = "poly";
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, params: &Params) -> Result<Plan> {
        plan(env, params)
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        measure::measure(env, out, plan)
    }

    fn render(records: &[Record]) -> String {
        render::render(records)
    }

    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
        if let Some(c) = &on.cpus {
            params.cpu = c.0.first().copied();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_mapping::MemoryGuard;

    #[test]
    fn the_memory_check_names_the_preset_and_the_figures() {
        let opts = MapOptions {
            guard: MemoryGuard::with(1 << 30, Some(64 << 20)),
            ..MapOptions::host()
        };
        let specs: Vec<TargetSpec> = ["dram:4k", "dram:2m"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let e = check_memory(&opts, &specs, Preset::Seed, "jacobi-1d", 1 << 30).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--preset seed (the arrays of jacobi-1d on dram:4k) needs 1.0 GiB but --max-mem allows 64.0 MiB; use a smaller preset or raise --max-mem"
        );
        // hugetlb pages are not MemAvailable's: the mapping checks the pool.
        assert!(check_memory(&opts, &specs[1..], Preset::Seed, "jacobi-1d", 1 << 30).is_ok());
        assert!(check_memory(&opts, &specs, Preset::Seed, "gemm", 32 << 20).is_ok());
    }

    #[test]
    fn kernels_and_variants_parse_by_name() {
        assert_eq!("gemm".parse::<KernelName>().unwrap().0.name, "gemm");
        let e = "jacobi-3d".parse::<KernelName>().unwrap_err();
        assert!(
            e.starts_with("unknown kernel `jacobi-3d`; use any of gemm, 3mm"),
            "{e}"
        );
        assert_eq!(variant(" opt"), Ok(Variant::Opt));
        let p: Params = crate::defaults();
        assert_eq!(p.variants, [Variant::Ref, Variant::Opt]);
        assert_eq!(p.preset, Preset::Medium);
    }
}
