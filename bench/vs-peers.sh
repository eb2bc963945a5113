#!/usr/bin/env bash
# vs-peers.sh — issue 29's acceptance in one run: vs-libc.sh, vs-likwid.sh and vs-stream.sh
# back to back, then one table of each op family's best pmscope op against every peer, at 1
# and 2 threads, from the scripts' `best` lines (bracketed ratios of typical repetitions: each
# pmscope run against the two peer runs around it, bench/lib.sh says why).
#
#   bench/vs-peers.sh [RUNS]         (default 5; about 27 min on a 2-CPU machine)
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

acceptance_table "$out"
