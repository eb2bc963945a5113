#!/usr/bin/env bash
# interrupts.sh — how soon does pmscope stop after Ctrl-C or SIGTERM (issue 27)? Sends
# SIGINT or SIGTERM (alternately) at a random moment of each command's default run and
# times the exit. Every run must exit 130 (SIGINT) or 143 (SIGTERM), or 0 if it finished
# first; the figures are the time from the signal to the exit (goal: 0.5 s on an idle
# machine) and the CPU time the process spent after the signal (goal: 0.2 s at any load,
# as it does not grow when other work delays the exit): its CPU time at the exit (wait4)
# less its CPU time when the signal was sent, read from /proc/PID/task/*/schedstat (the
# threads alive then) plus /proc/PID/stat's ticks for the threads that had already ended.
# Part of that CPU time is the kernel freeing the process's pages, which every exit pays
# (about 0.09 s per GiB of 4 KiB pages on a 2-vCPU Xeon guest): the script measures that
# rate first, reads the resident memory at the signal (VmRSS), and prints the CPU time
# beyond freeing it too.
#
#   bench/interrupts.sh [N]        N interrupts per command (default 20)
#   PMSCOPE_INTERRUPTS=REGEX       only the commands whose name matches
#
# Commands: latency --full, bandwidth, inst, suite basic (whose first step writes a 1 GiB
# random chain), and kmer count with each table (volatile, static-pm, tx-pm; default
# pools, and named pools on the disk this script is on, where tx-pm msyncs every insert),
# with --method binned, out of core (--bins disk, the scratch file in the script's scratch
# directory, which must be empty of it afterwards) and kmer primers (its out-group streamed
# while it is marked), on three synthetic 4 Mbp genomes. Results go to a scratch
# store; the user's store is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
cargo build --release -q -p pmscope
PMSCOPE=$PWD/target/release/pmscope
SCRATCH=$(mktemp -d)
# Named pools on the disk (not tmpfs): each tx-pm insert msyncs there.
POOLS=$(mktemp -d -p "$PWD/target")
trap 'rm -rf "$SCRATCH" "$POOLS"' EXIT
POOL=$POOLS/interrupted.pool
export PMSCOPE_RESULTS=$SCRATCH/results.sqlite

"$PMSCOPE" kmer synth --length 4M --strains 2 --no-store "$SCRATCH" >/dev/null
mapfile -t G < <(ls "$SCRATCH"/*.fasta)
touch "$SCRATCH/worst" "$SCRATCH/worst_cpu"

now() { date +%s.%N; }

# What freeing memory costs here: any exit, however prompt, hands its pages back to the
# kernel, and that CPU time is the exiting process's. CPU seconds per GiB of touched 4 KiB
# pages unmapped (1 GiB, touched page by page, then munmap), so that the CPU after a signal
# can be told apart from the freeing of what the process held at the signal.
FREE_PER_GIB=$(python3 -c '
import mmap, resource
m = mmap.mmap(-1, 1 << 30)
for i in range(0, 1 << 30, 4096):
    m[i] = 1
r0 = resource.getrusage(resource.RUSAGE_SELF)
m.close()
r1 = resource.getrusage(resource.RUSAGE_SELF)
print("%.4f" % (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))')

# trial SIGNAL DELAY COMMAND...: runs COMMAND, sends SIGNAL after DELAY seconds, prints
# "EXIT SECONDS_TO_EXIT CPU_SECONDS_AFTER_SIGNAL GIB_RESIDENT_AT_SIGNAL"; its stderr goes
# to $SCRATCH/err.
trial() {
	python3 - "$SCRATCH/err" "$@" <<'PY'
import os, signal, subprocess, sys, time
err, sig, delay, cmd = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
hz = os.sysconf("SC_CLK_TCK")
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(err, "w"))
time.sleep(delay)

def ticks(path):
    # utime and stime: fields 14 and 15 of stat, the 12th and 13th after the name.
    return sum(map(int, open(path).read().rsplit(")", 1)[1].split()[11:13]))

def cpu_now(pid):
    # Live threads from schedstat (ns, exact); the ended ones from the process's ticks
    # less the live threads' ticks.
    live_ns = live_ticks = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            live_ns += int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
            live_ticks += ticks(f"/proc/{pid}/task/{t}/stat")
        except (FileNotFoundError, ProcessLookupError):
            pass
    return live_ns / 1e9 + max(ticks(f"/proc/{pid}/stat") - live_ticks, 0) / hz

def resident_gib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**20
    return 0.0

try:
    before = cpu_now(p.pid)
    rss = resident_gib(p.pid)
except (FileNotFoundError, ProcessLookupError, IndexError):
    before, rss = None, 0.0  # it had ended already
t0 = time.time()
try:
    os.kill(p.pid, getattr(signal, "SIG" + sig))
except ProcessLookupError:
    pass
_, status, usage = os.wait4(p.pid, 0)
took = time.time() - t0
code = os.waitstatus_to_exitcode(status)
after = 0.0 if before is None else max(usage.ru_utime + usage.ru_stime - before, 0.0)
print(f"{code} {took:.3f} {after:.3f} {rss:.3f}")
PY
}

# one NAME COMMAND...: N interrupts; prints the slowest stop and how many runs it stopped.
one() {
	local name=$1
	shift
	if [ -n "${PMSCOPE_INTERRUPTS:-}" ] && ! [[ $name =~ $PMSCOPE_INTERRUPTS ]]; then
		return 0
	fi
	local worst=0 worst_cpu=0 worst_beyond=0 stopped=0 finished=0 i
	# The length of one uninterrupted run (at most 10 s) sets the window of the signals:
	# from 5 % to 90 % of it, at most 3.2 s in, so quick runs are hit mid-way too.
	rm -f "$POOL"
	local t0 full
	t0=$(now)
	timeout 10 "$@" >/dev/null 2>&1 || true
	full=$(python3 -c "print(min($(now) - $t0, 10.0))")
	for i in $(seq 1 "$N"); do
		rm -f "$POOL"
		local sig=INT want=130
		if [ $((i % 2)) = 0 ]; then sig=TERM want=143; fi
		local delay code took cpu rss
		delay=$(python3 -c "import random; print(round(random.uniform(0.05 * $full, min(0.9 * $full, 3.2)), 3))")
		read -r code took cpu rss < <(trial "$sig" "$delay" "$@")
		if [ "$code" = 0 ]; then
			finished=$((finished + 1))
			continue
		fi
		if [ "$code" != "$want" ]; then
			echo "$name: SIG$sig gave exit $code, not $want: $(tail -1 "$SCRATCH/err")" >&2
			exit 1
		fi
		stopped=$((stopped + 1))
		worst=$(python3 -c "print(max($worst, $took))")
		worst_cpu=$(python3 -c "print(max($worst_cpu, $cpu))")
		worst_beyond=$(python3 -c "print(round(max($worst_beyond, $cpu - $rss * $FREE_PER_GIB), 3))")
	done
	printf '%-38s %3d stopped  %3d finished first  slowest stop %6.3f s  most CPU after the signal %6.3f s (%6.3f s beyond freeing its memory)\n' "$name" "$stopped" "$finished" "$worst" "$worst_cpu" "$worst_beyond"
	echo "$worst" >>"$SCRATCH/worst"
	echo "$worst_cpu" >>"$SCRATCH/worst_cpu"
	echo "$worst_beyond" >>"$SCRATCH/worst_beyond"
}

echo "# interrupts: $N per command, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg); freeing 1 GiB of 4 KiB pages costs $FREE_PER_GIB CPU-s here"
one "latency --full" "$PMSCOPE" latency --full
one "bandwidth" "$PMSCOPE" bandwidth
one "inst" "$PMSCOPE" inst
one "suite basic" "$PMSCOPE" suite basic
one "kmer count (volatile)" "$PMSCOPE" kmer count "${G[@]}"
one "kmer count --table static-pm" "$PMSCOPE" kmer count --table static-pm "${G[@]}"
one "kmer count --table tx-pm -t shm" "$PMSCOPE" kmer count --table tx-pm -t shm "${G[@]}"
one "kmer count --table static-pm --pool" "$PMSCOPE" kmer count --table static-pm --pool "$POOL" "${G[@]}"
one "kmer count --table tx-pm --pool (msync)" "$PMSCOPE" kmer count --table tx-pm --pool "$POOL" "${G[@]}"
one "kmer count --method binned" "$PMSCOPE" kmer count --method binned "${G[@]}"
one "kmer count --bins disk (out of core)" "$PMSCOPE" kmer count --bins disk --tmp "$SCRATCH" "${G[@]}"
one "kmer primers (out-group streamed)" "$PMSCOPE" kmer primers --in-group "${G[0]}" "${G[1]}" --out-group "${G[@]:2}"
# Out of core, the bins are an unnamed (O_TMPFILE) file, or a named one removed on every exit.
if ls -A "$SCRATCH" | grep -q '^\.pmscope-bins-'; then
	echo "scratch files left behind: $(ls -A "$SCRATCH" | grep '^\.pmscope-bins-' | tr '\n' ' ')" >&2
	exit 1
fi
echo "slowest stop of all: $(sort -g "$SCRATCH/worst" | tail -1) s (goal: 0.5 s idle)"
echo "most CPU after a signal: $(sort -g "$SCRATCH/worst_cpu" | tail -1) s (goal: 0.2 s); beyond freeing the memory held at the signal: $(sort -g "$SCRATCH/worst_beyond" | tail -1) s"
