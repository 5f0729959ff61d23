#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sqlite3: a few thousand inserts, an index, joins, aggregates and updates,
# with and without nodalloc.
source "$(dirname "$0")/common.sh"
need sqlite3

{
  echo "PRAGMA journal_mode=MEMORY;"
  echo "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, price REAL, blob BLOB);"
  echo "CREATE TABLE grp(id INTEGER PRIMARY KEY, label TEXT);"
  echo "BEGIN;"
  for g in $(seq 0 49); do echo "INSERT INTO grp VALUES($g, 'group-$g-' || '$((g * 7919 % 1000))');"; done
  for i in $(seq 1 6000); do
    echo "INSERT INTO item(name, grp, price, blob) VALUES('item-$i-$((i * 2654435761 % 100000))', $((i * 31 % 50)), $((i % 997)).$((i % 100)), zeroblob($((i % 300))));"
  done
  echo "COMMIT;"
  echo "CREATE INDEX item_grp ON item(grp, price);"
  echo "SELECT count(*), sum(length(blob)), round(sum(price), 2) FROM item;"
  echo "SELECT g.label, count(*), round(avg(i.price), 3) FROM item i JOIN grp g ON g.id = i.grp GROUP BY g.id ORDER BY g.id;"
  echo "SELECT name FROM item WHERE grp = 7 AND price > 500 ORDER BY price DESC, id LIMIT 20;"
  echo "UPDATE item SET name = upper(name) || '-' || grp WHERE id % 3 = 0;"
  echo "DELETE FROM item WHERE id % 5 = 0;"
  echo "SELECT count(*), max(name), min(name) FROM item;"
  echo "SELECT grp, group_concat(id, ',') FROM (SELECT grp, id FROM item WHERE id < 400 ORDER BY id) GROUP BY grp ORDER BY grp;"
  echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) SELECT count(*), sum(x) FROM c;"
  echo "VACUUM;"
  echo "SELECT count(*) FROM item WHERE name LIKE '%-1%';"
} >"$WORK/script.sql"

sqlite3 "$WORK/plain.db" <"$WORK/script.sql" >"$WORK/plain.out" 2>&1 || { echo "FAIL: sqlite3 without nodalloc failed"; tail "$WORK/plain.out"; exit 1; }
env "${ND_STATS[@]}" LD_PRELOAD="$LIB" sqlite3 "$WORK/nd.db" <"$WORK/script.sql" >"$WORK/nd.out" 2>"$WORK/nd.err" 9>>"$WORK/stats" || {
  echo "FAIL: sqlite3 under nodalloc exited with $?"; tail "$WORK/nd.err"; exit 1; }
no_nodalloc_errors "$WORK/nd.err"
same_output "sqlite3 ($(grep -c INSERT "$WORK/script.sql") inserts)" "$WORK/plain.out" "$WORK/nd.out"
# and the database files hold the same data
sqlite3 "$WORK/plain.db" .dump >"$WORK/plain.dump"
LD_PRELOAD="$LIB" sqlite3 "$WORK/nd.db" .dump >"$WORK/nd.dump" 2>>"$WORK/nd.err"
same_output "sqlite3 .dump" "$WORK/plain.dump" "$WORK/nd.dump"
# its page cache and the VACUUM copy (the library alone: about 0.5 MiB)
served_by_nodalloc sqlite3 "$WORK/stats" $((2 << 20))
