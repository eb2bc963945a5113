#!/usr/bin/env bash
# vs-stream.sh — pmscope's copy and ntcopy against STREAM's Copy on the same machine, side by
# side (issue 11: pmscope's best copy must reach STREAM Copy).
#
# STREAM is built from its published source outside the repository (never copied into it):
# STREAM_C=/path/to/stream.c, or it is downloaded from the author's site into the cache
# directory. It is compiled with gcc -O3 -march=native -fopenmp, STREAM_ARRAY_SIZE
# elements per array (default 200 000 000: 1.6 GB each, far beyond any cache), and run with
# OMP_NUM_THREADS=1 and 2 (OMP_PROC_BIND=close), alternating with pmscope; each line gives
# the medians of RUNS runs and the ratio pmscope / STREAM. Both count a copy's bytes the
# same way: read plus written (STREAM's 16 bytes per element).
#
#   bench/vs-stream.sh [RUNS]        (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
TARGET=${PMSCOPE_TARGET:-dram:4k}
N=${STREAM_ARRAY_SIZE:-200000000}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/pmscope-bench/stream
mkdir -p "$CACHE"

src=${STREAM_C:-$CACHE/stream.c}
if [ ! -f "$src" ]; then
	echo "downloading STREAM's stream.c into $CACHE" >&2
	curl -fsSL -o "$src" https://www.cs.virginia.edu/stream/FTP/Code/stream.c
fi
bin=$CACHE/stream-$N
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
	gcc -O3 -march=native -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE="$N" -DNTIMES=20 \
		"$src" -o "$bin"
fi
cargo build --release -q -p pmscope
PMSCOPE=./target/release/pmscope

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

stream_copy_gbs() { # threads
	OMP_NUM_THREADS=$1 OMP_PROC_BIND=close "$bin" | awk '/^Copy:/ {print $2 / 1000}'
}

pmscope_gbs() { # op threads
	"$PMSCOPE" bandwidth -t "$TARGET" --ops "$1" --pattern seq --sizes 64KiB --threads "$2" \
		--region 1GiB --duration 1 --reps 3 --json --no-store 2>/dev/null |
		python3 -c 'import json,sys; r=[json.loads(l) for l in sys.stdin]; print(r[-1]["summary"]["p50"])'
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), STREAM $N elements per array (gcc -O3 -march=native -fopenmp), pmscope $TARGET 1 GiB per thread, median of $RUNS alternating runs"
printf '%-8s %12s %12s %12s %10s %10s\n' threads copy_GB/s ntcopy_GB/s STREAM_GB/s copy/STREAM ntcopy/STREAM
for threads in 1 2; do
	c=() n=() s=()
	for _ in $(seq "$RUNS"); do
		s+=("$(stream_copy_gbs "$threads")")
		c+=("$(pmscope_gbs copy "$threads")")
		n+=("$(pmscope_gbs ntcopy "$threads")")
	done
	cm=$(printf '%s\n' "${c[@]}" | median)
	nm=$(printf '%s\n' "${n[@]}" | median)
	sm=$(printf '%s\n' "${s[@]}" | median)
	printf '%-8s %12.2f %12.2f %12.2f %10s %10s   (copy: %s; ntcopy: %s; STREAM: %s)\n' "$threads" "$cm" "$nm" "$sm" \
		"$(awk -v a="$cm" -v b="$sm" 'BEGIN { printf "%.2f", a / b }')" \
		"$(awk -v a="$nm" -v b="$sm" 'BEGIN { printf "%.2f", a / b }')" \
		"${c[*]}" "${n[*]}" "${s[*]}"
done
