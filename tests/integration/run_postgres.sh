#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# PostgreSQL (Debian's: the C library's malloc) under nodalloc: a cluster
# made once by initdb, then a postmaster per mode on a private socket
# directory: plain, check mode, and under nodactl's interleave and bind on
# an emulated two-node machine (with --stats-children: every backend, a
# fork of the postmaster, prints its own statistics). In each: pgbench -i
# and 4 clients of pgbench (no failed transaction, the balances of
# accounts, tellers, branches and history agree), then a fixed script (a
# sort and a hash join of 200,000 rows with work_mem 64MB, aggregates,
# an index) whose output must equal the server's without nodalloc.
source "$(dirname "$0")/common.sh"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] && [ -x "$PGBIN/postgres" ] || need postgres
need psql pgbench
NODACTL=$(dirname "$LIB")/nodactl
# postgres refuses to run as root: its user runs the servers
AS=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || need a-postgres-user
  AS=(runuser -u postgres --)
  chown postgres "$WORK"
fi
[ ${#AS[@]} = 0 ] || "${AS[@]}" test -r "$LIB" || { echo "SKIP: the postgres user cannot read $LIB"; exit 77; }

DATA=
cleanup() {
  [ -n "$DATA" ] && "${AS[@]}" "$PGBIN/pg_ctl" stop -D "$DATA" -m immediate -w -t 20 >/dev/null 2>&1
  [ -n "${SERVER:-}" ] && kill -9 "$SERVER" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

"${AS[@]}" mkdir "$WORK/sock"
"${AS[@]}" "$PGBIN/initdb" -D "$WORK/template" -A trust -U nd --no-sync >"$WORK/initdb.log" 2>&1 || {
  echo "FAIL: initdb"; tail "$WORK/initdb.log"; exit 1; }

cat >"$WORK/script.sql" <<'SQL'
SET work_mem = '64MB';
CREATE TABLE a AS SELECT g AS id, md5(g::text) AS h, (g * 7919) % 1000 AS k FROM generate_series(1, 100000) g;
CREATE TABLE b AS SELECT g AS k, repeat(chr(65 + g % 26), 1 + g % 200) AS label FROM generate_series(0, 999) g;
ANALYZE a; ANALYZE b;
SELECT count(*), count(DISTINCT h), sum(k) FROM a;
SELECT id, h FROM a ORDER BY h DESC, id LIMIT 5;
SELECT b.k, count(*), sum(length(b.label)), min(a.h) FROM a JOIN b ON a.k = b.k GROUP BY b.k ORDER BY count(*) DESC, b.k LIMIT 8;
SELECT string_agg(h, ',' ORDER BY h) IS NOT NULL, md5(string_agg(h, ',' ORDER BY h)) FROM a;
CREATE INDEX a_h ON a(h);
SELECT id FROM a WHERE h BETWEEN 'aaa' AND 'aab' ORDER BY id;
SELECT k, percentile_disc(0.5) WITHIN GROUP (ORDER BY id) FROM a GROUP BY k ORDER BY k LIMIT 5;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000) SELECT count(*), sum(x) FROM c;
SELECT sum(x)::numeric(30, 3) FROM (SELECT (id * 1.001)::numeric AS x FROM a) s;
SQL

# run NAME COMMAND-PREFIX...: a postmaster of a fresh copy of the cluster
run() {
  local name=$1; shift
  cp -a "$WORK/template" "$WORK/$name" && DATA="$WORK/$name"
  pick_port
  "$@" "$PGBIN/postgres" -D "$DATA" -k "$WORK/sock" -p "$PORT" -c listen_addresses= \
    -c fsync=off -c shared_buffers=64MB >"$WORK/$name.log" 2>&1 9>>"$WORK/$name.stats" &
  SERVER=$!
  local up=
  for _ in $(seq 150); do
    "${AS[@]}" "$PGBIN/pg_isready" -q -h "$WORK/sock" -p "$PORT" && { up=1; break; }
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.2
  done
  [ -n "$up" ] || { echo "FAIL: postgres ($name) did not start"; tail "$WORK/$name.log"; exit 1; }
  local pg=(-h "$WORK/sock" -p "$PORT" -U nd)
  "${AS[@]}" psql "${pg[@]}" -X -q -A -t -d postgres -f "$WORK/script.sql" >"$WORK/$name.out" 2>&1 || {
    echo "FAIL: psql ($name)"; tail "$WORK/$name.out"; exit 1; }
  [ "$name" = plain ] || same_output "postgres script ($name)" "$WORK/plain.out" "$WORK/$name.out"
  "${AS[@]}" timeout 120 pgbench "${pg[@]}" -i -s 1 -q postgres >"$WORK/$name.bench" 2>&1 &&
    "${AS[@]}" timeout 120 pgbench "${pg[@]}" -c 4 -j 2 -t 100 postgres >>"$WORK/$name.bench" 2>&1 || {
    echo "FAIL: pgbench ($name)"; tail "$WORK/$name.bench"; exit 1; }
  grep -q "number of failed transactions: 0 " "$WORK/$name.bench" &&
    grep -q "number of transactions actually processed: 400/400" "$WORK/$name.bench" || {
    echo "FAIL: pgbench ($name) did not complete every transaction"; tail "$WORK/$name.bench"; exit 1; }
  local sums
  sums=$("${AS[@]}" psql "${pg[@]}" -X -A -t -d postgres -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts),
    (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches),
    (SELECT sum(delta) FROM pgbench_history), (SELECT count(*) FROM pgbench_history)")
  echo "$sums" | awk -F'|' '$1 == $2 && $2 == $3 && $3 == $4 && $5 == 400 { ok = 1 } END { exit !ok }' || {
    echo "FAIL: pgbench ($name): balances of accounts|tellers|branches|history, history rows disagree: $sums"; exit 1; }
  "${AS[@]}" "$PGBIN/pg_ctl" stop -D "$DATA" -m fast -w -t 60 >/dev/null || { echo "FAIL: pg_ctl stop ($name)"; exit 1; }
  wait "$SERVER"
  local rc=$?
  SERVER= DATA=
  [ $rc = 0 ] || { echo "FAIL: postgres ($name) exited with $rc"; tail "$WORK/$name.log"; exit 1; }
  no_nodalloc_errors "$WORK/$name.log"
  [ "$name" = plain ] || echo "ok: $name: pgbench $(grep -o 'processed: [0-9/]*' "$WORK/$name.bench"), balances agree ($sums)"
}

run plain "${AS[@]}" env
run nd "${AS[@]}" env "${ND_STATS[@]}" LD_PRELOAD="$LIB"
# the backends' sorts and hash tables (work_mem 64MB)
served_by_nodalloc postgres "$WORK/nd.stats" $((16 << 20))
run check "${AS[@]}" env NODALLOC_CHECK=1 LD_PRELOAD="$LIB"
TOPO='0: cpus=0 mem=2G; 1: cpus=1 mem=2G'
if [ -x "$NODACTL" ]; then
  run interleave "${AS[@]}" env NODALLOC_MSG_FD=9 "$NODACTL" --topology="$TOPO" --interleave=all --stats=json --stats-children --
  served_by_nodalloc postgres "$WORK/interleave.stats" $((16 << 20))
  run bind "${AS[@]}" "$NODACTL" --topology="$TOPO" --membind=1 --
else
  run interleave "${AS[@]}" env NODALLOC_TOPOLOGY="$TOPO" NODALLOC_POLICY=interleave:0-1 LD_PRELOAD="$LIB"
fi
