// SPDX-License-Identifier: MIT
/*
 * Workload 7: many short-lived threads and objects.
 *
 *   wl_threads [threads [rounds [steps-per-thread [slots]]]]
 *
 * `rounds` (default 50) rounds; each starts `threads` (default 4) fresh
 * threads and waits for them, so rounds x threads threads live briefly.
 * Each thread keeps `slots` (default 500) objects: 90% of 16..256 bytes,
 * 9% up to 2 KiB, 1% up to 32 KiB. Each of its `steps` (default 20000)
 * steps frees a random slot and allocates a new object there, writing
 * its first and last bytes. When it ends, the thread swaps a quarter of its
 * objects into a shared array (atomic exchange) and frees what it got back,
 * objects that a thread of an earlier round (now gone) allocated, and frees
 * the rest of its own. Allocators meet thread start-up and exit (caches
 * made and given back), objects outliving their thread and frees of them by
 * a later thread. One step, or one object freed at the end, = one
 * malloc/free pair.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "wl_common.h"

static long nsteps, nslots, nshared;
static _Atomic(unsigned char *) *shared;
static atomic_long bad;

struct worker {
	pthread_t th;
	uint64_t seed;
};

static size_t pick(uint64_t *rng)
{
	return wl_tier_size(rng, 90, 9, 32768);
}

static unsigned char *make(size_t sz)
{
	unsigned char *p = malloc(sz);
	if (!p)
		wl_oom("wl_threads", sz);
	uint32_t s32 = (uint32_t)sz;
	memcpy(p + 4, &s32, sizeof s32); /* every object has >= 16 bytes */
	p[0] = (unsigned char)sz;
	p[sz - 1] = (unsigned char)(sz >> 3);
	return p;
}

/* the size at offset 4, the stamps at both ends */
static long broken(const unsigned char *p)
{
	uint32_t sz;
	memcpy(&sz, p + 4, sizeof sz);
	return sz < 16 || sz > 32768 || p[0] != (unsigned char)sz || p[sz - 1] != (unsigned char)(sz >> 3);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = w->seed;
	unsigned char **mine = malloc((size_t)nslots * sizeof *mine);
	if (!mine)
		wl_oom("wl_threads", (size_t)nslots * sizeof *mine);
	long local_bad = 0;
	for (long i = 0; i < nslots; i++)
		mine[i] = make(pick(&rng));
	for (long s = 0; s < nsteps; s++) {
		size_t k = (size_t)(wl_rand(&rng) % (uint64_t)nslots);
		local_bad += broken(mine[k]);
		free(mine[k]);
		mine[k] = make(pick(&rng));
	}
	for (long i = 0; i < nslots; i++) {
		unsigned char *p = mine[i];
		if (i % 4 == 0) {
			size_t k = (size_t)(wl_rand(&rng) % (uint64_t)nshared);
			p = atomic_exchange_explicit(&shared[k], p, memory_order_acq_rel);
		}
		if (p) {
			local_bad += broken(p);
			free(p);
		}
	}
	free(mine);
	atomic_fetch_add(&bad, local_bad);
	return NULL;
}

int main(int argc, char **argv)
{
	long nt = wl_arg(argc, argv, 1, 4, "thread count");
	long rounds = wl_arg(argc, argv, 2, 50, "round count");
	nsteps = wl_arg(argc, argv, 3, 20000, "steps per thread");
	nslots = wl_arg(argc, argv, 4, 500, "slot count");
	nshared = nslots * nt;
	shared = calloc((size_t)nshared, sizeof *shared);
	struct worker *ws = calloc((size_t)nt, sizeof *ws);
	if (!shared || !ws)
		wl_oom(argv[0], (size_t)nshared * sizeof *shared);
	double t0 = wl_now();
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < nt; i++) {
			ws[i].seed = wl_seed(r, nt, i);
			wl_spawn(&ws[i].th, work, &ws[i], argv[0]);
		}
		for (long i = 0; i < nt; i++)
			pthread_join(ws[i].th, NULL);
	}
	double t = wl_now() - t0;
	for (long k = 0; k < nshared; k++) {
		unsigned char *p = atomic_load(&shared[k]);
		if (p) {
			bad += broken(p);
			free(p);
		}
	}
	free(shared);
	free(ws);
	if (bad) {
		fprintf(stderr, "%s: %ld objects arrived corrupted\n", argv[0], (long)bad);
		return 1;
	}
	wl_result("threads", (int)nt, rounds * nt * (nsteps + nslots), t, "");
	return 0;
}
