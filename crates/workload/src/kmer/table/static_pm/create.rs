//! Making the production table: a new pool file (named only once its header is durable,
//! so a kill at any moment leaves either no pool file or one that opens), a reopened pool
//! (checked, recovered, its persist strategy kept), or a fresh mapping of the target; and
//! `pmscope kmer recover`'s check of a pool file.

use super::{
    Backing, HEADER_WORDS, Header, PoolMemory, PoolWords, Recovery, SLOT_WORDS, StaticPm,
    TARGET_LOAD,
};
use super::{MAX_GENOMES, read_header};
use crate::kmer::encode::words_for;
use crate::kmer::table::{Create, TableError, TableKind, TableRequest};
use pmscope_mapping::pool::Pool;
use pmscope_persist::{PersistChoice, PersistStrategy, Persister};
use std::path::Path;

/// The production table.
pub type StaticPmTable<const W: usize> = StaticPm<W, PoolWords>;

impl<const W: usize> Create<W> for StaticPmTable<W> {
    const KIND: TableKind = TableKind::StaticPm;
    const MAX_GENOMES: u64 = MAX_GENOMES;

    fn create(r: &TableRequest<'_>) -> Result<Self, TableError> {
        // CPUID decides: a named strategy the CPU lacks is refused, the default falls back
        // (clwb, clflushopt, clflush) and the table's facts say to what.
        let persister = Persister::choose(r.persist, &r.features)
            .map_err(|e| TableError::Refused(e.to_string()))?;
        let capacity = ((r.expected_distinct as f64 / TARGET_LOAD).ceil() as usize)
            .max(64)
            .next_power_of_two();
        let bytes = ((HEADER_WORDS + capacity * SLOT_WORDS) * 8) as u64;
        match r.pool {
            Some(path) if path.exists() => reopen(path, r, persister),
            Some(path) => {
                // Unnamed until the header is durable: a kill before that leaves no file.
                let pool = Pool::create(path, bytes, r.map_options)?;
                let header = Header {
                    k: r.k,
                    capacity,
                    strategy: persister.strategy(),
                    inputs: r.inputs,
                    done: 0,
                };
                create_named(
                    PoolWords::over(Backing::Pool(pool), persister),
                    &header,
                    |backing| match backing {
                        Backing::Pool(pool) => pool.publish(),
                        Backing::Mapping(_) => Ok(()),
                    },
                )
                .map_err(TableError::from)
            }
            None => {
                let m = pmscope_mapping::map_chosen(r.target, bytes, r.map_options)?;
                Ok(Self::format(
                    PoolWords::over(Backing::Mapping(m), persister),
                    r.k,
                    capacity,
                    persister.strategy(),
                    r.inputs,
                ))
            }
        }
    }
}

/// A new pool: formatted, then named by `name` (in production, synced and linked into its
/// directory) only once its header is durable, so that no crash leaves a named file that
/// is not a pool. The crash checker runs this with a `name` that marks its log.
pub(crate) fn create_named<const W: usize, M: PoolMemory, E>(
    mem: PoolWords<M>,
    header: &Header,
    name: impl FnOnce(&mut M) -> Result<(), E>,
) -> Result<StaticPm<W, PoolWords<M>>, E> {
    let mut t = StaticPm::format(
        mem,
        header.k,
        header.capacity,
        header.strategy,
        header.inputs,
    );
    name(t.mem.backing_mut())?;
    Ok(t)
}

/// Reopens the pool `path` to resume its job: its header must match the request, and it
/// keeps the strategy it was written with.
fn reopen<const W: usize>(
    path: &Path,
    r: &TableRequest<'_>,
    persister: Persister,
) -> Result<StaticPmTable<W>, TableError> {
    let pool = Pool::open(path, r.map_options)?;
    let what = path.display().to_string();
    let mut t = StaticPm::open(
        PoolWords::over(Backing::Pool(pool), persister),
        &what,
        Some(r.k),
        Some(r.inputs),
    )
    .map_err(TableError::Refused)?;
    let written = t.header.strategy;
    // Without --persist, a reopened pool keeps the strategy it was written with (where this
    // CPU has it).
    if r.persist == PersistChoice::Default
        && written != persister.strategy()
        && written.missing_feature(&r.features).is_none()
    {
        t.mem.set_persister(
            Persister::new(written, &r.features).map_err(|e| TableError::Refused(e.to_string()))?,
        );
    }
    let used = t.mem.persister_strategy();
    if let Some(missing) = written.missing_feature(&r.features) {
        return Err(TableError::Refused(format!(
            "{what} was written with --persist {written}, which needs {missing}, which this CPU does not have; resume it on a CPU with {missing}"
        )));
    }
    if written != used {
        return Err(TableError::Refused(format!(
            "{what} was written with --persist {written}, not {used}; give --persist {written}"
        )));
    }
    Ok(t)
}

/// Opens the pool file `path`, checks its header, recovers it (clears inserts cut short,
/// closes holes a crash left) and reports what it holds: `pmscope kmer recover`.
pub fn check_pool(
    path: &Path,
    opts: &pmscope_mapping::MapOptions,
) -> Result<(Header, Recovery), TableError> {
    let pool = Pool::open(path, opts)?;
    let what = path.display().to_string();
    recover(Backing::Pool(pool), &what)
        .map(|(header, recovery, _)| (header, recovery))
        .map_err(TableError::Refused)
}

/// `pmscope kmer recover` on any pool memory, which it gives back (the crash checker runs
/// it on a recording memory and reads the log).
pub(crate) fn recover<M: PoolMemory>(mem: M, what: &str) -> Result<(Header, Recovery, M), String> {
    // clflush needs no drain and every x86-64 CPU has it: recovery's writes are durable.
    let persister = Persister::new(
        PersistStrategy::Clflush,
        &pmscope_sys::cpu::CpuFeatures::detect(),
    )
    .map_err(|e| e.to_string())?;
    let words = PoolWords::over(mem, persister);
    let header = read_header(&words, what)?;
    macro_rules! open_w {
        ($w:literal) => {
            StaticPm::<$w, PoolWords<M>>::open(words, what, None, None)
                .map(|t| (t.header(), t.recovery(), t.mem.into_backing()))
        };
    }
    match words_for(header.k) {
        1 => open_w!(1),
        2 => open_w!(2),
        3 => open_w!(3),
        4 => open_w!(4),
        _ => Err(format!(
            "{what} has a corrupt header (K = {}); it was left untouched",
            header.k
        )),
    }
}
