// SPDX-License-Identifier: MIT
/*
 * The statistics printers: numastat's table and JSON, for the live
 * counters (nd_stats_print, NODALLOC_STATS at exit, with the size classes)
 * and for a snapshot read from another process's export (nodactl).
 * Output goes through msg.c (no stdio); a 2 KiB line buffer per call.
 */
#include <stdarg.h>

#include "internal.h"
#include "stats_impl.h"

/* ---- printers ---------------------------------------------------------- */

/* Nodes shown: those below the snapshot's node_limit that are online (when
 * the topology is known), and any other that has counts (a node that went
 * away with an emulated topology but was used). */
static bool shown(const _nd_stats_all_t *st, const uint8_t *online, int n)
{
	if (n < st->node_limit && (!online || online[n]))
		return true;
	const nd_node_stats_t *s = &st->nodes[n];
	return s->numa_hit | s->numa_miss | s->numa_foreign | s->interleave_hit | s->local_node | s->other_node |
	       s->bytes_in_use | s->bytes_committed | s->bytes_reserved;
}

/* A buffer flushed to fd when full: no line length limit. It holds a
 * whole report of the usual size (every size class, a few dozen nodes),
 * written in one write: processes that print at once into one file
 * opened for append (a shared NODALLOC_MSG_FD, nodactl --stats-children)
 * interleave at each write, and 2 KiB parts made JSON lines unreadable
 * (a pipe keeps a write whole up to PIPE_BUF only). Mapped for the
 * report (a destructor prints: small stack; static data would be one more
 * table to keep untouched); the small one if the map fails. */
#define OB_BIG (32 << 10)
typedef struct outbuf {
	int fd;
	size_t k, cap;
	char *b;
	char small[2048];
} outbuf_t;

static void ob_open(outbuf_t *o, int fd)
{
	o->fd = fd;
	o->k = 0;
	o->b = _nd_os_mmap(OB_BIG, false, NULL);
	o->cap = OB_BIG;
	if (!o->b) {
		o->b = o->small;
		o->cap = sizeof o->small;
	}
}

static void ob_flush(outbuf_t *o)
{
	if (o->k) {
		o->b[o->k] = '\0';
		_nd_msg_out(o->fd, o->b);
		o->k = 0;
	}
}

static void ob_close(outbuf_t *o)
{
	ob_flush(o);
	if (o->b != o->small)
		_nd_os_munmap(o->b, OB_BIG);
}

static void ob_put(outbuf_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ob_put(outbuf_t *o, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = _nd_msg_vformat(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof tmp)
		n = sizeof tmp - 1;
	if (o->k + (size_t)n + 1 > o->cap)
		ob_flush(o);
	for (int i = 0; i < n; i++)
		o->b[o->k++] = tmp[i];
}

/* The counts are page-run allocations, not pages (numastat counts pages):
 * the table names them so; JSON keeps nd_node_stats_t's field names and
 * says the unit. Arrays of chars, not of pointers: no relocations, so
 * the printers' names sit in the cold read-only data, not in
 * .data.rel.ro, which every process writes (its 8 KiB, two pages, were
 * full: the size classes 1152 and 4608 grew the boot thread record). */
static const char count_names[C__N][16] = {
	"numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node",
};
static const char count_rows[C__N][16] = {
	"hit_runs", "miss_runs", "foreign_runs", "interleave_runs", "local_runs", "other_runs",
};
/* B__N byte counters, then the derived committed - in use */
#define R_FRAG B__N
static const char byte_names[B__N + 1][16] = { "in_use_MiB", "committed_MiB", "reserved_MiB", "fragmented_MiB" };
static const char byte_json[B__N + 1][17] = { "bytes_in_use", "bytes_committed", "bytes_reserved",
						 "bytes_fragmented" };

/* ---- size classes (live printers only) ----------------------------------- */

static int (*classes_fn)(nd_class_stats_t *out, int max);

void _nd_stats_set_classes(int (*fn)(nd_class_stats_t *out, int max))
{
	__atomic_store_n(&classes_fn, fn, __ATOMIC_RELEASE);
}

#define CLASSES_MAX 64 /* above the slab layer's class count (checked) */

/* The classes with a slab or a count, into cls (snap_lock held: static). */
static ND_BIG_TABLE nd_class_stats_t cls[CLASSES_MAX];

static int classes_used(void)
{
	int (*fn)(nd_class_stats_t *, int) = __atomic_load_n(&classes_fn, __ATOMIC_ACQUIRE);
	int n = fn ? fn(cls, CLASSES_MAX) : 0, k = 0;
	ND_ASSERT(n <= CLASSES_MAX, "stats: more size classes than CLASSES_MAX");
	for (int c = 0; c < n && c < CLASSES_MAX; c++)
		if (cls[c].slabs || cls[c].remote_frees || cls[c].refills)
			cls[k++] = cls[c];
	return k;
}

static void print_classes_text(outbuf_t *o, int n)
{
	if (n == 0)
		return;
	ob_put(o, "\n%-16s%12s%12s%12s%12s%8s%14s%12s\n", "size class", "slabs", "slab KiB", "objects", "capacity",
	       "in use", "remote frees", "refills");
	for (int c = 0; c < n; c++) {
		const nd_class_stats_t *k = &cls[c];
		/* in use as a percentage with one decimal, integer arithmetic */
		unsigned long long pm = k->capacity ? k->objects * 1000 / k->capacity : 0;
		char pct[16];
		_nd_msg_format(pct, sizeof pct, "%llu.%llu%%", pm / 10, pm % 10);
		ob_put(o, "%-16llu%12llu%12llu%12llu%12llu%8s%14llu%12llu\n", (unsigned long long)k->size,
		       (unsigned long long)k->slabs, (unsigned long long)(k->slab_bytes >> 10),
		       (unsigned long long)k->objects, (unsigned long long)k->capacity, pct,
		       (unsigned long long)k->remote_frees, (unsigned long long)k->refills);
	}
}

static void print_classes_json(outbuf_t *o, int n)
{
	ob_put(o, ",\"classes\":[");
	for (int c = 0; c < n; c++) {
		const nd_class_stats_t *k = &cls[c];
		ob_put(o, "%s{\"size\":%llu,\"slabs\":%llu,\"slab_bytes\":%llu,\"objects\":%llu,\"capacity\":%llu,"
			  "\"remote_frees\":%llu,\"refills\":%llu}",
		       c ? "," : "", (unsigned long long)k->size, (unsigned long long)k->slabs,
		       (unsigned long long)k->slab_bytes, (unsigned long long)k->objects, (unsigned long long)k->capacity,
		       (unsigned long long)k->remote_frees, (unsigned long long)k->refills);
	}
	ob_put(o, "]");
}

static uint64_t count_of(const nd_node_stats_t *s, int c)
{
	const uint64_t v[C__N] = { s->numa_hit, s->numa_miss, s->numa_foreign,
				   s->interleave_hit, s->local_node, s->other_node };
	return v[c];
}

static uint64_t bytes_of(const nd_node_stats_t *s, int b)
{
	const uint64_t v[B__N + 1] = { s->bytes_in_use, s->bytes_committed, s->bytes_reserved,
				       s->bytes_committed > s->bytes_in_use ? s->bytes_committed - s->bytes_in_use : 0 };
	return v[b];
}

/* "12.34" MiB, two decimals rounded */
static void mib(char *buf, size_t len, uint64_t v)
{
	const uint64_t m = (uint64_t)1 << 20;
	uint64_t whole = v / m, cents = ((v % m) * 100 + m / 2) / m;
	if (cents == 100) {
		whole++;
		cents = 0;
	}
	_nd_msg_format(buf, len, "%llu.%02llu", (unsigned long long)whole, (unsigned long long)cents);
}

static const char *role_name(int role)
{
	return role == ND_ROLE_LAUNCHED ? "launched" : role == ND_ROLE_DESCENDANT ? "descendant" : "process";
}

/* The heading of a labelled table: who, and the process-wide figures. */
static void text_label(outbuf_t *o, const _nd_stats_label_t *lb)
{
	ob_put(o, "nodalloc statistics of pid %d (%s), parent %d", lb->pid, lb->program[0] ? lb->program : "?", lb->ppid);
	if (lb->role == ND_ROLE_LAUNCHED)
		ob_put(o, ", the launched program");
	else if (lb->role == ND_ROLE_DESCENDANT)
		ob_put(o, ", a descendant of the launched program %d", lb->root);
	if (lb->ended)
		ob_put(o, ", %s", lb->ended);
	ob_put(o, "\n");
	char a[32], b[32], c[32];
	mib(a, sizeof a, lb->peak_in_use);
	ob_put(o, "peak in use %s MiB", a);
	if (lb->rss || lb->rss_peak) {
		mib(b, sizeof b, lb->rss);
		mib(c, sizeof c, lb->rss_peak);
		if (lb->rss)
			ob_put(o, ", rss %s MiB", b);
		ob_put(o, ", peak rss %s MiB", c);
	}
	ob_put(o, "\n");
}

/*
 * numastat's layout: a header of right-aligned "nodeN" columns 16 wide
 * after a 16-wide label column, then Total (numastat -p's), one row per
 * counter (page-run allocations here, hence the names), then the byte
 * rows in MiB with two decimals, fragmented = committed - in use.
 */
static void print_text(int fd, const _nd_stats_all_t *st, const uint8_t *online, const _nd_stats_label_t *lb, int ncls)
{
	int lim = ND_MAX_NODES;
	outbuf_t o;
	ob_open(&o, fd);
	if (lb)
		text_label(&o, lb);
	ob_put(&o, "%-16s", "");
	for (int n = 0; n < lim; n++)
		if (shown(st, online, n)) {
			char name[16];
			_nd_msg_format(name, sizeof name, "node%d", n);
			ob_put(&o, "%16s", name);
		}
	ob_put(&o, "%16s\n", "Total");
	for (int c = 0; c < C__N; c++) {
		ob_put(&o, "%-16s", count_rows[c]);
		uint64_t total = 0;
		for (int n = 0; n < lim; n++)
			if (shown(st, online, n)) {
				ob_put(&o, "%16llu", (unsigned long long)count_of(&st->nodes[n], c));
				total += count_of(&st->nodes[n], c);
			}
		ob_put(&o, "%16llu\n", (unsigned long long)total);
	}
	for (int b = 0; b <= R_FRAG; b++) {
		ob_put(&o, "%-16s", byte_names[b]);
		uint64_t total = 0;
		char num[32];
		for (int n = 0; n < lim; n++)
			if (shown(st, online, n)) {
				uint64_t v = bytes_of(&st->nodes[n], b);
				total += v;
				mib(num, sizeof num, v);
				ob_put(&o, "%16s", num);
			}
		mib(num, sizeof num, total);
		ob_put(&o, "%16s\n", num);
	}
	if (ncls > 0)
		print_classes_text(&o, ncls);
	ob_close(&o);
}

/* A JSON string of s (the program's name: anything but NUL). */
static void json_str(outbuf_t *o, const char *s)
{
	ob_put(o, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			ob_put(o, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			ob_put(o, "\\u%04x", c);
		else
			ob_put(o, "%c", c);
	}
	ob_put(o, "\"");
}

static void json_node(outbuf_t *o, const nd_node_stats_t *s)
{
	ob_put(o, "{");
	for (int c = 0; c < C__N; c++)
		ob_put(o, "\"%s\":%llu,", count_names[c], (unsigned long long)count_of(s, c));
	for (int b = 0; b <= R_FRAG; b++)
		ob_put(o, "\"%s\":%llu%s", byte_json[b], (unsigned long long)bytes_of(s, b), b < R_FRAG ? "," : "}");
}

static void print_json(int fd, const _nd_stats_all_t *st, const uint8_t *online, const _nd_stats_label_t *lb, int ncls)
{
	int lim = ND_MAX_NODES;
	outbuf_t o;
	ob_open(&o, fd);
	ob_put(&o, "{\"version\":%d,", JSON_VERSION);
	if (lb) {
		ob_put(&o, "\"pid\":%d,\"program\":", lb->pid);
		json_str(&o, lb->program);
		ob_put(&o, ",\"ppid\":%d,\"role\":\"%s\",", lb->ppid, role_name(lb->role));
		if (lb->role == ND_ROLE_DESCENDANT)
			ob_put(&o, "\"launched\":%d,", lb->root);
		if (lb->ended) {
			ob_put(&o, "\"ended\":");
			json_str(&o, lb->ended);
			ob_put(&o, ",");
		}
		ob_put(&o, "\"peak_bytes_in_use\":%llu,", (unsigned long long)lb->peak_in_use);
		if (lb->rss)
			ob_put(&o, "\"rss_bytes\":%llu,", (unsigned long long)lb->rss);
		if (lb->rss_peak)
			ob_put(&o, "\"peak_rss_bytes\":%llu,", (unsigned long long)lb->rss_peak);
	}
	ob_put(&o, "\"unit\":\"page-run allocations\",\"nodes\":{");
	bool first = true;
	nd_node_stats_t total = { 0 };
	for (int n = 0; n < lim; n++) {
		if (!shown(st, online, n))
			continue;
		const nd_node_stats_t *s = &st->nodes[n];
		ob_put(&o, "%s\"%d\":", first ? "" : ",", n);
		json_node(&o, s);
		first = false;
		total.numa_hit += s->numa_hit;
		total.numa_miss += s->numa_miss;
		total.numa_foreign += s->numa_foreign;
		total.interleave_hit += s->interleave_hit;
		total.local_node += s->local_node;
		total.other_node += s->other_node;
		total.bytes_in_use += s->bytes_in_use;
		total.bytes_committed += s->bytes_committed;
		total.bytes_reserved += s->bytes_reserved;
	}
	ob_put(&o, "},\"total\":");
	json_node(&o, &total);
	if (ncls >= 0)
		print_classes_json(&o, ncls);
	ob_put(&o, "}\n");
	ob_close(&o);
}

/* The public printers snapshot the live counters into one static buffer
 * (every possible node: 72 KiB, too big for a thread's stack); printing is rare. */
static ND_BIG_TABLE _nd_stats_all_t snap;
ND_LOCK_DEFINE(snap_lock, ND_RANK_STATS_SNAP);

void _nd_stats_print_live(int fd, bool json, const _nd_stats_label_t *lb)
{
	_nd_lock(&snap_lock);
	snap.version = ND_STATS_V1;
	nd_stats_get((nd_stats_t *)(void *)&snap);
	const _nd_topo_t *t = _nd_topo();
	/* online[] covers node_limit entries only: shown() reads it below that */
	int ncls = classes_used();
	if (json)
		print_json(fd, &snap, t->online, lb, ncls);
	else
		print_text(fd, &snap, t->online, lb, ncls);
	_nd_unlock(&snap_lock);
}

void nd_stats_print(int fd)
{
	_nd_stats_print_live(fd, false, NULL);
}

void nd_stats_print_json(int fd)
{
	_nd_stats_print_live(fd, true, NULL);
}

void _nd_stats_print_snapshot(int fd, const _nd_stats_all_t *st, const _nd_stats_label_t *label, bool json)
{
	if (json) /* an export holds no size classes (another process's slabs) */
		print_json(fd, st, NULL, label, -1);
	else
		print_text(fd, st, NULL, label, -1);
}

