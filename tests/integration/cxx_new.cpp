// SPDX-License-Identifier: MIT
// C++ new/delete arrive in nodalloc (linked, not preloaded: its operators
// new and delete, src/malloc.c): every kind of allocation the library can
// see is its own.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "nodalloc.h"

static int failures;
static void *volatile sink;
#define EXPECT(c)                                                            \
	do {                                                                 \
		if (!(c)) {                                                  \
			std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
			failures++;                                          \
		}                                                            \
	} while (0)

struct alignas(256) Wide {
	char b[300];
};

int main()
{
	int *i = new int(7);
	EXPECT(nd_node_of(i) >= 0);
	delete i;
	std::vector<std::string> v;
	for (int k = 0; k < 20000; k++)
		v.push_back(std::string(k % 300, 'a' + k % 26));
	EXPECT(nd_node_of(v.data()) >= 0);
	EXPECT(nd_node_of(v[5000].data()) >= 0);
	size_t total = 0;
	for (auto &s : v)
		total += s.size();
	EXPECT(total == 2980000); // 66 * (0+..+299) + (0+..+199)
	std::map<int, std::unique_ptr<double[]>> m;
	for (int k = 0; k < 5000; k++)
		m[k] = std::unique_ptr<double[]>(new double[k % 50 + 1]);
	EXPECT(nd_node_of(m[4999].get()) >= 0);
	m.clear();
	Wide *w = new Wide[3]; // aligned new (C++17): aligned_alloc underneath
	EXPECT(reinterpret_cast<uintptr_t>(w) % 256 == 0);
	EXPECT(nd_node_of(w) >= 0);
	delete[] w;
	bool caught = false;
	try {
		throw std::runtime_error(std::string(500, 'x')); // the exception object is malloc'd
	} catch (const std::exception &e) {
		caught = std::string(e.what()).size() == 500;
	}
	EXPECT(caught);
	try {
		// the data escapes: clang may drop an allocation nobody sees
		std::vector<char> huge(static_cast<size_t>(1) << 62);
		sink = huge.data();
		EXPECT(false);
	} catch (const std::bad_alloc &) {
	} catch (const std::length_error &) {
	}
	std::printf("cxx_new: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
