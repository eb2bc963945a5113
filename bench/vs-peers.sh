#!/usr/bin/env bash
# vs-peers.sh — issue 29's acceptance in one run: vs-libc.sh, vs-likwid.sh and vs-stream.sh
# back to back, then one table of each op family's best pmscope op against every peer, at 1
# and 2 threads, from the scripts' `best` lines (bracketed ratios of typical repetitions: each
# pmscope run against the two peer runs around it, bench/lib.sh says why).
#
#   bench/vs-peers.sh [RUNS]         (default 5; about 30 min on a 2-CPU machine)
#
# The three scripts' full output goes to bench/out/peers-<UTC time>/ (kept out of git). The
# script takes /tmp/pmscope-bench.lock itself, so other bench scripts wait for it; do not
# wrap it in that lock. Environment: as the three scripts (STREAM_C, PMSCOPE_TARGET ...).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${1:-5}
out=bench/out/peers-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
exec 9>/tmp/pmscope-bench.lock
flock 9

echo "# $(cpu_name); flags: $(grep -m1 -ow 'avx512f' /proc/cpuinfo || grep -m1 -ow avx2 /proc/cpuinfo || echo sse2)$(grep -qw erms /proc/cpuinfo && echo ' erms')$(grep -qw fsrm /proc/cpuinfo && echo ' fsrm'); $(date -u '+%Y-%m-%d %H:%M UTC'); $RUNS runs; output in $out"
for script in vs-libc vs-likwid vs-stream; do
	echo "## bench/$script.sh $RUNS" >&2
	started=$(date +%s)
	bench/$script.sh "$RUNS" | tee "$out/$script.txt" >&2
	echo "## bench/$script.sh took $(($(date +%s) - started)) s" >&2
done

# One row per family, threads and peer: the family's best op against that peer.
{
	sed -n 's/^best \(fill\|copy\) *threads \([0-9]*\): \([^ ]*\) *against \([^ ]*\) *bracketed \([^ ]*\) (\([^ ]*\) kept.*/\1 \2 \3 C-library-\4 \5 \6/p' "$out/vs-libc.txt"
	sed -n 's/^best \(read\|fill\|copy\) *threads \([0-9]*\): \([^ ]*\) *against likwid \([^ ]*\) *bracketed \([^ ]*\) (\([^ ]*\) kept.*/\1 \2 \3 likwid-\4 \5 \6/p' "$out/vs-likwid.txt"
	sed -n 's/^best copy threads \([0-9]*\): \([^ ]*\) *against STREAM Copy bracketed \([^ ]*\) (\([^ ]*\) kept.*/copy \1 \2 STREAM-Copy \3 \4/p' "$out/vs-stream.txt"
} | sort -k1,1 -k2,2n -k4,4 >"$out/best.txt"

echo
printf '%-6s %-8s %-16s %-20s %9s %6s\n' family threads best_op peer bracketed kept
below=0
while read -r family threads op peer br kept; do
	mark=""
	if [ "$br" = n/a ] || awk -v r="$br" 'BEGIN { exit !(r < 1.00) }'; then mark="  <- below 1.00 (or no steady pair)" below=$((below + 1)); fi
	printf '%-6s %-8s %-16s %-20s %9s %6s%s\n' "$family" "$threads" "$op" "$peer" "$br" "$kept" "$mark"
done <"$out/best.txt"
rows=$(wc -l <"$out/best.txt")
if [ "$rows" -eq 0 ]; then
	echo "no best lines found in $out: see the scripts' output there" >&2
	exit 1
fi
if [ "$below" -eq 0 ]; then
	echo "every family's best op is at or above every peer (bracketed typical ratio >= 1.00, $rows rows)"
else
	echo "$below of $rows rows below 1.00 or without a steady pair"
fi
