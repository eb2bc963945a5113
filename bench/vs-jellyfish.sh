#!/usr/bin/env bash
# vs-jellyfish.sh — pmscope kmer against its peers, KMC 3 and Jellyfish, on the genomes
# of Debian's ragout-examples and kaptive-example (24 bacterial genomes, 83 Mbp).
#
#   bench/vs-jellyfish.sh [ROUNDS]      (default 3 rounds; results in bench/out/kmer/)
#
# For K = 31 and 100 and 2 threads it runs, alternately and ROUNDS times each:
#   count:   jellyfish count -C | kmc -ci1 | pmscope kmer count --method binned (the row
#            `pmscope`: KMC's own method, minimizer bins in L2-sized tables) and
#            --method table (the row `pm-table`: one table for every k-mer, the
#            memory-tier workload)                                   (all 24 genomes)
#   primers: kmc + kmc_tools (intersect, kmers_subtract) | pmscope kmer primers, again
#            --method binned (`pmscope`) and --method table (`pm-table`)
#            (in-group: the 5 S. aureus references; out-group: the other 19 genomes)
# and prints, per case, the distinct k-mers (or candidates) each tool reports (they must
# agree: the script exits 1 if not), the median wall time, the peak memory (max RSS of the
# tool's processes) and the time ratio to pmscope. Every run holds
# /tmp/pmscope-bench.lock so benchmarks of different people on one machine do not overlap.
#
# Notes on the peers: KMC drops k-mers seen once unless given -ci1 (kmc_tools keeps the
# databases' thresholds); Debian's `kmc_tools complex` crashes, so the pipeline chains
# `kmc_tools simple`; Jellyfish reads no gzip, so it reads `zcat` through a pipe.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-3}
THREADS=2
RAGOUT=/usr/share/doc/ragout/examples
KAPTIVE=/usr/share/doc/kaptive/examples
OUT=bench/out/kmer
LOCK=/tmp/pmscope-bench.lock

log() { printf 'bench: %s\n' "$*" >&2; }

need_packages() {
	local missing=()
	command -v jellyfish >/dev/null || missing+=(jellyfish)
	command -v kmc >/dev/null || missing+=(kmc)
	[ -x /usr/bin/time ] || missing+=(time)
	[ -d "$RAGOUT" ] || missing+=(ragout-examples)
	[ -d "$KAPTIVE" ] || missing+=(kaptive-example)
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	flock /tmp/apt.lock sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"' sh "${missing[@]}" >&2
}

need_packages
cargo build --release -q -p pmscope
PMSCOPE=$PWD/target/release/pmscope
rm -rf "$OUT" && mkdir -p "$OUT"
find "$RAGOUT" "$KAPTIVE" -name '*.fasta.gz' | sort >"$OUT/all.lst"
grep '/S.Aureus/references/' "$OUT/all.lst" >"$OUT/in.lst"
grep -v '/S.Aureus/references/' "$OUT/all.lst" >"$OUT/out.lst"
log "$(wc -l <"$OUT/all.lst") genomes: $(wc -l <"$OUT/in.lst") in-group, $(wc -l <"$OUT/out.lst") out-group"

# timed NAME CMD...: runs CMD under the lock, appends "wall_s peak_kib" to $OUT/NAME.times.
# A pipeline's peak is that of its largest process (GNU time measures the shell's child).
timed() {
	local name=$1
	shift
	flock "$LOCK" /usr/bin/time -f '%e %M' -o "$OUT/$name.time1" "$@" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr"
	cat "$OUT/$name.time1" >>"$OUT/$name.times"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
med_wall() { awk '{print $1}' "$OUT/$1.times" | median; }
max_peak_mib() { awk '{print $2}' "$OUT/$1.times" | sort -n | tail -1 | awk '{printf "%.0f", $1/1024}'; }

json_value() { # json_value FILE KEY: a number from the record's "values"
	python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print(int(r["values"][sys.argv[2]]))' "$1" "$2"
}

run_jellyfish_count() { # K
	local k=$1
	rm -f "$OUT/jf.jf"
	timed "jellyfish-count-$k" sh -c "zcat $(tr '\n' ' ' <"$OUT/all.lst") | jellyfish count -C -m $k -s 100M -t $THREADS -o $OUT/jf.jf /dev/stdin"
	jellyfish stats "$OUT/jf.jf" | awk '/^Distinct:/ {print $2}' >"$OUT/jellyfish-count-$k.result"
}

run_kmc_count() { # K
	local k=$1
	rm -rf "$OUT/kmc.tmp" "$OUT"/kmcdb.* && mkdir -p "$OUT/kmc.tmp"
	timed "kmc-count-$k" kmc -k"$k" -ci1 -cs1000000 -t$THREADS -fm "@$OUT/all.lst" "$OUT/kmcdb" "$OUT/kmc.tmp"
	awk '/No. of unique counted k-mers/ {print $NF}' "$OUT/kmc-count-$k.stdout" >"$OUT/kmc-count-$k.result"
}

run_pmscope_count() { # K METHOD TOOL
	local k=$1 method=$2 tool=$3
	rm -f "$OUT/pm.json"
	timed "$tool-count-$k" "$PMSCOPE" kmer count -k "$k" --method "$method" --threads $THREADS \
		-o "$OUT/pm.json" $(cat "$OUT/all.lst")
	json_value "$OUT/pm.json" union_kmers >"$OUT/$tool-count-$k.result"
	cp "$OUT/pm.json" "$OUT/$tool-count-$k.json"
}

# The seed's pipeline with KMC: a database per in-group genome, one for the out-group
# union, the intersection chained pairwise, then the relative complement.
kmc_primers_script() { # K -> a script on stdout
	local k=$1 i=0 dbs=()
	echo "set -e; cd $OUT; rm -rf kp && mkdir -p kp/tmp"
	while read -r f; do
		echo "kmc -k$k -ci1 -cs1000000 -t$THREADS -fm $f kp/in$i kp/tmp >/dev/null"
		dbs+=("kp/in$i")
		i=$((i + 1))
	done <"$OUT/in.lst"
	echo "kmc -k$k -ci1 -cs1000000 -t$THREADS -fm @out.lst kp/out kp/tmp >/dev/null"
	local acc=${dbs[0]}
	for ((j = 1; j < ${#dbs[@]}; j++)); do
		echo "kmc_tools -t$THREADS simple $acc ${dbs[$j]} intersect kp/and$j >/dev/null"
		acc=kp/and$j
	done
	echo "kmc_tools -t$THREADS simple $acc kp/out kmers_subtract kp/candidates >/dev/null"
	echo "kmc_tools -t$THREADS transform kp/candidates dump kp/candidates.txt >/dev/null"
}

run_kmc_primers() { # K
	local k=$1
	kmc_primers_script "$k" >"$OUT/kmc-primers-$k.sh"
	timed "kmc-primers-$k" sh "$OUT/kmc-primers-$k.sh"
	wc -l <"$OUT/kp/candidates.txt" >"$OUT/kmc-primers-$k.result"
}

run_pmscope_primers() { # K METHOD TOOL
	local k=$1 method=$2 tool=$3
	rm -f "$OUT/pm.json" "$OUT/candidates.tsv"
	timed "$tool-primers-$k" "$PMSCOPE" kmer primers -k "$k" --method "$method" --threads $THREADS \
		--in-group $(cat "$OUT/in.lst") --out-group $(cat "$OUT/out.lst") \
		--kmers "$OUT/candidates.tsv" -o "$OUT/pm.json"
	json_value "$OUT/pm.json" candidates_kmers >"$OUT/$tool-primers-$k.result"
	cp "$OUT/pm.json" "$OUT/$tool-primers-$k.json"
}

status=0
report() { # CASE K TOOL...: one table row per tool, ratio = tool time / pmscope time
	local case=$1 k=$2
	shift 2
	local pm
	pm=$(med_wall "pmscope-$case-$k")
	local want
	want=$(cat "$OUT/pmscope-$case-$k.result")
	for tool in "$@"; do
		local n wall
		n=$(cat "$OUT/$tool-$case-$k.result")
		wall=$(med_wall "$tool-$case-$k")
		printf '%-8s %4s  %-10s %12s  %8.2f s  %7s MiB  %6.2f\n' "$case" "$k" "$tool" "$n" "$wall" \
			"$(max_peak_mib "$tool-$case-$k")" "$(awk -v a="$wall" -v b="$pm" 'BEGIN {print a / b}')"
		if [ "$n" != "$want" ]; then
			log "MISMATCH: $tool reports $n for $case k=$k, pmscope $want"
			status=1
		fi
	done
}

for k in 31 100; do
	for ((r = 1; r <= ROUNDS; r++)); do
		log "k=$k round $r/$ROUNDS: count"
		run_jellyfish_count "$k"
		run_kmc_count "$k"
		run_pmscope_count "$k" binned pmscope
		run_pmscope_count "$k" table pm-table
		log "k=$k round $r/$ROUNDS: primers"
		run_kmc_primers "$k"
		run_pmscope_primers "$k" binned pmscope
		run_pmscope_primers "$k" table pm-table
	done
done

echo
echo "pmscope kmer vs KMC 3 and Jellyfish: $(wc -l <"$OUT/all.lst") genomes, $THREADS threads, median of $ROUNDS alternating runs"
echo "(ratio = the tool's wall time / pmscope's; above 1 means pmscope is faster)"
echo
printf '%-8s %4s  %-10s %12s  %10s  %11s  %6s\n' case k tool "k-mers" wall "peak RSS" ratio
for k in 31 100; do
	report count "$k" pmscope pm-table kmc jellyfish
	report primers "$k" pmscope pm-table kmc
done
echo
echo "pmscope phases (the last run's record, in $OUT/pmscope-*.json):"
for f in "$OUT"/pmscope-*-31.json "$OUT"/pm-table-*-31.json "$OUT"/pmscope-*-100.json "$OUT"/pm-table-*-100.json; do
	python3 - "$f" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
v = r["values"]
names = ["parse", "estimate", "split", "map", "insert", "setops", "output"]
phases = " ".join(f"{p}={v[p + '_ms'] / 1000:.2f}s" for p in names if p + "_ms" in v)
method = r["params"].get("method", "table")
tables = "tables" if method == "binned" else "table"
print(f"  {r['params']['operation']:8s} k={r['params']['k']:<3} {method:6s} {phases}  MIPS={v['insert_mips']:.1f}  "
      f"{tables}={v['table_bytes'] / 2**20:.0f} MiB on {r['target']['spec']}")
EOF
done
exit $status
