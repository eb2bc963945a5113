//! Turning the hardware prefetchers off for a run, as Intel MLC does, and back on after it.
//!
//! Intel: MSR 0x1A4 (MISC_FEATURE_CONTROL), bits 0-3 disable the L2 stream, L2 adjacent-line,
//! L1 streamer and L1 IP prefetchers. AMD Zen 3 and later: MSR 0xC0000108 (PrefetchControl),
//! bits 0-3 and 5. Both are written through the msr driver (`/dev/cpu/N/msr`, root) on every
//! online CPU; the previous values are restored when the guard drops (the end of the run,
//! an error or Ctrl-C, which pmscope turns into an ordinary error). A SIGKILL cannot run
//! that restore: the prefetchers then stay off until the next reboot or `wrmsr`.

use crate::sysroot::SysRoot;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;

/// The prefetcher-control MSR and its disable bits for a CPU vendor.
pub fn control_msr(vendor: &str) -> Option<(u64, u64)> {
    match vendor {
        "GenuineIntel" => Some((0x1A4, 0xF)),
        "AuthenticAMD" => Some((0xC000_0108, 0x2F)),
        _ => None,
    }
}

/// The prefetchers are off until this drops; then every CPU gets its old value back.
#[derive(Debug)]
pub struct PrefetchersOff {
    msr: u64,
    saved: Vec<(File, usize, u64)>,
}

impl PrefetchersOff {
    /// The MSR written and the CPUs it was written on.
    pub fn describe(&self) -> String {
        format!(
            "MSR {:#x} disable bits set on CPUs {}",
            self.msr,
            self.saved
                .iter()
                .map(|(_, c, _)| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    }
}

impl Drop for PrefetchersOff {
    fn drop(&mut self) {
        for (file, cpu, old) in &self.saved {
            if file.write_all_at(&old.to_le_bytes(), self.msr).is_err() {
                eprintln!(
                    "pmscope: could not restore the prefetchers of CPU {cpu} (MSR {:#x} = {old:#x}); \
                     restore them with `wrmsr -p {cpu} {:#x} {old:#x}`",
                    self.msr, self.msr
                );
            }
        }
    }
}

/// Sets the prefetcher disable bits on every CPU in `cpus`, or says in one sentence why it
/// cannot: under a hypervisor the MSRs are not the host's, an unknown vendor has no known
/// MSR, and without the msr driver or root nothing can be written.
pub fn disable(
    root: &SysRoot,
    vendor: &str,
    hypervisor: bool,
    cpus: &[usize],
) -> Result<PrefetchersOff, String> {
    if hypervisor {
        return Err(
            "the hardware prefetchers cannot be turned off under a hypervisor (their MSRs \
             belong to the host)"
                .into(),
        );
    }
    let Some((msr, mask)) = control_msr(vendor) else {
        return Err(format!(
            "pmscope knows no prefetcher-control MSR for a {vendor} CPU"
        ));
    };
    let mut guard = PrefetchersOff {
        msr,
        saved: Vec::new(),
    };
    for &cpu in cpus {
        let path = root.path(&format!("dev/cpu/{cpu}/msr"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| {
                format!(
                    "cannot open {} ({e}): the prefetchers can be turned off only as root with \
                     the msr driver loaded (`modprobe msr`)",
                    path.display()
                )
            })?;
        let mut buf = [0u8; 8];
        file.read_exact_at(&mut buf, msr)
            .map_err(|e| format!("reading MSR {msr:#x} of CPU {cpu} failed: {e}"))?;
        let old = u64::from_le_bytes(buf);
        file.write_all_at(&(old | mask).to_le_bytes(), msr)
            .map_err(|e| format!("writing MSR {msr:#x} of CPU {cpu} failed: {e}"))?;
        // Saved before the next CPU, so a failure there still restores this one.
        guard.saved.push((file, cpu, old));
    }
    Ok(guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fake msr device files: a sparse file read and written at the MSR's offset, as the
    /// msr driver is.
    fn fake_msrs(cpus: &[usize], msr: u64, value: u64) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for c in cpus {
            let dir = t.path().join(format!("dev/cpu/{c}"));
            std::fs::create_dir_all(&dir).unwrap();
            let f = File::create(dir.join("msr")).unwrap();
            f.write_all_at(&value.to_le_bytes(), msr).unwrap();
        }
        t
    }

    fn read(t: &tempfile::TempDir, cpu: usize, msr: u64) -> u64 {
        let f = File::open(t.path().join(format!("dev/cpu/{cpu}/msr"))).unwrap();
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, msr).unwrap();
        u64::from_le_bytes(b)
    }

    #[test]
    fn off_for_the_run_and_restored_afterwards() {
        for (vendor, msr, mask) in [
            ("GenuineIntel", 0x1A4, 0xF),
            ("AuthenticAMD", 0xC000_0108u64, 0x2F),
        ] {
            // Bit 8 stands for an unrelated setting the write must keep.
            let t = fake_msrs(&[0, 1], msr, 0x100 | 0x1);
            let root = SysRoot::at(t.path());
            let guard = disable(&root, vendor, false, &[0, 1]).unwrap();
            assert_eq!(read(&t, 0, msr), 0x100 | mask, "{vendor}");
            assert_eq!(read(&t, 1, msr), 0x100 | mask, "{vendor}");
            assert!(guard.describe().contains("CPUs 0,1"));
            drop(guard);
            assert_eq!(read(&t, 0, msr), 0x101, "{vendor}: restored");
            assert_eq!(read(&t, 1, msr), 0x101, "{vendor}: restored");
        }
    }

    #[test]
    fn refusals_are_one_sentence_and_change_nothing() {
        let t = fake_msrs(&[0], 0x1A4, 0);
        let root = SysRoot::at(t.path());
        let e = disable(&root, "GenuineIntel", true, &[0]).unwrap_err();
        assert!(e.contains("under a hypervisor"), "{e}");
        let e = disable(&root, "HygonGenuine", false, &[0]).unwrap_err();
        assert!(e.contains("no prefetcher-control MSR"), "{e}");
        // CPU 1 has no msr file: CPU 0, already written, is restored on the way out.
        let e = disable(&root, "GenuineIntel", false, &[0, 1]).unwrap_err();
        assert!(e.contains("modprobe msr"), "{e}");
        assert_eq!(read(&t, 0, 0x1A4), 0);
    }
}
