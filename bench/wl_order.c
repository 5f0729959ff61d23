// SPDX-License-Identifier: MIT
/*
 * Workload: small-object churn freed in another order than allocated.
 *
 *   wl_order [rounds [threads [blocks [spawn]]]]
 *
 * With `spawn` as the fourth argument one thread runs in a thread of its
 * own (pthread_create) too, not in main(): an allocator may treat the main
 * thread apart (nodalloc's page level does: its bursts raise no cap).
 * Each thread (default 1) owns `blocks` (default 10,000) pointers. A round
 * allocates all of them, frees them in allocation order, allocates them all
 * again and frees them in a 7-stride order (index k * 7 mod blocks, every
 * block once since 7 does not divide 10,000). Sizes are uniform in
 * [lo, 1000] B (xorshift, a fixed seed per thread), where lo moves by
 * lo * 3 / 2 + 1 each round (1, 2, 4, 7, ..., 709) and starts again at 1:
 * each round shifts the mix of size classes. Default 150 rounds (10 such
 * cycles). One byte is written per block. ops counts malloc/free pairs:
 * rounds * 2 * blocks per thread.
 *
 * Models a shell or interpreter that builds many short strings and lists,
 * then drops them all at once, in creation order or scattered, while what
 * it builds changes: the whole working set goes from full to empty twice a
 * round, and the classes a round leaves empty are not the ones the next
 * round fills. An allocator that gives an emptied slab's pages back and
 * takes fresh ones for another class pays slab set-up and page faults each
 * round. wl_small, by contrast, frees at random one slot at a time, never
 * empties a class and keeps its size mix.
 */
#include <stdbool.h>

#include "wl_common.h"

#define STRIDE 7
#define MAX 1000 /* largest block, bytes */

struct arg {
	long rounds, blocks;
	uint64_t seed;
	unsigned sum;
};

static void fill(char **p, long n, size_t lo, uint64_t *rng)
{
	for (long i = 0; i < n; i++) {
		size_t sz = wl_range(rng, lo, MAX);
		p[i] = malloc(sz);
		if (!p[i])
			wl_oom("wl_order", sz);
		p[i][0] = (char)sz;
	}
}

static void *run(void *v)
{
	struct arg *a = v;
	long n = a->blocks;
	char **p = malloc((size_t)n * sizeof *p);
	if (!p)
		wl_oom("wl_order", (size_t)n * sizeof *p);
	uint64_t rng = a->seed;
	unsigned sum = 0;
	size_t lo = 1;
	for (long r = 0; r < a->rounds; r++, lo = lo * 3 / 2 + 1 > MAX ? 1 : lo * 3 / 2 + 1) {
		fill(p, n, lo, &rng);
		for (long i = 0; i < n; i++) {
			sum += (unsigned char)p[i][0];
			free(p[i]);
		}
		fill(p, n, lo, &rng);
		/* visits every block once: STRIDE is prime and main() refuses a
		 * multiple of it */
		for (long i = 0, k = 0; i < n; i++, k = (k + STRIDE) % n) {
			sum += (unsigned char)p[k][0];
			free(p[k]);
		}
	}
	free(p);
	a->sum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = wl_arg(argc, argv, 1, 150, "round count");
	long nt = wl_arg(argc, argv, 2, 1, "thread count");
	long blocks = wl_arg(argc, argv, 3, 10000, "block count");
	if (blocks % STRIDE == 0) {
		fprintf(stderr, "%s: bad block count '%ld': a multiple of the stride %d would not free every block\n",
			argv[0], blocks, STRIDE);
		return 2;
	}
	bool spawn = argc > 4 && strcmp(argv[4], "spawn") == 0;
	if (argc > 4 && !spawn) {
		fprintf(stderr, "%s: bad fourth argument '%s': expected spawn\n", argv[0], argv[4]);
		return 2;
	}
	if (nt > 64) {
		fprintf(stderr, "%s: bad thread count '%ld': at most 64\n", argv[0], nt);
		return 2;
	}
	struct arg args[64];
	pthread_t th[64];
	for (long i = 0; i < nt; i++)
		args[i] = (struct arg){.rounds = rounds, .blocks = blocks, .seed = wl_seed(0, nt, i)};

	double t0 = wl_now();
	if (nt == 1 && !spawn) {
		run(&args[0]);
	} else {
		for (long i = 0; i < nt; i++)
			wl_spawn(&th[i], run, &args[i], argv[0]);
		for (long i = 0; i < nt; i++)
			pthread_join(th[i], NULL);
	}
	double t = wl_now() - t0;

	unsigned sum = 0;
	for (long i = 0; i < nt; i++)
		sum += args[i].sum;
	char extra[64];
	snprintf(extra, sizeof extra, "check=%u", sum);
	wl_result("order", (int)nt, rounds * 2 * blocks * nt, t, extra);
	return 0;
}
