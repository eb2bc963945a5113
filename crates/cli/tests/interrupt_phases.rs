//! The long phases that run no measuring loop of their own — the binned k-mer count's split
//! and count, in memory and out of core, and writing a large random chain (`latency`, and `suite basic`'s first step)
//! — look at the signal flag as they go (issue 47). Each is run here after SIGINT has
//! arrived, on inputs of many pieces, bins and chunks, and must stop at once: without the
//! poll it does all its work first, which is how a stop took 1.7 s and 3 CPU-seconds.
//!
//! A measuring loop's repetition is polled too: a `latency --full` repetition is 200 ms, and
//! run whole it went on that long after the signal. Here the signal arrives in the middle
//! of a repetition sized at a minute, which must end at the next piece (about 10 ms).
//!
//! The flag cannot be lowered once raised, so this binary holds one test and sends the
//! signal to itself only after the work that must run unstopped is done.

use pmscope_loops::Region;
use pmscope_loops::chain::{self, ChainError, ChainSpec, Order};
use pmscope_workload::kmer::binned::{self, Keep};
use pmscope_workload::kmer::build::Workers;
use pmscope_workload::kmer::packed::PackedGenome;
use pmscope_workload::kmer::read::Genome;
use pmscope_workload::kmer::spill;
use pmscope_workload::kmer::synth::random_bases;
use std::time::{Duration, Instant};

/// A 64-byte aligned slice of `len` bytes inside `buf`.
fn aligned(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    buf.resize(len + 64, 0);
    let off = (64 - buf.as_ptr() as usize % 64) % 64;
    &mut buf[off..off + len]
}

/// SIGINT to this process, through the handler the binary installs.
fn interrupt_self() {
    pmscope_sys::signal::install().unwrap();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let t = Instant::now();
    while pmscope_sys::signal::received().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "SIGINT never arrived"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn long_phases_stop_at_a_signal_without_finishing_their_work() {
    const K: usize = 31;
    let genomes: Vec<PackedGenome> = (0..2)
        .map(|i| {
            let seq = random_bases(2_000_000, 0x47 + i);
            PackedGenome::of(
                &Genome::from_records(&format!("g{i}"), &[("r", &seq)], K),
                K,
            )
        })
        .collect();
    let workers = Workers::new(2).unwrap();
    let inserts: u64 = genomes.iter().map(|g| g.stats.kmers).sum();
    let bin_count = binned::bins_for(
        inserts,
        binned::slot_words::<1>() * 8,
        binned::l2_bytes(),
        2,
    );

    // Before the signal: the split is whole, so the count below has every bin to do.
    let (bins, _) = binned::split(&workers, &genomes, 2, K, bin_count).unwrap();
    assert!(bins.super_kmers() > 0);
    let busy = (0..bin_count).filter(|&b| bins.kmers[b] > 0).count();
    assert!(busy > 8, "{busy} bins: too few to tell a stop from the end");

    // Out of core: two generated genomes split whole into a scratch file before the signal.
    let scratch_dir = tempfile::tempdir().unwrap();
    let inputs =
        pmscope_workload::kmer::source::genome_inputs(&["synth:seed-2,scale=0.01".into()]).unwrap();
    let inputs = &inputs[..2];
    let bases: u64 = inputs.iter().map(|g| g.expected_bases()).sum();
    let slot_bytes = binned::slot_words::<1>() * 8;
    let plan = spill::plan(
        bases,
        bases,
        K,
        slot_bytes,
        binned::l2_bytes(),
        2,
        256 << 20,
    )
    .unwrap();
    let scratch = spill::Scratch::create(scratch_dir.path()).unwrap();
    let (spilled, _) = spill::split(&workers, inputs, 2, K, plan, &scratch).unwrap();
    assert_eq!(spilled.genomes.len(), 2);
    assert!(spilled.super_kmers > 0);

    // A repetition asked to last a minute (a 64 MiB random chain: at most 2^30 loads, so
    // at least 10 s where a large last-level cache holds the chain, a minute where it does
    // not), the signal sent from another thread 200 ms in: the repetition stops at its next
    // piece (10 ms). Run whole, it returned the same error, but only after those 10-60 s
    // (the watch looks at the signal between repetitions), so the bound is 5 s: far from
    // both.
    let mut chain_buf = Vec::new();
    let chain_region = aligned(&mut chain_buf, 64 << 20);
    let mut region = Region::from_slice(chain_region);
    let mut chaser =
        pmscope_loops::chase::Chaser::build(&mut region, 64 << 20, &ChainSpec::default()).unwrap();
    let timer = pmscope_runner::timer::Timer::calibrate(
        &pmscope_sys::cpu::CpuFeatures::detect(),
        Duration::from_millis(20),
    );
    let mut watch = pmscope_runner::repeat::SystemWatch::new(
        pmscope_sys::sysroot::SysRoot::host(),
        &[],
        pmscope_runner::repeat::Workers::Waiting,
    );
    let policy = pmscope_runner::repeat::RepeatPolicy::new(1, None);
    let sender = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(200));
        interrupt_self();
    });
    let t = Instant::now();
    let measured =
        pmscope_experiment::measure::chase_latency(&mut chaser, &timer, 60e9, &policy, &mut watch);
    let took = t.elapsed();
    sender.join().unwrap();
    let err = measured.expect_err("a minute's repetition ended with a value after the signal");
    assert!(
        err.downcast_ref::<pmscope_runner::interrupt::Interrupted>()
            .is_some(),
        "{err:#}"
    );
    assert!(
        took < Duration::from_secs(5),
        "the repetition ran on after the signal: {took:?}"
    );
    assert!(pmscope_sys::signal::received().is_some());

    // The split: its pieces are polled, so none is taken after the signal.
    let (after, _) = binned::split(&workers, &genomes, 2, K, bin_count).unwrap();
    assert_eq!(
        after.super_kmers(),
        0,
        "the split went on after the signal (out of {} super-k-mers)",
        bins.super_kmers()
    );

    // The count: its bins are polled, so no k-mer is counted after the signal.
    let slots = binned::table_slots(&bins);
    let mut words: Vec<Vec<u64>> = (0..2)
        .map(|_| vec![0u64; slots * binned::slot_words::<1>()])
        .collect();
    let mut tables: Vec<&mut [u64]> = words.iter_mut().map(|w| &mut w[..]).collect();
    let texts: Vec<&[u64]> = genomes.iter().map(|g| &g.words[..]).collect();
    let counted =
        binned::count::<1>(&workers, &bins, &texts, K, &mut tables, Keep::Nothing).unwrap();
    let distinct: u64 = counted.histogram.iter().sum();
    assert_eq!(
        distinct, 0,
        "the count went on after the signal ({distinct} k-mers counted)"
    );

    // Out of core: the split takes no genome after the signal, the count no partition.
    let scratch_after = spill::Scratch::create(scratch_dir.path()).unwrap();
    let (after, _) = spill::split(&workers, inputs, 2, K, plan, &scratch_after).unwrap();
    assert!(
        after.genomes.is_empty() && after.super_kmers == 0,
        "the out-of-core split went on after the signal ({} genomes)",
        after.genomes.len()
    );
    assert_eq!(scratch_after.bytes(), 0, "bins written after the signal");
    let slots = binned::slots_for(spilled.largest());
    let mut words: Vec<Vec<u64>> = (0..2).map(|_| vec![0u64; slots * slot_bytes / 8]).collect();
    let mut tables: Vec<&mut [u64]> = words.iter_mut().map(|w| &mut w[..]).collect();
    let counted =
        spill::count::<1>(&workers, &spilled, &scratch, K, &mut tables, Keep::Nothing).unwrap();
    let distinct: u64 = counted.histogram.iter().sum();
    assert_eq!(
        distinct, 0,
        "the out-of-core count went on after the signal ({distinct} k-mers counted)"
    );

    // A random chain large enough to be written by several threads (2^20 elements), and a
    // sequential one: both stop before their first chunk of links.
    let mut buf = Vec::new();
    let region = aligned(&mut buf, 64 << 20);
    for order in [Order::Random, Order::Sequential] {
        let spec = ChainSpec {
            order,
            ..ChainSpec::default()
        };
        let built = chain::build(&mut Region::from_slice(region), 64 << 20, &spec);
        assert!(
            matches!(built, Err(ChainError::Interrupted)),
            "a {order:?} chain was written whole after the signal: {built:?}"
        );
    }
}
