// SPDX-License-Identifier: MIT
/* Large tables on an emulated four-node machine (4 x 24 MiB): sizing from
 * the nodes' memory, the even spread measured page by page with
 * nd_node_of, local placement, zero-fill of reused memory, the report
 * line, and the halving fallback when a table does not fit. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define SPEC "0-3: ncpus=1 mem=24M"
#define NN 4

static int pipefd[2];
static char msgs[65536];
static int fcntl_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}
static void drain(void)
{
	ssize_t n = read(pipefd[0], msgs, sizeof msgs - 1);
	msgs[n > 0 ? n : 0] = '\0';
}

/* Per-node bytes by walking every page with the public nd_node_of (not
 * through nd_table_node_bytes, which the test also checks). */
static void walk(const nd_table_t *t, uint64_t *per)
{
	for (int i = 0; i < NN; i++)
		per[i] = 0;
	for (size_t off = 0; off < t->bytes; off += 4096) {
		int n = nd_node_of((char *)t->base + off);
		CHECK(n >= 0 && n < NN, "page %zu: node %d", off / 4096, n);
		if (n >= 0 && n < NN)
			per[n] += t->bytes - off < 4096 ? t->bytes - off : 4096;
	}
}

static void spread_even(void)
{
	/* Dentry-like from memory: 96 MiB = 24576 pages >> 1 = 12288 ->
	 * 16384 entries, 128 KiB: 32 KiB per node, in one 32 KiB granule
	 * each (the largest granule that is even). */
	nd_table_desc_t d = { .name = "Dentry cache", .bucket_size = 8, .scale = 13, .flags = ND_TABLE_ZERO };
	nd_table_t t;
	CHECK(nd_table_alloc(&d, &t) == 0, "errno %d", errno);
	CHECK_EQ(t.entries, 16384);
	CHECK_EQ(t.shift, 14);
	CHECK_EQ(t.mask, 16383);
	CHECK_EQ(t.bytes, 128 * KiB);
	CHECK_EQ(t.wanted, 16384);
	CHECK_EQ(t.flags, ND_TABLE_ZERO | ND_TABLE_DISTRIBUTE);
	CHECK_EQ(t.granule_shift, 3);
	CHECK_STR(t.name, "Dentry cache");
	uint64_t per[NN], via[NN + 4];
	walk(&t, per);
	CHECK_EQ(nd_table_node_bytes(&t, via, NN + 4), NN);
	for (int i = 0; i < NN; i++) {
		CHECK_EQ(per[i], 32 * KiB);
		CHECK_EQ(via[i], per[i]);
	}
	const uint64_t *w = t.base;
	uint64_t acc = 0;
	for (uint64_t i = 0; i < t.entries; i++)
		acc |= w[i];
	CHECK_EQ(acc, 0);
	char line[256];
	nd_table_format(&t, line, sizeof line);
	CHECK_STR(line, "Dentry cache hash table entries: 16384 (order: 5, 131072 bytes, spread over nodes 0-3: "
			"32768 bytes each)");
	/* The verbose report goes through the message path. */
	CHECK(_nd_opt_set("verbose", "1") == 0);
	nd_table_t t2;
	nd_table_desc_t d2 = { .name = "Inode-cache", .bucket_size = 8, .scale = 14 };
	CHECK(nd_table_alloc(&d2, &t2) == 0);
	drain();
	CHECK(strstr(msgs, "nodalloc: Inode-cache hash table entries: 8192 (order: 4, 65536 bytes, spread over nodes "
			   "0-3: 16384 bytes each)\n") != NULL,
	      "got: %s", msgs);
	CHECK(_nd_opt_set("verbose", "0") == 0);
	nd_table_free(&t2);
	CHECK(t2.base == NULL);
	nd_table_free(&t);

	/* A given count is capped at 1/16 of memory too (96 MiB / 16 / 8 =
	 * 786432 -> 2^19), unless high_limit says otherwise. */
	nd_table_desc_t big = { .name = "big", .bucket_size = 8, .entries = (uint64_t)1 << 22 };
	CHECK(nd_table_alloc(&big, &t) == 0);
	CHECK_EQ(t.entries, (uint64_t)1 << 19);
	CHECK_EQ(t.wanted, (uint64_t)1 << 19);
	nd_table_free(&t);
	/* 32 MiB (2^22 entries): 2 MiB granules (huge pages), 8 MiB each;
	 * the run is 2 MiB aligned so each granule can be one huge page. */
	big.high_limit = (uint64_t)1 << 22;
	CHECK(nd_table_alloc(&big, &t) == 0);
	CHECK_EQ(t.entries, (uint64_t)1 << 22);
	CHECK_EQ(t.granule_shift, 9);
	CHECK_EQ((uintptr_t)t.base & (ND_HUGE_SIZE - 1), 0);
	walk(&t, per);
	for (int i = 0; i < NN; i++)
		CHECK_EQ(per[i], 8 * MiB);
	/* Granule by granule: node of granule g is the g-th in turn. */
	int n0 = nd_node_of(t.base);
	for (uint64_t g = 0; g < 16; g++)
		CHECK_EQ(nd_node_of((char *)t.base + g * 2 * MiB), (n0 + (int)g) % NN);
	nd_table_free(&t);

	/* Not a power-of-two bucket: 24-byte buckets x 4096 = 96 KiB = 24
	 * pages over 4 nodes: 6 pages each at 8 KiB granules. */
	nd_table_desc_t odd = { .name = "odd", .bucket_size = 24, .entries = 4000 };
	CHECK(nd_table_alloc(&odd, &t) == 0);
	CHECK_EQ(t.entries, 4096);
	CHECK_EQ(t.bytes, 96 * KiB);
	walk(&t, per);
	uint64_t lo = per[0], hi = per[0];
	for (int i = 1; i < NN; i++) {
		lo = per[i] < lo ? per[i] : lo;
		hi = per[i] > hi ? per[i] : hi;
	}
	CHECK(hi - lo <= ((uint64_t)4096 << t.granule_shift), "lo %llu hi %llu", (unsigned long long)lo,
	      (unsigned long long)hi);
	CHECK(20 * hi <= 21 * lo);
	nd_table_free(&t);
}

static void small_tables_rotate(void)
{
	/* Tables of fewer pages than nodes go one page per node, starting
	 * where the last small table stopped, so they add up evenly. */
	uint64_t sum[NN] = { 0 }, per[NN];
	nd_table_t t[4];
	for (int i = 0; i < 4; i++) {
		nd_table_desc_t d = { .name = "small", .bucket_size = 8, .entries = 1024 }; /* 2 pages */
		CHECK(nd_table_alloc(&d, &t[i]) == 0);
		CHECK_EQ(t[i].bytes, 8 * KiB);
		walk(&t[i], per);
		for (int n = 0; n < NN; n++)
			sum[n] += per[n];
	}
	for (int n = 0; n < NN; n++)
		CHECK_EQ(sum[n], 8 * KiB);
	char line[256];
	nd_table_format(&t[0], line, sizeof line);
	CHECK(strstr(line, "4096 bytes each") != NULL, "%s", line);
	for (int i = 0; i < 4; i++)
		nd_table_free(&t[i]);
}

static void local_and_zero(void)
{
	/* Local: on the caller's memory node (CPU 2 is node 2's). */
	nd_emulate_cpu(2);
	nd_table_desc_t d = { .name = "local", .bucket_size = 8, .entries = 65536, .flags = ND_TABLE_LOCAL };
	nd_table_t t;
	CHECK(nd_table_alloc(&d, &t) == 0);
	CHECK_EQ(t.flags, ND_TABLE_LOCAL);
	uint64_t per[NN];
	walk(&t, per);
	CHECK_EQ(per[2], 512 * KiB);
	CHECK_EQ(per[0] + per[1] + per[3], 0);
	char line[256];
	nd_table_format(&t, line, sizeof line);
	CHECK_STR(line, "local hash table entries: 65536 (order: 7, 524288 bytes, local on node 2)");
	nd_table_free(&t);

	/* Zero-fill of memory the arena had handed out before: dirty a
	 * small local run, free it, and ask for a zeroed one of the same
	 * size on the same node (the arena gives the same pages back). */
	nd_table_desc_t z = { .name = "z", .bucket_size = 8, .entries = 2048, .flags = ND_TABLE_LOCAL };
	CHECK(nd_table_alloc(&z, &t) == 0);
	void *first = t.base;
	memset(t.base, 0xa5, t.bytes);
	nd_table_free(&t);
	z.flags |= ND_TABLE_ZERO;
	CHECK(nd_table_alloc(&z, &t) == 0);
	CHECK(t.base == first, "the arena did not reuse the run (%p, %p): the check below is weaker", t.base,
	      first);
	const unsigned char *b = t.base;
	size_t nonzero = 0;
	for (size_t i = 0; i < t.bytes; i++)
		nonzero += b[i] != 0;
	CHECK_EQ(nonzero, 0);
	nd_table_free(&t);
	nd_emulate_cpu(-1);
}

static void halving(void)
{
	/* 2^28 entries of 8 bytes (2 GiB) on 96 MiB of memory: halved until
	 * it fits. Spread: 64 MiB (16 MiB on each 24 MiB node); 128 MiB
	 * would not fit. */
	nd_table_desc_t d = { .name = "huge", .bucket_size = 8, .entries = (uint64_t)1 << 28,
			      .high_limit = (uint64_t)1 << 28 };
	nd_table_t t;
	drain();
	/* the reduction is visible in t; its line is an info under verbose */
	CHECK(_nd_opt_set("verbose", "1") == 0);
	CHECK(nd_table_alloc(&d, &t) == 0, "errno %d", errno);
	CHECK(_nd_opt_set("verbose", "0") == 0);
	CHECK_EQ(t.wanted, (uint64_t)1 << 28);
	CHECK_EQ(t.entries, (uint64_t)1 << 23);
	CHECK_EQ(t.bytes, 64 * MiB);
	uint64_t per[NN];
	walk(&t, per);
	for (int i = 0; i < NN; i++)
		CHECK_EQ(per[i], 16 * MiB);
	char line[256];
	nd_table_format(&t, line, sizeof line);
	CHECK_STR(line, "huge hash table entries: 8388608 (order: 14, 67108864 bytes, spread over nodes 0-3: "
			"16777216 bytes each; reduced from 268435456)");
	drain();
	CHECK(strstr(msgs, "nodalloc: info: huge hash table reduced to 8388608 entries (wanted 268435456)") !=
		      NULL,
	      "got: %s", msgs);

	/* Local, with 16 MiB of each node taken by the table above: 8 MiB
	 * left per node, so 8 MiB (2^20 entries) on one node, or 4 MiB if
	 * the program's own malloc took a few pages of that node. */
	nd_table_desc_t l = d;
	l.flags = ND_TABLE_LOCAL;
	nd_table_t u;
	CHECK(nd_table_alloc(&l, &u) == 0);
	CHECK(u.entries == (uint64_t)1 << 20 || u.entries == (uint64_t)1 << 19, "entries %llu",
	      (unsigned long long)u.entries);
	walk(&u, per);
	int on = 0;
	for (int i = 0; i < NN; i++)
		on += per[i] != 0;
	CHECK_EQ(on, 1);
	nd_table_free(&u);
	nd_table_free(&t);

	/* Sizing from memory respects the 1/16 cap: 96 MiB / 16 = 6 MiB ->
	 * 2^19 entries of 8 bytes (4 MiB) at scale 0. */
	nd_table_desc_t m = { .name = "capped", .bucket_size = 8, .scale = 0 };
	CHECK(nd_table_alloc(&m, &t) == 0);
	CHECK_EQ(t.entries, (uint64_t)1 << 19);
	CHECK_EQ(t.wanted, t.entries);
	nd_table_free(&t);

	/* More than all memory with a one-page table floor: a bucket of
	 * 128 MiB cannot be had at all: ENOMEM, nothing reported. */
	nd_table_desc_t no = { .name = "none", .bucket_size = 128 * MiB, .entries = 1 };
	errno = 0;
	CHECK(nd_table_alloc(&no, &t) == -1 && errno == ENOMEM);
	CHECK(t.base == NULL);
}

static void node_full(void)
{
	/* Node 1 nearly full (20 of its 24 MiB taken): a 32 MiB table still
	 * comes whole (the full node's granules go to other nodes, as the
	 * kernel's interleaved vmalloc does), and the report shows the
	 * uneven split instead of claiming an even one. */
	void *hog = _nd_page_alloc_exact(1, (20 * MiB) >> ND_PAGE_SHIFT, 1);
	CHECK(hog != NULL);
	nd_table_desc_t d = { .name = "crowded", .bucket_size = 8, .entries = (uint64_t)1 << 22,
			      .high_limit = (uint64_t)1 << 22 };
	nd_table_t t;
	CHECK(nd_table_alloc(&d, &t) == 0);
	CHECK_EQ(t.entries, (uint64_t)1 << 22);
	uint64_t per[NN], sum = 0;
	walk(&t, per);
	for (int i = 0; i < NN; i++)
		sum += per[i];
	CHECK_EQ(sum, 32 * MiB);
	CHECK(per[1] <= 4 * MiB, "node 1 got %llu", (unsigned long long)per[1]);
	char line[256];
	nd_table_format(&t, line, sizeof line);
	/* "... spread over nodes 0-3: MIN-MAX bytes each)" with the
	 * measured extremes. */
	uint64_t lo = per[0], hi = per[0];
	for (int i = 1; i < NN; i++) {
		lo = per[i] < lo ? per[i] : lo;
		hi = per[i] > hi ? per[i] : hi;
	}
	char want[128];
	snprintf(want, sizeof want, "spread over nodes 0-3: %llu-%llu bytes each)", (unsigned long long)lo,
		 (unsigned long long)hi);
	CHECK(lo < hi && strstr(line, want) != NULL, "%s (want %s)", line, want);
	printf("%s\n", line);
	nd_table_free(&t);
	CHECK(_nd_page_free(hog) == 0);
}

static void node_set(void)
{
	/* Spread over nodes 1 and 3 only (sized from all 96 MiB: 16384
	 * entries, 128 KiB, 64 KiB on each of the two). */
	nd_nodemask_t m;
	nd_nodemask_zero(&m);
	nd_nodemask_set(&m, 1);
	nd_nodemask_set(&m, 3);
	nd_nodemask_set(&m, 7); /* no such node: skipped */
	nd_table_desc_t d = { .name = "two", .bucket_size = 8, .scale = 13, .nodes = &m };
	nd_table_t t;
	CHECK(nd_table_alloc(&d, &t) == 0);
	CHECK_EQ(t.entries, 16384);
	uint64_t per[NN];
	walk(&t, per);
	CHECK(per[0] == 0 && per[2] == 0 && per[1] == 64 * KiB && per[3] == 64 * KiB);
	char line[256];
	nd_table_format(&t, line, sizeof line);
	CHECK(strstr(line, "spread over nodes 1,3: 65536 bytes each)") != NULL, "%s", line);
	nd_table_free(&t);
	/* One node in the set: the whole table there, wherever the caller
	 * runs. */
	nd_nodemask_zero(&m);
	nd_nodemask_set(&m, 2);
	nd_emulate_cpu(0);
	CHECK(nd_table_alloc(&d, &t) == 0);
	walk(&t, per);
	CHECK(per[2] == 128 * KiB && per[0] + per[1] + per[3] == 0);
	nd_table_free(&t);
	nd_emulate_cpu(-1);
	/* A set without memory nodes, or with LOCAL: named errors. */
	nd_nodemask_zero(&m);
	nd_nodemask_set(&m, 9);
	errno = 0;
	drain();
	CHECK(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	drain();
	CHECK(msgs[0] == '\0', "printed by default: %s", msgs); /* issue 14 */
	CHECK(_nd_opt_set("verbose", "1") == 0);
	CHECK(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	nd_nodemask_set(&m, 0);
	d.flags = ND_TABLE_LOCAL;
	errno = 0;
	CHECK(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	drain();
	CHECK(strstr(msgs, "nd_table_alloc(two): nodes holds no node with memory") != NULL &&
		      strstr(msgs, "nd_table_alloc(two): nodes is for spread tables") != NULL,
	      "got: %s", msgs);
	CHECK(_nd_opt_set("verbose", "0") == 0);
}

/* Threads allocating, filling, checking and freeing tables at once: no
 * two live tables share memory, and every table stays spread. */
static int thread_errors;
static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	for (int round = 0; round < 30; round++) {
		nd_table_desc_t d = { .name = "churn", .bucket_size = 8,
				      .entries = (uint64_t)4096 << (round % 4) }; /* 32 KiB .. 256 KiB */
		nd_table_t t;
		if (nd_table_alloc(&d, &t) != 0) {
			__atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		uint64_t *w = t.base;
		for (uint64_t i = 0; i < t.entries; i++)
			w[i] = (id << 56) | i;
		sched_yield();
		for (uint64_t i = 0; i < t.entries; i++)
			if (w[i] != ((id << 56) | i)) {
				__atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
				break;
			}
		uint64_t per[NN];
		if (nd_table_node_bytes(&t, per, NN) != NN)
			__atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
		for (int n = 0; n < NN; n++)
			if (per[n] != t.bytes / NN)
				__atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
		nd_table_free(&t);
	}
	return NULL;
}

static void threads(void)
{
	pthread_t th[4];
	for (uintptr_t i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, churn, (void *)(i + 1)) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(thread_errors, 0);
}

static void bad_free(void)
{
	nd_table_t t = { 0 };
	nd_table_free(&t); /* nothing allocated: a no-op */
	nd_table_free(NULL);
	static char not_a_table[4096];
	t.base = not_a_table;
	snprintf(t.name, sizeof t.name, "fake");
	drain();
	errno = 0;
	nd_table_free(&t);
	CHECK_EQ(errno, EINVAL);
	drain();
	CHECK(msgs[0] == '\0', "printed by default: %s", msgs); /* issue 14 */
	CHECK(_nd_opt_set("verbose", "1") == 0);
	nd_table_free(&t);
	drain();
	CHECK(strstr(msgs, "nd_table_free(fake)") != NULL, "got: %s", msgs);
	CHECK(_nd_opt_set("verbose", "0") == 0);
}

int main(void)
{
	/* Emulate first (before the page level commits to a topology). */
	char err[256];
	if (nd_topology_emulate(SPEC, err, sizeof err) != 0) {
		/* Too late in this process: run again with the variable set. */
		if (getenv("NODALLOC_TOPOLOGY")) {
			fprintf(stderr, "cannot emulate: %s\n", err);
			return 1;
		}
		setenv("NODALLOC_TOPOLOGY", SPEC, 1);
		execv("/proc/self/exe", (char *[]){ "test_table_spread", NULL });
		perror("execv");
		return 1;
	}
	CHECK(pipe(pipefd) == 0);
	char fdbuf[16];
	snprintf(fdbuf, sizeof fdbuf, "%d", pipefd[1]);
	CHECK(_nd_opt_set("msg_fd", fdbuf) == 0);
	/* Non-blocking reads so drain() never waits. */
	CHECK(fcntl_nonblock(pipefd[0]) == 0);
	spread_even();
	small_tables_rotate();
	local_and_zero();
	halving();
	node_full();
	node_set();
	threads();
	bad_free();
	return CHECK_DONE();
}
