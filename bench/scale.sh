#!/usr/bin/env bash
# scale.sh — pmscope kmer count at seed 003's scale (Table 6), against KMC 3, within a
# memory budget (issue 43).
#
#   bench/scale.sh [--quick]     (results in bench/out/scale/; --quick: the curve's two
#                                 smallest points and seed-2, no 10 Gbp run)
#
# Three parts, all at K = 100 (the seed's k-mers), 2 threads, --max-mem $MAX_MEM (2GiB):
#   seed-2   `kmer synth --preset seed-2` written to files (336 genomes, 1.58 Gbp), counted
#            by pmscope and by KMC (-ci1); distinct 100-mers must agree (exit 1 if not);
#            wall time and peak RSS (GNU time) beside each other.
#   big      `synth:seed-3,scale=$BIG` (default 0.17: 2 212 genomes, about 10.3 Gbp),
#            generated as pmscope reads it, so no file is needed; KMC counts the same
#            genomes written to files when the disk holds them and its bins (three times
#            the data free), else a file-backed slice (a tenth) whose time is scaled up
#            by the bases: the output says which.
#   curve    synth:seed-3 at 0.1, 0.5, 2, 5 and 10 Gbp: time per Gbp, the ratio to the
#            smallest, peak RSS, and whether the bins were in memory or out of core.
# Every run holds /tmp/pmscope-bench.lock so benchmarks on one machine do not overlap.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=0
[ "${1:-}" = --quick ] && QUICK=1
MAX_MEM=${PMSCOPE_SCALE_MAX_MEM:-2GiB}
BIG=${PMSCOPE_SCALE_BIG:-0.17}
THREADS=2
OUT=bench/out/scale
LOCK=/tmp/pmscope-bench.lock
# seed-3's scale fractions for 0.1, 0.5, 2, 5 and 10 Gbp (60.6 Gbp at 1).
CURVE=(0.00165 0.0083 0.033 0.083 0.165)
[ $QUICK = 1 ] && CURVE=(0.00165 0.0083)

log() { printf 'scale: %s\n' "$*" >&2; }

need_packages() {
	local missing=()
	command -v kmc >/dev/null || missing+=(kmc)
	[ -x /usr/bin/time ] || missing+=(time)
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	flock /tmp/apt.lock sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"' sh "${missing[@]}" >&2
}

# timed NAME CMD...: runs CMD under the lock; leaves "wall_s peak_kib" in $OUT/NAME.time.
timed() {
	local name=$1
	shift
	flock "$LOCK" /usr/bin/time -f '%e %M' -o "$OUT/$name.time" "$@" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr"
}
wall() { awk '{print $1}' "$OUT/$1.time"; }
peak_mib() { awk '{printf "%.0f", $2/1024}' "$OUT/$1.time"; }
json_value() { # FILE KEY: a number from the record's "values"
	python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print(int(r["values"][sys.argv[2]]))' "$1" "$2"
}
bases_of() { # FILE: the bases the record counted
	json_value "$1" bases
}
free_bytes() { df -B1 --output=avail "$1" | tail -1; }
gbp() { awk -v b="$1" 'BEGIN {printf "%.2f", b / 1e9}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# pm NAME INPUT...: pmscope kmer count -k 100 within the budget, scratch in $OUT.
pm() {
	local name=$1
	shift
	timed "$name" "$PMSCOPE" kmer count -k 100 --threads $THREADS --max-mem "$MAX_MEM" --tmp "$OUT" --json --no-store "$@"
}

# kmc_count NAME LIST: KMC 3 on the files of LIST; its distinct k-mers in NAME.result.
kmc_count() {
	local name=$1 list=$2
	rm -rf "$OUT/kmc.tmp" "$OUT"/kmcdb.* && mkdir -p "$OUT/kmc.tmp"
	timed "$name" kmc -k100 -ci1 -cs1000000 -t$THREADS -fm "@$list" "$OUT/kmcdb" "$OUT/kmc.tmp"
	awk '/No. of unique counted k-mers/ {print $NF}' "$OUT/$name.stdout" >"$OUT/$name.result"
	rm -rf "$OUT/kmc.tmp" "$OUT"/kmcdb.*
}

# write_files DIR PRESET SCALE: the preset's genomes as files (kept between runs).
write_files() {
	local dir=$1 preset=$2 scale=$3
	if [ ! -f "$dir/.complete" ]; then
		rm -rf "$dir"
		"$PMSCOPE" kmer synth "$dir" --preset "$preset" --scale "$scale" --no-store >/dev/null
		touch "$dir/.complete"
	fi
	find "$dir" -name '*.fasta' | sort -V
}

need_packages
cargo build --release -q -p pmscope
PMSCOPE=$PWD/target/release/pmscope
mkdir -p "$OUT"
rm -f "$OUT"/*.time "$OUT"/*.stdout "$OUT"/*.stderr "$OUT"/*.result
CPU=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
log "CPU: $CPU; $(nproc) CPUs; budget --max-mem $MAX_MEM"

# seed-2 from files, against KMC.
write_files "$OUT/seed-2" seed-2 1 >"$OUT/seed-2.lst"
pm pm-seed-2 $(cat "$OUT/seed-2.lst")
kmc_count kmc-seed-2 "$OUT/seed-2.lst"
pm_distinct=$(json_value "$OUT/pm-seed-2.stdout" union_kmers)
kmc_distinct=$(cat "$OUT/kmc-seed-2.result")
seed2_bases=$(bases_of "$OUT/pm-seed-2.stdout")

# The big generated run, and KMC on the same genomes (or a slice).
big_line=""
if [ $QUICK = 0 ]; then
	pm pm-big "synth:seed-3,scale=$BIG"
	big_bases=$(bases_of "$OUT/pm-big.stdout")
	big_distinct=$(json_value "$OUT/pm-big.stdout" union_kmers)
	if [ "$(free_bytes "$OUT")" -gt $((3 * big_bases)) ]; then
		write_files "$OUT/big" seed-3 "$BIG" >"$OUT/big.lst"
		kmc_count kmc-big "$OUT/big.lst"
		kmc_big_wall=$(wall kmc-big)
		kmc_how="measured on the same genomes written to files"
		[ "$(cat "$OUT/kmc-big.result")" = "$big_distinct" ] || {
			log "distinct 100-mers differ on the big run: pmscope $big_distinct, KMC $(cat "$OUT/kmc-big.result")"
			exit 1
		}
		rm -rf "$OUT/big"
	else
		slice=$(awk -v s="$BIG" 'BEGIN {printf "%.5f", s / 10}')
		write_files "$OUT/big-slice" seed-3 "$slice" >"$OUT/big-slice.lst"
		kmc_count kmc-big "$OUT/big-slice.lst"
		slice_bases=$(cat $(cat "$OUT/big-slice.lst") | grep -v '^>' | tr -d '\n' | wc -c)
		kmc_big_wall=$(awk -v w="$(wall kmc-big)" -v a="$big_bases" -v b="$slice_bases" 'BEGIN {printf "%.1f", w * a / b}')
		kmc_how="extrapolated from a tenth written to files (the disk cannot hold the whole)"
	fi
	big_line=$(printf '| synth:seed-3,scale=%s (%s Gbp, %s distinct) | %s s, %s MiB | %s s (%s) | %s |' \
		"$BIG" "$(gbp "$big_bases")" "$big_distinct" "$(wall pm-big)" "$(peak_mib pm-big)" \
		"$kmc_big_wall" "$kmc_how" "$(ratio "$kmc_big_wall" "$(wall pm-big)")")
fi

# The curve.
for f in "${CURVE[@]}"; do
	pm "pm-curve-$f" "synth:seed-3,scale=$f"
done

echo
echo "pmscope kmer count at seed 003's scale, K = 100, $THREADS threads, --max-mem $MAX_MEM; $CPU"
echo
echo "| data | pmscope (wall, peak RSS) | KMC 3 -ci1 | KMC / pmscope |"
echo "|---|---|---|---|"
printf '| seed-2 files (%s Gbp, %s distinct) | %s s, %s MiB | %s s, %s MiB | %s |\n' \
	"$(gbp "$seed2_bases")" "$pm_distinct" "$(wall pm-seed-2)" "$(peak_mib pm-seed-2)" \
	"$(wall kmc-seed-2)" "$(peak_mib kmc-seed-2)" "$(ratio "$(wall kmc-seed-2)" "$(wall pm-seed-2)")"
[ -n "$big_line" ] && echo "$big_line"
echo
echo "| synth:seed-3 scale | Gbp | wall s | s per Gbp | vs smallest | peak RSS MiB | bins |"
echo "|---|---|---|---|---|---|---|"
first=""
for f in "${CURVE[@]}"; do
	b=$(bases_of "$OUT/pm-curve-$f.stdout")
	w=$(wall "pm-curve-$f")
	per=$(awk -v w="$w" -v b="$b" 'BEGIN {printf "%.2f", w / (b / 1e9)}')
	[ -z "$first" ] && first=$per
	parts=$(json_value "$OUT/pm-curve-$f.stdout" bin_partitions)
	where="in memory"
	[ "$parts" -gt 0 ] && where="out of core, $parts partitions"
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$f" "$(gbp "$b")" "$w" "$per" "$(ratio "$per" "$first")" "$(peak_mib "pm-curve-$f")" "$where"
done
if [ "$pm_distinct" != "$kmc_distinct" ]; then
	log "distinct 100-mers differ on seed-2: pmscope $pm_distinct, KMC $kmc_distinct"
	exit 1
fi
