#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The benchmark suite: `make bench` runs `bash bench/run.sh <builddir>`.
#
# Runs every workload (bench/wl_*.c) under glibc (no preload), jemalloc,
# mimalloc, tcmalloc and nodalloc (LD_PRELOAD) in the same run, BENCH_REPS
# times each (median), interleaving the allocators inside each repetition so
# that background load hits them alike. Then counts instructions per
# malloc/free pair with callgrind, prints ratios nodalloc / peer and checks
# the targets of issue 4 (PASS/MISS; a miss never fails the run:
# benchmarks report, tests assert). Writes bench/results/latest.txt, the
# raw figures and PNG charts (gnuplot).
#
# Environment:
#   BENCH_REPS=7        repetitions per workload and allocator (median)
#   BENCH_QUICK=1       tiny op counts, 1 repetition: a smoke test of the harness
#   BENCH_RESULTS=dir   where results go (default: bench/results next to this script)
#   BENCH_ONLY="a b"    only these allocators (names as below)
#   BENCH_NODALLOC=lib  the library measured as "nodalloc" (default <builddir>/libnodalloc.so)
#   BENCH_TIMEOUT=120   seconds before one run is killed and counted as failed
#   BENCH_WL="a b"      only these workloads (names as below; the instruction
#                       count runs only with `small`)
#   BENCH_BASELINE=lib  also measure this libnodalloc.so (e.g. built from an
#                       older commit) as "baseline", with its own ratios to
#                       the peers: a change's before/after in one run
#   BENCH_SETTLE=MiB    before every timed run, touch and free MiB of huge
#                       pages (wl_touch): every allocator then starts with
#                       the kernel's free huge blocks warm, as on a machine
#                       without free page reporting (docs/benchmarks.md)
#   BENCH_PEAK=exact    peak RSS exact for every row (nd_measure -z: a stop
#                       before every munmap/madvise/...): the times then
#                       include the stops (+20-60% on threads), so for
#                       RSS only. Default: nd_measure -x's peak, exact
#                       where the program peaks at its exit
set -u

usage() { echo "usage: bash bench/run.sh <builddir>" >&2; exit 2; }
[ $# -eq 1 ] || usage
[ -d "$1" ] || { echo "run.sh: build directory '$1' does not exist" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$BUILD/bench
RESULTS=${BENCH_RESULTS:-$HERE/results}
QUICK=${BENCH_QUICK:-0}
REPS=${BENCH_REPS:-7}
[ "$QUICK" = 1 ] && REPS=${BENCH_REPS:-1}
case $REPS in '' | *[!0-9]* | 0) echo "run.sh: bad BENCH_REPS '$REPS': expected a positive integer" >&2; exit 2 ;; esac
TIMEOUT=${BENCH_TIMEOUT:-120}
case $TIMEOUT in '' | *[!0-9]* | 0) echo "run.sh: bad BENCH_TIMEOUT '$TIMEOUT': expected seconds > 0" >&2; exit 2 ;; esac
SETTLE=${BENCH_SETTLE:-}
case $SETTLE in *[!0-9]* | 0*) echo "run.sh: bad BENCH_SETTLE '$SETTLE': expected MiB > 0" >&2; exit 2 ;; esac
PEAK=${BENCH_PEAK:-exit}
case $PEAK in exit) PEAKOPT=-x ;; exact) PEAKOPT=-z ;; *) echo "run.sh: bad BENCH_PEAK '$PEAK': expected exit or exact" >&2; exit 2 ;; esac
LIBDIR=/usr/lib/x86_64-linux-gnu
MEASURE=$BIN/nd_measure
for f in "$MEASURE" "$BIN"/wl_{small,prodcons,larson,footprint,large,threads,xfree,burst,order,rpat,probe,touch,spread,mixed,handoff,batch}; do
	[ -x "$f" ] || { echo "run.sh: $f is missing: build first (cmake --build $BUILD)" >&2; exit 2; }
done
mkdir -p "$RESULTS"
start=$(date +%s)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- allocators: name and preload (empty = none) --------------------------
ALL_NAMES=(glibc jemalloc mimalloc tcmalloc nodalloc nodalloc-2n)
declare -A PRELOAD=(
	[glibc]=""
	[jemalloc]=$LIBDIR/libjemalloc.so.2
	[mimalloc]=$LIBDIR/libmimalloc.so.2
	[tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
	[nodalloc]=${BENCH_NODALLOC:-$BUILD/libnodalloc.so}
	[nodalloc-2n]=${BENCH_NODALLOC:-$BUILD/libnodalloc.so}
)
# extra environment per allocator. nodalloc-2n: nodalloc with an emulated
# topology of two nodes, one CPU each, so its NUMA paths (per-node caches,
# node switch on migration, remote frees to another node) are exercised on
# a one-node machine. Shown next to the others, not used in ratios/targets.
declare -A ENVS=([nodalloc-2n]="NODALLOC_TOPOLOGY=0:cpus=0,mem=8G;1:cpus=1,mem=8G")
if [ -n "${BENCH_BASELINE:-}" ]; then
	[ -r "$BENCH_BASELINE" ] || { echo "run.sh: BENCH_BASELINE '$BENCH_BASELINE' not found" >&2; exit 2; }
	PRELOAD[baseline]=$BENCH_BASELINE
fi
ALLOCS=()
for a in ${BENCH_ONLY:-${ALL_NAMES[*]}}; do
	# the 2-node variant only means something on the real allocator and
	# with at least 2 CPUs; decided after the probe below
	[ "$a" = nodalloc-2n ] && { WANT_2N=1; continue; }
	[ -n "${PRELOAD[$a]+set}" ] || { echo "run.sh: bad allocator '$a' in BENCH_ONLY: expected one of ${ALL_NAMES[*]}" >&2; exit 2; }
	if [ -n "${PRELOAD[$a]}" ] && [ ! -r "${PRELOAD[$a]}" ]; then
		echo "run.sh: skipping $a: ${PRELOAD[$a]} not found (bash scripts/install-deps.sh)"
		continue
	fi
	ALLOCS+=("$a")
done
have() { local x; for x in "${ALLOCS[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
# workload $1 is part of this run
inwl() { [[ " ${WL_NAMES[*]} " == *" $1 "* ]]; }
PEERS=()
for a in "${ALLOCS[@]}"; do [ "$a" != nodalloc ] && PEERS+=("$a"); done
[ -n "${BENCH_BASELINE:-}" ] && ALLOCS+=(baseline) # not a peer: ratios of its own
WANT_2N=${WANT_2N:-0}

# ---- workloads: name and command line (op counts fixed: deterministic) ----
# (docs/benchmarks.md describes each; issue 11 added large, threads, xfree2/4,
# larsonbig, burst: rounds of a thread freeing 128 MiB of page runs just
# before it exits, about 0.15 GiB and 0.3-0.8 s a run; order, order2: the
# whole small working set emptied twice a round, its class mix shifting,
# 1 and 2 threads (order1t: the one thread spawned, not main()); rpat:
# random patterns across threads, rpmalloc's benchmark tool's kind; spread:
# 48 KiB - 1 MiB blocks under the kernel policy interleave over every node,
# as numactl --interleave=all sets it, task spread64; mixed: 2 threads
# churning a size mix whose 2-64 KiB tail crosses the largest size class,
# task outside26; handoff: 4 threads freeing batches in two orders, a tenth
# of each handed to the next thread, task outside27; batch2: 2 threads each
# allocating 30,000 blocks of 8 B and freeing them, task outside27)
WL_NAMES=(small prodcons larson larsonbig footprint large threads xfree2 xfree4 burst order order1t order2 rpat spread mixed handoff batch2)
if [ "$QUICK" = 1 ]; then
	declare -A WL=([small]="wl_small 1000000" [prodcons]="wl_prodcons 1 200000"
		[larson]="wl_larson 2 2 50000" [larsonbig]="wl_larson 2 2 20000 1024 2000 16000 2"
		[footprint]="wl_footprint 50000"
		[large]="wl_large 30 4" [threads]="wl_threads 4 4 2000"
		[xfree2]="wl_xfree 2 100000" [xfree4]="wl_xfree 4 50000" [burst]="wl_burst 1 2 16"
		[order]="wl_order 15 1 1000" [order1t]="wl_order 15 1 1000 spawn" [order2]="wl_order 15 2 1000"
		[rpat]="wl_rpat 2 1000 100 16 16000 2 2 300 1" [spread]="wl_spread 100 8 48 1024 il" [mixed]="wl_mixed 2 300000"
		[handoff]="wl_handoff 4 500" [batch2]="wl_batch 2 40")
	CG_N=100000
else
	declare -A WL=([small]="wl_small 20000000" [prodcons]="wl_prodcons 1 8000000"
		[larson]="wl_larson 2 8 500000" [larsonbig]="wl_larson 2 8 500000 4096 2000 16000 2"
		[footprint]="wl_footprint 300000"
		[large]="wl_large 200" [threads]="wl_threads 4 50 20000"
		[xfree2]="wl_xfree 2 2000000" [xfree4]="wl_xfree 4 1000000" [burst]="wl_burst 1 10 128"
		[order]="wl_order 150 1" [order1t]="wl_order 150 1 10000 spawn" [order2]="wl_order 150 2"
		[rpat]="wl_rpat 2 1000 100 16 16000 2 2 10000 2" [spread]="wl_spread 1000 8 48 1024 il" [mixed]="wl_mixed 2 6000000"
		[handoff]="wl_handoff 4 5000" [batch2]="wl_batch 2 400")
	CG_N=500000
fi
if [ -n "${BENCH_WL:-}" ]; then
	for w in $BENCH_WL; do
		[ -n "${WL[$w]+set}" ] || { echo "run.sh: bad workload '$w' in BENCH_WL: expected one of ${WL_NAMES[*]}" >&2; exit 2; }
	done
	WL_NAMES=($BENCH_WL)
fi

# key=value from a line
kv() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" | head -n1; }

# ---- is nodalloc the real allocator or still the glibc bootstrap? ---------
ND_STATE=absent
if have nodalloc; then
	probe=$("$MEASURE" -p "${PRELOAD[nodalloc]}" -t 30 -- "$BIN/wl_probe" 2>&1 | grep '^PROBE')
	if echo "$probe" | grep -q 'heap=brk'; then ND_STATE=bootstrap; else ND_STATE=real; fi
fi
if [ "$WANT_2N" = 1 ]; then
	if [ "$ND_STATE" = real ] && [ "$(nproc)" -ge 2 ] && [ -r "${PRELOAD[nodalloc-2n]}" ]; then
		ALLOCS+=(nodalloc-2n)
	else
		NOTE_2N="nodalloc-2n skipped: it needs the real nodalloc allocator and 2 CPUs"
	fi
fi
# how nodalloc's rows are labelled: marked while it is the glibc bootstrap
lab() { if [ "$1" = nodalloc ] && [ "$ND_STATE" = bootstrap ]; then echo "nodalloc*"; else echo "$1"; fi; }
OUT=$TMP/latest.txt
say() { echo "$*" | tee -a "$OUT"; }

say "nodalloc benchmarks  $(date -u '+%Y-%m-%d %H:%M UTC')"
say "commit $(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$HERE/.." status --porcelain -- src 2>/dev/null | grep -q . && echo ' + uncommitted src/ changes')"
say "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${NOTE_2N:-}" ] && say "$NOTE_2N"
say "allocators: ${ALLOCS[*]}; repetitions: $REPS (median)$([ "$QUICK" = 1 ] && echo '; QUICK mode (tiny counts)')$([ -n "$SETTLE" ] && echo "; BENCH_SETTLE=$SETTLE (huge pages warmed before each run)")$([ "$PEAK" = exact ] && echo "; BENCH_PEAK=exact (exact peaks; times include the stops)")"
if [ "$ND_STATE" = bootstrap ]; then
	say ""
	say "*** libnodalloc.so is still the BOOTSTRAP that forwards to glibc's malloc:"
	say "*** every 'nodalloc*' figure below is glibc's, a placeholder, not nodalloc's."
fi
say ""

# ---- timed runs ------------------------------------------------------------
RAW=$TMP/raw.txt
# peak_kb: nd_measure -x's, the larger of ru_maxrss and the exact RSS at the
# exit (ru_maxrss reads the kernel's approximate per-CPU counters, up to ~62
# pages low per counter: docs/benchmarks.md "smallrss"), or -z's exact peak
# (BENCH_PEAK=exact); maxrss_kb: ru_maxrss; minflt: the process's minor faults
echo "# workload allocator rep time_s wall_s peak_kb mops status cpu_s maxrss_kb minflt" >"$RAW"
echo "running ${#WL_NAMES[@]} workloads x ${#ALLOCS[@]} allocators x $REPS repetitions ..."
for ((rep = 1; rep <= REPS; rep++)); do
	for w in "${WL_NAMES[@]}"; do
		# A fresh order for each repetition and workload (seeded shuffle, so
		# runs are reproducible): what ran just before matters here. This
		# VM's balloon reports freed pages to the host, and pages a process
		# freed a moment ago fault in again 3-5x cheaper than reported ones;
		# with a fixed cyclic order nodalloc always ran right after tcmalloc
		# and the nodalloc-2n row after nodalloc, which made wl_large look
		# 2.5x faster under the emulated topology.
		mapfile -t order < <(printf '%s\n' "${ALLOCS[@]}" | awk -v seed="$rep$((${#w} * 7919))" \
			'BEGIN { srand(seed) } { print rand() "\t" $0 }' | sort -k1,1g | cut -f2)
		for a in "${order[@]}"; do
			set -- ${WL[$w]}
			prog=$BIN/$1
			shift
			pre=()
			[ -n "${PRELOAD[$a]}" ] && pre=(-p "${PRELOAD[$a]}")
			[ -n "${ENVS[$a]:-}" ] && pre+=(-e "${ENVS[$a]}")
			[ -n "$SETTLE" ] && "$BIN/wl_touch" "$SETTLE" 1 >/dev/null
			"$MEASURE" "${pre[@]}" $PEAKOPT -t "$TIMEOUT" -- "$prog" "$@" >"$TMP/out" 2>"$TMP/err"
			st=$?
			r=$(grep '^RESULT' "$TMP/out")
			m=$(grep '^MEASURE' "$TMP/out")
			if [ $st -ne 0 ] || [ -z "$r" ]; then
				echo "  FAILED: $w under $a (status $st):" | tee -a "$OUT"
				tail -n 5 "$TMP/err" | sed 's/^/    /' | tee -a "$OUT"
				echo "$w $a $rep - - - - FAIL$st - - -" >>"$RAW"
				continue
			fi
			cpu=$(awk -v u="$(echo "$m" | kv user_s)" -v s="$(echo "$m" | kv sys_s)" 'BEGIN {printf "%.3f", u + s}')
			echo "$w $a $rep $(echo "$r" | kv time_s) $(echo "$m" | kv wall_s) $(echo "$m" | kv peak_kb) $(echo "$r" | kv mops) ok $cpu $(echo "$m" | kv maxrss_kb) $(echo "$m" | kv minflt)" >>"$RAW"
			[ "$w" = footprint ] && echo "$a $rep $(echo "$r" | sed 's/.*mops=[^ ]* //')" >>"$TMP/footprint_phases"
		done
	done
	echo "  repetition $rep/$REPS done ($(($(date +%s) - start)) s)"
done

# median of the numbers on stdin
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
med() { awk -v w="$1" -v a="$2" -v c="$3" '$1 == w && $2 == a && $8 == "ok" {print $c}' "$RAW" | median; }
least() { awk -v w="$1" -v a="$2" -v c="$3" '$1 == w && $2 == a && $8 == "ok" {print $c}' "$RAW" | sort -g | head -n1 | grep . || echo -; }
# ratio x/y with 2 decimals, "-" if either is missing
ratio() { awk -v x="$1" -v y="$2" 'BEGIN {if (x == "-" || y == "-" || y + 0 == 0) print "-"; else printf "%.2f\n", x / y}'; }

declare -A TIME RSS MOPS BEST CPU FLT
for w in "${WL_NAMES[@]}"; do
	for a in "${ALLOCS[@]}"; do
		TIME[$w,$a]=$(med "$w" "$a" 4)
		CPU[$w,$a]=$(med "$w" "$a" 9)
		BEST[$w,$a]=$(least "$w" "$a" 4)
		RSS[$w,$a]=$(med "$w" "$a" 6)
		MOPS[$w,$a]=$(med "$w" "$a" 7)
		FLT[$w,$a]=$(med "$w" "$a" 11)
	done
done

echo "workload ${ALLOCS[*]}" >"$TMP/mops.txt"
for w in "${WL_NAMES[@]}"; do
	dat=$w
	for a in "${ALLOCS[@]}"; do dat+=" ${MOPS[$w,$a]}"; done
	echo "$dat" >>"$TMP/mops.txt"
done

say "== Median per workload (time = the workload's measured loop, best = its fastest repetition;"
say "   cpu = user + system time of the whole process: less sensitive to a loaded machine;"
say "   peak RSS of the process: the larger of ru_maxrss and its exact RSS at exit; faults: its minor faults)"
for w in "${WL_NAMES[@]}"; do
	say ""
	say "$w: $(set -- ${WL[$w]}; echo "$*")"
	say "$(printf '  %-12s %10s %10s %10s %10s %12s %9s' allocator time_s best_s cpu_s Mops/s peak_RSS_MiB faults)"
	for a in "${ALLOCS[@]}"; do
		say "$(printf '  %-12s %10s %10s %10s %10s %12s %9s' "$(lab "$a")" "${TIME[$w,$a]}" "${BEST[$w,$a]}" "${CPU[$w,$a]}" "${MOPS[$w,$a]}" \
			"$(awk -v r="${RSS[$w,$a]}" 'BEGIN {if (r == "-") print "-"; else printf "%.1f", r / 1024}')" "${FLT[$w,$a]}")"
	done
done
if [ -s "$TMP/footprint_phases" ]; then
	say ""
	say "footprint phases (KiB, last repetition): full = after phase 1, sparse = after freeing 90%,"
	say "refill = after phase 3, end = after freeing everything"
	for a in "${ALLOCS[@]}"; do
		say "  $(printf '%-12s' "$(lab "$a")") $(grep "^$a $REPS " "$TMP/footprint_phases" | cut -d' ' -f3- | sed 's/_kb//g')"
	done
fi

# one table of ratios nodalloc / peer: every workload, every peer, no row
# left out; also written to $3 for the charts (if given)
ratio_table() { # title array-name [file [subject]]
	local -n V=$2
	local w p r line dat s=${4:-nodalloc}
	say "$1:"
	say "$hdr"
	[ -n "${3:-}" ] && echo "workload ${PEERS[*]}" >"$3"
	for w in "${WL_NAMES[@]}"; do
		line="$(printf '  %-12s' "$w")"
		dat="$w"
		for p in "${PEERS[@]}"; do
			r=$(ratio "${V[$w,$s]}" "${V[$w,$p]}")
			line+="$(printf ' %9s' "$r")"
			dat+=" $r"
		done
		say "$line"
		[ -n "${3:-}" ] && echo "$dat" >>"$3"
	done
	return 0
}
if have nodalloc && [ ${#PEERS[@]} -gt 0 ]; then
	say ""
	say "== Ratios nodalloc / peer, medians of the same run (below 1.00: nodalloc is faster / smaller)"
	hdr="$(printf '  %-12s' workload)"
	for p in "${PEERS[@]}"; do hdr+="$(printf ' %9s' "$p")"; done
	ratio_table "time (the workload's loop)" TIME "$TMP/ratios_time.txt"
	ratio_table "cpu (user + system of the process)" CPU "$TMP/ratios_cpu.txt"
	ratio_table "peak RSS" RSS "$TMP/ratios_rss.txt"
	if have baseline; then
		say ""
		say "== Ratios baseline ($BENCH_BASELINE) / peer, same run"
		ratio_table "time (the workload's loop)" TIME "" baseline
		ratio_table "cpu (user + system of the process)" CPU "" baseline
		ratio_table "peak RSS" RSS "" baseline
	fi
fi

# ---- instructions per malloc/free pair (callgrind) -------------------------
# Total instructions of wl_small with N and 2N iterations: the difference / N
# is the cost of one iteration, start-up and set-up cancel. The same for the
# "null" loop (no malloc/free) gives the loop's own cost, which is
# subtracted: what remains is the allocator's malloc + free.
declare -A INSN
# prints "total malloc free": all instructions of the run, and the inclusive
# instructions of the functions named malloc and free (any file)
cg_total() { # allocator iterations [null]
	local a=$1 n=$2 extra=()
	shift 2
	[ -n "${ENVS[$a]:-}" ] && extra=("${ENVS[$a]}")
	# run from $TMP: callgrind's file names depend on the working directory
	(cd "$TMP" && timeout -s KILL $((TIMEOUT * 3)) env LD_PRELOAD="${PRELOAD[$a]}" "${extra[@]}" valgrind --tool=callgrind \
		--callgrind-out-file="$TMP/cg.out" "$BIN/wl_small" "$n" 1024 "$@" >/dev/null 2>"$TMP/cg.err") || { echo "- - -"; return; }
	local total
	total=$(sed -n 's/^summary: *//p' "$TMP/cg.out" | head -n1)
	# A function can be listed several times under different file names
	# (inlined code, relative and absolute source paths), some entries
	# holding all of its inclusive cost, some a part: take the largest.
	callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$TMP/cg.out" 2>/dev/null |
		awk -v t="${total:--}" '$2 ~ /^\(/ && $1 ~ /^[0-9,]+$/ {
			n = $1; gsub(",", "", n); n += 0
			if ($3 ~ /:malloc$/ && n > m) m = n
			else if ($3 ~ /:free$/ && n > f) f = n
		} END {print t, (m ? m : "-"), (f ? f : "-")}'
}
# per-iteration difference of field k between the N and 2N runs
perit() { awk -v a="$1" -v b="$2" -v k="$3" -v n="$CG_N" 'BEGIN {split(a, x, " "); split(b, y, " ");
	if (x[k] == "-" || y[k] == "-" || x[k] == "" || y[k] == "") print "-"; else printf "%.1f", (y[k] - x[k]) / n}'; }
if ! inwl small; then
	say ""
	say "== Instructions per pair: skipped (BENCH_WL without small)"
elif command -v valgrind >/dev/null; then
	say ""
	say "== Instructions per malloc/free pair (callgrind, wl_small, (I(2N) - I(N)) / N, N = $CG_N, minus the null loop;"
	say "   malloc, free: inclusive instructions per call of the functions so named, when callgrind names them)"
	n1=$(cg_total glibc "$CG_N" null)
	n2=$(cg_total glibc $((2 * CG_N)) null)
	LOOP=$(perit "$n1" "$n2" 1)
	say "  loop overhead (null loop): $LOOP instructions per iteration"
	say "$(printf '  %-12s %12s %14s %10s %10s' allocator per_iteration malloc+free malloc free)"
	echo "allocator insn_per_pair" >"$TMP/instructions.txt"
	for a in "${ALLOCS[@]}"; do
		i1=$(cg_total "$a" "$CG_N")
		i2=$(cg_total "$a" $((2 * CG_N)))
		per=$(perit "$i1" "$i2" 1)
		INSN[$a]=$(awk -v p="$per" -v l="$LOOP" 'BEGIN {if (p == "-" || l == "-") print "-"; else printf "%.1f", p - l}')
		say "$(printf '  %-12s %12s %14s %10s %10s' "$(lab "$a")" "$per" "${INSN[$a]}" "$(perit "$i1" "$i2" 2)" "$(perit "$i1" "$i2" 3)")"
		echo "$a ${INSN[$a]}" >>"$TMP/instructions.txt"
	done
	if have nodalloc; then
		line="  ratio nodalloc / peer:"
		for p in "${PEERS[@]}"; do line+=" $p $(ratio "${INSN[nodalloc]}" "${INSN[$p]}")"; done
		say "$line"
	fi
else
	say ""
	say "== Instructions per pair: skipped, valgrind is not installed (bash scripts/install-deps.sh)"
fi

# ---- targets of issue 4 -----------------------------------------------------
# verdict <x> <y> <limit> <strict: 1 = x / y must be < limit>: judged on the
# unrounded ratio (ratio() prints two decimals: 52.9 / 53.1 shows as 1.00)
verdict() {
	awk -v x="$1" -v y="$2" -v l="$3" -v s="$4" 'BEGIN {if (x == "-" || y == "-" || y + 0 == 0) print "N/A "; else {r = x / y; if ((s && r < l) || (!s && r <= l)) print "PASS"; else print "MISS"}}'
}
if have nodalloc && have mimalloc; then
	say ""
	say "== Targets (issue 4), nodalloc against mimalloc$([ "$ND_STATE" = bootstrap ] && echo ' -- BOOTSTRAP: these judge glibc, not nodalloc')"
	r=$(ratio "${INSN[nodalloc]:--}" "${INSN[mimalloc]:--}")
	say "  $(verdict "${INSN[nodalloc]:--}" "${INSN[mimalloc]:--}" 1 1)  instructions per malloc/free pair < mimalloc: ${INSN[nodalloc]:--} vs ${INSN[mimalloc]:--} (ratio $r)"
	for w in small prodcons larson; do
		inwl "$w" || continue
		r=$(ratio "${TIME[$w,nodalloc]}" "${TIME[$w,mimalloc]}")
		say "  $(verdict "${TIME[$w,nodalloc]}" "${TIME[$w,mimalloc]}" 1 0)  wall time $w <= mimalloc: ${TIME[$w,nodalloc]} s vs ${TIME[$w,mimalloc]} s (ratio $r; best-of ratio $(ratio "${BEST[$w,nodalloc]}" "${BEST[$w,mimalloc]}"))"
	done
	for w in "${WL_NAMES[@]}"; do
		r=$(ratio "${RSS[$w,nodalloc]}" "${RSS[$w,mimalloc]}")
		say "  $(verdict "${RSS[$w,nodalloc]}" "${RSS[$w,mimalloc]}" 1.1 0)  peak RSS $w <= 1.1 x mimalloc: ${RSS[$w,nodalloc]} KiB vs ${RSS[$w,mimalloc]} KiB (ratio $r)"
	done
fi
# ---- targets of issue 11 ----------------------------------------------------
# footprint's RSS after freeing everything, median over the repetitions (KiB)
end_rss() { grep "^$1 " "$TMP/footprint_phases" 2>/dev/null | sed -n 's/.*rss_end_kb=\([0-9]*\).*/\1/p' | median; }
if have nodalloc && [ ${#PEERS[@]} -gt 0 ]; then
	say ""
	say "== Targets (issue 11), medians of the same run$([ "$ND_STATE" = bootstrap ] && echo ' -- BOOTSTRAP: these judge glibc, not nodalloc')"
	target_time() { # workload peer
		have "$2" && inwl "$1" || return 0
		local r
		r=$(ratio "${TIME[$1,nodalloc]}" "${TIME[$1,$2]}")
		say "  $(verdict "${TIME[$1,nodalloc]}" "${TIME[$1,$2]}" 1 0)  time $1 <= $2: ${TIME[$1,nodalloc]} s vs ${TIME[$1,$2]} s (ratio $r; cpu ratio $(ratio "${CPU[$1,nodalloc]}" "${CPU[$1,$2]}"))"
	}
	target_time small mimalloc
	target_time larson tcmalloc
	target_time larsonbig tcmalloc
	target_time xfree2 tcmalloc
	target_time xfree4 tcmalloc
	target_time footprint glibc
	if inwl footprint; then
		nd_end=$(end_rss nodalloc)
		low=nodalloc
		for p in "${PEERS[@]}"; do
			e=$(end_rss "$p")
			[ "$e" != - ] && [ "$nd_end" != - ] && awk -v a="$e" -v b="$nd_end" 'BEGIN {exit !(a < b)}' && low=$p
		done
		say "  $([ "$nd_end" = - ] && echo 'N/A ' || { [ "$low" = nodalloc ] && echo PASS || echo MISS; })  footprint end RSS the lowest: nodalloc $nd_end KiB$(for p in "${PEERS[@]}"; do printf ', %s %s' "$p" "$(end_rss "$p")"; done)"
	fi
	for w in "${WL_NAMES[@]}"; do
		best=- bp=-
		for p in "${PEERS[@]}"; do
			v=${RSS[$w,$p]}
			[ "$v" = - ] && continue
			if [ "$best" = - ] || [ "$v" -lt "$best" ]; then best=$v bp=$p; fi
		done
		r=$(ratio "${RSS[$w,nodalloc]}" "$best")
		say "  $(verdict "${RSS[$w,nodalloc]}" "$best" 1.1 0)  peak RSS $w <= 1.1 x the best peer ($bp): ${RSS[$w,nodalloc]} KiB vs $best KiB (ratio $r)"
	done
fi
nfail=$(grep -c ' FAIL' "$RAW")
if [ "$nfail" -gt 0 ]; then
	say ""
	say "!! $nfail run(s) FAILED (status 134 = abort, 139 = segfault, 137 = killed after ${TIMEOUT} s): $(awk '$8 ~ /^FAIL/ {printf "%s/%s ", $1, $2}' "$RAW" | tr ' ' '\n' | sort | uniq -c | awk '{printf "%s x%d, ", $2, $1}' | sed 's/, $//')"
fi
say ""
say "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (2-core machine shared with other work: times are noisy)"

# ---- standalone benchmarks of internal layers (bench/bench_*.c) -----------
for b in "$BIN"/bench_*; do
	[ -x "$b" ] || continue
	[ "${b##*/}" = bench_policy ] && continue # driven by bench/policy.sh below
	say ""
	say "== $(basename "$b") (standalone, linked with the static library)"
	timeout 300 "$b" >"$TMP/sb.out" 2>&1
	st=$?
	sed 's/^/  /' "$TMP/sb.out" | tee -a "$OUT"
	[ $st -ne 0 ] && say "  ($(basename "$b") exited with status $st)"
done
if [ -x "$BIN/bench_policy" ] && [ -r "$HERE/policy.sh" ] && command -v valgrind >/dev/null; then
	say ""
	say "== bench/policy.sh: instructions per pair of every policy and placement call (callgrind)"
	bash "$HERE/policy.sh" "$BUILD" 2>&1 | sed 's/^/  /' | tee -a "$OUT"
fi

# ---- files and charts ----------------------------------------------------------
cp "$OUT" "$RESULTS/latest.txt"
cp "$RAW" "$RESULTS/raw.txt"
for f in mops.txt ratios_time.txt ratios_cpu.txt ratios_rss.txt instructions.txt; do
	rm -f "$RESULTS/$f" # never leave a stale table next to fresh ones
	[ -f "$TMP/$f" ] && cp "$TMP/$f" "$RESULTS/$f"
done
if command -v gnuplot >/dev/null; then
	bash "$HERE/charts.sh" "$RESULTS" "$ND_STATE" || echo "run.sh: charts failed (see above)"
else
	echo "run.sh: no charts: gnuplot is not installed (bash scripts/install-deps.sh)"
fi
echo ""
echo "results: $RESULTS/latest.txt (raw runs: raw.txt; charts: *.png); total $(($(date +%s) - start)) s"
exit 0
