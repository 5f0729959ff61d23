#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of the test bed's initramfs (busybox sh). Runs every test named by
# vmtests=a,b,c on the kernel command line, one process each with a time
# limit, and prints one machine-readable line per test:
#   VMTEST <name> PASS|FAIL|SKIP rc=<exit status> secs=<seconds>
# then VMDONE and powers off (vmshell=1: first a shell on the console).
# Tests print their own details (FAIL ..., VMTAB ... table rows for the
# report) on the same console.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
# no tmpfs on /tmp: the rootfs is writable already, and libraries from a
# build directory under /tmp sit at their host paths in it
LD_LIBRARY_PATH=$(cat /etc/vmtest/libpath 2>/dev/null)
export LD_LIBRARY_PATH

tests="" tmo=240 shell=0
for a in $(cat /proc/cmdline); do
	case "$a" in
	vmtests=*) tests=$(echo "${a#vmtests=}" | tr , ' ') ;;
	vmtimeout=*) tmo=${a#vmtimeout=} ;;
	vmshell=1) shell=1 ;;
	esac
done
[ -z "$tests" ] && tests=$(cat /etc/vmtest/tests)

up() { cut -d' ' -f1 /proc/uptime; }
echo # the firmware leaves the cursor mid-line
echo "VMBOOT uptime=$(up) kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) nodes=$(cat /sys/devices/system/node/online) has_memory=$(cat /sys/devices/system/node/has_memory) has_cpu=$(cat /sys/devices/system/node/has_cpu) thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled)"
for t in $tests; do
	echo "VMSTART $t"
	t0=$(up)
	if [ -x "/vmtest/vm_$t" ]; then
		# a hang is a failure: KILL after the limit (busybox: rc 137)
		timeout -s KILL "$tmo" "/vmtest/vm_$t" /etc/vmtest/topology 2>&1
		rc=$?
	else
		echo "FAIL no test binary /vmtest/vm_$t"
		rc=127
	fi
	t1=$(up)
	case $rc in
	0) res=PASS ;;
	77) res=SKIP ;;
	*) res=FAIL ;;
	esac
	echo "VMTEST $t $res rc=$rc secs=$(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}')"
done
echo "VMDONE uptime=$(up)"
# vmshell=1 (by hand, docs/testbed.md): a shell on the console instead
if [ "$shell" = 1 ]; then
	setsid cttyhack sh
fi
sync
poweroff -f
