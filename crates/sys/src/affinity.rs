//! CPU affinity of the calling thread: pin, ask where it runs, list the allowed CPUs, and
//! run something (start a process, which inherits the mask) on a set of CPUs.
#![allow(unsafe_code)]

use std::io;

/// Pins the calling thread to exactly `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so CPU_SET stays inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the set is a valid local and its size is passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Allows the calling thread exactly `cpus`.
pub fn set_current_thread(cpus: &[usize]) -> io::Result<()> {
    if cpus.is_empty() || cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: every cpu is below CPU_SETSIZE (checked above), inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: the set is a valid local and its size is passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Runs `f` with the calling thread allowed only `cpus` (a process it starts inherits
/// that mask), then gives the thread its previous mask back, also if `f` panics. Returns
/// what `f` returned and the mask the kernel granted.
pub fn run_on<T>(cpus: &[usize], f: impl FnOnce() -> T) -> io::Result<(T, Vec<usize>)> {
    struct Restore(Vec<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = set_current_thread(&self.0);
        }
    }
    let _restore = Restore(allowed_cpus()?);
    set_current_thread(cpus)?;
    let granted = allowed_cpus()?;
    Ok((f(), granted))
}

/// The CPUs the calling thread may run on (its affinity mask), ascending.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most size_of::<cpu_set_t>() bytes into the local set.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: i is below CPU_SETSIZE, inside the set.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect())
}

/// The CPU the calling thread is running on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_and_observe() {
        let allowed = allowed_cpus().unwrap();
        let last = *allowed.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            assert_eq!(current_cpu(), Some(last));
            assert_eq!(allowed_cpus().unwrap(), vec![last]);
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(1 << 20).is_err());
    }

    #[test]
    fn a_child_started_on_cpus_inherits_them_and_the_thread_gets_its_mask_back() {
        let allowed = allowed_cpus().unwrap();
        let last = *allowed.last().unwrap();
        std::thread::spawn(move || {
            let before = allowed_cpus().unwrap();
            let (out, granted) = run_on(&[last], || {
                std::process::Command::new("grep")
                    .args(["Cpus_allowed_list", "/proc/self/status"])
                    .output()
                    .unwrap()
            })
            .unwrap();
            assert_eq!(granted, vec![last]);
            let line = String::from_utf8(out.stdout).unwrap();
            assert_eq!(
                line.split_whitespace().nth(1),
                Some(last.to_string().as_str())
            );
            assert_eq!(allowed_cpus().unwrap(), before);
            assert!(run_on(&[], || ()).is_err());
        })
        .join()
        .unwrap();
    }
}
