#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The test bed's report, to paste into the issue note:
#   bash tests/vm/report.sh BUILD_DIR [--logs] [TOPOLOGY...]
# Boots every topology (or those named) with all in-VM tests, then prints
# per topology the results, the placement table (every CPU: share of pages
# on its memory node), the policy cases, the pagemap contiguity figures,
# strict binding and statistics rows. --logs: no boot, print from the
# console logs of the last run (BUILD_DIR/vm-cache/<topology>/console.log).
# Exit status: that of the runs (0 all passed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: report.sh BUILD_DIR [--logs] [TOPOLOGY...]}
shift
boot=1
if [ "${1:-}" = "--logs" ]; then boot=0; shift; fi
# shellcheck source=topologies.sh
source "$here/topologies.sh"
topos=("$@")
[ ${#topos[@]} -eq 0 ] && read -ra topos <<<"$VM_TOPOLOGIES"

# "VMTAB <table> k=v k=v" rows of one table as aligned columns
table() {
	local log=$1 tab=$2
	grep "^VMTAB $tab " "$log" | sed "s/^VMTAB $tab //" | awk '
	{ n++; for (i = 1; i <= NF; i++) { split($i, kv, "="); k = kv[1]; v = substr($i, length(k) + 2)
		if (!(k in col)) { col[k] = ++nc; name[nc] = k; w[nc] = length(k) }
		cell[n, col[k]] = v; if (length(v) > w[col[k]]) w[col[k]] = length(v) } }
	END { if (!n) { print "  (no rows)"; exit }
		line = "  "; for (c = 1; c <= nc; c++) line = line sprintf("%-" w[c] "s  ", name[c]); print line
		for (r = 1; r <= n; r++) { line = "  "; for (c = 1; c <= nc; c++) line = line sprintf("%-" w[c] "s  ", cell[r, c]); print line } }'
}

rc=0
summary=""
for t in "${topos[@]}"; do
	log=$build/vm-cache/$t/console.log
	if [ $boot = 1 ]; then
		out=$(bash "$here/run.sh" "$build" "$t" 2>&1)
		r=$?
		[ $r -ne 0 ] && rc=$r
	else
		out=""
	fi
	topo_define "$t" >/dev/null || continue
	echo "==================== topology: $t ===================="
	echo "QEMU: $(topo_qemu_args | head -4 | tr '\n' ' ')(-numa per node below)"
	for e in "${NODES[@]}"; do
		read -r id mem cpus <<<"$e"
		printf '  node %-2s mem %4s MiB  cpus %-4s distances %s\n' "$id" "$mem" "$cpus" "${DIST[$id]}"
	done
	if [ ! -s "$log" ]; then
		echo "  no console log ($log)"
		[ -n "$out" ] && echo "$out" | head -20
		continue
	fi
	[ -n "$out" ] && echo "$out" | grep -E '^vm: .*qemu exit'
	grep -m1 -o 'VMBOOT.*' "$log"
	grep '^VMTEST' "$log"
	echo "-- placement per CPU (pct = share of the pages on the CPU's memory node)"
	table "$log" placement
	echo "-- migration"
	table "$log" migration
	echo "-- policies"
	table "$log" policy
	echo "-- physical contiguity (/proc/self/pagemap), interleave over the first memory nodes"
	table "$log" contig
	echo "-- strict binding"
	table "$log" strict
	echo "-- statistics (deltas over the workload)"
	table "$log" stats
	echo
	summary+="$t $(sed -n 's/^VMTEST \([a-z_0-9]*\) \([A-Z]*\).*/\1=\2/p' "$log" | tr '\n' ' ')"$'\n'
done
echo "==================== summary ===================="
echo -n "$summary" | awk '{ printf "  %-8s", $1; for (i = 2; i <= NF; i++) printf " %s", $i; print "" }'
exit $rc
