#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Draws the benchmark charts from the text results run.sh wrote:
#   bash bench/charts.sh <results-dir> [real|bootstrap]
# ratios_time.txt, ratios_cpu.txt, ratios_rss.txt -> time.png, cpu.png, rss.png (nodalloc / peer per
# workload, clustered bars); mops.txt -> throughput.png (every allocator,
# million pairs per second); instructions.txt -> instructions.png (nodalloc
# / peer instructions per malloc/free pair). Needs gnuplot (gnuplot-nox).
set -u
DIR=${1:?usage: bash bench/charts.sh <results-dir> [real|bootstrap]}
STATE=${2:-real}
NOTE=""
[ "$STATE" = bootstrap ] && NOTE="\n(PLACEHOLDER: libnodalloc.so was still the glibc-forwarding bootstrap)"
command -v gnuplot >/dev/null || { echo "charts.sh: gnuplot is not installed" >&2; exit 1; }
cd "$DIR" || exit 1
rm -f time.png cpu.png rss.png throughput.png instructions.png # never leave stale charts
# a series with no value at all (an allocator that failed) only draws a
# warning; keep real errors
gnuplot() { command gnuplot "$@" 2> >(grep -v -e 'Skipping data file with no valid points' -e '^ *$' >&2); }

common='
set terminal pngcairo size 900,520 font "sans,10"
set datafile missing "-"
set style fill solid 0.85 border -1
set grid ytics
set yrange [0:*]
set key outside right top
'

# clustered bars of a table (first line: column names): file, png, title,
# y label, ratio (1: dashed line at 1)
clustered() {
	local f=$1 png=$2 title=$3 ylabel=$4 isratio=$5
	[ -s "$f" ] || return 0
	local ncol
	ncol=$(head -n1 "$f" | wc -w)
	[ "$ncol" -ge 2 ] || return 0
	# nothing to draw when every value is missing (e.g. nodalloc failed)
	awk 'NR > 1 {for (i = 2; i <= NF; i++) if ($i != "-") ok = 1} END {exit !ok}' "$f" || return 0
	local ymax fmt=%.1f
	[ "$isratio" = 1 ] && fmt=%.2f
	ymax=$(awk 'NR > 1 {for (i = 2; i <= NF; i++) if ($i != "-" && $i + 0 > m) m = $i + 0} END {print (m < 1 ? 1 : m) * 1.15}' "$f")
	# many bars per cluster: a wider picture and smaller labels
	local size="900,520" lfont=",8"
	[ "$ncol" -gt 5 ] && { size="1100,540"; lfont=",7"; }
	gnuplot <<EOF || return 1
$common
set terminal pngcairo size $size font "sans,10"
set yrange [0:$ymax]
set output "$png"
set title "$title$NOTE"
set ylabel "$ylabel"
set style data histograms
set style histogram clustered gap 1
set boxwidth 0.9
$([ "$isratio" = 1 ] && echo 'set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 dt 2 lc rgb "#cc0000" front')
nb = $ncol - 1
plot for [i=2:$ncol] "$f" using i:xtic(1) title columnheader(i), \
     for [i=2:$ncol] "$f" using (\$0 + (i - 2 - (nb - 1) / 2.0) / (nb + 1.0)):(column(i)):(sprintf("$fmt", column(i))) \
         every ::1 with labels offset 0,0.6 font "$lfont" notitle
EOF
}

R="nodalloc / peer  (below 1 = nodalloc better)"
clustered ratios_time.txt time.png "Wall time of the measured loop, nodalloc / peer (median)" "$R" 1
clustered ratios_cpu.txt cpu.png "CPU time (user + system), nodalloc / peer (median)" "$R" 1
clustered ratios_rss.txt rss.png "Peak RSS, nodalloc / peer (median)" "$R" 1
clustered mops.txt throughput.png "Throughput (median)" "million malloc/free pairs per second (higher is better)" 0

if [ -s instructions.txt ] && grep -q '^nodalloc ' instructions.txt; then
	nd=$(awk '$1 == "nodalloc" {print $2}' instructions.txt)
	awk -v nd="$nd" 'NR > 1 && $1 !~ /^nodalloc/ && $2 != "-" && $2 + 0 > 0 && nd != "-" {printf "%s %.3f %s %s\n", $1, nd / $2, nd, $2}' \
		instructions.txt >instr_ratio.tmp
	if [ -s instr_ratio.tmp ]; then
		ymax=$(awk '{if ($2 + 0 > m) m = $2 + 0} END {print (m < 1 ? 1 : m) * 1.2}' instr_ratio.tmp)
		gnuplot <<EOF || { rm -f instr_ratio.tmp; exit 1; }
$common
set yrange [0:$ymax]
set output "instructions.png"
set title "Instructions per malloc/free pair (callgrind), nodalloc / peer$NOTE"
set ylabel "nodalloc / peer  (below 1 = fewer instructions)"
set xrange [-0.6:*]
set boxwidth 0.6
unset key
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 dt 2 lc rgb "#cc0000" front
plot "instr_ratio.tmp" using 0:2:xtic(1) with boxes lc rgb "#4477aa", \
     "" using 0:2:(sprintf("%.2f\n(%s vs %s)", \$2, strcol(3), strcol(4))) with labels offset 0,1.5 font ",9"
EOF
	fi
	rm -f instr_ratio.tmp
fi
exit 0
