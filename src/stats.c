// SPDX-License-Identifier: MIT
/*
 * Per-node NUMA statistics with the kernel's meanings (numastat.rst and
 * zone_statistics() in mm/page_alloc.c); their printers are in
 * stats_print.c.
 *
 * Unit: one count per page-run allocation, whatever its length, as the
 * kernel counts once per allocation whatever its order. Byte counters are
 * exact (deltas from the page layer).
 *
 * Storage: one 128-byte slot per node id (two cache lines, so nodes never
 * share a line), updated with relaxed atomic adds; readers sum nothing,
 * they just load. The slots cover every possible node id (ND_MAX_NODES)
 * so that an emulated topology installed after init (tests, nodactl) needs
 * no resize; they are .bss (os.c's small page's tail) or a MAP_NORESERVE
 * mapping, so only the slots of nodes that are used ever get memory
 * (node_limit * 128 bytes, rounded to pages).
 * No lock anywhere: a reader may see a counter of an allocation before
 * the matching counter on another node (e.g. numa_miss before
 * numa_foreign); each counter on its own is exact.
 */
#include <errno.h>
#include <fcntl.h>

#include "internal.h"
#include "stats_impl.h"


typedef struct stat_slot {
	uint64_t c[C__N];
	int64_t b[B__N];
	char pad[128 - 8 * (C__N + B__N)];
} __attribute__((aligned(128))) stat_slot_t;
_Static_assert(sizeof(stat_slot_t) == 128, "one slot is two cache lines");

/* slots[0..ND_MAX_NODES) per node, and one process-wide slot: P_IN_USE
 * (the sum of the nodes' in use) and P_PEAK (its highest value), kept on
 * the page-run path (_nd_stats_in_use), never in malloc's fast path. An
 * export has it after the nodes' (slots[PROC_SLOT], the file's layout);
 * the private slots first, before slots[0] (proc_of), so that it
 * shares node 0's page: after them it was a page of its own, 128 KiB
 * on, resident in every process (issue 11). The private slots are the
 * small page's tail (_nd_os_small_tail): those two end the page of the
 * init's small tables, touched by every process anyway (their own
 * mapping was one more resident page); an mmap if that is refused. */
#define PROC_SLOT ND_MAX_NODES
#define N_SLOTS (ND_MAX_NODES + 1)
enum { P_IN_USE, P_PEAK };
static stat_slot_t *slots; /* [ND_MAX_NODES] of N_SLOTS mapped, set once at init (release) */

static uint64_t clamp(int64_t v)
{
	return v > 0 ? (uint64_t)v : 0;
}

/*
 * Live export (NODALLOC_STATS_EXPORT): the slots themselves live in a shared
 * file mapping, so publishing costs nothing on the allocation path and a
 * reader (nodactl stat PID) sees the counters as they move. Layout: one
 * header page, then the slots.
 *
 * A path (1: /dev/shm/nodalloc-PID.stats) names a file this process
 * creates (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), never a file that was
 * there: a stale export (its process is
 * gone: pid and start time) of our own user is removed first; anything
 * else at the path (a link, a FIFO, someone else's file, a live export,
 * any other file) is left alone and nothing is published. Only the owner
 * (or root) can write or truncate it, so its mapping cannot be cut under
 * us. At exit (and on SIGTERM when the program has no handler for it) it
 * is removed, if the path still names the file created. "fd:N:PID" is
 * nodactl's descriptor (it created the file or memfd and removes it).
 */
/* The export's format version (not nd_stats_t's). */
#define EXPORT_VERSION 1
#define EXPORT_MAGIC 0x33535441444e444eull /* "NDNDATS3": process slot, start time */
/* Any version's magic: "NDNDATS" then the version digit. */
#define EXPORT_MAGIC_ANY(m) (((m) & 0x00ffffffffffffffull) == (EXPORT_MAGIC & 0x00ffffffffffffffull))
typedef struct export_hdr {
	uint64_t magic;
	uint32_t version;   /* EXPORT_VERSION */
	uint32_t slot_size; /* sizeof(stat_slot_t) */
	int32_t pid;
	int32_t node_limit; /* nodes worth showing, from the topology */
	uint64_t slots;     /* number of slots that follow */
	uint64_t start;     /* the writer's start time: with pid, one process */
} export_hdr_t;
#define EXPORT_SIZE (ND_PAGE_SIZE + sizeof(stat_slot_t) * N_SLOTS)
/* In the header page, after the header: the pids of the last KIDS forked
 * children that published their own pid-named file (fork_publish). A
 * child that ends by _exit (or a signal) leaves its file; the next child
 * and the exporting process's exit remove those of them that are stale
 * (kids_sweep): a loop of fork and _exit leaves at most a few. */
#define KIDS 64
typedef struct export_kids {
	uint32_t next;        /* atomic: the next entry to write, mod KIDS */
	int32_t pid[KIDS];    /* atomic; 0: none */
} export_kids_t;
#define KIDS_AT 512 /* offset in the header page */
_Static_assert(KIDS_AT >= sizeof(export_hdr_t) && KIDS_AT + sizeof(export_kids_t) <= ND_PAGE_SIZE,
	       "the kids' ring is in the header page, after the header");
#define S_TYPE 0170000
#define S_REG 0100000

/* The file this process created: the absolute path, resolved once (a
 * later chdir changes nothing), and its identity, so that only that file
 * is ever unlinked. path[0] == 0: not exporting (or a forked child). */
static ND_BIG_TABLE struct {
	char path[4096];
	uint64_t dev, ino;
	int pid;
} ex;
static bool shared;   /* slots are in an export mapping (a file or nodactl's descriptor) */
static bool ex_by_pid; /* the file is named by the pid (the option's "1"): a forked child publishes its own */
static int root_pid;  /* NODALLOC_STATS_EXPORT=fd:N:PID: the program nodactl launched */

/* The process-wide slot of the slots s (loaded with acquire: shared was
 * set before them). */
static inline stat_slot_t *proc_of(stat_slot_t *s)
{
	return shared ? s + PROC_SLOT : s - 1;
}
static void read_slot(const stat_slot_t *s, nd_node_stats_t *o);

size_t _nd_stats_export_size(void) { return EXPORT_SIZE; }

const void *_nd_stats_private_map(size_t *len)
{
	stat_slot_t *s = __atomic_load_n(&slots, __ATOMIC_ACQUIRE);
	*len = sizeof(stat_slot_t) * N_SLOTS;
	return s && !shared ? proc_of(s) : NULL;
}

typedef enum { EX_LIVE, EX_STALE, EX_OTHER } ex_state_t;

/* What the header h is: the export of a running process, a stale export,
 * or not an export at all. An older version has no start time: its pid
 * running is taken as live. */
static ex_state_t export_state(const export_hdr_t *h, int *pid_out)
{
	*pid_out = h->pid;
	if (!EXPORT_MAGIC_ANY(h->magic))
		return EX_OTHER;
	uint64_t start;
	unsigned uid;
	if (h->pid <= 0 || _nd_os_proc_identity(h->pid, &start, &uid) < 0)
		return EX_STALE;
	if (h->pid == _nd_os_getpid() && !(h->magic == EXPORT_MAGIC && ex.pid == h->pid))
		return EX_STALE; /* our pid, reused after a killed run */
	if (h->magic == EXPORT_MAGIC && h->start != start)
		return EX_STALE; /* the pid now names another process */
	return EX_LIVE;
}

/* Makes room for a fresh export at path: see nd_stats.h. */
int _nd_stats_clear_export(const char *path, char *why, size_t len)
{
	_nd_file_info_t fi, fo;
	int r = _nd_os_lstat(path, &fi);
	if (r == -2) /* ENOENT */
		return 0;
	if (r < 0) {
		_nd_msg_format(why, len, "cannot inspect it (error %d)", -r);
		return -1;
	}
	if ((fi.mode & S_TYPE) != S_REG) {
		_nd_msg_format(why, len, "it exists and is not a regular file (links, FIFOs and devices are never used)");
		return -1;
	}
	if (fi.uid != _nd_os_geteuid()) {
		_nd_msg_format(why, len, "it exists and belongs to uid %u", fi.uid);
		return -1;
	}
	int fd = _nd_os_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	export_hdr_t h = { 0 };
	long got = fd >= 0 ? _nd_os_pread(fd, &h, sizeof h, 0) : fd;
	r = fd >= 0 ? _nd_os_fstat(fd, &fo) : fd;
	if (fd >= 0)
		_nd_os_close(fd);
	if (r < 0 || got < 0 || fo.dev != fi.dev || fo.ino != fi.ino) {
		_nd_msg_format(why, len, "it exists and could not be read as it was (error %ld)", got < 0 ? -got : -(long)r);
		return -1;
	}
	int pid;
	ex_state_t st = (size_t)got == sizeof h ? export_state(&h, &pid) : EX_OTHER;
	if (st == EX_OTHER && h.magic == 0 && fi.size == EXPORT_SIZE)
		st = EX_STALE; /* nodactl's file, its program never published (killed first) */
	if (st == EX_OTHER) {
		_nd_msg_format(why, len, "it exists and is not a nodalloc statistics export (left alone)");
		return -1;
	}
	if (st == EX_LIVE) {
		_nd_msg_format(why, len, "it is the live export of process %d", pid);
		return -1;
	}
	r = _nd_os_unlink(path);
	if (r < 0 && r != -2) {
		_nd_msg_format(why, len, "cannot remove the stale export there (error %d)", -r);
		return -1;
	}
	return 0;
}

/* ex.path from the option: "1" names /dev/shm/nodalloc-PID.stats; a
 * relative path is made absolute now. 0, or -1 with why. */
static int export_resolve(const char *v, char *why, size_t len)
{
	bool on;
	if (_nd_opt_parse_bool(v, &on) == 0) {
		_nd_msg_format(ex.path, sizeof ex.path, "/dev/shm/nodalloc-%d.stats", _nd_os_getpid());
		ex_by_pid = true;
		return 0;
	}
	size_t n = 0;
	if (v[0] != '/') {
		int r = _nd_os_getcwd(ex.path, sizeof ex.path);
		if (r < 0) {
			_nd_msg_format(why, len, "cannot resolve the relative path (getcwd: error %d)", -r);
			return -1;
		}
		while (ex.path[n])
			n++;
		if (n > 1)
			ex.path[n++] = '/';
	}
	for (size_t k = 0;; k++) {
		if (n >= sizeof ex.path) {
			_nd_msg_format(why, len, "path longer than %zu characters", sizeof ex.path - 1);
			return -1;
		}
		if (!(ex.path[n++] = v[k]))
			return 0;
	}
}

/* Removes the stale files of the children in the ring k (each path's
 * own checks: a live export, another user's file, anything that is not an
 * export stays), and only of a pid no process has now (a zombie counts as
 * gone). A pid that runs is our child, or, reused, another process whose
 * export may be in the making: an unpublished file of an export's size
 * reads as stale to _nd_stats_clear_export (nodactl's before its program
 * publishes, export_create's before export_publish), and the check and
 * the unlink are two steps (audit19: a sweep removed such a live file).
 * Its entry stays for a later sweep. */
static void kids_sweep(export_kids_t *k)
{
	for (int i = 0; i < KIDS; i++) {
		int pid = __atomic_load_n(&k->pid[i], __ATOMIC_RELAXED);
		if (pid <= 0)
			continue;
		char path[64], why[8];
		_nd_msg_format(path, sizeof path, "/dev/shm/nodalloc-%d.stats", pid);
		_nd_file_info_t fi;
		bool none = _nd_os_lstat(path, &fi) == -2;
		uint64_t start;
		unsigned uid;
		if (!none && _nd_os_proc_identity(pid, &start, &uid) != -ESRCH)
			continue;
		if (none || (_nd_stats_clear_export(path, why, sizeof why) == 0 && _nd_os_lstat(path, &fi) == -2))
			__atomic_compare_exchange_n(&k->pid[i], &pid, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

static export_kids_t *kids_of(stat_slot_t *s)
{
	return (export_kids_t *)((char *)s - ND_PAGE_SIZE + KIDS_AT);
}

/* pid into ring k, over its oldest entry. */
static void kids_add(export_kids_t *k, int pid)
{
	__atomic_store_n(&k->pid[__atomic_fetch_add(&k->next, 1, __ATOMIC_RELAXED) % KIDS], pid, __ATOMIC_RELAXED);
}

static void export_remove(void)
{
	_nd_file_info_t fi;
	if (ex.path[0] && ex.pid == _nd_os_getpid() && _nd_os_lstat(ex.path, &fi) == 0 && fi.dev == ex.dev &&
	    fi.ino == ex.ino)
		_nd_os_unlink(ex.path); /* readers that have it open keep it */
}

/* The end of an export, at exit or on SIGTERM (system calls only: the
 * handler may run it): the stale files of the children noted in our ring
 * (those that ended by _exit; a daemon's parent, noted by fork_publish),
 * then our own. A daemon that ends by SIGTERM left its first child's
 * file (only exit swept). */
static void export_end(void)
{
	stat_slot_t *s = __atomic_load_n(&slots, __ATOMIC_ACQUIRE);
	if (s && shared && ex_by_pid && ex.path[0] && ex.pid == _nd_os_getpid())
		kids_sweep(kids_of(s));
	export_remove(); /* a forked child has cleared the path: only the owner unlinks */
}

/* "fd:N:PID": nodactl made descriptor N (EXPORT_SIZE bytes) for process
 * PID and reads the figures itself when PID ends, however it ends. Only
 * PID maps it: descendants that inherit the variable count privately. The
 * descriptor stays open: a wrapper script that execs the real program
 * keeps the pid, and the program maps it again (counting from zero: the
 * figures are the last program's). Returns the descriptor, -1 (not
 * ours) or -2 (malformed). */
static int export_fd(const char *v)
{
	if (!(v[0] == 'f' && v[1] == 'd' && v[2] == ':'))
		return -1;
	int fd = 0, pid = 0;
	const char *p = v + 3;
	for (; *p >= '0' && *p <= '9' && fd < (1 << 20); p++)
		fd = fd * 10 + (*p - '0');
	if (*p++ != ':')
		return -2;
	for (; *p >= '0' && *p <= '9' && pid < (1 << 22); p++)
		pid = pid * 10 + (*p - '0');
	if (*p || pid <= 0)
		return -2;
	root_pid = pid;
	return pid == _nd_os_getpid() ? fd : -1;
}

/* NODALLOC_STATS_EXPORT=fd:N:PID in process PID: maps nodactl's
 * descriptor, which must be a regular file (or memfd) of an export's size
 * (a shorter one would fault on the first counter). NULL with why. */
static char *export_map_fd(int fd, char *why, size_t len)
{
	_nd_file_info_t fi;
	int r = _nd_os_fstat(fd, &fi);
	if (r < 0 || (fi.mode & S_TYPE) != S_REG || fi.size != EXPORT_SIZE) {
		_nd_msg_format(why, len, "descriptor %d is not an export nodactl made (error %d)", fd, r < 0 ? -r : 0);
		return NULL;
	}
	char *base = _nd_os_map_shared_fd(fd, EXPORT_SIZE, &r);
	if (!base) {
		_nd_msg_format(why, len, "cannot map descriptor %d (error %d)", fd, -r);
		return NULL;
	}
	export_hdr_t *h = (export_hdr_t *)base;
	/* an earlier image of this pid (exec) counted here: start over,
	 * writing only nonzero words (untouched pages stay unallocated) */
	__atomic_store_n(&h->magic, 0, __ATOMIC_RELAXED);
	int64_t *w = (int64_t *)(base + ND_PAGE_SIZE);
	for (size_t i = 0; i < sizeof(stat_slot_t) * N_SLOTS / 8; i++)
		if (w[i])
			w[i] = 0;
	return base;
}

/* Creates the file at ex.path (a stale export there removed first: its
 * process is gone, or it is an earlier image of this pid) and maps it
 * for process pid; NULL with why (nothing left at the path). */
static char *export_create(int pid, char *why, size_t len)
{
	_nd_file_info_t fi;
	int r;
	if (_nd_stats_clear_export(ex.path, why, len) != 0)
		return NULL;
	int fd = _nd_os_open(ex.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0) {
		_nd_msg_format(why, len, "cannot create it (error %d%s)", -fd, fd == -17 ? ": it appeared meanwhile" : "");
		return NULL;
	}
	char *base = NULL;
	if ((r = _nd_os_fstat(fd, &fi)) < 0 || (r = _nd_os_ftruncate(fd, EXPORT_SIZE)) < 0)
		_nd_msg_format(why, len, "cannot size it (error %d)", -r);
	else if (!(base = _nd_os_map_shared_fd(fd, EXPORT_SIZE, &r)))
		_nd_msg_format(why, len, "cannot map it (error %d)", -r);
	_nd_os_close(fd);
	if (!base) {
		_nd_os_unlink(ex.path); /* ours: O_EXCL made it */
		return NULL;
	}
	ex.dev = fi.dev;
	ex.ino = fi.ino;
	ex.pid = pid;
	return base;
}

/* Writes the header of the export mapped at base (the magic last: a
 * reader takes the file as published from then on); its slots. */
static stat_slot_t *export_publish(char *base, int pid, uint64_t start)
{
	export_hdr_t *h = (export_hdr_t *)base;
	h->version = EXPORT_VERSION;
	h->slot_size = sizeof(stat_slot_t);
	h->pid = pid;
	h->start = start;
	h->node_limit = _nd_topo() ? _nd_topo()->node_limit : 1;
	h->slots = N_SLOTS;
	__atomic_store_n(&h->magic, EXPORT_MAGIC, __ATOMIC_RELEASE);
	return (stat_slot_t *)(base + ND_PAGE_SIZE);
}

static int export_map(void **out)
{
	const char *v = _nd_opt_str(ND_OPT_STATS_EXPORT);
	bool on;
	if (!*v || (_nd_opt_parse_bool(v, &on) == 0 && !on))
		return 0;
	char why[200];
	uint64_t start;
	unsigned uid;
	int pid = _nd_os_getpid(), fd = -1, r;
	char *base;
	if ((r = _nd_os_proc_identity(pid, &start, &uid)) < 0) {
		_nd_msg_format(why, sizeof why, "cannot read this process's start time in /proc (error %d)", -r);
		goto fail;
	}
	fd = export_fd(v);
	if (fd == -2) {
		_nd_opt_config_error("NODALLOC_STATS_EXPORT: bad value '%s' (expected 1, a path, or fd:N:PID from nodactl)", v);
		return 0;
	}
	if (v[0] == 'f' && v[1] == 'd' && v[2] == ':') {
		if (fd < 0)
			return 0; /* a descendant of the launched program */
		if (!(base = export_map_fd(fd, why, sizeof why)))
			goto fail;
		goto publish;
	}
	if (export_resolve(v, why, sizeof why) != 0 || !(base = export_create(pid, why, sizeof why)))
		goto fail;
	_nd_os_on_sigterm(export_end); /* EBUSY: the program handles SIGTERM */
publish:
	*out = export_publish(base, pid, start);
	return 1;
fail:
	_nd_msg_warn("NODALLOC_STATS_EXPORT: not publishing to %s: %s", ex.path[0] ? ex.path : v, why);
	ex.path[0] = '\0';
	return 0;
}

int _nd_stats_init(void)
{
	if (slots)
		return 0;
	void *p = NULL;
	/* Branches, not "shared = r > 0": under QEMU's TCG a setg to memory
	 * right after the call was seen to store 1 and take the branch with
	 * r == 0 now and then (vm.two: statistics all zero). */
	if (export_map(&p) > 0)
		shared = true;
	if (!p) {
		/* the process-wide slot and node 0's end the small tables'
		 * page, the other nodes' follow (os.c): no page of their own */
		int err = -ENOMEM;
		p = _nd_os_small_tail(sizeof(stat_slot_t) * N_SLOTS, 2 * sizeof(stat_slot_t));
		if (!p)
			p = _nd_os_mmap(sizeof(stat_slot_t) * N_SLOTS, true, &err);
		if (!p) {
			/* Statistics are not worth failing the allocator for. */
			_nd_msg_warn("statistics disabled: no memory for counters (error %d)", -err);
			return 0;
		}
		p = (stat_slot_t *)p + 1; /* the process-wide slot first (proc_of) */
	}
	__atomic_store_n(&slots, (stat_slot_t *)p, __ATOMIC_RELEASE);
	return 0;
}

/* The fork child's own pid-named export (_nd_stats_fork_child), its
 * figures copied from the parent's slots old: true once its slots are
 * the new file's. Out of line: the fork child's common path is in the
 * hot text (src/hot_text.ld), this is not. */
static __attribute__((noinline)) bool fork_publish(stat_slot_t *old, int limit)
{
	char why[200];
	uint64_t start;
	unsigned uid;
	char *base = NULL;
	int pid = _nd_os_getpid();
	int r = _nd_os_proc_identity(pid, &start, &uid);
	if (r < 0)
		_nd_msg_format(why, sizeof why, "cannot read this process's start time in /proc (error %d)", -r);
	else if (export_resolve("1", why, sizeof why) == 0)
		base = export_create(pid, why, sizeof why);
	if (!base) {
		_nd_msg_warn("NODALLOC_STATS_EXPORT: forked child %d not publishing to %s: %s", pid, ex.path, why);
		ex.path[0] = '\0';
		return false;
	}
	stat_slot_t *p = (stat_slot_t *)(base + ND_PAGE_SIZE);
	for (int n = 0; n < limit && n < ND_MAX_NODES; n++)
		p[n] = old[n];
	p[PROC_SLOT] = old[PROC_SLOT];
	export_publish(base, pid, start);
	/* the parent's earlier children that are gone: their files go; this
	 * one is noted for the next, published (an unpublished file of an
	 * export's size counts as stale) */
	export_kids_t *k = kids_of(old);
	kids_sweep(k);
	kids_add(k, pid);
	/* and the parent in this child's own ring: a daemon's first child
	 * (double fork) ends by _exit after its parent, whose exit swept
	 * while it ran, and left its file for good; the daemon's next
	 * child and its exit remove it now */
	int ppid = ((const export_hdr_t *)(const void *)((char *)old - ND_PAGE_SIZE))->pid;
	if (ppid > 0)
		kids_add(kids_of(p), ppid);
	__atomic_store_n(&slots, p, __ATOMIC_RELEASE);
	_nd_os_munmap((char *)old - ND_PAGE_SIZE, EXPORT_SIZE); /* the parent's file, held no longer */
	return true;
}

/* A forked child must not count into its parent's published file
 * (statistics name the process they describe): with a file named by the
 * pid (the option's "1") it publishes its own, /dev/shm/nodalloc-CHILD.stats,
 * so that a daemon (fork, the parent exits; or a double fork) is found
 * under its pid; with a path the user named (the parent's), or nodactl's
 * descriptor (the launched program's), it continues on a private copy.
 * Its figures start from its parent's at the fork. Only one thread
 * exists in the child. */
void _nd_stats_fork_child(void)
{
	if (!shared || !slots)
		return;
	stat_slot_t *old = slots;
	int limit = _nd_topo() ? _nd_topo()->node_limit : ND_MAX_NODES;
	bool mine = ex_by_pid && ex.path[0] && ex.pid;
	ex.path[0] = '\0'; /* the parent's: never unlinked here */
	if (mine && fork_publish(old, limit))
		return;
	int err;
	stat_slot_t *p = _nd_os_mmap(sizeof(stat_slot_t) * N_SLOTS, true, &err);
	if (!p)
		return; /* keep counting into the shared file rather than lose counts */
	for (int n = 0; n < limit && n < ND_MAX_NODES; n++)
		p[n + 1] = old[n];
	p[0] = *proc_of(old);
	slots = p + 1;
	shared = false;
}

/* Reads a published export (mapped by the caller) into *out. */
int _nd_stats_from_export(const void *map, size_t len, _nd_stats_all_t *out, int *pid, uint64_t *peak_in_use)
{
	const export_hdr_t *h = map;
	if (len < EXPORT_SIZE || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != EXPORT_MAGIC ||
	    h->version != EXPORT_VERSION || h->slot_size != sizeof(stat_slot_t) || h->slots != N_SLOTS)
		return -1;
	const stat_slot_t *src = (const stat_slot_t *)((const char *)map + ND_PAGE_SIZE);
	int limit = h->node_limit > 0 && h->node_limit <= ND_MAX_NODES ? h->node_limit : 1;
	out->version = ND_STATS_V1;
	out->node_limit = limit;
	for (int n = 0; n < limit; n++)
		read_slot(&src[n], &out->nodes[n]);
	*pid = h->pid;
	if (peak_in_use)
		*peak_in_use = clamp(__atomic_load_n(&src[PROC_SLOT].b[P_PEAK], __ATOMIC_RELAXED));
	return 0;
}

/* Reads an export file: see internal.h. */
int _nd_stats_read_export(int fd, _nd_stats_all_t *out, int *pid, uint64_t *peak_in_use, char *err, size_t errlen)
{
	_nd_file_info_t fi;
	export_hdr_t h;
	int r = _nd_os_fstat(fd, &fi);
	if (r < 0)
		return _nd_msg_format(err, errlen, "cannot stat it (error %d)", -r), -1;
	if ((fi.mode & S_TYPE) != S_REG)
		return _nd_msg_format(err, errlen, "not a regular file"), -1;
	if (fi.mode & 022)
		return _nd_msg_format(err, errlen, "writable by other users: not an export nodalloc made"), -1;
	if (fi.size != EXPORT_SIZE)
		return _nd_msg_format(err, errlen, "%s (%llu bytes, an export has %zu)",
				      fi.size < EXPORT_SIZE ? "truncated" : "wrong size", (unsigned long long)fi.size,
				      (size_t)EXPORT_SIZE), -1;
	long got = _nd_os_pread(fd, &h, sizeof h, 0);
	if (got != (long)sizeof h)
		return _nd_msg_format(err, errlen, "cannot read its header (%ld)", got), -1;
	if (EXPORT_MAGIC_ANY(h.magic) && h.magic != EXPORT_MAGIC)
		return _nd_msg_format(err, errlen, "written by another version of nodalloc"), -1;
	if (h.magic != EXPORT_MAGIC || h.version != EXPORT_VERSION || h.slot_size != sizeof(stat_slot_t) ||
	    h.slots != N_SLOTS)
		return _nd_msg_format(err, errlen, "not a nodalloc statistics export (or another version)"), -1;
	if (h.pid <= 0 || h.node_limit <= 0 || h.node_limit > ND_MAX_NODES)
		return _nd_msg_format(err, errlen, "corrupt header (pid %d, %d nodes)", h.pid, h.node_limit), -1;
	uint64_t start;
	unsigned uid;
	r = _nd_os_proc_identity(h.pid, &start, &uid);
	if (r == -3 || (r == 0 && start != h.start))
		return _nd_msg_format(err, errlen, "process %d has exited: a stale export, not shown", h.pid), -2;
	if (r < 0)
		return _nd_msg_format(err, errlen, "cannot check that process %d runs (/proc: error %d)", h.pid, -r), -1;
	if (fi.uid != uid && fi.uid != 0)
		return _nd_msg_format(err, errlen, "owned by uid %u, but process %d runs as uid %u", fi.uid, h.pid, uid), -1;
	/* Counters by pread (a file cut under us gives a short read, never a
	 * SIGBUS), 32 slots at a time. */
	stat_slot_t chunk[32];
	for (int n = 0; n < h.node_limit; n += 32) {
		int k = h.node_limit - n < 32 ? h.node_limit - n : 32;
		size_t want = sizeof(stat_slot_t) * (size_t)k;
		got = _nd_os_pread(fd, chunk, want, ND_PAGE_SIZE + sizeof(stat_slot_t) * (size_t)n);
		if (got != (long)want)
			return _nd_msg_format(err, errlen, "truncated while being read"), -1;
		for (int i = 0; i < k; i++)
			read_slot(&chunk[i], &out->nodes[n + i]);
	}
	got = _nd_os_pread(fd, chunk, sizeof chunk[0], ND_PAGE_SIZE + sizeof(stat_slot_t) * PROC_SLOT);
	if (got != (long)sizeof chunk[0])
		return _nd_msg_format(err, errlen, "truncated while being read"), -1;
	if (peak_in_use)
		*peak_in_use = clamp(chunk[0].b[P_PEAK]);
	for (int n = h.node_limit; n < ND_MAX_NODES; n++)
		out->nodes[n] = (nd_node_stats_t){ 0 };
	out->version = ND_STATS_V1;
	out->node_limit = h.node_limit;
	*pid = h.pid;
	return 0;
}

static inline stat_slot_t *slot(int node)
{
	stat_slot_t *s = __atomic_load_n(&slots, __ATOMIC_RELAXED);
	if (nd_unlikely(!s || node < 0 || node >= ND_MAX_NODES))
		return NULL;
	return &s[node];
}

/* delta: 1, or -1 (as a uint64_t) to take a count back */
static inline void inc(int node, int c, uint64_t delta)
{
	stat_slot_t *s = slot(node);
	if (s)
		__atomic_fetch_add(&s->c[c], delta, __ATOMIC_RELAXED);
}

/*
 * The kernel's zone_statistics(preferred, z): hit or miss+foreign by the
 * intended node, and local/other by the allocating CPU's node
 * (numa_node_id(), not numa_mem_id(): a CPU of a memoryless node always
 * counts other_node). interleave_hit as in the interleave allocation path:
 * the interleave target served. Inlined: _nd_stats_count stays one
 * function of hot_text.ld (every process runs it; test_init_footprint).
 */
static inline __attribute__((always_inline)) void count_by(int want, int got, int cpu_node, bool interleave,
							  uint64_t delta)
{
	if (got < 0 || got >= ND_MAX_NODES)
		return; /* nothing was allocated (or a bad node): no half counts */
	if (want < 0 || want >= ND_MAX_NODES || want == got) {
		inc(got, C_HIT, delta);
		if (interleave)
			inc(got, C_IL_HIT, delta);
	} else {
		inc(got, C_MISS, delta);
		inc(want, C_FOREIGN, delta);
	}
	inc(got, got == cpu_node ? C_LOCAL : C_OTHER, delta);
}

void _nd_stats_count(int want, int got, int cpu_node, bool interleave)
{
	count_by(want, got, cpu_node, interleave, 1);
}

void _nd_stats_uncount(int want, int got, int cpu_node, bool interleave)
{
	count_by(want, got, cpu_node, interleave, (uint64_t)-1);
}

static inline void add_bytes(int node, int b, int64_t delta)
{
	stat_slot_t *s = slot(node);
	if (s)
		__atomic_fetch_add(&s->b[b], delta, __ATOMIC_RELAXED);
}

/* Per node, and the process's total and its peak (one CAS loop while the
 * total rises past the peak: page-run allocations only). */
void _nd_stats_in_use(int node, int64_t delta)
{
	add_bytes(node, B_IN_USE, delta);
	stat_slot_t *s = __atomic_load_n(&slots, __ATOMIC_ACQUIRE);
	if (!s)
		return;
	stat_slot_t *ps = proc_of(s);
	int64_t now = __atomic_add_fetch(&ps->b[P_IN_USE], delta, __ATOMIC_RELAXED);
	int64_t peak = __atomic_load_n(&ps->b[P_PEAK], __ATOMIC_RELAXED);
	while (now > peak &&
	       !__atomic_compare_exchange_n(&ps->b[P_PEAK], &peak, now, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}
void _nd_stats_committed(int node, int64_t delta) { add_bytes(node, B_COMMITTED, delta); }
void _nd_stats_reserved(int node, int64_t delta) { add_bytes(node, B_RESERVED, delta); }

void _nd_stats_reset(void)
{
	stat_slot_t *s = __atomic_load_n(&slots, __ATOMIC_ACQUIRE);
	if (!s)
		return;
	for (int n = 0; n < N_SLOTS; n++) {
		stat_slot_t *t = n < ND_MAX_NODES ? &s[n] : proc_of(s);
		/* skip untouched pages: reading them would commit nothing, but
		 * writing would; only write nonzero words */
		for (int c = 0; c < C__N; c++)
			if (__atomic_load_n(&t->c[c], __ATOMIC_RELAXED))
				__atomic_store_n(&t->c[c], 0, __ATOMIC_RELAXED);
		for (int b = 0; b < B__N; b++)
			if (__atomic_load_n(&t->b[b], __ATOMIC_RELAXED))
				__atomic_store_n(&t->b[b], 0, __ATOMIC_RELAXED);
	}
}

static void read_slot(const stat_slot_t *s, nd_node_stats_t *o)
{
	if (!s) {
		*o = (nd_node_stats_t){ 0 };
		return;
	}
	o->numa_hit = __atomic_load_n(&s->c[C_HIT], __ATOMIC_RELAXED);
	o->numa_miss = __atomic_load_n(&s->c[C_MISS], __ATOMIC_RELAXED);
	o->numa_foreign = __atomic_load_n(&s->c[C_FOREIGN], __ATOMIC_RELAXED);
	o->interleave_hit = __atomic_load_n(&s->c[C_IL_HIT], __ATOMIC_RELAXED);
	o->local_node = __atomic_load_n(&s->c[C_LOCAL], __ATOMIC_RELAXED);
	o->other_node = __atomic_load_n(&s->c[C_OTHER], __ATOMIC_RELAXED);
	o->bytes_in_use = clamp(__atomic_load_n(&s->b[B_IN_USE], __ATOMIC_RELAXED));
	o->bytes_committed = clamp(__atomic_load_n(&s->b[B_COMMITTED], __ATOMIC_RELAXED));
	o->bytes_reserved = clamp(__atomic_load_n(&s->b[B_RESERVED], __ATOMIC_RELAXED));
}

static void read_node(int n, nd_node_stats_t *o)
{
	read_slot(slot(n), o);
}

/* Version 1 (the _nd_stats_all_t layout, ND_MAX_NODES entries) and 2
 * (ND_STATS_NODES entries) share their first fields. */
int nd_stats_get(nd_stats_t *out)
{
	if (!out || (out->version != ND_STATS_VERSION && out->version != ND_STATS_V1)) {
		errno = EINVAL;
		return -1;
	}
	int cap = out->version == ND_STATS_V1 ? ND_MAX_NODES : ND_STATS_NODES;
	int limit = _nd_topo()->node_limit;
	if (limit > ND_MAX_NODES)
		limit = ND_MAX_NODES;
	out->node_limit = limit;
	nd_stats_get_nodes(out->nodes, 0, cap);
	if (limit > cap) {
		errno = ERANGE;
		return -1;
	}
	return 0;
}

int nd_stats_get_nodes(nd_node_stats_t *nodes, int first, int count)
{
	if (!nodes || first < 0 || count < 0) {
		errno = EINVAL;
		return -1;
	}
	int limit = _nd_topo()->node_limit, got = 0;
	for (int i = 0; i < count; i++) {
		int n = first + i;
		if (n < limit && n < ND_MAX_NODES) {
			read_node(n, &nodes[i]);
			got++;
		} else {
			nodes[i] = (nd_node_stats_t){ 0 };
		}
	}
	return got;
}

/* The process-wide peak of bytes in use. */
static uint64_t proc_peak(void)
{
	stat_slot_t *s = __atomic_load_n(&slots, __ATOMIC_ACQUIRE);
	return s ? clamp(__atomic_load_n(&proc_of(s)->b[P_PEAK], __ATOMIC_RELAXED)) : 0;
}

/* "VmRSS:	  1234 kB" in /proc/self/status, in bytes (0 if absent). */
static uint64_t status_kb(const char *status, const char *key)
{
	for (const char *p = status; *p; p++) {
		if (p != status && p[-1] != '\n')
			continue;
		size_t k = 0;
		while (key[k] && p[k] == key[k])
			k++;
		if (key[k])
			continue;
		p += k;
		while (*p == ' ' || *p == '\t')
			p++;
		uint64_t v = 0;
		for (; *p >= '0' && *p <= '9'; p++)
			v = v * 10 + (uint64_t)(*p - '0');
		return v << 10;
	}
	return 0;
}

/* This process's label: pid, program, parent, role (from nodactl's
 * fd:N:PID export value), peak in use and RSS now. */
static void self_label(_nd_stats_label_t *lb)
{
	*lb = (_nd_stats_label_t){ 0 };
	lb->pid = _nd_os_getpid();
	lb->ppid = _nd_os_getppid();
	/* argv[0]'s last component (comm is cut at 15 characters) */
	char cmd[256];
	const char *name = cmd;
	if (_nd_os_read_file("/proc/self/cmdline", cmd, sizeof cmd) > 0 && cmd[0]) {
		for (const char *c = cmd; *c; c++)
			if (*c == '/' && c[1])
				name = c + 1;
	} else if (_nd_os_read_file("/proc/self/comm", cmd, sizeof cmd) <= 0) {
		cmd[0] = '\0';
	}
	size_t k = 0;
	for (; name[k] && name[k] != '\n' && k + 1 < sizeof lb->program; k++)
		lb->program[k] = name[k];
	lb->program[k] = '\0';
	lb->root = root_pid;
	lb->role = !root_pid ? ND_ROLE_PROCESS : lb->pid == root_pid ? ND_ROLE_LAUNCHED : ND_ROLE_DESCENDANT;
	lb->peak_in_use = proc_peak();
	char status[4096];
	if (_nd_os_read_file("/proc/self/status", status, sizeof status) > 0) {
		lb->rss = status_kb(status, "VmRSS:");
		lb->rss_peak = status_kb(status, "VmHWM:");
	}
}

void _nd_stats_at_exit(void)
{
	export_end();
	_nd_os_on_sigterm_off(); /* dlclose: no handler left in the unmapped library */
	/* nodactl reads the launched program's figures from the export
	 * itself, when and however it ends: it would print them twice. */
	if (shared && root_pid == _nd_os_getpid())
		return;
	const char *v = _nd_opt_str(ND_OPT_STATS);
	if (!*v)
		return;
	int fd = _nd_msg_fd();
	bool on;
	bool json = v[0] == 'j' && v[1] == 's' && v[2] == 'o' && v[3] == 'n' && v[4] == '\0';
	bool text = (v[0] == 't' && v[1] == 'e' && v[2] == 'x' && v[3] == 't' && v[4] == '\0');
	if (!json && !text) {
		if (_nd_opt_parse_bool(v, &on) != 0) {
			_nd_opt_config_error("NODALLOC_STATS: unknown value '%s' (expected 1, text or json)", v);
			return;
		}
		if (!on)
			return;
	}
	_nd_stats_print_self(fd, json);
}

void _nd_stats_print_self(int fd, bool json)
{
	_nd_stats_label_t lb; /* on the stack: malloc_stats may run in threads at once */
	self_label(&lb);
	_nd_stats_print_live(fd, json, &lb);
}
