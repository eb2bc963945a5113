#!/usr/bin/env bash
# vs-libc.sh — pmscope's writing and copying ops against the C library's large memset and
# memcpy on the same machine, side by side (issue 29: every op's best variant must reach the
# best peer).
#
# The peer is a few lines of C (below), compiled outside the repository into the cache
# directory with gcc -O2 -pthread: THREADS pthreads pinned to CPUs 0, 1, ..., each with its
# own 1 GiB buffer (MADV_NOHUGEPAGE, as pmscope's dram:4k) first touched by itself; in each
# of REPS repetitions (after a dropped warm-up) every thread runs memset over its 1 GiB, or
# memcpy of its first 512 MiB into its second, again and again for 0.15 s. At these sizes
# glibc's memcpy takes its non-temporal large-copy loop (beyond
# __x86_shared_non_temporal_threshold) and its memset `rep stosb` (ERMS) or vector stores.
# Bytes are counted as pmscope counts them: a copy's reads plus its writes, a fill's writes.
# A repetition's rate is every thread's bytes over the longest thread's time, as pmscope,
# likwid-bench and STREAM count it, not the sum of each thread's own rate: the threads start
# together, but a 1 GiB memset call ends a thread's window up to one call late, and when the
# host's memory is contended the thread still running has it alone for that time (summing
# the threads' rates read 29.4 GB/s where bytes over time read 27.6, 2 threads, 2026-11-27).
#
# pmscope runs the same shape: --region 1GiB per thread, seq, 64 KiB accesses, REPS x 0.15 s.
# Each figure is the best repetition and the typical (median) one. The runs go peer, then
# each variant followed by the peer, RUNS times over; each line gives the medians over the
# runs, their ratios to the peer's medians, and `bracketed`: the median over the variant's
# runs of its figure over the mean of the two peer runs around it, kept only where those two
# agree within 10 % (bench/lib.sh says why; `kept` counts them). Families: fill (write,
# stosb-write, ntstore and ntstore-ahead) against memset; copy (copy, movsb-copy, ntcopy and
# ntcopy-pages) against memcpy. The `best` line of each family sets its best op (by
# bracketed typical ratio) against the peer: the acceptance of issue 29 is >= 1.00 there.
# It also carries the peer's A/A range in the run (bench/lib.sh, peer_aa).
#
#   bench/vs-libc.sh [RUNS]          (default 3)
#
# PMSCOPE_WIDTHS="64 32" runs each vector op at those widths (default: each op's own default
# width, as pmscope picks it without --width: the widest, ntcopy-pages glibc's 32 bytes);
# PMSCOPE_THREADS="1" narrows the thread counts (default "1 2"). Take the bench lock on a
# shared machine: flock /tmp/pmscope-bench.lock bench/vs-libc.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${1:-3}
TARGET=${PMSCOPE_TARGET:-dram:4k}
THREADS=${PMSCOPE_THREADS:-1 2}
REPS=${PMSCOPE_REPS:-9}
DURATION=0.15
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/pmscope-bench/libc
mkdir -p "$CACHE"
if grep -q avx512f /proc/cpuinfo; then WIDEST=64; elif grep -q avx2 /proc/cpuinfo; then WIDEST=32; else WIDEST=16; fi
WIDTHS=${PMSCOPE_WIDTHS:-default}
if grep -qw erms /proc/cpuinfo; then STRING_OPS=1; else STRING_OPS=0; fi

src=$CACHE/libcbench.c
cat >"$src.new" <<'EOF'
// libcbench: large memcpy/memset of the C library on 1..n pinned pthreads, each on its own
// buffer first touched by itself. Prints "best median" GB/s over the repetitions.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static int op_copy, nthreads, reps;
static size_t bytes;
static double duration, *moved_by, *secs_of;
static pthread_barrier_t bar;
static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}
static void *run(void *arg) {
	long id = (long)arg;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(id, &s);
	if (pthread_setaffinity_np(pthread_self(), sizeof s, &s)) { fprintf(stderr, "cannot pin to CPU %ld\n", id); exit(1); }
	char *b = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED) { perror("mmap"); exit(1); }
	madvise(b, bytes, MADV_NOHUGEPAGE);
	memset(b, 1, bytes);
	size_t half = bytes / 2;
	for (int r = -1; r < reps; r++) { // r = -1: the dropped warm-up
		pthread_barrier_wait(&bar);
		double t0 = now(), t, moved = 0;
		do {
			if (op_copy) { memcpy(b + half, b, half); moved += 2.0 * half; }
			else { memset(b, 0x5a ^ (r & 0x3f), bytes); moved += bytes; }
			__asm__ volatile("" ::: "memory");
			t = now();
		} while (t - t0 < duration);
		if (r >= 0) { moved_by[r * nthreads + id] = moved; secs_of[r * nthreads + id] = t - t0; }
	}
	return 0;
}
static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}
int main(int argc, char **argv) {
	if (argc != 6) { fprintf(stderr, "usage: libcbench memcpy|memset THREADS BYTES_PER_THREAD SECONDS REPS\n"); return 2; }
	op_copy = !strcmp(argv[1], "memcpy");
	nthreads = atoi(argv[2]);
	bytes = strtoull(argv[3], 0, 0);
	duration = atof(argv[4]);
	reps = atoi(argv[5]);
	if (nthreads < 1 || nthreads > 256 || reps < 1) return 2;
	moved_by = calloc((size_t)reps * nthreads, sizeof *moved_by);
	secs_of = calloc((size_t)reps * nthreads, sizeof *secs_of);
	pthread_barrier_init(&bar, 0, nthreads);
	pthread_t th[256];
	for (long i = 0; i < nthreads; i++) pthread_create(&th[i], 0, run, (void *)i);
	for (int i = 0; i < nthreads; i++) pthread_join(th[i], 0);
	double *sum = calloc(reps, sizeof *sum); // GB/s of each repetition: bytes over the longest time
	for (int r = 0; r < reps; r++) {
		double bytes_moved = 0, longest = 0;
		for (int i = 0; i < nthreads; i++) {
			bytes_moved += moved_by[r * nthreads + i];
			if (secs_of[r * nthreads + i] > longest) longest = secs_of[r * nthreads + i];
		}
		sum[r] = bytes_moved / longest / 1e9;
	}
	qsort(sum, reps, sizeof *sum, cmp);
	printf("%.3f %.3f\n", sum[reps - 1], reps % 2 ? sum[reps / 2] : (sum[reps / 2 - 1] + sum[reps / 2]) / 2);
	return 0;
}
EOF
if ! cmp -s "$src.new" "$src"; then mv "$src.new" "$src"; else rm "$src.new"; fi
bin=$CACHE/libcbench
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
	gcc -O2 -pthread "$src" -o "$bin"
fi
cargo build --release -q -p pmscope
PMSCOPE=./target/release/pmscope
# vs-peers.sh sets it to have every peer ready before the first timed run.
if [ "${PMSCOPE_PREPARE_ONLY:-0}" = 1 ]; then exit 0; fi

pmscope_gbs() { # op width|default threads -> "best typical" GB/s
	local width=()
	[ "$2" = default ] || width=(--width "$2")
	"$PMSCOPE" bandwidth -t "$TARGET" --ops "$1" "${width[@]}" --pattern seq --sizes 64KiB \
		--threads "$3" --region 1GiB --duration "$DURATION" --reps "$REPS" --precision 0 --json --no-store 2>/dev/null |
		python3 -c 'import json,sys; s=[json.loads(l) for l in sys.stdin][-1]["summary"]; print(s["max"], s["p50"])'
}

# The variants: op:width (the string ops have no vector width; they run once).
variants() { # family
	local ops
	if [ "$1" = fill ]; then ops="write ntstore ntstore-ahead"; else ops="copy ntcopy ntcopy-pages"; fi
	for op in $ops; do for w in $WIDTHS; do echo "$op:$w"; done; done
	if [ "$STRING_OPS" = 1 ]; then
		if [ "$1" = fill ]; then echo "stosb-write:$WIDEST"; else echo "movsb-copy:$WIDEST"; fi
	fi
}

vname() { # op:width -> how the lines name it: the width only where several are run (the
	# string ops have none)
	case ${1%%:*} in
	stosb-write | movsb-copy) echo "${1%%:*}" ;;
	*) if [ "$(wc -w <<<"$WIDTHS")" -gt 1 ]; then echo "${1%%:*}/${1#*:}"; else echo "${1%%:*}"; fi ;;
	esac
}

echo "# $(cpu_name), $(ldd --version | head -1 | sed 's/^ldd //'), pmscope $TARGET, 1 GiB per thread, best/typical of $REPS x $DURATION s, $RUNS runs of each variant, each between two peer runs"
# The peer copies the first 512 MiB of its buffer into the second half in one call.
echo "# the peer's memcpy: $(glibc_copy_path $((512 << 20)))"
printf '%-7s %-6s %-16s %8s %8s %-7s %8s %8s %7s %7s %9s %9s %5s\n' threads family variant best typical peer best typical b/peer t/peer b_brack t_brack kept
for threads in $THREADS; do
	for family in fill copy; do
		if [ $family = fill ]; then peer=memset; else peer=memcpy; fi
		mapfile -t vs < <(variants $family)
		declare -A B=() T=() TB=() TT=()
		read -r b t <<<"$("$bin" $peer "$threads" $((1 << 30)) $DURATION "$REPS")"
		pb=("$b") pt=("$t")
		for _ in $(seq "$RUNS"); do
			for v in "${vs[@]}"; do
				read -r b t <<<"$(pmscope_gbs "${v%%:*}" "${v#*:}" "$threads")"
				B[$v]="${B[$v]:-} $b" T[$v]="${T[$v]:-} $t"
				before_b=${pb[-1]} before_t=${pt[-1]}
				read -r after_b after_t <<<"$("$bin" $peer "$threads" $((1 << 30)) $DURATION "$REPS")"
				pb+=("$after_b") pt+=("$after_t")
				TB[$v]+="$before_b $b $after_b"$'\n' TT[$v]+="$before_t $t $after_t"$'\n'
			done
		done
		peerb=$(printf '%s\n' "${pb[@]}" | median)
		peert=$(printf '%s\n' "${pt[@]}" | median)
		peak=$(printf '%s\n' "${pt[@]}" | largest)
		aa=$(peer_aa "${pt[@]}")
		rows=()
		for v in "${vs[@]}"; do
			mb=$(printf '%s\n' ${B[$v]} | median)
			mt=$(printf '%s\n' ${T[$v]} | median)
			read -r brb _ _ <<<"$(printf '%s' "${TB[$v]}" | bracket_triples)"
			read -r brt kept of <<<"$(printf '%s' "${TT[$v]}" | bracket_triples)"
			printf '%-7s %-6s %-16s %8.2f %8.2f %-7s %8.2f %8.2f %7s %7s %9s %9s %5s\n' "$threads" $family "$(vname "$v")" \
				"$mb" "$mt" $peer "$peerb" "$peert" "$(ratio "$mb" "$peerb")" "$(ratio "$mt" "$peert")" "$brb" "$brt" "$kept/$of"
			rows+=("$family libc-$peer $(vname "$v") $brt $kept/$of $peak $aa")
		done
		printf '%s\n' "${rows[@]}" | family_best "$threads"
		unset B T TB TT
	done
done
