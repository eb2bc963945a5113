//! `pmscope bandwidth`: GB/s (10^9 B/s) of read, write, ntstore, store+clwb and copy
//! streams, sequential or over random blocks of the access size, by thread count and access
//! size, each thread on its own part of the target (or all on one shared region), and mixed
//! reads and writes (seed 004 Figures 9-13): a split of k readers and n-k writers, or every
//! thread interleaving reads and writes at a ratio such as 2:1.

use crate::args::BandwidthArgs;
use crate::context::{Context, parse_patterns};
use crate::error::usage;
use crate::measure::{Role, stream_for};
use crate::output::Sink;
use crate::output::progress::Progress;
use crate::output::table::Table;
use crate::values::check_threads;
use anyhow::Result;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_loops::Region;
use pmscope_loops::stream::{STREAM_OPS, StreamOp, StreamView, Streamer, Traffic};
use pmscope_runner::harness::repeat_dropping_first;
use std::time::Duration;

/// How reads and writes are mixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    /// No mix: every thread runs the op.
    None,
    /// k readers and n-k writers, for every k from 0 to n (seed 004 Figure 13).
    Split,
    /// Every thread interleaves `reads` reads and `writes` writes (seed 004 Figure 12).
    Ratio {
        /// Reads per round.
        reads: u32,
        /// Writes per round.
        writes: u32,
    },
}

/// Parses `--mix`: `split` or `R:W`.
pub fn parse_mix(s: &str) -> Result<Mix, String> {
    if s == "split" {
        return Ok(Mix::Split);
    }
    let bad = || {
        format!("'{s}' is not a mix: use split (k readers, n-k writers) or a ratio R:W such as 2:1")
    };
    let (r, w) = s.split_once(':').ok_or_else(bad)?;
    let reads: u32 = r.parse().map_err(|_| bad())?;
    let writes: u32 = w.parse().map_err(|_| bad())?;
    if reads == 0 && writes == 0 {
        return Err(bad());
    }
    Ok(Mix::Ratio { reads, writes })
}

/// What each thread does at each point of a thread count, with the point's label: the
/// split gives k readers then n-k writers for every k.
pub fn thread_roles(
    n: usize,
    mix: Mix,
    op: Streamer,
    read: Streamer,
    write: Streamer,
) -> Vec<(String, Vec<Role>)> {
    match mix {
        Mix::None => vec![(String::new(), vec![Role::Stream(op); n])],
        Mix::Split => (0..=n)
            .map(|k| {
                let roles = (0..n)
                    .map(|i| Role::Stream(if i < k { read } else { write }))
                    .collect();
                (format!("{k}R+{}W", n - k), roles)
            })
            .collect(),
        Mix::Ratio { reads, writes } => vec![(
            format!("{reads}:{writes} interleaved"),
            vec![
                Role::Interleave {
                    read,
                    write,
                    reads,
                    writes
                };
                n
            ],
        )],
    }
}

/// One measured point, for the table and the ratios.
struct Point {
    target: String,
    op: StreamOp,
    random: bool,
    size: usize,
    threads: usize,
    label: String,
    total: Summary,
    read: f64,
    written: f64,
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &BandwidthArgs) -> Result<()> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let mix = match &a.mix {
        None => Mix::None,
        Some(m) => parse_mix(m).map_err(usage)?,
    };
    let ops: Vec<StreamOp> = match (&a.ops, mix) {
        (Some(list), _) => list
            .split(',')
            .map(|s| {
                StreamOp::parse(s.trim()).ok_or_else(|| {
                    usage(format!(
                        "'{s}' is not an op: use {}",
                        STREAM_OPS
                            .iter()
                            .map(|o| o.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?,
        (None, Mix::None) => STREAM_OPS.to_vec(),
        (None, _) => vec![StreamOp::Write],
    };
    let patterns = parse_patterns(&a.pattern)?;
    let default_sizes = if a.full {
        "64..128KiB"
    } else {
        "64,256,4KiB,64KiB"
    };
    let sizes: Vec<usize> = parse_axis(a.sizes.as_deref().unwrap_or(default_sizes), AxisKind::Size)
        .map_err(|e| usage(e.to_string()))?
        .into_iter()
        .map(|s| s as usize)
        .collect();
    if let Some(bad) = sizes.iter().find(|s| **s == 0 || !s.is_multiple_of(64)) {
        return Err(usage(format!(
            "access size {bad} is not a positive multiple of 64 bytes"
        )));
    }
    let allowed = pmscope_sys::affinity::allowed_cpus()?;
    let cpus: Vec<usize> = match &a.cpus {
        Some(c) => c.0.clone(),
        None => allowed.clone(),
    };
    pmscope_runner::pin::check_cpus(&cpus).map_err(|e| usage(format!("--cpus: {e}")))?;
    let threads: Vec<usize> = match &a.threads {
        Some(axis) => parse_axis(axis, AxisKind::Count)
            .map_err(|e| usage(e.to_string()))?
            .into_iter()
            .map(|t| t as usize)
            .collect(),
        None => (1..=cpus.len()).collect(),
    };
    for &t in &threads {
        check_threads(t, &cpus).map_err(usage)?;
    }
    let width = match a.width {
        Some(w) => w,
        None if ctx.features.avx512f => 64,
        None => 32,
    };
    let per_thread = a.region.0;
    let max_threads = *threads.iter().max().unwrap_or(&1);
    let map_bytes = if a.shared {
        per_thread
    } else {
        per_thread * max_threads as u64
    };
    let largest = *sizes.iter().max().unwrap_or(&64) as u64;
    let least = (2 * largest).max(8192);
    if per_thread < least {
        return Err(usage(format!(
            "--region {} per thread is too small for {}-byte accesses: give at least {} (two accesses and two pages), or no true figure can come of it",
            Bytes(per_thread),
            largest,
            Bytes(least)
        )));
    }
    // --full changes only the defaults: an explicit option always wins.
    let duration =
        Duration::from_secs_f64(a.duration.map_or(if a.full { 1.0 } else { 0.15 }, |d| d.0));
    let reps = a.reps.map_or(if a.full { 5 } else { 3 }, |r| r.0);
    let points = ops.len() * patterns.len() * sizes.len() * threads.len();
    let progress = Progress::new((points * specs.len()) as u64, "bandwidth", sink.human());
    let json = !sink.human();
    let mut results: Vec<Point> = Vec::new();
    // Each thread's part is first touched by the CPU that streams over it, as likwid and MLC
    // place it (with --shared there is no own part: the calling thread touches it all).
    let mut opts = opts;
    if !a.shared {
        opts.first_touch_cpus = cpus[..max_threads].to_vec();
    }
    let features = ctx.features;
    // The timer is calibrated for the records; streams are timed by their own clock.
    let mut h = ctx.start(sink, &cpus, Some(per_thread), false)?;
    h.per_target(&specs, map_bytes, &opts, None, |run, m| {
        let executor = run.executor();
        let mut region = Region::from_slice(m.bytes_mut());
        let views = StreamView::of(&mut region, max_threads, a.shared);
        for &op in &ops {
            for &random in &patterns {
                for &size in &sizes {
                    let mk = |o: StreamOp| Streamer::new(o, width, size, &features);
                    let (s_op, s_read, s_write) = match (
                        mk(op),
                        mk(StreamOp::Read),
                        mk(if op == StreamOp::Read {
                            StreamOp::Write
                        } else {
                            op
                        }),
                    ) {
                        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
                        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Err(e.into()),
                    };
                    for &n in &threads {
                        for (label, roles) in thread_roles(n, mix, s_op, s_read, s_write) {
                            let reps_out = repeat_dropping_first(reps, |rep| {
                                let out = run.on_cpus(&cpus[..n], |w| {
                                    executor.run(
                                        || {
                                            stream_for(
                                                roles[w],
                                                views[w],
                                                random,
                                                duration,
                                                a.seed ^ (w as u64) << 8 ^ rep as u64,
                                            )
                                        },
                                        || synthetic_traffic(roles[w], views[w].len()),
                                    )
                                })?;
                                let secs = out.iter().map(|(_, s)| *s).fold(0.0, f64::max);
                                let r: u64 = out.iter().map(|(t, _)| t.read).sum();
                                let wr: u64 = out.iter().map(|(t, _)| t.written).sum();
                                Ok((r, wr, secs))
                            })?;
                            let gb = |f: &dyn Fn(&(u64, u64, f64)) -> u64| -> Summary {
                                let v: Vec<f64> =
                                    reps_out.iter().map(|x| f(x) as f64 / x.2 / 1e9).collect();
                                Summary::of(&v).expect("finite")
                            };
                            let s = gb(&|x| x.0 + x.1);
                            let rs = gb(&|x| x.0);
                            let ws = gb(&|x| x.1);
                            let mut rec = run
                                .record("bandwidth")
                                .param("op", op.name())
                                .param("pattern", Pattern::from_random(random).name())
                                .param("access_bytes", size)
                                .param("threads", n)
                                .param("shared", a.shared)
                                .param("vector_bytes", width)
                                .param("region_per_thread_bytes", per_thread)
                                .param("duration_s", duration.as_secs_f64())
                                .param("mix", label.as_str())
                                .value("read_gb_s", rs.p50)
                                .value("write_gb_s", ws.p50);
                            rec.metric = Some("bandwidth_gb_s".into());
                            rec.summary = Some(s.clone());
                            run.emit(&rec)?;
                            results.push(Point {
                                target: run.target().spec.clone(),
                                op,
                                random,
                                size,
                                threads: n,
                                label,
                                total: s,
                                read: rs.p50,
                                written: ws.p50,
                            });
                        }
                        progress.inc();
                    }
                }
            }
        }
        Ok(())
    })?;
    h.finish()?;
    progress.finish();
    if !json {
        println!(
            "bandwidth in GB/s (10^9 B/s), {width}-byte vectors, {} per thread{}, median of {reps} x {:.2} s",
            Bytes(per_thread),
            if a.shared { " (one shared region)" } else { "" },
            duration.as_secs_f64()
        );
        print_points(&results);
    }
    Ok(())
}

/// What the null executor says one worker streamed: one pass of its role over its view in
/// a millisecond.
fn synthetic_traffic(role: Role, len: usize) -> (Traffic, f64) {
    let len = len as u64;
    let t = match role {
        Role::Stream(s) => match s.op() {
            StreamOp::Read => Traffic {
                read: len,
                written: 0,
            },
            StreamOp::Copy => Traffic {
                read: len / 2,
                written: len / 2,
            },
            _ => Traffic {
                read: 0,
                written: len,
            },
        },
        Role::Interleave { reads, writes, .. } => Traffic {
            read: len * reads as u64 / (reads + writes) as u64,
            written: len * writes as u64 / (reads + writes) as u64,
        },
    };
    (t, 0.001)
}

fn print_points(results: &[Point]) {
    let mut t = Table::new(&[
        "target", "op", "pattern", "access", "threads", "mix", "GB/s", "cv %", "read", "write",
    ]);
    for p in results {
        t.row(vec![
            p.target.clone(),
            p.op.name().into(),
            if p.random { "rand" } else { "seq" }.into(),
            Bytes(p.size as u64).to_string(),
            p.threads.to_string(),
            if p.label.is_empty() {
                "-".into()
            } else {
                p.label.clone()
            },
            format!("{:.2}", p.total.p50),
            format!("{:.1}", 100.0 * p.total.cv()),
            format!("{:.2}", p.read),
            format!("{:.2}", p.written),
        ]);
    }
    println!("{}", t.render());
    // Random against sequential reads at the same thread count (seed 004 Figure 11).
    for p in results
        .iter()
        .filter(|p| p.op == StreamOp::Read && p.random && p.label.is_empty())
    {
        let seq = results.iter().filter(|q| {
            q.target == p.target
                && q.op == StreamOp::Read
                && !q.random
                && q.threads == p.threads
                && q.label.is_empty()
        });
        let best_seq = seq.map(|q| q.total.p50).fold(0.0, f64::max);
        if best_seq > 0.0 {
            println!(
                "{}: random {} reads, {} thread(s): {:.2} GB/s = {:.2}x sequential reads ({:.2} GB/s)",
                p.target,
                Bytes(p.size as u64),
                p.threads,
                p.total.p50,
                p.total.p50 / best_seq,
                best_seq
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_sys::cpu::CpuFeatures;

    fn streamers() -> (Streamer, Streamer, Streamer) {
        let f = CpuFeatures::detect();
        let w = if f.avx512f { 64 } else { 32 };
        let mk = |o| Streamer::new(o, w, 4096, &f).unwrap();
        (
            mk(StreamOp::NtStore),
            mk(StreamOp::Read),
            mk(StreamOp::NtStore),
        )
    }

    #[test]
    fn mix_parsing() {
        assert_eq!(parse_mix("split"), Ok(Mix::Split));
        assert_eq!(
            parse_mix("2:1"),
            Ok(Mix::Ratio {
                reads: 2,
                writes: 1
            })
        );
        assert!(parse_mix("0:0").is_err());
        assert!(parse_mix("2-1").is_err());
        assert!(parse_mix("a:b").is_err());
    }

    #[test]
    fn split_gives_every_reader_count() {
        let (op, r, w) = streamers();
        let configs = thread_roles(4, Mix::Split, op, r, w);
        assert_eq!(configs.len(), 5);
        for (k, (label, roles)) in configs.iter().enumerate() {
            assert_eq!(roles.len(), 4);
            let readers = roles.iter().filter(|x| **x == Role::Stream(r)).count();
            assert_eq!(readers, k);
            assert_eq!(
                roles.iter().filter(|x| **x == Role::Stream(w)).count(),
                4 - k
            );
            assert_eq!(label, &format!("{k}R+{}W", 4 - k));
        }
        let plain = thread_roles(2, Mix::None, op, r, w);
        assert_eq!(plain, vec![(String::new(), vec![Role::Stream(op); 2])]);
        let ratio = thread_roles(
            2,
            Mix::Ratio {
                reads: 2,
                writes: 1,
            },
            op,
            r,
            w,
        );
        assert_eq!(ratio.len(), 1);
        assert_eq!(ratio[0].0, "2:1 interleaved");
        assert!(matches!(
            ratio[0].1[0],
            Role::Interleave {
                reads: 2,
                writes: 1,
                ..
            }
        ));
    }
}
