#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Multi-threaded programs under nodalloc: xz -T2, zstd -T2 and pigz round
# trips, sort --parallel=2 with a 64 MiB buffer, perl threads; each in
# plain, check, interleave and weighted modes (an emulated two-node
# machine), their output compared with a run without the library.
source "$(dirname "$0")/common.sh"
need python3 xz zstd pigz sort perl sha256sum

# ~10 MB of text: sortable lines (word, number, word) and a random tail
python3 - "$WORK/lines" <<'PY'
import random, sys
random.seed(22)
w = ["".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(2, 9))) for _ in range(3000)]
with open(sys.argv[1], "w") as f:
    for i in range(300000):
        f.write("%s %d %s\n" % (random.choice(w), random.randint(0, 10**6), random.choice(w)))
    f.write(random.randbytes(2 << 20).hex())
PY

# Everything runs under the preload, shell and sha256sum too.
cat >"$WORK/job.sh" <<'SH'
set -o pipefail
f=$1
xz -T2 -1 -c "$f" | xz -T2 -d -c | sha256sum
zstd -q -T2 -c "$f" | zstd -q -d -c | sha256sum
pigz -p 2 -c "$f" | pigz -p 2 -d -c | sha256sum
sort --parallel=2 -S 64M "$f" | sha256sum
sort --parallel=2 -S 8M -t' ' -k2,2n -k1,1 "$f" | sha256sum
perl -Mthreads -e 'my @t = map { threads->create(sub { my $n = shift; my %h; my $s = 0;
  for my $i (1..60000) { $h{"k$i"} = ("v" x ($i % 90)) . $n; delete $h{"k" . ($i - 700)} if $i > 700 }
  $s += length($h{$_}) for keys %h; return $s }, $_) } 1..4; print join(",", map { $_->join } @t), "\n";'
SH

JOB=(bash "$WORK/job.sh" "$WORK/lines")
JOB_NAME="xz, zstd, pigz, sort, perl threads"
"${JOB[@]}" >"$WORK/ref.out" 2>&1 || { echo "FAIL: the programs without nodalloc failed"; cat "$WORK/ref.out"; exit 1; }
[ "$(wc -l <"$WORK/ref.out")" -eq 6 ] || { echo "FAIL: expected 6 lines of output:"; cat "$WORK/ref.out"; exit 1; }

TOPO='0: cpus=0 mem=2G; 1: cpus=1 mem=2G'
variant plain "${ND_STATS[@]}"
# sort's 64 MiB buffer came from nodalloc
served_by_nodalloc sort "$WORK/stats.plain" $((32 << 20))
variant check NODALLOC_CHECK=1
variant interleave NODALLOC_TOPOLOGY="$TOPO" NODALLOC_POLICY=interleave:0-1
variant weighted NODALLOC_TOPOLOGY="$TOPO" NODALLOC_POLICY=weighted:0=1,1=3
