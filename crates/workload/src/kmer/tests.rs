//! The set operations against a brute-force `HashSet` implementation on random small
//! genomes, through the whole job (files, threads, table on a real target).

use super::job::{Job, Method, Operation, run};
use super::output::Format;
use super::read::Split;
use super::synth::random_bases;
use super::table::TableKind;
use super::table::partition::{NodePlan, NodeShare};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

fn canonical(s: &[u8]) -> String {
    let rc: Vec<u8> = s
        .iter()
        .rev()
        .map(|b| match b.to_ascii_uppercase() {
            b'A' => b'T',
            b'C' => b'G',
            b'G' => b'C',
            _ => b'A',
        })
        .collect();
    let f = s.to_ascii_uppercase();
    String::from_utf8(f.min(rc)).unwrap()
}

/// The canonical k-mers of one genome (records separated), the obvious way.
fn kmer_set(records: &[Vec<u8>], k: usize) -> HashSet<String> {
    let mut out = HashSet::new();
    for r in records {
        for w in r.windows(k) {
            if w.iter().all(|b| b"ACGTacgt".contains(b)) {
                out.insert(canonical(w));
            }
        }
    }
    out
}

fn genome() -> impl Strategy<Value = Vec<Vec<u8>>> {
    // Few distinct letters and short records make shared k-mers likely.
    let base = prop::sample::select(b"ACGTACGTacgN".to_vec());
    prop::collection::vec(prop::collection::vec(base, 20..120), 1..3)
}

fn write(dir: &std::path::Path, name: &str, records: &[Vec<u8>]) -> PathBuf {
    let mut text = Vec::new();
    for (i, r) in records.iter().enumerate() {
        text.extend_from_slice(format!(">{name}_{i}\n").as_bytes());
        text.extend_from_slice(r);
        text.push(b'\n');
    }
    let p = dir.join(format!("{name}.fa"));
    std::fs::write(&p, text).unwrap();
    p
}

fn job(operation: Operation, k: usize, threads: usize) -> Job {
    Job {
        operation,
        method: Default::default(),
        k,
        threads,
        split: Split::PerFile,
        target: "dram:4k".parse().unwrap(),
        map_options: pmscope_mapping::MapOptions::host(),
        format: Format::Tsv,
        sorted: true,
        preview: 0,
        table: TableKind::default(),
        pool: None,
        persist: pmscope_persist::PersistChoice::Named(pmscope_persist::PersistStrategy::Clflush),
        features: pmscope_sys::cpu::CpuFeatures::detect(),
        fence: Default::default(),
        partition: None,
        bins: Default::default(),
    }
}

/// A plan of two parts, both on this machine's first node (a one-node host still drives
/// two sub-tables through the exchange).
fn two_parts(threads: usize) -> NodePlan {
    let cpus = pmscope_sys::affinity::allowed_cpus().unwrap();
    let node = pmscope_sys::numa::nodes(&pmscope_sys::sysroot::SysRoot::host())
        .into_iter()
        .find(|n| n.cpus.contains(&cpus[0]))
        .map_or(0, |n| n.id);
    let cpu = |i: usize| cpus[i % cpus.len()];
    NodePlan {
        shares: vec![
            NodeShare {
                node,
                cpus: (0..threads.div_ceil(2)).map(cpu).collect(),
            },
            NodeShare {
                node,
                cpus: (threads.div_ceil(2)..threads.max(2)).map(cpu).collect(),
            },
        ],
        without_cpus: Vec::new(),
        targets: Vec::new(),
    }
}

/// Runs a job and returns the written k-mers (first column) and their second column.
fn written(j: &Job) -> Vec<(String, String)> {
    let mut out = Vec::new();
    run(j, Some(&mut out)).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split('\t');
            (f.next().unwrap().to_string(), f.next().unwrap().to_string())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn set_operations_equal_brute_force(
        genomes in prop::collection::vec(genome(), 2..5),
        split_at in 1usize..4,
        k in prop::sample::select(vec![3usize, 5, 12, 33, 70]),
        threads in 1usize..4,
        table in prop::sample::select(TableKind::ALL.to_vec()),
    ) {
        // Every table kind runs the same operations against the same model.
        // tx-pm keeps its pool in a file (libpmemobj): shm instead of dram.
        let target = if table == TableKind::TxPm { "shm:4k" } else { "dram:4k" };
        let job = |operation, k, threads| Job {
            table,
            target: target.parse().unwrap(),
            ..job(operation, k, threads)
        };
        let dir = tempfile::tempdir().unwrap();
        // Keep only genomes that have a k-mer (shorter ones are an error, tested elsewhere).
        let genomes: Vec<_> = genomes.into_iter().filter(|g| !kmer_set(g, k).is_empty()).collect();
        prop_assume!(genomes.len() >= 2);
        let paths: Vec<PathBuf> =
            genomes.iter().enumerate().map(|(i, g)| write(dir.path(), &format!("g{i}"), g)).collect();
        let sets: Vec<HashSet<String>> = genomes.iter().map(|g| kmer_set(g, k)).collect();
        let cut = split_at.min(paths.len() - 1);

        // count: every k-mer with the number of genomes holding it.
        let mut counts: HashMap<String, usize> = HashMap::new();
        for s in &sets { for x in s { *counts.entry(x.clone()).or_default() += 1; } }
        let mut want: Vec<(String, String)> =
            counts.iter().map(|(x, n)| (x.clone(), n.to_string())).collect();
        want.sort();
        let got = written(&job(Operation::Count { genomes: paths.clone() }, k, threads));
        prop_assert_eq!(&got, &want);

        // union and intersection.
        let got = written(&job(Operation::Union { genomes: paths.clone() }, k, threads));
        prop_assert_eq!(got.len(), counts.len());
        let mut inter: Vec<String> =
            counts.iter().filter(|(_, n)| **n == sets.len()).map(|(x, _)| x.clone()).collect();
        inter.sort();
        let got: Vec<String> = written(&job(Operation::Intersect { genomes: paths.clone() }, k, threads))
            .into_iter().map(|(x, _)| x).collect();
        prop_assert_eq!(got, inter);

        // subtract: union of the first `cut` genomes minus union of the rest.
        let left: HashSet<&String> = sets[..cut].iter().flatten().collect();
        let right: HashSet<&String> = sets[cut..].iter().flatten().collect();
        let mut diff: Vec<String> = left.difference(&right).map(|x| (*x).clone()).collect();
        diff.sort();
        let got: Vec<String> = written(&job(
            Operation::Subtract { genomes: paths[..cut].to_vec(), minus: paths[cut..].to_vec() },
            k, threads,
        )).into_iter().map(|(x, _)| x).collect();
        prop_assert_eq!(got, diff);

        // primers: intersection of the in-group minus union of the out-group, each listed
        // once, at its first position in the first in-group genome.
        let in_all: HashSet<String> = sets[..cut].iter().skip(1)
            .fold(sets[0].clone(), |acc, s| acc.intersection(s).cloned().collect());
        let mut want: Vec<String> = in_all.difference(&right.iter().map(|x| (*x).clone()).collect())
            .cloned().collect();
        want.sort();
        let mut out = Vec::new();
        let report = run(&job(
            Operation::Primers { in_group: paths[..cut].to_vec(), out_group: paths[cut..].to_vec() },
            k, threads,
        ), Some(&mut out)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut got: Vec<String> = Vec::new();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            let record: usize = f[2].rsplit('_').next().unwrap().parse().unwrap();
            let pos: usize = f[3].parse().unwrap();
            let window = &genomes[0][record][pos - 1..pos - 1 + k];
            prop_assert_eq!(canonical(window), f[0]);
            prop_assert_eq!(f[4] == "+", window.to_ascii_uppercase() == f[0].as_bytes());
            got.push(f[0].to_string());
        }
        got.sort();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(report.set("candidates"), Some(want.len() as u64));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// `--partition nodes` gives the unpartitioned table's counts, set operations and
    /// primers, for the volatile and the static-pm table, on the real plan of this machine
    /// (one node: one sub-table) and on two parts.
    #[test]
    fn partitioned_jobs_equal_unpartitioned_ones(
        genomes in prop::collection::vec(genome(), 2..5),
        k in prop::sample::select(vec![5usize, 12, 33]),
        threads in 2usize..4,
        table in prop::sample::select(vec![TableKind::Volatile, TableKind::StaticPm]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let genomes: Vec<_> = genomes.into_iter().filter(|g| !kmer_set(g, k).is_empty()).collect();
        prop_assume!(genomes.len() >= 2);
        let paths: Vec<PathBuf> =
            genomes.iter().enumerate().map(|(i, g)| write(dir.path(), &format!("g{i}"), g)).collect();
        let cut = paths.len() / 2;
        let cpus = pmscope_sys::affinity::allowed_cpus().unwrap();
        let nodes = pmscope_sys::numa::nodes(&pmscope_sys::sysroot::SysRoot::host());
        // This machine's own plan where it can run `threads` (one node here: one part).
        let plans: Vec<NodePlan> = NodePlan::new(&nodes, &cpus, threads.min(cpus.len()))
            .into_iter()
            .chain([two_parts(threads)])
            .collect();
        for operation in [
            Operation::Count { genomes: paths.clone() },
            Operation::Intersect { genomes: paths.clone() },
            Operation::Subtract { genomes: paths[..cut].to_vec(), minus: paths[cut..].to_vec() },
            Operation::Primers { in_group: paths[..cut].to_vec(), out_group: paths[cut..].to_vec() },
        ] {
            let one = Job { table, ..job(operation.clone(), k, threads) };
            let mut want = Vec::new();
            let want_report = run(&one, Some(&mut want)).unwrap();
            for plan in &plans {
                let parted = Job { threads: plan.threads(), partition: Some(plan.clone()), ..one.clone() };
                let mut got = Vec::new();
                let report = run(&parted, Some(&mut got)).unwrap();
                prop_assert_eq!(
                    String::from_utf8_lossy(&got), String::from_utf8_lossy(&want),
                    "{} {} parts", operation.name(), plan.shares.len()
                );
                prop_assert_eq!(&report.histogram, &want_report.histogram);
                prop_assert_eq!(&report.sets, &want_report.sets);
                prop_assert_eq!(report.table.parts.len(), plan.shares.len());
                prop_assert_eq!(
                    report.table.parts.iter().map(|p| p.inserts).sum::<u64>(),
                    report.inserts
                );
                prop_assert_eq!(report.table.kind, table.name());
            }
        }
    }
}

#[test]
fn genomes_that_share_their_kmers_are_counted_without_growing_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let bases = random_bases(50_000, 7);
    // The second genome repeats the first: the estimate of the union is the first
    // genome's k-mers, but before the second genome the table must have room for the
    // worst case, all its k-mers new. Sized for the union alone, it would be mapped again
    // and rehashed there (what an in-group of one species cost `kmer primers`).
    let a = write(dir.path(), "a", std::slice::from_ref(&bases));
    let b = write(dir.path(), "b", &[bases]);
    let count = |genomes: Vec<PathBuf>| {
        let j = job(Operation::Count { genomes }, 21, 2);
        run(&j, Some(&mut Vec::new())).unwrap()
    };
    let reports = [count(vec![a.clone(), b]), count(vec![a])];
    for report in &reports {
        assert_eq!(report.table.grown, 0, "{:?}", report.table);
        assert_eq!(report.phases.grow, std::time::Duration::ZERO);
        assert_eq!(report.mips_excluding_growth(), report.mips());
        // Growth is part of the insert phase, not a phase of its own in the total.
        let p = &report.phases;
        assert_eq!(
            report.total(),
            p.parse + p.estimate + p.map + p.insert + p.setops + p.output
        );
    }
    // Had half the insert phase gone to growth, the rate without it would be twice the
    // phase's rate.
    let mut grew = reports[1].clone();
    grew.phases.grow = grew.phases.insert / 2;
    let ratio = grew.mips_excluding_growth() / grew.mips();
    assert!((ratio - 2.0).abs() < 1e-3, "{ratio}");
}

#[test]
fn a_table_the_estimate_undersized_grows_between_genomes_and_the_time_is_measured() {
    use super::build::{Driver, Workers};
    use super::read::Genome;
    use super::table::KmerTable;
    use super::table::volatile::VolatileTable;
    let bases = random_bases(50_000, 7);
    let g = Genome::from_records("g", &[("a", &bases)], 21);
    let mut table = VolatileTable::<1>::new(
        21,
        &"dram:4k".parse().unwrap(),
        &pmscope_mapping::MapOptions::host(),
        1_000,
        2,
    )
    .unwrap();
    let driver = Driver::<1>::new(Workers::new(2).unwrap());
    // An estimate far below the truth: the table must grow before the genome, never fill.
    let started = std::time::Instant::now();
    let (_, growing) = super::job::insert_genomes(
        &driver,
        &mut table,
        std::slice::from_ref(&g),
        &[1_000.0],
        21,
    )
    .unwrap();
    assert!(table.times_grown() >= 1);
    assert!(growing > std::time::Duration::ZERO);
    assert!(growing <= started.elapsed());
    assert_eq!(
        table.distinct(),
        kmer_set(std::slice::from_ref(&bases), 21).len() as u64
    );
}

#[test]
fn per_record_genomes_count_separately() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "multi",
        &[b"ACGTTGCA".to_vec(), b"ACGTAAAA".to_vec()],
    );
    let mut j = job(Operation::Intersect { genomes: vec![p] }, 4, 2);
    j.split = Split::PerRecord;
    let got: Vec<String> = written(&j).into_iter().map(|(x, _)| x).collect();
    // ACGT is in both records; TTTT/AAAA are not shared.
    assert_eq!(got, vec!["ACGT".to_string()]);
}

#[test]
fn preview_rows_are_the_first_written_rows() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a", &[b"ACGTTGCAAGGCTTACA".to_vec()]);
    let b = write(dir.path(), "b", &[b"ACGTTGCAACCCTTACA".to_vec()]);
    for kind in TableKind::ALL {
        for op in [
            Operation::Count {
                genomes: vec![a.clone(), b.clone()],
            },
            Operation::Primers {
                in_group: vec![a.clone()],
                out_group: vec![b.clone()],
            },
        ] {
            let mut j = job(op, 5, 2);
            j.table = kind;
            if kind == TableKind::TxPm {
                j.target = "shm:4k".parse().unwrap();
            }
            j.preview = 3;
            let mut out = Vec::new();
            let report = run(&j, Some(&mut out)).unwrap();
            let text = String::from_utf8(out).unwrap();
            let first: Vec<String> = text.lines().skip(1).take(3).map(String::from).collect();
            assert_eq!(report.preview, first, "{kind}");
            assert_eq!(report.table.kind, kind.name());
        }
    }
}

#[test]
fn table_kinds_parse_by_name() {
    for kind in TableKind::ALL {
        assert_eq!(kind.name().parse::<TableKind>(), Ok(kind));
    }
    let err = "nope".parse::<TableKind>().unwrap_err();
    assert!(
        err.starts_with("unknown table 'nope': choose one of volatile"),
        "{err}"
    );
}

fn file_digest(p: &std::path::Path) -> (u64, Vec<u8>) {
    let bytes = std::fs::read(p).unwrap();
    let words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    (super::table::static_pm::header_checksum(&words), bytes)
}

fn refusal(j: &Job) -> String {
    match run(j, None) {
        Err(super::job::JobError::Table(super::table::TableError::Refused(m))) => m,
        Err(e) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("expected a refusal, the job ran"),
    }
}

/// `--fence per-slot` (the seed's Static-HT) drains every written slot on its own: as many
/// fences as written slots, where the default drains a group of them with one fence. The
/// counts are the same either way. This must fail if per-slot grouped its slots.
#[test]
fn static_pm_per_slot_fences_every_written_slot() {
    use super::table::Fence;
    let dir = tempfile::tempdir().unwrap();
    let genome = super::synth::random_bases(20_000, 7);
    let a = write(dir.path(), "a", std::slice::from_ref(&genome));
    let b = write(dir.path(), "b", &[genome[5_000..].to_vec()]);
    let count = Operation::Count {
        genomes: vec![a, b],
    };
    let mut j = job(count, 15, 2);
    let want = written(&j);
    j.table = TableKind::StaticPm;
    let persisted = |j: &Job| run(j, None).unwrap().table.persist.unwrap();
    j.fence = Fence::PerGroup;
    let (group_flushes, group_fences) = persisted(&j);
    j.fence = Fence::PerSlot;
    let (slot_flushes, slot_fences) = persisted(&j);
    assert_eq!(
        slot_flushes, group_flushes,
        "one write-back per written slot either way"
    );
    // Every written slot: one flush, one fence; the header and the resume word add a
    // flush each beyond their fences.
    assert!(
        slot_fences + 2 >= slot_flushes && slot_fences <= slot_flushes,
        "per-slot: {slot_flushes} flushes, {slot_fences} fences"
    );
    assert!(
        group_fences * 50 < group_flushes,
        "per-group: {group_flushes} flushes, {group_fences} fences"
    );
    assert_eq!(written(&j), want, "the counts are the volatile table's");
}

/// On a CPU without clwb and clflushopt (the x86-64 baseline), static-pm's default
/// persists with clflush, which every x86-64 CPU has, and its facts say so; a pool it wrote
/// reopens on a CPU with clwb under the default with the strategy it was written with. This
/// must fail when the fallback picks an instruction the features lack, or none.
#[test]
fn static_pm_falls_back_to_clflush_without_clwb_and_clflushopt() {
    use pmscope_persist::{PersistChoice, PersistStrategy};
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a", &[b"ACGTTGCAAGGCTTACAGGATTACA".to_vec()]);
    let count = Operation::Count { genomes: vec![a] };
    let mut j = job(count, 7, 1);
    let want = written(&j);
    j.table = TableKind::StaticPm;
    j.persist = PersistChoice::Default;
    j.features = pmscope_sys::cpu::CpuFeatures::baseline();
    let report = run(&j, None).unwrap();
    let p = report
        .table
        .persister
        .expect("static-pm reports its persister");
    assert_eq!(p.strategy(), PersistStrategy::Clflush);
    assert_eq!(p.instructions(), "clflush");
    assert!(p.defaulted());
    assert_eq!(
        p.fallback_note().as_deref(),
        Some(
            "the default persist strategy is clwb, but this CPU lacks clwb and clflushopt, so clflush is used"
        )
    );
    let (flushes, _) = report.table.persist.unwrap();
    assert!(flushes > 0, "clflush really ran");
    assert_eq!(written(&j), want, "the counts are the volatile table's");
    // A named strategy this CPU lacks is refused, not replaced.
    j.persist = PersistChoice::Named(PersistStrategy::Clwb);
    let m = refusal(&j);
    assert!(
        m.contains("needs clwb, which this CPU does not have"),
        "{m}"
    );
    // A pool written with the fallback keeps it on a CPU that has clwb.
    let pool = dir.path().join("pool");
    j.persist = PersistChoice::Default;
    j.pool = Some(pool);
    assert_eq!(written(&j), want);
    j.features = pmscope_sys::cpu::CpuFeatures {
        clflushopt: true,
        clwb: true,
        ..j.features
    };
    let report = run(&j, None).unwrap();
    assert_eq!(
        report.table.persister.map(|p| p.strategy()),
        Some(PersistStrategy::Clflush),
        "a reopened pool keeps the strategy it was written with"
    );
}

#[test]
fn static_pm_pool_resumes_and_refuses_what_it_does_not_recognise() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a", &[b"ACGTTGCAAGGCTTACAGGATTACA".to_vec()]);
    let b = write(dir.path(), "b", &[b"ACGTTGCAACCCTTACAGGATTTTT".to_vec()]);
    let pool = dir.path().join("pool");
    let count = Operation::Count {
        genomes: vec![a.clone(), b.clone()],
    };
    let mut j = job(count.clone(), 7, 2);
    let want = written(&j);
    j.table = TableKind::StaticPm;
    j.pool = Some(pool.clone());
    assert_eq!(
        written(&j),
        want,
        "a new pool counts like the volatile table"
    );
    // Reopened with everything done: nothing is inserted again.
    assert_eq!(written(&j), want, "a reopened pool holds the same counts");
    // Reopened as if the process died inside genome 2 (its inserts are idempotent).
    let mut bytes = std::fs::read(&pool).unwrap();
    bytes[64..72].copy_from_slice(&1u64.to_le_bytes());
    std::fs::write(&pool, &bytes).unwrap();
    assert_eq!(
        written(&j),
        want,
        "resuming after genome 1 gives the same counts"
    );

    // Other K.
    let before = file_digest(&pool);
    let mut other_k = j.clone();
    other_k.k = 9;
    let m = refusal(&other_k);
    assert!(m.contains("holds k-mers of K = 7, not 9"), "{m}");
    // Other genomes.
    let mut other_genomes = j.clone();
    other_genomes.operation = Operation::Count { genomes: vec![a] };
    let m = refusal(&other_genomes);
    assert!(m.contains("is counting other genomes"), "{m}");
    // Other persist strategy.
    let mut other_persist = j.clone();
    other_persist.persist =
        pmscope_persist::PersistChoice::Named(pmscope_persist::PersistStrategy::None);
    let m = refusal(&other_persist);
    assert!(m.contains("was written with --persist clflush"), "{m}");
    assert_eq!(
        file_digest(&pool),
        before,
        "refused pools are left unchanged"
    );

    // Corrupt header: one bit of K flipped.
    let mut bad = before.1.clone();
    bad[16] ^= 1;
    std::fs::write(&pool, &bad).unwrap();
    let digest = file_digest(&pool);
    let m = refusal(&j);
    assert!(m.contains("corrupt header (checksum mismatch)"), "{m}");
    assert_eq!(file_digest(&pool), digest);

    // A pool of the previous layout (version 1): refused in one sentence, unchanged.
    let mut old = before.1.clone();
    old[8..16].copy_from_slice(&1u64.to_le_bytes());
    std::fs::write(&pool, &old).unwrap();
    let m = refusal(&j);
    assert!(
        m.ends_with("has pool layout version 1, but this pmscope reads only version 2; count into a new pool"),
        "{m}"
    );
    assert_eq!(std::fs::read(&pool).unwrap(), old);

    // Truncated: the header promises more slots than the file holds.
    std::fs::write(&pool, &before.1[..2 * 4096]).unwrap();
    let digest = file_digest(&pool);
    let m = refusal(&j);
    assert!(m.contains("is truncated"), "{m}");
    assert_eq!(file_digest(&pool), digest);

    // Foreign: a file of the right size that is not a pool.
    let foreign: Vec<u8> = (0..4 * 4096).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&pool, &foreign).unwrap();
    let m = refusal(&j);
    assert!(m.contains("is not a pmscope k-mer pool"), "{m}");
    assert_eq!(std::fs::read(&pool).unwrap(), foreign);
}

#[test]
fn tx_pm_pool_resumes_and_refuses_what_it_does_not_recognise() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let a = write(dir.path(), "a", &[b"ACGTTGCAAGGCTTACAGGATTACA".to_vec()]);
    let b = write(dir.path(), "b", &[b"ACGTTGCAACCCTTACAGGATTTTT".to_vec()]);
    let pool = dir.path().join("tx.pool");
    let count = Operation::Count {
        genomes: vec![a.clone(), b.clone()],
    };
    let mut j = job(count.clone(), 7, 2);
    let want = written(&j);
    j.table = TableKind::TxPm;
    j.pool = Some(pool.clone());
    assert_eq!(
        written(&j),
        want,
        "a new pool counts like the volatile table"
    );
    assert_eq!(written(&j), want, "a reopened pool holds the same counts");
    let (header, contents) = super::table::tx_pm::check_pool(&pool).unwrap();
    assert_eq!((header.k, header.done), (7, 2));
    assert_eq!(contents.entries, want.len() as u64);

    // Requests that do not match the pool: refused, the pool unchanged.
    let before = file_digest(&pool);
    let mut other_k = j.clone();
    other_k.k = 9;
    let m = refusal(&other_k);
    assert!(m.contains("holds k-mers of K = 7, not 9"), "{m}");
    let mut other_genomes = j.clone();
    other_genomes.operation = Operation::Count { genomes: vec![a] };
    let m = refusal(&other_genomes);
    assert!(m.contains("is counting other genomes"), "{m}");
    assert_eq!(
        file_digest(&pool),
        before,
        "refused pools are left unchanged"
    );

    // Corrupt: one byte of PMDK's pool header flipped (its checksum no longer matches),
    // and one of the layout name.
    let mut bad = before.1.clone();
    bad[40] ^= 1;
    std::fs::write(&pool, &bad).unwrap();
    let digest = file_digest(&pool);
    let m = refusal(&j);
    // Found by pmemobj_check, which changes nothing, before pmemobj_open, which would.
    assert!(m.contains("is not a tx-pm pool PMDK can check"), "{m}");
    assert_eq!(m.lines().count(), 1, "{m}");
    assert_eq!(file_digest(&pool), digest);
    let mut bad = before.1.clone();
    bad[4096 + 2] ^= 1;
    std::fs::write(&pool, &bad).unwrap();
    let digest = file_digest(&pool);
    let m = refusal(&j);
    assert!(m.contains("is a libpmemobj pool of layout"), "{m}");
    assert_eq!(file_digest(&pool), digest);

    // Foreign: a file of pool size that is not a pool, and a static-pm pool.
    let foreign: Vec<u8> = (0..(8 << 20)).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&pool, &foreign).unwrap();
    let m = refusal(&j);
    assert!(
        m.contains("is not a pmscope tx-pm pool (no libpmemobj header)"),
        "{m}"
    );
    assert_eq!(std::fs::read(&pool).unwrap(), foreign);
    let spm = dir.path().join("static.pool");
    let mut s = job(count, 7, 2);
    s.table = TableKind::StaticPm;
    s.pool = Some(spm.clone());
    written(&s);
    let digest = file_digest(&spm);
    let mut t = j.clone();
    t.pool = Some(spm.clone());
    let m = refusal(&t);
    assert!(
        m.contains("is not a pmscope tx-pm pool (no libpmemobj header)"),
        "{m}"
    );
    assert_eq!(file_digest(&spm), digest);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// `--method binned` writes what the brute force and the one-table method write, with
    /// the same histogram, set sizes and lookup hits: every operation, from one thread to
    /// three (several workers' lists of a bin merged genome by genome).
    #[test]
    fn binned_jobs_equal_brute_force_and_the_table(
        genomes in prop::collection::vec(genome(), 2..6),
        k in prop::sample::select(vec![1usize, 3, 5, 12, 15, 16, 33, 70]),
        threads in 1usize..4,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let genomes: Vec<_> = genomes.into_iter().filter(|g| !kmer_set(g, k).is_empty()).collect();
        prop_assume!(genomes.len() >= 2);
        let paths: Vec<PathBuf> =
            genomes.iter().enumerate().map(|(i, g)| write(dir.path(), &format!("g{i}"), g)).collect();
        let mut counts: HashMap<String, usize> = HashMap::new();
        for g in &genomes {
            for x in kmer_set(g, k) { *counts.entry(x).or_default() += 1; }
        }
        let mut want: Vec<(String, String)> =
            counts.iter().map(|(x, n)| (x.clone(), n.to_string())).collect();
        want.sort();
        let cut = paths.len() / 2;
        for operation in [
            Operation::Count { genomes: paths.clone() },
            Operation::Union { genomes: paths.clone() },
            Operation::Intersect { genomes: paths.clone() },
            Operation::Subtract { genomes: paths[..cut].to_vec(), minus: paths[cut..].to_vec() },
            Operation::Primers { in_group: paths[..cut].to_vec(), out_group: paths[cut..].to_vec() },
        ] {
            let table = job(operation.clone(), k, threads);
            let binned = Job { method: Method::Binned, ..table.clone() };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let want_report = run(&table, Some(&mut a)).unwrap();
            let report = run(&binned, Some(&mut b)).unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&b), String::from_utf8_lossy(&a), "{}", operation.name());
            prop_assert_eq!(&report.histogram, &want_report.histogram);
            prop_assert_eq!(&report.sets, &want_report.sets);
            prop_assert_eq!(report.result_kmers, want_report.result_kmers);
            prop_assert_eq!(report.lookups, want_report.lookups);
            prop_assert_eq!(report.lookup_hits, want_report.lookup_hits, "{}", operation.name());
            prop_assert_eq!(&report.regions, &want_report.regions);
            prop_assert_eq!(&report.genomes, &want_report.genomes, "{}", operation.name());
            prop_assert_eq!(report.table.kind, "binned");
            prop_assert_eq!(report.bins.as_ref().map(|b| b.partitions), Some(0));
            if matches!(operation, Operation::Primers { .. }) {
                continue;
            }
            // Out of core: the same result from the bins in a scratch file.
            let bins = crate::kmer::job::BinStore {
                at: crate::kmer::job::BinsAt::Disk,
                dir: Some(dir.path().to_path_buf()),
            };
            let mut c = Vec::new();
            let spilled = run(&Job { bins, ..binned.clone() }, Some(&mut c)).unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&c), String::from_utf8_lossy(&a), "{} out of core", operation.name());
            prop_assert_eq!(&spilled.histogram, &want_report.histogram);
            prop_assert_eq!(&spilled.sets, &want_report.sets);
            prop_assert_eq!(spilled.result_kmers, want_report.result_kmers);
            prop_assert_eq!(spilled.lookups, want_report.lookups);
            prop_assert_eq!(spilled.lookup_hits, want_report.lookup_hits, "{} out of core", operation.name());
            let facts = spilled.bins.unwrap();
            prop_assert!(facts.partitions > 0 && facts.scratch_bytes > 0, "{:?}", facts);
        }
        prop_assert_eq!(written(&Job { method: Method::Binned, ..job(Operation::Count { genomes: paths }, k, threads) }), want);
    }
}
