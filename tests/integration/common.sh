# Shared by the run_*.sh scripts. $1 of the script: path of libnodalloc.so.
set -u
LIB=${1:?usage: $0 path/to/libnodalloc.so}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/nd-integration.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
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
