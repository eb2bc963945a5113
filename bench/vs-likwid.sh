#!/usr/bin/env bash
# vs-likwid.sh — pmscope bandwidth against likwid-bench on the same machine, side by side.
#
# For each case (sequential read, and read-ahead, which starts each page's table walk 4 pages
# ahead, both against likwid's load; ordinary write; non-temporal write, and ntstore-ahead,
# both against likwid's store_mem; copy, and ntcopy: copy with non-temporal stores, against likwid's copy_mem, as
# glibc memcpy and so STREAM Copy stream at this size) and thread count (1 and 2), runs pmscope and likwid-bench alternately
# RUNS times on the same working set (1 GiB per thread) and page policy, and prints one line per case: the median GB/s of each
# (10^9 B/s; likwid's MByte/s / 1000) and the ratio pmscope / likwid-bench. A ratio below 1
# means pmscope under-measures, which is a bug to investigate in its inner loop. `paired` is
# the median of the ratios of runs made back to back: on a shared machine whose load drifts
# during the script it is the steadier of the two.
#
#   bench/vs-likwid.sh [RUNS]        (default 3; installs Debian's likwid if missing)
#
# PMSCOPE_CASES="read:load copy:copy" and PMSCOPE_THREADS=1 narrow the run.
#
# Page policy: likwid-bench allocates with posix_memalign; with THP in `madvise` mode those
# buffers get 4 KiB pages, so pmscope measures `dram:4k`. With THP `always`, use
# PMSCOPE_TARGET=dram:thp. The script prints the THP mode it ran under.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
TARGET=${PMSCOPE_TARGET:-dram:4k}
DURATION=${PMSCOPE_DURATION:-1}
CASES=${PMSCOPE_CASES:-read:load read-ahead:load write:store ntstore:store_mem ntstore-ahead:store_mem copy:copy ntcopy:copy_mem} # pmscope-op:likwid-kernel
THREADS=${PMSCOPE_THREADS:-1 2}

if ! command -v likwid-bench >/dev/null 2>&1; then
	echo "installing likwid (Debian package)" >&2
	flock /tmp/apt.lock sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq likwid' >&2
fi
cargo build --release -q -p pmscope
PMSCOPE=./target/release/pmscope
if grep -q avx512f /proc/cpuinfo; then SUFFIX=avx512; WIDTH=64; else SUFFIX=avx; WIDTH=32; fi

thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), THP $thp, pmscope target $TARGET, ${WIDTH}-byte vectors, 1 GiB per thread, median of $RUNS alternating runs"
printf '%-8s %-8s %12s %12s %8s %8s\n' case threads pmscope_GB/s likwid_GB/s ratio paired

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

pmscope_gbs() { # op threads
	"$PMSCOPE" bandwidth -t "$TARGET" --ops "$1" --pattern seq --sizes 64KiB --threads "$2" \
		--region 1GiB --duration "$DURATION" --reps 3 --json 2>/dev/null |
		python3 -c 'import json,sys; r=[json.loads(l) for l in sys.stdin]; print(r[-1]["summary"]["p50"])'
}

likwid_gbs() { # kernel threads
	likwid-bench -t "$1" -w "S0:$2GB:$2" 2>/dev/null |
		awk '/^MByte\/s:/ {print $2 / 1000}'
}

for threads in $THREADS; do
	for pair in $CASES; do
		op=${pair%%:*}
		kernel=${pair#*:}_$SUFFIX
		p=() l=()
		for _ in $(seq "$RUNS"); do
			p+=("$(pmscope_gbs "$op" "$threads")")
			l+=("$(likwid_gbs "$kernel" "$threads")")
		done
		pm=$(printf '%s\n' "${p[@]}" | median)
		lk=$(printf '%s\n' "${l[@]}" | median)
		ratio=$(awk -v a="$pm" -v b="$lk" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
		paired=$(for i in "${!p[@]}"; do awk -v a="${p[$i]}" -v b="${l[$i]}" 'BEGIN { if (b > 0) print a / b }'; done | median)
		printf '%-8s %-8s %12.2f %12.2f %8s %8.2f   (pmscope: %s; likwid: %s)\n' "$op" "$threads" "$pm" "$lk" "$ratio" "$paired" "${p[*]}" "${l[*]}"
	done
done
