#!/usr/bin/env bash
# interrupts.sh — how soon does pmscope stop after Ctrl-C or SIGTERM (issue 27)? Sends
# SIGINT or SIGTERM (alternately) at a random moment into each command's default run and
# times the exit. Every run must exit 130 (SIGINT) or 143 (SIGTERM), or 0 if it finished
# first; the figure is the time from the signal to the exit, and the goal is 0.5 s.
#
#   bench/interrupts.sh [N]        N interrupts per command (default 20)
#
# Commands: latency --full, bandwidth, inst, suite basic, and kmer count with each table
# (volatile, static-pm, tx-pm) on two synthetic 2 Mbp genomes, the persistent tables'
# pools on /dev/shm. Results go to a scratch store; the user's store is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
cargo build --release -q -p pmscope
PMSCOPE=$PWD/target/release/pmscope
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
export PMSCOPE_RESULTS=$SCRATCH/results.sqlite

python3 - "$SCRATCH" <<'EOF'
import random, sys
rng = random.Random(27)
for g in (1, 2):
    with open(f"{sys.argv[1]}/g{g}.fa", "w") as f:
        f.write(f">g{g}\n")
        seq = "".join(rng.choice("ACGT") for _ in range(2_000_000))
        for i in range(0, len(seq), 80):
            f.write(seq[i:i + 80] + "\n")
EOF
G="$SCRATCH/g1.fa $SCRATCH/g2.fa"

now() { date +%s.%N; }

# one NAME COMMAND...: N interrupts; prints the slowest stop and how many runs it stopped.
one() {
	local name=$1
	shift
	local worst=0 stopped=0 finished=0 i
	for i in $(seq 1 "$N"); do
		rm -f /dev/shm/pmscope-interrupts.pool
		local sig=INT want=130
		if [ $((i % 2)) = 0 ]; then sig=TERM want=143; fi
		"$@" >/dev/null 2>"$SCRATCH/err" &
		local pid=$!
		# A random moment in the first 0.2-3.2 s: most runs are mid-point then.
		sleep "$(python3 -c "import random; print(round(random.uniform(0.2, 3.2), 3))")"
		local t0
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
	printf '%-34s %3d stopped  %3d finished first  slowest stop %6.3f s\n' "$name" "$stopped" "$finished" "$worst"
	echo "$worst" >>"$SCRATCH/worst"
}

echo "# interrupts: $N per command, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
one "latency --full" "$PMSCOPE" latency --full
one "bandwidth" "$PMSCOPE" bandwidth
one "inst" "$PMSCOPE" inst
one "suite basic" "$PMSCOPE" suite basic
one "kmer count --table volatile" "$PMSCOPE" kmer count $G
one "kmer count --table static-pm" "$PMSCOPE" kmer count --table static-pm $G
one "kmer count --table tx-pm" "$PMSCOPE" kmer count --table tx-pm $G
one "kmer count --table static-pm --pool" "$PMSCOPE" kmer count --table static-pm --pool /dev/shm/pmscope-interrupts.pool $G
one "kmer count --table tx-pm --pool" "$PMSCOPE" kmer count --table tx-pm --pool /dev/shm/pmscope-interrupts.pool $G
rm -f /dev/shm/pmscope-interrupts.pool
echo "slowest stop of all: $(sort -g "$SCRATCH/worst" | tail -1) s (goal: 0.5 s)"
