#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every lock of the library is in the registry (src/lock.c), so fork takes
# it: a static lock is declared with ND_LOCK_DEFINE, and each file has as
# many ND_LOCK_ARRAY / ND_LOCK_DYN_ARRAY / ND_LOCK_FIELD registrations as
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
	regs=$(grep -cE '^ND_LOCK_(ARRAY|DYN_ARRAY|FIELD)\(' "$f")
	if [ "$fields" -gt "$regs" ]; then
		echo "check_locks: $f: $fields lock fields but $regs registrations (ND_LOCK_ARRAY/DYN_ARRAY/FIELD)"
		bad=1
	fi
done
n=$(cat "$src"/*.c | grep -cE '^ND_LOCK_(DEFINE|ARRAY|DYN_ARRAY|FIELD)\(')
echo "check_locks: $n registered lock classes; $([ $bad = 0 ] && echo 1 passed, 0 failed || echo 0 passed, 1 failed)"
exit $bad
