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
CHECK = ("pmscope-workload", (
    "kmer::table::crash_check::every_crash_image_of_the_production_path_recovers_one_word_keys",
    "kmer::table::crash_check::every_crash_image_of_the_production_path_recovers_two_word_keys",
    "kmer::table::crash_check::interleaved_inserts_of_two_workers_recover",
))
# --fence per-slot is a cost, not a correctness, choice (a group of one is as crash-consistent
# as a group of 256), so the crash checker cannot tell the two apart: the test that counts
# a fence per written slot can.
FENCE = ("pmscope-workload", (
    "kmer::tests::static_pm_per_slot_fences_every_written_slot",
))

# (name, file, original text, mutated text, (crate, test filter))
MUTATIONS = [
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
     "            }\n            table.persist_deferred(&mut unpersisted);\n            if let Action::Insert(_) = action {\n                table.add_part_counts(self.homes[w], applied, count);\n            }\n            count\n        })?;\n        Ok((counts.iter().sum(), placements))\n    }\n\n    /// Inserts every k-mer",
     "            }\n            if let Action::Insert(_) = action {\n                table.add_part_counts(self.homes[w], applied, count);\n            }\n            count\n        })?;\n        Ok((counts.iter().sum(), placements))\n    }\n\n    /// Inserts every k-mer", CHECK),
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

def test_cmd(crate, name):
    return ["cargo", "test", "--profile", "mutation", "-p", crate, "--lib", name, "--", "--exact"]

def tests(crate, names, limit):
    """Runs each test in turn until one fails: (failed, hung, failing tests, seconds)."""
    t = time.time()
    for name in names:
        rc, log, _, hung = run(test_cmd(crate, name), limit)
        if hung:
            return True, True, [name], time.time() - t
        if rc != 0:
            return True, False, re.findall(r"^test (\S+) \.\.\. FAILED", log, re.M) or [name], time.time() - t
    return False, False, [], time.time() - t

def build_cmd(crate):
    return ["cargo", "test", "--profile", "mutation", "-p", crate, "--lib", "--no-run"]

crates = sorted({m[4][0] for m in MUTATIONS})
for c in crates:
    rc, log, _, _ = run(build_cmd(c))
    if rc != 0:
        sys.exit(f"mutations: the unmutated tree does not build:\n{log[-3000:]}")
for c, names in sorted({m[4] for m in MUTATIONS}):
    if os.environ.get("PMSCOPE_MUTATION_NO_BASELINE"):
        break
    failed, _, which, secs = tests(c, names, timeout)
    if failed:
        sys.exit(f"mutations: the unmutated tree fails {which}")
    print(f"baseline: {c} passes ({secs:.0f} s)", file=sys.stderr)

rows, missed = [], 0
for name, path, old, new, (crate, filt) in MUTATIONS:
    if name_filter and not re.search(name_filter, name):
        continue
    full = os.path.join(scratch, path)
    original = open(full).read()
    if original.count(old) != 1:
        sys.exit(f"mutations: '{name}' does not apply to {path} (its text is not there once)")
    line = original[: original.index(old)].count("\n") + 1
    open(full, "w").write(original.replace(old, new))
    try:
        rc, _, _, _ = run(build_cmd(crate))
        if rc != 0:
            sys.exit(f"mutations: '{name}' does not compile")
        caught, hung, failed, secs = tests(crate, filt, timeout)
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
