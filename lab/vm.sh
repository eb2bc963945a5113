#!/usr/bin/env bash
# lab/vm.sh — pmscope's lab guest. Boots a throw-away qemu guest whose memory has the tiers
# pmscope measures (NVDIMMs in the ACPI NFIT, legacy e820 pmem, a memory-only NUMA node, a
# dax/kmem node, ACPI HMAT figures, hugetlbfs; or CXL memory devices), runs one command in
# it, prints that command's output as it runs, and exits with its status. Nothing is installed
# on the host: the guest kernel is Debian's cloud kernel package, downloaded with apt-get and
# unpacked into a cache.
#
# usage: lab/vm.sh [options] [--] COMMAND [ARG...]
#   -l, --layout NAME   pmem (default) | kmem | oldcpu | cxl, see LAYOUTS below
#   -p, --payload PATH  copied into the guest as /payload/<basename> (repeatable); the shared
#                       libraries of its executable ELF files come along
#   -o, --out DIR       the guest's /out directory, copied back to DIR after COMMAND
#   -t, --timeout SEC   wall-clock limit of the whole run, boot included (default 600)
#       --accel A       auto (default) | tcg | kvm. auto takes KVM only where it can work (a
#                       usable /dev/kvm, vmx/svm in the CPU flags, not a nested PVM host) and
#                       falls back to TCG when that guest does not reach its init
#       --keep          keep the run's work directory (console log, images, initramfs)
# COMMAND runs in /payload with stdin /dev/null. Inside the guest /etc/lab/env exports:
#   LABVM_LAYOUT              the layout's name
#   LABVM_FSDAX_DEV/_MNT      the 1st NVDIMM as an fsdax namespace, ext4 -o dax on /mnt/pmem,
#                             made with a 2 MiB stripe so file extents allow PMD faults
#   LABVM_DEVDAX              the 2nd NVDIMM as devdax, 2 MiB alignment (not with kmem)
#   LABVM_KMEM_NODE           kmem only: the CPU-less node the 2nd NVDIMM became
#   LABVM_LEGACY_PMEM         the memmap=512M!512M region's block device (raw, DAX-capable)
#   LABVM_MEMONLY_NODE=2      a node with 1 GiB of RAM and no CPUs
#   LABVM_HUGETLBFS           hugetlbfs (2 MiB pages, 64 reserved)
#   cxl only (no NVDIMMs, no legacy pmem there; see "the machine" below):
#   LABVM_CXL_REGION          the CXL pmem region interleaved over both type-3 devices
#   LABVM_CXL_NODE            the CPU-less node its 1st namespace became (devdax + kmem)
#   LABVM_CXL_DEVDAX          its 2nd namespace as devdax, 2 MiB alignment
# Exit status: COMMAND's own; 124 when the timeout struck; 125 when the guest could not be
# built or booted, or never reported a status.
#
# Environment: PMSCOPE_LAB_CACHE (default target/lab in the repository, beside Cargo's build
# output): the guest kernel, unpacked once, and the runs' work directories.
#
# How it works, and why (the technique of a qemu NVDIMM lab is public: QEMU's docs/nvdimm.txt,
# the kernel's Documentation/driver-api/nvdimm, ndctl's man pages):
# - The kernel boots from its uncompressed vmlinux through the PVH entry note: under TCG the
#   bzImage decompressor alone takes seconds.
# - The root file system is an initramfs: busybox for the shell and tools, the NVDIMM/DAX
#   modules with their dependencies, ndctl/daxctl/numactl/mke2fs with their libraries.
# - Three serial ports: the console (kernel and setup log, kept in the work directory), the
#   command's output (streamed to stdout), the status (exit code, times, /out as base64 tar).
# - qemu runs under timeout(1) and with PR_SET_PDEATHSIG (setpriv), so no guest outlives the
#   run, even when this script is SIGKILLed.
set -eu # no pipefail: `grep -q`/`head` end pipelines early by design, and a SIGPIPE there is no failure

LAYOUT=pmem
TIMEOUT=600
ACCEL=auto
KEEP=0
OUT=
PAYLOADS=()
CACHE=${PMSCOPE_LAB_CACHE:-$(cd "$(dirname "$0")/.." && pwd)/target/lab}

say() { printf 'lab/vm: %s\n' "$*" >&2; }
fail() {
	say "$*"
	exit 125
}

while [ $# -gt 0 ]; do
	case $1 in
	-l | --layout) LAYOUT=$2; shift 2 ;;
	-p | --payload) PAYLOADS+=("$2"); shift 2 ;;
	-o | --out) OUT=$2; shift 2 ;;
	-t | --timeout) TIMEOUT=$2; shift 2 ;;
	--accel) ACCEL=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) fail "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || fail "no command to run in the guest (see --help)"

# ------------------------------------------------------------------------------ LAYOUTS
# Each layout: the guest CPU (under TCG, and under KVM), whether the 2nd NVDIMM is onlined as
# system RAM, whether CXL devices replace the NVDIMMs. The NUMA nodes are the same in all.
CXL=0
case $LAYOUT in
pmem) TCG_CPU=max KVM_CPU=host KMEM=0 ;;
kmem) TCG_CPU=max KVM_CPU=host KMEM=1 ;;
# Two CXL type-3 memory devices behind a CXL host bridge instead of the NVDIMMs (the machine
# is a q35 then, the only x86 machine with CXL).
cxl) TCG_CPU=max KVM_CPU=host KMEM=0 CXL=1 ;;
# A CPU without the newer instructions pmscope has kernels for: no AVX2 (and so no AVX-512),
# no clwb, no clflushopt, no fast strings (ERMS, FSRM); AVX (256-bit floating point) stays,
# as on Sandy Bridge.
oldcpu)
	TCG_CPU=max,-avx2,-clwb,-clflushopt,-avx512f,-avx512bw,-avx512dq,-avx512vl,-erms,-fsrm
	KVM_CPU=host,-avx2,-clwb,-clflushopt,-avx512f,-avx512bw,-avx512dq,-avx512vl,-erms,-fsrm
	KMEM=0
	;;
*) fail "unknown layout $LAYOUT: use pmem, kmem, oldcpu or cxl" ;;
esac
case $ACCEL in auto | tcg | kvm) ;; *) fail "--accel takes auto, tcg or kvm, not $ACCEL" ;; esac

for tool in qemu-system-x86_64 busybox ndctl daxctl numactl mke2fs filefrag cpio gzip setpriv timeout; do
	command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || [ -x "/sbin/$tool" ] ||
		fail "$tool is missing on the host (./dev setup installs the lab's Debian packages)"
done
busybox --list | grep -x depmod >/dev/null || fail "busybox has no depmod applet (Debian busybox-static has)"
T_START=$(date +%s.%N)

# ------------------------------------------------------------------------------ work directory
mkdir -p "$CACHE"
for stale in "$CACHE"/run-*; do # the work directories of runs that were SIGKILLed
	[ -d "$stale" ] || continue
	owner=$(cat "$stale/owner" 2>/dev/null || echo 0)
	kill -0 "$owner" 2>/dev/null || rm -rf "$stale"
done
WORK=$(mktemp -d "$CACHE/run-XXXXXX")
echo $$ >"$WORK/owner"
QEMU_PID=
STREAM_PID=
stop_guest() {
	if [ -n "$QEMU_PID" ]; then
		kill "$QEMU_PID" 2>/dev/null || true
		local i
		for i in $(seq 20); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$QEMU_PID" 2>/dev/null || true
		wait "$QEMU_PID" 2>/dev/null || true
		QEMU_PID=
	fi
	if [ -n "$STREAM_PID" ]; then
		kill "$STREAM_PID" 2>/dev/null || true
		wait "$STREAM_PID" 2>/dev/null || true
		STREAM_PID=
	fi
}
finish() {
	local rc=$?
	stop_guest
	if [ $KEEP = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# ------------------------------------------------------------------------------ guest kernel
# Debian's cloud kernel: every NVDIMM, DAX, kmem, HMAT and CXL option is there (checked below),
# and it is small (27 MB). Downloaded once into the cache, never installed.
kernel_package() {
	local meta=linux-image-cloud-amd64 pkg
	apt-cache show "$meta" >/dev/null 2>&1 || { say "no apt lists yet: apt-get update"; apt-get update -qq >&2; }
	pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ && !found { print $2; found = 1 }')
	[ -n "$pkg" ] || fail "apt knows no $meta (is Debian's main archive in the apt sources?)"
	echo "$pkg"
}
KPKG=$(kernel_package)
KDIR=$CACHE/kernel/$KPKG
if [ ! -f "$KDIR/ready" ]; then
	say "fetching the guest kernel $KPKG (once; cached in $CACHE)"
	rm -rf "$KDIR"
	mkdir -p "$KDIR/deb"
	(cd "$KDIR/deb" && apt-get download -q -o APT::Sandbox::User=root "$KPKG" >&2) ||
		fail "apt-get download $KPKG failed"
	dpkg-deb -x "$KDIR"/deb/*.deb "$KDIR/tree"
	rm -rf "$KDIR/deb"
	KVER=$(ls "$KDIR/tree/lib/modules")
	[ -f "$KDIR/tree/lib/modules/$KVER/modules.dep" ] || busybox depmod -b "$KDIR/tree" "$KVER"
	touch "$KDIR/ready"
fi
KVER=$(ls "$KDIR/tree/lib/modules")
MODDIR=$KDIR/tree/lib/modules/$KVER
CONFIG=$KDIR/tree/boot/config-$KVER
for option in LIBNVDIMM BLK_DEV_PMEM ACPI_NFIT FS_DAX DEV_DAX DEV_DAX_PMEM DEV_DAX_KMEM X86_PMEM_LEGACY ACPI_HMAT NUMA HUGETLBFS; do
	grep -Eq "^CONFIG_$option=[ym]" "$CONFIG" || fail "the guest kernel $KVER lacks CONFIG_$option"
done
if [ $CXL = 1 ]; then
	for option in CXL_BUS CXL_ACPI CXL_PCI CXL_MEM CXL_PMEM CXL_PORT CXL_REGION; do
		grep -Eq "^CONFIG_$option=[ym]" "$CONFIG" || fail "the guest kernel $KVER lacks CONFIG_$option (the cxl layout needs it)"
	done
fi

# The uncompressed kernel: the payload after the first compression magic that decompresses to
# an ELF file (the bzImage holds one compressed vmlinux; Debian's cloud kernel uses lz4 or xz).
unpacked_vmlinux() {
	local image=$1 target=$2 magic offset
	for magic in '\x02\x21\x4c\x18:lz4 -dc' '\xfd\x37\x7a\x58\x5a\x00:xz -dc' '\x1f\x8b\x08:gzip -dc'; do
		for offset in $(LC_ALL=C grep -obUaP "${magic%%:*}" "$image" | cut -d: -f1 | head -n 8); do
			# shellcheck disable=SC2086 # the decompressor and its flags
			tail -c +$((offset + 1)) "$image" | ${magic#*:} >"$target.part" 2>/dev/null || true
			if [ "$(head -c 4 "$target.part" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
				mv "$target.part" "$target"
				return 0
			fi
		done
	done
	rm -f "$target.part"
	return 1
}
BOOT=$KDIR/tree/boot/vmlinuz-$KVER
if [ ! -f "$KDIR/vmlinux" ] && [ ! -f "$KDIR/no-vmlinux" ]; then
	unpacked_vmlinux "$BOOT" "$KDIR/vmlinux" || {
		touch "$KDIR/no-vmlinux"
		say "could not unpack vmlinux; booting the bzImage (slower under TCG)"
	}
fi
[ -f "$KDIR/vmlinux" ] && BOOT=$KDIR/vmlinux

# ------------------------------------------------------------------------------ initramfs
ROOT=$WORK/root
mkdir -p "$ROOT"/{usr/bin,usr/sbin,usr/lib,usr/lib64,dev,proc,sys,tmp,run,root,mnt/pmem,payload,out,etc/lab}
for d in bin sbin lib lib64; do ln -s "usr/$d" "$ROOT/$d"; done

host_path() { command -v "$1" 2>/dev/null || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; } || { [ -x "/sbin/$1" ] && echo "/sbin/$1"; }; }
put() { # put HOST_FILE [GUEST_PATH]: a copy of the file (symlinks resolved)
	mkdir -p "$ROOT$(dirname "${2:-$1}")"
	cp -L --remove-destination "$1" "$ROOT${2:-$1}"
}
put_libraries() { # the shared libraries an ELF file loads, each once
	local lib
	for lib in $(ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		[ -e "$ROOT$lib" ] || put "$lib"
	done
}
put_program() { # put_program NAME GUEST_PATH
	local p
	p=$(host_path "$1") || return 1
	put "$p" "$2"
	put_libraries "$p"
}
put_program busybox /usr/bin/busybox
put_program ndctl /usr/bin/ndctl
put_program daxctl /usr/bin/daxctl
put_program numactl /usr/bin/numactl
put_program mke2fs /usr/sbin/mke2fs
put_program filefrag /usr/sbin/filefrag # the tests' independent account of DAX file extents
ln -s mke2fs "$ROOT/usr/sbin/mkfs.ext4"
[ -f /etc/mke2fs.conf ] && put /etc/mke2fs.conf
for optional in cxl numastat migratepages; do put_program "$optional" "/usr/bin/$optional" || true; done

# Kernel modules with what they depend on (built-ins are skipped; ext4's checksum module and
# the CXL ones are modules in some kernels only).
MODULES="libnvdimm nfit nd_btt nd_pmem nd_e820 device_dax dax_pmem kmem dax_hmem ext4 crc32c_generic crc32c_intel"
declare -A added=()
put_module() {
	local name=$1 rel dep
	grep -Eq "/${name}\.ko(\.[a-z]+)?$" "$MODDIR/modules.builtin" 2>/dev/null && return 0
	rel=$(grep -m 1 -E "(^|/)${name//_/[-_]}\.ko(\.[a-z]+)?:" "$MODDIR/modules.dep" | cut -d: -f1)
	if [ -z "$rel" ]; then
		case $name in crc32c_*) ;; *) say "warning: the kernel has no module $name" ;; esac
		return 0
	fi
	[ -n "${added[$rel]:-}" ] && return 0
	added[$rel]=1
	put "$MODDIR/$rel" "/lib/modules/$KVER/$rel"
	for dep in $(grep -E "^$rel:" "$MODDIR/modules.dep" | cut -d: -f2-); do
		dep=${dep##*/}
		put_module "${dep%%.ko*}"
	done
}
if [ $CXL = 1 ]; then MODULES="$MODULES cxl_acpi cxl_pci cxl_mem cxl_pmem"; fi
for m in $MODULES; do put_module "$m"; done
cp "$MODDIR"/modules.builtin* "$ROOT/lib/modules/$KVER/" 2>/dev/null || true
busybox depmod -b "$ROOT" "$KVER"
echo "$MODULES" >"$ROOT/etc/lab/modules"

for p in ${PAYLOADS[@]+"${PAYLOADS[@]}"}; do
	[ -e "$p" ] || fail "no payload at $p"
	cp -a "$p" "$ROOT/payload/"
	while IFS= read -r -d '' f; do
		[ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] && put_libraries "$f"
	done < <(find "$p" -type f -perm -u+x -print0)
done
{
	echo '#!/bin/sh'
	printf '%q ' "$@"
	echo
} >"$ROOT/etc/lab/command"
printf 'LAYOUT=%s\nKMEM=%s\nCXL=%s\n' "$LAYOUT" "$KMEM" "$CXL" >"$ROOT/etc/lab/layout"
cp "$(dirname "$0")/init.sh" "$ROOT/init"
chmod 755 "$ROOT/init" "$ROOT/etc/lab/command"
(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1 >"$WORK/initrd.gz")
T_BUILT=$(date +%s.%N)

# ------------------------------------------------------------------------------ the machine
# 3 GiB in three 1-GiB nodes: 0 and 1 with a CPU each, 2 with none (a memory-only tier), and an
# empty node 3 that the 2nd NVDIMM belongs to (with kmem, it becomes that node's memory).
# memmap=512M!512M turns 512 MiB of node 0 into legacy pmem. HMAT declares local DRAM 80 ns /
# 20 GB/s, the other CPU node 130 ns / 10 GB/s, node 2 250 ns / 8 GB/s, and a 64 MiB
# direct-mapped write-back memory-side cache in front of node 2 (as Optane Memory Mode's DRAM
# or a CXL expander's cache would be: the kernel lists it under memory_side_cache/).
if [ $CXL = 1 ]; then
	MACHINE=(-machine q35,hmat=on,cxl=on -smp 2 -m 3G,slots=4,maxmem=10G)
else
	MACHINE=(-machine pc,nvdimm=on,hmat=on -smp 2 -m 3G,slots=4,maxmem=10G)
fi
for n in 0 1 2; do MACHINE+=(-object "memory-backend-ram,id=ram$n,size=1G"); done
MACHINE+=(-numa node,nodeid=0,cpus=0,memdev=ram0 -numa node,nodeid=1,cpus=1,memdev=ram1
	-numa node,nodeid=2,memdev=ram2,initiator=0 -numa node,nodeid=3)
for pair in 0:1:21 0:2:30 1:2:30 0:3:40 1:3:40 2:3:40; do
	IFS=: read -r a b d <<<"$pair"
	MACHINE+=(-numa "dist,src=$a,dst=$b,val=$d")
done
for cpu_node in 0 1; do
	for mem_node in 0 1 2; do
		if [ $mem_node = $cpu_node ]; then lat=80 bw=20G; elif [ $mem_node = 2 ]; then lat=250 bw=8G; else lat=130 bw=10G; fi
		MACHINE+=(-numa "hmat-lb,initiator=$cpu_node,target=$mem_node,hierarchy=memory,data-type=access-latency,latency=$lat"
			-numa "hmat-lb,initiator=$cpu_node,target=$mem_node,hierarchy=memory,data-type=access-bandwidth,bandwidth=$bw")
	done
done
MACHINE+=(-numa hmat-cache,node-id=2,size=64M,level=1,associativity=direct,policy=write-back,line=64)
APPEND="console=ttyS0 panic=-1 loglevel=4 transparent_hugepage=madvise tsc=reliable no_timer_check"
if [ $CXL = 1 ]; then
	# CXL (QEMU's docs/system/devices/cxl.rst): a CXL host bridge (pxb-cxl) with two root
	# ports, a persistent type-3 device on each (file-backed memory and a label storage
	# area), and a 4 GiB CXL fixed memory window over that bridge. QEMU 7.2's type-3 device is
	# persistent only (volatile-memdev came with 8.0), and it serves the window as MMIO under
	# TCG and KVM alike: every access goes through QEMU's interleave decoding (about 5 MB/s
	# under TCG; under KVM code cannot run from it). Its host bridge has one HDM decoder, so
	# one region; a 2nd bridge with a window of its own gives a 2nd region, but memory in it
	# reads back as zeros there (docs/lab.md), so the lab has one region interleaved over
	# both devices. The kernel gives the window a NUMA node of its own (SRAT does not cover
	# it): the node the region's kmem part becomes.
	MACHINE+=(-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1)
	for i in 0 1; do
		MACHINE+=(-object "memory-backend-file,id=cxlmem$i,share=on,mem-path=$WORK/cxl$i.img,size=512M"
			-object "memory-backend-file,id=cxllsa$i,share=on,mem-path=$WORK/cxl$i.lsa,size=1M"
			-device "cxl-rp,port=$i,bus=cxl.1,id=cxl_rp$i,chassis=0,slot=$((i + 2))"
			-device "cxl-type3,bus=cxl_rp$i,memdev=cxlmem$i,lsa=cxllsa$i,id=cxl-pmem$i,sn=$((0x1000 + i))")
	done
	MACHINE+=(-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G)
else
	for i in 0 1; do
		MACHINE+=(-object "memory-backend-file,id=nvmem$i,share=on,mem-path=$WORK/nvdimm$i.img,size=1G,align=2M"
			-device "nvdimm,id=nvdimm$i,memdev=nvmem$i,node=$((i == 0 ? 0 : 3))")
	done
	APPEND="$APPEND memmap=512M!512M"
fi

kvm_usable() {
	[ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo && [ ! -d /sys/module/kvm_pvm ]
}
# boot ACCEL: runs the guest; sets RC (empty when the guest reported none), TIMED_OUT, NO_INIT.
boot() {
	local accel=$1 cpu init_deadline deadline
	if [ "$accel" = kvm ]; then
		cpu=(-accel kvm -cpu "$KVM_CPU")
		init_deadline=$(($(date +%s) + 120))
	else
		cpu=(-accel tcg,thread=multi -cpu "$TCG_CPU")
		init_deadline=$(($(date +%s) + 300))
	fi
	deadline=$(($(date +%s) + REMAINING))
	: >"$WORK/console.log"
	: >"$WORK/output.log"
	: >"$WORK/status.log"
	rm -f "$WORK"/nvdimm?.img "$WORK"/cxl?.img "$WORK"/cxl?.lsa
	if [ $CXL = 1 ]; then
		truncate -s 512M "$WORK"/cxl{0,1}.img # sparse
		truncate -s 1M "$WORK"/cxl{0,1}.lsa
	else
		truncate -s 1G "$WORK/nvdimm0.img" "$WORK/nvdimm1.img"
	fi
	T_QEMU=$(date +%s.%N)
	setpriv --pdeathsig KILL timeout -k 5 $((REMAINING + 30)) setpriv --pdeathsig KILL \
		qemu-system-x86_64 "${cpu[@]}" "${MACHINE[@]}" \
		-display none -monitor none -no-reboot -nodefaults \
		-chardev "file,id=console,path=$WORK/console.log" -serial chardev:console \
		-chardev "file,id=output,path=$WORK/output.log" -serial chardev:output \
		-chardev "file,id=status,path=$WORK/status.log" -serial chardev:status \
		-kernel "$BOOT" -initrd "$WORK/initrd.gz" -append "$APPEND" >"$WORK/qemu.log" 2>&1 &
	QEMU_PID=$!
	tail -n +1 -f --pid=$QEMU_PID "$WORK/output.log" 2>/dev/null &
	STREAM_PID=$!
	TIMED_OUT=0
	NO_INIT=0
	while kill -0 "$QEMU_PID" 2>/dev/null; do
		if [ "$(date +%s)" -ge $deadline ]; then TIMED_OUT=1; break; fi
		if ! grep -q '^lab-init: up' "$WORK/console.log"; then
			if [ "$(date +%s)" -ge $init_deadline ] || grep -qE 'KVM internal error|emulation failure' "$WORK/qemu.log"; then
				NO_INIT=1
				break
			fi
		fi
		sleep 0.2
	done
	stop_guest
	T_END=$(date +%s.%N)
	RC=$(sed -n 's/^LAB_RC=\([0-9]*\)$/\1/p' "$WORK/status.log")
}

REMAINING=$TIMEOUT
if [ "$ACCEL" = auto ]; then
	if kvm_usable; then ACCEL=kvm; else ACCEL=tcg; fi
	FALLBACK=1
else
	FALLBACK=0
fi
boot "$ACCEL"
if [ -z "$RC" ] && [ $NO_INIT = 1 ] && [ "$ACCEL" = kvm ] && [ $FALLBACK = 1 ]; then
	say "the KVM guest never reached its init; booting under TCG instead"
	REMAINING=$((TIMEOUT - ${T_END%.*} + ${T_START%.*}))
	ACCEL=tcg
	boot tcg
fi

if [ -n "$OUT" ] && grep -q '^LAB_OUT_END$' "$WORK/status.log"; then
	mkdir -p "$OUT"
	sed -n '/^LAB_OUT_BEGIN$/,/^LAB_OUT_END$/p' "$WORK/status.log" | sed '1d;$d' | base64 -d -i | tar -C "$OUT" -xf -
fi
guest_times=$(sed -n 's/^LAB_TIMES=//p' "$WORK/status.log")
say "$(awk -v s="$T_START" -v b="$T_BUILT" -v q="$T_QEMU" -v e="$T_END" -v g="$guest_times" -v a="$ACCEL" -v l="$LAYOUT" 'BEGIN {
	split(g, t, " ")
	line = sprintf("layout %s, %s: initramfs %.1f s, guest %.1f s", l, a, b - s, e - q)
	if (g != "") line = line sprintf(" (boot and setup %.1f s, command %.1f s)", t[1], t[2] - t[1])
	printf "%s, %.1f s in all", line, e - s }')"
if [ -z "$RC" ]; then
	say "the guest's console, last lines:"
	tail -n 30 "$WORK/console.log" >&2
	[ -s "$WORK/qemu.log" ] && { say "qemu said:"; head -n 20 "$WORK/qemu.log" >&2; }
	[ $TIMED_OUT = 1 ] && { say "timed out after $TIMEOUT s"; exit 124; }
	fail "the guest reported no exit status (it did not boot, or its init failed)"
fi
exit "$RC"
