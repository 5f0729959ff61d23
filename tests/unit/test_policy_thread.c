// SPDX-License-Identifier: MIT
/* Thread and process policies: inheritance, a process default change seen
 * by running threads (the generation), the fast-path is_local test, and
 * interning (equal policies share one immutable copy). */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

#define SPEC POLICY_SPEC5


static const char *fmt(const nd_policy_t *p)
{
	static char b[128];
	nd_policy_format(p, b, sizeof b);
	return b;
}

static pthread_barrier_t bar;
static int seen[4];
static char own_after[128];

/* Worker: caches "local", then must see the process change to bind:1
 * after the barrier without doing anything but asking again. */
static void *inheritor(void *arg)
{
	(void)arg;
	seen[0] = _nd_policy_is_local();
	pthread_barrier_wait(&bar); /* main changes the default */
	pthread_barrier_wait(&bar);
	seen[1] = _nd_policy_is_local();
	seen[2] = _nd_policy_current()->mode;
	return NULL;
}

/* Worker with a policy of its own: untouched by the process change. */
static void *owner(void *arg)
{
	(void)arg;
	nd_policy_t p = pol("preferred:1");
	nd_set_policy(&p);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	snprintf(own_after, sizeof own_after, "%s", fmt(_nd_policy_current()));
	seen[3] = _nd_policy_is_local();
	return NULL;
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	CHECK(nd_set_default_policy(NULL) == 0);

	nd_policy_t g;
	CHECK(nd_get_policy(&g) == 0 && g.mode == ND_POLICY_DEFAULT);
	CHECK(_nd_policy_is_local());
	CHECK_EQ(_nd_policy_current()->mode, ND_POLICY_LOCAL);
	CHECK(nd_get_default_policy(&g) == 0 && g.mode == ND_POLICY_LOCAL);

	/* thread policy */
	nd_policy_t il = pol("interleave:0-3@2M");
	CHECK(nd_set_policy(&il) == 0);
	CHECK(!_nd_policy_is_local());
	const nd_policy_t *c1 = _nd_policy_current();
	CHECK_STR(fmt(c1), "interleave:0-3@2M");
	memset(&il, 0, sizeof il);
	CHECK_STR(fmt(_nd_policy_current()), "interleave:0-3@2M");
	CHECK(nd_get_policy(&g) == 0);
	CHECK_STR(fmt(&g), "interleave:0-3@2M");
	/* equal policies are interned once */
	nd_policy_t il2 = pol("interleave:3,2,1,0@2048K");
	CHECK(nd_set_policy(&il2) == 0);
	CHECK(_nd_policy_current() == c1);
	/* a bad policy is refused and the old one stays */
	nd_policy_t bad = pol("bind:0");
	nd_nodemask_set(&bad.nodes, 4); /* memoryless */
	errno = 0;
	CHECK(nd_set_policy(&bad) == -1 && errno == EINVAL);
	CHECK(_nd_policy_current() == c1);
	/* a hand-built weighted set without weights: weight 1 each */
	nd_policy_t hw;
	memset(&hw, 0, sizeof hw);
	hw.mode = ND_POLICY_WEIGHTED;
	nd_nodemask_set(&hw.nodes, 1);
	nd_nodemask_set(&hw.nodes, 2);
	CHECK(nd_set_policy(&hw) == 0);
	CHECK_STR(fmt(_nd_policy_current()), "weighted:1=1,2=1");
	/* local with tier order: still the local fast path */
	nd_policy_t lt = pol("local+tier");
	CHECK(nd_set_policy(&lt) == 0);
	CHECK(_nd_policy_is_local());
	CHECK(_nd_policy_current()->flags & ND_POLICY_F_TIER_ORDER);
	/* DEFAULT mode or NULL: inherit again */
	nd_policy_t def;
	memset(&def, 0, sizeof def);
	CHECK(nd_set_policy(&def) == 0);
	CHECK(nd_get_policy(&g) == 0 && g.mode == ND_POLICY_DEFAULT);
	CHECK(_nd_policy_is_local());

	/* the process default, seen by a running thread */
	pthread_t a, b;
	pthread_barrier_init(&bar, NULL, 3);
	CHECK(pthread_create(&a, NULL, inheritor, NULL) == 0);
	CHECK(pthread_create(&b, NULL, owner, NULL) == 0);
	pthread_barrier_wait(&bar);
	nd_policy_t b1 = pol("bind:1");
	CHECK(nd_set_default_policy(&b1) == 0);
	pthread_barrier_wait(&bar);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	CHECK(seen[0] == 1 && seen[1] == 0 && seen[2] == ND_POLICY_BIND, "%d %d %d", seen[0], seen[1], seen[2]);
	CHECK_STR(own_after, "preferred:1");
	CHECK_EQ(seen[3], 0);
	/* and by this thread, which inherits */
	CHECK(!_nd_policy_is_local());
	CHECK_STR(fmt(_nd_policy_current()), "bind:1");
	CHECK(nd_get_default_policy(&g) == 0);
	CHECK_STR(fmt(&g), "bind:1");
	CHECK(nd_get_policy(&g) == 0 && g.mode == ND_POLICY_DEFAULT);
	/* a thread policy wins over the default, and back */
	nd_policy_t l = pol("local");
	CHECK(nd_set_policy(&l) == 0);
	CHECK(_nd_policy_is_local());
	CHECK(nd_set_policy(NULL) == 0);
	CHECK(!_nd_policy_is_local());
	/* the default back to local */
	CHECK(nd_set_default_policy(NULL) == 0);
	CHECK(_nd_policy_is_local());
	CHECK(nd_set_default_policy(&bad) == -1 && errno == EINVAL);
	CHECK(_nd_policy_is_local());
	CHECK(nd_get_policy(NULL) == -1 && nd_get_default_policy(NULL) == -1);
	return CHECK_DONE();
}
