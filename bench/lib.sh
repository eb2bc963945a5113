# lib.sh — what the peer comparisons (vs-likwid.sh, vs-stream.sh, vs-libc.sh) share: sourced,
# not run.
#
# Why brackets: on a shared host the memory a run gets can change within seconds (on the Zen 4
# guest of issue 29 a two-thread fill ran at about 53 or about 28 GB/s, switching between the
# two with no steal), so a median of pmscope runs set against a median of peer runs can set
# one state against the other. The scripts therefore run the peer, pmscope, the peer, pmscope,
# ..., the peer, and compare each pmscope run with the mean of the two peer runs around it,
# keeping only those whose two peer runs agree within PMSCOPE_BRACKET (default 0.10, i.e.
# 10 %). The filter looks at the peer only, so it cannot favour pmscope; the count kept is
# printed beside the ratio so a reader sees how much of the run was steady.

# largest < numbers: the highest (a peer's fastest run, for family_best).
largest() { sort -g | tail -1; }

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# steady: the awk function both comparisons keep a run by: its two peer runs A and B agree
# within PMSCOPE_BRACKET.
STEADY_AWK='function steady(a, b,  lo, hi) { lo = a < b ? a : b; hi = a < b ? b : a; return lo > 0 && (hi - lo) / lo <= tol }'

# bracket_triples < lines "PEER_BEFORE PMSCOPE PEER_AFTER"  ->  "RATIO KEPT OF"
# RATIO is the median over kept lines of PMSCOPE / mean(PEER_BEFORE, PEER_AFTER) (n/a when
# none is kept), KEPT how many lines were kept, OF how many there were.
bracket_triples() {
	awk -v tol="${PMSCOPE_BRACKET:-0.10}" "$STEADY_AWK"'
		NF == 3 {
			m++
			if (steady($1, $3)) r[++k] = $2 / (($1 + $3) / 2)
		}
		END {
			for (i = 2; i <= k; i++) { v = r[i]; for (j = i - 1; j >= 1 && r[j] > v; j--) r[j + 1] = r[j]; r[j + 1] = v }
			if (k == 0) med = "n/a"
			else med = sprintf("%.2f", k % 2 ? r[(k + 1) / 2] : (r[k / 2] + r[k / 2 + 1]) / 2)
			print med, k + 0, m + 0
		}'
}

# bracketed PEER0 PEER1 ... PEERn -- PMSCOPE1 ... PMSCOPEn  ->  "RATIO KEPT OF"
# For the run order PEER0 PMSCOPE1 PEER1 PMSCOPE2 ... PEERn: pmscope run i sits between
# peer runs i-1 and i.
bracketed() {
	local peers=() pm=() side=0 i
	for a in "$@"; do
		if [ "$a" = -- ]; then side=1; elif [ $side = 1 ]; then pm+=("$a"); else peers+=("$a"); fi
	done
	if [ ${#peers[@]} -ne $((${#pm[@]} + 1)) ]; then
		echo "bracketed: need one more peer run than pmscope runs" >&2
		return 2
	fi
	for i in "${!pm[@]}"; do echo "${peers[$i]} ${pm[$i]} ${peers[$((i + 1))]}"; done | bracket_triples
}

# peer_aa PEER0 PEER1 ... PEERn  ->  "LO-HI" (or n/a)
# The peer against itself, the run's A/A: each of its runs but the first and last over the
# mean of the runs either side, kept by the same rule as pmscope's runs; LO and HI are the
# lowest and highest kept ratio. A row below 1.00 but inside that range is within the noise
# the peer shows against itself in this run; one below LO is below anything the peer did
# against itself. The range is of single runs, so it widens as a script makes more peer runs
# (vs-libc.sh makes 1 + RUNS x variants): a description of the run, not a significance test.
peer_aa() {
	local a=("$@") i
	for ((i = 1; i + 1 < ${#a[@]}; i++)); do echo "${a[$((i - 1))]} ${a[$i]} ${a[$((i + 1))]}"; done |
		awk -v tol="${PMSCOPE_BRACKET:-0.10}" "$STEADY_AWK"'
			NF == 3 && steady($1, $3) {
				r = $2 / (($1 + $3) / 2)
				if (!k || r < lo) lo = r
				if (!k || r > hi) hi = r
				k++
			}
			END { if (k) printf "%.2f-%.2f\n", lo, hi; else print "n/a" }'
}

# best_line FAMILY THREADS OP PEER RATIO KEPT/OF [AA [NOTE]]: the line each script ends a
# thread count's family with, and acceptance_table reads: FAMILY's best op against the PEER
# (one word, e.g. libc-memset, likwid-store_mem, STREAM-Copy), its bracketed ratio, and the
# peer's A/A range in the same run (peer_aa).
best_line() {
	printf 'best %-4s threads %s: %-16s against %-18s bracketed %4s (%s kept%s%s)\n' "$1" "$2" "$3" "$4" "$5" "$6" \
		"${7:+, peer A/A $7}" "${8:+, $8}"
}

# family_best THREADS < lines "FAMILY PEER OP RATIO KEPT/OF PEAK AA"  ->  best_line per family
# Each line is one op measured against one peer: its bracketed RATIO, the peer's fastest run
# (PEAK, GB/s) and the peer's A/A range (peer_aa). For each family (in order of first
# appearance) the fastest peer is the one with the highest PEAK, and its row names the best op
# measured against it. The peak, not the median, decides: a median of runs that straddle two
# host states can make the slower kind of peer look faster (likwid's `store` over
# `store_mem`, 2 threads, 2026-11-28), while any run in the fast state shows what a peer can
# reach.
family_best() {
	local threads=$1
	awk '
		NF == 6 || NF == 7 {
			if (!($1 in seen)) { seen[$1] = 1; order[++nf] = $1 }
			key = $1 SUBSEP $2
			if (!(key in peak) || $6 > peak[key]) peak[key] = $6
			aa[key] = NF == 7 ? $7 : "n/a"
			n++; fam[n] = $1; peer[n] = $2; op[n] = $3; r[n] = $4; kept[n] = $5
		}
		END {
			for (f = 1; f <= nf; f++) {
				F = order[f]; top = ""; tp = -1
				for (i = 1; i <= n; i++) if (fam[i] == F && peak[F SUBSEP peer[i]] > tp) { top = peer[i]; tp = peak[F SUBSEP peer[i]] }
				bo = "none"; br = "n/a"; bk = ""; best = -1
				for (i = 1; i <= n; i++) {
					if (fam[i] != F || peer[i] != top) continue
					if (bk == "") { split(kept[i], kk, "/"); bk = "0/" kk[2] }
					if (r[i] != "n/a" && r[i] + 0 > best) { best = r[i] + 0; bo = op[i]; br = r[i]; bk = kept[i] }
				}
				printf "%s %s %s %s %s %.2f %s\n", F, top, bo, br, bk, tp, aa[F SUBSEP top]
			}
		}' |
		while read -r family peer op br kept peak aa; do
			best_line "$family" "$threads" "$op" "$peer" "$br" "$kept" "$aa" "fastest $peer run $peak GB/s"
		done
}

# acceptance_table DIR: the `best` lines of the three scripts' output in DIR (vs-*.txt) as one
# table, family by threads by peer, each row marked when its bracketed ratio is below 1.00 or
# missing, and a row below 1.00 also told whether it lies inside the peer's own A/A range of
# that run (peer_aa: parity within the run's noise) or below it; the rows also go to
# DIR/best.txt. The verdict stays the literal one: it holds only when every row reaches 1.00.
# Returns 1 when no `best` line is found, else 0 (a row below 1.00 is a finding to print,
# not an error).
acceptance_table() {
	local dir=$1 below=0 within=0 rows family threads op peer br kept aa mark
	if [ ! -d "$dir" ]; then
		echo "no directory $dir: give the directory the peer scripts' output went to" >&2
		return 1
	fi
	{
		cat "$dir"/vs-*.txt 2>/dev/null |
			sed -n 's/^best \([a-z]*\) *threads \([0-9]*\): *\([^ ]*\) *against \([^ ]*\) *bracketed *\([^ ]*\) (\([^ ]*\) kept\(, peer A\/A \([^ ,)]*\)\)\{0,1\}.*/\1 \2 \3 \4 \5 \6 \8/p' |
			awk 'NF == 6 { $7 = "n/a" } 1'
		true
	} | sort -k1,1 -k2,2n -k4,4 >"$dir/best.txt"
	rows=$(wc -l <"$dir/best.txt")
	if [ "$rows" -eq 0 ]; then
		echo "no best lines found in $dir: see the scripts' output there" >&2
		return 1
	fi
	printf '%-6s %-8s %-16s %-20s %9s %6s %10s\n' family threads best_op peer bracketed kept peer_A/A
	while read -r family threads op peer br kept aa; do
		mark=""
		if [ "$br" = n/a ]; then
			mark="  <- no steady pair" below=$((below + 1))
		elif awk -v r="$br" 'BEGIN { exit !(r < 1.00) }'; then
			below=$((below + 1))
			if [ "$aa" != n/a ] && awk -v r="$br" -v lo="${aa%-*}" 'BEGIN { exit !(r >= lo) }'; then
				mark="  <- below 1.00, inside the peer's own A/A range" within=$((within + 1))
			else
				mark="  <- below 1.00 and below the peer's own A/A range"
			fi
		fi
		printf '%-6s %-8s %-16s %-20s %9s %6s %10s%s\n' "$family" "$threads" "$op" "$peer" "$br" "$kept" "$aa" "$mark"
	done <"$dir/best.txt"
	if [ "$below" -eq 0 ]; then
		echo "every family's best op is at or above every peer (bracketed typical ratio >= 1.00, $rows rows)"
	else
		echo "$below of $rows rows below 1.00 or without a steady pair ($within of them inside the peer's own A/A range)"
	fi
}

# cpu_name: the CPU as the scripts' headers name it.
cpu_name() { grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'; }

# glibc_copy_path BYTES: which of glibc's memcpy paths a copy of BYTES takes on this machine,
# in one line, e.g. "glibc 2.36 __memmove_evex_unaligned_erms; 512 MiB >= 16 x the
# non-temporal threshold (18.9 MiB): large_memcpy_4x, non-temporal 32-byte stores over 4
# pages at a time". The variant follows glibc's ifunc rules (sysdeps/x86_64/multiarch/
# ifunc-memmove.h, 2.33-2.38) applied to the CPU flags and the `preferred` bits that
# `ld.so --list-diagnostics` prints; the path follows memmove-vec-unaligned-erms.S's size
# thresholds, also from the diagnostics. On the Ice Lake guest of issue 45 a gdb breakpoint
# confirmed the rule's answer (memcpy stopped in __memcpy_evex_unaligned_erms).
# PMSCOPE_GLIBC_DIAG (a file of diagnostics), PMSCOPE_CPU_FLAGS and PMSCOPE_GLIBC_VERSION stand
# in for this machine's (the tests give other CPUs' answers).
glibc_copy_path() {
	local bytes=$1 ldso diag version flags variant vec path
	if [ -n "${PMSCOPE_GLIBC_DIAG:-}" ]; then
		diag=$(cat "$PMSCOPE_GLIBC_DIAG") version=${PMSCOPE_GLIBC_VERSION:-?}
	else
		ldso=$(ls /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 2>/dev/null | head -1)
		version=$(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')
		diag=$("$ldso" --list-diagnostics 2>/dev/null || true)
	fi
	if [ -z "$diag" ]; then
		echo "glibc ${version:-?}: ld.so --list-diagnostics unavailable (glibc < 2.33), path unknown"
		return 0
	fi
	pref() { grep -q "^x86.cpu_features.preferred.$1=0x1" <<<"$diag"; }
	diag_num() { sed -n "s/^x86.cpu_features.$1=//p" <<<"$diag" | head -1; }
	flags=" ${PMSCOPE_CPU_FLAGS:-$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2)} "
	has() { [[ $flags == *" $1 "* ]]; }
	local erms=""
	has erms && erms=_erms
	if has avx512f && ! pref Prefer_No_AVX512 && has avx512vl; then
		variant=__memmove_avx512_unaligned$erms vec=64
	elif pref AVX_Fast_Unaligned_Load && has avx512vl; then
		variant=__memmove_evex_unaligned$erms vec=32
	elif pref AVX_Fast_Unaligned_Load && has rtm; then
		variant=__memmove_avx_unaligned${erms}_rtm vec=32
	elif pref AVX_Fast_Unaligned_Load && ! pref Prefer_No_VZEROUPPER; then
		variant=__memmove_avx_unaligned$erms vec=32
	else
		variant=__memmove_sse2_unaligned$erms vec=16
	fi
	local nt movsb_stop
	nt=$(($(diag_num non_temporal_threshold)))
	movsb_stop=$(($(diag_num rep_movsb_stop_threshold)))
	mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
	if [ "$nt" -le 0 ]; then
		path="non-temporal threshold unknown"
	elif [ "$bytes" -ge $((nt * 16)) ]; then
		path="$(mib "$bytes") >= 16 x the non-temporal threshold ($(mib "$nt")): large_memcpy_4x, non-temporal $vec-byte stores over 4 pages at a time, prefetcht0 one iteration ahead"
	elif [ "$bytes" -ge "$nt" ]; then
		path="$(mib "$bytes") >= the non-temporal threshold ($(mib "$nt")): large_memcpy_2x, non-temporal $vec-byte stores over 2 pages at a time"
	elif [ -n "$erms" ] && [ "$bytes" -lt "$movsb_stop" ]; then
		path="$(mib "$bytes") < rep_movsb_stop_threshold ($(mib "$movsb_stop")): rep movsb"
	else
		path="$(mib "$bytes"): 4 x $vec-byte vector loop with ordinary stores"
	fi
	echo "glibc $version $variant (by glibc's rules); $path"
}
