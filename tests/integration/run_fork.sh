#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fork-heavy programs under nodalloc: bash running subshells and
# pipelines in a loop, python3 threads that fork while they hand objects
# to each other, a multiprocessing pool (fork start method); in plain,
# check and interleave modes, output compared with a run without the library.
source "$(dirname "$0")/common.sh"
need python3 bash sort sha256sum
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

cat >"$WORK/job.sh" <<'SH'
set -o pipefail
for i in $(seq 1 150); do
  x=$( (echo $i; seq 1 $((i % 17))) | sort -rn | head -2 | tr '\n' ' ')
  y=$(echo "$x" | ( read a b; echo $((a * 3 + ${b:-0})) ))
  echo "$x$y"
done | sha256sum
"$1" "$2"
SH

JOB=(bash "$WORK/job.sh" "$PY" "$HERE/fork_churn.py")
JOB_NAME="bash subshells, python3 fork and threads"
"${JOB[@]}" >"$WORK/ref.out" 2>&1 || { echo "FAIL: the programs without nodalloc failed"; cat "$WORK/ref.out"; exit 1; }
[ "$(wc -l <"$WORK/ref.out")" -eq 3 ] || { echo "FAIL: expected 3 lines of output:"; cat "$WORK/ref.out"; exit 1; }

variant plain "${ND_STATS[@]}"
# the pool's workers are forks of python3: their lists are nodalloc's
served_by_nodalloc "$(basename "$PY")" "$WORK/stats.plain" $((4 << 20))
variant check NODALLOC_CHECK=1
variant interleave NODALLOC_TOPOLOGY='0: cpus=0 mem=2G; 1: cpus=1 mem=2G; 2: mem=0' NODALLOC_POLICY=interleave:0-1
