// SPDX-License-Identifier: MIT
/* Node sets: bit operations and numactl's list syntax, under an emulated
 * topology with a memoryless node (4) and a gap-free id space 0-4. */
#include <string.h>

#include "check.h"
#include "internal.h"

#define SPEC                                                                                   \
	"0:cpus=0-1,mem=64M; 1:cpus=2-3,mem=64M; 2:cpus=4-5,mem=64M; 3:mem=64M; 4:cpus=6,mem=0; " \
	"distance: 0-1=20,0-2=30,0-3=40,1-2=25,1-3=35,2-3=22,4-0=15,4-1=26,4-2=33,4-3=44"

static nd_nodemask_t m;
static char err[256];

/* The set as a string of node ids, e.g. "0 1 3". */
static const char *members(const nd_nodemask_t *s)
{
	static char out[256];
	size_t k = 0;
	out[0] = '\0';
	for (int n = 0; n < ND_MAX_NODES; n++)
		if (nd_nodemask_isset(s, n))
			k += (size_t)snprintf(out + k, sizeof out - k, "%s%d", k ? " " : "", n);
	return out;
}

static int parse(const char *s)
{
	err[0] = '\0';
	return nd_nodemask_parse(s, &m, err, sizeof err);
}

#define BAD(str, msg)                                                                  \
	do {                                                                           \
		CHECK(parse(str) == -1, "'%s' accepted", str);                         \
		CHECK(strstr(err, msg) != NULL, "'%s': got \"%s\", want \"%s\"", str, err, msg); \
	} while (0)

int main(void)
{
	/* bit operations, including the ends of the id space */
	nd_nodemask_zero(&m);
	CHECK_EQ(nd_nodemask_count(&m), 0);
	nd_nodemask_set(&m, 0);
	nd_nodemask_set(&m, 63);
	nd_nodemask_set(&m, 64);
	nd_nodemask_set(&m, ND_MAX_NODES - 1);
	nd_nodemask_set(&m, ND_MAX_NODES); /* out of range: ignored */
	nd_nodemask_set(&m, -1);
	CHECK_EQ(nd_nodemask_count(&m), 4);
	CHECK(nd_nodemask_isset(&m, 63) && nd_nodemask_isset(&m, 64) && !nd_nodemask_isset(&m, 62));
	CHECK(nd_nodemask_isset(&m, ND_MAX_NODES - 1));
	CHECK(!nd_nodemask_isset(&m, ND_MAX_NODES) && !nd_nodemask_isset(&m, -5));
	nd_nodemask_set(&m, 63); /* idempotent */
	CHECK_EQ(nd_nodemask_count(&m), 4);

	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);

	/* good lists */
	CHECK(parse("0-3") == 0, "%s", err);
	CHECK_STR(members(&m), "0 1 2 3");
	CHECK(parse("3,1") == 0, "%s", err);
	CHECK_STR(members(&m), "1 3");
	CHECK(parse("0-1,3") == 0, "%s", err);
	CHECK_STR(members(&m), "0 1 3");
	CHECK(parse("2") == 0 && nd_nodemask_count(&m) == 1 && nd_nodemask_isset(&m, 2));
	CHECK(parse("1-1") == 0);
	CHECK_STR(members(&m), "1");
	CHECK(parse("all") == 0, "%s", err);
	CHECK_STR(members(&m), "0 1 2 3"); /* memoryless node 4 is not in "all" */
	CHECK(parse("!1") == 0, "%s", err);
	CHECK_STR(members(&m), "0 2 3");
	CHECK(parse("!0-1") == 0, "%s", err);
	CHECK_STR(members(&m), "2 3");
	CHECK(parse("!0,3") == 0, "%s", err);
	CHECK_STR(members(&m), "1 2");

	/* bad lists: the bad part is named, with its 1-based position */
	BAD("1,7x", "node list: '7x' at position 3 is not a node number");
	BAD("x", "'x' at position 1 is not a node number");
	BAD("0-x", "'0-x' at position 1 is not a node number or range");
	BAD("0,-1", "'-1' at position 3 is not a node number");
	BAD("3-1", "range '3-1' at position 1 is reversed");
	BAD("0,,1", "empty entry at position 3");
	BAD("0,", "empty entry at position 3");
	BAD("", "empty node list at position 1");
	BAD("!", "empty node list at position 2");
	BAD("7", "node 7 (at position 1) does not exist (nodes 0-4)");
	BAD("0,5-9", "node 5 (at position 3) does not exist");
	BAD("0,2-9", "node 4 (at position 3) has no memory");
	BAD("99999999999", "is not a node number");
	BAD("4", "node 4 (at position 1) has no memory");
	BAD("3-4", "node 4 (at position 1) has no memory");
	BAD("!all", "'!all' selects no memory node");
	BAD("!0-3", "selects no memory node");
	BAD("+0-1", "relative node lists ('+' at position 1) are not supported");
	BAD(" 1", "' 1' at position 1 is not a node number");
	BAD("alll", "'alll' at position 1 is not a node number");

	/* a failed parse reports into err even when it is tiny, without overflow */
	char small[8];
	memset(small, 'Z', sizeof small);
	CHECK(nd_nodemask_parse("9", &m, small, 4) == -1);
	CHECK(small[3] == '\0' && small[4] == 'Z');
	CHECK(nd_nodemask_parse("9", &m, NULL, 0) == -1);
	return CHECK_DONE();
}
