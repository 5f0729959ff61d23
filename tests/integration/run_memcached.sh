#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memcached (Debian's: the C library's malloc, so LD_PRELOAD gives it
# nodalloc's) on a loopback port, driven by memcached_client.py: a fixed
# session whose replies must equal a server's without nodalloc, then a
# bounded load (4 connections, ~10,000 requests, values 0..200 KB, every
# value read back and compared), then the session again. The server's
# statistics at exit show that nodalloc served its slab pages and tables.
# (This replaced a server which Debian builds with its own jemalloc.)
source "$(dirname "$0")/common.sh"
need memcached
PY=/usr/bin/python3
[ -x "$PY" ] || need python3-at-/usr/bin


# start_server NAME [ENV...]: sets PORT and SERVER, waits until it answers
start_server() {
  local name=$1; shift
  pick_port
  # -U 0: no UDP; -u root: memcached refuses to run as root without it
  env "$@" memcached -l 127.0.0.1 -p "$PORT" -U 0 -t 4 -m 256 -u root \
    >"$WORK/$name.log" 2>&1 9>>"$WORK/$name.stats" &
  SERVER=$!
  wait_listening "memcached ($name)" "$SERVER" "$PORT" "$WORK/$name.log"
}

# stop_server NAME: SIGTERM; memcached exits through exit(), so the
# library's exit handler prints the statistics
stop_server() {
  kill "$SERVER"
  wait "$SERVER"
  local rc=$?
  SERVER=
  # 143 would be a death by the signal: memcached catches it and exits 0
  [ $rc = 0 ] || { echo "FAIL: memcached ($1) exited with $rc"; tail "$WORK/$1.log"; exit 1; }
}

client() { timeout 120 "$PY" "$HERE/memcached_client.py" "$PORT" "$@"; }

start_server plain
client session >"$WORK/plain.out" 2>&1 || { echo "FAIL: session without nodalloc"; tail "$WORK/plain.out"; exit 1; }
stop_server plain

start_server nd "${ND_STATS[@]}" LD_PRELOAD="$LIB"
grep -q libnodalloc "/proc/$SERVER/maps" || { echo "FAIL: memcached did not load $LIB"; exit 1; }
client session >"$WORK/nd.out" 2>&1
same_output "memcached session" "$WORK/plain.out" "$WORK/nd.out"
client load >"$WORK/load.out" 2>&1 || { echo "FAIL: memcached load under nodalloc:"; tail -20 "$WORK/load.out"; exit 1; }
echo "ok: $(tail -1 "$WORK/load.out")"
client session >"$WORK/nd2.out" 2>&1
same_output "memcached session after the load" "$WORK/plain.out" "$WORK/nd2.out"
stop_server nd
no_nodalloc_errors "$WORK/nd.log"
# memcached's 1 MiB slab pages of the classes the load touched, its hash
# table and connection buffers (the library alone: about 0.5 MiB)
served_by_nodalloc memcached "$WORK/nd.stats" $((16 << 20))
