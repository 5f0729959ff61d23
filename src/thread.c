// SPDX-License-Identifier: MIT
/*
 * The thread record (internal.h, "src/thread.c"): every layer's
 * per-thread state in one block per thread, reached through the library's
 * only initial-exec TLS variable, one pointer. Kilobytes of initial-exec
 * TLS make dlopen fail ("cannot allocate memory in static TLS block"); a
 * pointer fits in the surplus glibc keeps for such libraries.
 *
 * Records are carved from mmap'd chunks, never unmapped (another thread
 * may still store NONE into a key of a record whose thread has exited),
 * pooled at thread exit and reused. A thread without a record points at
 * a read-only record (boot, or gone past its exit): readers need no test,
 * writers go through _nd_thread_self(), which makes the record. A free
 * makes one too, but only for a boot thread and without waiting for the
 * lock (_nd_thread_make_free).
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"

static const uint64_t zero64;
_nd_thread_t *_nd_thread_main;

/* The record's xrow for lg 5..ND_XLG_ROW: xrows[lg - 5][s] is the class
 * of s rounded up to 2^lg (s 0: 2^lg), sizes up to ND_SLAB_DIRECT
 * (nd_thread.h's ND_SCLS; test_place_fast checks every size and lg). */
#define XR(L, s) ND_SCLS((s) == 0 ? (1 << (L)) : ((((s) - 1) | ((1 << (L)) - 1)) + 1))
#define XR4(L, s) XR(L, s), XR(L, (s) + 1), XR(L, (s) + 2), XR(L, (s) + 3)
#define XR16(L, s) XR4(L, s), XR4(L, (s) + 4), XR4(L, (s) + 8), XR4(L, (s) + 12)
#define XR64(L, s) XR16(L, s), XR16(L, (s) + 16), XR16(L, (s) + 32), XR16(L, (s) + 48)
#define XROW(L) { XR64(L, 0), XR64(L, 64), XR64(L, 128), XR64(L, 192), XR(L, 256) }
_Static_assert(ND_XLG_ROW == 8, "xrows holds the rows of lg 5 to 8");
static const uint8_t xrows[ND_XLG_ROW - 4][ND_SLAB_DIRECT + 1] = { XROW(5), XROW(6), XROW(7), XROW(8) };
#define XROW_INIT                                                                                                \
	{ _nd_thread_boot.scls, _nd_thread_boot.scls, _nd_thread_boot.scls, _nd_thread_boot.scls,               \
	  _nd_thread_boot.scls, xrows[0], xrows[1], xrows[2], xrows[3] }

/* _nd_thread_noheap's slab: free NULL, so a pop finds nothing and writes
 * nothing (const: a write would fault). */
static const _nd_slab_hot_t noslab;
#define NOSLAB ((_nd_slab_hot_t *)(void *)&noslab)
_nd_heap_hot_t _nd_thread_noheap = { .il_gran = 1, .cur = { [0 ... ND_SLAB_CLASSES - 1] = NOSLAB } };

#define BOOT_INIT                                                              \
	{ .cpu64 = &zero64, .ilheap = &_nd_thread_noheap, .key = ND_KEY_NONE, .lkey = ND_KEY_NONE, .il_node = -1, \
	  .bw_key = ND_BW_KEY_NONE, \
	  .cpu_override = -1, .pc = { [0 ... ND_PCACHE - 1] = { .key = ND_KEY_NONE, .user = ND_PC_NOUSER, .fix = ND_PC_NOUSER, .kuser = ND_PC_NOUSER } },     \
	  .xmask = ND_XMASK_INIT, .xrow = XROW_INIT, .scls = ND_SCLS_INIT }

const _nd_thread_t _nd_thread_boot = BOOT_INIT;
/* gone is boot's copy, made at the first release under thread_lock,
 * before any thread points at it (each points at it in its own release,
 * under the lock after the copy): a constant copy sat
 * in .data.rel.ro, two of its four pages, written by their relocations in
 * every process (issue 11). Page-aligned: that copy writes one page. */
ND_BIG_TABLE _nd_thread_gone_t _nd_thread_gone;
static bool gone_made; /* thread_lock */
ND_TLS _nd_thread_t *_nd_tls = (_nd_thread_t *)&_nd_thread_boot;

/* Protects pool, all, chunk carving and the key's creation. Taken with at
 * most the policy locks held (internal.h, "Lock order"). */
ND_LOCK_DEFINE(thread_lock, ND_RANK_THREAD);
static _nd_thread_t *pool;  /* records of exited threads */
static _nd_thread_t *all;   /* every record (append only, never freed) */
/* each record's large-run cache lock (nd_thread.h): fork takes them all,
 * walking all under thread_lock (which carve holds to add one) */
ND_LOCK_LIST(lblk_lock_class, &all, _nd_thread_t, lblk_lock, all_next, ND_RANK_THREAD_LBLK);
static char *chunk_cur, *chunk_end;
static pthread_key_t key;
static bool have_key;
static void (*exit_hook)(_nd_thread_t *);
static void (*exit_first)(_nd_thread_t *); /* large.c's: runs before exit_hook */

#define CHUNK_BYTES ((size_t)64 << 10)

static void destructor(void *arg);

/* A fresh record's state (also for a pooled one, except the slab layer's
 * heap array, which it keeps with its bounds and the record's own part,
 * nheap: its entries are the empty heap after the exit hook; nfast too,
 * or the node calls' fast path would stay off in a reused record). The
 * second page (nd_thread.h) is left alone in a fresh record (a chunk's
 * memory is zero) and zeroed only where it is not in a pooled one: a
 * thread that never uses it leaves it out of the resident pages. */
static void reset(_nd_thread_t *t, bool fresh)
{
	struct nd_heap **heaps = t->heaps, *nheap[ND_NHEAP_IN];
	int nheaps = t->nheaps, nbig = t->nbig;
	int64_t nfast = t->nfast;
	_nd_thread_t *all_next = t->all_next;
	memcpy(nheap, t->nheap, sizeof nheap);
	memcpy(t, &_nd_thread_boot, ND_THREAD_PAGE1); /* BOOT_INIT: no third copy in .data.rel.ro */
	uint64_t *w = (uint64_t *)(void *)((char *)t + ND_THREAD_PAGE1);
	for (size_t i = 0; !fresh && i < (sizeof *t - ND_THREAD_PAGE1) / sizeof *w; i++)
		if (w[i])
			w[i] = 0;
	t->heaps = heaps;
	t->nheaps = nheaps;
	t->nfast = nfast;
	t->nbig = nbig;
	memcpy(t->nheap, nheap, sizeof nheap);
	t->all_next = all_next;
}

/* The record (locked: thread_lock), from the pool or a chunk, reset under
 * the lock (_nd_thread_each's statistics read its counters); NULL if no
 * memory. */
static _nd_thread_t *carve(void)
{
	if (!have_key && pthread_key_create(&key, destructor) == 0)
		have_key = true;
	_nd_thread_t *t = pool;
	if (t) {
		pool = t->pool_next;
		reset(t, false);
		return t;
	}
	/* page-aligned in the (mmap'd, zero) chunk: a record's first page
	 * is its own (nd_thread.h) */
	size_t sz = ND_ALIGN_UP(sizeof(_nd_thread_t), ND_PAGE_SIZE);
	if ((size_t)(chunk_end - chunk_cur) < sz) {
		int err;
		char *c = _nd_os_mmap(CHUNK_BYTES, false, &err);
		if (c) {
			chunk_cur = c;
			chunk_end = c + CHUNK_BYTES;
		}
	}
	if ((size_t)(chunk_end - chunk_cur) < sz)
		return NULL;
	t = (_nd_thread_t *)(void *)chunk_cur;
	chunk_cur += sz;
	t->all_next = all;
	reset(t, true);
	__atomic_store_n(&all, t, __ATOMIC_RELEASE);
	return t;
}

static _nd_thread_t *attach(_nd_thread_t *t)
{
	if (!t)
		return NULL;
	if (_nd_os_gettid() == _nd_os_getpid()) /* two calls a record: not on a fast path */
		__atomic_store_n(&_nd_thread_main, t, __ATOMIC_RELAXED);
	_nd_tls = t;
	if (have_key)
		pthread_setspecific(key, t);
	return t;
}

_nd_thread_t *_nd_thread_make(void)
{
	_nd_thread_t *t = _nd_tls;
	if (!_nd_thread_none(t))
		return t;
	_nd_lock(&thread_lock);
	t = carve();
	_nd_unlock(&thread_lock);
	return attach(t);
}

_nd_thread_t *_nd_thread_make_free(void)
{
	_nd_thread_t *t = _nd_tls;
	if (t != &_nd_thread_boot)
		return _nd_thread_none(t) ? NULL : t;
	if (!_nd_trylock(&thread_lock))
		return NULL;
	t = carve();
	_nd_unlock(&thread_lock);
	return attach(t);
}

uint64_t _nd_thread_life(_nd_thread_t *t)
{
	static uint64_t lives; /* atomic: the last life given */
	if (!t->life)
		t->life = __atomic_add_fetch(&lives, 1, __ATOMIC_RELAXED);
	return t->life;
}

void _nd_thread_invalidate(_nd_thread_t *t)
{
	if (_nd_thread_none(t))
		return;
	__atomic_store_n(&t->key, ND_KEY_NONE, __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->lkey, ND_KEY_NONE, __ATOMIC_RELAXED);
	for (int i = 0; i < ND_PCACHE; i++) {
		ND_ASSERT(t->pc[i].user == ND_PC_NOUSER || t->pc[i].lane != t->cpu64, "a user entry has no CPU key");
		if (t->pc[i].user == ND_PC_NOUSER) /* user: no CPU key (heap.c), as fix */
			__atomic_store_n(&t->pc[i].key, ND_KEY_NONE, __ATOMIC_RELAXED);
	}
}

/* The caller bumped the policy generation before (seq_cst); a thread
 * storing a key re-reads the generation after its store (heap.c), so
 * either it sees the new generation or this store lands after its own. */
void _nd_thread_invalidate_all(void)
{
	_nd_lock(&thread_lock);
	for (_nd_thread_t *t = all; t; t = t->all_next)
		__atomic_store_n(&t->key, ND_KEY_NONE, __ATOMIC_SEQ_CST);
	_nd_unlock(&thread_lock);
}

void _nd_thread_each(void (*fn)(_nd_thread_t *t, void *arg), void *arg)
{
	_nd_lock(&thread_lock);
	for (_nd_thread_t *t = all; t; t = t->all_next)
		fn(t, arg);
	_nd_unlock(&thread_lock);
}

void _nd_thread_set_exit_hook(void (*fn)(_nd_thread_t *))
{
	exit_hook = fn;
}

void _nd_thread_set_exit_first(void (*fn)(_nd_thread_t *))
{
	__atomic_store_n(&exit_first, fn, __ATOMIC_RELAXED);
}

static void release(_nd_thread_t *t)
{
	void (*first)(_nd_thread_t *) = __atomic_load_n(&exit_first, __ATOMIC_RELAXED);
	if (first)
		first(t);
	if (exit_hook)
		exit_hook(t);
	_nd_lock(&thread_lock);
	if (!gone_made) {
		memcpy(&_nd_thread_gone.t, &_nd_thread_boot, ND_THREAD_PAGE1); /* the rest is zero in both */
#ifdef ND_DEBUG
		/* never written again (nd_thread.h): debug builds fault on a
		 * write, as on boot's (const) */
		_nd_os_mprotect(&_nd_thread_gone, sizeof _nd_thread_gone, 1 /* PROT_READ */);
#endif
		gone_made = true;
	}
	if (_nd_tls == t) /* before t goes to the pool, where another thread may take it */
		_nd_tls = &_nd_thread_gone.t;
	t->pool_next = pool;
	pool = t;
	_nd_unlock(&thread_lock);
}

/* pthread key destructor (not a TLS destructor, which may call calloc):
 * a malloc after it makes a new record and sets the key again, and glibc
 * then runs this once more (if its rounds are not over: a free after it
 * makes none, as glibc's last frees come after the rounds). */
static void destructor(void *arg)
{
	if (arg)
		release(arg);
}

void _nd_thread_fini(void)
{
	/* dlclose: no destructor may point into the unmapped library */
	if (have_key && pthread_key_delete(key) == 0)
		have_key = false;
}

void _nd_thread_exit_now(void)
{
	_nd_thread_t *t = _nd_tls;
	if (_nd_thread_none(t))
		return;
	if (have_key)
		pthread_setspecific(key, NULL);
	release(t);
}
