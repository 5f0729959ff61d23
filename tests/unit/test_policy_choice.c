// SPDX-License-Identifier: MIT
/* Node choice: for every policy, the first node and the fallback order as
 * seen from each emulated CPU, forced first choices, tier order, and a
 * simulated page level with capacities (bind exhausting its set fails). */
#include <string.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

#define SPEC POLICY_SPEC5


static _nd_policy_iter_t it;

/* All nodes the iterator gives, as "a b c", from CPU cpu. */
static const char *walk_as(const char *policy, int cpu, int want_node)
{
	static char out[128];
	nd_policy_t p = pol(policy);
	nd_emulate_cpu(cpu);
	size_t k = 0;
	out[0] = '\0';
	for (int n = _nd_policy_first(&it, &p, want_node); n >= 0; n = _nd_policy_next(&it))
		k += (size_t)snprintf(out + k, sizeof out - k, "%s%d", k ? " " : "", n);
	CHECK_EQ(_nd_policy_next(&it), -1); /* stays exhausted */
	return out;
}

#define WALK(policy, cpu, want_node, expect) CHECK_STR(walk_as(policy, cpu, want_node), expect)

/* A page level in miniature: capacity in allocations per node. */
static int cap[8];
static int alloc_one(const nd_policy_t *p, int want_node)
{
	_nd_policy_iter_t i;
	for (int n = _nd_policy_first(&i, p, want_node); n >= 0; n = _nd_policy_next(&i))
		if (cap[n] > 0) {
			cap[n]--;
			_nd_policy_count(&i, n);
			return n;
		}
	return -1;
}

static nd_stats_t s0, s1;

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);

	/* local: the CPU's memory node, then its node's list */
	WALK("local", 0, -1, "0 1 2 3");
	WALK("local", 1, -1, "0 1 2 3");
	WALK("local", 2, -1, "1 0 2 3");
	WALK("local", 4, -1, "2 3 1 0");
	CHECK_EQ(it.want, 2);
	CHECK_EQ(it.cpu_node, 2);
	CHECK(!it.interleave);
	WALK("local", 6, -1, "0 1 2 3"); /* memoryless node 4: nearest memory */
	CHECK_EQ(it.want, 0);
	CHECK_EQ(it.cpu_node, 4); /* the CPU's node, not its memory node */
	WALK("local+tier", 4, -1, "2 1 0 3");
	WALK("local+tier", 6, -1, "0 1 2 3");

	/* preferred: that node, then its own list, from any CPU */
	WALK("preferred:3", 0, -1, "3 2 1 0");
	WALK("preferred:3", 6, -1, "3 2 1 0");
	CHECK_EQ(it.want, 3);
	WALK("preferred:1", 4, -1, "1 0 2 3");
	WALK("preferred:2+tier", 0, -1, "2 1 0 3");

	/* preferred-many: the set in the CPU node's order, then the rest */
	WALK("preferred-many:1,3", 0, -1, "1 3 0 2");
	WALK("preferred-many:1,3", 4, -1, "3 1 2 0");
	CHECK_EQ(it.want, 3);
	WALK("preferred-many:1,3", 2, -1, "1 3 0 2");
	WALK("preferred-many:0,3", 4, -1, "3 0 2 1");
	WALK("preferred-many:0,3+tier", 4, -1, "0 3 2 1");
	WALK("preferred-many:2", 6, -1, "2 0 1 3");

	/* bind: only the set, nearest first, then the end (ENOMEM) */
	WALK("bind:0,2", 0, -1, "0 2");
	WALK("bind:0,2", 4, -1, "2 0");
	WALK("bind:0,2", 2, -1, "0 2");
	WALK("bind:0,2", 6, -1, "0 2");
	WALK("bind:3", 0, -1, "3");
	WALK("bind:0,3", 4, -1, "3 0");
	WALK("bind:0,3+tier", 4, -1, "0 3");
	WALK("bind:all", 5, -1, "2 3 1 0");

	/* interleave: the thread's cursor picks, the target's list follows */
	_nd_policy_reset_cursor();
	WALK("interleave:1-3", 0, -1, "1 0 2 3");
	CHECK(it.interleave);
	CHECK_EQ(it.want, 1);
	WALK("interleave:1-3", 0, -1, "2 3 1 0");
	WALK("interleave:1-3", 4, -1, "3 2 1 0");
	WALK("interleave:1-3", 6, -1, "1 0 2 3"); /* wrapped */
	WALK("interleave:1-3+tier", 0, -1, "2 1 0 3");
	_nd_policy_reset_cursor();
	WALK("weighted:0=2,2=1", 0, -1, "0 1 2 3");
	CHECK(it.interleave);
	WALK("weighted:0=2,2=1", 0, -1, "0 1 2 3");
	WALK("weighted:0=2,2=1", 0, -1, "2 3 1 0");
	WALK("weighted:0=2,2=1", 0, -1, "0 1 2 3");

	/* a forced first choice: that node, then the policy's order from it */
	WALK("local", 0, 2, "2 3 1 0");
	CHECK_EQ(it.want, 2);
	WALK("local", 0, 4, "0 1 2 3"); /* memoryless: its nearest memory */
	CHECK_EQ(it.want, 0);
	WALK("local", 0, 99, "0 1 2 3"); /* no such node: ignored */
	WALK("preferred:3", 0, 1, "1 0 2 3");
	WALK("preferred-many:1,3", 4, 0, "0 1 3 2");
	WALK("bind:0,2", 0, 2, "2 0");
	WALK("bind:0,2", 4, 0, "0 2");
	WALK("bind:0,2", 0, 1, "0 2"); /* not in the set: skipped */
	WALK("bind:0,2", 4, 1, "2 0");
	_nd_policy_reset_cursor();
	WALK("interleave:1-3", 0, 3, "3 2 1 0");
	CHECK(!it.interleave); /* the policy did not choose */
	WALK("interleave:1-3", 0, -1, "1 0 2 3"); /* the cursor did not move */

	/* NODALLOC_TIER_ORDER turns tier order on for every policy */
	CHECK(_nd_opt_set("tier_order", "1") == 0);
	WALK("local", 4, -1, "2 1 0 3");
	WALK("bind:0,3", 4, -1, "0 3");
	CHECK(_nd_opt_set("tier_order", "0") == 0);
	WALK("local", 4, -1, "2 3 1 0");

	/* pol NULL or DEFAULT: the thread's policy, else the process's */
	nd_policy_t b = pol("bind:3");
	CHECK(nd_set_policy(&b) == 0);
	nd_emulate_cpu(0);
	CHECK_EQ(_nd_policy_first(&it, NULL, -1), 3);
	CHECK_EQ(_nd_policy_next(&it), -1);
	nd_policy_t d;
	memset(&d, 0, sizeof d);
	CHECK_EQ(_nd_policy_first(&it, &d, -1), 3);
	CHECK(nd_set_policy(NULL) == 0);
	CHECK_EQ(_nd_policy_first(&it, NULL, -1), 0);

	/* the miniature page level: exhaustion, fallback, and the counters */
	nd_emulate_cpu(4); /* node 2 */
	for (int n = 0; n < 4; n++)
		cap[n] = 2;
	s0.version = s1.version = ND_STATS_VERSION;
	CHECK(nd_stats_get(&s0) == 0);
	nd_policy_t bind = pol("bind:0,3");
	int got[6];
	for (int i = 0; i < 5; i++)
		got[i] = alloc_one(&bind, -1);
	/* 3 3 (nearest), then 0 0, then nothing: ENOMEM for the caller */
	CHECK(got[0] == 3 && got[1] == 3 && got[2] == 0 && got[3] == 0 && got[4] == -1, "%d %d %d %d %d", got[0],
	      got[1], got[2], got[3], got[4]);
	nd_policy_t pref = pol("preferred:3");
	CHECK_EQ(alloc_one(&pref, -1), 2); /* 3 is full: its list says 2 */
	CHECK_EQ(alloc_one(&pref, -1), 2);
	CHECK_EQ(alloc_one(&pref, -1), 1);
	CHECK(nd_stats_get(&s1) == 0);
	/* bind wanted 3 every time (its nearest node): got 3 twice, then 0
	 * twice (miss on 0, foreign on 3, as the kernel counts a bind
	 * fallback); preferred wanted 3 and got 2, 2, 1. CPU node 2. */
#define D(node, f) ((long long)(s1.nodes[node].f - s0.nodes[node].f))
	CHECK_EQ(D(3, numa_hit), 2);
	CHECK_EQ(D(0, numa_hit), 0);
	CHECK_EQ(D(0, numa_miss), 2);
	CHECK_EQ(D(3, numa_foreign), 5);
	CHECK_EQ(D(2, numa_miss), 2);
	CHECK_EQ(D(1, numa_miss), 1);
	CHECK_EQ(D(2, local_node), 2);
	CHECK_EQ(D(3, other_node), 2);
	CHECK_EQ(D(0, other_node), 2);
	CHECK_EQ(D(1, other_node), 1);
	CHECK_EQ(D(3, interleave_hit), 0);
	return CHECK_DONE();
}
