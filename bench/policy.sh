#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per malloc/free pair for every policy and every placement
# call, relative to the default (local) malloc pair (issue 11: at most
# 1.10x). callgrind, bench_policy with N and 2N iterations: the difference
# / N, minus the same for the loop alone, is one pair's cost.
#
#   bash bench/policy.sh <builddir>      (POLICY_N=200000 by default)
#
# Runs under an emulated two-node topology (one node has no CPU of this
# machine's: the CPUs fold onto node 0's), so every policy has two nodes.
set -u
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: bash bench/policy.sh <builddir>" >&2; exit 2; }
B=$(cd "$1" && pwd)/bench/bench_policy
[ -x "$B" ] || { echo "policy.sh: $B is missing: build first" >&2; exit 2; }
N=${POLICY_N:-200000}
TOPO="0: cpus=0-1 mem=8G; 1: mem=8G"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# valgrind 3.19 gives up on clang's DWARF 5: run copies without debug
# information (the symbols suffice; the same instructions)
mkdir "$TMP/lib"
objcopy --strip-debug "$B" "$TMP/bench_policy" &&
	objcopy --strip-debug "$(dirname "$B")/../libnodalloc.so" "$TMP/lib/libnodalloc.so.0" ||
	{ echo "policy.sh: objcopy failed" >&2; exit 2; }

total() { # env-policy call iterations [null]
	local pol=$1 call=$2 n=$3
	shift 3
	(cd "$TMP" && env LD_LIBRARY_PATH="$TMP/lib" NODALLOC_TOPOLOGY="$TOPO" ${pol:+NODALLOC_POLICY=$pol} valgrind \
		--tool=callgrind --callgrind-out-file="$TMP/cg.out" "$TMP/bench_policy" "$call" "$n" "$@" >/dev/null \
		2>"$TMP/err") || { echo -; return; }
	sed -n 's/^summary: *//p' "$TMP/cg.out" | head -n1
}
per() { # env-policy call [null]
	local a b
	a=$(total "$1" "$2" "$N" ${3:-})
	b=$(total "$1" "$2" $((2 * N)) ${3:-})
	awk -v a="$a" -v b="$b" -v n="$N" 'BEGIN {if (a == "-" || b == "-") print "-"; else printf "%.1f", (b - a) / n}'
}
LOOP=$(per "" malloc null)
BASE=$(awk -v p="$(per "" malloc)" -v l="$LOOP" 'BEGIN {printf "%.1f", p - l}')
echo "instructions per malloc/free pair (callgrind, N=$N, loop of $LOOP subtracted), ratio to the local malloc pair"
printf '  %-44s %8s %7s\n' call insn ratio
printf '  %-44s %8s %7s\n' "malloc, local (default)" "$BASE" 1.00
row() { # label env-policy call
	local p
	p=$(per "$2" "$3")
	awk -v l="$1" -v p="$p" -v lp="$LOOP" -v b="$BASE" 'BEGIN {
		if (p == "-") printf "  %-44s %8s %7s\n", l, "FAILED", "-";
		else printf "  %-44s %8.1f %7.2f\n", l, p - lp, (p - lp) / b}'
}
for t in "" "+tier"; do
	for pol in bind:0 bind:1 preferred:1 preferred-many:0-1 interleave:all interleave:all@64K interleave:all@2M \
		weighted:0=2,1=1; do
		row "malloc, NODALLOC_POLICY=$pol$t" "$pol$t" malloc
	done
done
row "nd_malloc_onnode(size, 0)" "" onnode:0
row "nd_malloc_onnode(size, 1)" "" onnode:1
row "nd_malloc_local(size)" "" local
for pol in bind:1 preferred:1 preferred-many:0-1 interleave:all weighted:0=2,1=1@64K bind:0+tier; do
	row "nd_malloc_policy(size, $pol)" "" "policy:$pol"
done
for pol in bind:1 preferred:1 preferred-many:0-1 interleave:all weighted:0=2,1=1@64K bind:0+tier; do
	row "nd_malloc_policy(size, prepared $pol)" "" "prepared:$pol"
done
row "nd_mallocx_onnode(size, 1, 0)" "" xonnode:1:0
row "nd_mallocx_onnode(size, 1, ALIGN(64))" "" xonnode:1:6
row "nd_mallocx_onnode(size, 1, ZERO)" "" xonnode:1:64
row "nd_mallocx_onnode(size, LOCAL, 0)" "" xonnode:-1:0
row "nd_mallocx_policy(size, prepared bind:1, 0)" "" xpolicy:0:bind:1
row "nd_mallocx_policy(size, prepared il:all, ALIGN(64))" "" xpolicy:6:interleave:all
row "nd_calloc_onnode(1, size, 1)" "" callocon:1
row "nd_aligned_alloc_onnode(64, size, 1)" "" alignon:1:64
row "nd_heap_malloc(nd_heap_new(1), size)" "" heap:1
for g in 0 65536 2097152; do
	row "nd_malloc_interleaved(size, all, $g)" "" "interleaved:$g"
done
row "nd_calloc_policy(1, size, prepared bind:1)" "" callocpol:bind:1
row "nd_aligned_alloc_policy(64, size, prepared il:all)" "" alignpol:64:interleave:all
row "malloc + nd_free_sized" "" sized
row "calloc(1, size) (peer of ZERO)" "" calloc
row "malloc + memset(size) (peer of ZERO)" "" mallocz
row "malloc(size rounded to 64) (peer of ALIGN(64))" "" mallocr:64
