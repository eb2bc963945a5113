#!/usr/bin/env bash
# aa-gate.sh — how often the regression gate cries wolf, and whether it still sees a real change
# (issue 25).
#
# A/A: PAIRS pairs of back-to-back runs of the same study on the same target (same binary,
# nothing changed between them), each pair compared with `pmscope compare A B --fail-above 10`.
# A gate that holds between runs exits 0 on (almost) every pair and calls (almost) no point
# better or worse. Printed per pair: the gate's exit code and the verdicts; then the totals.
#
# Power: two comparisons where a real difference exists, each of which must be called worse:
#   * random dependent-load latency at 512 MiB (>= 4x the LLC of today's CPUs), dram:thp
#     against dram:4k in one run (`compare --targets`): 4 KiB pages miss the TLB;
#   * sequential bandwidth on CPU 0, quiet, then again with a competing memory-bound copy on
#     the other CPU (skipped on a machine with one CPU).
#
# Everything goes to a temporary results store; nothing is written to the user's.
#
#   bench/aa-gate.sh [PAIRS]              (default 10)
#   STUDY="suite table5" TARGET=dram:4k bench/aa-gate.sh 20
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-10}
STUDY=${STUDY:-suite table5}
TARGET=${TARGET:-dram:4k}
FAIL_ABOVE=${FAIL_ABOVE:-10}
cargo build --release -q -p pmscope
PMSCOPE=$PWD/target/release/pmscope
store_dir=$(mktemp -d)
trap 'rm -rf "$store_dir"; [ -n "${competitor:-}" ] && kill "$competitor" 2>/dev/null || true' EXIT
export PMSCOPE_RESULTS=$store_dir/results.sqlite

# The verdict counts of one comparison, from its JSON Lines: "better worse within unresolvable".
verdicts() {
	python3 -c '
import json, sys
n = {"better": 0, "worse": 0, "within_noise": 0, "not_resolvable": 0}
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"):
        continue
    p = json.loads(line)
    v = p.get("verdict")
    if v in n:
        n[v] += 1
print(n["better"], n["worse"], n["within_noise"], n["not_resolvable"])'
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# A/A: $PAIRS pairs of back-to-back '$STUDY -t $TARGET', each compared with --fail-above $FAIL_ABOVE"
printf '%-5s %-9s %7s %7s %7s %13s %6s\n' pair gate-exit better worse within unresolvable load
passed=0
tb=0 tw=0 tn=0 tu=0
for i in $(seq 1 "$PAIRS"); do
	# shellcheck disable=SC2086 # STUDY is a command and its words
	$PMSCOPE $STUDY -t "$TARGET" --tag "aa$i-a" >/dev/null 2>&1
	# shellcheck disable=SC2086
	$PMSCOPE $STUDY -t "$TARGET" --tag "aa$i-b" >/dev/null 2>&1
	set +e
	$PMSCOPE compare "aa$i-a" "aa$i-b" --fail-above "$FAIL_ABOVE" >/dev/null 2>&1
	gate=$?
	set -e
	read -r b w n u < <($PMSCOPE compare "aa$i-a" "aa$i-b" --json 2>/dev/null | verdicts)
	[ "$gate" -eq 0 ] && passed=$((passed + 1))
	tb=$((tb + b)) tw=$((tw + w)) tn=$((tn + n)) tu=$((tu + u))
	printf '%-5s %-9s %7s %7s %7s %13s %6s\n' "$i" "$gate" "$b" "$w" "$n" "$u" "$(cut -d' ' -f1 /proc/loadavg)"
done
total=$((tb + tw + tn + tu))
called=$(awk -v a="$tb" -v b="$tw" -v t="$total" 'BEGIN { printf "%.1f", t ? 100 * (a + b) / t : 0 }')
echo "A/A: gate passed $passed of $PAIRS pairs (acceptance: >= 90 %); $((tb + tw)) of $total points called better or worse ($called %, acceptance: <= 5 %); $tu not resolvable"

echo "# power: differences that exist must be called worse"
$PMSCOPE latency -t dram:4k -t dram:thp --sizes 512MiB --pattern rand --tag power-pages >/dev/null 2>&1
read -r b w n u < <($PMSCOPE compare --targets power-pages dram:thp dram:4k --json 2>/dev/null | verdicts)
echo "random latency at 512MiB, dram:thp -> dram:4k: $w worse, $b better, $n within noise, $u not resolvable (expect the dependent-load point worse)"

if [ "$(nproc)" -ge 2 ]; then
	bw=(bandwidth -t "$TARGET" --cpus 0 --threads 1 --ops read,write,copy --pattern seq --sizes 64KiB
		--region 1GiB --duration 0.2 --reps 5)
	$PMSCOPE "${bw[@]}" --tag power-quiet >/dev/null 2>&1
	$PMSCOPE bandwidth -t "$TARGET" --cpus 1 --threads 1 --ops copy --region 2GiB --duration 600 --reps 1 --no-store >/dev/null 2>&1 &
	competitor=$!
	sleep 3
	$PMSCOPE "${bw[@]}" --tag power-loaded >/dev/null 2>&1
	kill "$competitor" 2>/dev/null || true
	wait "$competitor" 2>/dev/null || true
	competitor=
	set +e
	$PMSCOPE compare power-quiet power-loaded --fail-above "$FAIL_ABOVE" >/dev/null 2>&1
	gate=$?
	set -e
	read -r b w n u < <($PMSCOPE compare power-quiet power-loaded --json 2>/dev/null | verdicts)
	echo "bandwidth quiet -> with a competing copy on CPU 1: gate exit $gate (expect 1); $w worse, $b better, $n within noise, $u not resolvable"
else
	echo "bandwidth with a competing load: not run (one CPU)"
fi
