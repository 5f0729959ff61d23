// SPDX-License-Identifier: MIT
// VM test: nodalloc.hpp's resources and allocators on a real multi-node
// kernel. For every node with memory, a std::pmr::vector on
// nd::memory_resource::on_node(n) and an unordered_map with
// nd::allocator on node n must have every touched page on n, as the
// kernel reports it (move_pages); an interleaved resource over all memory
// nodes gives each node its share within one granule.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

#include "nodalloc.hpp"

static int failed, passed;
#define CHECK(c, ...)                                                       \
	do {                                                                \
		if (c) {                                                    \
			passed++;                                           \
		} else {                                                    \
			failed++;                                           \
			std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
			std::printf(__VA_ARGS__);                           \
			std::printf("\n");                                  \
		}                                                           \
	} while (0)

static const unsigned long PAGE = 4096;

// Kernel's node of each page in [p, p + len) (touched), counted per node.
static std::vector<long> where(const void *p, size_t len)
{
	std::vector<long> count(1024, 0);
	uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~(PAGE - 1), end = reinterpret_cast<uintptr_t>(p) + len;
	std::vector<void *> pages;
	for (; a < end; a += PAGE)
		pages.push_back(reinterpret_cast<void *>(a));
	std::vector<int> status(pages.size(), -1);
	long rc = syscall(SYS_move_pages, 0, pages.size(), pages.data(), nullptr, status.data(), 0);
	if (rc != 0) {
		std::printf("FAIL move_pages: rc %ld\n", rc);
		failed++;
		return count;
	}
	for (int s : status)
		if (s >= 0 && s < 1024)
			count[s]++;
		else
			count[1023]++; // an error status: counted apart, never as a node
	return count;
}

static std::vector<int> memory_nodes()
{
	std::vector<int> v;
	for (int n = 0; n < nd_node_limit(); n++)
		if (nd_node_has_memory(n))
			v.push_back(n);
	return v;
}

int main()
{
	std::vector<int> nodes = memory_nodes();
	CHECK(!nodes.empty(), "no memory node");
	for (int n : nodes) {
		nd::memory_resource on = nd::memory_resource::on_node(n);
		std::pmr::vector<char> v(&on);
		v.assign(2 << 20, 'x');
		std::vector<long> c = where(v.data(), v.size());
		long total = (long)((v.size() + PAGE - 1) / PAGE);
		std::printf("VMTAB cxx pmr_vector node=%d pages=%ld on_node=%ld\n", n, total, c[n]);
		CHECK(c[n] >= total, "pmr vector on node %d: %ld of %ld pages there", n, c[n], total);

		using A = nd::allocator<std::pair<const int, std::string>>;
		std::unordered_map<int, std::string, std::hash<int>, std::equal_to<int>, A> m(
			64, std::hash<int>(), std::equal_to<int>(), A(nd::placement::on_node(n)));
		for (int i = 0; i < 3000; i++)
			m.emplace(i, std::string(48, 'v'));
		long off = 0, all = 0;
		for (auto &kv : m) {
			std::vector<long> k = where(&kv, sizeof kv);
			all++;
			off += k[n] ? 0 : 1;
		}
		std::printf("VMTAB cxx unordered_map node=%d entries=%ld off_node=%ld\n", n, all, off);
		CHECK(off == 0, "unordered_map on node %d: %ld of %ld entries elsewhere", n, off, all);
	}
	if (nodes.size() > 1) {
		nd_nodemask_t m;
		nd_nodemask_zero(&m);
		for (int n : nodes)
			nd_nodemask_set(&m, n);
		const size_t gran = 64 << 10, len = nodes.size() * (size_t(2) << 20);
		nd::memory_resource il = nd::memory_resource::interleaved(m, gran);
		std::pmr::vector<char> v(&il);
		v.assign(len, 'i');
		std::vector<long> c = where(v.data(), v.size());
		// nodalloc's own record of each page: tells a fallback it chose
		// (a node refused by its headroom) from a kernel misplacement
		std::vector<long> rec(1024, 0);
		for (size_t off = 0; off < v.size(); off += PAGE) {
			int r = nd_node_of(v.data() + off);
			rec[r >= 0 && r < 1024 ? r : 1023]++;
		}
		long share = (long)(len / PAGE / nodes.size()), slack = (long)(gran / PAGE);
		for (int n : nodes) {
			std::printf("VMTAB cxx interleave node=%d pages=%ld recorded=%ld share=%ld\n", n, c[n], rec[n], share);
			CHECK(c[n] >= share - slack && c[n] <= share + slack, "interleave: node %d has %ld pages, share %ld", n,
			      c[n], share);
		}
	}
	std::printf("vm_cxx: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
