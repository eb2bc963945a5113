#!/usr/bin/env bash
# vs-likwid.sh — pmscope bandwidth against likwid-bench on the same machine, side by side.
#
# For each case (sequential read, and read-ahead, which starts each page's table walk 4 pages
# ahead, both against likwid's load; ordinary write; non-temporal write, and ntstore-ahead,
# both against likwid's store_mem; copy, and ntcopy and ntcopy-pages (copy with non-temporal
# stores, the second over 4 pages at a time as glibc's large memcpy) against likwid's copy_mem, as
# glibc memcpy and so STREAM Copy stream at this size) and thread count (1 and 2), runs
# likwid-bench, then pmscope and likwid-bench in turn RUNS times, on the same working set
# (1 GiB per thread) and page policy, and prints one line per case: the median GB/s of each
# (10^9 B/s; likwid's MByte/s / 1000), the ratio of the medians pmscope / likwid-bench, and
# `bracketed`: the median over pmscope runs of its rate over the mean of the two likwid runs
# around it, kept only where those two agree within 10 % (bench/lib.sh says why; `kept`
# counts them). A ratio below 1 means pmscope under-measures, which is a bug to investigate
# in its inner loop. The `best` lines set each family's best op (by bracketed ratio) against
# likwid's fastest kernel of the family (read: load; fill: store, store_mem; copy: copy,
# copy_mem), the fastest by its fastest run (bench/lib.sh, family_best, says why not by
# median): issue 29's acceptance is >= 1.00 there. `likwid_A/A` is likwid against itself in
# the same run (bench/lib.sh, peer_aa): the range a tool at true parity lands in.
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
. bench/lib.sh
RUNS=${1:-3}
TARGET=${PMSCOPE_TARGET:-dram:4k}
DURATION=${PMSCOPE_DURATION:-1}
CASES=${PMSCOPE_CASES:-read:load read-ahead:load write:store ntstore:store_mem ntstore-ahead:store_mem copy:copy ntcopy:copy_mem ntcopy-pages:copy_mem} # pmscope-op:likwid-kernel
THREADS=${PMSCOPE_THREADS:-1 2}

if ! command -v likwid-bench >/dev/null 2>&1; then
	echo "installing likwid (Debian package)" >&2
	flock /tmp/apt.lock sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq likwid' >&2
fi
cargo build --release -q -p pmscope
PMSCOPE=./target/release/pmscope
# vs-peers.sh sets it to have every peer ready before the first timed run.
if [ "${PMSCOPE_PREPARE_ONLY:-0}" = 1 ]; then exit 0; fi
if grep -q avx512f /proc/cpuinfo; then SUFFIX=avx512; WIDTH=64; else SUFFIX=avx; WIDTH=32; fi

thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)
echo "# $(cpu_name), THP $thp, pmscope target $TARGET, ${WIDTH}-byte vectors, 1 GiB per thread, $RUNS pmscope runs bracketed by $((RUNS + 1)) likwid runs"
printf '%-14s %-8s %12s %12s %8s %10s %5s %10s\n' case threads pmscope_GB/s likwid_GB/s ratio bracketed kept likwid_A/A

pmscope_gbs() { # op threads
	"$PMSCOPE" bandwidth -t "$TARGET" --ops "$1" --pattern seq --sizes 64KiB --threads "$2" \
		--region 1GiB --duration "$DURATION" --reps 3 --json --no-store 2>/dev/null |
		python3 -c 'import json,sys; r=[json.loads(l) for l in sys.stdin]; print(r[-1]["summary"]["p50"])'
}

likwid_gbs() { # kernel threads
	likwid-bench -t "$1" -w "S0:$2GB:$2" 2>/dev/null |
		awk '/^MByte\/s:/ {print $2 / 1000}'
}

family_of() { # likwid kernel -> family
	case $1 in load) echo read ;; store | store_mem) echo fill ;; copy | copy_mem) echo copy ;; *) echo "$1" ;; esac
}

for threads in $THREADS; do
	lines=()
	for pair in $CASES; do
		op=${pair%%:*}
		kernel=${pair#*:}
		p=() l=("$(likwid_gbs "${kernel}_$SUFFIX" "$threads")")
		for _ in $(seq "$RUNS"); do
			p+=("$(pmscope_gbs "$op" "$threads")")
			l+=("$(likwid_gbs "${kernel}_$SUFFIX" "$threads")")
		done
		pm=$(printf '%s\n' "${p[@]}" | median)
		lk=$(printf '%s\n' "${l[@]}" | median)
		read -r br kept of <<<"$(bracketed "${l[@]}" -- "${p[@]}")"
		aa=$(peer_aa "${l[@]}")
		printf '%-14s %-8s %12.2f %12.2f %8s %10s %5s %10s   (pmscope: %s; likwid: %s)\n' "$op" "$threads" "$pm" "$lk" \
			"$(ratio "$pm" "$lk")" "$br" "$kept/$of" "$aa" "${p[*]}" "${l[*]}"
		peak=$(printf '%s\n' "${l[@]}" | largest)
		lines+=("$(family_of "$kernel") likwid-$kernel $op $br $kept/$of $peak $aa")
	done
	printf '%s\n' "${lines[@]}" | family_best "$threads"
done
