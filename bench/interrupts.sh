#!/usr/bin/env bash
# interrupts.sh — how soon does pmscope stop after Ctrl-C or SIGTERM (issue 27)? Sends
# SIGINT or SIGTERM (alternately) at a random moment of each command's default run and
# times the exit. Every run must exit 130 (SIGINT) or 143 (SIGTERM), or 0 if it finished
# first; the figure is the time from the signal to the exit, and the goal is 0.5 s.
#
#   bench/interrupts.sh [N]        N interrupts per command (default 20)
#
# Commands: latency --full, bandwidth, inst, suite basic, and kmer count with each table
# (volatile, static-pm, tx-pm; default pools, and named pools on the disk this script is
# on, where tx-pm msyncs every insert) on three synthetic 4 Mbp genomes. Results go to a
# scratch store; the user's store is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
cargo build --release -q -p pmscope
PMSCOPE=$PWD/target/release/pmscope
SCRATCH=$(mktemp -d)
# Named pools on the disk (not tmpfs): each tx-pm insert msyncs there.
POOLS=$(mktemp -d -p "$PWD/target")
trap 'rm -rf "$SCRATCH" "$POOLS"' EXIT
POOL=$POOLS/interrupted.pool
export PMSCOPE_RESULTS=$SCRATCH/results.sqlite

"$PMSCOPE" kmer synth --length 4M --strains 2 --no-store "$SCRATCH" >/dev/null
mapfile -t G < <(ls "$SCRATCH"/*.fasta)

now() { date +%s.%N; }

# one NAME COMMAND...: N interrupts; prints the slowest stop and how many runs it stopped.
one() {
	local name=$1
	shift
	local worst=0 stopped=0 finished=0 i
	# The length of one uninterrupted run (at most 10 s) sets the window of the signals:
	# from 5 % to 90 % of it, at most 3.2 s in, so quick runs are hit mid-way too.
	rm -f "$POOL"
	local t0 full
	t0=$(now)
	timeout 10 "$@" >/dev/null 2>&1 || true
	full=$(python3 -c "print(min($(now) - $t0, 10.0))")
	for i in $(seq 1 "$N"); do
		rm -f "$POOL"
		local sig=INT want=130
		if [ $((i % 2)) = 0 ]; then sig=TERM want=143; fi
		"$@" >/dev/null 2>"$SCRATCH/err" &
		local pid=$!
		sleep "$(python3 -c "import random; print(round(random.uniform(0.05 * $full, min(0.9 * $full, 3.2)), 3))")"
		t0=$(now)
		kill -"$sig" "$pid" 2>/dev/null || true
		local code=0
		wait "$pid" || code=$?
		local took
		took=$(python3 -c "print(f'{$(now) - $t0:.3f}')")
		if [ "$code" = 0 ]; then
			finished=$((finished + 1))
			continue
		fi
		if [ "$code" != "$want" ]; then
			echo "$name: SIG$sig gave exit $code, not $want: $(tail -1 "$SCRATCH/err")" >&2
			exit 1
		fi
		stopped=$((stopped + 1))
		worst=$(python3 -c "print(max($worst, $took))")
	done
	printf '%-38s %3d stopped  %3d finished first  slowest stop %6.3f s\n' "$name" "$stopped" "$finished" "$worst"
	echo "$worst" >>"$SCRATCH/worst"
}

echo "# interrupts: $N per command, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
one "latency --full" "$PMSCOPE" latency --full
one "bandwidth" "$PMSCOPE" bandwidth
one "inst" "$PMSCOPE" inst
one "suite basic" "$PMSCOPE" suite basic
one "kmer count (volatile)" "$PMSCOPE" kmer count "${G[@]}"
one "kmer count --table static-pm" "$PMSCOPE" kmer count --table static-pm "${G[@]}"
one "kmer count --table tx-pm -t shm" "$PMSCOPE" kmer count --table tx-pm -t shm "${G[@]}"
one "kmer count --table static-pm --pool" "$PMSCOPE" kmer count --table static-pm --pool "$POOL" "${G[@]}"
one "kmer count --table tx-pm --pool (msync)" "$PMSCOPE" kmer count --table tx-pm --pool "$POOL" "${G[@]}"
echo "slowest stop of all: $(sort -g "$SCRATCH/worst" | tail -1) s (goal: 0.5 s)"
