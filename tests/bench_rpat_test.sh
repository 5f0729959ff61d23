#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/wl_rpat: the same work (ops, the mallocs it counts) whatever the
# allocator and however the scheduler runs its threads (both on one CPU
# or not), no block found overwritten, bad arguments refused.
#   bench_rpat_test.sh <build dir>
set -u
build=$1
wl=$build/bench/wl_rpat
fail=0
bad() { echo "FAIL: $*"; fail=1; }
args="2 300 60 16 16000 2 2 300 2"
ops() { sed -n 's/^RESULT workload=rpat threads=2 ops=\([0-9]*\) .*/\1/p'; }
ref=$("$wl" $args | ops)
[ -n "$ref" ] && [ "$ref" -gt 0 ] || bad "wl_rpat $args: no RESULT line"
echo "wl_rpat $args: ops=$ref"
for run in "LD_PRELOAD=$build/libnodalloc.so" "taskset -c 0" "LD_PRELOAD=$build/libnodalloc.so taskset -c 0"; do
	command -v taskset >/dev/null || case $run in *taskset*) continue ;; esac
	got=$(env $run "$wl" $args | ops)
	[ "$got" = "$ref" ] || bad "$run wl_rpat $args: ops=${got:-none}, expected $ref"
done
for a in "3 100 10 16 1000 1 0 50 1" "1 100 10 16 1000 3 2 50 1"; do
	"$wl" $a | grep -q '^RESULT workload=rpat' || bad "wl_rpat $a: no RESULT line"
done
for a in "2 100 10 4 1000" "2 100 10 16 8" "2 100 10 16 1000 4" "x"; do
	"$wl" $a >/dev/null 2>&1
	[ $? -eq 2 ] || bad "wl_rpat $a: expected status 2 (bad arguments)"
done
[ $fail -eq 0 ] && echo "PASS"
exit $fail
