//! One loaded-latency curve on one target: a pinned team in which worker 0 measures the
//! probe at every point of the delay schedule while the others generate that point's
//! traffic between two barriers.

use super::Plan;
use super::probe::{self, Point};
use crate::measure::delayed_traffic;
use crate::progress::Progress;
use anyhow::Result;
use pmscope_loops::Region;
use pmscope_loops::stream::StreamView;
use pmscope_mapping::Mapping;
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::{BlockIndex, TargetRun};
use pmscope_runner::interrupt;
use pmscope_runner::repeat::{SystemWatch, Workers};
use pmscope_runner::timer::Timer;
use pmscope_sys::cpu::CpuFeatures;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The delay schedule: idle (no traffic) first, then the delays from the largest (lightest
/// load) to the smallest (heaviest), each in TSC ticks.
pub fn delay_schedule(delays_ns: &[u64], hz: f64) -> Vec<(Option<u64>, u64)> {
    let mut d: Vec<u64> = delays_ns.to_vec();
    d.sort_unstable_by(|a, b| b.cmp(a));
    d.dedup();
    std::iter::once((None, 0))
        .chain(
            d.into_iter()
                .map(|ns| (Some(ns), (ns as f64 * hz / 1e9).round() as u64)),
        )
        .collect()
}

/// What each worker of the team holds: the probe's region, or a traffic view.
enum Part<'a, 'm> {
    Probe(Region<'m>),
    Traffic(StreamView<'a>),
}

/// What the workers of one curve share.
struct Team<'s> {
    plan: &'s Plan,
    schedule: &'s [(Option<u64>, u64)],
    executor: Executor,
    /// The barrier every worker passes twice per point: the point begins, the point ends.
    barrier: Barrier,
    /// Set by the probe when a point's measurement is done: the traffic stops.
    stop: AtomicBool,
    /// Set by the probe when it cannot measure: the traffic idles through the rest.
    failed: AtomicBool,
    /// Watches for the probe's points, fresh clones per point: the idle point judged on the
    /// probe's CPU alone, a loaded point on every worker's (the traffic is as busy).
    watches: Watches,
    /// The precision asked of each point's median (`--precision`).
    target: Option<f64>,
    /// The block measured: its share of the samples, its own orders.
    block: BlockIndex,
}

/// The probe's watch at the idle point and at a loaded one.
struct Watches {
    idle: SystemWatch,
    loaded: SystemWatch,
}

impl Team<'_> {
    /// Passes both barriers of `points` points without doing anything.
    fn pass(&self, points: usize) {
        for _ in 0..points {
            self.barrier.wait();
            self.barrier.wait();
        }
    }
}

/// One curve on one target. Worker 0 passes every barrier even when it fails, so no worker
/// waits for ever.
pub fn measure_curve(
    run: &mut TargetRun<'_, '_>,
    m: &mut Mapping,
    p: &Plan,
    schedule: &[(Option<u64>, u64)],
    timer: &Timer,
    features: &CpuFeatures,
    progress: &Progress,
) -> Result<Vec<Point>> {
    let (probe_region, mut traffic_region) =
        Region::from_slice(m.bytes_mut()).split_at(p.probe_bytes as usize);
    let mut parts: Vec<Part> = std::iter::once(Part::Probe(probe_region))
        .chain(
            StreamView::of(&mut traffic_region, p.traffic_threads(), false)
                .into_iter()
                .map(Part::Traffic),
        )
        .collect();
    let team = Team {
        plan: p,
        schedule,
        executor: run.executor(),
        barrier: Barrier::new(p.cpus.len()),
        stop: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        watches: Watches {
            idle: run.watch(&p.cpus[..1], Workers::Busy(1)),
            loaded: run.watch(&p.cpus, Workers::Busy(p.cpus.len())),
        },
        target: run.precision_target(),
        block: run.block(),
    };
    let out = run.on_each(&p.cpus, &mut parts, |w, part| match part {
        Part::Traffic(view) => Done::Traffic(traffic_worker(&team, w, *view)),
        Part::Probe(region) => Done::Probe(probe_worker(&team, region, timer, features, progress)),
    })?;
    let mut points = Vec::new();
    let mut traffic = Vec::new();
    for done in out {
        match done {
            Done::Probe(measured) => points = measured?,
            Done::Traffic(gb_s) => traffic.push(gb_s),
        }
    }
    for (i, point) in points.iter_mut().enumerate() {
        point.traffic_gb_s = traffic.iter().map(|t| t[i]).sum();
    }
    Ok(points)
}

/// What a worker of the team returns.
enum Done {
    /// The probe's points.
    Probe(Result<Vec<Point>>),
    /// A traffic worker's GB/s at each point.
    Traffic(Vec<f64>),
}

/// A traffic worker: the traffic of each point of the schedule (none at the idle point or
/// once the probe failed), its GB/s per point.
fn traffic_worker(team: &Team<'_>, w: usize, view: StreamView<'_>) -> Vec<f64> {
    let p = team.plan;
    let mut gb_s = Vec::new();
    for &(delay_ns, ticks) in team.schedule {
        team.barrier.wait();
        let (bytes, secs) = if delay_ns.is_some() && !team.failed.load(Ordering::SeqCst) {
            team.executor.run(
                || {
                    let seed = team.block.seed(p.seed) ^ (w as u64) << 8;
                    let (t, secs) = delayed_traffic(p.traffic, view, ticks, seed, &team.stop);
                    (t.total(), secs)
                },
                || (view.len() as u64, 0.001),
            )
        } else {
            (0, 0.0)
        };
        gb_s.push(if secs > 0.0 {
            bytes as f64 / secs / 1e9
        } else {
            0.0
        });
        team.barrier.wait();
    }
    gb_s
}

/// The probe worker: every point of the schedule in turn, between the barriers that start
/// and stop the traffic.
fn probe_worker(
    team: &Team<'_>,
    region: &mut Region<'_>,
    timer: &Timer,
    features: &CpuFeatures,
    progress: &Progress,
) -> Result<Vec<Point>> {
    let executor = team.executor;
    let how = (executor, team.target, team.block);
    let mut measure = match probe::measurer(team.plan, region, how, timer, features) {
        Ok(m) => m,
        Err(e) => {
            team.failed.store(true, Ordering::SeqCst);
            team.pass(team.schedule.len());
            return Err(e);
        }
    };
    let mut points = Vec::new();
    for (i, &(delay_ns, _)) in team.schedule.iter().enumerate() {
        if interrupt::check().is_err() {
            // Release the traffic threads through the remaining points unmeasured.
            team.failed.store(true, Ordering::SeqCst);
            team.pass(team.schedule.len() - i);
            break;
        }
        team.stop.store(false, Ordering::SeqCst);
        team.barrier.wait();
        // Let the traffic reach steady state before measuring.
        if executor == Executor::Real {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut watch = match delay_ns {
            None => team.watches.idle.clone(),
            Some(_) => team.watches.loaded.clone(),
        };
        let point = measure(&mut watch);
        progress.inc();
        team.stop.store(true, Ordering::SeqCst);
        team.barrier.wait();
        match point {
            Ok(mut point) => {
                point.delay_ns = delay_ns;
                points.push(point);
            }
            Err(e) => {
                // Release the traffic threads through the remaining points unmeasured; an
                // interrupt keeps the points so far, as between points.
                team.failed.store(true, Ordering::SeqCst);
                team.pass(team.schedule.len() - i - 1);
                if e.downcast_ref::<interrupt::Interrupted>().is_some() {
                    break;
                }
                return Err(e);
            }
        }
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_runs_from_idle_to_heaviest() {
        let s = delay_schedule(&[0, 1000, 100, 100], 2e9);
        assert_eq!(
            s,
            vec![
                (None, 0),
                (Some(1000), 2000),
                (Some(100), 200),
                (Some(0), 0)
            ]
        );
    }
}
