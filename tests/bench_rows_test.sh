#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/wl_handoff and bench/wl_batch (task outside27's rows): the work
# they report (ops) whatever the allocator and however the scheduler runs
# their threads, no handed block found overwritten (wl_handoff's bad=0,
# status 0), bad arguments refused.
#   bench_rows_test.sh <build dir>
set -u
build=$1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# name, arguments, expected RESULT prefix
check() {
	local wl=$build/bench/$1 args=$2 want=$3 run out
	for run in "" "LD_PRELOAD=$build/libnodalloc.so" "taskset -c 0" "LD_PRELOAD=$build/libnodalloc.so taskset -c 0"; do
		command -v taskset >/dev/null || case $run in *taskset*) continue ;; esac
		out=$(env $run "$wl" $args) || bad "${run:-glibc} $1 $args: status $?"
		case $out in "$want"*) ;; *) bad "${run:-glibc} $1 $args: got '$out', expected '$want...'" ;; esac
	done
	echo "$1 $args: ok"
}
check wl_handoff "4 50" "RESULT workload=handoff threads=4 ops=200000 "
check wl_handoff "2 7" "RESULT workload=handoff threads=2 ops=14000 "
check wl_batch "2 3 1000 8" "RESULT workload=batch threads=2 ops=6000 "
check wl_batch "1 2 500 100" "RESULT workload=batch threads=1 ops=1000 "
$build/bench/wl_handoff 4 50 | grep -q ' bad=0$' || bad "wl_handoff 4 50: no bad=0"
for a in "0" "65" "4 x" "2 -1"; do
	"$build/bench/wl_handoff" $a >/dev/null 2>&1
	[ $? -eq 2 ] || bad "wl_handoff $a: expected status 2 (bad arguments)"
done
for a in "0" "65" "2 0" "2 1 x" "2 1 10 0"; do
	"$build/bench/wl_batch" $a >/dev/null 2>&1
	[ $? -eq 2 ] || bad "wl_batch $a: expected status 2 (bad arguments)"
done
[ $fail -eq 0 ] && echo "PASS"
exit $fail
