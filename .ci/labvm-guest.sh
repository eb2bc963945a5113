#!/bin/sh
# labvm-guest.sh LAYOUT — runs inside the lab guest (busybox sh), started by .ci/labvm-stage
# from /payload with the stage's payload in ./pmscope-lab. Runs the steps below, prints each
# as PASS/FAIL, writes /out/steps.txt, info.txt and info.json, and exits 1 if any step failed.
layout=$1
. /etc/labvm/env
cd /payload/pmscope-lab || exit 1
export PMSCOPE_BIN="$PWD/pmscope" # the CLI tests' binary (not at Cargo's host path here)
export PMSCOPE_RESULTS="$PWD/results.sqlite" # the guest's own store, never a user's
export PMSCOPE_RUN_PROBE="$PWD/placement-probe" # pmscope run's test program, built on the host
[ -x "$PWD/pmempool" ] && export PMSCOPE_PMEMPOOL="$PWD/pmempool" # the tx-pm kill test's checker
export PATH="$PWD/tools/bin:$PATH" # fio, redis-server, redis-benchmark (.ci/labvm-tools)
# The servers of `pmscope app` listen on 127.0.0.1, which exists once loopback is up.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
fails=0

step() { # name command... : run, show the output, record PASS/FAIL
	name=$1
	shift
	echo "=== $name: $*"
	if "$@" </dev/null; then r=PASS; else r=FAIL; fails=$((fails + 1)); fi
	echo "$r $name" | tee -a /out/steps.txt
}

# One hardware-gated test in its own process. --exact with a name that does not exist runs
# nothing and exits 0, so the step passes only if libtest reports exactly 1 passed.
run_test() { # binary test-name
	./bin/"$1" --ignored --exact "$2" --test-threads=1 >/tmp/test.out 2>&1
	rc=$?
	cat /tmp/test.out
	[ $rc = 0 ] && grep -q 'test result: ok. 1 passed' /tmp/test.out
}

# What each layout must provide (labvm.sh exports these when its setup succeeded).
case $layout in
default) need="LABVM_FSDAX_MNT LABVM_DEVDAX LABVM_LEGACY_PMEM LABVM_MEMONLY_NODE" ;;
kmem) need="LABVM_FSDAX_MNT LABVM_MEMONLY_NODE LABVM_KMEM_NODE" ;;
*) echo "unknown layout $layout"; exit 1 ;;
esac
for v in $need; do
	eval "val=\${$v:-}"
	step "env-$v" test -n "$val"
done

# ---------------------------------------------------------------- pmscope on the guest
step "pmscope-info" sh -c './pmscope info > /out/info.txt 2>&1; rc=$?; cat /out/info.txt; exit $rc'
step "pmscope-info-json" sh -c './pmscope info --json > /out/info.json'
step "pmscope-quick" ./pmscope quick --size 64MiB

# The guest's targets; devdax ones need --destroy-data.
targets="file:$LABVM_FSDAX_MNT dram,node=$LABVM_MEMONLY_NODE"
[ -n "${LABVM_DEVDAX:-}" ] && targets="$targets devdax:$LABVM_DEVDAX"
[ -n "${LABVM_KMEM_NODE:-}" ] && targets="$targets dram,node=$LABVM_KMEM_NODE"

# Commands run against every guest target, one per line (64 MiB: TCG runs at ~0.3 GB/s);
# keep each run short: each guest has 300 s (GUEST_TIMEOUT in .ci/labvm-stage).
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
	done <<EOF
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
# Default layout only: each guest has 300 s, and the kmem one has no time to spare.
if [ "$layout" = default ]; then
	step "pmscope-fs[file:$LABVM_FSDAX_MNT file:/tmp]" ./pmscope fs -t "file:$LABVM_FSDAX_MNT" -t file:/tmp --samples 100 --no-store -o /out/fs.jsonl
fi
# The NUMA matrix over the guest's CPU nodes and memory-only node(s).
step "pmscope-numa" ./pmscope numa --size 16MiB --reps 1 --duration 0.02

# ---------------------------------------------------------------- hardware-gated tests
while read -r bin test; do
	[ -n "$test" ] && step "$test" run_test "$bin" "$test"
done <"tests.$layout"

echo "=== layout $layout: $(grep -c '^PASS' /out/steps.txt) passed, $fails failed"
[ $fails = 0 ]
