#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The harness's BENCH_SETTLE (bench/run.sh) and its tool bench/wl_touch:
# wl_touch writes every byte of the memory it reports; run.sh refuses a bad
# BENCH_SETTLE (and a bad BENCH_PEAK) before it runs anything (a whole quick run takes 45 s: not
# here; the time limit ends a run.sh that would start measuring).
#   bench_settle_test.sh <source dir> <build dir>
set -u
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

out=$("$build/bench/wl_touch" 8 1) || bad "wl_touch 8 1 exited $?"
echo "$out"
rss=$(echo "$out" | sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p')
[ -n "$rss" ] && [ "$rss" -ge 8192 ] || bad "wl_touch 8 1: resident ${rss:-?} KiB, expected at least the 8 MiB it wrote"
echo "$out" | grep -q 'huge=1' || bad "wl_touch 8 1 does not report huge=1"
"$build/bench/wl_touch" 4 0 | grep -q 'huge=0' || bad "wl_touch 4 0 does not report huge=0"

for v in x 0 08 -1; do
	BENCH_SETTLE=$v BENCH_RESULTS=$tmp/r timeout -k 5 20 bash "$src/bench/run.sh" "$build" >"$tmp/log" 2>&1
	st=$?
	[ $st -eq 2 ] && grep -q "bad BENCH_SETTLE" "$tmp/log" || bad "BENCH_SETTLE=$v: status $st, expected 2 and a message"
done
BENCH_PEAK=max BENCH_RESULTS=$tmp/r timeout -k 5 20 bash "$src/bench/run.sh" "$build" >"$tmp/log" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "bad BENCH_PEAK" "$tmp/log" || bad "BENCH_PEAK=max: status $st, expected 2 and a message"

[ $fail -eq 0 ] && echo "PASS"
exit $fail
