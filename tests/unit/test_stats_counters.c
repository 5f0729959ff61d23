// SPDX-License-Identifier: MIT
/* Statistics counters fed by hand: each counter against a hand count with
 * the kernel's meanings (zone_statistics), the byte counters, the
 * versioned struct, and no count lost between threads. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define SPEC                                                                                   \
	"0:cpus=0-1,mem=64M; 1:cpus=2-3,mem=64M; 2:cpus=4-5,mem=64M; 3:mem=64M; 4:cpus=6,mem=0; " \
	"distance: 0-1=20,0-2=30,0-3=40,1-2=25,1-3=35,2-3=22,4-0=15,4-1=26,4-2=33,4-3=44"

static nd_stats_t st, st2;
static char err[256];

#define EXPECT(node, hit, miss, foreign, ilhit, local, other)                       \
	do {                                                                        \
		const nd_node_stats_t *s_ = &st.nodes[node];                        \
		CHECK(s_->numa_hit == (hit) && s_->numa_miss == (miss) && s_->numa_foreign == (foreign) && \
			      s_->interleave_hit == (ilhit) && s_->local_node == (local) &&                  \
			      s_->other_node == (other),                                                     \
		      "node %d: hit %llu miss %llu foreign %llu il %llu local %llu other %llu", node,        \
		      (unsigned long long)s_->numa_hit, (unsigned long long)s_->numa_miss,                   \
		      (unsigned long long)s_->numa_foreign, (unsigned long long)s_->interleave_hit,          \
		      (unsigned long long)s_->local_node, (unsigned long long)s_->other_node);               \
	} while (0)

#define ROUNDS 200000
static void *feeder(void *arg)
{
	int k = (int)(intptr_t)arg;
	for (int i = 0; i < ROUNDS; i++) {
		_nd_stats_count(3, 3, 2, true);   /* hit, interleave_hit, other on 3 */
		_nd_stats_count(1, 2, 2, false);  /* miss+local on 2, foreign on 1 */
		_nd_stats_in_use(1 + k, 4096);
	}
	return NULL;
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);

	/* the versioned struct */
	st.version = 0;
	errno = 0;
	CHECK(nd_stats_get(&st) == -1 && errno == EINVAL);
	st.version = ND_STATS_VERSION + 1;
	CHECK(nd_stats_get(&st) == -1);
	CHECK(nd_stats_get(NULL) == -1);

	/* Nothing below allocates between the reset and the read, so the
	 * counts are exactly the ones fed here. */
	_nd_stats_reset();
	for (int i = 0; i < 3; i++)
		_nd_stats_count(0, 0, 0, false); /* wanted 0, got 0, CPU of node 0 */
	for (int i = 0; i < 2; i++)
		_nd_stats_count(1, 2, 0, false); /* wanted 1, got 2, CPU of node 0 */
	for (int i = 0; i < 4; i++)
		_nd_stats_count(3, 3, 2, true);  /* interleave wanted 3, got 3 */
	_nd_stats_count(3, 1, 1, true);          /* interleave wanted 3, got 1: no interleave_hit */
	_nd_stats_count(0, 0, 4, false);         /* memoryless CPU node 4: other_node on 0 */
	_nd_stats_count(-1, 2, 2, false);        /* no intention: a hit where it landed */
	_nd_stats_count(2, -1, 2, false);        /* failed: not counted */
	_nd_stats_count(5000, 1, 1, false);      /* no such node wanted: as no intention */
	_nd_stats_count(1, 9999, 1, false);      /* out of range got: dropped safely */
	_nd_stats_in_use(0, 8192);
	_nd_stats_in_use(0, -4096);
	_nd_stats_committed(1, 2 << 20);
	_nd_stats_reserved(2, (int64_t)1 << 30);
	_nd_stats_reserved(2, -((int64_t)1 << 29));
	_nd_stats_in_use(3, -100);               /* below zero reads as 0 */
	_nd_stats_in_use(-1, 100);               /* ignored */
	st.version = ND_STATS_VERSION;
	memset(st.nodes, 0xff, sizeof st.nodes);
	CHECK(nd_stats_get(&st) == 0);
	CHECK_EQ(st.version, ND_STATS_VERSION);
	CHECK_EQ(st.node_limit, 5);
	/*          hit miss foreign il local other */
	EXPECT(0, 4, 0, 0, 0, 3, 1);
	EXPECT(1, 1, 1, 2, 0, 2, 0);
	EXPECT(2, 1, 2, 0, 0, 1, 2);
	EXPECT(3, 4, 0, 1, 4, 0, 4);
	EXPECT(4, 0, 0, 0, 0, 0, 0);
	/* every miss has its foreign */
	uint64_t miss = 0, foreign = 0;
	for (int n = 0; n < st.node_limit; n++) {
		miss += st.nodes[n].numa_miss;
		foreign += st.nodes[n].numa_foreign;
	}
	CHECK_EQ(miss, foreign);
	CHECK_EQ(st.nodes[0].bytes_in_use, 4096);
	CHECK_EQ(st.nodes[1].bytes_committed, 2 << 20);
	CHECK_EQ(st.nodes[2].bytes_reserved, 1 << 29);
	CHECK_EQ(st.nodes[3].bytes_in_use, 0);
	CHECK_EQ(st.nodes[4].bytes_in_use, 0);
	CHECK_EQ(st.nodes[5].numa_hit, 0); /* beyond node_limit: zeroed */
	CHECK_EQ(st.nodes[ND_STATS_NODES - 1].bytes_reserved, 0);

	/* threads: relaxed atomics lose nothing */
	pthread_t a, b;
	st2.version = ND_STATS_VERSION;
	CHECK(nd_stats_get(&st2) == 0);
	CHECK(pthread_create(&a, NULL, feeder, (void *)0) == 0);
	CHECK(pthread_create(&b, NULL, feeder, (void *)1) == 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	CHECK(nd_stats_get(&st) == 0);
#define D(node, f) ((long long)(st.nodes[node].f - st2.nodes[node].f))
	CHECK_EQ(D(3, numa_hit), 2 * ROUNDS);
	CHECK_EQ(D(3, interleave_hit), 2 * ROUNDS);
	CHECK_EQ(D(3, other_node), 2 * ROUNDS);
	CHECK_EQ(D(2, numa_miss), 2 * ROUNDS);
	CHECK_EQ(D(2, local_node), 2 * ROUNDS);
	CHECK_EQ(D(1, numa_foreign), 2 * ROUNDS);
	CHECK_EQ(D(1, bytes_in_use), 4096LL * ROUNDS);
	CHECK_EQ(D(2, bytes_in_use), 4096LL * ROUNDS);

	_nd_stats_reset();
	CHECK(nd_stats_get(&st) == 0);
	CHECK(st.nodes[3].numa_hit == 0 && st.nodes[1].bytes_in_use == 0 && st.nodes[2].bytes_reserved == 0);
	return CHECK_DONE();
}
