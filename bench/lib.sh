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

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# bracket_triples < lines "PEER_BEFORE PMSCOPE PEER_AFTER"  ->  "RATIO KEPT OF"
# RATIO is the median over kept lines of PMSCOPE / mean(PEER_BEFORE, PEER_AFTER) (n/a when
# none is kept), KEPT how many lines were kept, OF how many there were.
bracket_triples() {
	awk -v tol="${PMSCOPE_BRACKET:-0.10}" '
		NF == 3 {
			m++; a = $1; b = $3
			lo = a < b ? a : b; hi = a < b ? b : a
			if (lo > 0 && (hi - lo) / lo <= tol) r[++k] = $2 / ((a + b) / 2)
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

# cpu_name: the CPU as the scripts' headers name it.
cpu_name() { grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'; }
