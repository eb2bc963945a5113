#!/usr/bin/env bash
# vs-peers.sh — issue 29's acceptance in one run: vs-libc.sh, vs-likwid.sh and vs-stream.sh
# back to back, then one table of each op family's best pmscope op against every peer, at 1
# and 2 threads, from the scripts' `best` lines (bracketed ratios of typical repetitions: each
# pmscope run against the two peer runs around it, bench/lib.sh says why). Each row also
# shows the peer's A/A range in the same run, the peer against itself (peer_aa): a row below
# 1.00 is marked as inside that range (parity within this run's noise) or below it; the
# verdict line stays literal, every row >= 1.00.
#
#   bench/vs-peers.sh [RUNS]         (default 5; about 27 min on a 2-CPU machine, 40 for 7)
#
# The three scripts' full output goes to bench/out/peers-<UTC time>/ (kept out of git). The
# script takes /tmp/pmscope-bench.lock itself, so other bench scripts wait for it; do not
# wrap it in that lock. Environment: as the three scripts (STREAM_C, PMSCOPE_TARGET ...).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${1:-5}
exec 9>/tmp/pmscope-bench.lock
flock 9

# Every peer built or installed first: a missing STREAM source must not end the run after
# the two scripts before it have spent 20 minutes.
for script in vs-libc vs-likwid vs-stream; do
	PMSCOPE_PREPARE_ONLY=1 bench/$script.sh "$RUNS" >&2
done
out=bench/out/peers-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
echo "# $(cpu_name); flags: $(grep -m1 -ow 'avx512f' /proc/cpuinfo || grep -m1 -ow avx2 /proc/cpuinfo || echo sse2)$(grep -qw erms /proc/cpuinfo && echo ' erms')$(grep -qw fsrm /proc/cpuinfo && echo ' fsrm'); $(date -u '+%Y-%m-%d %H:%M UTC'); $RUNS runs; output in $out"
for script in vs-libc vs-likwid vs-stream; do
	echo "## bench/$script.sh $RUNS" >&2
	started=$(date +%s)
	bench/$script.sh "$RUNS" | tee "$out/$script.txt" >&2
	echo "## bench/$script.sh took $(($(date +%s) - started)) s" >&2
done

acceptance_table "$out"
