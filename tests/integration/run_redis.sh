#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# redis-server on a loopback port, driven by redis_client.py: a fixed
# session (strings of 16 B .. 64 KiB, lists, hashes, sorted sets, sets,
# DEBUG DIGEST, a BGSAVE fork) whose replies must equal a server's without
# nodalloc, a bounded pipelined load (every value read back), a fill under
# maxmemory with allkeys-lru then FLUSHALL, and the session again; under
# nodalloc plain, in check mode and under nodactl's interleave and bind on
# an emulated two-node machine. Debian links redis-server with libjemalloc.so.2
# but calls malloc/free/realloc/calloc/malloc_usable_size by their plain
# names, so the preload serves them (mallctl and nallocx stay jemalloc's:
# INFO's allocator_* fields describe an idle jemalloc); the statistics at
# exit prove it.
source "$(dirname "$0")/common.sh"
need redis-server
PY=/usr/bin/python3
[ -x "$PY" ] || need python3-at-/usr/bin
NODACTL=$(dirname "$LIB")/nodactl

# start_server NAME COMMAND-PREFIX...: sets PORT and SERVER, waits until it answers
start_server() {
  local name=$1; shift
  pick_port
  mkdir -p "$WORK/$name.d"
  "$@" redis-server --bind 127.0.0.1 --port "$PORT" --dir "$WORK/$name.d" --save '' \
    --appendonly no --daemonize no --enable-debug-command yes \
    >"$WORK/$name.log" 2>&1 9>>"$WORK/$name.stats" &
  SERVER=$!
  wait_listening "redis-server ($name)" "$SERVER" "$PORT" "$WORK/$name.log"
}

client() { timeout 120 "$PY" "$HERE/redis_client.py" "$PORT" "$@"; }

# stop_server NAME: SHUTDOWN NOSAVE; redis exits through exit(0), so the
# library's exit handler prints the statistics
stop_server() {
  "$PY" -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall(b"SHUTDOWN NOSAVE\r\n"); s.recv(100)' "$PORT" 2>/dev/null || true
  timeout 30 bash -c "while kill -0 $SERVER 2>/dev/null; do sleep 0.1; done"
  wait "$SERVER"
  local rc=$?
  SERVER=
  [ $rc = 0 ] || { echo "FAIL: redis-server ($1) exited with $rc"; tail "$WORK/$1.log"; exit 1; }
  no_nodalloc_errors "$WORK/$1.log"
}

# run NAME COMMAND-PREFIX...: the whole job on one server
run() {
  local name=$1; shift
  start_server "$name" "$@"
  client session >"$WORK/$name.out" 2>&1 || { echo "FAIL: redis session ($name):"; tail "$WORK/$name.out"; exit 1; }
  if [ "$name" != plain ]; then
    grep -q libnodalloc "/proc/$SERVER/maps" || { echo "FAIL: redis-server ($name) did not load $LIB"; exit 1; }
    same_output "redis session ($name)" "$WORK/plain.out" "$WORK/$name.out"
  fi
  client load >"$WORK/$name.load" 2>&1 || { echo "FAIL: redis load ($name):"; tail "$WORK/$name.load"; exit 1; }
  client evict >>"$WORK/$name.load" 2>&1 || { echo "FAIL: redis maxmemory fill ($name):"; tail "$WORK/$name.load"; exit 1; }
  client session >"$WORK/$name.out2" 2>&1
  same_output "redis session after the load ($name)" "$WORK/plain.out" "$WORK/$name.out2"
  stop_server "$name"
  [ "$name" = plain ] || echo "ok: $name: $(tr '\n' ';' <"$WORK/$name.load")"
}

run plain env
run nd env "${ND_STATS[@]}" LD_PRELOAD="$LIB"
# its 64 MB fill, the values of the load (the library alone: about 0.5 MiB)
served_by_nodalloc redis-server "$WORK/nd.stats" $((16 << 20))
run check env NODALLOC_CHECK=1 LD_PRELOAD="$LIB"
TOPO='0: cpus=0 mem=2G; 1: cpus=1 mem=2G'
if [ -x "$NODACTL" ]; then
  run interleave "$NODACTL" --topology="$TOPO" --interleave=all --
  run bind "$NODACTL" --topology="$TOPO" --membind=1 --
else
  run interleave env NODALLOC_TOPOLOGY="$TOPO" NODALLOC_POLICY=interleave:0-1 LD_PRELOAD="$LIB"
fi
