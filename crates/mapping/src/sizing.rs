//! Defaults sized to the machine. A size option left at its default (`auto`) is meant to
//! measure memory, so it must not fit in the last-level cache: [`memory_default`] is the
//! one rule every command and suite step uses.
//!
//! ```text
//! wanted = max(floor, 4 x LLC / together), rounded up to the unit: the targets' granule
//!          (page size or alignment), at least 1 MiB
//! cap    = per share of what may be mapped at once:
//!            RAM:  (min(--max-mem or 90% of MemAvailable, MemAvailable) - 64 MiB) x 10/11
//!                  (the process: 64 MiB, and a tenth of the mapping: building a random
//!                  chain takes 6 bytes per 64-byte element, a random order 4 per line)
//!            a target's own capacity: free huge pages, a file system's free space, a device
//!          less what the command maps beside it, divided by the shares (one per thread)
//! bytes  = min(wanted, cap rounded down to the unit), at least one unit
//! ```
//!
//! RAM that leaves less than one unit for any mapping (`--max-mem 1MiB`) is refused in one
//! sentence that names the default and what capped it (`--max-mem 1.0 MiB leaves no room for
//! the default --size`): the user gave no size, so "use a smaller size" would be no help.
//!
//! `floor` is the command's old fixed default, so small-cache machines never measure less
//! than before. When the cap makes the size smaller than wanted, the result carries a
//! `size-capped` warning saying what capped it. Sizes the user gives are never changed:
//! this rule is only for defaults.

pub use crate::room::{Limit, TargetRoom};
use crate::{MapOptions, TargetError, TargetSpec};
use pmscope_core::units::Bytes;
use pmscope_core::warning::Warning;

/// The multiple of the last-level cache a memory working set must reach.
pub const LLC_MULTIPLE: u64 = 4;

/// Memory left to the process besides its mappings and the tenth of them its heap may take
/// (a random chain's order and slot offsets while it is built, 6 bytes per 64-byte
/// element; a random line order, 4 bytes per line).
pub const PROCESS_HEADROOM: u64 = 64 << 20;

/// What a default size is for: the command's side of the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    /// The option the size comes from (`--size`), for the note.
    pub option: &'static str,
    /// The least the default is: the command's old fixed default.
    pub floor: u64,
    /// Copies of the size mapped at once, one per thread (bandwidth's per-thread regions,
    /// loaded's traffic threads); 1 for one region.
    pub shares: u64,
    /// How many of the copies the smallest measured point covers at once: their sum must
    /// reach 4x the LLC (1: each copy alone must).
    pub together: u64,
    /// Bytes mapped beside the copies, in the same mapping (loaded's probe region).
    pub besides: u64,
}

impl Want {
    /// One region of at least `floor` bytes, measured alone.
    pub fn one(option: &'static str, floor: u64) -> Want {
        Want {
            option,
            floor,
            shares: 1,
            together: 1,
            besides: 0,
        }
    }
}

/// The machine's side of the rule, read once for a command's targets ([`Room::of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// The last-level cache (`None`: sysfs does not say; the floor applies).
    pub llc: Option<u64>,
    /// `MemAvailable`.
    pub available: u64,
    /// `--max-mem`, if given.
    pub max_mem: Option<u64>,
    /// Whether a target takes RAM (then MemAvailable and --max-mem bound the size).
    pub ram: bool,
    /// The smallest capacity of a target that is not (only) RAM: a huge-page pool, a file
    /// system's free space, a device.
    pub own: Option<Limit>,
    /// What sizes are rounded to: the largest page size or alignment of the targets.
    pub granule: u64,
}

impl Room {
    /// Reads the last-level cache (CPU 0's, through `opts.root`), the memory the guard saw
    /// and what each target allows.
    pub fn of(specs: &[TargetSpec], opts: &MapOptions) -> Room {
        let caches = pmscope_sys::cpu::caches(&opts.root, 0);
        let mut room = Room {
            llc: pmscope_sys::cpu::last_level_cache_bytes(&caches),
            available: opts.guard.available,
            max_mem: opts.guard.explicit.then_some(opts.guard.limit),
            ram: specs.is_empty(),
            own: None,
            granule: 4096,
        };
        for spec in specs {
            let t = spec.room(opts);
            room.granule = room.granule.max(t.granule);
            room.ram |= t.ram;
            if let Some(own) = t.own
                && room.own.as_ref().is_none_or(|o| own.bytes < o.bytes)
            {
                room.own = Some(own);
            }
        }
        room
    }
}

/// A default size as the rule chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sized {
    /// The size (per share).
    pub bytes: u64,
    /// What the rule wanted before any cap: max(floor, 4x LLC / together), rounded.
    pub wanted: u64,
    /// Why it is this size, in words (`4x the 480.0 MiB last-level cache`), for tables.
    pub why: String,
    /// The `size-capped` warning, when a cap made it smaller than wanted.
    pub note: Option<Warning>,
}

/// THE rule for sizes meant to measure memory (module doc): at least 4x the last-level
/// cache and at least `want.floor`, capped by what may be mapped, rounded to the granule.
pub fn memory_default(want: &Want, room: &Room) -> Result<Sized, TargetError> {
    // Whole MiB at least: a page multiple for every kind, and a size a person can read.
    let granule = room.granule.max(1 << 20);
    let shares = want.shares.max(1);
    let together = want.together.max(1);
    let cache = room.llc.map(|llc| (LLC_MULTIPLE * llc).div_ceil(together));
    let wanted = want.floor.max(cache.unwrap_or(0)).next_multiple_of(granule);
    let per_share = |total: u64| total.saturating_sub(want.besides) / shares;
    let mut caps: Vec<(u64, String, String)> = Vec::new();
    if room.ram {
        let (limit, what, remedy) = match room.max_mem {
            Some(m) if m <= room.available => (
                m,
                format!("--max-mem {}", Bytes(m).human()),
                "raise --max-mem".to_string(),
            ),
            _ => (
                room.available / 10 * 9,
                format!(
                    "the memory available ({} MemAvailable, 90% of it usable)",
                    Bytes(room.available).human()
                ),
                "free memory".to_string(),
            ),
        };
        let usable = limit.saturating_sub(PROCESS_HEADROOM) / 11 * 10;
        if usable < granule {
            // No room for any mapping at all. (Room that only what the command maps beside
            // this one takes, as loaded's traffic floors under a small --max-mem, leaves
            // the smallest unit, as before: the guard judges the whole.)
            return Err(TargetError::usage(format!(
                "{what} leaves no room for the default {}: it needs at least {} beside the {} pmscope keeps for itself; {remedy}, or give {} explicitly",
                want.option,
                Bytes(granule).human(),
                Bytes(PROCESS_HEADROOM).human(),
                want.option
            )));
        }
        caps.push((per_share(usable), what, remedy));
    }
    if let Some(own) = &room.own {
        caps.push((per_share(own.bytes), own.what.clone(), own.remedy.clone()));
    }
    let cap = caps.into_iter().min_by_key(|c| c.0);
    let llc_words = |llc: u64| {
        if together > 1 {
            format!(
                "4x the {} last-level cache over {together} threads",
                Bytes(llc).human()
            )
        } else {
            format!("4x the {} last-level cache", Bytes(llc).human())
        }
    };
    let uncapped_why = match (room.llc, cache) {
        (Some(llc), Some(c)) if c > want.floor => llc_words(llc),
        (Some(llc), _) => format!(
            "at least {}, more than {}",
            Bytes(want.floor).human(),
            llc_words(llc)
        ),
        (None, _) => format!(
            "at least {}; the last-level cache is unknown",
            Bytes(want.floor).human()
        ),
    };
    match cap {
        Some((cap, what, remedy)) if (cap / granule * granule).max(granule) < wanted => {
            let bytes = (cap / granule * granule).max(granule);
            let each = if shares > 1 {
                format!(" per thread ({shares} threads)")
            } else {
                String::new()
            };
            let cache_hits = match room.llc {
                Some(llc) if bytes * together < LLC_MULTIPLE * llc => {
                    ": caches may answer part of the accesses"
                }
                _ => "",
            };
            let note = Warning::new(
                "size-capped",
                format!(
                    "the default {} was capped at {}{each} by {what}, below the {} the rule asks for ({}){cache_hits}",
                    want.option,
                    Bytes(bytes).human(),
                    Bytes(wanted).human(),
                    uncapped_why
                ),
                format!("{remedy}, or give {} explicitly", want.option),
            );
            Ok(Sized {
                bytes,
                wanted,
                why: format!("capped by {what}"),
                note: Some(note),
            })
        }
        _ => Ok(Sized {
            bytes: wanted,
            wanted,
            why: uncapped_why,
            note: None,
        }),
    }
}

/// Where a size came from, as records say it (`size_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The default, sized by [`memory_default`].
    Auto,
    /// Given on the command line.
    Explicit,
}

impl Source {
    /// The spelling in records.
    pub fn name(self) -> &'static str {
        match self {
            Source::Auto => "auto",
            Source::Explicit => "explicit",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryGuard;
    use pmscope_sys::sysroot::SysRoot;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    /// A fake /sys and /proc: CPU 0's caches (L1d, L1i, L2, and an L3 of `l3` as sysfs
    /// writes it, e.g. `491520K`) and a meminfo with `available` bytes available.
    fn fake_tree(l3: &str, available: u64) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let w = |rel: &str, v: &str| {
            let p = t.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        let cache = "sys/devices/system/cpu/cpu0/cache";
        for (i, level, kind, size) in [
            (0, 1, "Data", "48K"),
            (1, 1, "Instruction", "32K"),
            (2, 2, "Unified", "2048K"),
            (3, 3, "Unified", l3),
        ] {
            w(&format!("{cache}/index{i}/level"), &format!("{level}\n"));
            w(&format!("{cache}/index{i}/type"), &format!("{kind}\n"));
            w(&format!("{cache}/index{i}/size"), &format!("{size}\n"));
        }
        w(
            "proc/meminfo",
            &format!(
                "MemTotal:       {} kB\nMemFree:        {} kB\nMemAvailable:   {} kB\n",
                4 * available / 1024,
                available / 1024,
                available / 1024
            ),
        );
        t
    }

    /// The rule as a command sees it: the room of `specs` under the fake tree.
    fn sized(tree: &tempfile::TempDir, specs: &[&str], max_mem: Option<u64>, want: Want) -> Sized {
        let root = SysRoot::at(tree.path());
        let opts = MapOptions {
            guard: MemoryGuard::new(&root, max_mem),
            root,
            ..MapOptions::host()
        };
        let specs: Vec<TargetSpec> = specs.iter().map(|s| s.parse().unwrap()).collect();
        memory_default(&want, &Room::of(&specs, &opts)).unwrap()
    }

    /// A cap below one unit is refused, naming the default and the cap (the user gave no
    /// size to make smaller).
    #[test]
    fn no_room_at_all_is_refused_naming_the_default() {
        let t = fake_tree("16384K", 16 * GIB);
        let root = SysRoot::at(t.path());
        let opts = MapOptions {
            guard: MemoryGuard::new(&root, Some(MIB)),
            root,
            ..MapOptions::host()
        };
        let specs: Vec<TargetSpec> = vec!["dram:4k".parse().unwrap()];
        let e =
            memory_default(&Want::one("--size", 256 * MIB), &Room::of(&specs, &opts)).unwrap_err();
        assert!(e.is_usage());
        assert_eq!(
            e.to_string(),
            "--max-mem 1.0 MiB leaves no room for the default --size: it needs at least 1.0 MiB beside the 64.0 MiB pmscope keeps for itself; raise --max-mem, or give --size explicitly"
        );
        // Just room for one unit: the smallest default, capped with a note.
        let opts = MapOptions {
            guard: MemoryGuard::new(&SysRoot::at(t.path()), Some(66 * MIB)),
            root: SysRoot::at(t.path()),
            ..MapOptions::host()
        };
        let s = memory_default(&Want::one("--size", 256 * MIB), &Room::of(&specs, &opts)).unwrap();
        assert_eq!(s.bytes, MIB);
        assert!(s.note.is_some());
        // Room that only the mapping beside takes (loaded's traffic under --max-mem 256MiB)
        // is not refused here: the smallest unit, capped with a note, and the guard judges.
        let opts = MapOptions {
            guard: MemoryGuard::new(&SysRoot::at(t.path()), Some(256 * MIB)),
            root: SysRoot::at(t.path()),
            ..MapOptions::host()
        };
        let beside = Want {
            besides: 512 * MIB,
            ..Want::one("--probe-region", GIB)
        };
        let s = memory_default(&beside, &Room::of(&specs, &opts)).unwrap();
        assert_eq!(s.bytes, MIB);
        assert!(s.note.is_some());
    }

    #[test]
    fn small_caches_keep_the_floor() {
        // 16 MiB of L3: 4x is 64 MiB, below the old 256 MiB default, which stays.
        let t = fake_tree("16384K", 16 * GIB);
        let s = sized(&t, &["dram:4k"], None, Want::one("--size", 256 * MIB));
        assert_eq!((s.bytes, s.wanted), (256 * MIB, 256 * MIB));
        assert!(s.note.is_none());
        assert_eq!(
            s.why,
            "at least 256.0 MiB, more than 4x the 16.0 MiB last-level cache"
        );
    }

    #[test]
    fn a_480_mib_cache_gets_four_times_that() {
        // The machine of the issue: 480 MiB of L3 → 1920 MiB per target.
        let t = fake_tree("491520K", 16 * GIB);
        let s = sized(
            &t,
            &["dram:4k", "dram:thp"],
            None,
            Want::one("--size", 256 * MIB),
        );
        assert_eq!(s.bytes, 1920 * MIB);
        assert!(s.note.is_none());
        assert_eq!(s.why, "4x the 480.0 MiB last-level cache");
        // A floor above 4x LLC wins (latency's 1 GiB on a small cache; here 4 GiB).
        let s = sized(&t, &["dram:4k"], None, Want::one("--sizes", 4 * GIB));
        assert_eq!(s.bytes, 4 * GIB);
    }

    #[test]
    fn a_1_1_gib_cache_rounds_to_the_huge_page() {
        // 1.1 GiB of L3 (1153434K, not a whole number of MiB): 4x rounded up to whole MiB
        // for base pages, to 2 MiB when a THP target is among them, to 1 GiB for dram:1g.
        let t = fake_tree("1153434K", 64 * GIB);
        let four = 4 * 1_153_434 * 1024u64;
        let s = sized(&t, &["dram:4k"], None, Want::one("--size", 256 * MIB));
        assert_eq!(s.bytes, four.next_multiple_of(MIB));
        let s = sized(
            &t,
            &["dram:4k", "dram:thp"],
            None,
            Want::one("--size", 256 * MIB),
        );
        assert_eq!(s.bytes, four.next_multiple_of(2 * MIB));
        assert!(s.bytes >= four && s.bytes.is_multiple_of(2 * MIB));
        assert!(s.note.is_none());
        hugetlb_pool(&t, 1 << 20, 8);
        let s = sized(
            &t,
            &["dram:4k", "dram:1g"],
            None,
            Want::one("--size", 256 * MIB),
        );
        assert_eq!((s.bytes, s.note), (5 * GIB, None));
    }

    /// A hugetlb pool of `pages` free pages of `kb` KiB in the fake tree.
    fn hugetlb_pool(t: &tempfile::TempDir, kb: u64, pages: u64) {
        let pool = t
            .path()
            .join(format!("sys/kernel/mm/hugepages/hugepages-{kb}kB"));
        std::fs::create_dir_all(&pool).unwrap();
        for (f, v) in [
            ("nr_hugepages", pages),
            ("free_hugepages", pages),
            ("resv_hugepages", 0),
        ] {
            std::fs::write(pool.join(f), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn little_memory_caps_the_size_with_a_note() {
        // 480 MiB of L3 but 1 GiB available: 90% less the head-room, x10/11.
        let t = fake_tree("491520K", GIB);
        let s = sized(&t, &["dram:4k"], None, Want::one("--size", 256 * MIB));
        let usable = ((GIB / 10 * 9 - PROCESS_HEADROOM) / 11 * 10) / MIB * MIB;
        assert_eq!((s.bytes, s.wanted), (usable, 1920 * MIB));
        assert!(s.bytes < 4 * 480 * MIB);
        let w = s.note.expect("a capped default carries a note");
        assert_eq!(w.code, "size-capped");
        assert!(
            w.message.starts_with("the default --size was capped at ")
                && w.message
                    .contains("by the memory available (1.0 GiB MemAvailable")
                && w.message.contains(
                    "below the 1.9 GiB the rule asks for (4x the 480.0 MiB last-level cache): caches may answer"
                ),
            "{}",
            w.message
        );
        assert_eq!(w.remedy, "free memory, or give --size explicitly");
    }

    #[test]
    fn max_mem_caps_the_size_with_a_note() {
        let t = fake_tree("491520K", 64 * GIB);
        let s = sized(&t, &["dram:4k"], Some(GIB), Want::one("--size", 256 * MIB));
        assert_eq!(s.bytes, ((GIB - PROCESS_HEADROOM) / 11 * 10) / MIB * MIB);
        let w = s.note.unwrap();
        assert!(w.message.contains("by --max-mem 1.0 GiB"), "{}", w.message);
        assert_eq!(w.remedy, "raise --max-mem, or give --size explicitly");
        // A --max-mem above what is available: MemAvailable caps.
        let t = fake_tree("491520K", GIB);
        let s = sized(
            &t,
            &["dram:4k"],
            Some(8 * GIB),
            Want::one("--size", 256 * MIB),
        );
        assert!(s.note.unwrap().message.contains("by the memory available"));
        // Enough of both: no cap, no note.
        let t = fake_tree("491520K", 64 * GIB);
        let s = sized(
            &t,
            &["dram:4k"],
            Some(4 * GIB),
            Want::one("--size", 256 * MIB),
        );
        assert_eq!((s.bytes, s.note), (1920 * MIB, None));
    }

    #[test]
    fn threads_share_the_memory() {
        // bandwidth: 8 threads each with its own region; the 1-thread point needs 4x LLC
        // alone, and 8 x 1920 MiB do not fit in 8 GiB.
        let t = fake_tree("491520K", 8 * GIB);
        let want = Want {
            shares: 8,
            ..Want::one("--region", 512 * MIB)
        };
        let s = sized(&t, &["dram:4k"], None, want);
        let usable = (8 * GIB / 10 * 9 - PROCESS_HEADROOM) / 11 * 10;
        assert_eq!(s.bytes, usable / 8 / MIB * MIB);
        assert!(s.note.unwrap().message.contains("per thread (8 threads)"));
        // loaded's traffic: 8 threads always together, beside a 1920 MiB probe region:
        // 4x LLC over 8 threads is 240 MiB each, below the 256 MiB floor.
        let want = Want {
            shares: 8,
            together: 8,
            besides: 1920 * MIB,
            ..Want::one("--traffic-region", 256 * MIB)
        };
        let t = fake_tree("491520K", 64 * GIB);
        assert_eq!(sized(&t, &["dram:4k"], None, want).bytes, 256 * MIB);
        let want = Want {
            floor: 128 * MIB,
            ..want
        };
        let s = sized(&t, &["dram:4k"], None, want);
        assert_eq!(s.bytes, 240 * MIB);
        assert_eq!(s.why, "4x the 480.0 MiB last-level cache over 8 threads");
    }

    #[test]
    fn without_a_cache_size_the_floor_applies() {
        let t = fake_tree("491520K", 16 * GIB);
        std::fs::remove_dir_all(t.path().join("sys")).unwrap();
        let s = sized(&t, &["dram:4k"], None, Want::one("--size", 256 * MIB));
        assert_eq!(s.bytes, 256 * MIB);
        assert!(s.why.contains("unknown"));
    }

    #[test]
    fn a_target_s_own_capacity_caps_too() {
        // dram:2m takes hugetlb pages, not MemAvailable: the free pages cap the default.
        let t = fake_tree("491520K", 64 * GIB);
        hugetlb_pool(&t, 2048, 512);
        let s = sized(&t, &["dram:2m"], None, Want::one("--size", 256 * MIB));
        assert_eq!(s.bytes, GIB);
        let w = s.note.unwrap();
        assert!(
            w.message.contains("512 free 2MiB huge pages"),
            "{}",
            w.message
        );
        assert!(w.remedy.contains("nr_hugepages"), "{}", w.remedy);
    }
}
