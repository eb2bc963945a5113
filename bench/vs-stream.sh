#!/usr/bin/env bash
# vs-stream.sh — pmscope's copy ops (copy, ntcopy, ntcopy-pages, movsb-copy) against STREAM's
# Copy on the same machine, side by side (issue 11: pmscope's best copy must reach STREAM
# Copy; issue 45: on every CPU, with the glibc path STREAM's Copy takes named).
#
# STREAM is built from its published source outside the repository (never copied into it):
# STREAM_C=/path/to/stream.c, or it is downloaded from the author's site into the cache
# directory. It is compiled with gcc -O3 -march=native -fopenmp, STREAM_ARRAY_SIZE
# elements per array (default 200 000 000: 1.6 GB each, far beyond any cache), and run with
# OMP_NUM_THREADS=1 and 2 (OMP_PROC_BIND=close), alternating with pmscope. Both count a copy's
# bytes the same way: read plus written (STREAM's 16 bytes per element).
#
# Like is compared with like. STREAM's headline figure is its *best* rate over 19 timed
# iterations, so pmscope runs 19 repetitions of the same length as one STREAM iteration
# (--duration 0.15) and its best (`max`) is set against STREAM's best; the *typical* figures
# are pmscope's median repetition against STREAM's rate at its average time. Each line gives
# the medians over the runs and the ratio of those medians, pmscope / STREAM. The runs go
# STREAM, then each op and STREAM in turn RUNS times, and the `bracketed` column
# set each pmscope run against the mean of the STREAM runs around it, kept only where those
# two agree within 10 % (bench/lib.sh says why): the median ratio and how many were kept.
# The `best` line sets the best op (by bracketed typical ratio) against
# STREAM Copy: issue 29's acceptance is >= 1.00 there. It also carries STREAM's A/A range in
# the run (bench/lib.sh, peer_aa).
#
#   bench/vs-stream.sh [RUNS]        (default 3)
#
# PMSCOPE_THREADS=1 narrows the thread counts (default "1 2"), PMSCOPE_OPS the ops.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${1:-3}
TARGET=${PMSCOPE_TARGET:-dram:4k}
N=${STREAM_ARRAY_SIZE:-200000000}
THREADS=${PMSCOPE_THREADS:-1 2}
# Every copy op pmscope has (movsb-copy needs ERMS); PMSCOPE_OPS narrows them.
OPS=${PMSCOPE_OPS:-copy ntcopy ntcopy-pages$(grep -qw erms /proc/cpuinfo && echo ' movsb-copy')}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/pmscope-bench/stream
mkdir -p "$CACHE"

src=${STREAM_C:-$CACHE/stream.c}
if [ ! -f "$src" ]; then
	echo "downloading STREAM's stream.c into $CACHE" >&2
	if ! curl -fsSL -o "$src.part" https://www.cs.virginia.edu/stream/FTP/Code/stream.c; then
		rm -f "$src.part"
		echo "vs-stream.sh: could not download stream.c from www.cs.virginia.edu; set STREAM_C=/path/to/stream.c (the same file is in github.com/jeffhammond/STREAM)" >&2
		exit 1
	fi
	mv "$src.part" "$src"
fi
bin=$CACHE/stream-$N
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
	gcc -O3 -march=native -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE="$N" -DNTIMES=20 \
		"$src" -o "$bin"
fi
cargo build --release -q -p pmscope
PMSCOPE=./target/release/pmscope
# vs-peers.sh sets it to have every peer ready before the first timed run.
if [ "${PMSCOPE_PREPARE_ONLY:-0}" = 1 ]; then exit 0; fi

stream_copy_gbs() { # threads -> "best typical" GB/s (typical: 16 bytes x N at the average time)
	OMP_NUM_THREADS=$1 OMP_PROC_BIND=close "$bin" |
		awk -v n="$N" '/^Copy:/ {printf "%s %s\n", $2 / 1000, 16 * n / $3 / 1e9}'
}

pmscope_gbs() { # op threads -> "best typical" GB/s
	"$PMSCOPE" bandwidth -t "$TARGET" --ops "$1" --pattern seq --sizes 64KiB --threads "$2" \
		--region 1GiB --duration 0.15 --reps 19 --json --no-store 2>/dev/null |
		python3 -c 'import json,sys; s=[json.loads(l) for l in sys.stdin][-1]["summary"]; print(s["max"], s["p50"])'
}

echo "# $(cpu_name), STREAM $N elements per array (gcc -O3 -march=native -fopenmp, best of 19), pmscope $TARGET 1 GiB per thread (19 x 0.15 s), $RUNS pmscope runs of each op bracketed by $((RUNS + 1)) STREAM runs"
# STREAM's Copy is a call of memcpy per thread over its share of the array (gcc turns the loop
# into one: issue 45 read `jmp memcpy@plt` in its OpenMP body), so its path is glibc's.
for threads in $THREADS; do
	echo "# STREAM Copy at $threads thread(s): $(glibc_copy_path $((8 * N / threads)))"
done
printf '%-8s %-8s %-13s %8s %8s %7s %16s   %s\n' threads figure op pmscope STREAM ratio bracketed "runs (pmscope; STREAM)"
for threads in $THREADS; do
	declare -A pb=() pt=()
	read -r b t <<<"$(stream_copy_gbs "$threads")"
	sb=("$b") st=("$t")
	for _ in $(seq "$RUNS"); do
		for op in $OPS; do
			read -r b t <<<"$(pmscope_gbs "$op" "$threads")"
			pb[$op]+="$b " pt[$op]+="$t "
		done
		read -r b t <<<"$(stream_copy_gbs "$threads")"; sb+=("$b"); st+=("$t")
	done
	lines=()
	for figure in best typical; do
		if [ $figure = best ]; then s=("${sb[@]}"); else s=("${st[@]}"); fi
		sm=$(printf '%s\n' "${s[@]}" | median)
		for op in $OPS; do
			if [ $figure = best ]; then read -ra v <<<"${pb[$op]}"; else read -ra v <<<"${pt[$op]}"; fi
			vm=$(printf '%s\n' "${v[@]}" | median)
			read -r br k of <<<"$(bracketed "${s[@]}" -- "${v[@]}")"
			printf '%-8s %-8s %-13s %8.2f %8.2f %7s %16s   %s; %s\n' "$threads" "$figure" "$op" "$vm" "$sm" \
				"$(ratio "$vm" "$sm")" "$br ($k/$of)" "${v[*]}" "${s[*]}"
			[ $figure = typical ] && lines+=("$op $br $k/$of")
		done
	done
	# The typical figure's bracketed ratios against STREAM's typical runs decide the best op.
	peak=$(printf '%s\n' "${st[@]}" | largest)
	aa=$(peer_aa "${st[@]}")
	for l in "${lines[@]}"; do
		read -r op br kept <<<"$l"
		echo "copy STREAM-Copy $op $br $kept $peak $aa"
	done | family_best "$threads"
	unset pb pt
done
