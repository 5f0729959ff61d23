// SPDX-License-Identifier: MIT
/* nd_malloc_policy's cache of plain objects (heap.c: user, kuser; place.c's
 * two bodies) against the truth, on 8 emulated nodes of one CPU each:
 * random sequences of in-place changes of 6 plain objects (mode, flags,
 * granularity, nodes.bits[0], weights: all 255, all 0, one, all the same,
 * a mix of 255 and small), CPU changes (nd_emulate_cpu: thread.c's
 * invalidation, which leaves user entries alone), thread and process
 * policy changes (which must not matter), and enough distinct policies to
 * park policy heaps (pheap_get's eviction). Each call goes through the SSE2
 * body, the AVX2 body (where the CPU has it), the ifunc or
 * nd_mallocx_policy (pc_serves, through lane); after it entry 0 must hold
 * the object's interned policy (nd_policy_prepare) and the heap heap_for
 * gives on this CPU, owned by the thread, and the object its node; an
 * invalid object must fail with EINVAL. First a directed sequence: a
 * weighted object over the 8 nodes, weights 1..8, across a CPU change, then
 * all 255 (weights that read as ND_KEY_NONE) and back. No bug found
 * (polobj's gap, a weighted entry serving its old heap once its weights
 * read as NONE, does not occur: an entry compared through the weights
 * without a CPU key has key == its weights then, and NONE only for weights
 * that are NONE, whose heap it holds). Fails (20 checks) with thread.c's
 * invalidation skipping every entry, or with heap.c's pc_keyfree not
 * asking pc_cpu_free (a local object then keeps the heap of the CPU it
 * was resolved on). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

enum { NN = 8, K = 6, ITERS = 60000, MAXFAIL = 20 };
static const char *SPEC = "0: cpus=0 mem=128M; 1: cpus=1 mem=128M; 2: cpus=2 mem=128M; 3: cpus=3 mem=128M; "
			  "4: cpus=4 mem=128M; 5: cpus=5 mem=128M; 6: cpus=6 mem=128M; 7: cpus=7 mem=128M";

static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}
static int cpu, fails;

static void set_cpu(int c)
{
	cpu = c;
	nd_emulate_cpu(c);
}

/* The node a non-spreading policy's heap wants on this CPU (docs/policy.md's
 * modes table); -1 for interleave and weighted. */
static int want_node(const nd_policy_t *ip)
{
	int list[64], home = nd_node_of_cpu(cpu);
	int n = nd_fallback_list(home, !!(ip->flags & ND_POLICY_F_TIER_ORDER), list, 64);
	switch (ip->mode) {
	case ND_POLICY_LOCAL:
		return home;
	case ND_POLICY_PREFERRED:
		return __builtin_ctzll(ip->nodes.bits[0]);
	case ND_POLICY_BIND:
	case ND_POLICY_PREFERRED_MANY:
		for (int i = 0; i < n; i++)
			if (ip->nodes.bits[0] >> list[i] & 1)
				return list[i];
		return -2;
	default:
		return -1;
	}
}

static void *call(const nd_policy_t *p)
{
	switch (rnd() % 4) {
	case 0:
		return _nd_place_policy_sse2(48, p);
	case 1:
		return _nd_place_avx2() ? _nd_place_policy_avx2(48, p) : nd_malloc_policy(48, p);
	case 2:
		return nd_malloc_policy(48, p);
	default:
		return nd_mallocx_policy(48, p, 0);
	}
}

static void call_check(const nd_policy_t *p, long it)
{
	nd_policy_t before = *p;
	errno = 0;
	void *q = call(p);
	int e0 = errno;
	const nd_policy_t *ip = nd_policy_prepare(&before);
	if (!ip) {
		CHECK(!q && e0 == EINVAL, "step %ld: an invalid object: %p, errno %d", it, q, e0);
		fails += q || e0 != EINVAL;
		free(q);
		return;
	}
	const struct _nd_pcache *e = &_nd_tls->pc[0];
	const _nd_heap_t *h = (const _nd_heap_t *)e->heap;
	int want = want_node(ip), got = q ? nd_node_of(q) : -3;
	bool ok = q && e->pol == ip && h && h->owner == _nd_tls;
	if (ok && want == -1)
		ok = h->pol == ip && h->node == -1 && (ip->nodes.bits[0] >> got & 1);
	else if (ok)
		ok = h->pol == (ip->mode == ND_POLICY_BIND ? ip : NULL) && h->node == want && got == want;
	char a[200] = "", b[200] = "";
	if (!ok) {
		nd_policy_format(ip, a, sizeof a);
		nd_policy_format(e->pol ? e->pol : ip, b, sizeof b);
		fails++;
	}
	CHECK(ok, "step %ld, CPU %d: %s (node %d) got node %d, entry 0 %s%s, its heap's node %d, user %d, kuser %d", it, cpu,
	      a, want, got, e->pol == ip ? "" : "OTHER ", b, h ? h->node : -9, e->user == p, e->kuser == p);
	free(q);
}

static void change(nd_policy_t *p)
{
	static const nd_policy_mode_t modes[] = { ND_POLICY_LOCAL, ND_POLICY_PREFERRED,  ND_POLICY_PREFERRED_MANY,
						  ND_POLICY_BIND,  ND_POLICY_INTERLEAVE, ND_POLICY_WEIGHTED };
	switch (rnd() % 8) {
	case 0:
		p->mode = modes[rnd() % 6];
		break;
	case 1:
		p->flags = rnd() % 4 == 0 ? ND_POLICY_F_TIER_ORDER : 0;
		break;
	case 2:
		p->granularity_shift = (unsigned)(rnd() % 3);
		break;
	case 3:
		p->nodes.bits[0] = rnd() % 3 == 0 ? 1ull << (rnd() % NN) : rnd() % 255 + 1;
		break;
	case 4:
	case 5:
		switch (rnd() % 5) {
		case 0:
			memset(p->weights, 255, NN); /* reads as ND_KEY_NONE */
			break;
		case 1:
			memset(p->weights, 0, NN);
			break;
		case 2:
			p->weights[rnd() % NN] = (uint8_t)(rnd() % 3 == 0 ? 255 : rnd() % 4);
			break;
		case 3:
			memset(p->weights, (int)(rnd() % 3), NN);
			break;
		default:
			for (int i = 0; i < NN; i++)
				p->weights[i] = (uint8_t)(rnd() % 2 ? 255 : rnd() % 3);
		}
		break;
	case 6:
		set_cpu((int)(rnd() % NN));
		break;
	default: {
		nd_policy_t o = pol(rnd() % 2 ? "interleave:0-7" : "bind:2");
		if (rnd() % 2)
			nd_set_policy(rnd() % 3 ? &o : NULL);
		else
			nd_set_default_policy(rnd() % 3 ? &o : NULL);
	}
	}
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	/* each object ends a page followed by a PROT_NONE page */
	long pg = sysconf(_SC_PAGESIZE);
	nd_policy_t *o[K];
	for (int k = 0; k < K; k++) {
		char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(m != MAP_FAILED && mprotect(m + pg, (size_t)pg, PROT_NONE) == 0, "guard page");
		o[k] = (nd_policy_t *)(void *)(m + pg - sizeof(nd_policy_t));
		*o[k] = pol("bind:1");
	}

	/* directed: weights 1..8, a CPU change, all 255, back and forth */
	nd_policy_t *d = o[0];
	for (int b = 0; b < 3; b++) {
		rs = 0x9e3779b97f4a7c15ull + (uint64_t)b; /* which body serves */
		set_cpu(0);
		*d = pol("weighted:0=1,1=2,2=3,3=4,4=5,5=6,6=7,7=8");
		call_check(d, -1);
		set_cpu(3);
		call_check(d, -2);
		memset(d->weights, 255, NN);
		call_check(d, -3);
		set_cpu(5);
		call_check(d, -4);
		d->weights[2] = 1;
		call_check(d, -5);
		set_cpu(0);
		d->weights[2] = 255;
		call_check(d, -6);
		/* bind:1 whose weights read as NONE, then weighted over 0-7 */
		*d = pol("bind:1");
		memset(d->weights, 255, NN);
		call_check(d, -7);
		set_cpu(2);
		d->mode = ND_POLICY_WEIGHTED;
		d->nodes.bits[0] = 0xff;
		call_check(d, -8);
		d->weights[7] = 1;
		call_check(d, -9);
	}

	for (uint64_t seed = 1; seed <= 2; seed++) {
		rs = 88172645463325252ull * seed;
		for (long it = 0; it < ITERS && fails < MAXFAIL; it++) {
			nd_policy_t *p = o[rnd() % K];
			for (int i = (int)(rnd() % 3); i > 0; i--)
				change(p);
			call_check(p, it);
		}
	}
	nd_set_policy(NULL);
	nd_set_default_policy(NULL);
	return CHECK_DONE();
}
