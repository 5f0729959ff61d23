#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/measure.c's -x: the exact resident set at the program's exit (the
# kernel's ru_maxrss is its per-CPU approximate counters' high-water mark,
# up to ~62 pages off: bench/measure.c). A shell that holds an 8 MB string
# at its exit has at least that much anonymous memory then; -x keeps the
# program's status and passes its signals on; without -x no exit figures.
# peak_kb (-x) is the larger of ru_maxrss and the exact exit figure; a
# program that execs again is not killed by the exec's SIGTRAP. -z: the
# exact peak, read before every call that can lower the RSS, in every
# thread and child process (which inherit the seccomp filter: untraced,
# their mmaps would fail): a shell that builds an 8 MB string through a
# pipe and drops it before its exit peaks 8 MB above its exit figure.
#   bench_measure_test.sh <build dir>
set -u
m=$1/bench/nd_measure
fail=0
bad() { echo "FAIL: $*"; fail=1; }
kv() { echo "$2" | sed -n "s/.* $1=\(-\{0,1\}[0-9]*\).*/\1/p"; }

out=$("$m" -x -- bash -c 'x=$(head -c 8000000 /dev/zero | tr "\0" a); exit 3' | grep '^MEASURE')
echo "$out"
[ "$(kv status "$out")" = 3 ] || bad "-x: status $(kv status "$out"), expected the program's 3"
anon=$(kv exit_anon_kb "$out") file=$(kv exit_file_kb "$out") rss=$(kv exit_rss_kb "$out")
if [ "${rss:--1}" = -1 ]; then
	echo "SKIP: no exit figures (tracing refused here?)"
else
	[ "${anon:-0}" -ge 7813 ] || bad "-x: ${anon:-?} KiB anonymous at exit, expected the 8 MB string's 7813 at least"
	[ "${file:-0}" -gt 0 ] && [ "$rss" -ge $((anon + file)) ] || bad "-x: rss $rss < anon $anon + file $file"
	max=$(kv maxrss_kb "$out") peak=$(kv peak_kb "$out")
	[ "${peak:-0}" = "$((rss > max ? rss : max))" ] || bad "-x: peak_kb ${peak:-?}, expected the larger of maxrss_kb $max and exit_rss_kb $rss"
	out=$("$m" -x -- bash -c 'exec true' | grep '^MEASURE')
	echo "$out"
	[ "$(kv status "$out")" = 0 ] || bad "-x: a program that execs again gave status $(kv status "$out"), expected 0"
	out=$("$m" -z -- bash -c 'x=$(head -c 8000000 /dev/zero | tr "\0" a); [ ${#x} = 8000000 ] || exit 5; unset x; exit 4' | grep '^MEASURE')
	echo "$out"
	rss=$(kv exit_rss_kb "$out") peak=$(kv peak_kb "$out")
	[ "$(kv status "$out")" = 4 ] || bad "-z: status $(kv status "$out"), expected the program's 4 (5: its pipe failed)"
	[ "${peak:-0}" -ge $((${rss:-0} + 7813)) ] || bad "-z: peak_kb ${peak:-?}, expected the dropped 8 MB string's 7813 KiB above exit_rss_kb ${rss:-?}"
	[ "$(kv zaps "$out")" -gt 0 ] 2>/dev/null || bad "-z: no stops counted"
	out=$("$m" -z -- "$1/bench/wl_threads" 2 2 1000 | grep '^MEASURE')
	echo "$out"
	[ "$(kv status "$out")" = 0 ] || bad "-z: wl_threads gave status $(kv status "$out"), expected 0"
fi
out=$("$m" -x -- bash -c 'kill -USR1 $$' | grep '^MEASURE')
echo "$out"
[ "$(kv status "$out")" = $((128 + 10)) ] || bad "-x: a program killed by SIGUSR1 gave status $(kv status "$out"), expected 138"
out=$("$m" -- true | grep '^MEASURE')
echo "$out"
echo "$out" | grep -q 'exit_rss_kb\|peak_kb' && bad "without -x: exit figures printed"
[ $fail -eq 0 ] && echo "PASS"
exit $fail
