// SPDX-License-Identifier: MIT
/*
 * The machine's topology: the sysfs reader (/sys/devices/system, or a
 * tree of that shape at NODALLOC_SYSFS_ROOT), the one-node fallback
 * without NUMA sysfs, and the kernel's watermarks from /proc/zoneinfo.
 * The file's bytes are never echoed in messages (the tree may be anyone's).
 */
#include <errno.h>
#include <fcntl.h>

#include "topo_impl.h"

#define FILE_BUF 8192

/* ---- sysfs -------------------------------------------------------------- */

typedef struct sysfs_read {
	const char *root;
	char *err;
	size_t errlen;
	char path[512];
	char buf[FILE_BUF];
} sysfs_read_t;

/* Reads root/devices/system/<rel> into sr->buf. >= 0 bytes, or negative
 * errno (no message: the caller decides whether the file is optional). */
static long sys_read(sysfs_read_t *sr, const char *rel)
{
	int n = _nd_msg_format(sr->path, sizeof sr->path, "%s/devices/system/%s", sr->root, rel);
	if (n < 0 || (size_t)n >= sizeof sr->path)
		return -ENAMETOOLONG;
	return _nd_os_read_file(sr->path, sr->buf, sizeof sr->buf);
}

static int sys_fail(sysfs_read_t *sr, const char *what, long e)
{
	if (e < 0)
		_nd_topo_err(sr->err, sr->errlen, "topology: %s: %s (error %ld)", sr->path, what, -e);
	else
		_nd_topo_err(sr->err, sr->errlen, "topology: %s: %s", sr->path, what);
	return -1;
}

/* A whole file that is a kernel list (possibly empty). */
static int sys_list(sysfs_read_t *sr, long max, _nd_topo_list_fn fn, void *arg)
{
	const char *s = sr->buf;
	while (_nd_topo_is_space(*s))
		s++;
	if (*s == '\0')
		return 0;
	const char *why = "";
	int r = _nd_topo_walk_list(s, max, fn, arg, &why);
	if (r < 0) {
		/* The file's bytes are never echoed: the tree may be anyone's
		 * (a link to a secret file); the offset locates the fault. */
		char msg[96];
		_nd_msg_format(msg, sizeof msg, "bad list: %s at offset %d", why, (int)(s - sr->buf) + -1 - r);
		return sys_fail(sr, msg, 0);
	}
	s += r;
	while (_nd_topo_is_space(*s))
		s++;
	if (*s) {
		char msg[96];
		_nd_msg_format(msg, sizeof msg, "bad list: unexpected text at offset %d", (int)(s - sr->buf));
		return sys_fail(sr, msg, 0);
	}
	return 0;
}

static int bitmap_cb(long id, void *arg, int at)
{
	_nd_bit_set(arg, id);
	return 0;
}

/* A node state file (has_memory, has_cpu) into out[] for online nodes:
 * 1 if read, 0 if the tree has none (out untouched), -1 if bad. */
static int node_state(sysfs_read_t *sr, const char *rel, const topo_impl_t *t, uint8_t *out)
{
	if (sys_read(sr, rel) < 0)
		return 0;
	uint64_t set[ND_MAX_NODES / 64] = { 0 };
	if (sys_list(sr, ND_MAX_NODES - 1, bitmap_cb, set))
		return -1;
	for (int n = 0; n < t->pub.node_limit; n++)
		out[n] = t->online[n] && _nd_bit_get(set, n);
	return 1;
}

struct max_arg {
	long max;
};
static int max_cb(long id, void *arg, int at)
{
	struct max_arg *m = arg;
	if (id > m->max)
		m->max = id;
	return 0;
}

struct node_cpu_arg {
	topo_impl_t *t;
	int node;
};
static int node_cpu_cb(long id, void *arg, int at)
{
	struct node_cpu_arg *a = arg;
	if (a->t->cpu_node[id] < 0)
		a->t->cpu_node[id] = a->node;
	a->t->has_cpu[a->node] = 1;
	return 0;
}

static void nodedir_cb(const char *name, void *arg)
{
	if (name[0] == 'n' && name[1] == 'o' && name[2] == 'd' && name[3] == 'e' && _nd_topo_is_digit(name[4])) {
		long id;
		int n = _nd_topo_parse_uint(name + 4, ND_MAX_NODES - 1, &id);
		if (name[4 + n] == '\0' && id < ND_MAX_NODES)
			_nd_bit_set(arg, id);
	}
}

/* The text after key, where key starts buf or follows the character
 * before (' ' in meminfo's "Node 0 MemTotal:", '\n' in a status file),
 * with blanks skipped; NULL if key is absent. */
static const char *after_key(const char *buf, const char *key, char before)
{
	size_t kl = _nd_strlen(key);
	for (const char *s = buf; *s; s++) {
		if (s != buf && s[-1] != before)
			continue;
		size_t i = 0;
		while (i < kl && s[i] == key[i])
			i++;
		if (i < kl)
			continue;
		s += kl;
		while (*s == ' ' || *s == '\t')
			s++;
		return s;
	}
	return NULL;
}

/* "Node 0 MemTotal:  16310880 kB" -> bytes; false if the key is absent. */
bool _nd_topo_meminfo_value(const char *buf, const char *key, uint64_t *out)
{
	const char *s = after_key(buf, key, ' ');
	if (!s)
		return false;
	uint64_t v = 0;
	while (_nd_topo_is_digit(*s))
		v = v * 10 + (uint64_t)(*s++ - '0');
	while (*s == ' ')
		s++;
	if (*s == 'k' || *s == 'K')
		v <<= 10;
	*out = v;
	return true;
}

/* Mems_allowed_list from a /proc/<pid>/status-shaped file into mask;
 * false if absent. */
static bool read_mems_allowed(const char *path, char *buf, size_t len, uint64_t *mask)
{
	if (_nd_os_read_file(path, buf, len) < 0)
		return false;
	const char *s = after_key(buf, "Mems_allowed_list:", '\n');
	const char *why;
	return s && _nd_topo_walk_list(s, ND_MAX_NODES - 1, bitmap_cb, mask, &why) >= 0;
}

static bool is_real_root(const char *root)
{
	const char *r = "/sys";
	size_t i = 0;
	while (r[i] && root[i] == r[i])
		i++;
	return r[i] == '\0' && (root[i] == '\0' || (root[i] == '/' && root[i + 1] == '\0'));
}

const _nd_topo_t *_nd_topo_build_sysfs(const char *root, char *err, size_t errlen)
{
	if (!root || !*root)
		root = "/sys";
	if (_nd_strlen(root) >= sizeof((topo_impl_t *)0)->root) {
		_nd_topo_err(err, errlen, "topology: sysfs root too long: %.60s...", root);
		return NULL;
	}
	/* ~9 KiB of buffers: on the mapping, not the stack. */
	int e = 0;
	size_t srlen = ND_ALIGN_UP(sizeof(sysfs_read_t) + 2 * (ND_MAX_NODES / 8), ND_PAGE_SIZE);
	sysfs_read_t *sr = _nd_os_mmap(srlen, false, &e);
	if (!sr) {
		_nd_topo_err(err, errlen, "topology: out of memory reading %s (error %d)", root, -e);
		return NULL;
	}
	uint64_t *nodes = (uint64_t *)(sr + 1);
	uint64_t *mems = nodes + ND_MAX_NODES / 64;
	sr->root = root;
	sr->err = err;
	sr->errlen = errlen;
	topo_impl_t *t = NULL;
	bool real = is_real_root(root);

	/* Pass 1: which nodes, the largest CPU id. */
	long r = sys_read(sr, "node/online");
	if (r >= 0) {
		if (sys_list(sr, ND_MAX_NODES - 1, bitmap_cb, nodes))
			goto fail;
	} else {
		/* Older or partial trees: the nodeN directories. */
		_nd_msg_format(sr->path, sizeof sr->path, "%s/devices/system/node", root);
		int lr = _nd_os_list_dir(sr->path, nodedir_cb, nodes);
		if (lr < 0) {
			sys_fail(sr, "cannot read the node directory", lr);
			goto fail;
		}
	}
	int max_node = -1;
	for (int n = 0; n < ND_MAX_NODES; n++)
		if (_nd_bit_get(nodes, n))
			max_node = n;
	if (max_node < 0) {
		sys_fail(sr, "no online node", 0);
		goto fail;
	}
	struct max_arg mc = { -1 }, node_cpus = { -1 };
	if (sys_read(sr, "cpu/possible") >= 0 && sys_list(sr, ND_TOPO_MAX_CPUS - 1, max_cb, &mc))
		goto fail;
	for (int n = 0; n <= max_node; n++) {
		if (!_nd_bit_get(nodes, n))
			continue;
		char rel[48];
		_nd_msg_format(rel, sizeof rel, "node/node%d/cpulist", n);
		r = sys_read(sr, rel);
		if (r < 0) {
			sys_fail(sr, "cannot read", r);
			goto fail;
		}
		if (sys_list(sr, ND_TOPO_MAX_CPUS - 1, max_cb, &node_cpus))
			goto fail;
	}
	/* Every CPU we run on must fold onto a CPU of some node (cpu_slower
	 * divides by their count): CPUs in cpu/possible alone are not enough. */
	if (node_cpus.max < 0) {
		_nd_topo_err(err, errlen, "topology: %s: no node has CPUs (no node's cpulist names one%s)", root,
			mc.max >= 0 ? ", though cpu/possible does" : "");
		goto fail;
	}
	if (node_cpus.max > mc.max)
		mc.max = node_cpus.max;

	/* Pass 2: fill a fresh topology. */
	t = _nd_topo_alloc(max_node + 1, (int)mc.max + 1, err, errlen);
	if (!t)
		goto fail;
	int L = max_node + 1;
	int ids[ND_MAX_NODES], count = 0;
	for (int n = 0; n < L; n++)
		if (_nd_bit_get(nodes, n)) {
			t->online[n] = 1;
			ids[count++] = n;
		}
	for (int i = 0; i < count; i++) {
		int n = ids[i];
		char rel[48];
		_nd_msg_format(rel, sizeof rel, "node/node%d/cpulist", n);
		if ((r = sys_read(sr, rel)) < 0) {
			sys_fail(sr, "cannot read", r);
			goto fail;
		}
		struct node_cpu_arg a = { t, n };
		if (sys_list(sr, t->pub.cpu_limit - 1, node_cpu_cb, &a))
			goto fail;
		_nd_msg_format(rel, sizeof rel, "node/node%d/meminfo", n);
		if ((r = sys_read(sr, rel)) < 0) {
			sys_fail(sr, "cannot read", r);
			goto fail;
		}
		uint64_t v = 0;
		if (!_nd_topo_meminfo_value(sr->buf, "MemTotal:", &v)) {
			sys_fail(sr, "no MemTotal line", 0);
			goto fail;
		}
		t->mem_total[n] = v;
		if (_nd_topo_meminfo_value(sr->buf, "MemFree:", &v))
			t->free_cache[n] = v;
		/* Distances: one per online node, ascending (node_read_distance). */
		_nd_msg_format(rel, sizeof rel, "node/node%d/distance", n);
		if ((r = sys_read(sr, rel)) < 0) {
			sys_fail(sr, "cannot read", r);
			goto fail;
		}
		const char *s = sr->buf;
		for (int j = 0; j < count; j++) {
			while (*s == ' ' || *s == '\t')
				s++;
			long d;
			int k = _nd_topo_parse_uint(s, 255, &d);
			if (k == 0 || d > 255) {
				char msg[80];
				_nd_msg_format(msg, sizeof msg, "expected %d distances (one per online node), entry %d is bad", count, j + 1);
				sys_fail(sr, msg, 0);
				goto fail;
			}
			t->dist[(size_t)n * (size_t)L + (size_t)ids[j]] = (uint8_t)d;
			s += k;
		}
		while (_nd_topo_is_space(*s))
			s++;
		if (*s) {
			char msg[80];
			_nd_msg_format(msg, sizeof msg, "more than %d distances (one per online node)", count);
			sys_fail(sr, msg, 0);
			goto fail;
		}
	}
	/* Memory: has_memory if present, else MemTotal > 0. */
	int st = node_state(sr, "node/has_memory", t, t->has_mem);
	if (st < 0)
		goto fail;
	for (int n = 0; n < L && st == 0; n++)
		t->has_mem[n] = t->online[n] && t->mem_total[n] > 0;
	/* has_cpu: the kernel's file if present (it agrees with cpulist). */
	if (node_state(sr, "node/has_cpu", t, t->has_cpu) < 0)
		goto fail;
	/* Mems_allowed (cpuset): a node outside it has no memory for us. A
	 * fixture tree may carry root/proc/self/status. */
	char spath[300];
	if (real)
		_nd_msg_format(spath, sizeof spath, "/proc/self/status");
	else
		_nd_msg_format(spath, sizeof spath, "%s/proc/self/status", root);
	bool restrict_mems = read_mems_allowed(spath, sr->buf, sizeof sr->buf, mems);
	bool any_mem = false;
	for (int n = 0; n < L; n++) {
		t->mem_allowed[n] = t->online[n] && (!restrict_mems || _nd_bit_get(mems, n));
		if (t->has_mem[n] && t->mem_allowed[n])
			any_mem = true;
	}
	if (!any_mem) {
		_nd_topo_err(err, errlen, "topology: %s: no allowed node has memory%s", root,
			restrict_mems ? " (Mems_allowed_list excludes every memory node)" : "");
		goto fail;
	}
	for (int n = 0; n < L; n++)
		if (!t->mem_allowed[n])
			t->has_mem[n] = 0;
	/* Allowed CPUs: the affinity mask, for the real machine only. */
	uint64_t *aff = (uint64_t *)sr->buf; /* ND_TOPO_MAX_CPUS bits fit in buf */
	int got = real ? _nd_os_sched_getaffinity(0, ND_TOPO_MAX_CPUS / 8, aff) : -1;
	for (int c = 0; c < t->pub.cpu_limit; c++) {
		bool ok = t->cpu_node[c] >= 0;
		if (got > 0)
			ok = ok && c < got * 8 && _nd_bit_get(aff, c);
		t->cpu_allowed[c] = ok;
	}
	for (int n = 0; n < L; n++)
		t->free_stamp[n] = t->has_mem[n] ? _nd_os_now_ns() : 0;
	{
		size_t i = 0;
		for (; root[i]; i++)
			t->root[i] = root[i];
		t->root[i] = '\0';
	}
	_nd_topo_build_lists(t, (uint8_t *)sr->buf);
	_nd_os_munmap(sr, srlen);
	return &t->pub;
fail:
	_nd_topo_free(t);
	_nd_os_munmap(sr, srlen);
	return NULL;
}

/* Without NUMA sysfs: one node 0 with every CPU of the affinity mask and
 * MemTotal from /proc/meminfo. */
const _nd_topo_t *_nd_topo_build_flat(char *err, size_t errlen)
{
	uint64_t aff[ND_TOPO_MAX_CPUS / 64] = { 0 };
	int got = _nd_os_sched_getaffinity(0, sizeof aff, aff);
	int max = 0;
	for (int c = 0; got > 0 && c < got * 8; c++)
		if (_nd_bit_get(aff, c))
			max = c;
	topo_impl_t *t = _nd_topo_alloc(1, max + 1, err, errlen);
	if (!t)
		return NULL;
	t->online[0] = t->has_mem[0] = t->has_cpu[0] = t->mem_allowed[0] = 1;
	for (int c = 0; c <= max; c++)
		if (got <= 0 || _nd_bit_get(aff, c)) {
			t->cpu_node[c] = 0;
			t->cpu_allowed[c] = 1;
		}
	char buf[4096];
	uint64_t v = 0;
	if (_nd_os_read_file("/proc/meminfo", buf, sizeof buf) >= 0 && _nd_topo_meminfo_value(buf, "MemTotal:", &v))
		t->mem_total[0] = v;
	uint8_t used[1];
	_nd_topo_build_lists(t, used);
	return &t->pub;
}

/* ---- the kernel's watermarks (/proc/zoneinfo) ------------------------------
 * Per zone (docs/arenas.md): "Node N, zone Name" opens it; "pages free",
 * "low", "boost", "protection: (r0, .., rk)" (lowmem reserve against each
 * highest zone: user pages are movable, the last entry) and the zone's
 * file LRU counts ("nr_zone_inactive_file", "nr_zone_active_file") follow.
 * Free pages on the per-CPU lists are left out (counting them, fills in
 * the VM were OOM-killed: they are not all there for the faulting CPU).
 * The file is long (per-CPU lists of every zone), so it is read in pieces
 * and scanned line by line. */

typedef struct zone_scan {
	uint64_t *avail;
	int max;
	int node;               /* node of the open zone, -1 before the first */
	uint64_t free, low, boost, prot, file;
} zone_scan_t;

static void zone_close(zone_scan_t *z)
{
	if (z->node >= 0 && z->node < z->max) {
		uint64_t keep = z->low + z->boost + z->prot, has = z->free + z->file / 2;
		if (has > keep)
			z->avail[z->node] += (has - keep) << ND_PAGE_SHIFT;
	}
	z->node = -1;
	z->free = z->low = z->boost = z->prot = z->file = 0;
}

/* s after leading blanks starts with key followed by a blank: the text
 * after the blanks, else NULL. */
static const char *zone_key(const char *s, const char *key)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t kl = _nd_strlen(key);
	for (size_t i = 0; i < kl; i++)
		if (s[i] != key[i])
			return NULL;
	s += kl;
	if (*s != ' ' && *s != '\t')
		return NULL;
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static uint64_t zone_num(const char *s)
{
	uint64_t v = 0;
	while (_nd_topo_is_digit(*s))
		v = v * 10 + (uint64_t)(*s++ - '0');
	return v;
}

static void zone_line(zone_scan_t *z, const char *l)
{
	const char *v;
	if (l[0] == 'N' && (v = zone_key(l, "Node"))) {
		zone_close(z);
		z->node = _nd_topo_is_digit(*v) ? (int)zone_num(v) : -1;
	} else if (z->node < 0) {
		return;
	} else if ((v = zone_key(l, "pages")) && (v = zone_key(v, "free"))) {
		z->free = zone_num(v);
	} else if ((v = zone_key(l, "low"))) {
		z->low = zone_num(v);
	} else if ((v = zone_key(l, "boost"))) {
		z->boost = zone_num(v);
	} else if ((v = zone_key(l, "protection:"))) {
		/* "(0, 3018, 6218, 6218, 6218)": the last entry */
		for (; *v && *v != ')'; v++)
			if (_nd_topo_is_digit(*v)) {
				z->prot = zone_num(v);
				while (_nd_topo_is_digit(v[1]))
					v++;
			}
	} else if ((v = zone_key(l, "nr_zone_inactive_file")) || (v = zone_key(l, "nr_zone_active_file"))) {
		z->file += zone_num(v);
	}
}

int _nd_topo_node_avail(uint64_t *avail, int max)
{
	const topo_impl_t *t = _nd_topo_live();
	if (!t || t->pub.emulated || !(t->root[0] == '/' && t->root[1] == 's' && t->root[2] == 'y' &&
				       t->root[3] == 's' && t->root[4] == '\0'))
		return -1;
	int fd = _nd_os_open("/proc/zoneinfo", O_RDONLY, 0);
	if (fd < 0)
		return -1;
	for (int n = 0; n < max; n++)
		avail[n] = 0;
	zone_scan_t z = { .avail = avail, .max = max, .node = -1 };
	char buf[4096];
	size_t have = 0;
	bool any = false;
	for (;;) {
		long r = _nd_os_read(fd, buf + have, sizeof buf - 1 - have);
		if (r < 0) {
			_nd_os_close(fd);
			return -1;
		}
		have += (size_t)r;
		buf[have] = '\0';
		size_t start = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			buf[i] = '\0';
			zone_line(&z, buf + start);
			any = true;
			start = i + 1;
		}
		if (r == 0) {
			if (start < have)
				zone_line(&z, buf + start);
			break;
		}
		if (start == 0 && have == sizeof buf - 1)
			start = have; /* a line longer than the buffer: not ours, drop it */
		for (size_t i = start; i < have; i++)
			buf[i - start] = buf[i];
		have -= start;
	}
	_nd_os_close(fd);
	zone_close(&z);
	return any ? 0 : -1;
}

