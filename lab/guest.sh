#!/bin/sh
# lab/guest.sh LAYOUT BOOT — runs inside the lab guest (busybox sh), started by lab/stage.sh
# from /payload with the stage's payload in ./pmscope-lab. Runs the steps the stage packed into
# boots/BOOT: `commands` (this layout's pmscope command lines, below) and `test BINARY NAME`
# (one hardware-gated test in its own process). Prints each step as PASS/FAIL with its
# seconds, writes /out/steps.txt ("PASS name seconds"), /out/blocks.txt (the command block's
# total), info.txt and info.json, and exits 1 if any step failed.
layout=$1
boot=$2
. /etc/lab/env
cd /payload/pmscope-lab || exit 1
export PMSCOPE_BIN="$PWD/pmscope" # the CLI tests' binary (not at Cargo's host path here)
export PMSCOPE_RESULTS="$PWD/results.sqlite" # the guest's own store, never a user's
export PMSCOPE_RUN_PROBE="$PWD/placement-probe" # pmscope run's test program, built on the host
[ -x "$PWD/pmempool" ] && export PMSCOPE_PMEMPOOL="$PWD/pmempool" # the tx-pm kill test's checker
[ -e "$PWD/lib/libpmemobj.so.1" ] && export PMSCOPE_LIBPMEMOBJ="$PWD/lib/libpmemobj.so.1" # loaded at run time
export PATH="$PWD/tools/bin:$PATH" # fio, redis-server, redis-benchmark (lab/tools.sh)
# The servers of `pmscope app` listen on 127.0.0.1, which exists once loopback is up.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
fails=0
now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

step() { # name command... : run, show the output, record PASS/FAIL and the seconds
	name=$(echo "$1" | tr " " _) # no spaces: steps.txt is "RESULT name seconds"
	shift
	echo "=== $name: $*"
	step_t0=$(now)
	if "$@" </dev/null; then r=PASS; else r=FAIL; fails=$((fails + 1)); fi
	echo "$r $name $(since "$step_t0")" | tee -a /out/steps.txt
}

# One hardware-gated test in its own process. --exact with a name that does not exist runs
# nothing and exits 0, so the step passes only if libtest reports exactly 1 passed.
run_test() { # binary test-name
	./bin/"$1" --ignored --exact "$2" --test-threads=1 >/tmp/test.out 2>&1
	rc=$?
	cat /tmp/test.out
	[ $rc = 0 ] && grep -q 'test result: ok. 1 passed' /tmp/test.out
}

# The layout's pmscope command lines: a boot's `commands` step.
commands() {
	# What each layout must provide (lab/init.sh exports these when its setup succeeded).
	case $layout in
	pmem | oldcpu) need="LABVM_FSDAX_MNT LABVM_DEVDAX LABVM_LEGACY_PMEM LABVM_MEMONLY_NODE" ;;
	kmem) need="LABVM_FSDAX_MNT LABVM_MEMONLY_NODE LABVM_KMEM_NODE" ;;
	cxl) need="LABVM_CXL_REGION LABVM_CXL_NODE LABVM_CXL_DEVDAX LABVM_MEMONLY_NODE" ;;
	*) echo "unknown layout $layout"; exit 1 ;;
	esac
	for v in $need; do
		eval "val=\${$v:-}"
		step "env-$v" test -n "$val"
	done
	[ "$layout" = oldcpu ] && { old_cpu_commands; return; }
	[ "$layout" = cxl ] && { cxl_commands; return; }

	# ---------------------------------------------------------------- pmscope on the guest
	step "pmscope-info" sh -c './pmscope info > /out/info.txt 2>&1; rc=$?; cat /out/info.txt; exit $rc'
	step "pmscope-info-json" sh -c './pmscope info --json > /out/info.json'
	step "pmscope-quick" ./pmscope quick --size 64MiB

	# The guest's targets; devdax ones need --destroy-data.
	targets="file:$LABVM_FSDAX_MNT dram,node=$LABVM_MEMONLY_NODE"
	[ -n "${LABVM_DEVDAX:-}" ] && targets="$targets devdax:$LABVM_DEVDAX"
	[ -n "${LABVM_KMEM_NODE:-}" ] && targets="$targets dram,node=$LABVM_KMEM_NODE"

	# Commands run against every guest target, one per line (64 MiB: TCG runs at ~0.3 GB/s);
	# keep each run short: each boot has its budget (lab/stage.sh).
	PER_TARGET='verify --size 64MiB
	latency --sizes 4KiB,256KiB,16MiB --reps 2 --samples 2000
	inst --ops load,store+clwb,ntstore --sizes 64,256 --count 2000 --region 16MiB
	bandwidth --pattern seq --sizes 4KiB --threads 1 --region 16MiB --duration 0.05 --reps 1
	rap --distances 0,1,64 --samples 500 --region 16MiB
	loaded --delays 0,1000 --samples 1000 --probe-region 16MiB --traffic-region 8MiB --traffic-access 4KiB
	poly --preset small --kernels gemm,jacobi-2d,fdtd-2d --repetitions 1'

	# The commands that matter on persistent memory only: the DAX targets (fsdax, devdax).
	PER_DAX_TARGET='sync --region 16MiB --reps 1 --duration 0.02 --pattern seq
	probe read-buffer --sizes 1KiB,16KiB --count 100
	probe write-buffer --sizes 1KiB,16KiB --count 100
	probe rw-buffer --sizes 1KiB,16KiB --count 100
	probe prefetch --sizes 1KiB,16KiB --count 100
	probe chase-write --sizes 1KiB,16KiB --count 100'

	for t in $targets; do
		extra=
		case $t in devdax:*) extra=--destroy-data ;; esac
		case $t in file:* | devdax:*) more=$PER_DAX_TARGET ;; *) more= ;; esac
		while read -r cmd args; do # a here-document, so `fails` survives the loop
			[ -n "$cmd" ] || continue
			# shellcheck disable=SC2086 # args is a word list
			step "pmscope-$cmd[$t]" ./pmscope "$cmd" -t "$t" $args $extra
		done <<-EOF
	$PER_TARGET
	$more
	EOF
	done
	# The side-by-side view of every guest target, as a user would run it.
	extra=
	case $targets in *devdax:*) extra=--destroy-data ;; esac
	set --
	for t in $targets; do set -- "$@" -t "$t"; done
	step "pmscope-quick[guest targets]" ./pmscope quick --size 64MiB "$@" $extra
	# SIGKILL on the fsdax mount (issue 12): the scratch file is unnamed (O_TMPFILE) yet
	# MAP_SYNC, so a killed run leaves nothing in the mount, and the freed blocks return.
	kill_leaves_nothing() {
		mnt=$1
		before=$(df -k "$mnt" | awk 'NR == 2 { print $4 }')
		./pmscope latency -t "file:$mnt" --sizes 16MiB,32MiB --reps 50 --samples 20000 >/tmp/kill.out 2>&1 &
		pid=$!
		# Until the file is allocated (the pre-fault runs after it): the kill must hit a live one.
		during=$before
		for _ in $(seq 40); do
			sleep 1
			during=$(df -k "$mnt" | awk 'NR == 2 { print $4 }')
			[ "$during" -lt $((before - 16384)) ] && break
		done
		sleep 1
		kill -9 "$pid"
		wait "$pid" 2>/dev/null
		left=$(find "$mnt" -maxdepth 1 -name 'pmscope-*' | wc -l)
		sleep 1
		after=$(df -k "$mnt" | awk 'NR == 2 { print $4 }')
		cat /tmp/kill.out
		echo "files left: $left; free KiB before $before, while running $during, after the kill $after"
		[ "$during" -lt $((before - 16384)) ] && [ "$left" = 0 ] && [ "$after" -ge $((before - 1024)) ]
	}
	step "pmscope-sigkill[file:$LABVM_FSDAX_MNT]" kill_leaves_nothing "$LABVM_FSDAX_MNT"
	# File-operation latency on the DAX mount beside tmpfs (issue 16): its records for the
	# report (target/labvm/<layout>/fs.jsonl on the host). `pmscope fio` and `pmscope app redis
	# --aof-on` on the DAX mount are hardware-gated tests (needs_fsdax) below.
	if [ "$layout" = pmem ]; then
		step "pmscope-fs[file:$LABVM_FSDAX_MNT file:/tmp]" ./pmscope fs -t "file:$LABVM_FSDAX_MNT" -t file:/tmp --samples 100 --no-store -o /out/fs.jsonl
	fi
	# The NUMA matrix over the guest's CPU nodes and memory-only node(s).
	step "pmscope-numa" ./pmscope numa --size 16MiB --reps 1 --duration 0.02
}

# The CXL layout: info, and short runs on the CXL node and the CXL devdax device. QEMU 7.2
# serves CXL memory as MMIO (about 5 MB/s under TCG: 16 MiB take seconds to fault in), so
# the sizes are small and the per-target command list is not run here.
cxl_commands() {
	step "pmscope-info[cxl]" sh -c './pmscope info > /out/info.txt 2>&1; rc=$?; cat /out/info.txt; exit $rc'
	step "pmscope-info-json[cxl]" sh -c './pmscope info --json > /out/info.json'
	for t in "dram,node=$LABVM_CXL_NODE" "devdax:$LABVM_CXL_DEVDAX"; do
		extra=
		case $t in devdax:*) extra=--destroy-data ;; esac
		step "pmscope-verify[$t]" ./pmscope verify -t "$t" --size 4MiB $extra
		step "pmscope-latency[$t]" ./pmscope latency -t "$t" --sizes 4KiB,1MiB --reps 1 --samples 200 $extra
	done
}

# The old-CPU layout: the guest CPU must lack what the host's has, and every line of
# crates/cli/tests/data/old_cpu_commands.txt ("exit-code<TAB>command line[<TAB>first line of
# stderr]") must end with its exit code, its first stderr line where one is given, and never
# with a signal (SIGILL is 132) or a panic. The lines run in order in one scratch directory
# (later ones read what earlier ones wrote), with this payload's pmscope first on PATH.
old_cpu_commands() {
	for flag in avx2 avx512f clwb clflushopt; do
		step "cpu-lacks-$flag" sh -c "! grep -qw $flag /proc/cpuinfo"
	done
	step "pmscope-info[old cpu]" sh -c './pmscope info > /out/info.txt 2>&1; rc=$?; cat /out/info.txt; exit $rc'
	[ -f old_cpu_commands.txt ] || { step "old_cpu_commands.txt in the payload" false; return; }
	payload=$PWD
	mkdir -p /tmp/old-cpu
	n=0
	tab=$(printf '\t')
	while IFS="$tab" read -r want cmdline first; do
		case $want in '' | '#'*) continue ;; esac
		n=$((n + 1))
		step "old-cpu-$n[$cmdline]" expect_exit "$payload" "$want" "$cmdline" "$first"
	done <old_cpu_commands.txt
	cd "$payload" || exit 1
}
expect_exit() { # payload code command-line first-stderr-line
	(
		cd /tmp/old-cpu || exit 1
		PATH="$1:$PATH" PMSCOPE_RESULTS=./results.sqlite sh -c "$3" >/tmp/old.out 2>/tmp/old.err
	)
	rc=$?
	head -n 5 /tmp/old.out /tmp/old.err
	if grep -q 'panicked' /tmp/old.err; then echo "a panic"; return 1; fi
	[ "$rc" = "$2" ] || { echo "exit $rc, wanted $2"; return 1; }
	if [ -n "$4" ] && [ "$(head -n 1 /tmp/old.err)" != "$4" ]; then
		echo "first line of stderr: $(head -n 1 /tmp/old.err)"
		echo "wanted:               $4"
		return 1
	fi
}

# ---------------------------------------------------------------- the boot's steps
# boots/BOOT lists this boot's steps (lab/stage.sh packs them by their measured times).
while read -r kind bin test; do
	case $kind in
	commands)
		block_t0=$(now)
		commands
		echo "PASS commands:$layout $(since "$block_t0")" >>/out/blocks.txt
		;;
	test) step "$test" run_test "$bin" "$test" ;;
	*) step "unknown step '$kind'" false ;;
	esac
done <"boots/$boot"

[ -s /out/steps.txt ] || { echo "=== boot $boot: no step ran (boots/$boot is empty?)"; exit 1; }
echo "=== boot $boot: $(grep -c '^PASS' /out/steps.txt) passed, $fails failed"
[ $fails = 0 ]
