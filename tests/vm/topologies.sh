# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The NUMA topologies of the VM test bed: the one place that defines them.
# Sourced by run.sh. topo_define NAME sets:
#   SMP    number of vCPUs
#   NODES  one "id mem_MiB cpus" entry per node; mem 0 = memoryless, cpus
#          "-" = CPU-less, else a QEMU cpu range ("0", "2-3")
#   DIST   one row per node: distances from that node to nodes 0..n-1
#          (rows may differ from columns: asymmetric distances)
# From these, topo_qemu_args prints the QEMU -smp/-m/-numa options and
# topo_expected_file the file the in-VM tests compare nodalloc's view with.
# Keep the nearest memory node of every node unique (no distance ties), so
# "the CPU's memory node" has one right answer independent of tie-breaks,
# and make different distances from one node differ by 3 or more: the
# kernel's fallback order (find_next_best_node) adds up to 2 of penalties
# (a lower node id, a node with CPUs), which then only break exact ties,
# and "nearest first" stays exact.
# Node ids: Linux numbers nodes in the order their proximity domains appear
# in QEMU's ACPI SRAT, CPUs first (by CPU index), then memory. So the nodes
# with CPUs must be 0..k-1, CPU ids rising with the node id, and CPU-less
# nodes come after; otherwise the guest's node ids differ from QEMU's
# (topo_define refuses such a layout, vm_topology's "bed:" checks catch it).
# Memory: at most ~2 GiB per VM (the host has 2 cores, other jobs run too),
# sixteen 4.5 GiB (see there); QEMU commits guest memory only as it is used.

VM_TOPOLOGIES="two memless tiered sixteen"

topo_define() {
	NODES=() DIST=()
	case "$1" in
	two) # (a) two nodes, the plain case; node 1 holds 60% of the
		# machine's memory / 2 (vm_spread's one interleaved allocation)
		SMP=2
		NODES=("0 576 0" "1 448 1")
		DIST=("10 20" "20 10")
		;;
	memless) # (b) node 2 has CPUs and no memory; asymmetric distances;
		# its nearest memory node is 1 (18 < 25), not node 0
		SMP=4
		NODES=("0 768 0" "1 256 1" "2 0 2-3")
		DIST=("10 21 30" "23 10 20" "25 18 10")
		;;
	tiered) # (c) nodes 2 and 3 are CPU-less memory (a CXL-like tier), each
		# nearer to one socket than the other socket's DRAM is, so node
		# order from 0 is 0,2,1,3 while tier order is 0,1,2,3
		SMP=2
		NODES=("0 512 0" "1 512 1" "2 256 -" "3 256 -")
		DIST=("10 21 14 24" "21 10 24 14" "14 24 10 28" "24 14 28 10")
		;;
	sixteen) # (d) sixteen small nodes on a ring, 288 MiB each (node 0
		# and the node the kernel image lands on, KASLR, keep 70-90 MiB;
		# vm_spread's 60% interleave needs 173 MiB on each); the four
		# with a CPU (0-3: the numbering rule) spread around it: node n
		# sits at ring position 4n for n < 4, the others fill the free
		# positions in order; distance 10 + 3 x hops
		SMP=4
		local i j d row pos=() p=0
		for ((i = 0; i < 4; i++)); do pos[i]=$((4 * i)); done
		for ((i = 4; i < 16; i++)); do
			while ((p % 4 == 0)); do p=$((p + 1)); done
			pos[i]=$p
			p=$((p + 1))
		done
		for ((i = 0; i < 16; i++)); do
			if ((i < 4)); then NODES+=("$i 288 $i"); else NODES+=("$i 288 -"); fi
			row=""
			for ((j = 0; j < 16; j++)); do
				d=$(((pos[i] - pos[j] + 16) % 16)); ((d > 8)) && d=$((16 - d))
				if ((d == 0)); then row+="10 "; else row+="$((10 + 3 * d)) "; fi
			done
			DIST+=("${row% }")
		done
		;;
	*)
		echo "vm: unknown topology '$1' (known: $VM_TOPOLOGIES)" >&2
		return 1
		;;
	esac
	# the numbering rule above
	local e id mem cpus lo hi next_cpu=0 cpuless=0
	for e in "${NODES[@]}"; do
		read -r id mem cpus <<<"$e"
		if [ "$cpus" = "-" ]; then
			cpuless=1
			continue
		fi
		lo=${cpus%-*} hi=${cpus#*-}
		if ((cpuless || lo != next_cpu)); then
			echo "vm: topology $1: node $id's CPUs ($cpus) break the numbering rule (topologies.sh)" >&2
			return 1
		fi
		next_cpu=$((hi + 1))
	done
}

# QEMU options for the topology defined last, one per line.
topo_qemu_args() {
	local total=0 e id mem cpus i j row
	for e in "${NODES[@]}"; do
		read -r id mem cpus <<<"$e"
		total=$((total + mem))
	done
	printf '%s\n' -smp "$SMP" -m "${total}M"
	for e in "${NODES[@]}"; do
		read -r id mem cpus <<<"$e"
		local opt="node,nodeid=$id"
		[ "$cpus" != "-" ] && opt+=",cpus=$cpus"
		if [ "$mem" -gt 0 ]; then
			printf '%s\n' -object "memory-backend-ram,id=m$id,size=${mem}M"
			opt+=",memdev=m$id"
		fi
		printf '%s\n' -numa "$opt"
	done
	for ((i = 0; i < ${#NODES[@]}; i++)); do
		read -ra row <<<"${DIST[$i]}"
		for ((j = 0; j < ${#row[@]}; j++)); do
			((i == j)) && continue
			printf '%s\n' -numa "dist,src=$i,dst=$j,val=${row[$j]}"
		done
	done
}

# The expected-topology file read by the in-VM tests (vm_common.h):
#   name NAME / smp N / node ID MEM_MIB CPUS / dist ID D0 D1 ...
topo_expected_file() {
	local e i
	echo "name $1"
	echo "smp $SMP"
	for e in "${NODES[@]}"; do echo "node $e"; done
	for ((i = 0; i < ${#NODES[@]}; i++)); do echo "dist $i ${DIST[$i]}"; done
}
