// SPDX-License-Identifier: MIT
/* Size classes (issue 11, bench wl_footprint; docs/malloc.md "Size
 * classes"): from 256 to 1024 bytes a request loses at most 1/8 of itself
 * to its class (8 classes per doubling there; with 4, 257 bytes took 320). */
#include <malloc.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

static void rounding(void)
{
	for (size_t n = 257; n <= 1024; n++) {
		void *p = malloc(n);
		size_t u = malloc_usable_size(p);
		CHECK(u >= n && u - n <= n / 8, "malloc(%zu): %zu usable", n, u);
		CHECK(u % 16 == 0, "malloc(%zu): class %zu a multiple of 16", n, u);
		free(p);
	}
}

int main(void)
{
	free(malloc(1)); /* the init */
	rounding();
	return CHECK_DONE();
}
