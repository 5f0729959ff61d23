#!/usr/bin/env bash
# redis-server on a loopback port: a fixed redis-cli session (output
# compared with a server without nodalloc), then redis-benchmark with a
# bounded request count, then the session's checks again.
source "$(dirname "$0")/common.sh"
need redis-server redis-cli redis-benchmark

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  local p
  for p in $(seq $((20000 + $$ % 20000)) $((20100 + $$ % 20000))); do
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
  done
  echo 0
}

# start_server PRELOAD(0/1) NAME: sets PORT, waits for PING
start_server() {
  PORT=$(free_port)
  [ "$PORT" != 0 ] || { echo "FAIL: no free port"; exit 1; }
  mkdir -p "$WORK/$2"
  local env=()
  [ "$1" = 1 ] && env=(env LD_PRELOAD="$LIB")
  "${env[@]}" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$WORK/$2" --daemonize no --logfile "$WORK/$2/log" >"$WORK/$2/out" 2>"$WORK/$2/err" &
  PIDS+=($!)
  SERVER=$!
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ] && return
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: redis-server ($2) did not start"; cat "$WORK/$2/err" "$WORK/$2/log" 2>/dev/null | tail; exit 1
}

stop_server() {
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1
  wait "$SERVER"
  local rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: redis-server ($1) exited with $rc"; tail "$WORK/$1/err" "$WORK/$1/log"; exit 1; fi
}

session() {
  local c=(redis-cli -p "$PORT")
  {
    for i in $(seq 1 300); do echo "SET key:$i value-$i-$(printf '%0*d' $((i % 200)) 0)"; done
    for j in $(seq 0 299); do echo "GET key:$(( (j * 139) % 300 + 1 ))"; done
    for i in $(seq 1 500); do echo "RPUSH list $i"; done
    echo "LRANGE list 100 140"
    for i in $(seq 1 200); do echo "HSET h f$i $((i * i))"; done
    echo "HLEN h"; echo "HGET h f77"
    for i in $(seq 1 300); do echo "ZADD z $((i * 7 % 101)) m$i"; done
    echo "ZRANGE z 0 30 WITHSCORES"
    for i in $(seq 1 200); do echo "SADD s $((i % 37))"; done
    echo "SCARD s"; echo "SORT s LIMIT 0 10"
    echo "INCRBY counter 41"; echo "INCR counter"; echo "APPEND key:5 -tail"; echo "GET key:5"
    echo "DEL key:1 key:2 key:3"; echo "DBSIZE"
  } | "${c[@]}"
}

start_server 0 plain
session >"$WORK/plain.out" 2>&1
stop_server plain

start_server 1 nd
grep -q libnodalloc "/proc/$SERVER/maps" || { echo "FAIL: redis-server did not load $LIB"; exit 1; }
session >"$WORK/nd.out" 2>&1
same_output "redis-cli session" "$WORK/plain.out" "$WORK/nd.out"
redis-benchmark -p "$PORT" -n 20000 -c 20 -P 4 -q -t set,get,incr,lpush,lpop,sadd,hset,mset,lrange_100 \
  >"$WORK/bench.out" 2>&1 || { echo "FAIL: redis-benchmark failed"; tail "$WORK/bench.out"; exit 1; }
grep -q "requests per second" "$WORK/bench.out" || { echo "FAIL: redis-benchmark: no result"; tail "$WORK/bench.out"; exit 1; }
echo "ok: redis-benchmark: $(grep -c 'requests per second' "$WORK/bench.out") tests of 20000 requests"
redis-cli -p "$PORT" flushall >/dev/null
session >"$WORK/nd2.out" 2>&1
same_output "redis-cli session after the benchmark" "$WORK/plain.out" "$WORK/nd2.out"
stop_server nd
no_nodalloc_errors "$WORK/nd/err"
