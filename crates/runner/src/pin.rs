//! Worker threads pinned to CPUs, released together by a start gate, each recording the
//! CPU it actually ran on.

use pmscope_core::record::ThreadPlacement;
use std::sync::Barrier;

/// Why workers could not be started as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinError(pub String);

impl std::fmt::Display for PinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PinError {}

/// Checks a `--cpus` list against the CPUs this process may use.
pub fn check_cpus(cpus: &[usize]) -> Result<(), PinError> {
    let allowed = pmscope_sys::affinity::allowed_cpus().map_err(|e| PinError(e.to_string()))?;
    if cpus.is_empty() {
        return Err(PinError("the CPU list is empty".into()));
    }
    if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
        return Err(PinError(format!(
            "CPU {c} is not available to pmscope (allowed: {})",
            pmscope_core::cpulist::format_list(&allowed)
        )));
    }
    Ok(())
}

/// Runs `work(worker_index)` on `cpus.len()` threads, worker `i` pinned to `cpus[i]`. All
/// workers wait at a gate until every one is pinned and ready, so they start together.
/// Returns each worker's result with its placement, in worker order.
pub fn run_pinned<R, F>(cpus: &[usize], work: F) -> Result<Vec<(R, ThreadPlacement)>, PinError>
where
    R: Send,
    F: Fn(usize) -> R + Sync,
{
    run_pinned_each(cpus, &mut vec![(); cpus.len()], |i, _| work(i))
}

/// Runs `work(i, &mut items[i])` on one thread per CPU, worker `i` pinned to `cpus[i]` and
/// the only one holding `items[i]` (its own part of a mapping, say), released together.
pub fn run_pinned_each<T, R, F>(
    cpus: &[usize],
    items: &mut [T],
    work: F,
) -> Result<Vec<(R, ThreadPlacement)>, PinError>
where
    T: Send,
    R: Send,
    F: Fn(usize, &mut T) -> R + Sync,
{
    check_cpus(cpus)?;
    if items.len() < cpus.len() {
        return Err(PinError(format!(
            "{} workers asked for but only {} parts to hand them",
            cpus.len(),
            items.len()
        )));
    }
    let gate = Barrier::new(cpus.len());
    let (work, gate) = (&work, &gate);
    std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .zip(items.iter_mut())
            .enumerate()
            .map(|(i, (&cpu, item))| {
                s.spawn(move || {
                    let pinned = pmscope_sys::affinity::pin_current_thread(cpu);
                    gate.wait();
                    pinned.map_err(|e| {
                        PinError(format!("cannot pin worker {i} to CPU {cpu}: {e}"))
                    })?;
                    let r = work(i, item);
                    let observed = pmscope_sys::affinity::current_cpu().unwrap_or(usize::MAX);
                    Ok((
                        r,
                        ThreadPlacement {
                            worker: i,
                            cpu_requested: cpu,
                            cpu_observed: observed,
                        },
                    ))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| PinError("a worker thread panicked".into()))?
            })
            .collect()
    })
}

/// Runs `work(item)` on one thread pinned to `cpu`, moving `item` (say, an exclusive
/// borrow of a mapping) into it: no lock is needed to hand a worker memory it alone uses.
pub fn run_pinned_once<T, R, F>(
    cpu: usize,
    item: T,
    work: F,
) -> Result<Option<(R, ThreadPlacement)>, PinError>
where
    T: Send,
    R: Send,
    F: FnOnce(T) -> R + Send,
{
    check_cpus(&[cpu])?;
    std::thread::scope(|s| {
        s.spawn(move || {
            pmscope_sys::affinity::pin_current_thread(cpu)
                .map_err(|e| PinError(format!("cannot pin worker 0 to CPU {cpu}: {e}")))?;
            let r = work(item);
            let observed = pmscope_sys::affinity::current_cpu().unwrap_or(usize::MAX);
            Ok(Some((
                r,
                ThreadPlacement {
                    worker: 0,
                    cpu_requested: cpu,
                    cpu_observed: observed,
                },
            )))
        })
        .join()
        .map_err(|_| PinError("a worker thread panicked".into()))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_run_where_pinned() {
        let allowed = pmscope_sys::affinity::allowed_cpus().unwrap();
        let out = run_pinned(&allowed, |i| i * 10).unwrap();
        assert_eq!(out.len(), allowed.len());
        for (i, (r, p)) in out.iter().enumerate() {
            assert_eq!(*r, i * 10);
            assert_eq!(p.worker, i);
            assert_eq!(p.cpu_observed, p.cpu_requested);
        }
        let e = run_pinned(&[100_000], |_| ()).unwrap_err();
        assert!(
            e.0.starts_with("CPU 100000 is not available to pmscope"),
            "{e}"
        );
        assert!(run_pinned(&[], |_| ()).is_err());
    }

    #[test]
    fn one_worker_gets_its_item_exclusively() {
        let cpu = pmscope_sys::affinity::allowed_cpus().unwrap()[0];
        let mut buf = [0u8; 16];
        let (n, p) = run_pinned_once(cpu, &mut buf[..], |b| {
            b.fill(7);
            b.len()
        })
        .unwrap()
        .unwrap();
        assert_eq!((n, p.cpu_observed), (16, cpu));
        assert!(buf.iter().all(|&x| x == 7));
        assert!(run_pinned_once(100_000, (), |_| ()).is_err());
    }

    #[test]
    fn each_worker_gets_its_own_item() {
        let allowed = pmscope_sys::affinity::allowed_cpus().unwrap();
        let mut items = vec![0usize; allowed.len()];
        let out = run_pinned_each(&allowed, &mut items, |i, x| {
            *x = i + 1;
            i
        })
        .unwrap();
        assert_eq!(out.len(), allowed.len());
        assert_eq!(items, (1..=allowed.len()).collect::<Vec<_>>());
        assert!(run_pinned_each(&allowed, &mut [][..], |_, _: &mut u8| ()).is_err());
    }
}
