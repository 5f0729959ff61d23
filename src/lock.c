// SPDX-License-Identifier: MIT
/*
 * The library's lock, and the registry of every lock.
 *
 * Lock: spin briefly, then sleep on a futex (Drepper's "mutex 2"); no
 * allocation, resettable by a store (fork child).
 *
 * Registry: every lock of the library is declared with ND_LOCK_DEFINE,
 * ND_LOCK_ARRAY, ND_LOCK_DYN_ARRAY, ND_LOCK_FIELD or ND_LOCK_LIST (nd_lock.h), which puts a descriptor in the linker
 * section nd_lock_classes. The fork handlers are built from that section
 * alone: prepare takes every lock in rank order (internal.h, "Lock
 * order"), the parent releases them in reverse, the child (one thread)
 * resets them all. A counted array's element 0 is taken before its count
 * is read, and its count raised under element 0 (_nd_lock_count_raise):
 * a raise is seen by prepare or waits for the fork (nd_lock.h). A lock
 * declared any other way is refused by tests/check_locks.sh, so a new
 * lock cannot be forgotten at fork.
 */
#include "internal.h"

/* The forking thread (its thread pointer) from the end of the prepare
 * handler to the start of the parent's or child's: it holds every lock
 * then, and a lock or unlock of its own is a no-op. Atfork handlers of
 * others run inside that window (prepare handlers registered before
 * ours run after it, parent and child ones before ours) and may
 * allocate: glibc's malloc allows it, and without this they deadlocked
 * on the lock prepare holds. Other threads still wait. */
/* NO_HOLDER (no thread pointer is 1): the variable sits in .data, whose
 * page free's fast path keeps resident (_nd_slab_map), not in a .bss
 * page of its own (test_init_footprint). */
#define NO_HOLDER ((uintptr_t)1)
static uintptr_t fork_holder = NO_HOLDER;
static bool fork_taken(const _nd_lock_t *l);

/* l is one of the locks prepare holds for the calling thread. */
static inline bool fork_held(const _nd_lock_t *l)
{
	uintptr_t h = __atomic_load_n(&fork_holder, __ATOMIC_RELAXED);
	return nd_unlikely(h != NO_HOLDER) && h == (uintptr_t)__builtin_thread_pointer() && fork_taken(l);
}

bool _nd_trylock(_nd_lock_t *l)
{
	uint32_t z = 0;
	return __atomic_compare_exchange_n(&l->v, &z, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

void _nd_lock(_nd_lock_t *l)
{
	for (int i = 0; i < 100; i++) {
		if (_nd_trylock(l))
			return;
		if (i == 0 && fork_held(l))
			return;
		__builtin_ia32_pause();
	}
	/* 2 = locked, maybe with waiters: the unlocker must wake. */
	while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE) != 0)
		_nd_os_futex_wait(&l->v, 2);
}

void _nd_unlock(_nd_lock_t *l)
{
	ND_ASSERT(l->v != 0, "a lock is held when it is released");
	if (fork_held(l))
		return; /* prepare's hold, released by the parent's handler */
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
		_nd_os_futex_wake(&l->v, 1);
}

/* ---- registry ------------------------------------------------------------ */

extern const _nd_lock_class_t __start_nd_lock_classes[] __attribute__((visibility("hidden")));
extern const _nd_lock_class_t __stop_nd_lock_classes[] __attribute__((visibility("hidden")));

#define MAX_CLASSES 64

/* Set by prepare, read by parent: the classes in rank order and how many
 * locks of each were taken (an array may grow during the fork). Only the
 * forking thread touches them between prepare and parent (a second fork
 * waits in prepare on the first lock). */
static struct {
	const _nd_lock_class_t *order[MAX_CLASSES];
	int taken[MAX_CLASSES];
} fk __attribute__((aligned(4096))); /* a page of its own: only a fork touches it, so it
				      * does not widen the init's small scalars (.bss) */
static int norder;

static inline _nd_lock_t *lock_at(const _nd_lock_class_t *c, int i)
{
	char *base = c->dyn ? (char *)__atomic_load_n(c->dyn, __ATOMIC_ACQUIRE) : (char *)c->lock;
	return base ? (_nd_lock_t *)(base + c->dyn_off + (size_t)i * c->stride) : NULL;
}

/* Lock i of c, walked in order from i = 0: *cur is element i - 1's
 * address (a list's, whose walk is by its links). */
static inline _nd_lock_t *lock_step(const _nd_lock_class_t *c, int i, char **cur)
{
	if (!c->next_off)
		return lock_at(c, i);
	char *e = i ? *(char **)(void *)(*cur + c->next_off) : (char *)__atomic_load_n(c->dyn, __ATOMIC_ACQUIRE);
	*cur = e;
	return e ? (_nd_lock_t *)(void *)(e + c->dyn_off) : NULL;
}

/* A static array's count is raised under element 0's lock, which prepare
 * takes before it reads the count (nd_lock.h, "Counted arrays"). */
static inline bool counted_static(const _nd_lock_class_t *c)
{
	return c->count && !c->dyn;
}

/* The locks of c that prepare takes and the child resets: its count, and
 * element 0 of a static counted array even when the count is 0. */
static inline int count_of(const _nd_lock_class_t *c)
{
	if (c->dyn && !__atomic_load_n(c->dyn, __ATOMIC_ACQUIRE))
		return 0;
	if (c->next_off) { /* a list: its length (stable: nd_lock.h, ND_LOCK_LIST) */
		int n = 0;
		char *cur = NULL;
		while (lock_step(c, n, &cur))
			n++;
		return n;
	}
	if (!c->count)
		return c->fixed;
	int n = __atomic_load_n(c->count, __ATOMIC_ACQUIRE);
	return n < 1 && counted_static(c) ? 1 : n;
}

void _nd_lock_count_raise(const _nd_lock_class_t *c, int to)
{
	ND_ASSERT(counted_static(c), "a count raised by _nd_lock_count_raise is a static array's");
	if (nd_likely(to <= __atomic_load_n(c->count, __ATOMIC_ACQUIRE)))
		return;
	/* a prepare under way holds element 0 (from before its read of the
	 * count to the parent's handler): this waits for the fork, else
	 * prepare's read comes after it and sees it */
	_nd_lock(c->lock);
	_nd_atomic_raise(c->count, to);
	_nd_unlock(c->lock);
}

int _nd_lock_classes(const _nd_lock_class_t **out, int max)
{
	int n = 0;
	for (const _nd_lock_class_t *c = __start_nd_lock_classes; c < __stop_nd_lock_classes; c++) {
		if (n == max)
			_nd_msg_fatal("lock registry: more than %d lock classes", max);
		/* insertion by rank: a handful of classes */
		int i = n++;
		while (i > 0 && out[i - 1]->rank > c->rank) {
			out[i] = out[i - 1];
			i--;
		}
		out[i] = c;
	}
	return n;
}

/* Only in the fork window (a lock an array gained since prepare is not
 * held: its lock and unlock are real). */
static bool fork_taken(const _nd_lock_t *l)
{
	for (int k = 0; k < norder; k++) {
		char *cur = NULL;
		for (int i = 0; i < fk.taken[k]; i++)
			if (lock_step(fk.order[k], i, &cur) == l)
				return true;
	}
	return false;
}

void _nd_lock_fork_prepare(void)
{
	const _nd_lock_class_t *ord[MAX_CLASSES];
	int n = _nd_lock_classes(ord, MAX_CLASSES);
	int cnt[MAX_CLASSES];
	for (int k = 0; k < n; k++) {
		int i = 0;
		char *cur = NULL;
		if (counted_static(ord[k]))
			_nd_lock(lock_step(ord[k], i++, &cur)); /* before the count: its raises wait from here */
		cnt[k] = count_of(ord[k]);
		for (; i < cnt[k]; i++)
			_nd_lock(lock_step(ord[k], i, &cur));
	}
	/* every lock is ours now: publish what the parent must release */
	for (int k = 0; k < n; k++) {
		fk.order[k] = ord[k];
		fk.taken[k] = cnt[k];
	}
	norder = n;
	__atomic_store_n(&fork_holder, (uintptr_t)__builtin_thread_pointer(), __ATOMIC_RELAXED);
}

void _nd_lock_fork_parent(void)
{
	__atomic_store_n(&fork_holder, NO_HOLDER, __ATOMIC_RELAXED);
	for (int k = norder - 1; k >= 0; k--) {
		if (fk.order[k]->next_off) { /* a list: in its order (any order frees) */
			char *cur = NULL;
			for (int i = 0; i < fk.taken[k]; i++)
				_nd_unlock(lock_step(fk.order[k], i, &cur));
			continue;
		}
		for (int i = fk.taken[k] - 1; i >= 0; i--)
			_nd_unlock(lock_at(fk.order[k], i));
	}
}

void _nd_lock_fork_child(void)
{
	/* one thread left, the one that held every lock */
	fork_holder = NO_HOLDER;
	for (int k = norder - 1; k >= 0; k--) {
		char *cur = NULL;
		for (int i = 0, n = count_of(fk.order[k]); i < n; i++)
			lock_step(fk.order[k], i, &cur)->v = 0;
	}
}
