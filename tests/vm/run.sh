#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Boot one NUMA topology under QEMU (TCG) and run the in-VM tests there.
#   bash tests/vm/run.sh BUILD_DIR TOPOLOGY [TEST...]
# TOPOLOGY: one of topologies.sh's VM_TOPOLOGIES. TEST: names of
# BUILD_DIR/vm-bin/vm_<name> (default: all, in the order below).
# Exit: 0 every test passed (or skipped inside the VM), 1 a test failed or
# gave no result (hang, crash, kernel panic), 77 the bed cannot run here
# (no qemu, no static busybox, kernel not fetchable): ctest SKIP.
# Environment: VM_TIMEOUT (whole VM, s, default 480), VM_TEST_TIMEOUT (one
# test inside, s, default 200), VM_KEEP_LOG=1 prints the whole console,
# VM_QEMU (QEMU binary), VM_KERNEL_PKG (kernel package, see kernel.sh),
# VM_APPEND more kernel arguments (nokaslr: the kernel image at 16 MiB,
# on node 0).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR TOPOLOGY [TEST...]}" && pwd)
topo=${2:?usage: run.sh BUILD_DIR TOPOLOGY [TEST...]}
shift 2
# shellcheck source=topologies.sh
source "$here/topologies.sh"
topo_define "$topo" || exit 1

skip() { echo "vm: SKIP: $*"; exit 77; }
qemu=${VM_QEMU:-$(command -v qemu-system-x86_64)}
{ [ -n "$qemu" ] && [ -x "$qemu" ]; } || skip "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
command -v cpio >/dev/null || skip "cpio not found (apt-get install cpio)"

cache=$build/vm-cache
mkdir -p "$cache/$topo"
bash "$here/kernel.sh" "$cache"
rc=$?
[ $rc -eq 77 ] && skip "the kernel package could not be fetched (see above)"
[ $rc -ne 0 ] && { echo "vm: FAIL: kernel not usable"; exit 1; }

# The tests: the fixed order first, then any other vm_* binary.
order="topology placement migration policy strict stats"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	for t in $order; do [ -x "$build/vm-bin/vm_$t" ] && tests+=("$t"); done
	for b in "$build"/vm-bin/vm_*; do
		[ -x "$b" ] || continue
		t=${b##*/vm_}
		case " $order " in *" $t "*) ;; *) tests+=("$t") ;; esac
	done
fi
[ ${#tests[@]} -eq 0 ] && { echo "vm: FAIL: no test binaries in $build/vm-bin (build first)"; exit 1; }
bins=()
for t in "${tests[@]}"; do
	[ -x "$build/vm-bin/vm_$t" ] || { echo "vm: FAIL: no test binary $build/vm-bin/vm_$t"; exit 1; }
	bins+=("$build/vm-bin/vm_$t")
done

# Programs the tests run (not tests): nodactl and vm-bin's other binaries,
# into the initramfs's /bin.
for x in "$build/nodactl" "$build"/vm-bin/*; do
	case ${x##*/} in vm_*) continue ;; esac
	[ -x "$x" ] && [ -f "$x" ] && bins+=("$x")
done

dir=$cache/$topo
exec 8>"$dir/.lock"
flock 8 # one run per topology and build directory at a time (ctest, report)
topo_expected_file "$topo" >"$dir/topology"
bash "$here/initramfs.sh" "$dir/initrd.gz" "$dir/topology" "${bins[@]}"
rc=$?
[ $rc -eq 77 ] && skip "no static busybox (apt-get install busybox-static)"
[ $rc -ne 0 ] && { echo "vm: FAIL: initramfs not built"; exit 1; }

mapfile -t qargs < <(topo_qemu_args)
list=$(IFS=,; echo "${tests[*]}")
vm_timeout=${VM_TIMEOUT:-480}
log=$dir/console.log
echo "vm: $topo: booting $(cat "$cache/kernel/package") with ${qargs[*]:0:4} ..., tests: $list"
append="console=ttyS0 quiet panic=-1 swiotlb=1 vmtests=$list vmtimeout=${VM_TEST_TIMEOUT:-200}${VM_APPEND:+ $VM_APPEND}"
# the exact command, for running this VM by hand (docs/testbed.md)
printf '%q ' "$qemu" -accel tcg -nographic -no-reboot -kernel "$cache/kernel/vmlinuz" -initrd "$dir/initrd.gz" \
	-append "$append" "${qargs[@]}" >"$dir/qemu.cmd"
echo >>"$dir/qemu.cmd"
t0=$(date +%s.%N)
# TCG only (KVM hangs on this host). A hang is a failure: timeout kills QEMU.
timeout -k 10 "$vm_timeout" "$qemu" -accel tcg -nographic -no-reboot \
	-kernel "$cache/kernel/vmlinuz" -initrd "$dir/initrd.gz" \
	-append "$append" \
	"${qargs[@]}" </dev/null 2>&1 | tr -d '\r' | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' >"$log"
qrc=${PIPESTATUS[0]}
t1=$(date +%s.%N)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}')

[ "${VM_KEEP_LOG:-0}" = 1 ] && cat "$log"
boot=$(sed -n 's/.*VMBOOT uptime=\([0-9.]*\).*/\1/p' "$log" | head -1)
echo "vm: $topo: qemu exit $qrc after ${wall}s wall, kernel up to /init in ${boot:-?}s (guest clock)"
grep -m1 -o 'VMBOOT.*' "$log"
fail=0
for t in "${tests[@]}"; do
	line=$(grep "^VMTEST $t " "$log" | tail -1)
	if [ -z "$line" ]; then
		if grep -q "^VMSTART $t\$" "$log"; then
			echo "VMTEST $t FAIL no result: started, then the VM stopped (hang, kernel panic or VM timeout ${vm_timeout}s)"
		else
			echo "VMTEST $t FAIL no result: never started"
		fi
		fail=1
		continue
	fi
	echo "$line"
	case "$line" in *" FAIL "*) fail=1 ;; esac
done
if [ $fail -ne 0 ] && [ "${VM_KEEP_LOG:-0}" != 1 ]; then
	# on failure show what the tests said (not the whole console)
	echo "---- $log (test output) ----"
	sed -n '/VMBOOT/,$p' "$log" | grep -v '^VMTAB' | tail -n 150
fi
[ "$qrc" -eq 124 ] && { echo "vm: $topo: FAIL: the VM did not power off within ${vm_timeout}s"; fail=1; }
grep -q '^VMDONE' "$log" || { echo "vm: $topo: FAIL: the VM did not finish its tests"; fail=1; }
exit $fail
