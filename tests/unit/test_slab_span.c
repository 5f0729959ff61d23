// SPDX-License-Identifier: MIT
/* Spans (slab.c, issue 11: wl_footprint's peak): after frees left 128 B
 * slabs a quarter full, a malloc of 250 B (class 256, which has no slab)
 * takes two adjacent free 128 B slots instead of fresh pages: its usable
 * size is 256, the kept objects around it stay intact; realloc keeps it
 * in place within its usable size and moves it (contents kept) to grow
 * or to shrink by more than half; the statistics count it as one object;
 * freed by its owner, by nd_free_sized or by another thread, both of its
 * slots serve 128 B mallocs again (the inner one too: the owner's collect
 * ends a span sent home). A failed search skips the heap's next one.
 * Misuse is fatal (a child each): a span freed twice, a free, realloc or
 * malloc_usable_size of its inner slot (by the owner or another thread),
 * and so is a free list whose links were overwritten, met by the span
 * search's walk (into the middle of an object, a kept one's too). Check mode takes no span. A span freed home after its
 * thread exited leaves its slab all remote: the parked heap's trim
 * releases it, and the header's next slab has no stale span bit. A span
 * kept past its thread's exit, freed by the thread that adopted the
 * parked heap, ends (its inner slot's free there is fatal; so is one
 * freed while the heap was parked, at the adopter's collect). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Wuse-after-free"

#include "check.h"
#include "child_fixture.h"
#include "internal.h"
#include "pin_fixture.h"

#define K 2048 /* 128 B objects: 8 slabs of 256 */
static unsigned char *obj[K];
static void *volatile sink;

static size_t slab_size_of(const void *p)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	return d && d->use == ND_USE_SLAB ? ((const _nd_slab_t *)d->user)->size : 0;
}

static uint64_t objects_of(size_t size)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	int n = _nd_slab_class_stats(st, ND_SLAB_CLASSES);
	for (int c = 0; c < n; c++)
		if (st[c].size == size)
			return st[c].objects;
	return 0;
}

/* 128 B slabs a quarter full: objects 4j kept (filled with j's byte),
 * the three after each freed. */
static void make_holes(void)
{
	for (int i = 0; i < K; i++)
		free(obj[i]); /* the last round's */
	for (int i = 0; i < K; i++) {
		obj[i] = malloc(120);
		if (!obj[i])
			abort();
		memset(obj[i], i & 0xff, 120);
	}
	for (int i = 0; i < K; i++)
		if (i % 4) {
			free(obj[i]);
			obj[i] = NULL;
		}
}

static bool kept_intact(void)
{
	for (int i = 0; i < K; i += 4)
		for (int b = 0; b < 120; b++)
			if (obj[i][b] != (unsigned char)(i & 0xff))
				return false;
	return true;
}

static bool holds(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void *free_in_thread(void *p)
{
	free(p);
	return NULL;
}

/* 120 B mallocs until both addresses came back (at most 4 * K), each a
 * 128 B object; then all freed. */
static bool slots_back(const void *a, const void *b)
{
	static void *q[4 * K];
	bool ga = false, gb = false, ok = true;
	int n = 0;
	while (n < 4 * K && !(ga && gb)) {
		void *x = q[n++] = malloc(120);
		ga |= x == a;
		gb |= x == b;
		ok &= x != NULL && ((x != a && x != b) || malloc_usable_size(x) == 128);
	}
	while (n > 0)
		free(q[--n]);
	return ok && ga && gb;
}

/* A thread takes a span, frees every other object of its slab and exits
 * (its heap parks, stamp 0); main frees the span (home). The slab then
 * holds nothing live: a trim of the parked heap releases it, its header
 * (span map kept with it) serving the next slab without the old span's
 * bits. Exit codes: 3 no span, 4 not all remote, 5 a stale bit. */
struct parked {
	unsigned char *p;
	const _nd_slab_t *s;
};

static void *span_then_exit(void *arg)
{
	struct parked *r = arg;
	make_holes();
	r->p = malloc(250);
	if (r->p && slab_size_of(r->p) == 128)
		r->s = (const _nd_slab_t *)_nd_page_desc(r->p)->user;
	for (int i = 0; i < K; i++) {
		free(obj[i]);
		obj[i] = NULL;
	}
	return NULL;
}

/* inner: the span kept (main's) and its inner slot freed instead: not
 * all remote, so the trim keeps the slab, and the collect of whoever
 * takes it reports the misuse (its release would have given back the
 * live span's memory). */
static int parked_case(bool inner)
{
	struct parked r = { NULL, NULL };
	pthread_t t;
	pthread_create(&t, NULL, span_then_exit, &r);
	pthread_join(t, NULL);
	if (!r.s)
		return 3;
	free(inner ? (void *)(L(r.p) + 128) : (void *)r.p); /* home (unchecked): the heap is parked */
	_nd_slab_flush_remote();
	if (!inner && !_nd_slab_all_remote(r.s))
		return 4; /* the span is its one object out, on its remote list */
	/* past a slab of 128 B: a new slab sweeps the pool (dirty), whose
	 * trim releases the span's slab; the next slabs reuse headers */
	static void *q[4 * K];
	int bad = 0;
	for (int i = 0; i < 4 * K; i++)
		q[i] = malloc(120);
	for (int i = 0; i < 4 * K; i++) {
		bad |= malloc_usable_size(q[i]) != 128;
		free(q[i]);
	}
	return bad ? 5 : 0;
}

/* A span kept past its thread's exit, its heap then adopted by a new
 * thread (stamp restored with ND_TP_SPAN): the adopter's free of it ends
 * the span (both slots serve 128 B again); its inner slot's free by the
 * adopter is fatal. Exit codes: 3 no span, 6 not adopted, 7 a slot lost. */
struct adopt {
	unsigned char *p;
	const char *what; /* "free", "inner" */
	int rc;
};

static void *span_keep_exit(void *arg)
{
	struct adopt *r = arg;
	make_holes();
	r->p = malloc(250);
	return NULL;
}

static void *adopt_and_free(void *arg)
{
	struct adopt *r = arg;
	void *x = malloc(120); /* the thread's first: adopts the parked heap */
	const _nd_slab_t *s = (const _nd_slab_t *)_nd_page_desc(r->p)->user;
	if (__atomic_load_n(&s->heap, __ATOMIC_RELAXED) != _nd_tls->heap) {
		r->rc = 6;
		return NULL;
	}
	if (!strcmp(r->what, "inner"))
		free(L(r->p) + 128);
	free(r->p);
	r->rc = slots_back(r->p, r->p + 128) ? 0 : 7;
	free(x);
	return NULL;
}

/* While the heap is parked (stamp 0) every free goes home unchecked:
 * the inner slot, then the span, freed by main; the adopter's collect
 * must report the inner one whatever their order on the remote list
 * (ending the span first cleared its bit and listed the slot twice). */
static void *adopt_collect(void *arg)
{
	(void)arg;
	static void *q[4 * K];
	for (int i = 0; i < 4 * K; i++)
		q[i] = malloc(120);
	for (int i = 0; i < 4 * K; i++)
		free(q[i]);
	return NULL;
}

static int parked_inner_case(void)
{
	struct adopt r = { NULL, "", 0 };
	pthread_t t;
	pthread_create(&t, NULL, span_keep_exit, &r);
	pthread_join(t, NULL);
	if (!r.p || slab_size_of(r.p) != 128)
		return 3;
	free(L(r.p) + 128);
	free(r.p);
	_nd_slab_flush_remote();
	pthread_create(&t, NULL, adopt_collect, NULL);
	pthread_join(t, NULL);
	return 0;
}

static int adopt_case(const char *what)
{
	struct adopt r = { NULL, what, 0 };
	pthread_t t;
	pthread_create(&t, NULL, span_keep_exit, &r);
	pthread_join(t, NULL);
	if (!r.p || slab_size_of(r.p) != 128)
		return 3;
	pthread_create(&t, NULL, adopt_and_free, &r);
	pthread_join(t, NULL);
	return r.rc;
}

/* Each case does one bad thing; returning from it is a failure. */
static int run_case(const char *name)
{
	if (!strcmp(name, "parked"))
		return parked_case(false);
	if (!strcmp(name, "parked_inner_only"))
		return parked_case(true);
	if (!strcmp(name, "parked_inner"))
		return parked_inner_case();
	if (!strcmp(name, "adopt") || !strcmp(name, "adopt_inner"))
		return adopt_case(name[5] ? "inner" : "free");
	make_holes();
	if (!strcmp(name, "corrupt")) {
		/* the links (word 1) of the free slots after each kept object
		 * (carved in order: slots 4j + 1..3) into the middle of an
		 * object */
		for (int i = 0; i < K; i += 4)
			for (int m = 1; m < 4; m++)
				*(void **)(obj[i] + 128 * m + 8) = obj[i] + 8;
		sink = malloc(250);
		return 0;
	}
	if (!strcmp(name, "corrupt_live")) {
		/* the link (word 1) of each free slot 4j + 3 (its slab's list
		 * head is slot 255) into kept object 4j at +8, whose link
		 * there (at +16) points at free slot 4j + 1: an index whose
		 * low 32 bits are 4j, so a walk that tested them alone took
		 * slots 4j, 4j + 1 as a run and handed out the kept object (a
		 * release build returned) */
		for (int i = 0; i < K; i += 4) {
			*(void **)(obj[i] + 128 * 3 + 8) = obj[i] + 8;
			*(void **)(obj[i] + 16) = obj[i] + 128;
		}
		sink = malloc(250);
		for (int i = 0; i < K; i += 4)
			if (sink == obj[i])
				return 8; /* a kept object handed out again */
		return 0;
	}
	char *p = malloc(250);
	if (!p || slab_size_of(p) != 128)
		return 3; /* no span: the case cannot run */
	if (!strcmp(name, "double")) {
		free(p);
		free(L(p));
	} else if (!strcmp(name, "inner")) {
		free(L(p) + 128);
	} else if (!strcmp(name, "inner_remote")) {
		pthread_t t;
		pthread_create(&t, NULL, free_in_thread, L(p) + 128);
		pthread_join(t, NULL);
	} else if (!strcmp(name, "inner_realloc")) {
		sink = realloc(L(p) + 128, 300);
	} else if (!strcmp(name, "inner_usable")) {
		sink = (void *)(uintptr_t)malloc_usable_size(L(p) + 128);
	} else if (!strcmp(name, "check")) {
		return 0; /* check mode: no span, so 3 above */
	} else {
		return 2;
	}
	return 0;
}

static void expect(const char *self, const char *name, const char *msg)
{
	char out[2048];
	char *const av[] = { (char *)self, (char *)name, NULL };
	int st = run_child(self, av, NULL, NULL, false, out, sizeof out);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "case %s: status %d, stderr: %s", name, st, out);
	CHECK(strstr(out, "nodalloc: fatal: ") && strstr(out, msg), "case %s: stderr lacks \"%s\": %s", name, msg, out);
}

int main(int argc, char **argv)
{
	/* each malloc(250) below must reach the refill's span search: a
	 * migration just before one sent it to the slow path, which took a
	 * 256 B slab, and every later one popped from that (a tsan run
	 * under make test's load; pin_fixture.h) */
	pin_here();
	if (argc > 1)
		return run_case(argv[1]);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';

	make_holes();
	uint64_t o128 = objects_of(128), o256 = objects_of(256);
	unsigned char *p = malloc(250);
	CHECK(p != NULL && slab_size_of(p) == 128, "250 B in a slab of %zu B objects", slab_size_of(p));
	CHECK_EQ(malloc_usable_size(p), 256);
	CHECK_EQ(objects_of(128), o128 + 1); /* one object of two slots */
	CHECK_EQ(objects_of(256), o256);
	memset(p, 0xa5, 256);
	CHECK(kept_intact(), "the kept 128 B objects around the span");
	/* in place within its usable size (more than half of it) */
	CHECK(realloc(p, 200) == p);
	CHECK(realloc(p, 256) == p);
	CHECK(holds(p, 256, 0xa5));
	/* grows: moves, contents kept; the span's slots serve 128 B again */
	unsigned char *a = p, *g = realloc(p, 600);
	CHECK(g != NULL && holds(g, 256, 0xa5) && malloc_usable_size(g) >= 600);
	CHECK_EQ(objects_of(128), o128);
	CHECK(slots_back(a, a + 128), "both slots of a span freed by realloc serve 128 B mallocs");
	free(g);

	/* a span freed by its owner, by size, and shrunk by realloc */
	make_holes();
	p = malloc(250);
	CHECK(p != NULL && slab_size_of(p) == 128);
	nd_free_sized(p, 250);
	CHECK(slots_back(p, p + 128), "both slots of a span freed by nd_free_sized");
	make_holes();
	p = malloc(250);
	CHECK(p != NULL && slab_size_of(p) == 128);
	memset(p, 0x3c, 250);
	unsigned char *s = realloc(p, 100);
	CHECK(s != NULL && s != p && holds(s, 100, 0x3c) && malloc_usable_size(s) < 256);
	CHECK(slots_back(p, p + 128), "both slots of a span shrunk by realloc");
	free(s);

	/* freed by another thread: home, where the owner's collect ends it */
	make_holes();
	p = malloc(250);
	CHECK(p != NULL && slab_size_of(p) == 128);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_in_thread, p) == 0);
	pthread_join(t, NULL);
	_nd_slab_flush_remote();
	CHECK(slots_back(p, p + 128), "both slots of a span freed by another thread");
	CHECK(kept_intact(), "the kept 128 B objects");

	/* a failed search skips the heap's next one: 90 B has no donor
	 * class (80 B loses 70), then 250 B takes a span one search later */
	make_holes();
	_nd_heap_t *h = (_nd_heap_t *)_nd_tls->heap;
	h->spskip = 0; /* make_holes' mallocs may have left a skip */
	CHECK(_nd_slab_span_take(h, 90) == NULL);
	CHECK(_nd_slab_span_take(h, 250) == NULL, "the search after a failed one is skipped");
	p = _nd_slab_span_take(h, 250);
	CHECK(p != NULL && slab_size_of(p) == 128 && malloc_usable_size(p) == 256);
	free(p);

	expect(exe, "double", "free(): double free of");
	expect(exe, "inner", "inside a block, not its start");
	expect(exe, "inner_remote", "inside a block, not its start");
	expect(exe, "inner_realloc", "realloc(): invalid pointer");
	expect(exe, "inner_usable", "malloc_usable_size(): invalid pointer");
	expect(exe, "corrupt", "malloc(): corrupted free list in the slab of 128-byte objects");
	expect(exe, "corrupt_live", /* exit 8: the kept object handed out */ "malloc(): corrupted free list in the slab of 128-byte objects");
	char out[2048];
	char *const pav[] = { exe, "parked", NULL };
	int pst = run_child(exe, pav, NULL, NULL, false, out, sizeof out);
	CHECK(WIFEXITED(pst) && WEXITSTATUS(pst) == 0,
	      "a span freed home after its thread exited: status %d (exit 4: its slab not all remote, 5: a stale span bit), "
	      "stderr: %s",
	      pst, out);
	char *const aav[] = { exe, "adopt", NULL };
	pst = run_child(exe, aav, NULL, NULL, false, out, sizeof out);
	CHECK(WIFEXITED(pst) && WEXITSTATUS(pst) == 0,
	      "a span freed by the thread that adopted its heap: status %d (exit 6: not adopted, 7: a slot lost), "
	      "stderr: %s",
	      pst, out);
	expect(exe, "adopt_inner", "inside a block, not its start");
	expect(exe, "parked_inner", "inside a block, not its start");
	expect(exe, "parked_inner_only", "inside a block, not its start");
	char *const av[] = { exe, "check", NULL };
	int st = run_child(exe, av, "NODALLOC_CHECK", "1", false, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3, "check mode took a span: status %d", st); /* run_case's 3 */
	return CHECK_DONE();
}
