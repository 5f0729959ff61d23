#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# python3's own regression tests (Debian's libpython3.X-testsuite) under
# nodalloc, with PYTHONMALLOC=malloc: every object of the interpreter, not
# only those above pymalloc's 512 bytes, is a malloc/realloc/free of the
# library. mmap, threads, fork with threads, dicts, ctypes (callbacks,
# buffers, libc's own malloc and free called from Python), in plain, check
# and interleave (2 emulated nodes) modes. The suite asserts its own
# results; a failure is nodalloc's only if the run without it passes
# (audit25, docs/malloc.md "Programs' own test suites").
source "$(dirname "$0")/common.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || need python3
TESTS=(test_mmap test_thread test_fork1 test_dict test_ctypes)
mods=$(IFS=,; echo "${TESTS[*]/#/test.}")
"$PY" -c "import $mods" 2>/dev/null || {
  v=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  echo "SKIP: python3's test suite is not installed (libpython$v-testsuite: make test installs it)"; exit 77; }
export PYTHONMALLOC=malloc TMPDIR="$WORK"
# -W: a failing test's output in full; a test passes or fails, never re-runs
JOB=("$PY" -m test -W "${TESTS[@]}")

# run NAME ENV...: the suite under ENV; fails naming NAME if it does not pass,
# unless it does not pass without nodalloc either (then not ours: skipped)
run() {
  local name=$1 rc=0; shift
  env "$@" "${JOB[@]}" >"$WORK/$name.out" 2>&1 || rc=$?
  if [ $rc = 0 ] && grep -q "^Tests result: SUCCESS" "$WORK/$name.out"; then
    no_nodalloc_errors "$WORK/$name.out"
    echo "ok: python3 -m test ${TESTS[*]} ($name): $(grep -o 'All [0-9]* tests OK' "$WORK/$name.out")"
    return
  fi
  if ! "${JOB[@]}" >"$WORK/ref.out" 2>&1; then
    echo "SKIP: the suite fails without nodalloc too:"; tail -5 "$WORK/ref.out"; exit 77
  fi
  echo "FAIL: python3 -m test ($name) exits with $rc under nodalloc, passes without:"
  grep -E "^(FAIL|ERROR):|nodalloc:|Fatal|failed" "$WORK/$name.out" | head -20; tail -5 "$WORK/$name.out"
  exit 1
}
run plain "${ND_STATS[@]}" LD_PRELOAD="$LIB" 9>>"$WORK/stats"
# the interpreter's objects came from nodalloc's slabs and page runs
served_by_nodalloc "$(basename "$PY")" "$WORK/stats" $((2 << 20))
run check LD_PRELOAD="$LIB" NODALLOC_CHECK=1
# nodactl (built next to the library) preloads the library it sits beside
ND=$(dirname "$LIB")/nodactl
[ -x "$ND" ] || { echo "FAIL: no nodactl next to $LIB"; exit 1; }
run interleave "$ND" --topology='0: cpus=0 mem=2G; 1: cpus=1 mem=2G' --interleave=all --
