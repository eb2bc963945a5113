//! The `--max-mem` guard: a typo in a size must never drive the machine out of memory.

use crate::TargetError;
use pmscope_core::units::Bytes;
use pmscope_sys::sysroot::SysRoot;

/// How much memory pmscope may map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryGuard {
    /// `MemAvailable` when the guard was made.
    pub available: u64,
    /// The limit: `--max-mem` if given, else 90 % of `MemAvailable`.
    pub limit: u64,
    /// Whether the limit was given explicitly.
    pub explicit: bool,
}

impl MemoryGuard {
    /// Reads `MemAvailable` and sets the limit.
    pub fn new(root: &SysRoot, max_mem: Option<u64>) -> MemoryGuard {
        let available = pmscope_sys::memory::meminfo_bytes(root, "MemAvailable").unwrap_or(0);
        MemoryGuard::with(available, max_mem)
    }

    /// A guard for a known amount of available memory.
    pub fn with(available: u64, max_mem: Option<u64>) -> MemoryGuard {
        MemoryGuard {
            available,
            limit: max_mem.unwrap_or(available / 10 * 9),
            explicit: max_mem.is_some(),
        }
    }

    /// Refuses a request of `bytes` of RAM (for `what`) above the limit or above what is
    /// available, with the figures in the message.
    pub fn check(&self, bytes: u64, what: &str) -> Result<(), TargetError> {
        if bytes > self.available {
            return Err(TargetError::usage(format!(
                "{what} needs {} but only {} of memory is available; use a smaller size",
                Bytes(bytes).human(),
                Bytes(self.available).human()
            )));
        }
        if bytes > self.limit {
            let source = if self.explicit {
                "--max-mem".to_string()
            } else {
                format!(
                    "the default --max-mem, 90% of {} available,",
                    Bytes(self.available).human()
                )
            };
            return Err(TargetError::usage(format!(
                "{what} needs {} but {source} allows {}; use a smaller size or raise --max-mem",
                Bytes(bytes).human(),
                Bytes(self.limit).human()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_with_figures() {
        let g = MemoryGuard::with(10 << 30, None);
        assert!(g.check(8 << 30, "dram:4k").is_ok());
        let e = g.check(9 << 30 | 1, "dram:4k").unwrap_err();
        assert_eq!(
            e.to_string(),
            "dram:4k needs 9.0 GiB but the default --max-mem, 90% of 10.0 GiB available, allows 9.0 GiB; use a smaller size or raise --max-mem"
        );
        let e = g.check(11 << 30, "dram:4k").unwrap_err();
        assert_eq!(
            e.to_string(),
            "dram:4k needs 11.0 GiB but only 10.0 GiB of memory is available; use a smaller size"
        );
        assert!(e.is_usage());
        let g = MemoryGuard::with(10 << 30, Some(1 << 30));
        let e = g.check(2 << 30, "shm:4k").unwrap_err();
        assert_eq!(
            e.to_string(),
            "shm:4k needs 2.0 GiB but --max-mem allows 1.0 GiB; use a smaller size or raise --max-mem"
        );
    }
}
