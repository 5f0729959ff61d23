// SPDX-License-Identifier: MIT
// nodalloc.hpp: pmr resources, STL allocators and RAII helpers place what
// they allocate. Run under the emulated topology set by part.cmake
// (NODALLOC_TOPOLOGY: node 0 = CPUs 0-1, node 1 = CPUs 2-3, node 2 = a
// memory-only tier), so nd_node_of tells nodalloc's placement exactly.
#include <cstdio>
#include <list>
#include <map>
#include <memory_resource>
#include <string>
#include <unordered_map>
#include <vector>

#include "nodalloc.hpp"
#include "cxx_check.hpp"

struct alignas(256) Wide {
	char b[300];
	explicit Wide(char c = 'w') { b[0] = c; }
};

template <class It>
static bool all_on(It first, It last, int node)
{
	for (; first != last; ++first)
		if (nd_node_of(&*first) != node)
			return false;
	return true;
}

static void pmr_on_node()
{
	nd::memory_resource on1 = nd::memory_resource::on_node(1);
	std::pmr::vector<int> v(&on1);
	for (int i = 0; i < 100000; i++) // grows through slab and large sizes
		v.push_back(i);
	CHECK(nd_node_of(v.data()) == 1);
	CHECK(v[99999] == 99999);
	std::pmr::list<std::pmr::string> l(&on1);
	for (int i = 0; i < 500; i++)
		l.emplace_back(std::string(40 + i % 100, 'x')); // strings' buffers too
	bool ok = true;
	for (auto &s : l)
		ok = ok && nd_node_of(&s) == 1 && nd_node_of(s.data()) == 1;
	CHECK(ok);
	std::pmr::vector<Wide> w(&on1);
	w.resize(40);
	CHECK(reinterpret_cast<std::uintptr_t>(w.data()) % 256 == 0);
	CHECK(nd_node_of(w.data()) == 1);
	// the same placement compares equal, another one does not
	nd::memory_resource also1 = nd::memory_resource::on_node(1), on0 = nd::memory_resource::on_node(0);
	CHECK(on1.is_equal(also1));
	CHECK(!on1.is_equal(on0));
	CHECK(!on1.is_equal(*std::pmr::new_delete_resource()));
}

static void stl_allocator()
{
	using A = nd::allocator<long>;
	for (int node = 0; node <= 2; node++) { // 2: a CPU-less memory node
		std::vector<long, A> v{A(nd::placement::on_node(node))};
		v.assign(5000, 7);
		CHECK(nd_node_of(v.data()) == node);
		std::unordered_map<int, std::string, std::hash<int>, std::equal_to<int>,
				   nd::allocator<std::pair<const int, std::string>>>
			m(16, std::hash<int>(), std::equal_to<int>(),
			  nd::allocator<std::pair<const int, std::string>>(nd::placement::on_node(node)));
		for (int i = 0; i < 2000; i++)
			m.emplace(i, "v");
		bool ok = m.size() == 2000;
		for (auto &kv : m)
			ok = ok && nd_node_of(&kv) == node;
		CHECK(ok);
		std::map<int, int, std::less<int>, nd::allocator<std::pair<const int, int>>> t(
			nd::allocator<std::pair<const int, int>>(nd::placement::on_node(node)));
		for (int i = 0; i < 1000; i++)
			t[i] = i;
		CHECK(all_on(t.begin(), t.end(), node));
	}
	// over-aligned elements keep their alignment and their node
	std::vector<Wide, nd::allocator<Wide>> w{nd::allocator<Wide>(nd::placement::on_node(1))};
	w.emplace_back('a');
	w.emplace_back('b');
	CHECK(reinterpret_cast<std::uintptr_t>(w.data()) % 256 == 0 && nd_node_of(w.data()) == 1);
	CHECK(w[1].b[0] == 'b');
	// allocators rebind and compare by placement
	nd::allocator<int> a1(nd::placement::on_node(1));
	nd::allocator<char> c1(a1);
	CHECK(a1 == c1);
	CHECK(!(a1 == nd::allocator<int>(nd::placement::on_node(0))));
}

static void local_follows_cpu()
{
	nd_emulate_cpu(2); // node 1's CPU
	std::vector<int, nd::allocator<int>> v{nd::allocator<int>(nd::placement::local())};
	v.resize(1000);
	CHECK(nd_node_of(v.data()) == 1);
	nd_emulate_cpu(0);
	std::vector<int, nd::allocator<int>> u{nd::allocator<int>(nd::placement::local())};
	u.resize(1000);
	CHECK(nd_node_of(u.data()) == 0);
}

static void interleaved()
{
	nd_nodemask_t m;
	char err[100];
	CHECK(nd_nodemask_parse("0-1", &m, err, sizeof err) == 0);
	nd::memory_resource il = nd::memory_resource::interleaved(m, 64 << 10);
	std::pmr::vector<char> v(&il);
	v.resize(8 << 20); // one run, 64 KiB granules alternating
	long pages[2] = { 0, 0 };
	for (size_t off = 0; off < v.size(); off += 4096) {
		int n = nd_node_of(v.data() + off);
		if (n == 0 || n == 1)
			pages[n]++;
	}
	CHECK(pages[0] + pages[1] == 2048);
	CHECK(pages[0] >= 1008 && pages[1] >= 1008); // within a granule (16 pages) of half
}

static void scoped()
{
	nd_emulate_cpu(0);
	{
		nd::scoped_policy p("bind:1");
		int *i = new int(3);
		std::string *s = new std::string(100, 'q');
		CHECK(nd_node_of(i) == 1 && nd_node_of(s) == 1 && nd_node_of(s->data()) == 1);
		delete s;
		delete i;
	}
	int *j = new int(4); // the policy is gone: local again (CPU 0 -> node 0)
	CHECK(nd_node_of(j) == 0);
	delete j;
	auto u = nd::make_unique_on_node<Wide>(2, 'z');
	CHECK(nd_node_of(u.get()) == 2 && u->b[0] == 'z' && reinterpret_cast<std::uintptr_t>(u.get()) % 256 == 0);
}

// Heaps: pmr containers (vector, unordered_map, over-aligned elements)
// on a node heap and a policy heap; the heap's destruction takes what the
// containers released (nothing of theirs is freed twice).
static void heaps()
{
	{
		nd::heap h(1);
		nd::heap_resource r(h);
		std::pmr::unordered_map<int, std::pmr::string> m(&r);
		for (int i = 0; i < 2000; i++)
			m.emplace(i, std::pmr::string(40, char('a' + i % 26), &r));
		bool ok = true;
		for (auto &kv : m)
			ok = ok && nd_node_of(&kv) == 1 && nd_node_of(kv.second.data()) == 1;
		CHECK(ok);
		std::pmr::vector<Wide> w(&r);
		w.emplace_back('x');
		CHECK(reinterpret_cast<std::uintptr_t>(w.data()) % 256 == 0 && nd_node_of(w.data()) == 1);
		CHECK(m.at(1999)[0] == char('a' + 1999 % 26));
	}
	nd_policy_t p;
	char err[200];
	CHECK(nd_policy_parse("bind:2", &p, err, sizeof err) == 0);
	nd::heap h2(p);
	nd::heap_resource r2(h2);
	auto *v = new std::pmr::vector<long>(100000, 7, &r2);
	CHECK(nd_node_of(v->data()) == 2 && (*v)[99999] == 7);
	delete v;
	nd::heap_resource r1(h2);
	CHECK(r1.is_equal(r2));
}

// An unordered_map with nd::allocator under each kind of placement, and
// the policy kind sharing nd_policy_prepare's copy between equal policies.
static void map_placements()
{
	using A = nd::allocator<std::pair<const int, long>>;
	nd_policy_t b1;
	char err[200];
	CHECK(nd_policy_parse("bind:1", &b1, err, sizeof err) == 0);
	nd::placement kinds[] = { nd::placement::on_node(2), nd::placement::with_policy(b1),
				  nd::placement::with_policy("preferred:1") };
	int want[] = { 2, 1, 1 };
	for (int k = 0; k < 3; k++) {
		std::unordered_map<int, long, std::hash<int>, std::equal_to<int>, A> m{ A(kinds[k]) };
		for (int i = 0; i < 5000; i++)
			m[i] = i;
		CHECK(all_on(m.begin(), m.end(), want[k]));
	}
	CHECK(nd::placement::with_policy(b1) == kinds[1]);
	CHECK(nd::placement::with_policy(b1).policy() == kinds[1].policy());
}

static void errors()
{
	bool threw = false;
	try {
		nd::memory_resource::on_node(7);
	} catch (const nd::placement_error &e) {
		threw = std::string(e.what()).find("node 7") != std::string::npos;
	}
	CHECK(threw);
	threw = false;
	try {
		nd::memory_resource::with_policy("bind:9");
	} catch (const nd::placement_error &) {
		threw = true;
	}
	CHECK(threw);
	threw = false;
	try {
		nd::scoped_policy p("interleave:0-1@3K");
	} catch (const nd::placement_error &) {
		threw = true;
	}
	CHECK(threw);
	// bind to a full node: bad_alloc, not a crash (node 2 has 64 MiB)
	nd::memory_resource b2 = nd::memory_resource::with_policy("bind:2");
	threw = false;
	try {
		std::pmr::vector<char> big(&b2);
		big.resize(size_t(256) << 20);
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECK(threw);
}

int main()
{
	pmr_on_node();
	stl_allocator();
	local_follows_cpu();
	interleaved();
	scoped();
	heaps();
	map_placements();
	errors();
	std::printf("test_cxx_placement: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
