// SPDX-License-Identifier: MIT
// The C++ tests' check: counts, and names each failed condition.
#pragma once
#include <cstdio>

static int passed, failed;
#define CHECK(c)                                                                   \
	do {                                                                       \
		if (c) {                                                           \
			passed++;                                                  \
		} else {                                                           \
			failed++;                                                  \
			std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
		}                                                                  \
	} while (0)
