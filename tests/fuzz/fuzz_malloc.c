// SPDX-License-Identifier: MIT
/* Differential fuzzer of the malloc family and the nd_* placement calls
 * (tests/fuzz, docs in part.cmake): random operation sequences checked
 * against a model of what each live block must hold.
 *
 *   fuzz_malloc SEED OPS [THREADS]   (ND_FUZZ_OPS, ND_FUZZ_SEED: main)
 *
 * Ops: malloc, calloc (zeroed), realloc (grow/shrink/NULL/0, old bytes
 * kept), free, aligned_alloc, posix_memalign, memalign, malloc_usable_size,
 * nd_malloc_onnode, nd_malloc_interleaved, nd_calloc, holes (small blocks
 * mostly freed: spans, slab.c), zeroes (bands: a block of each size band,
 * 16 B .. 64 MiB, filled and freed, grown by realloc, then each band's
 * zeroing calls: calloc, nd_calloc_onnode, nd_calloc_policy, mallocx with
 * ND_MALLOCX_ZERO and an alignment, a zeroed nd_table; every byte checked;
 * with ND_FUZZ_FORK also in a forked child)... sizes 0..64 MiB
 * skewed small, alignments up to 1 MiB, and frees of blocks another
 * thread allocated (blocks pass between threads through a shared pool).
 * Every block carries a pattern derived from (id, offset); it is checked
 * in full for small blocks, sampled for big ones, at every touch. Prints
 * the case counts; exit 1 on any mismatch. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "nodalloc.h"

#define SLOTS 512
#define SHARED 64

typedef struct blk {
	unsigned char *p;
	size_t n;
	size_t align;
	uint32_t id;
} blk_t;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static blk_t pool[SHARED];
static long n_ops[16], failures, cross_frees, bytes_checked, enomem;
/* ND_FUZZ_ENOMEM=1 (a topology of small nodes): a request may fail, with
 * ENOMEM only (the failure paths: a large run's retry after the heaps'
 * trim, the span fallback); counted */
static int may_fail;
static const char *op_names[16] = { "malloc", "calloc", "realloc", "free", "aligned_alloc",
	"posix_memalign", "memalign", "usable_size", "nd_malloc_onnode", "nd_malloc_interleaved",
	"nd_calloc", "handoff", "valloc", "reallocarray", "holes", "zeroes" };
static long ops_per_thread;
static uint64_t seed;
static int nodes;

static inline unsigned char pat(uint32_t id, size_t i)
{
	return (unsigned char)(id * 131u + (uint32_t)(i >> 3) * 7u + (uint32_t)i);
}

/* A NULL that ND_FUZZ_ENOMEM allows (errno read right after the call). */
static int out_of_memory(int err)
{
	if (!may_fail || err != ENOMEM)
		return 0;
	__atomic_add_fetch(&enomem, 1, __ATOMIC_RELAXED);
	return 1;
}

static void fail(const char *what, const blk_t *b, size_t at)
{
	if (__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED) > 20)
		return; /* counted, not printed */
	fprintf(stderr, "FAIL seed %llu: %s: block %u %p size %zu align %zu at %zu\n",
		(unsigned long long)seed, what, b->id, (void *)b->p, b->n, b->align, at);
}

static void fill(blk_t *b, size_t from)
{
	for (size_t i = from; i < b->n; i++)
		b->p[i] = pat(b->id, i);
}

/* full check up to 64 KiB, then every 4093rd byte and the last page */
static void verify(const blk_t *b, size_t upto)
{
	size_t n = upto < b->n ? upto : b->n;
	size_t step = n <= 65536 ? 1 : 4093;
	for (size_t i = 0; i < n; i += step)
		if (b->p[i] != pat(b->id, i)) {
			fail("content changed", b, i);
			return;
		}
	for (size_t i = n > 4096 ? n - 4096 : 0; i < n; i++)
		if (b->p[i] != pat(b->id, i)) {
			fail("content changed (tail)", b, i);
			return;
		}
	__atomic_add_fetch(&bytes_checked, (long)n, __ATOMIC_RELAXED);
	if (b->align && (uintptr_t)b->p % b->align)
		fail("misaligned", b, 0);
	if (b->p && malloc_usable_size(b->p) < b->n)
		fail("usable size below the request", b, malloc_usable_size(b->p));
}

static size_t pick_size(uint64_t r)
{
	switch (r % 100) {
	case 0: return (size_t)(r >> 8) % ((size_t)64 << 20) + 1; /* up to 64 MiB */
	case 1 ... 4: return (size_t)(r >> 8) % (2 << 20);        /* page runs */
	case 5 ... 19: return (size_t)(r >> 8) % 65536;
	case 20: return 0;
	default: return (size_t)(r >> 8) % 1024;
	}
}

/* holes: HOLES blocks of 80..160 B, 3 in 4 freed at random, the rest kept
 * until the next holes op: slabs of small classes with free slots among
 * live ones, which requests of up to 1 KiB may span (slab.c): a burst of
 * them follows */
#define HOLES 2048
static void holes(blk_t *h, uint64_t *s, uint32_t *next_id)
{
	for (int i = 0; i < HOLES; i++)
		if (h[i].p) {
			verify(&h[i], SIZE_MAX);
			free(h[i].p);
			h[i].p = NULL;
		}
	for (int i = 0; i < HOLES; i++) {
		static const size_t hs[4] = { 80, 96, 128, 160 };
		blk_t nb = { malloc(hs[rnd(s) % 4]), 0, 0, ++*next_id };
		if (!nb.p) {
			if (!out_of_memory(errno))
				fail("holes: malloc", &nb, 0);
			continue;
		}
		nb.n = malloc_usable_size(nb.p);
		fill(&nb, 0);
		h[i] = nb;
	}
	for (int i = 0; i < HOLES; i++)
		if (rnd(s) % 4 && h[i].p) { /* NULL: its malloc failed */
			verify(&h[i], SIZE_MAX);
			free(h[i].p);
			h[i].p = NULL;
		}
	/* then a burst of 81..1024 B requests, so that their classes run dry */
	for (int i = 0; i < HOLES; i++)
		if (!h[i].p && rnd(s) % 2) {
			blk_t nb = { NULL, rnd(s) % 944 + 81, 0, ++*next_id };
			if (!(nb.p = malloc(nb.n))) {
				if (!out_of_memory(errno))
					fail("holes: malloc", &nb, 0);
				continue;
			}
			fill(&nb, 0);
			if (rnd(s) % 8) {
				h[i] = nb;
				continue;
			}
			/* into the shared pool: another thread frees it */
			pthread_mutex_lock(&pool_mu);
			blk_t *x = &pool[rnd(s) % SHARED], t = *x;
			*x = nb;
			pthread_mutex_unlock(&pool_mu);
			if (t.p) {
				verify(&t, SIZE_MAX);
				free(t.p);
				__atomic_add_fetch(&cross_frees, 1, __ATOMIC_RELAXED);
			}
		}
	n_ops[14]++;
}

/* Every byte of b zero (calloc's promise), words first. */
static void check_zero(const char *what, const blk_t *b)
{
	size_t i = 0;
	for (; i + 8 <= b->n; i += 8)
		if (*(const uint64_t *)(const void *)(b->p + i))
			break;
	for (; i < b->n; i++)
		if (b->p[i]) {
			fail(what, b, i);
			return;
		}
}

/* zeroes: each band's size is filled and freed (its pages dirty, runs of
 * the large cache), grown by realloc and freed, then each zeroing call
 * takes a block of it (the freed memory, a cached run cut or moved, a
 * fresh run) and every byte is checked. */
static const size_t bands[] = { 16, 100, 1000, 4096, 20000, 32768, 32769, 40000, 65536, 100000, 300000,
	(512 << 10) - 4096, 512 << 10, (512 << 10) + 1, 1 << 20, (3 << 20) + 123, (8 << 20) + 4096, 17 << 20,
	64 << 20 };
#define NBANDS (sizeof bands / sizeof bands[0])

static void zeroes(uint64_t *s, uint32_t *next_id)
{
	nd_policy_t pl, *pol = &pl; /* interleave over the memory nodes, a granule of 4 KiB .. 64 KiB */
	memset(&pl, 0, sizeof pl);
	pl.mode = ND_POLICY_INTERLEAVE;
	pl.granularity_shift = (unsigned)(rnd(s) % 5);
	for (int k = 0; k < nodes; k++)
		if (nd_node_has_memory(k))
			nd_nodemask_set(&pl.nodes, k);
	if (nd_policy_check(&pl, NULL, 0) != 0)
		pol = NULL; /* the thread's */
	for (size_t k = 0; k < NBANDS; k++) {
		size_t n = bands[k] + rnd(s) % 64 * (rnd(s) % 2);
		blk_t d = { malloc(n), n, 0, ++*next_id };
		if (!d.p) {
			if (!out_of_memory(errno))
				fail("zeroes: malloc", &d, 0);
			continue;
		}
		fill(&d, 0);
		if (rnd(s) % 2) { /* grown in place or moved: its tail dirty too */
			unsigned char *q = realloc(d.p, n + n / 2);
			if (q) {
				d.p = q;
				d.n = n + n / 2;
				fill(&d, 0);
			}
		}
		free(d.p);
		for (int z = 0; z < 5; z++) {
			blk_t b = { NULL, n, 0, ++*next_id };
			size_t al = (size_t)16 << (rnd(s) % 13);
			int node = (int)(rnd(s) % (unsigned)nodes);
			if (!nd_node_has_memory(node))
				node = 0;
			errno = 0;
			switch (z) {
			case 0: b.p = calloc(1, n); break;
			case 1: b.p = nd_calloc_onnode(n, 1, node); break;
			case 2: b.p = nd_calloc_policy(1, n, pol); break;
			case 3:
				b.align = al;
				b.p = nd_mallocx_onnode(n, node, ND_MALLOCX_ZERO | ND_MALLOCX_ALIGN(al));
				break;
			default: {
				nd_table_desc_t td = { 0 };
				nd_table_t t;
				td.bucket_size = 8;
				td.entries = n / 8 ? n / 8 : 1;
				td.flags = ND_TABLE_ZERO;
				if (nd_table_alloc(&td, &t) == 0) {
					b.p = t.base;
					b.n = t.bytes;
					check_zero("zeroed table not zero", &b);
					memset(b.p, 0xa5, b.n);
					nd_table_free(&t);
				}
				n_ops[15]++;
				continue;
			}
			}
			if (!b.p) {
				if (!out_of_memory(errno) && errno != EINVAL)
					fail("zeroes: alloc", &b, (size_t)errno);
				continue;
			}
			check_zero(z == 3 ? "mallocx ZERO not zero" : "calloc not zero", &b);
			fill(&b, 0);
			if (z < 4 && rnd(s) % 2) { /* the next call gets it back dirty */
				free(b.p);
				continue;
			}
			free(b.p);
		}
	}
	n_ops[15]++;
}

/* ND_FUZZ_FORK: zeroes in a forked child too (its pages are the parent's,
 * copied on write); the child's failures are its exit status. */
static void zeroes_forked(uint64_t *s, uint32_t *next_id)
{
	pid_t pid = fork();
	if (pid == 0) {
		zeroes(s, next_id);
		_exit(failures ? 1 : 0);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		blk_t e = { NULL, 0, 0, 0 };
		fail("zeroes: forked child failed", &e, (size_t)st);
	}
}

static int fork_zeroes;

static void *worker(void *arg)
{
	uint64_t s = seed * 1000003u + (uint64_t)(uintptr_t)arg;
	blk_t *slot = calloc(SLOTS, sizeof *slot), *hole = calloc(HOLES, sizeof *hole);
	uint32_t next_id = (uint32_t)(uintptr_t)arg << 24;
	for (long op = 0; op < ops_per_thread; op++) {
		uint64_t r = rnd(&s);
		if (r % 4096 == 0)
			holes(hole, &s, &next_id);
		if (r % 4096 == 1)
			zeroes(&s, &next_id);
		if (fork_zeroes && r % 4096 == 2)
			zeroes_forked(&s, &next_id);
		blk_t *b = &slot[r % SLOTS];
		unsigned kind = (unsigned)(r >> 12) % 14;
		size_t n = pick_size(rnd(&s));
		size_t align = (size_t)16 << (rnd(&s) % 17); /* 16 .. 1 MiB */
		if (b->p)
			verify(b, SIZE_MAX);
		if (kind == 3 || (b->p && kind != 2 && kind != 7 && kind != 11)) {
			free(b->p); /* free(NULL) included */
			b->p = NULL;
			n_ops[3]++;
			if (kind == 3)
				continue;
		}
		blk_t nb = { NULL, n, 0, ++next_id };
		int rc;
		errno = 0;
		switch (kind) {
		case 0: nb.p = malloc(n); break;
		case 1: nb.p = calloc(1, n); break;
		case 2: { /* realloc: the old bytes survive up to the smaller size */
			size_t keep = !b->p ? 0 : b->n < n ? b->n : n;
			unsigned char *q = realloc(b->p, n);
			if (n == 0 && b->p) { /* freed, NULL (glibc) */
				b->p = NULL;
				n_ops[2]++;
				continue;
			}
			if (!q)
				break;
			b->p = q;
			blk_t old = *b;
			old.n = keep;
			old.align = 0;
			if (keep)
				verify(&old, keep);
			b->n = n;
			b->align = 0; /* realloc keeps only malloc's alignment */
			fill(b, 0);
			n_ops[2]++;
			continue;
		}
		case 4: nb.align = align; nb.p = aligned_alloc(align, n); break;
		case 5:
			nb.align = align;
			rc = posix_memalign((void **)&nb.p, align, n);
			if (rc) {
				nb.p = NULL;
				errno = rc;
			}
			break;
		case 6: nb.align = align; nb.p = memalign(align, n); break;
		case 7:
			if (b->p && malloc_usable_size(b->p) < b->n)
				fail("malloc_usable_size", b, 0);
			n_ops[7]++;
			continue;
		case 8: nb.p = nd_malloc_onnode(n, (int)(r >> 40) % nodes); break;
		case 9: {
			nd_nodemask_t m;
			nd_nodemask_zero(&m);
			for (int k = 0; k < nodes; k++)
				if (nd_node_has_memory(k)) /* a memoryless node is EINVAL */
					nd_nodemask_set(&m, k);
			nb.p = nd_malloc_interleaved(n ? n : 1, &m, (size_t)4096 << (r >> 50) % 5);
			nb.n = n ? n : 1;
			break;
		}
		case 10: nb.p = nd_calloc(n ? 1 : 0, n ? n : 0); nb.n = n; break;
		case 11: { /* swap with the shared pool: frees cross threads */
			pthread_mutex_lock(&pool_mu);
			blk_t *x = &pool[r % SHARED];
			blk_t t = *x;
			*x = *b;
			*b = t;
			pthread_mutex_unlock(&pool_mu);
			if (b->p) {
				verify(b, SIZE_MAX);
				free(b->p);
				b->p = NULL;
				__atomic_add_fetch(&cross_frees, 1, __ATOMIC_RELAXED);
			}
			n_ops[11]++;
			continue;
		}
		case 12: nb.align = 4096; nb.p = valloc(n); break;
		default: nb.p = reallocarray(NULL, n ? n : 1, 1); nb.n = n ? n : 1; break;
		}
		n_ops[kind]++;
		if (!nb.p) {
			/* only a genuinely impossible request may fail */
			if (nb.n < ((size_t)256 << 20) && !out_of_memory(errno)) {
				blk_t e = nb;
				fail(op_names[kind], &e, (size_t)errno);
			}
			continue;
		}
		if (kind == 1 || kind == 10)
			check_zero("calloc not zero", &nb);
		if (kind >= 8 && kind <= 10 && nd_node_of(nb.p) < 0)
			fail("nd_node_of: not nodalloc's", &nb, 0);
		fill(&nb, 0);
		verify(&nb, SIZE_MAX);
		*b = nb;
	}
	for (int i = 0; i < SLOTS; i++)
		if (slot[i].p) {
			verify(&slot[i], SIZE_MAX);
			free(slot[i].p);
		}
	for (int i = 0; i < HOLES; i++)
		if (hole[i].p) {
			verify(&hole[i], SIZE_MAX);
			free(hole[i].p);
		}
	free(slot);
	free(hole);
	return NULL;
}

int main(int argc, char **argv)
{
	long ops;
	int nt;
	if (fuzz_args(argc, argv, 2, 16, &seed, &ops, &nt))
		return 2;
	nodes = nd_node_limit();
	may_fail = getenv("ND_FUZZ_ENOMEM") && atoi(getenv("ND_FUZZ_ENOMEM"));
	fork_zeroes = getenv("ND_FUZZ_FORK") && atoi(getenv("ND_FUZZ_FORK"));
	{ /* one round of zeroes first: the short ctest runs reach it */
		uint64_t s0 = seed;
		uint32_t id0 = 0xff000000u;
		zeroes(&s0, &id0);
		if (fork_zeroes)
			zeroes_forked(&s0, &id0);
	}
	ops_per_thread = ops / nt;
	pthread_t th[16];
	for (int t = 0; t < nt; t++)
		pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)(t + 1));
	for (int t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
	for (int i = 0; i < SHARED; i++)
		if (pool[i].p) {
			verify(&pool[i], SIZE_MAX);
			free(pool[i].p);
		}
	long total = 0;
	const char *v = getenv("ND_FUZZ_VARIANT");
	printf("fuzz_malloc %s: seed %llu, %d threads, %d nodes:", v ? v : "", (unsigned long long)seed, nt, nodes);
	for (int k = 0; k < 16; k++) {
		printf(" %s %ld", op_names[k], n_ops[k]);
		total += n_ops[k];
	}
	printf("; %ld cases, %ld cross-thread frees, %.1f MiB checked, %ld ENOMEM, %ld failures\n", total, cross_frees,
	       bytes_checked / 1048576.0, enomem, failures);
	return failures ? 1 : 0;
}
