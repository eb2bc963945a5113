#!/usr/bin/env bash
# mutations.sh — does the static-pm crash checker catch persistence broken one change at a
# time? Each mutation below is applied, alone, to a scratch copy of the tree; the test
# filter of its crate runs; the mutation is caught if a test fails (or the run hangs past
# the timeout), and the failing tests are named. The scratch copy is restored after each
# mutation and removed at the end: the working tree is never mutated.
#
#   bench/mutations.sh [NAME_REGEX]      (results: bench/out/mutations.md, and stdout)
#
# The copy builds with its own profile (release without LTO, incremental) in a target
# directory kept between runs (PMSCOPE_MUTATION_TARGET, default /tmp/pmscope-mutations-target),
# so a mutation rebuilds only its crate and the ones above it. The unmutated tree must pass
# first (PMSCOPE_MUTATION_NO_BASELINE=1 skips that). docs/mutations.md holds the table
# measured last.
set -euo pipefail
cd "$(dirname "$0")/.."

FILTER=${1:-}
TARGET=${PMSCOPE_MUTATION_TARGET:-/tmp/pmscope-mutations-target}
TIMEOUT=${PMSCOPE_MUTATION_TIMEOUT:-600}
OUT=bench/out
mkdir -p "$OUT" "$TARGET"
SCRATCH=$(mktemp -d /tmp/pmscope-mutations.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT

# Fresh timestamps: a copy keeping them would look older than what an earlier run built.
cp -r Cargo.toml Cargo.lock rustfmt.toml crates "$SCRATCH/"
cat >>"$SCRATCH/Cargo.toml" <<'EOF'

[profile.mutation]
inherits = "release"
lto = false
codegen-units = 16
debug = 0
incremental = true
EOF

python3 - "$SCRATCH" "$TARGET" "$TIMEOUT" "$FILTER" "$OUT/mutations.md" <<'PY'
import os, re, subprocess, sys, time

scratch, target, timeout, name_filter, out = sys.argv[1:6]
timeout = int(timeout)
W = "crates/workload/src/kmer"
SP = f"{W}/table/static_pm"
# The checker's tests, the quickest to fail first: a mutation is caught at the first
# failing test, and the rest do not run.
CHECK = ("pmscope-workload", ("--lib",), (
    "kmer::table::crash_check::every_crash_image_of_the_production_path_recovers_one_word_keys",
    "kmer::table::crash_check::every_crash_image_of_the_production_path_recovers_two_word_keys",
    "kmer::table::crash_check::interleaved_inserts_of_two_workers_recover",
))
# The checker's tests for what issue 47 found unchecked: keys of three and four words,
# production-size groups, the header's fields, creation and recovery.
WIDE = ("pmscope-workload", ("--lib",), (
    "kmer::table::crash_check::every_crash_image_of_the_production_path_recovers_three_word_keys",
    "kmer::table::crash_check::every_crash_image_of_the_production_path_recovers_four_word_keys",
))
GROUPS = ("pmscope-workload", ("--lib",), (
    "kmer::table::crash_check::production_size_groups_recover",
))
HEADER = ("pmscope-workload", ("--lib",), (
    "kmer::table::crash_check::a_header_with_any_field_changed_is_refused",
))
# The long phases that poll the signal flag (issue 47): the test sends SIGINT to itself
# and runs each phase after it.
PHASES = ("pmscope", ("--test", "interrupt_phases"), (
    "long_phases_stop_at_a_signal_without_finishing_their_work",
))
# --fence per-slot is a cost, not a correctness, choice (a group of one is as crash-consistent
# as a group of 256), so the crash checker cannot tell the two apart: the test that counts
# a fence per written slot can.
FENCE = ("pmscope-workload", ("--lib",), (
    "kmer::tests::static_pm_per_slot_fences_every_written_slot",
))

H = "crates/runner/src/harness.rs"
B = "crates/core/src/blocks.rs"
C = "crates/store/src/compare/mod.rs"
N = "crates/store/src/compare/noise.rs"
FRESH = ("pmscope", ("--test", "precision"), (
    "each_block_is_measured_on_fresh_pages_beside_the_previous_ones",
    "a_block_that_reuses_the_old_frames_puts_them_at_other_offsets",
))
SEEDS = ("pmscope-runner", ("--lib",), (
    "harness::tests::each_block_draws_its_own_orders_and_its_share",
))
MERGE = ("pmscope-core", ("--lib",), (
    "blocks::tests::blocks_merge_into_one_point",
    "blocks::tests::agreeing_blocks_give_a_narrow_interval",
    "blocks::tests::the_group_lends_its_spread_to_each_point",
))
PRIOR = ("pmscope-core", ("--lib",), (
    "stats::tests::a_few_points_outside_the_group_do_not_decide_its_prior",
    "stats::tests::the_prior_is_the_shared_variance_or_lends_fewer_degrees_of_freedom",
))
ROUNDS = ("pmscope-experiment", ("--lib",), (
    "suite::rounds::tests::rounds_take_every_step_in_turn",
))
TIED = ("pmscope-core", ("--lib",), (
    "summary::tests::the_tied_median_moves_with_the_share_on_each_step",
))
COMPARE = ("pmscope-store", ("--test", "compare_noise"), (
    "an_aa_comparison_calls_almost_nothing",
    "pooling_runs_resolves_more",
    "a_few_points_forty_percent_slower_are_called_worse",
    "a_uniform_bandwidth_loss_is_called_worse",
    "each_group_states_its_resolution",
    "one_block_a_side_needs_its_group_or_more_runs",
    "two_targets_of_one_run_are_paired_by_block",
    "the_wanted_resolution_only_labels_what_was_not_found",
    "a_side_is_the_geometric_mean_of_its_blocks",
))
NOISE = ("pmscope-store", ("--lib",), (
    "compare::noise::tests::the_spread_is_the_blocks_pooled_over_both_sides",
    "compare::noise::tests::paired_blocks_leave_out_what_both_sides_shared",
    "compare::noise::tests::a_per_run_floor_counts_runs_not_blocks",
))

# Issues 43, 44 and 46 (2026-11-30): the streamed out-group, chains side by side, the
# fence's cost, small multiples.
STREAM = ("pmscope-workload", ("--lib",), (
    "kmer::build::tests::streamed_inputs_mark_and_count_as_genomes_read_whole",
))
CHAINS = ("pmscope-loops", ("--lib",), (
    "chase::tests::parallel_chains_follow_disjoint_stretches_of_the_cycle",
))
FENCE = ("pmscope-core", ("--lib",), (
    "fence::tests::the_plus_f_option_against_the_same_option_without_the_fence",
))
CURVES = ("pmscope-report", ("--test", "report"), (
    "no_axis_draws_more_curves_than_a_reader_can_tell_apart",
))

# (name, file, original text, mutated text, (crate, test target, tests in the order run))
MUTATIONS = [
    ("stream: the k - 1 bases before a chunk's edge are not carried", f"{W}/build.rs",
     "                carry.extend_from_slice(&window[window.len().saturating_sub(k - 1)..]);\n",
     "", STREAM),
    ("stream: a record's skipped windows miscounted (half its k-mers subtracted)", f"{W}/build.rs",
     "    stats.skipped_kmers += (bases + 1).saturating_sub(k as u64) - valid;",
     "    stats.skipped_kmers += (bases + 1).saturating_sub(k as u64) - valid / 2;", STREAM),
    ("chains: spread from the chain's start, not from where the chase stands",
     "crates/loops/src/chase.rs",
     "chain::spread_slots(self.region, self.ws, &self.spec, n, self.position)",
     "chain::spread_slots(self.region, self.ws, &self.spec, n, 0)", CHAINS),
    ("chains: one cursor's loads only (a cursor skipped each round)", "crates/loops/src/arch/x86_64/chase.rs",
     "        for c in cursors.iter_mut() {",
     "        for c in cursors.iter_mut().skip(1) {", CHAINS),
    ("fence: x+F set against the bare option of another pattern", "crates/core/src/fence.rs",
     "        .find(|o| o.text(p::OPTION) == Some(bare) && o.text(p::PATTERN) == pattern)?;",
     "        .find(|o| o.text(p::OPTION) == Some(bare))?;", FENCE),
    ("curves: a probe's curves all on one axis", "crates/report/src/figures/probe.rs",
     "            for part in curves.chunks(MAX_CURVES) {",
     "            for part in curves.chunks(usize::MAX) {", CURVES),
    ("pool memory: flush_all skips the first line of each group", f"{SP}/pool_words.rs",
     "        for &i in words {\n            self.persister.flush_word(&all[i]);",
     "        for &i in words.iter().skip(1) {\n            self.persister.flush_word(&all[i]);", CHECK),
    ("pool memory: fence issues no fence", f"{SP}/pool_words.rs",
     "        self.counts.fence();\n        self.persister.fence_words(self.words());",
     "        self.counts.fence();", CHECK),
    ("pool memory: a single flush writes nothing back", f"{SP}/pool_words.rs",
     "        self.counts.flush();\n        self.persister.flush_word(&self.words()[i]);",
     "        self.counts.flush();", CHECK),
    ("persister: flush_word flushes nothing", "crates/persist/src/words.rs",
     "        self.flush(bytes);\n    }", "        let _ = bytes;\n    }", CHECK),
    ("persister: fence_words drains nothing", "crates/persist/src/words.rs",
     "        let _ = self.drain(bytes);", "        let _ = bytes;", CHECK),
    ("persister: the sfence drain is skipped", "crates/persist/src/strategy.rs",
     "            Drain::Fence(FenceKind::Sfence) => {\n                Sfence::fence();\n                Some(Drained::Fence)\n            }",
     "            Drain::Fence(FenceKind::Sfence) => None,", CHECK),
    ("table: a group's lines are not written back", f"{SP}/mod.rs",
     "        self.mem.flush_all(unpersisted.words());\n", "", CHECK),
    ("table: a group is not fenced", f"{SP}/mod.rs",
     "        self.mem.flush_all(unpersisted.words());\n        self.fence();",
     "        self.mem.flush_all(unpersisted.words());", CHECK),
    ("table: --fence per-slot groups its slots like per-group", f"{W}/table/mod.rs",
     "            Fence::PerSlot => 1,", "            Fence::PerSlot => Unpersisted::BATCH,", FENCE),
    ("table: a written slot's line is not recorded for write-back", f"{SP}/mod.rs",
     "        unpersisted.push(base + META);", "        let _ = (base, unpersisted);", CHECK),
    ("table: the resume word is not written back", f"{SP}/mod.rs",
     "        self.mem.store(H_DONE, genome as u64);\n        self.durable(H_DONE);",
     "        self.mem.store(H_DONE, genome as u64);\n        self.fence();", CHECK),
    ("table: the resume word is not fenced", f"{SP}/mod.rs",
     "    fn durable(&self, at: usize) {\n        self.mem.flush(at);\n        self.fence();",
     "    fn durable(&self, at: usize) {\n        self.mem.flush(at);", CHECK),
    ("table: k <= 32, publish before the key", f"{SP}/mod.rs",
     "                        for (j, &x) in kmer.0.iter().enumerate() {\n                            self.mem.store(base + j, x);\n                        }\n                        self.mem.store(at, VALID | tag | 1);",
     "                        self.mem.store(at, VALID | tag | 1);\n                        for (j, &x) in kmer.0.iter().enumerate() {\n                            self.mem.store(base + j, x);\n                        }", CHECK),
    ("table: k > 32, publish after the first key word", f"{SP}/mod.rs",
     "                        for (j, &x) in kmer.0.iter().enumerate() {\n                            self.mem.store(base + j, x);\n                        }\n                        self.mem.store(at, VALID | tag | 1);",
     "                        for (j, &x) in kmer.0.iter().enumerate() {\n                            self.mem.store(base + j, x);\n                            if j == 0 {\n                                self.mem.store(at, VALID | tag | 1);\n                            }\n                        }", CHECK),
    ("table: k > 64, publish after only the first two key words", f"{SP}/mod.rs",
     "                        for (j, &x) in kmer.0.iter().enumerate() {\n                            self.mem.store(base + j, x);\n                        }\n                        self.mem.store(at, VALID | tag | 1);",
     "                        for (j, &x) in kmer.0.iter().enumerate() {\n                            self.mem.store(base + j, x);\n                            if j == 1.min(W - 1) {\n                                self.mem.store(at, VALID | tag | 1);\n                            }\n                        }", WIDE),
    ("pool memory: flush_all writes back only the first 64 lines of each group", f"{SP}/pool_words.rs",
     "        for &i in words {\n            self.persister.flush_word(&all[i]);",
     "        for &i in words.iter().take(64) {\n            self.persister.flush_word(&all[i]);", GROUPS),
    ("header: the checksum covers only magic, version and K", f"{SP}/mod.rs",
     "    words\n        .iter()\n        .fold(Fnv1a::default(), |h, &w| h.word(w))",
     "    words\n        .iter()\n        .take(H_CAPACITY)\n        .fold(Fnv1a::default(), |h, &w| h.word(w))", HEADER),
    ("create: a new pool is named (synced and linked) before its header is written", f"{SP}/create.rs",
     "    let mut t = StaticPm::format(\n        mem,\n        header.k,\n        header.capacity,\n        header.strategy,\n        header.inputs,\n    );\n    name(t.mem.backing_mut())?;",
     "    let mut mem = mem;\n    name(mem.backing_mut())?;\n    let t = StaticPm::format(\n        mem,\n        header.k,\n        header.capacity,\n        header.strategy,\n        header.inputs,\n    );", CHECK),
    ("recover: `kmer recover` persists nothing", f"{SP}/create.rs",
     "    let persister = Persister::new(\n        PersistStrategy::Clflush,",
     "    let persister = Persister::new(\n        PersistStrategy::None,", CHECK),
    ("interrupt: the binned split does not poll the signal flag", f"{W}/binned.rs",
     "            if pmscope_sys::signal::received().is_some() {\n                break;\n            }\n            let i = next",
     "            let i = next", PHASES),
    ("interrupt: the binned count does not poll the signal flag", f"{W}/binned.rs",
     "            if pmscope_sys::signal::received().is_some() {\n                break;\n            }\n            w.bin(",
     "            w.bin(", PHASES),
    ("interrupt: the out-of-core split does not poll the signal flag", f"{W}/spill.rs",
     "            if stop.load(Ordering::Relaxed) || pmscope_sys::signal::received().is_some() {\n                break;\n            }\n            let gi",
     "            if stop.load(Ordering::Relaxed) {\n                break;\n            }\n            let gi", PHASES),
    ("interrupt: the out-of-core count does not poll the signal flag", f"{W}/spill.rs",
     "            if stop.load(Ordering::Relaxed) || pmscope_sys::signal::received().is_some() {\n                break;\n            }\n            let bins",
     "            if stop.load(Ordering::Relaxed) {\n                break;\n            }\n            let bins", PHASES),
    ("interrupt: a random chain's links do not poll the signal flag", "crates/loops/src/chain.rs",
     "        if stop_asked() {\n            return false;\n        }\n",
     "", PHASES),
    ("interrupt: a sequential chain's links do not poll the signal flag", "crates/loops/src/chain.rs",
     "        if j % LINK_CHUNK as usize == 0 && stop_asked() {\n            return Err(ChainError::Interrupted);\n        }\n",
     "", PHASES),
    ("interrupt: a latency repetition does not poll the signal flag between its pieces", "crates/experiment/src/measure.rs",
     "                left -= now;\n                pmscope_runner::interrupt::check()?;",
     "                left -= now;", PHASES),
    ("table: the count update as two stores (torn)", f"{SP}/mod.rs",
     "                    match self.mem.compare_exchange(at, m, counted + 1) {",
     "                    self.mem.store(at, counted);\n                    match self.mem.compare_exchange(at, counted, counted + 1) {", CHECK),
    ("header: the magic before the checksum", f"{SP}/mod.rs",
     "    for (i, &w) in fixed.iter().enumerate().skip(1) {",
     "    mem.store(H_MAGIC, MAGIC);\n    for (i, &w) in fixed.iter().enumerate().skip(1) {", CHECK),
    ("header: its line is not written back", f"{SP}/mod.rs",
     "    mem.flush(H_MAGIC);\n    mem.flush(H_DONE);", "    mem.flush(H_DONE);", CHECK),
    ("header: the resume word's line is not written back", f"{SP}/mod.rs",
     "    mem.flush(H_MAGIC);\n    mem.flush(H_DONE);", "    mem.flush(H_MAGIC);", CHECK),
    ("header: not fenced", f"{SP}/mod.rs",
     "    mem.flush(H_DONE);\n    mem.fence();\n}", "    mem.flush(H_DONE);\n}", CHECK),
    ("drivers: a worker's last group is not persisted (direct path)", f"{W}/build.rs",
     "            });\n            table.persist_deferred(&mut unpersisted);\n            if let Action::Insert(_) = action {",
     "            });\n            if let Action::Insert(_) = action {", CHECK),
    ("drivers: a bucket flush's group is not persisted (bucket path)", f"{W}/build.rs",
     "        ring.drain(|(k, h)| apply(&k, h));\n        table.persist_deferred(&mut unpersisted);",
     "        ring.drain(|(k, h)| apply(&k, h));", CHECK),
    ("job loop: a genome completed before its inserts", f"{W}/job.rs",
     "        let (_, p) = driver.insert_genome(table, g, (i + 1) as u32, k)?;\n        placements = p;\n        // Workers skip the rest of a genome once a signal arrives: not complete then.\n        interrupt::check()?;\n        table.health()?;\n        table.completed((i + 1) as u32);",
     "        table.completed((i + 1) as u32);\n        let (_, p) = driver.insert_genome(table, g, (i + 1) as u32, k)?;\n        placements = p;\n        interrupt::check()?;\n        table.health()?;", CHECK),
    ("recovery: claimed slots are not cleared", f"{SP}/recovery.rs",
     "        if found.cleared > 0 {\n            for slot", "        if false {\n            for slot", CHECK),
    ("recovery: a cleared claim is not written back", f"{SP}/recovery.rs",
     "                        self.mem.store(self.base(slot) + j, 0);\n                    }\n                    self.mem.flush(self.base(slot));",
     "                        self.mem.store(self.base(slot) + j, 0);\n                    }", CHECK),
    ("recovery: a claimed slot is taken for a broken one", f"{SP}/recovery.rs",
     "            if m & VALID == 0 {\n                r.cleared += 1;\n                continue;\n            }",
     "            if m & VALID == 0 {\n                r.corrupt += 1;\n                continue;\n            }", CHECK),
    ("recovery: holes are not closed", f"{SP}/recovery.rs",
     "                    Placement::Placed => continue,\n                    Placement::Hole(to) => {",
     "                    Placement::Placed | Placement::Hole(_) => continue,\n                    #[allow(unreachable_patterns)]\n                    Placement::Hole(to) => {", CHECK),
    ("recovery: a moved entry is not fenced before its old slot is cleared", f"{SP}/recovery.rs",
     "                        self.mem.store(dest + META, m);\n                        self.mem.flush(dest);\n                        self.fence();",
     "                        self.mem.store(dest + META, m);\n                        self.mem.flush(dest);", CHECK),
    ("recovery: a cleared slot is not written back", f"{SP}/recovery.rs",
     "            self.mem.store(base + j, 0);\n        }\n        self.mem.flush(base);\n        self.fence();",
     "            self.mem.store(base + j, 0);\n        }\n        self.fence();", CHECK),
    # The statistics of blocks and compare (issue 42): where a point's blocks are measured,
    # how they become its figure and interval, and how compare judges a difference.
    ("blocks: a block reuses the previous block's mapping", H,
     "    let mapping = match pmscope_mapping::map(spec, bytes, &opts) {",
     "    let mapping = match previous.mapping.take().map(Ok).unwrap_or_else(|| pmscope_mapping::map(spec, bytes, &opts)) {", FRESH),
    ("blocks: the old mapping is released before the new one is made", H,
     "        let hold = (targets.len() as u64 + 1).saturating_mul(bytes) <= opts.guard.limit;",
     "        let hold = false;", FRESH),
    ("blocks: pages first touched in a shuffled order", H,
     "        first_touch_order: FirstTouch::Ascending,",
     "        first_touch_order: FirstTouch::Shuffled(block.seed(0x00b1_0c4e) ^ block.index as u64),", FRESH),
    ("blocks: every block draws the same random orders", H,
     "        if self.index == 0 {\n            seed", "        if true {\n            seed", SEEDS),
    ("merge: the interval is the first block's repetitions", B,
     "    if blocks.len() > 1 {\n        let disturbed", "    if false {\n        let disturbed", MERGE),
    ("merge: the point is the first block's median", B,
     "        p50: geometric_mean(&blocks.iter().map(|b| b.median).collect::<Vec<_>>()),",
     "        p50: s[0].p50,", MERGE),
    ("interval: block medians pooled as one sample (standard error over every repetition)", B,
     "    let half = t_two_sided_critical(0.05, df) * (var / logs.len() as f64).sqrt();",
     "    let half = t_two_sided_critical(0.05, df) * (var / blocks.iter().map(|b| b.n).sum::<usize>() as f64).sqrt();", MERGE),
    ("interval: the spread between blocks is ignored", B,
     "    let (mean, var) = mean_var(&logs);\n    let df = (logs.len() - 1) as f64;",
     "    let (mean, var) = (mean_var(&logs).0, 0.0_f64);\n    let df = (logs.len() - 1) as f64;", MERGE),
    ("moderate: the group's spread is not lent", B,
     "        let prior = fit_variance_prior(&s2, &df, VARIANCE_FLOOR);",
     "        let prior = {\n            let _ = (&s2, &df);\n            None\n        };", MERGE),
    ("prior: fitted over every point, however far outside its group", "crates/core/src/stats.rs",
     "        .filter(|(_, e)| (lower..=upper).contains(*e))",
     "        .filter(|(_, e)| (lower..=upper).contains(*e) || e.is_finite())", PRIOR),
    ("prior: a point far above its group is moderated anyway", "crates/core/src/stats.rs",
     "    if df > 0.0 && s2.is_finite() && log_variance(s2, df) > prior.upper {",
     "    if df > 0.0 && s2.is_finite() && log_variance(s2, df) > prior.upper + 1e9 {", PRIOR),
    ("suite: each step's blocks in a row, not in rounds", "crates/experiment/src/suite/rounds.rs",
     "    for r in 0..blocks {\n        for (i, (name, in_blocks)) in steps.iter().enumerate() {",
     "    for (i, (name, in_blocks)) in steps.iter().enumerate() {\n        for r in 0..blocks {", ROUNDS),
    ("sampled: a median of single timings jumps by whole timer steps", "crates/core/src/summary.rs",
     "    let share = (n as f64 / 2.0 - below as f64) / ties;\n    v - down + (down + up) * share",
     "    let _ = (down, up, ties, below);\n    v", TIED),
    ("compare: no correction for the number of points (Holm removed)", C,
     "    let decisions = holm(&p_values, settings.alpha);",
     "    let decisions: Vec<_> = p_values.iter().map(|p| holm(std::slice::from_ref(p), settings.alpha).remove(0)).collect();", COMPARE),
    ("compare: only the first run of a side counts", N,
     "        for r in records {\n            let l = log_medians(r);",
     "        for r in records.iter().take(1) {\n            let l = log_medians(r);", COMPARE),
    ("compare: the spread is side A's alone", N,
     "    ((ss(a) + ss(b)) / df, df)", "    ((ss(a) + ss(a)) / df, df)", NOISE),
    ("compare: the group's spread is not lent", C,
     "        priors.insert(g.clone(), group_prior(&sides));",
     "        let _ = sides;\n        priors.insert(g.clone(), None);", COMPARE),
    ("compare: runs of one side paired block by block", N,
     "    a.runs == 1 && b.runs == 1 && a.logs.len() == b.logs.len()",
     "    a.logs.len() == b.logs.len()", COMPARE),
    ("compare: two targets of one run not paired", C,
     "    let pair = |a: &Side, b: &Side| !match_targets && pairable(a, b);",
     "    let pair = |a: &Side, b: &Side| false && !match_targets && pairable(a, b);", COMPARE),
]

def run(cmd, limit=None):
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    t = time.time()
    try:
        p = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True,
                           timeout=limit)
        return p.returncode, p.stdout + p.stderr, time.time() - t, False
    except subprocess.TimeoutExpired as e:
        return -1, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), time.time() - t, True

def test_cmd(crate, kind, name):
    return ["cargo", "test", "--profile", "mutation", "-p", crate, *kind, name, "--", "--exact"]

def tests(crate, kind, names, limit):
    """Runs each test in turn until one fails: (failed, hung, failing tests, seconds)."""
    t = time.time()
    for name in names:
        rc, log, _, hung = run(test_cmd(crate, kind, name), limit)
        if hung:
            return True, True, [name], time.time() - t
        if rc != 0:
            return True, False, re.findall(r"^test (\S+) \.\.\. FAILED", log, re.M) or [name], time.time() - t
    return False, False, [], time.time() - t

def build_cmd(crate, kind):
    return ["cargo", "test", "--profile", "mutation", "-p", crate, *kind, "--no-run"]

chosen = [m for m in MUTATIONS if not name_filter or re.search(name_filter, m[0])]
for c, kind in sorted({m[4][:2] for m in chosen}):
    rc, log, _, _ = run(build_cmd(c, kind))
    if rc != 0:
        sys.exit(f"mutations: the unmutated tree does not build:\n{log[-3000:]}")
for c, kind, names in sorted({m[4] for m in chosen}):
    if os.environ.get("PMSCOPE_MUTATION_NO_BASELINE"):
        break
    failed, _, which, secs = tests(c, kind, names, timeout)
    if failed:
        sys.exit(f"mutations: the unmutated tree fails {which}")
    print(f"baseline: {c} passes ({secs:.0f} s)", file=sys.stderr)

rows, missed = [], 0
for name, path, old, new, (crate, kind, filt) in chosen:
    full = os.path.join(scratch, path)
    original = open(full).read()
    if original.count(old) != 1:
        sys.exit(f"mutations: '{name}' does not apply to {path} (its text is not there once)")
    line = original[: original.index(old)].count("\n") + 1
    open(full, "w").write(original.replace(old, new))
    try:
        rc, log, _, _ = run(build_cmd(crate, kind))
        if rc != 0:
            sys.exit(f"mutations: '{name}' does not compile:\n{log[-3000:]}")
        caught, hung, failed, secs = tests(crate, kind, filt, timeout)
    finally:
        open(full, "w").write(original)
    missed += not caught
    by = ", ".join(t.split("::")[-1] for t in failed) or "-"
    if hung:
        by = f"{by} (hung: timeout)"
    rows.append(f"| {name} | `{path}:{line}` | {'caught' if caught else '**missed**'} | {by} | {secs:.1f} s |")
    print(rows[-1], flush=True)

table = ["| mutation | file:line | result | test that failed | test time |", "|---|---|---|---|---|"] + rows
open(out, "w").write("\n".join(table) + "\n")
print(f"\n{len(rows) - missed} of {len(rows)} mutations caught", file=sys.stderr)
sys.exit(1 if missed else 0)
PY
