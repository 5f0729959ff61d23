#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every lock of the library is in the registry (src/lock.c), so fork takes
# it: a static lock is declared with ND_LOCK_DEFINE, and each file has as
# many ND_LOCK_ARRAY / ND_LOCK_DYN_ARRAY / ND_LOCK_FIELD / ND_LOCK_LIST registrations as
# struct fields of type _nd_lock_t. Exit 1 names the offending file.
set -u
src=${1:-$(dirname "$0")/../src}
bad=0
for f in "$src"/*.c; do
	if grep -nE '^\s*(static\s+)?_nd_lock_t\s+\w+\s*=' "$f"; then
		echo "check_locks: $f: lock defined without ND_LOCK_DEFINE (not in the fork registry)"
		bad=1
	fi
	fields=$(grep -cE '^\s+_nd_lock_t\s+\w+;' "$f")
	regs=$(grep -cE '^ND_LOCK_(ARRAY|DYN_ARRAY|FIELD|LIST)\(' "$f")
	if [ "$fields" -gt "$regs" ]; then
		echo "check_locks: $f: $fields lock fields but $regs registrations (ND_LOCK_ARRAY/DYN_ARRAY/FIELD/LIST)"
		bad=1
	fi
done
# The "Lock order" block (nd_lock.h, the header that defines the rank enum)
# lists every lock: each rank of the enum names exactly one registered
# class, each class uses a listed rank, and each rank's comment names its file.
order=$(grep -lE '^typedef enum _nd_lock_rank' "$src"/*.h)
if [ "$(echo "$order" | grep -c .)" != 1 ]; then
	echo "check_locks: the Lock order block (typedef enum _nd_lock_rank) is in $(echo $order | wc -w) headers (want one)"
	echo "check_locks: 0 passed, 1 failed"
	exit 1
fi
ranks=$(sed -n '/^typedef enum _nd_lock_rank/,/_nd_lock_rank_t;/p' "$order" | grep -oE '^\s*ND_RANK_\w+' | tr -d ' \t')
for r in $ranks; do
	uses=$(grep -lE "^ND_LOCK_(DEFINE|ARRAY|DYN_ARRAY|FIELD|LIST)\(.*\b$r\)" "$src"/*.c)
	if [ "$(echo "$uses" | grep -c .)" != 1 ] || [ "$(grep -cE "^ND_LOCK_(DEFINE|ARRAY|DYN_ARRAY|FIELD|LIST)\(.*\b$r\)" $uses)" != 1 ]; then
		echo "check_locks: rank $r is used by $(echo $uses | wc -w) files' registrations (want one lock class)"
		bad=1
	elif ! grep -qE "^\s*$r = [0-9]+, */\* $(basename "$uses"): " "$order"; then
		echo "check_locks: the Lock order comment of $r does not name $(basename "$uses")"
		bad=1
	fi
done
for r in $(grep -hoE '^ND_LOCK_(DEFINE|ARRAY|DYN_ARRAY|FIELD|LIST)\(.*\b(ND_RANK_\w+)\)' "$src"/*.c | grep -oE 'ND_RANK_\w+'); do
	if ! grep -qx "$r" <<<"$ranks"; then
		echo "check_locks: $r is not in the Lock order block of $(basename "$order")"
		bad=1
	fi
done
n=$(cat "$src"/*.c | grep -cE '^ND_LOCK_(DEFINE|ARRAY|DYN_ARRAY|FIELD|LIST)\(')
echo "check_locks: $n registered lock classes; $([ $bad = 0 ] && echo 1 passed, 0 failed || echo 0 passed, 1 failed)"
exit $bad
