#!/usr/bin/env bash
# lab/stage.sh — pmscope's hardware-gated tests on real DAX, pmem and NUMA code paths and on an
# old CPU, inside the project's qemu lab guest (lab/vm.sh). The last step of `./dev test`.
#
#   lab/stage.sh           build on the host, plan the boots, run each in a fresh guest
#   lab/stage.sh --plan    print the boots and their estimated times, run nothing
#
# Hardware-gated tests live in modules named for what they need (`mod needs_fsdax`) and are
# #[ignore]d with that reason, so a host `cargo test` lists them as ignored. Each test binary
# is asked for its ignored tests; every `needs_<requirement>::` test goes to the layout that
# provides <requirement> (LAYOUTS below), and runs there with `--ignored --exact`, one process
# per test. A `needs_` test no layout provides fails the stage: no hardware test can silently
# never run.
#
# Boots and their budget. A boot should use at most 60 % of its timeout with the host at load
# 2 (TCG runs about 1.6x slower there than on an idle host). The steps' idle-host durations are
# in lab/durations.txt (measured; refreshed from the last run by `lab/stage.sh --durations`);
# a layout's steps are packed into as many boots as it takes to keep each boot's estimate at
# load 2 under 60 % of BOOT_TIMEOUT. A step too long for that (one test of 115 s) gets a boot
# of its own whose timeout is its estimate at load 2 / 60 %. Every boot prints its time
# against its timeout, and the stage ends with the table of all boots.
#
# Exit status: 0 when every guest step passed; 1 when one failed, a guest timed out or could
# not boot, or the guest tests could not be run at all (no qemu: ./dev setup installs it).
# PMSCOPE_LAB_SKIP=1 turns only that last case into exit 0, for a machine without qemu; the
# stage still says plainly that nothing ran.
#
# Results: target/labvm/<boot>/ (steps.txt with each step's seconds, info.txt, info.json),
# target/labvm/<boot>.log (the whole guest output).
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)

# layout | requirements it provides (test modules needs_<requirement>)
LAYOUTS=(
	"pmem|fsdax devdax legacy_pmem memonly_node avx2_without_avx512"
	"kmem|kmem_node"
	"oldcpu|old_cpu"
	"cxl|cxl"
)
BOOT_TIMEOUT=${PMSCOPE_LAB_BOOT_TIMEOUT:-300} # s: a boot's timeout, unless one step needs more
SHARE_OF_TIMEOUT=60  # % of a boot's timeout its estimate at load 2 may use
LOAD_SLOWDOWN=16     # tenths: TCG at host load 2 vs idle
BOOT_OVERHEAD=12     # s: initramfs, boot and setup (lab/vm.sh prints it; 10-12 s idle)
UNKNOWN_STEP=20      # s: the estimate of a step lab/durations.txt does not know yet
CAPACITY=$((BOOT_TIMEOUT * SHARE_OF_TIMEOUT * 10 / 100 / LOAD_SLOWDOWN - BOOT_OVERHEAD))

log() { printf 'lab/stage: %s\n' "$*" >&2; }
not_run() {
	log "the guest tests were NOT run: $*"
	if [ "${PMSCOPE_LAB_SKIP:-}" = 1 ]; then
		log "PMSCOPE_LAB_SKIP=1: exiting 0 although nothing was tested in the guest"
		exit 0
	fi
	exit 1
}

OUT=target/labvm
PAYLOAD=$OUT/payload/pmscope-lab # the guest sees it as /payload/pmscope-lab

if [ "${1:-}" = --durations ]; then # refresh lab/durations.txt from the last run's steps
	# "PASS name seconds" lines of the steps the plan packs (tests, and each layout's command
	# block); a step measured now replaces its old figure (the longest of its runs, rounded
	# up), a step not run now keeps its old one.
	cat "$OUT"/*/steps.txt "$OUT"/*/blocks.txt 2>/dev/null |
		awk '$1 == "PASS" && NF >= 3 && ($2 ~ /::/ || $2 ~ /^commands:/) { s = int($3 + 0.999); if (s > m[$2]) m[$2] = s }
			END { for (k in m) print k, m[k] }' >"$OUT/durations.new"
	awk 'NR == FNR { d[$1] = $2; next } !($1 in d) { d[$1] = $2 } END { for (k in d) print k, d[k] }' \
		"$OUT/durations.new" lab/durations.txt | sort >lab/durations.txt.tmp
	mv lab/durations.txt.tmp lab/durations.txt
	log "lab/durations.txt: $(wc -l <lab/durations.txt) steps, $(wc -l <"$OUT/durations.new") measured in the last run"
	exit 0
fi
PLAN_ONLY=0
[ "${1:-}" = --plan ] && PLAN_ONLY=1

if [ $PLAN_ONLY = 0 ]; then
	command -v qemu-system-x86_64 >/dev/null 2>&1 ||
		not_run "qemu-system-x86_64 is not installed (./dev setup installs qemu-system-x86)"
fi
rm -rf "$OUT"
mkdir -p "$PAYLOAD/bin" "$PAYLOAD/boots"

# ------------------------------------------------------------------ build on the host
# The same build as ./dev test's `cargo test --workspace --profile ci`, so after it nothing is
# rebuilt; it also builds the pmscope binary the CLI tests run.
log "building pmscope and its test binaries (profile ci)"
cargo test --workspace --profile ci --no-run -q --message-format=json >"$OUT/build.json"
executables() { # grep pattern: executable paths of the matching compiler-artifact lines
	grep '"reason":"compiler-artifact"' "$OUT/build.json" | grep "$1" |
		grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | sort -u
}
mapfile -t EXES < <(executables '"profile":{[^}]*"test":true') # test harnesses
BIN=$(executables '"profile":{[^}]*"test":false' | awk '/\/pmscope$/ && !found { print; found = 1 }')
[ ${#EXES[@]} -gt 0 ] && [ -x "$BIN" ] || { log "cargo reported no test executables or no pmscope binary"; exit 1; }

# ------------------------------------------------------------------ assign tests to layouts
: >"$OUT/steps.all" # layout <TAB> step kind and arguments <TAB> step name
for l in "${LAYOUTS[@]}"; do printf '%s\tcommands\tcommands:%s\n' "${l%%|*}" "${l%%|*}" >>"$OUT/steps.all"; done
unassigned=()
used_exes=()
for exe in "${EXES[@]}"; do
	name=$(basename "$exe")
	mapfile -t tests < <("$exe" --list --ignored --format terse 2>/dev/null | sed -n 's/: test$//p')
	used=0
	for t in ${tests[@]+"${tests[@]}"}; do
		case "$t" in *needs_*::*) ;; *) log "ignored but not hardware-gated (not run in the guest): $t"; continue ;; esac
		placed=0
		for l in "${LAYOUTS[@]}"; do
			for req in ${l##*|}; do
				case "$t" in *needs_"$req"::*)
					printf '%s\ttest %s %s\t%s\n' "${l%%|*}" "$name" "$t" "$t" >>"$OUT/steps.all"
					placed=1
					;;
				esac
			done
		done
		if [ $placed = 1 ]; then used=1; else unassigned+=("$t ($name)"); fi
	done
	[ $used = 1 ] && used_exes+=("$exe")
done
if [ ${#unassigned[@]} -gt 0 ]; then
	log "no guest layout provides what these tests need (add the requirement to LAYOUTS):"
	printf '  %s\n' "${unassigned[@]}" >&2
	exit 1
fi

# ------------------------------------------------------------------ pack steps into boots
# Longest first into the first boot of the layout with room (first-fit decreasing).
BOOTS=()
declare -A ESTIMATE=() TIMEOUT=()
for l in "${LAYOUTS[@]}"; do
	layout=${l%%|*}
	n=0
	awk -F'\t' -v l="$layout" -v unknown=$UNKNOWN_STEP '
		BEGIN { while ((getline line < "lab/durations.txt") > 0) { split(line, f, " "); d[f[1]] = f[2] } }
		$1 == l { print (($3 in d) ? d[$3] : unknown) "\t" $2 "\t" $3 }' "$OUT/steps.all" |
		sort -t$'\t' -k1,1nr >"$OUT/steps.$layout"
	declare -A load=()
	while IFS=$'\t' read -r secs step _; do
		secs=${secs%.*}
		b=0
		while [ $b -lt $n ] && [ $((${load[$b]} + secs)) -gt $CAPACITY ]; do b=$((b + 1)); done
		[ $b = $n ] && { load[$b]=0; n=$((n + 1)); }
		load[$b]=$((${load[$b]} + secs))
		echo "$step" >>"$PAYLOAD/boots/$layout-$((b + 1))"
	done <"$OUT/steps.$layout"
	for b in $(seq 0 $((n - 1))); do
		BOOTS+=("$layout-$((b + 1))")
		ESTIMATE[$layout-$((b + 1))]=$((${load[$b]} + BOOT_OVERHEAD))
		# estimate x slowdown at load 2 / share, rounded up, and never under BOOT_TIMEOUT
		t=$((((${load[$b]} + BOOT_OVERHEAD) * LOAD_SLOWDOWN * 100 + SHARE_OF_TIMEOUT * 10 - 1) / (SHARE_OF_TIMEOUT * 10)))
		TIMEOUT[$layout-$((b + 1))]=$((t > BOOT_TIMEOUT ? t : BOOT_TIMEOUT))
	done
	unset load
done
[ ${#BOOTS[@]} -gt 0 ] || { log "no boot was planned (a bug in the packing)"; exit 1; }
log "budget: a boot's timeout is ${BOOT_TIMEOUT} s (more for a longer step), and its estimate at load 2 at most ${SHARE_OF_TIMEOUT} % of it: at most $CAPACITY s of idle-host steps per ${BOOT_TIMEOUT}-s boot"
for b in "${BOOTS[@]}"; do
	log "  boot $b: $(wc -l <"$PAYLOAD/boots/$b") steps, about ${ESTIMATE[$b]} s idle, $((ESTIMATE[$b] * LOAD_SLOWDOWN / 10)) s at load 2, timeout ${TIMEOUT[$b]} s"
done
[ $PLAN_ONLY = 1 ] && exit 0

# ------------------------------------------------------------------ the payload
copy() { strip -o "$2" "$1" 2>/dev/null || cp "$1" "$2"; } # stripped: a smaller initramfs
copy "$BIN" "$PAYLOAD/pmscope"
for exe in ${used_exes[@]+"${used_exes[@]}"}; do copy "$exe" "$PAYLOAD/bin/$(basename "$exe")"; done
# The C program pmscope run's tests run under the preload library (the guest has no compiler).
${CC:-cc} -O2 -Wall -o "$PAYLOAD/placement-probe" crates/cli/tests/run/placement_probe.c
cp lab/guest.sh "$PAYLOAD/guest.sh"
cp crates/cli/tests/data/old_cpu_commands.txt "$PAYLOAD/old_cpu_commands.txt" 2>/dev/null || true
# PMDK's pool checker for the tx-pm kill test, and PMDK's libpmemobj, which pmscope loads at
# run time (the payload's ELF files do not name it, so lab/vm.sh would not bring it).
command -v pmempool >/dev/null 2>&1 && copy "$(command -v pmempool)" "$PAYLOAD/pmempool"
# Marked executable, so lab/vm.sh brings the libraries it loads (libpmem, libndctl, ...).
for lib in /usr/lib/x86_64-linux-gnu/libpmemobj.so.1 /usr/lib64/libpmemobj.so.1; do
	[ -e "$lib" ] || continue
	mkdir -p "$PAYLOAD/lib"
	cp -L "$lib" "$PAYLOAD/lib/libpmemobj.so.1"
	chmod 0755 "$PAYLOAD/lib/libpmemobj.so.1"
	break
done
# redis and a lean fio for the `app` and `fio` guest tests (see lab/tools.sh).
lab/tools.sh "$PAYLOAD/tools"

# ------------------------------------------------------------------ one guest per boot
failed=()
report=()
for b in "${BOOTS[@]}"; do
	layout=${b%-*}
	log "boot $b: $(wc -l <"$PAYLOAD/boots/$b") steps (layout $layout)"
	start=$(date +%s)
	rc=0
	lab/vm.sh -l "$layout" -t "${TIMEOUT[$b]}" -o "$OUT/$b" -p "$PAYLOAD" -- \
		sh pmscope-lab/guest.sh "$layout" "$b" 2>&1 | tee "$OUT/$b.log" || rc=${PIPESTATUS[0]}
	took=$(($(date +%s) - start))
	share=$((took * 100 / TIMEOUT[$b]))
	note=
	[ $share -gt $SHARE_OF_TIMEOUT ] && note=" (over the ${SHARE_OF_TIMEOUT} % target: refresh lab/durations.txt with --durations, or the host is busier than load 2)"
	report+=("$(printf '%-10s %4d s of its %d s timeout (%3d %%), estimate %d s idle%s' "$b" "$took" "${TIMEOUT[$b]}" "$share" "${ESTIMATE[$b]}" "$note")")
	log "boot $b: ${took} s of its ${TIMEOUT[$b]} s timeout (${share} %)$note"
	case $rc in
	0) ;;
	124) failed+=("$b (timeout)") ;;
	125) failed+=("$b (no boot, see $OUT/$b.log)") ;;
	*) failed+=("$b ($(grep -c '^FAIL ' "$OUT/$b/steps.txt" 2>/dev/null || echo '?') failed)") ;;
	esac
done

for b in "${BOOTS[@]}"; do
	[ -f "$OUT/$b/steps.txt" ] && sed "s/^/  $b: /" "$OUT/$b/steps.txt" >&2
done
log "time against budget, boot by boot:"
printf '  %s\n' "${report[@]}" >&2
log "the stage took $(($(date +%s) - T0)) s (${#BOOTS[@]} boots)"
if [ ${#failed[@]} -gt 0 ]; then
	log "FAILED: ${failed[*]}"
	exit 1
fi
log "every guest step passed"
