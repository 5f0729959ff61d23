# SPDX-License-Identifier: MIT
# Shared by the run_*.sh scripts. $1 of the script: path of libnodalloc.so.
set -u
LIB=${1:?usage: $0 path/to/libnodalloc.so}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/nd-integration.XXXXXX)
SERVER= # the pid of a daemon the script runs, killed at its exit
trap '[ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
[ -f "$LIB" ] || { echo "FAIL: no library at $LIB"; exit 1; }

# need NAME...: exit 77 (skipped) naming the first missing program
need() {
  for p in "$@"; do
    command -v "$p" >/dev/null 2>&1 || { echo "SKIP: $p is not installed (make test installs it: scripts/install-deps.sh)"; exit 77; }
  done
}

# same_output NAME FILE_A FILE_B: fail with a diff if they differ
same_output() {
  if ! cmp -s "$2" "$3"; then
    echo "FAIL: $1: output differs under nodalloc (< without, > with):"
    diff "$2" "$3" | head -40
    exit 1
  fi
  echo "ok: $1: $(wc -l <"$2") lines identical"
}

# A program run under nodalloc must not print a nodalloc fatal/error.
no_nodalloc_errors() {
  if grep -q "nodalloc: \(fatal\|error\)" "$1"; then
    echo "FAIL: nodalloc reported:"; grep "nodalloc:" "$1" | head; exit 1
  fi
}

# Proof that nodalloc, not a bundled allocator, served a program (a server
# Debian builds, for one, carries its own jemalloc). Run the program with
# "${ND_STATS[@]}" in its environment and fd 9 appended to a file: each
# process of the library prints its statistics there at exit, as JSON
# (NODALLOC_STATS=json on NODALLOC_MSG_FD; messages land there too).
ND_STATS=(NODALLOC_STATS=json NODALLOC_MSG_FD=9)

# served_by_nodalloc PROGRAM FILE MIN_BYTES: the statistics in FILE of a
# process named PROGRAM show at least MIN_BYTES in use at its peak, in
# page runs nodalloc handed out (numa_hit > 0). A process that rewrote
# its title is named by the title's first word (its colon dropped).
served_by_nodalloc() {
  no_nodalloc_errors "$2"
  local r
  if r=$(/usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import json, sys
prog, path, need = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(path, errors="replace").read()
dec, best, i = json.JSONDecoder(), None, text.find('{"version"')
while i >= 0:
    try:
        s, _ = dec.raw_decode(text, i)
        # a title the process set (redis-server's "NAME ADDR:PORT", a postgres
        # backend's "postgres: USER DB ...") counts by its first word
        if s.get("program", "").split(" ")[0].rstrip(":") == prog and (best is None or s["peak_bytes_in_use"] > best["peak_bytes_in_use"]):
            best = s
    except ValueError:
        pass
    i = text.find('{"version"', i + 1)
if best is None:
    print("no statistics of a process named %s" % prog)
    sys.exit(1)
print("peak %.1f MiB in use, %d page runs (numa_hit)" % (best["peak_bytes_in_use"] / 2**20, best["total"]["numa_hit"]))
sys.exit(0 if best["peak_bytes_in_use"] >= need and best["total"]["numa_hit"] > 0 else 1)
PY
  ); then
    echo "ok: nodalloc served $1: $r"
  else
    echo "FAIL: nodalloc did not serve $1 (expected a peak of at least $3 bytes in use): $r"
    exit 1
  fi
}

# free_port: a TCP port on 127.0.0.1 nobody listens on (0 if none)
free_port() {
  local p
  for p in $(seq $((20000 + $$ % 20000)) $((20100 + $$ % 20000))); do
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
  done
  echo 0
}

# pick_port: PORT=free_port's, or fail
pick_port() {
  PORT=$(free_port)
  [ "$PORT" != 0 ] || { echo "FAIL: no free port"; exit 1; }
}

# wait_listening WHAT PID PORT LOG: until PID answers on 127.0.0.1:PORT
# (10 s); fails naming WHAT, with LOG's tail, if it dies or never does
wait_listening() {
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$3") 2>/dev/null && return
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: $1 did not start"; tail "$4"; exit 1
}

# variant NAME ENV...: runs "${JOB[@]}" under the library with ENV set,
# statistics on fd 9 into $WORK/stats.NAME; its output must equal
# $WORK/ref.out (the run without the library) and hold no nodalloc error.
variant() {
  local name=$1; shift
  env "$@" LD_PRELOAD="$LIB" "${JOB[@]}" >"$WORK/$name.out" 2>"$WORK/$name.err" 9>>"$WORK/stats.$name" || {
    echo "FAIL: $JOB_NAME ($name) exited with $?"; tail -20 "$WORK/$name.err"; exit 1; }
  no_nodalloc_errors "$WORK/$name.err"
  same_output "$JOB_NAME ($name)" "$WORK/ref.out" "$WORK/$name.out"
}
