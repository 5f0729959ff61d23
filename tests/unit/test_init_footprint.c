// SPDX-License-Identifier: MIT
/* The pages of the library's static data that a process touches at init
 * (issue 11: peak RSS of the small workloads, where nodalloc's fixed cost
 * was most of the gap to glibc). After the init and a few allocations of
 * every size, at most BSS_PAGES pages of .bss may be resident (the
 * library's bss is ~950 KiB: boot buffer, per-node tables, snapshot
 * buffers, all meant to stay untouched until used). The option table used
 * to hold a 4 KiB string buffer per option and wrote a default into each
 * at init: 18 pages (31 resident in this test, 13 since).
 *
 * The shared library's .bss is laid out by its own link: its small
 * scalars (locks, flags, counters: every process touches most of them)
 * sat between the big tables, one page each. Sorted by alignment
 * (-fdata-sections, --sort-section=alignment) they share a page or two:
 * a program run with LD_PRELOAD (cat reading its own smaps) has at most
 * SO_BSS_KB of the library's .bss mapping resident, with the small
 * mappings of the init that merge with it (gcc 48 KiB before, 32 since;
 * clang 52, 36 since: big tables that clang aligns to 8 bytes only sat
 * among the scalars until aligned to a cache line). The small tables
 * every process touches (size classes, heaps, the page level's globals)
 * still sat between cache-line aligned big ones: with the big tables
 * page-aligned (ND_BIG_TABLE, laid out first) 16 KiB in gcc's, clang's
 * and the debug build (24, 28 and 28-32 before).
 *
 * heap.c's per-node words (the exit trim's stamps, the pools' class
 * hints) were three page-aligned tables, a page each once a thread
 * exited: now fields of meta.c's per-node struct, whose node 0 entry is
 * touched anyway: threads exiting added at most one page (4 before).
 * The record of a thread past its exit (gone), a constant copy of boot's,
 * sat in .data.rel.ro: its relocations wrote two pages there in every
 * process. Now the first thread's exit copies it into .bss (one page):
 * at most BSS_THREAD_PAGES, and the relro mapping two pages, not four.
 *
 * The statistics' counters: node 0's slot and the process-wide one
 * (updated on every page run) were 128 KiB apart, two pages; the
 * process-wide slot now comes first: one page. That page was a mapping
 * of its own: the two slots now end the small tables' page (below).
 *
 * The shared library's code: the kernel maps a file's pages 64 KiB
 * (fault-around) about each one a process runs, and the functions run by
 * every process were spread over the whole .text (125 KiB): all of it
 * resident. Laid out first (src/hot_text.ld) in a segment aligned to
 * 64 KiB, they share one window: the same cat has at most SO_TEXT_KB of
 * the library's code mapping resident (128 before; gcc's release build:
 * the list holds its functions and clones). The unwind tables
 * (26 KiB, read by an unwinder only) came after .rodata in the same
 * window: now before it, in a window of their own, and the read-only
 * data mapping has at most SO_RODATA_KB resident (44 before). The
 * read-only data itself (18 KiB, five pages in one fault-around window)
 * was all resident; what a process reads (3.6 KiB, src/hot_rodata.ld)
 * now comes first and the rest is a mapping of its own: one page
 * resident (gcc's release build), and the library's r--p mappings
 * (headers, read-only data, relro) at most SO_RO_KB in a cat and in
 * wl_xfree 2 (52 before). The first of them (ELF headers, dynamic
 * symbols, relocations, 12.3 KiB: all read at load) was four pages:
 * relative relocations packed (DT_RELR) and no GOT slots for the
 * library's calls of its own exported functions (-Bsymbolic-functions)
 * make it 7.9 KiB, at most 8 KiB resident (16 before); with the
 * relro mapping two pages (gone, below) the r--p mappings 20 KiB (40
 * before). glibc's other names of the malloc API (__libc_*, mallinfo2,
 * mallopt, malloc_stats: 15 dynamic symbols, 600 bytes) made it 8.4 KiB:
 * SO_HDR_KB, and SO_RO_KB for the r--p mappings.
 * The hot list outgrew the window (67 KiB): a process that ran a function
 * of its last few KiB (a fork's child its fork handlers, a thread's first
 * remote free) faulted in the next window, cold code with it: 128 KiB.
 * The cold code is now a mapping of its own (os.c's _nd_os_text_split),
 * which fault-around does not cross: a subshell has at most
 * SO_FORK_TEXT_KB of code resident (128 before), in 2 mappings.
 * The list (76 KiB) then held the code of programs of any kind and of
 * every bench workload: a producer/consumer pair ran functions in its
 * last 12 KiB, 76 KiB resident where glibc's malloc has none. The code
 * the small workloads and the small programs run comes first now (70
 * KiB with the refill's out-of-line steps; a cat's own after the
 * workloads', SO_TEXT_KB), then what only
 * the other workloads run in a mapping of its own (_nd_os_text_warm):
 * wl_xfree's two threads, each freeing the other's objects, have at most
 * WL_TEXT_KB (one window) of code resident, in 3 mappings (64 KiB).
 * Of that window 16 KiB was code run only by the init and the page
 * level's setup, and ld.so's first call (_init) faulted the whole window
 * in before the init split the mappings. Now the code the small
 * workloads run after the setup comes first, then what runs only before
 * it, then what only other programs run after it, each a mapping (5 in
 * all), and the setup's end drops the second and third
 * (_nd_os_text_drop): 40 KiB in wl_xfree 2, 52 in a cat and a fork's
 * child (72 and 76 before). The first part was 39.7 KiB; the burst
 * count of page.c and the alignment checks of the lending made it 40.05
 * KiB (11 pages): 44, 56 and 56 KiB. A function that grows it past 44
 * fails this test.
 * 2026-11-28: the free object's 16-byte stores (branch swap16) and the
 * exit's purge of the classes above 2 KiB (thrpeak2) grew the code every
 * process runs by 1.1 KiB, past a page boundary (44.6 -> 45.7 KiB):
 * SO_TEXT_KB, SO_FORK_TEXT_KB and WL_TEXT_KB one page more each.
 * Later that day the kept slabs of another class (branches order5,
 * order6), the lists sized by demand (rpat2, rpat3) and the exchange's
 * index (xfree5) grew the code a cat and a fork's child run past the
 * next page boundary, after scripts/hot_text.sh laid it out again:
 * SO_TEXT_KB and SO_FORK_TEXT_KB one page more (wl_xfree 2 unchanged).
 *
 * The topology's tables (0.8 KiB on one node) and the arena headers
 * (1.4 KiB for a node and the mixed slot) were a mapping of a page each:
 * they share one page of .bss now (_nd_os_small).
 *
 * The page descriptors (32 bytes per page of every slot): a slot handed
 * to the buddy allocator as one block wrote, at the first run split from
 * it, a free head at page 2^k for every order k below the slot's, each
 * on a descriptor page of its own: 17 pages (68 KiB) resident for a few
 * allocations. Slots now start as a hole the buddy part grows into,
 * an eager slot's by powers of two from 2 MiB: its hole's head, at page
 * 512, was a descriptor page of its own (5 pages here); from 64 KiB, 4.
 * The hole's head of a slot nothing was given yet is implied, not written
 * at the init: the mixed slot's descriptors are left alone (4 before).
 * The hole's head is implied at every size of the part now: at page 128
 * (a part of 512 KiB) it was a descriptor page of its own: at most
 * DESC_PAGES (3 before).
 *
 * The thread records (nd_thread.h, 64 KiB chunks, every byte written when
 * a thread gets one): the borrowed lists took two lines a class, 10.6 KiB
 * a record, three pages a thread; one line a class (the list's free and
 * used on the next line) makes it 7.6 KiB: the main thread's and
 * RECORDS - 1 others' span at most 2 pages each (11 of 4 before). Records
 * of 7.7 KiB packed end to end still made 2 pages a thread: now each is
 * page-aligned, with what only some threads write (borrowed lists, remote
 * statistics, policy heaps) on its second page, which a fresh record
 * leaves unwritten: threads that malloc and free their own memory have
 * one page each (8 of 4 before). A page counts if present and the
 * process's own (pagemap): a read of an unwritten page maps the shared
 * zero page, which mincore counts but the RSS does not.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "run_cmd.h"

extern char __bss_start[], _end[];

enum { BSS_PAGES = 16, BSS_THREAD_PAGES = 2, SO_BSS_KB = 20, SO_TEXT_KB = 64, WL_TEXT_KB = 48, SO_RODATA_KB = 24, SO_RODATA_GCC_KB = 4, SO_RO_KB = 24, SO_HDR_KB = 12, SO_FORK_TEXT_KB = 64, TEXT_MAPS = 5, DESC_PAGES = 2, RECORDS = 4 };

/* Rss in KiB of the mappings inside [lo, hi) (/proc/self/smaps). */
static long range_rss(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long kb = 0;
	bool in = false;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long a, b;
		long v;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = a >= lo && b <= hi;
		else if (in && sscanf(line, "Rss: %ld kB", &v) == 1)
			kb += v;
	}
	if (f)
		fclose(f);
	return kb;
}

/* Rss in KiB of one of libnodalloc's mappings in a smaps text, -1 if not
 * found: SO_BSS the anonymous mapping right after its rw-p (data)
 * mapping, SO_TEXT its r-xp (code) mappings (all of them: the hot and the
 * cold part), SO_RODATA the r--p mapping right after the code (read-only
 * data and unwind tables), SO_RO all its r--p mappings (ELF headers,
 * read-only data, relro), SO_HDR its first (ELF headers, dynamic symbols,
 * relocations). *maps, if given: how many mappings counted. */
enum so_part { SO_BSS, SO_TEXT, SO_RODATA, SO_RO, SO_HDR };
static long so_rss_n(const char *smaps, enum so_part part, int *maps)
{
	const char *l = smaps;
	const char *prev = "";
	long text = -1;
	int n = 0;
	for (; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long a, b, off;
		char perm[8];
		int used = 0;
		if (sscanf(l, "%lx-%lx %7s %lx %*s %*s%n", &a, &b, perm, &off, &used) != 4)
			continue;
		const char *e = strchr(l, '\n');
		bool named = false;
		for (const char *c = l + used; *c && c != e; c++)
			named |= *c != ' ';
		bool lib = named && strstr(l, "libnodalloc") && strstr(l, "libnodalloc") < e;
		bool hit = part == SO_BSS ? !named && strcmp(prev, "rw-p") == 0
			 : part == SO_TEXT ? lib && strcmp(perm, "r-xp") == 0
			 : part == SO_RO   ? lib && strcmp(perm, "r--p") == 0
			 : part == SO_HDR  ? lib && strcmp(perm, "r--p") == 0 && off == 0
					   : lib && strcmp(perm, "r--p") == 0 && strcmp(prev, "r-xp") == 0;
		if (hit) {
			const char *r = strstr(l, "\nRss:");
			long kb = r ? strtol(r + 5, NULL, 10) : -1;
			n++;
			if ((part != SO_TEXT && part != SO_RO) || kb < 0) {
				text = kb;
				break;
			}
			text = (text < 0 ? 0 : text) + kb;
		}
		if (!lib || strcmp(perm, "---p") != 0) /* the gaps of alignment */
			prev = !lib ? "" : strcmp(perm, "rw-p") == 0 ? "rw-p" : strcmp(perm, "r-xp") == 0 ? "r-xp" : "lib";
	}
	if (maps)
		*maps = n;
	return text;
}

static long so_rss(const char *smaps, enum so_part part)
{
	return so_rss_n(smaps, part, NULL);
}

/* Resident pages of the program's .bss (the library's, linked in). */
static int bss_pages(size_t *n)
{
	uintptr_t a = (uintptr_t)__bss_start & ~(uintptr_t)4095, e = ((uintptr_t)_end + 4095) & ~(uintptr_t)4095;
	*n = (e - a) / 4096;
	static unsigned char v[1 << 12];
	CHECK(*n <= sizeof v && mincore((void *)a, e - a, v) == 0, ".bss of %zu pages", *n);
	int res = 0;
	for (size_t i = 0; i < *n && i < sizeof v; i++)
		res += v[i] & 1;
	return res;
}

static pthread_barrier_t bar;
static uintptr_t rec[RECORDS];

static void *hold(void *arg)
{
	void *volatile p = malloc(100); /* the thread's record */
	free(p);
	rec[(intptr_t)arg] = (uintptr_t)_nd_tls;
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* main counts the pages meanwhile */
	return NULL;
}

/* Pages of [lo, hi) present and mapped by this process alone (pagemap bits
 * 63 and 56: not the zero page, which an unwritten page read maps). */
static int own_pages(uintptr_t lo, uintptr_t hi)
{
	int fd = open("/proc/self/pagemap", O_RDONLY), n = 0;
	CHECK(fd >= 0, "/proc/self/pagemap");
	for (uintptr_t a = lo; fd >= 0 && a < hi; a += 4096) {
		uint64_t e = 0;
		CHECK(pread(fd, &e, sizeof e, (off_t)(a / 4096 * sizeof e)) == sizeof e);
		n += (e >> 63 & 1) && (e >> 56 & 1);
	}
	if (fd >= 0)
		close(fd);
	return n;
}

/* Resident pages of the records of the main thread and RECORDS - 1 live
 * others (contiguous in one chunk: none has exited yet). */
static int record_pages(void)
{
	pthread_t th[RECORDS];
	rec[0] = (uintptr_t)_nd_tls;
	CHECK(pthread_barrier_init(&bar, NULL, RECORDS) == 0);
	for (intptr_t i = 1; i < RECORDS; i++)
		CHECK(pthread_create(&th[i], NULL, hold, (void *)i) == 0);
	pthread_barrier_wait(&bar);
	uintptr_t lo = rec[0], hi = rec[0];
	for (int i = 1; i < RECORDS; i++) {
		lo = rec[i] < lo ? rec[i] : lo;
		hi = rec[i] > hi ? rec[i] : hi;
	}
	lo &= ~(uintptr_t)4095;
	hi = (hi + sizeof(_nd_thread_t) + 4095) & ~(uintptr_t)4095;
	CHECK((hi - lo) / 4096 <= 64, "records %#lx..%#lx", (unsigned long)lo, (unsigned long)hi);
	int res = own_pages(lo, hi);
	pthread_barrier_wait(&bar);
	for (int i = 1; i < RECORDS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	CHECK(pthread_barrier_destroy(&bar) == 0);
	return res;
}

/* A thread that only frees objects main allocated (a consumer: no heap,
 * every free sent home through its record's remote-free buffer). */
enum { CONSUMED = 256 };
static void *consumed[CONSUMED];

static void *consume(void *arg)
{
	(void)arg;
	for (int i = 0; i < CONSUMED; i++)
		free(consumed[i]);
	rec[0] = (uintptr_t)_nd_tls;
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* main counts the pages meanwhile */
	return NULL;
}

/* Resident pages of the consumer's record while it lives. */
static int consumer_pages(void)
{
	for (int i = 0; i < CONSUMED; i++)
		consumed[i] = malloc((size_t)16 << (i % 7)); /* 16 B .. 1 KiB */
	pthread_t th;
	CHECK(pthread_barrier_init(&bar, NULL, 2) == 0);
	CHECK(pthread_create(&th, NULL, consume, NULL) == 0);
	pthread_barrier_wait(&bar);
	uint64_t sent = ((_nd_thread_t *)rec[0])->rf_sent; /* the thread waits: a quiet read */
	int res = own_pages(rec[0], rec[0] + sizeof(_nd_thread_t));
	pthread_barrier_wait(&bar);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK(pthread_barrier_destroy(&bar) == 0);
	CHECK(sent > 0, "the consumer sent its frees home (%lu splices)", (unsigned long)sent);
	return res;
}

int main(void)
{
	void *p[12];
	for (int i = 0; i < 12; i++)
		p[i] = malloc((size_t)16 << i);
	for (int i = 0; i < 12; i++)
		free(p[i]);
	size_t n = 0;
	int res = bss_pages(&n);
	printf(".bss: %d of %zu pages resident\n", res, n);
	CHECK(res <= BSS_PAGES, "%d pages of .bss resident after the init (at most %d)", res, BSS_PAGES);

	size_t slen = 0;
	const void *sm = _nd_stats_private_map(&slen);
	/* the slots start 256 bytes before a page's end (os.c's small page) */
	uintptr_t sb = (uintptr_t)sm & ~(uintptr_t)4095;
	slen += (uintptr_t)sm - sb;
	size_t sn = (slen + 4095) / 4096;
	unsigned char sv[64];
	int sres = 0;
	CHECK(sm && sn <= sizeof sv && mincore((void *)sb, slen, sv) == 0, "statistics mapping %p of %zu bytes", sm, slen);
	for (size_t i = 0; sm && i < sn && i < sizeof sv; i++)
		sres += sv[i] & 1;
	printf("statistics: %d of %zu pages resident\n", sres, sn);
	CHECK(sres <= 1, "%d pages of the statistics' counters resident (at most 1)", sres);

	/* the topology's tables and the arena headers, a mapping of a page
	 * each before, share the small tables' page (_nd_os_small) */
	uintptr_t tp = (uintptr_t)_nd_topo(), ap = (uintptr_t)_nd_page_g.arenas;
	printf("topology at %#lx, arena headers at %#lx\n", (unsigned long)tp, (unsigned long)ap);
	CHECK(tp && ap && tp / 4096 == ap / 4096, "the topology (%#lx) and the arena headers (%#lx) on two pages", (unsigned long)tp,
	      (unsigned long)ap);
	/* the statistics' process-wide and node 0 slots (written by every
	 * process) were a mapping of their own: now they end that page */
	uintptr_t s0 = (uintptr_t)sm, s1 = s0 + 2 * 128 - 1;
	printf("statistics' first slots at %#lx\n", (unsigned long)s0);
	CHECK(s0 / 4096 == tp / 4096 && s1 / 4096 == tp / 4096,
	      "the process-wide and node 0 statistics slots (%#lx..%#lx) are not on the small tables' page (%#lx)",
	      (unsigned long)s0, (unsigned long)s1, (unsigned long)tp);

	long dkb = range_rss((uintptr_t)_nd_page_g.desc, (uintptr_t)_nd_page_g.desc + _nd_page_g.desc_bytes);
	printf("page descriptors: %ld KiB resident\n", dkb);
	CHECK(_nd_page_g.desc && dkb <= DESC_PAGES * 4, "%ld KiB of page descriptors resident (at most %d pages)", dkb,
	      DESC_PAGES);

	int rp = record_pages();
	printf("thread records: %d pages resident for %d threads (%zu bytes each)\n", rp, RECORDS, sizeof(_nd_thread_t));
	CHECK(rp <= RECORDS, "%d pages of %d threads' records resident (at most %d)", rp, RECORDS, RECORDS);
	/* the remote-free counters it writes sat on its record's second
	 * page (cls_remote): two pages; they are on the first (cls_sent) */
	int cp = consumer_pages();
	printf("a consumer's record: %d pages resident\n", cp);
	CHECK(cp == 1, "%d pages of a thread's record resident after it freed %d objects of another thread (1 expected)",
	      cp, CONSUMED);
	int tres = bss_pages(&n);
	printf(".bss: %d pages resident after %d threads exited\n", tres, RECORDS - 1);
	CHECK(tres <= res + BSS_THREAD_PAGES, "%d pages of .bss resident after threads exited, %d before (at most %d more)",
	      tres, res, BSS_THREAD_PAGES);

	char lib[4096];
	snprintf(lib, sizeof lib, "%s/libnodalloc.so", ND_BINARY_DIR);
	/* the least of three runs: with the library aligned to 64 KiB, ld.so
	 * leaves a gap after it that an init mapping sometimes fills up to
	 * the .bss, merging with it (12-16 KiB more in 1 run of 10) */
	long kb = -1;
	for (int i = 0; i < 3; i++) {
		CHECK(run("LD_PRELOAD=%s cat /proc/self/smaps", lib) == 0, "cat under the preloaded library: %s", run_out);
		long b = so_rss(run_out, SO_BSS);
		kb = kb < 0 || (b >= 0 && b < kb) ? b : kb;
	}
	printf("libnodalloc.so .bss: %ld KiB resident\n", kb);
	CHECK(kb >= 0 && kb <= SO_BSS_KB, "%ld KiB of the shared library's .bss resident (at most %d)", kb, SO_BSS_KB);
	kb = so_rss(run_out, SO_TEXT);
	printf("libnodalloc.so code: %ld KiB resident\n", kb);
/* src/hot_text.ld lists the functions of gcc's release build (valgrind
 * 3.19 cannot read clang's DWARF 5; ND_ASSERT's checks make more code) */
#if !defined(__clang__) && !defined(ND_DEBUG)
	CHECK(kb >= 0 && kb <= SO_TEXT_KB,
	      "%ld KiB of the shared library's code resident (at most %d): a function every process runs is not in "
	      "src/hot_text.ld (new, renamed or grown): run scripts/hot_text.sh build build-clang",
	      kb, SO_TEXT_KB);
#endif
	kb = so_rss(run_out, SO_HDR);
	printf("libnodalloc.so headers, dynamic symbols, relocations: %ld KiB resident\n", kb);
#ifdef ND_HAVE_RELR
	CHECK(kb >= 0 && kb <= SO_HDR_KB, "%ld KiB of the shared library's first segment resident (at most %d)", kb,
	      SO_HDR_KB);
#endif
	kb = so_rss(run_out, SO_RODATA);
	printf("libnodalloc.so read-only data: %ld KiB resident\n", kb);
	CHECK(kb >= 0 && kb <= SO_RODATA_KB, "%ld KiB of the shared library's read-only data resident (at most %d)", kb,
	      SO_RODATA_KB);
/* src/hot_rodata.ld names gcc's sections (clang's strings are per file,
 * ND_ASSERT's builds inline other functions) */
#if !defined(__clang__) && !defined(ND_DEBUG)
	CHECK(kb <= SO_RODATA_GCC_KB, "%ld KiB of the shared library's read-only data resident (at most %d): data every "
	      "process reads is not in src/hot_rodata.ld", kb, SO_RODATA_GCC_KB);
	kb = so_rss(run_out, SO_RO);
	printf("libnodalloc.so r--p mappings: %ld KiB resident\n", kb);
	CHECK(kb >= 0 && kb <= SO_RO_KB, "%ld KiB of the shared library's r--p mappings resident in a cat (at most %d)", kb,
	      SO_RO_KB);
#endif

	/* A fork's child (sh's subshell, reading its own smaps with the shell's
	 * read builtin) runs the fork handlers, which sit in the part of the
	 * code only programs other than the small workloads run */
	CHECK(run("LD_PRELOAD=%s sh -c '( while read -r l; do echo \"$l\"; done < /proc/self/smaps )'", lib) == 0,
	      "a subshell under the preloaded library: %s", run_out);
	int maps = 0;
	kb = so_rss_n(run_out, SO_TEXT, &maps);
	printf("libnodalloc.so code in a fork's child: %ld KiB resident, %d mappings\n", kb, maps);
	CHECK(maps == TEXT_MAPS, "the library's code is %d mappings, not %d (_nd_os_text_split)", maps, TEXT_MAPS);
#if !defined(__clang__) && !defined(ND_DEBUG)
	CHECK(kb >= 0 && kb <= SO_FORK_TEXT_KB, "%ld KiB of the shared library's code resident in a fork's child (at most %d)",
	      kb, SO_FORK_TEXT_KB);
#endif

	/* wl_xfree's smaps once both its threads run (killed then: it would
	 * run for seconds) */
	CHECK(run("LD_PRELOAD=%s %s/bench/wl_xfree 2 50000000 >/dev/null & p=$!; "
		  "i=0; until [ $(ls /proc/$p/task 2>/dev/null | wc -l) -ge 3 ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done; "
		  "sleep 0.2; "
		  "cat /proc/$p/smaps; kill $p",
		  lib, ND_BINARY_DIR) == 0,
	      "wl_xfree under the preloaded library: %s", run_out);
	kb = so_rss_n(run_out, SO_TEXT, &maps);
	printf("libnodalloc.so code in wl_xfree 2: %ld KiB resident, %d mappings\n", kb, maps);
	CHECK(maps == TEXT_MAPS, "wl_xfree: the library's code is %d mappings, not %d", maps, TEXT_MAPS);
#if !defined(__clang__) && !defined(ND_DEBUG)
	CHECK(kb >= 0 && kb <= WL_TEXT_KB, "%ld KiB of the shared library's code resident in wl_xfree 2 (at most %d)", kb,
	      WL_TEXT_KB);
	kb = so_rss(run_out, SO_RO);
	printf("libnodalloc.so r--p mappings in wl_xfree 2: %ld KiB resident\n", kb);
	CHECK(kb >= 0 && kb <= SO_RO_KB, "%ld KiB of the shared library's r--p mappings resident in wl_xfree 2 (at most %d)",
	      kb, SO_RO_KB);
#endif
	return CHECK_DONE();
}
