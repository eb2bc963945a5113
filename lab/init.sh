#!/usr/bin/busybox sh
# lab/init.sh — /init of the lab guest (lab/vm.sh puts it into the initramfs). Mounts the
# pseudo file systems, loads the NVDIMM and DAX modules, lays the persistent memory out as
# the layout asks, runs the command on ttyS1 and reports on ttyS2, then powers off.
# ttyS0 (the console) gets this script's own log; lab/vm.sh waits for "lab-init: up" there.
/usr/bin/busybox mount -t proc proc /proc
/usr/bin/busybox --install -s 2>/dev/null # applet links beside, never over, the real programs
export PATH=/usr/sbin:/usr/bin HOME=/root
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm /dev/pts /dev/hugepages
for d in /tmp /dev/shm /run; do mount -t tmpfs tmpfs $d; done
. /etc/lab/layout
uptime_s() { cut -d' ' -f1 /proc/uptime; }
echo "lab-init: up at $(uptime_s) s, layout $LAYOUT"

for m in $(cat /etc/lab/modules); do modprobe "$m" 2>/dev/null; done
mount -t hugetlbfs -o pagesize=2M none /dev/hugepages
echo 64 >/proc/sys/vm/nr_hugepages
mount -t tracefs none /sys/kernel/tracing 2>/dev/null

ENV=/etc/lab/env
echo "export LABVM_LAYOUT=$LAYOUT LABVM_HUGETLBFS=/dev/hugepages LABVM_MEMONLY_NODE=2" >$ENV
field() { # field REGION KEY: a namespace property from ndctl's JSON
	ndctl list -N -r "$1" | sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p" | head -n 1
}
# The NFIT regions in DIMM order (nmem0's first), and the legacy (e820) one, which has no DIMM.
# (The cxl layout has neither: its nd regions are CXL regions', set up in cxl_setup below.)
dimm_regions=
legacy=
[ "$CXL" = 1 ] || for r in /sys/bus/nd/devices/region*; do
	[ -e "$r" ] || continue
	if [ "$(cat "$r/mappings" 2>/dev/null || echo 0)" -gt 0 ]; then
		dimm=$(cut -d, -f1 "$r/mapping0")
		dimm_regions="$dimm_regions ${dimm#nmem}:${r##*/}"
	else
		legacy=${r##*/}
	fi
done
set -- $(for x in $dimm_regions; do echo "$x"; done | sort -n | cut -d: -f2)

if [ -n "${1:-}" ]; then # 1st NVDIMM: fsdax, ext4 with 2 MiB-aligned extents, mounted -o dax
	if ndctl create-namespace -f -e "namespace${1#region}.0" -m fsdax -M dev >/dev/null 2>&1; then
		dev=/dev/$(field "$1" blockdev)
		if mkfs.ext4 -q -F -b 4096 -E stride=512,stripe_width=512,lazy_itable_init=1,lazy_journal_init=1 "$dev" &&
			mount -o dax "$dev" /mnt/pmem; then
			echo "export LABVM_FSDAX_DEV=$dev LABVM_FSDAX_MNT=/mnt/pmem" >>$ENV
		else
			echo "lab-init: ext4 -o dax on $dev failed"
		fi
	else
		echo "lab-init: no fsdax namespace on $1"
	fi
fi
if [ -n "${2:-}" ]; then # 2nd NVDIMM: devdax, or system RAM of node 3 through kmem
	if ndctl create-namespace -f -e "namespace${2#region}.0" -m devdax -a 2M >/dev/null 2>&1; then
		chr=$(field "$2" chardev)
		if [ "$KMEM" = 1 ]; then
			if daxctl reconfigure-device --mode=system-ram "$chr" >/dev/null 2>&1; then
				echo "export LABVM_KMEM_NODE=$(cat "/sys/bus/dax/devices/$chr/target_node")" >>$ENV
			else
				echo "lab-init: daxctl could not online $chr as system RAM"
			fi
		else
			echo "export LABVM_DEVDAX=/dev/$chr" >>$ENV
		fi
	else
		echo "lab-init: no devdax namespace on $2"
	fi
fi
# cxl: one region interleaved over both devices (cxl create-region takes every device below
# the window's root decoder); its nd region (the one at the same physical address) gets two
# devdax namespaces: 512 MiB onlined through kmem as a CPU-less node, the rest left devdax.
nd_region_at() { # nd_region_at CXL_REGION: the nd region over the same addresses
	local want r
	want=$(cat "/sys/bus/cxl/devices/$1/resource")
	for r in /sys/bus/nd/devices/region*; do
		[ "$(cat "$r/resource" 2>/dev/null)" = "$want" ] && { echo "${r##*/}"; return 0; }
	done
	return 1
}
new_devdax() { # new_devdax ND_REGION [ndctl option...]: the new namespace's dax device
	ndctl create-namespace -r "$@" -m devdax -a 2M 2>/dev/null | sed -n 's/.*"chardev":"\([^"]*\)".*/\1/p' | head -n 1
}
cxl_setup() {
	# cxl_pci probes asynchronously: wait for both devices' endpoints.
	for _ in $(seq 50); do
		[ "$(ls -d /sys/bus/cxl/devices/endpoint* 2>/dev/null | wc -l)" -ge 2 ] && break
		sleep 0.2
	done
	region=$(cxl create-region -t pmem -d decoder0.0 2>/dev/null | sed -n 's/.*"region":"\(region[0-9]*\)".*/\1/p' | head -n 1)
	if [ -z "$region" ] || ! nd=$(nd_region_at "$region"); then
		echo "lab-init: no CXL region (or no nd region for it) on decoder0.0"
		return
	fi
	echo "export LABVM_CXL_REGION=$region" >>$ENV
	chr=$(new_devdax "$nd" -s 512M)
	if [ -n "$chr" ] && daxctl reconfigure-device --mode=system-ram "$chr" >/dev/null 2>&1; then
		echo "export LABVM_CXL_NODE=$(cat "/sys/bus/dax/devices/$chr/target_node")" >>$ENV
	else
		echo "lab-init: could not online a namespace of $region ($nd) as system RAM"
	fi
	chr=$(new_devdax "$nd")
	if [ -n "$chr" ]; then
		echo "export LABVM_CXL_DEVDAX=/dev/$chr" >>$ENV
	else
		echo "lab-init: no 2nd devdax namespace on $region ($nd)"
	fi
}
[ "$CXL" = 1 ] && cxl_setup
if [ -n "$legacy" ]; then
	dev=$(field "$legacy" blockdev)
	[ -n "$dev" ] && echo "export LABVM_LEGACY_PMEM=/dev/$dev" >>$ENV
fi
. $ENV
echo "lab-init: environment: $(sed 's/^export //' $ENV | tr '\n' ' ')"
echo "lab-init: set up at $(uptime_s) s; running the command"

stty -F /dev/ttyS1 raw -echo 2>/dev/null
stty -F /dev/ttyS2 raw -echo 2>/dev/null
t0=$(uptime_s)
(cd /payload && exec sh /etc/lab/command) >/dev/ttyS1 2>&1 </dev/null
rc=$?
t1=$(uptime_s)
echo "lab-init: the command exited $rc at $t1 s"
{
	echo "LAB_RC=$rc"
	echo "LAB_TIMES=$t0 $t1"
	if [ -n "$(ls -A /out)" ]; then
		echo LAB_OUT_BEGIN
		tar -C /out -cf - . | base64
		echo LAB_OUT_END
	fi
} >/dev/ttyS2
sync # the images are thrown away: no unmount (it costs a second under TCG)
poweroff -f
