//! Whether a strategy makes stores durable on a mapping: pmdk's reason table (libpmem2
//! decides a mapping's effective granularity and says why), one row per strategy and
//! persistence domain, as one pure function every persisting command calls.

use crate::PersistStrategy;
use pmscope_core::achieved::{Achieved, Persistence};
use pmscope_core::warning::Warning;

/// Why `strategy` does not make stores durable on a mapping that achieved `achieved`, or
/// `None` when it does (or when nothing durable was asked for):
///
/// | persistence | clflush, clflushopt, clwb, ntstore | none | msync |
/// |---|---|---|---|
/// | dax | durable | durable only with eADR (the region's `persistence_domain` is `cpu_cache`: no warning) | durable (the kernel flushes) |
/// | page-cache | not durable: lines reach the page cache, not the file | nothing asked | durable |
/// | volatile | nothing survives power loss | nothing asked | nothing survives |
/// | emulated (tmpfs) | nothing survives power loss | nothing asked | nothing survives |
pub fn domain_warning(strategy: PersistStrategy, achieved: &Achieved) -> Option<Warning> {
    use PersistStrategy as S;
    let what = match &achieved.path {
        Some(p) => format!("the mapping of {p}"),
        None => "this mapping".to_string(),
    };
    let eadr = achieved
        .pmem_region
        .as_ref()
        .is_some_and(|r| r.persistence_domain.as_deref() == Some("cpu_cache"));
    match (achieved.persistence, strategy) {
        (Persistence::Dax, S::None) if eadr => None,
        (Persistence::Dax, S::None) => Some(Warning::new(
            "persist-none-on-dax",
            format!(
                "--persist none leaves stores to {what} (DAX) in the CPU caches: they are durable only on a platform with eADR"
            ),
            "use --persist clwb (or the best flush `pmscope list strategies` shows) unless the platform has eADR",
        )),
        (Persistence::Dax, _) => None,
        (Persistence::PageCache, S::Msync | S::None) => None,
        (Persistence::PageCache, s) => Some(Warning::new(
            "persist-on-page-cache",
            format!(
                "{what} is a page-cache mapping: {s} writes lines back to the page cache, not to the file, so its stores are not durable"
            ),
            "use --persist msync for this target, or a DAX target (a file on a -o dax mount, or devdax)",
        )),
        (Persistence::Volatile | Persistence::Emulated, S::None) => None,
        (Persistence::Volatile, s) => Some(Warning::new(
            "persist-on-volatile",
            format!(
                "{what} is volatile memory: {s} costs what it would on persistent memory, but nothing survives a power failure"
            ),
            "fine for measuring the instructions' cost; for durability use a DAX target (a file on a -o dax mount, or devdax)",
        )),
        (Persistence::Emulated, s) => Some(Warning::new(
            "persist-on-emulated",
            format!(
                "{what} is DRAM-backed tmpfs emulating persistent memory: {s} costs what it would, but nothing survives a power failure"
            ),
            "fine for emulation studies; for durability use a DAX target (a file on a -o dax mount, or devdax)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::STRATEGIES;

    fn achieved(persistence: Persistence) -> Achieved {
        Achieved {
            faults: pmscope_core::achieved::FaultEvidence::from_faults(1 << 20, 256),
            page_size: Some(4096),
            page_size_source: "smaps".into(),
            path: Some("/mnt/x".into()),
            ..Achieved::unverified(1 << 20, persistence)
        }
    }

    /// Every strategy on every persistence domain: the table in the doc, cell by cell.
    #[test]
    fn every_strategy_on_every_domain() {
        use PersistStrategy as S;
        let code = |s, p| domain_warning(s, &achieved(p)).map(|w| w.code);
        let flushes = [S::Clflush, S::Clflushopt, S::Clwb, S::Ntstore];
        assert_eq!(
            STRATEGIES.len(),
            flushes.len() + 2,
            "a new strategy needs its row"
        );
        for s in flushes {
            assert_eq!(code(s, Persistence::Dax), None, "{s}");
            assert_eq!(
                code(s, Persistence::PageCache).as_deref(),
                Some("persist-on-page-cache"),
                "{s}"
            );
            assert_eq!(
                code(s, Persistence::Volatile).as_deref(),
                Some("persist-on-volatile")
            );
            assert_eq!(
                code(s, Persistence::Emulated).as_deref(),
                Some("persist-on-emulated")
            );
        }
        assert_eq!(
            code(S::None, Persistence::Dax).as_deref(),
            Some("persist-none-on-dax")
        );
        for p in [
            Persistence::PageCache,
            Persistence::Volatile,
            Persistence::Emulated,
        ] {
            assert_eq!(
                code(S::None, p),
                None,
                "{p:?}: nothing durable was asked for"
            );
        }
        assert_eq!(code(S::Msync, Persistence::Dax), None);
        // A region whose platform declares eADR (cpu_cache) needs no flush; ADR does.
        let on_region = |domain: &str| {
            let mut a = achieved(Persistence::Dax);
            a.pmem_region = Some(pmscope_core::achieved::PmemRegionFacts {
                region: "region0".into(),
                origin: "nfit".into(),
                emulated: false,
                persistence_domain: Some(domain.into()),
                interleave_ways: 6,
                description: String::new(),
            });
            domain_warning(S::None, &a).map(|w| w.code)
        };
        assert_eq!(on_region("cpu_cache"), None);
        assert_eq!(
            on_region("memory_controller").as_deref(),
            Some("persist-none-on-dax")
        );
        assert_eq!(code(S::Msync, Persistence::PageCache), None);
        assert_eq!(
            code(S::Msync, Persistence::Volatile).as_deref(),
            Some("persist-on-volatile")
        );
        assert_eq!(
            code(S::Msync, Persistence::Emulated).as_deref(),
            Some("persist-on-emulated")
        );
    }

    #[test]
    fn the_warning_names_the_mapping_the_strategy_and_the_remedy() {
        let w = domain_warning(PersistStrategy::Clwb, &achieved(Persistence::PageCache)).unwrap();
        assert_eq!(
            w.message,
            "the mapping of /mnt/x is a page-cache mapping: clwb writes lines back to the page cache, not to the file, so its stores are not durable"
        );
        assert!(w.remedy.contains("--persist msync"));
        let anon = Achieved {
            path: None,
            ..achieved(Persistence::Volatile)
        };
        let w = domain_warning(PersistStrategy::Clflush, &anon).unwrap();
        assert!(
            w.message
                .starts_with("this mapping is volatile memory: clflush")
        );
    }
}
