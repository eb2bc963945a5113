//! `pmscope poly`: the PolyBench kernels of seed 000 Table 1 with their arrays on each
//! target, single-threaded and pinned. Per kernel x variant x target: the median time of the
//! repetitions, the page size the target verifiably achieved, dTLB and LLC read misses from
//! perf_event where the hardware has them ("unavailable" and why where it does not), and the
//! checksum of the result held against the other variant's and the other targets'. With
//! several targets the table takes Table 1's layout: time per target and variant, the
//! ref/opt ratio, and the 4K-to-2M speed-up per memory kind.

use crate::args::PolyArgs;
use crate::error::usage;
use crate::output::Sink;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::page_size_name;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_experiment::Env as Context;
use pmscope_experiment::progress::Progress;
use pmscope_experiment::render::fields::by_target;
use pmscope_experiment::render::table::Table;
use pmscope_mapping::{MapOptions, MemoryGuard, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::repeat_dropping_first;
use pmscope_sys::perf::{CacheMisses, MissCounts};
use pmscope_workload::polybench::{KERNELS, Kernel, Preset, Variant};
use std::time::Instant;

/// Relative difference of two checksums above which two runs did not compute the same
/// result. The variants add the same terms in other orders (interchange, tiling), which
/// moves a sum by about n * 2^-53 of its magnitude (n <= 10^4 here), many orders below this;
/// a wrong index or a missing term moves it by far more.
const CHECKSUM_TOLERANCE: f64 = 1e-9;

/// What `poly` runs, validated before anything is mapped.
struct Plan {
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

fn plan(ctx: &Context, a: &PolyArgs) -> Result<Plan> {
    let preset: Preset = a.preset.parse().map_err(usage)?;
    let kernels = parse_kernels(a.kernels.as_deref())?;
    let mut variants: Vec<Variant> = Vec::new();
    for v in a.variants.split(',').map(str::trim) {
        let v: Variant = v.parse().map_err(|e| usage(format!("--variants: {e}")))?;
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let (largest, bytes) = kernels
        .iter()
        .map(|k| (k.name, k.layout(preset).bytes() as u64))
        .max_by_key(|(_, b)| *b)
        .expect("at least one kernel");
    check_memory(&opts.guard, &specs, preset, largest, bytes)?;
    let cpu = match a.cpu {
        Some(c) => c,
        None => *pmscope_sys::affinity::allowed_cpus()?
            .first()
            .ok_or_else(|| anyhow::anyhow!("this process may run on no CPU"))?,
    };
    Ok(Plan {
        specs,
        opts,
        preset,
        kernels,
        variants,
        reps: a.repetitions.0,
        cpu,
        bytes,
    })
}

/// `--kernels`: names of [`KERNELS`], in the order given (default: all, in Table 1's order).
fn parse_kernels(list: Option<&str>) -> Result<Vec<&'static Kernel>> {
    let Some(list) = list else {
        return Ok(KERNELS.iter().collect());
    };
    let mut out: Vec<&'static Kernel> = Vec::new();
    for name in list.split(',').map(str::trim) {
        let k = pmscope_workload::polybench::find(name).ok_or_else(|| {
            usage(format!(
                "--kernels: unknown kernel `{name}`; use any of {}",
                KERNELS
                    .iter()
                    .map(|k| k.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        if !out.iter().any(|o| o.name == k.name) {
            out.push(k);
        }
    }
    Ok(out)
}

/// Refuses a preset whose largest kernel does not fit in the memory `--max-mem` allows, on
/// each target whose memory is ordinary RAM (dram and shm without hugetlb pages; hugetlb
/// pools, files and devices are checked by the mapping against their own capacity), with
/// the figures, before anything is mapped.
fn check_memory(
    guard: &MemoryGuard,
    specs: &[TargetSpec],
    preset: Preset,
    largest: &str,
    bytes: u64,
) -> Result<()> {
    for spec in specs.iter().filter(|s| in_ordinary_ram(s)) {
        guard
            .check(
                bytes,
                &format!("--preset {preset} (the arrays of {largest} on {spec})"),
            )
            .map_err(|e| usage(e.to_string().replace("a smaller size", "a smaller preset")))?;
    }
    Ok(())
}

/// Whether the target's memory comes out of MemAvailable (what the guard knows).
fn in_ordinary_ram(spec: &TargetSpec) -> bool {
    let canonical = spec.to_string();
    let argument = canonical.split(',').next().unwrap_or("");
    matches!(spec.kind_name(), "dram" | "shm")
        && !argument.ends_with(":2m")
        && !argument.ends_with(":1g")
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &PolyArgs) -> Result<()> {
    let plan = plan(ctx, a)?;
    measure(ctx, sink, &plan)?;
    if sink.human() {
        print!("{}", render(sink.records()));
    }
    Ok(())
}

/// One kernel in one variant, its repetitions done.
struct Outcome {
    seconds: Vec<f64>,
    checksum: f64,
    /// Per repetition, or why perf_event gave no counts.
    misses: Result<Vec<MissCounts>, String>,
}

/// Runs the repetitions on the calling (pinned) thread: prepare the arrays (not timed),
/// then time the kernel with the counters around it. The first repetition is dropped.
fn run_kernel(k: &Kernel, p: Preset, v: Variant, reps: usize, buf: &mut [f64]) -> Result<Outcome> {
    let counters = CacheMisses::open();
    let runs = repeat_dropping_first(reps, |_| {
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
    })?;
    let misses = match counters {
        Ok(_) => Ok(runs.iter().filter_map(|(_, c)| *c).collect()),
        Err(why) => Err(why),
    };
    Ok(Outcome {
        seconds: runs.iter().map(|(s, _)| *s).collect(),
        checksum: k.checksum(p, buf),
        misses,
    })
}

/// The null executor's outcome: the arrays prepared (so the target is written), the kernel
/// not run, synthetic times that differ by kernel and variant.
fn synthetic(k: &Kernel, p: Preset, v: Variant, reps: usize, buf: &mut [f64]) -> Outcome {
    k.prepare(p, buf);
    let centre = 0.01 * (1 + k.name.len()) as f64 * if v == Variant::Ref { 2.0 } else { 1.0 };
    Outcome {
        seconds: Executor::synthetic(reps, centre),
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

fn measure(ctx: &mut Context, sink: &mut Sink, p: &Plan) -> Result<()> {
    let points = p.kernels.len() * p.variants.len() * p.specs.len();
    let progress = Progress::new(points as u64, "poly", sink.human());
    let mut seen: Vec<Seen> = Vec::new();
    let mut h = ctx.start(sink, &[p.cpu], Some(p.bytes), false)?;
    h.per_target(&p.specs, p.bytes, &p.opts, None, |run, m| {
        let spec = run.target().spec.clone();
        let executor = run.executor();
        let all: &mut [f64] = m.slice_mut::<f64>()?;
        for &k in &p.kernels {
            let layout = k.layout(p.preset);
            for &v in &p.variants {
                run.check_interrupt()?;
                let buf = &mut all[..layout.total()];
                let out = run.on_cpu(p.cpu, buf, |buf| match executor {
                    Executor::Real => run_kernel(k, p.preset, v, p.reps, buf),
                    Executor::Null => Ok(synthetic(k, p.preset, v, p.reps, buf)),
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
                        .param(p::PERF_COUNTERS, "available")
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
                r.metric = Some("time_s".into());
                r.summary = Some(Summary::of(&out.seconds).expect("finite times"));
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

/// The median time of a record, in seconds.
fn time(r: &Record) -> Option<f64> {
    r.summary.as_ref().map(|s| s.p50)
}

/// The verified page size of a record's target, if clear.
fn page_size(r: &Record) -> Option<u64> {
    r.target.as_ref().and_then(|t| t.achieved.page_size)
}

/// What a target is apart from its page policy: `dram` (with its node) for dram and shm
/// targets, the whole spec for the others (a file's page size is its file system's).
fn memory_kind(spec: &str) -> String {
    let (head, options) = spec.split_once(',').map_or((spec, ""), |(h, o)| (h, o));
    let kind = head.split(':').next().unwrap_or(head);
    match kind {
        "dram" | "shm" if options.is_empty() => kind.to_string(),
        "dram" | "shm" => format!("{kind},{options}"),
        _ => spec.to_string(),
    }
}

fn seconds(t: Option<f64>) -> String {
    match t {
        Some(t) if t >= 10.0 => format!("{t:.1}"),
        Some(t) if t >= 0.01 => format!("{t:.3}"),
        Some(t) => format!("{t:.2e}"),
        None => "-".into(),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn times(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.2}"))
}

/// The human output, from the `poly` records alone: with one target a row per kernel and
/// variant; with several, Table 1's layout. Then the verified pages, the counters, where
/// 2M pages helped most, and the checksum verdict.
fn render(records: &[Record]) -> String {
    let targets = by_target(records, "poly");
    let Some(first) = targets.first().and_then(|(_, rs)| rs.first()) else {
        return String::new();
    };
    let find = |spec: &str, kernel: &str, variant: &str| {
        records.iter().find(|r| {
            r.experiment == "poly"
                && r.spec().unwrap_or_default() == spec
                && r.text(p::KERNEL).unwrap_or_default() == kernel
                && r.text(p::VARIANT).unwrap_or_default() == variant
        })
    };
    let mut kernels: Vec<(&str, u64)> = Vec::new();
    let mut variants: Vec<&str> = Vec::new();
    for r in records.iter().filter(|r| r.experiment == "poly") {
        if !kernels
            .iter()
            .any(|(k, _)| *k == r.text(p::KERNEL).unwrap_or_default())
        {
            kernels.push((
                r.text(p::KERNEL).unwrap_or_default(),
                r.count(p::DATA_BYTES).unwrap_or_default(),
            ));
        }
        if !variants.contains(&r.text(p::VARIANT).unwrap_or_default()) {
            variants.push(r.text(p::VARIANT).unwrap_or_default());
        }
    }
    let n = first.summary.as_ref().map_or(0, |s| s.n);
    let cpu = first.threads.first().map_or(0, |t| t.cpu_requested);
    let mut out = format!(
        "PolyBench kernels (seed 000 Table 1), preset {}, single thread on CPU {cpu}: seconds, median of {n} run(s) (one more ran first and was dropped)\n",
        first.text(p::PRESET).unwrap_or_default(),
    );
    let mib = |b: u64| format!("{:.1}", b as f64 / f64::from(1 << 20));
    if targets.len() == 1 {
        let mut t = Table::new(&[
            "kernel",
            "MiB",
            "variant",
            "seconds",
            "cv %",
            "pages",
            "dTLB misses",
            "LLC misses",
        ]);
        for (k, bytes) in &kernels {
            for v in &variants {
                let Some(r) = find(targets[0].0, k, v) else {
                    continue;
                };
                let counters = |key: pmscope_core::vocab::ValueKey| {
                    if r.text(p::PERF_COUNTERS).unwrap_or_default() == "available" {
                        format!("{:.3e}", r.val(key).unwrap_or_default())
                    } else {
                        "unavailable".into()
                    }
                };
                t.row(vec![
                    k.to_string(),
                    mib(*bytes),
                    v.to_string(),
                    seconds(time(r)),
                    format!("{:.1}", 100.0 * r.summary.as_ref().map_or(0.0, |s| s.cv())),
                    page_size(r).map_or("unclear".into(), page_size_name),
                    counters(v::DTLB_LOAD_MISSES),
                    counters(v::LLC_LOAD_MISSES),
                ]);
            }
        }
        out += &format!("{}\n", t.render());
    } else {
        out += &table1(records, &targets, &kernels, &variants);
    }
    out += &spread_note(records);
    out += "pages verified:\n";
    for (spec, rs) in &targets {
        if let Some(t) = rs[0].target.as_ref() {
            out += &format!("  {spec}: {}\n", t.achieved.describe());
        }
    }
    out += &counters_note(records, &targets, &kernels, &variants);
    let mismatches: Vec<&str> = records
        .iter()
        .filter(|r| r.experiment == "poly")
        .flat_map(|r| &r.warnings)
        .filter(|w| w.code == "checksum-mismatch")
        .map(|w| w.message.as_str())
        .collect();
    if mismatches.is_empty() {
        out += "checksums: every run of a kernel computed the same result (ref, opt and every target)\n";
    } else {
        out += &format!(
            "checksums DIFFER in {} run(s), do not use their times:\n",
            mismatches.len()
        );
        for m in mismatches {
            out += &format!("  {m}\n");
        }
    }
    out
}

/// How much the repetitions varied: the median and the largest coefficient of variation,
/// so a reader can tell a real difference between two cells from noise.
fn spread_note(records: &[Record]) -> String {
    let mut cvs: Vec<(f64, &Record)> = records
        .iter()
        .filter(|r| r.experiment == "poly")
        .filter_map(|r| r.summary.as_ref().filter(|s| s.n > 1).map(|s| (s.cv(), r)))
        .collect();
    if cvs.is_empty() {
        return String::new();
    }
    cvs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (worst, r) = cvs[cvs.len() - 1];
    format!(
        "spread of the repetitions (cv): median {:.1}%, largest {:.1}% ({} {} on {})\n",
        100.0 * cvs[cvs.len() / 2].0,
        100.0 * worst,
        r.text(p::KERNEL).unwrap_or_default(),
        r.text(p::VARIANT).unwrap_or_default(),
        r.spec().unwrap_or_default()
    )
}

/// A 4K target and a 2M target of the same memory kind, by verified page size.
struct PagePair<'a> {
    kind: String,
    small: &'a str,
    large: &'a str,
}

/// The 4K/2M pairs of the run, and a note for each kind that was asked for both but did
/// not get both (a 2M request that came back 4K has no speed-up to show).
fn page_pairs<'a>(targets: &[(&'a str, Vec<&Record>)]) -> (Vec<PagePair<'a>>, Vec<String>) {
    let mut kinds: Vec<String> = Vec::new();
    for (spec, _) in targets {
        let k = memory_kind(spec);
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let (mut pairs, mut notes) = (Vec::new(), Vec::new());
    for kind in kinds {
        let of_kind: Vec<(&str, Option<u64>)> = targets
            .iter()
            .filter(|(s, _)| memory_kind(s) == kind)
            .map(|(s, rs)| (*s, page_size(rs[0])))
            .collect();
        let with = |size: u64| {
            of_kind
                .iter()
                .find(|(_, p)| *p == Some(size))
                .map(|(s, _)| *s)
        };
        match (with(4 << 10), with(2 << 20)) {
            (Some(small), Some(large)) => pairs.push(PagePair { kind, small, large }),
            _ if of_kind.len() > 1 => notes.push(format!(
                "no 4K-to-2M speed-up for {kind}: its targets verified {}",
                of_kind
                    .iter()
                    .map(|(s, p)| format!("{s} = {}", p.map_or("unclear".into(), page_size_name)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => {}
        }
    }
    (pairs, notes)
}

/// Table 1's layout: per target the time of each variant and the ref/opt ratio, then per
/// memory kind the 4K-to-2M speed-up of each variant; then the kernels 2M pages helped most.
fn table1(
    records: &[Record],
    targets: &[(&str, Vec<&Record>)],
    kernels: &[(&str, u64)],
    variants: &[&str],
) -> String {
    let find = |spec: &str, kernel: &str, variant: &str| {
        records
            .iter()
            .find(|r| {
                r.experiment == "poly"
                    && r.spec().unwrap_or_default() == spec
                    && r.text(p::KERNEL).unwrap_or_default() == kernel
                    && r.text(p::VARIANT).unwrap_or_default() == variant
            })
            .and_then(time)
    };
    let both = variants.contains(&"ref") && variants.contains(&"opt");
    let (pairs, notes) = page_pairs(targets);
    // MiB, as Table 1's "MB" are (gemm: 3 x 2000^2 doubles = 91.6).
    let mut header: Vec<String> = vec!["kernel".into(), "MiB".into()];
    for (spec, _) in targets {
        for v in variants {
            header.push(format!("{spec} {v}"));
        }
        if both {
            header.push("ref/opt".into());
        }
    }
    for p in &pairs {
        for v in variants {
            header.push(format!("{} 4K->2M {v}", p.kind));
        }
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header);
    // (speed-up, kernel, kind, variant) of every cell, for the closing note.
    let mut speedups: Vec<(f64, &str, &str, &str)> = Vec::new();
    for (k, bytes) in kernels {
        let mut row = vec![
            k.to_string(),
            format!("{:.1}", *bytes as f64 / f64::from(1 << 20)),
        ];
        for (spec, _) in targets {
            for v in variants {
                row.push(seconds(find(spec, k, v)));
            }
            if both {
                row.push(times(ratio(find(spec, k, "ref"), find(spec, k, "opt"))));
            }
        }
        for p in &pairs {
            for v in variants {
                let s = ratio(find(p.small, k, v), find(p.large, k, v));
                if let Some(s) = s {
                    speedups.push((s, k, &p.kind, v));
                }
                row.push(times(s));
            }
        }
        t.row(row);
    }
    let mut out = format!("{}\n", t.render());
    out += "ref/opt > 1: the locality-optimised variant is faster; 4K->2M = time on 4 KiB pages / time on 2 MiB pages (> 1: 2M pages help)\n";
    for n in notes {
        out += &format!("{n}\n");
    }
    speedups.sort_by(|a, b| b.0.total_cmp(&a.0));
    speedups.retain(|s| s.0 > 1.0);
    if speedups.is_empty() && !pairs.is_empty() {
        out += "2M pages made no kernel faster here\n";
    } else if !speedups.is_empty() {
        let mut named: Vec<String> = Vec::new();
        for (s, k, kind, v) in &speedups {
            if named.len() == 5 {
                break;
            }
            if !named.iter().any(|n| n.starts_with(&format!("{k} "))) {
                named.push(format!("{k} ({kind} {v} {s:.2}x)"));
            }
        }
        out += &format!("2M pages help most: {}\n", named.join(", "));
    }
    out
}

/// The dTLB and LLC misses: a table where perf_event counted them, else one line saying
/// they are unavailable and why (never a number).
fn counters_note(
    records: &[Record],
    targets: &[(&str, Vec<&Record>)],
    kernels: &[(&str, u64)],
    variants: &[&str],
) -> String {
    let poly: Vec<&Record> = records.iter().filter(|r| r.experiment == "poly").collect();
    let counted: Vec<&&Record> = poly
        .iter()
        .filter(|r| r.text(p::PERF_COUNTERS).unwrap_or_default() == "available")
        .collect();
    if counted.is_empty() {
        let why = poly
            .first()
            .map(|r| r.text(p::PERF_COUNTERS).unwrap_or_default())
            .unwrap_or("unavailable");
        return format!("dTLB and LLC misses: {why}\n");
    }
    if targets.len() == 1 {
        return String::new(); // in the table already
    }
    let mut header: Vec<String> = vec!["kernel".into(), "variant".into()];
    for (spec, _) in targets {
        header.push(format!("{spec} dTLB"));
        header.push(format!("{spec} LLC"));
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header);
    for (k, _) in kernels {
        for v in variants {
            let mut row = vec![k.to_string(), v.to_string()];
            for (spec, _) in targets {
                let r = poly.iter().find(|r| {
                    r.spec().unwrap_or_default() == *spec
                        && r.text(p::KERNEL).unwrap_or_default() == *k
                        && r.text(p::VARIANT).unwrap_or_default() == *v
                });
                for key in [v::DTLB_LOAD_MISSES, v::LLC_LOAD_MISSES] {
                    row.push(match r {
                        Some(r) if r.text(p::PERF_COUNTERS).unwrap_or_default() == "available" => {
                            format!("{:.3e}", r.val(key).unwrap_or_default())
                        }
                        Some(_) => "unavailable".into(),
                        None => "-".into(),
                    });
                }
            }
            t.row(row);
        }
    }
    format!(
        "dTLB and LLC read misses per run (median, perf_event):\n{}\n",
        t.render()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::record::SystemSummary;
    use pmscope_experiment::render::fields::on_target;

    fn record(spec: &str, kernel: &str, variant: &str, secs: f64, page: u64) -> Record {
        let mut r = on_target(
            Record::new("poly", vec![], SystemSummary::default())
                .param(p::KERNEL, kernel)
                .param(p::VARIANT, variant)
                .param(p::PRESET, "mini")
                .param(p::DATA_BYTES, 3_000_000u64)
                .param(p::PERF_COUNTERS, "unavailable: no PMU"),
            spec,
        );
        r.target.as_mut().unwrap().achieved.page_size = Some(page);
        r.metric = Some("time_s".into());
        r.summary = Summary::of(&[secs]);
        r
    }

    #[test]
    fn table1_has_ratios_and_speedups_per_memory_kind() {
        let mut rs = Vec::new();
        for (k, slow) in [("gemm", 1.0), ("jacobi-2d", 3.0)] {
            rs.push(record("dram:4k", k, "ref", 2.0 * slow, 4096));
            rs.push(record("dram:4k", k, "opt", 1.0 * slow, 4096));
            rs.push(record("dram:thp", k, "ref", 2.0, 2 << 20));
            rs.push(record("dram:thp", k, "opt", 1.0, 2 << 20));
        }
        let out = render(&rs);
        assert!(
            out.contains("dram:4k ref") && out.contains("dram:thp opt"),
            "{out}"
        );
        assert!(out.contains("dram 4K->2M ref"), "{out}");
        let jacobi: Vec<&str> = out
            .lines()
            .find(|l| l.starts_with("jacobi-2d"))
            .unwrap()
            .split_whitespace()
            .collect();
        // Per target ref, opt, ref/opt; then the 4K->2M speed-up of each variant.
        assert_eq!(
            jacobi,
            [
                "jacobi-2d",
                "2.9",
                "6.000",
                "3.000",
                "2.00",
                "2.000",
                "1.000",
                "2.00",
                "3.00",
                "3.00"
            ]
        );
        assert!(
            out.contains("2M pages help most: jacobi-2d (dram ref 3.00x)\n"),
            "{out}"
        );
        assert!(
            out.contains("dTLB and LLC misses: unavailable: no PMU"),
            "{out}"
        );
        assert!(
            !out.contains("spread of the repetitions"),
            "one sample has no spread"
        );
        assert!(
            out.contains("every run of a kernel computed the same result"),
            "{out}"
        );
    }

    #[test]
    fn a_2m_request_that_came_back_4k_has_no_speedup() {
        let rs = vec![
            record("dram:4k", "gemm", "ref", 1.0, 4096),
            record("dram:thp", "gemm", "ref", 1.0, 4096),
        ];
        let out = render(&rs);
        assert!(!out.contains("4K->2M ref"), "{out}");
        assert!(
            out.contains(
                "no 4K-to-2M speed-up for dram: its targets verified dram:4k = 4k, dram:thp = 4k"
            ),
            "{out}"
        );
    }

    #[test]
    fn memory_kinds() {
        assert_eq!(memory_kind("dram:4k"), "dram");
        assert_eq!(memory_kind("dram:2m,node=1"), "dram,node=1");
        assert_eq!(memory_kind("file:/mnt/pmem"), "file:/mnt/pmem");
    }

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

    #[test]
    fn the_memory_check_names_the_preset_and_the_figures() {
        let guard = MemoryGuard::with(1 << 30, Some(64 << 20));
        let specs: Vec<TargetSpec> = ["dram:4k", "dram:2m"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let e = check_memory(&guard, &specs, Preset::Seed, "jacobi-1d", 1 << 30).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--preset seed (the arrays of jacobi-1d on dram:4k) needs 1.0 GiB but --max-mem allows 64.0 MiB; use a smaller preset or raise --max-mem"
        );
        // hugetlb pages are not MemAvailable's: the mapping checks the pool.
        assert!(check_memory(&guard, &specs[1..], Preset::Seed, "jacobi-1d", 1 << 30).is_ok());
        assert!(check_memory(&guard, &specs, Preset::Seed, "gemm", 32 << 20).is_ok());
    }
}
