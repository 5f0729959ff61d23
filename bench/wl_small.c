// SPDX-License-Identifier: MIT
/*
 * Workload 1: single-thread small-object malloc/free loop.
 *
 *   wl_small [iterations [slots [null]]]
 *
 * Fills `slots` (default 1024) pointers with objects of 16..256 bytes, then
 * each iteration frees a random slot and refills it with a new object of a
 * random size (xorshift with a fixed seed, so every run and every allocator
 * sees the same sequence). One iteration = one malloc/free pair. Each new
 * object gets one byte written so the allocator's memory is really used.
 *
 * The third argument "null" runs the same loop with a static buffer in
 * place of malloc/free: its instruction count is the loop's own overhead
 * (random numbers, slot bookkeeping), which the runner subtracts from the
 * callgrind figures to get the allocator's instructions per pair.
 */
#include "wl_common.h"

#define SEED 0x9E3779B97F4A7C15ULL

static char null_buf[256];

int main(int argc, char **argv)
{
	long iters = wl_arg(argc, argv, 1, 10000000, "iteration count");
	long nslots = wl_arg(argc, argv, 2, 1024, "slot count");
	int null_mode = argc > 3 && strcmp(argv[3], "null") == 0;
	if (argc > 3 && !null_mode) {
		fprintf(stderr, "%s: bad mode '%s': expected 'null' or nothing\n", argv[0], argv[3]);
		return 2;
	}
	char **slots = calloc((size_t)nslots, sizeof *slots);
	if (!slots)
		wl_oom(argv[0], (size_t)nslots * sizeof *slots);
	uint64_t rng = SEED;

	for (long i = 0; i < nslots; i++) {
		size_t sz = wl_range(&rng, 16, 256);
		char *p = null_mode ? null_buf : malloc(sz);
		if (!p)
			wl_oom(argv[0], sz);
		p[0] = (char)sz;
		slots[i] = p;
	}

	double t0 = wl_now();
	if (null_mode) {
		for (long i = 0; i < iters; i++) {
			uint64_t r = wl_rand(&rng);
			size_t k = (size_t)(r >> 32) % (size_t)nslots;
			size_t sz = 16 + (size_t)(r & 0xffff) % 241;
			/* same work as below minus malloc/free; the asm keeps the
			 * compiler from folding the loop away */
			char *p = null_buf;
			__asm__ volatile("" : "+r"(p) : "r"(slots[k]) : "memory");
			p[0] = (char)sz;
			slots[k] = p;
		}
	} else {
		for (long i = 0; i < iters; i++) {
			uint64_t r = wl_rand(&rng);
			size_t k = (size_t)(r >> 32) % (size_t)nslots;
			size_t sz = 16 + (size_t)(r & 0xffff) % 241;
			free(slots[k]);
			char *p = malloc(sz);
			if (!p)
				wl_oom(argv[0], sz);
			p[0] = (char)sz;
			slots[k] = p;
		}
	}
	double t = wl_now() - t0;

	/* checksum so the stores are observable */
	unsigned sum = 0;
	for (long i = 0; i < nslots; i++) {
		sum += (unsigned char)slots[i][0];
		if (!null_mode)
			free(slots[i]);
	}
	free(slots);
	char extra[64];
	snprintf(extra, sizeof extra, "check=%u", sum);
	wl_result(null_mode ? "small-null" : "small", 1, iters, t, extra);
	return 0;
}
