#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# python3 running a non-trivial script (dicts, classes, strings, json,
# regexes, big integers, sorting, threads, gc), with and without nodalloc.
source "$(dirname "$0")/common.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || need python3
"$PY" -c 'pass' 2>/dev/null || need python3

"$PY" "$HERE/workload.py" >"$WORK/plain.out" 2>&1 || { echo "FAIL: python3 without nodalloc failed"; cat "$WORK/plain.out"; exit 1; }
env "${ND_STATS[@]}" LD_PRELOAD="$LIB" "$PY" "$HERE/workload.py" >"$WORK/nd.out" 2>"$WORK/nd.err" 9>>"$WORK/stats" || {
  echo "FAIL: python3 under nodalloc exited with $?"; tail -20 "$WORK/nd.err"; exit 1; }
no_nodalloc_errors "$WORK/nd.err"
same_output "python3 workload.py" "$WORK/plain.out" "$WORK/nd.out"
# the workload's lists, dicts and json text: well over 8 MiB in nodalloc's page runs
served_by_nodalloc "$(basename "$PY")" "$WORK/stats" $((8 << 20))

# The same under an emulated 3-node machine (one node memoryless), under an
# interleave policy (small objects round robin over two nodes' heaps), and
# in check mode.
variant() {
  local name=$1; shift
  env "$@" LD_PRELOAD="$LIB" "$PY" "$HERE/workload.py" >"$WORK/$name.out" 2>"$WORK/$name.err" || {
    echo "FAIL: python3 under nodalloc ($name) exited with $?"; tail -20 "$WORK/$name.err"; exit 1; }
  no_nodalloc_errors "$WORK/$name.err"
  same_output "python3 workload.py ($name)" "$WORK/plain.out" "$WORK/$name.out"
}
variant emulated NODALLOC_TOPOLOGY='0: cpus=0 mem=2G; 1: cpus=1 mem=2G; 2: mem=0'
variant interleave NODALLOC_TOPOLOGY='0: cpus=0 mem=2G; 1: cpus=1 mem=2G' NODALLOC_POLICY=interleave:0-1
variant check NODALLOC_CHECK=1

# The allocator really served the interpreter: malloc from Python's own
# process returns memory nodalloc knows the node of.
node=$(LD_PRELOAD="$LIB" "$PY" -c '
import ctypes
c = ctypes.CDLL(None)
c.malloc.restype = ctypes.c_void_p
c.malloc.argtypes = [ctypes.c_size_t]
c.nd_node_of.argtypes = [ctypes.c_void_p]
p = c.malloc(100)
print(c.nd_node_of(p))' 2>&1)
if ! [[ "$node" =~ ^[0-9]+$ ]]; then
  echo "FAIL: malloc in python3 under LD_PRELOAD is not nodalloc's (nd_node_of: $node)"; exit 1
fi
echo "ok: python3's malloc is nodalloc's (node $node)"
