// SPDX-License-Identifier: MIT
/*
 * The malloc/free fast paths of malloc.c (internal.h, slab section):
 *  - the object index check accepts exactly the object starts of a slab,
 *    at every byte offset of the largest run, for every class; free's
 *    check (_nd_slab_live: start and lim folded into one word) exactly
 *    those of the objects carved, also for addresses that alias onto the
 *    slab's map unit;
 *  - the slab map finds the slab of each object, with its mul (free's
 *    check multiplies by the map's), and nothing for addresses that are
 *    not slab memory; its pair 0 never names a slab;
 *  - on the real topology, the one-compare CPU/policy check keeps malloc on
 *    the fast path, and a thread or process policy change sends the next
 *    malloc to the slow path (so the policy is honoured) and back.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "internal.h"

static int static_var;

static void index_check(void)
{
	/* one real slab per class gives start and mul */
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		size_t size = _nd_slab_class_size(c);
		void *p = malloc(size);
		CHECK(p != NULL);
		_nd_slab_hot_t *s = _nd_slab_of(p);
		/* the map's `none` header sits at the map's start; in check mode
		 * every slab's check fails (lim 0: all frees validate), the map
		 * still works */
		bool mapped = (void *)s != (void *)_nd_slab_map.base;
		CHECK(mapped, "class %zu: map gives no slab for %p", size, p);
		CHECK(_nd_slab_live(s, p) == !getenv("NODALLOC_CHECK"), "class %zu", size);
		if (!mapped) {
			free(p);
			continue;
		}
		/* the map's pair: the same header, and its mul for free's check */
		uint64_t mul;
		CHECK(_nd_slab_of_mul(p, &mul) == s && mul == s->mul, "class %zu: map mul %llx, slab's %llx", size,
		      (unsigned long long)mul, (unsigned long long)s->mul);
		uintptr_t off0 = (uintptr_t)p - (uintptr_t)s->start;
		CHECK(off0 % size == 0 && _nd_slab_index(s, p) == off0 / size, "class %zu", size);
		int bad = 0;
		for (uintptr_t off = 0; off < ((uintptr_t)64 << ND_PAGE_SHIFT) + size; off++) {
			uint64_t i = _nd_slab_index(s, s->start + off);
			if (off % size == 0 ? i != off / size : i < ((uint64_t)1 << 32))
				bad++;
		}
		CHECK(bad == 0, "class %zu: %d offsets misjudged", size, bad);
		/* free's check: object starts among the carved ones, nothing else,
		 * also one map period (2^27 .. 2^44) away on either side */
		uint64_t carved = __atomic_load_n(&((_nd_slab_t *)s)->carved, __ATOMIC_RELAXED);
		CHECK(carved > 0, "class %zu", size);
		bad = 0;
		for (uintptr_t off = 0; off < ((uintptr_t)64 << ND_PAGE_SHIFT) + size; off++) {
			bool want = !getenv("NODALLOC_CHECK") && off % size == 0 && off / size < carved;
			if (_nd_slab_live(s, s->start + off) != want)
				bad++;
			for (unsigned sh = 27; sh <= 44; sh++)
				if (_nd_slab_live(s, s->start + off + ((uintptr_t)1 << sh)) ||
				    _nd_slab_live(s, s->start + off - ((uintptr_t)1 << sh)))
					bad++;
		}
		CHECK(bad == 0, "class %zu: free's check misjudged %d addresses", size, bad);
		/* below the start, and far away: never an index a slab can have
		 * (at most 64 pages of 16-byte objects) */
		const uint64_t most = ((uint64_t)64 << ND_PAGE_SHIFT) / 16;
		CHECK(_nd_slab_index(s, s->start - size) >= most);
		CHECK(_nd_slab_index(s, s->start - 16) >= most);
		CHECK(_nd_slab_index(s, s->start + ((uintptr_t)1 << 40)) >= most, "class %zu", size);
		CHECK(_nd_slab_index(s, s->start + ((uintptr_t)1 << 46) + size) >= most, "class %zu", size);
		CHECK(_nd_slab_index(s, s->start + ((uintptr_t)1 << 46) + 8) >= most, "class %zu", size);
		free(p);
	}
}

static void map_check(void)
{
	int local;
	/* not slab memory: every lookup yields a header whose check fails */
	const void *foreign[] = { &local, &static_var, (void *)16, (void *)(uintptr_t)0x7fffffffe000ull };
	for (unsigned i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
		_nd_slab_hot_t *s = _nd_slab_of(foreign[i]);
		CHECK(!_nd_slab_live(s, foreign[i]), "%p taken for a slab object", foreign[i]);
		uint64_t mul;
		s = _nd_slab_of_mul(foreign[i], &mul);
		CHECK(!_nd_slab_live_mul(s, mul, foreign[i]), "%p taken for a slab object (map's mul)", foreign[i]);
	}
	/* `none` fails every address, NULL too */
	CHECK(!_nd_slab_live(&_nd_slab_map.base->none, NULL) && !_nd_slab_live(_nd_slab_of(NULL), NULL));
	void *big = malloc(100000); /* a large run: no slab */
	CHECK(big != NULL);
	_nd_slab_hot_t *s = _nd_slab_of(big);
	CHECK(!_nd_slab_live(s, big));
	free(big);
	/* objects of one slab share a header; two classes do not */
	void *a = malloc(48), *b = malloc(48), *c = malloc(4000);
	CHECK(_nd_slab_of(a) == _nd_slab_of(b) || _nd_slab_of(a)->start != _nd_slab_of(b)->start);
	CHECK(_nd_slab_of(a) != _nd_slab_of(c));
	CHECK(_nd_slab_of(a)->tp == (uintptr_t)__builtin_thread_pointer());
	/* pair 0 is never a slab's (nd_slab.h: a lookup that meets the boot
	 * map's mask 0 with the map reads it): the unit that aliases onto it
	 * is left to the slow path */
	uintptr_t mask = __atomic_load_n(&_nd_slab_map.mask, __ATOMIC_ACQUIRE);
	if (mask) {
		const void *u0 = (const void *)(((mask >> 1) + 1) << ND_SLAB_UNIT_SHIFT);
		_nd_meta_map_set(u0, (const _nd_slab_t *)(void *)_nd_slab_of(a));
		CHECK(_nd_slab_of(u0) == &_nd_slab_map.base->none && _nd_slab_of(NULL) == &_nd_slab_map.base->none,
		      "pair 0 names a slab");
		_nd_meta_map_set(u0, NULL);
	}
	free(a);
	free(b);
	free(c);
}

/* mallocs of 32 bytes; returns how many left the fast path */
static uint64_t slow_of(int n)
{
	void *keep[64];
	uint64_t before = _nd_slab_slow_count();
	for (int i = 0; i < n; i++)
		keep[i] = malloc(32);
	uint64_t d = _nd_slab_slow_count() - before;
	for (int i = 0; i < n; i++)
		free(keep[i]);
	return d;
}

static void policy_check(void)
{
	if (_nd_topo()->emulated || getenv("NODALLOC_CHECK")) {
		printf("policy_check: skipped (emulated topology or check mode)\n");
		return;
	}
	slow_of(64); /* warm: heap chosen, slab carved */
	/* a migration may hit a run now and then: the fast path must hold for
	 * most of the runs */
	int fast = 0;
	for (int r = 0; r < 20; r++)
		fast += slow_of(8) == 0;
	CHECK(fast >= 15, "fast path held in %d of 20 runs", fast);

	nd_policy_t pol;
	char err[200];
	CHECK(nd_policy_parse("bind:0", &pol, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&pol) == 0);
	CHECK(slow_of(8) >= 1, "thread policy bind: the next malloc resolves the heap again");
	fast = 0;
	for (int r = 0; r < 20; r++)
		fast += slow_of(8) == 0;
	CHECK(fast >= 15, "thread policy bind: fast path held in %d of 20 runs", fast);
	CHECK(nd_set_policy(NULL) == 0);
	slow_of(8);
	fast = 0;
	for (int r = 0; r < 20; r++)
		fast += slow_of(8) == 0;
	CHECK(fast >= 15, "back to local: fast path held in %d of 20 runs", fast);

	CHECK(nd_set_default_policy(&pol) == 0);
	CHECK(slow_of(8) >= 1, "process policy bind: the next malloc resolves the heap again");
	fast = 0;
	for (int r = 0; r < 20; r++)
		fast += slow_of(8) == 0;
	CHECK(fast >= 15, "process policy bind: fast path held in %d of 20 runs", fast);
	CHECK(nd_set_default_policy(NULL) == 0);
	slow_of(8);
	fast = 0;
	for (int r = 0; r < 20; r++)
		fast += slow_of(8) == 0;
	CHECK(fast >= 15, "process back to local: fast path held in %d of 20 runs", fast);
}

int main(void)
{
	free(malloc(1)); /* init */
	index_check();
	map_check();
	policy_check();
	return CHECK_DONE();
}
