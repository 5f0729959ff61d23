// SPDX-License-Identifier: MIT
/* The policy grammar: parse, canonical format, round trip, every kind of
 * bad string rejected with the bad part named; NODALLOC_POLICY at init. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define SPEC                                                                                   \
	"0:cpus=0-1,mem=64M; 1:cpus=2-3,mem=64M; 2:cpus=4-5,mem=64M; 3:mem=64M; 4:cpus=6,mem=0; " \
	"distance: 0-1=20,0-2=30,0-3=40,1-2=25,1-3=35,2-3=22,4-0=15,4-1=26,4-2=33,4-3=44"

static nd_policy_t p, q;
static char err[256], buf[256];

static int parse(const char *s)
{
	err[0] = '\0';
	return nd_policy_parse(s, &p, err, sizeof err);
}

/* s parses, formats as canon, and canon parses back to the same bytes. */
#define ROUND(s, canon)                                                                  \
	do {                                                                             \
		CHECK(parse(s) == 0, "'%s': %s", s, err);                                 \
		int n_ = nd_policy_format(&p, buf, sizeof buf);                          \
		CHECK_STR(buf, canon);                                                   \
		CHECK_EQ(n_, (long long)strlen(canon));                                  \
		CHECK(nd_policy_parse(buf, &q, err, sizeof err) == 0, "'%s': %s", buf, err); \
		CHECK(memcmp(&p, &q, sizeof p) == 0, "'%s' does not round-trip", s);      \
	} while (0)

#define BAD(s, msg)                                                                      \
	do {                                                                             \
		CHECK(parse(s) == -1, "'%s' accepted", s);                               \
		CHECK(strstr(err, msg) != NULL, "'%s': got \"%s\", want \"%s\"", s, err, msg); \
	} while (0)

static int pipefd[2];
static char msgs[4096];
static void drain(void)
{
	ssize_t n = read(pipefd[0], msgs, sizeof msgs - 1);
	msgs[n > 0 ? n : 0] = '\0';
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);

	/* fields of parsed policies */
	CHECK(parse("local") == 0 && p.mode == ND_POLICY_LOCAL && p.flags == 0);
	CHECK(parse("preferred:2") == 0 && p.mode == ND_POLICY_PREFERRED && nd_nodemask_isset(&p.nodes, 2) &&
	      nd_nodemask_count(&p.nodes) == 1);
	CHECK(parse("interleave:0-3@2M") == 0 && p.mode == ND_POLICY_INTERLEAVE && p.granularity_shift == 9 &&
	      nd_nodemask_count(&p.nodes) == 4);
	CHECK(parse("interleave:0,1") == 0 && p.granularity_shift == 0); /* default: one page */
	CHECK(parse("interleave:0-1@4096") == 0 && p.granularity_shift == 0);
	CHECK(parse("interleave:0-1@32K") == 0 && p.granularity_shift == 3);
	CHECK(parse("interleave:0-1@1G") == 0 && p.granularity_shift == 18);
	CHECK(parse("weighted:0=3,1=1@64K") == 0 && p.mode == ND_POLICY_WEIGHTED && p.weights[0] == 3 &&
	      p.weights[1] == 1 && p.weights[2] == 0 && p.granularity_shift == 4 && nd_nodemask_count(&p.nodes) == 2);
	CHECK(parse("weighted:0-2=2,3") == 0 && p.weights[0] == 2 && p.weights[2] == 2 && p.weights[3] == 1);
	CHECK(parse("bind:!1+tier") == 0 && p.mode == ND_POLICY_BIND && p.flags == ND_POLICY_F_TIER_ORDER &&
	      nd_nodemask_count(&p.nodes) == 3 && !nd_nodemask_isset(&p.nodes, 1));

	/* canonical forms and round trips */
	ROUND("local", "local");
	ROUND("default", "default");
	ROUND("local+tier", "local+tier");
	ROUND("preferred:1", "preferred:1");
	ROUND("preferred-many:2,0", "preferred-many:0,2");
	ROUND("bind:0-1", "bind:0-1");
	ROUND("bind:3,2,1,0", "bind:0-3");
	ROUND("bind:all", "bind:0-3");
	ROUND("bind:!2", "bind:0-1,3");
	ROUND("interleave:0-3@2M", "interleave:0-3@2M");
	ROUND("interleave:0-3@4K", "interleave:0-3"); /* one page is the default */
	ROUND("interleave:1,3@8k", "interleave:1,3@8K");
	ROUND("interleave:all@1024K", "interleave:0-3@1M");
	ROUND("interleave:0-1@1GiB+tier", "interleave:0-1@1G+tier");
	ROUND("weighted:0=3,1=1@64K", "weighted:0=3,1=1@64K");
	ROUND("weighted:1=255,0", "weighted:0=1,1=255");
	ROUND("weighted:0-3=2@512K+tier", "weighted:0=2,1=2,2=2,3=2@512K+tier");

	/* format: snprintf-like truncation, returns the full length */
	CHECK(parse("interleave:0-3@2M") == 0);
	memset(buf, 'Z', sizeof buf);
	CHECK_EQ(nd_policy_format(&p, buf, 8), (long long)strlen("interleave:0-3@2M"));
	CHECK_STR(buf, "interle");
	CHECK(buf[8] == 'Z');
	CHECK_EQ(nd_policy_format(&p, NULL, 0), (long long)strlen("interleave:0-3@2M"));
	p.mode = (nd_policy_mode_t)42;
	CHECK_EQ(nd_policy_format(&p, buf, sizeof buf), -1);

	/* bad strings: each names the bad part */
	BAD("", "unknown mode ''");
	BAD("locale", "unknown mode 'locale'");
	BAD("Interleave:0-1", "unknown mode 'Interleave'");
	BAD("spread:0-1", "unknown mode 'spread'");
	BAD("local:0", "'local' takes no node list (':0' at position 6)");
	BAD("bind", "'bind' needs a node list");
	BAD("bind:", "empty node list at position 6");
	BAD("bind:0,5-9", "node 5 (at position 8) does not exist");
	BAD("bind:4", "node 4 (at position 6) has no memory");
	BAD("bind:1,7x", "'7x' at position 8 is not a node number");
	BAD("bind:0-1@2M", "granularity '@2M' at position 9 is only for interleave and weighted");
	BAD("preferred:0-1", "preferred takes one node, '0-1' has 2 (use preferred-many)");
	BAD("preferred-many:!all", "selects no memory node");
	BAD("interleave:0-1@", "empty granularity after '@' at position 15");
	BAD("interleave:0-1@3M", "granularity '3M' at position 16 must be 4K times a power of two, at most 1G");
	BAD("interleave:0-1@2G", "granularity '2G' at position 16 must be 4K times a power of two");
	BAD("interleave:0-1@2048", "granularity '2048' at position 16 must be 4K times a power of two");
	BAD("interleave:0-1@lots", "granularity 'lots' at position 16 is not a size");
	BAD("interleave:0-1@2M@4K", "granularity '2M@4K' at position 16 is not a size");
	BAD("interleave:0-1+tiers", "unknown flag '+tiers' at position 15 (only '+tier')");
	BAD("local+fast", "unknown flag '+fast' at position 6");
	BAD("weighted:0=0", "weight '0' at position 12 is not a number 1-255");
	BAD("weighted:0=256,1=1", "weight '256' at position 12 is not a number 1-255");
	BAD("weighted:0=,1=1", "weight '' at position 12");
	BAD("weighted:0=2,0=1", "node 0 given twice (at position 14)");
	BAD("weighted:x=2", "'x' at position 10 is not a node number");
	BAD("weighted:4=1", "node 4 (at position 10) has no memory");
	BAD("weighted:", "empty node list at position 10");
	BAD("interleave:+1", "relative node lists ('+' at position 12) are not supported");
	/* a failed parse leaves *out untouched */
	CHECK(parse("bind:2") == 0);
	q = p;
	CHECK(parse("bind:9") == -1);
	CHECK(memcmp(&p, &q, sizeof p) == 0);

	/* nd_policy_check on hand-built structs */
	nd_policy_t h;
	memset(&h, 0, sizeof h);
	h.mode = ND_POLICY_PREFERRED;
	CHECK(nd_policy_check(&h, err, sizeof err) == -1 && strstr(err, "empty node set"), "%s", err);
	nd_nodemask_set(&h.nodes, 0);
	nd_nodemask_set(&h.nodes, 1);
	CHECK(nd_policy_check(&h, err, sizeof err) == -1 && strstr(err, "exactly one node (2 given)"), "%s", err);
	h.mode = ND_POLICY_INTERLEAVE;
	CHECK(nd_policy_check(&h, err, sizeof err) == 0, "%s", err);
	h.granularity_shift = 19;
	CHECK(nd_policy_check(&h, err, sizeof err) == -1 && strstr(err, "granularity shift 19"), "%s", err);
	h.granularity_shift = 0;
	nd_nodemask_set(&h.nodes, 4);
	CHECK(nd_policy_check(&h, err, sizeof err) == -1 && strstr(err, "node 4 has no memory"), "%s", err);
	h.flags = 0x10;
	CHECK(nd_policy_check(&h, err, sizeof err) == -1 && strstr(err, "unknown flags 0x10"), "%s", err);
	errno = 0;
	CHECK(nd_set_policy(&h) == -1 && errno == EINVAL);

	/* the granularity rule ("@gran", nd_malloc_interleaved, nodactl):
	 * 4K << k up to 1G exactly */
	CHECK_EQ(_nd_policy_granularity_shift(0), -1);
	CHECK_EQ(_nd_policy_granularity_shift(1), -1);
	CHECK_EQ(_nd_policy_granularity_shift(4096), 0);
	CHECK_EQ(_nd_policy_granularity_shift(4097), -1);
	CHECK_EQ(_nd_policy_granularity_shift(12288), -1);
	CHECK_EQ(_nd_policy_granularity_shift(2 << 20), 9);
	CHECK_EQ(_nd_policy_granularity_shift(1 << 30), 18);
	CHECK_EQ(_nd_policy_granularity_shift((uint64_t)2 << 30), -1);
	CHECK_EQ(_nd_policy_granularity_shift((uint64_t)1 << 40), -1);

	/* NODALLOC_POLICY at init: a bad value is reported by name, local stays */
	CHECK(pipe(pipefd) == 0);
	char fdbuf[16];
	snprintf(fdbuf, sizeof fdbuf, "%d", pipefd[1]);
	CHECK(_nd_opt_set("msg_fd", fdbuf) == 0);
	CHECK(_nd_opt_set("policy", "interleave:0-3@3M") == 0);
	CHECK(_nd_policy_init() == 0);
	drain();
	CHECK(strstr(msgs, "nodalloc: error: NODALLOC_POLICY: policy 'interleave:0-3@3M': granularity '3M'") != NULL,
	      "got: %s", msgs);
	CHECK(strstr(msgs, "stays local") != NULL, "got: %s", msgs);
	nd_get_default_policy(&q);
	CHECK_EQ(q.mode, ND_POLICY_LOCAL);
	CHECK(_nd_policy_is_local());

	CHECK(_nd_opt_set("policy", "weighted:0=3,1=1@64K") == 0);
	CHECK(_nd_policy_init() == 0);
	nd_get_default_policy(&q);
	CHECK(nd_policy_format(&q, buf, sizeof buf) > 0);
	CHECK_STR(buf, "weighted:0=3,1=1@64K");
	CHECK(!_nd_policy_is_local());
	CHECK_EQ(_nd_policy_current()->mode, ND_POLICY_WEIGHTED);
	return CHECK_DONE();
}
