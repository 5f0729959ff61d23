// SPDX-License-Identifier: MIT
/*
 * Platform layer: every system call of the library is made here, raw (no
 * libc wrapper, no errno), with the x86-64 numbers from <sys/syscall.h>.
 * Wrappers return a value >= 0 or a negative errno. Nothing here allocates
 * or uses stdio; sysfs files are read into caller-provided buffers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h> /* struct sysinfo, */
#include <sys/utsname.h> /* struct utsname only: the calls are raw */
#include <time.h>

#include "internal.h"

#if !defined(__x86_64__)
#error "nodalloc's platform layer is written for x86-64 Linux"
#endif

static inline long sc6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#define sc0(n) sc6(n, 0, 0, 0, 0, 0, 0)
#define sc1(n, a) sc6(n, (long)(a), 0, 0, 0, 0, 0)
#define sc2(n, a, b) sc6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sc3(n, a, b, c) sc6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sc4(n, a, b, c, d) sc6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* ---- memory mappings --------------------------------------------------- */

void *_nd_os_mmap(size_t len, bool noreserve, int *err)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0);
	long r = sc6(SYS_mmap, 0, (long)len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (r < 0 && r > -4096) {
		if (err)
			*err = (int)r;
		return NULL;
	}
	return (void *)r;
}

void *_nd_os_mmap_aligned(size_t len, size_t align, bool noreserve, int *err)
{
	if (align <= ND_PAGE_SIZE)
		return _nd_os_mmap(len, noreserve, err);
	/* Over-map by align, then trim both ends: the result keeps its
	 * alignment and the unused head and tail go back at once. */
	size_t over = len + align;
	if (over < len) {
		if (err)
			*err = -ENOMEM;
		return NULL;
	}
	char *p = _nd_os_mmap(over, noreserve, err);
	if (!p)
		return NULL;
	uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	size_t head = start - (uintptr_t)p;
	size_t tail = over - head - len;
	if (head)
		_nd_os_munmap(p, head);
	if (tail)
		_nd_os_munmap((char *)start + len, tail);
	return (void *)start;
}

int _nd_os_munmap(void *p, size_t len)
{
	return (int)sc2(SYS_munmap, p, len);
}

/* The topology's tables (~0.8 KiB on one node and a few CPUs) and the
 * arena headers (1.4 KiB for one node and the mixed slot) had a mapping
 * of a page each: one page for both in a small process (issue 11).
 * The statistics' counters (1025 slots of 128 bytes, of which every
 * process writes two: the process-wide one and node 0's) were a mapping
 * of their own, its first page one more resident page: they are the
 * tail (_nd_os_small_tail), whose head ends the small page and whose rest
 * follows it in .bss, untouched unless written (other nodes' slots).
 * small_used: bytes handed out from the front | the tail's head << 32,
 * one word (CAS), so that the front never grows into a tail taken
 * meanwhile; never given back. */
#define SMALL_TAIL_MAX ((size_t)132 << 10)
static ND_BIG_TABLE char small_page[ND_PAGE_SIZE + SMALL_TAIL_MAX];
static uint64_t small_used;

void *_nd_os_small(size_t len, int *err)
{
	size_t want = ND_ALIGN_UP(len, (size_t)ND_CACHE_LINE);
	uint64_t w = __atomic_load_n(&small_used, __ATOMIC_RELAXED);
	for (;;) {
		size_t at = (uint32_t)w, lim = ND_PAGE_SIZE - (size_t)(w >> 32); /* at <= lim */
		if (want > lim - at)
			break;
		if (__atomic_compare_exchange_n(&small_used, &w, w + want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return small_page + at;
	}
	return _nd_os_mmap(ND_ALIGN_UP(len, ND_PAGE_SIZE), false, err);
}

void *_nd_os_small_tail(size_t len, size_t head)
{
	if (head % ND_CACHE_LINE || head > len || len - head > SMALL_TAIL_MAX)
		return NULL;
	uint64_t w = __atomic_load_n(&small_used, __ATOMIC_RELAXED);
	do {
		if ((w >> 32) || head > ND_PAGE_SIZE - (uint32_t)w)
			return NULL; /* taken, or the front has grown into its head */
	} while (!__atomic_compare_exchange_n(&small_used, &w, w | (uint64_t)head << 32, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return small_page + ND_PAGE_SIZE - head;
}

void _nd_os_small_free(void *p, size_t len)
{
	if ((char *)p < small_page || (char *)p >= small_page + sizeof small_page)
		_nd_os_munmap(p, ND_ALIGN_UP(len, ND_PAGE_SIZE));
}

int _nd_os_madvise(void *p, size_t len, int advice)
{
	return (int)sc3(SYS_madvise, p, len, advice);
}

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7 */
#endif
int _nd_os_remap_pages(void *src, size_t len, void *dst)
{
	long r = sc6(SYS_mremap, (long)src, (long)len, (long)len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
		     (long)dst, 0);
	return r < 0 && r > -4096 ? (int)r : 0;
}

int _nd_os_mremap_grow(void *p, size_t len, size_t new_len)
{
	long r = sc4(SYS_mremap, p, len, new_len, 0);
	return r < 0 && r > -4096 ? (int)r : 0;
}

int _nd_os_mremap_move(void *src, size_t len, size_t new_len, void *dst)
{
	long r = sc6(SYS_mremap, (long)src, (long)len, (long)new_len, MREMAP_MAYMOVE | MREMAP_FIXED, (long)dst, 0);
	return r < 0 && r > -4096 ? (int)r : 0;
}

int _nd_os_mprotect(void *p, size_t len, int prot)
{
	return (int)sc3(SYS_mprotect, p, len, prot);
}

/* The library's code, laid out by its link script (CMakeLists.txt,
 * src/hot_text.ld): what the small workloads run after the init and the
 * page level's setup, from _nd_os_text_once what runs only before
 * (init, setup), from _nd_os_text_other what only other programs run
 * after, from _nd_os_text_warm what only some workloads run, from
 * _nd_os_text_cold the rest, to _nd_os_text_end. Undefined (0) in a
 * link without that script, such as a program linking the static
 * library. */
extern const char _nd_os_text_once[] __attribute__((weak, visibility("hidden")));
extern const char _nd_os_text_other[] __attribute__((weak, visibility("hidden")));
extern const char _nd_os_text_warm[] __attribute__((weak, visibility("hidden")));
extern const char _nd_os_text_cold[] __attribute__((weak, visibility("hidden")));
extern const char _nd_os_text_end[] __attribute__((weak, visibility("hidden")));
/* The same for the read-only data (src/hot_rodata.ld): the data a process
 * reads, then from _nd_os_rodata_cold (page-aligned) to _nd_os_rodata_end
 * the rest. */
extern const char _nd_os_rodata_cold[] __attribute__((weak, visibility("hidden")));
extern const char _nd_os_rodata_end[] __attribute__((weak, visibility("hidden")));

static inline uintptr_t page_up(const char *p)
{
	return ND_ALIGN_UP((uintptr_t)p, ND_PAGE_SIZE);
}

int _nd_os_text_split(void)
{
	uintptr_t once = page_up(_nd_os_text_once), oth = page_up(_nd_os_text_other), w = page_up(_nd_os_text_warm);
	uintptr_t lo = page_up(_nd_os_text_cold), hi = page_up(_nd_os_text_end);
	if (!_nd_os_text_once || !_nd_os_text_other || !_nd_os_text_warm || !_nd_os_text_cold || !_nd_os_text_end ||
	    !(once <= oth && oth <= w && w <= lo && lo < hi))
		return -ENOENT;
	/* Each part a mapping: neighbours' advice differs, or they would
	 * merge. MADV_RANDOM (code run at random, if at all: no read-ahead
	 * of its file) on every other part, so that a split costs no more
	 * calls than parts. */
	uintptr_t rlo = (uintptr_t)_nd_os_rodata_cold, rhi = page_up(_nd_os_rodata_end);
	if (_nd_os_rodata_cold && _nd_os_rodata_end && rlo < rhi)
		sc3(SYS_madvise, rlo, rhi - rlo, MADV_RANDOM);
	if (w < lo)
		sc3(SYS_madvise, w, lo - w, MADV_RANDOM);
	return once < oth ? (int)sc3(SYS_madvise, once, oth - once, MADV_RANDOM) : 0;
}

/* MADV_DONTNEED on the parts run only before the setup's end and by other
 * programs: a page of the file refaults as it was (another thread running
 * it merely faults), but a private copy is lost: a debugger's breakpoint
 * (ptrace, /proc/PID/mem), a uprobe or a patch written there. So only the
 * pages pagemap says are the file's, or not present and not swapped (a
 * swapped one is a private copy), go; pagemap unreadable (no /proc):
 * none. A breakpoint set between the read and the call is lost: the
 * window is this function. Inlined system calls: the helpers sit in the
 * dropped part or the cold one (src/hot_text.ld). */
void _nd_os_text_drop(void)
{
	uintptr_t lo = page_up(_nd_os_text_once), hi = page_up(_nd_os_text_warm);
	if (lo >= hi) /* both 0 without the link script */
		return;
	long fd = sc4(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	uint64_t e[32]; /* 128 KiB of code a read: the parts are about 30 */
	for (uintptr_t a = lo; a < hi;) {
		size_t n = (hi - a) >> ND_PAGE_SHIFT;
		n = n < 32 ? n : 32;
		long r = sc4(SYS_pread64, fd, e, n * sizeof e[0], (long)((a >> ND_PAGE_SHIFT) * sizeof e[0]));
		if (r != (long)(n * sizeof e[0]))
			break;
		uintptr_t run = a; /* start of the pages to drop */
		for (size_t i = 0; i <= n; i++) {
			uintptr_t pg = a + (i << ND_PAGE_SHIFT);
			bool file = i < n && (e[i] >> 63 & 1 ? e[i] >> 61 & 1 : !(e[i] >> 62 & 1));
			if (file)
				continue;
			if (run < pg)
				sc3(SYS_madvise, run, pg - run, MADV_DONTNEED);
			run = pg + ND_PAGE_SIZE;
		}
		a += n << ND_PAGE_SHIFT;
	}
	sc1(SYS_close, fd);
}

/* ---- memory policy ----------------------------------------------------- */

/* The kernel reads maxnode-1 bits (a historical off-by-one): pass bits+1. */
int _nd_os_mbind(void *p, size_t len, int mode, const uint64_t *mask, unsigned long maxnode_bits, unsigned flags)
{
	return (int)sc6(SYS_mbind, (long)p, (long)len, mode, (long)mask,
			mask ? (long)(maxnode_bits + 1) : 0, flags);
}

int _nd_os_set_mempolicy(int mode, const uint64_t *mask, unsigned long maxnode_bits)
{
	return (int)sc3(SYS_set_mempolicy, mode, mask, mask ? maxnode_bits + 1 : 0);
}

int _nd_os_get_mempolicy(int *mode, uint64_t *mask, unsigned long maxnode_bits, const void *addr, unsigned flags)
{
	return (int)sc6(SYS_get_mempolicy, (long)mode, (long)mask,
			mask ? (long)(maxnode_bits + 1) : 0, (long)addr, flags, 0);
}

int _nd_os_move_pages(int pid, unsigned long count, const void **pages, const int *nodes, int *status, int flags)
{
	return (int)sc6(SYS_move_pages, pid, (long)count, (long)pages, (long)nodes, (long)status, flags);
}

/* ---- CPUs and threads -------------------------------------------------- */

int _nd_os_getcpu(unsigned *cpu, unsigned *node)
{
	return (int)sc3(SYS_getcpu, cpu, node, 0);
}

int _nd_os_sched_getaffinity(int tid, size_t bytes, uint64_t *mask)
{
	return (int)sc3(SYS_sched_getaffinity, tid, bytes, mask);
}

int _nd_os_sched_setaffinity(int tid, size_t bytes, const uint64_t *mask)
{
	return (int)sc3(SYS_sched_setaffinity, tid, bytes, mask);
}

int _nd_os_gettid(void)
{
	return (int)sc0(SYS_gettid);
}

int _nd_os_getpid(void)
{
	return (int)sc0(SYS_getpid);
}

bool _nd_os_secure(void)
{
	/* the kernel's AT_SECURE: set-user/group-ID or file capabilities
	 * (glibc's __libc_enable_secure); libc reads it from the aux vector */
	return getauxval(AT_SECURE) != 0;
}

int _nd_os_getppid(void)
{
	return (int)sc0(SYS_getppid);
}

/* glibc >= 2.35 registers rseq for every thread and publishes where. Weak,
 * so that an older libc simply means "no rseq". */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

unsigned _nd_os_rseq_size(void)
{
	return &__rseq_size ? __rseq_size : 0;
}

struct _nd_rseq_abi *_nd_os_rseq_area(void)
{
	if (_nd_os_rseq_size() == 0)
		return NULL;
	char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return (struct _nd_rseq_abi *)(tp + __rseq_offset);
}

/* CLOCK_MONOTONIC from the vDSO's own function, looked up once in its
 * symbol table, not through libc's clock_gettime: that wrapper sits in a
 * 64 KiB window of libc's code (the kernel maps a file's pages 64 KiB
 * about each fault) that nothing else a malloc-only process runs touches:
 * 64 KiB of peak RSS in every process (issue 11). Without a vDSO or the
 * symbol, the system call. */
typedef int (*cgt_fn)(clockid_t, struct timespec *);

static int cgt_syscall(clockid_t c, struct timespec *ts)
{
	return (int)sc2(SYS_clock_gettime, c, ts);
}

static bool same_name(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* Not inlined: run once, at the init or the setup, so that it sits in
 * the code _nd_os_text_drop takes out (src/hot_text.ld). */
static __attribute__((noinline)) cgt_fn vdso_clock_gettime(void)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	if (!eh || eh->e_ident[EI_MAG0] != ELFMAG0 || eh->e_ident[EI_MAG1] != ELFMAG1 || eh->e_ident[EI_MAG2] != ELFMAG2 ||
	    eh->e_ident[EI_MAG3] != ELFMAG3 || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	const char *base = (const char *)eh;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(const void *)(base + eh->e_phoff);
	uintptr_t load = 0;
	const Elf64_Dyn *dyn = NULL;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !load)
			load = (uintptr_t)base + ph[i].p_offset - ph[i].p_vaddr;
		else if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(const void *)(base + ph[i].p_offset);
	}
	const Elf64_Sym *sym = NULL;
	const char *str = NULL;
	const Elf64_Word *hash = NULL; /* DT_HASH: its nchain is the symbol count */
	for (; load && dyn && dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			sym = (const Elf64_Sym *)(load + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			str = (const char *)(load + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			hash = (const Elf64_Word *)(load + dyn->d_un.d_ptr);
	}
	for (Elf64_Word i = 0; sym && str && hash && i < hash[1]; i++)
		if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && sym[i].st_shndx != SHN_UNDEF &&
		    same_name(str + sym[i].st_name, "__vdso_clock_gettime"))
			return (cgt_fn)(load + sym[i].st_value);
	return NULL;
}

static cgt_fn cgt; /* atomic: NULL until the first call looks it up */

uint64_t _nd_os_now_ns(void)
{
	cgt_fn f = __atomic_load_n(&cgt, __ATOMIC_RELAXED);
	if (nd_unlikely(!f)) { /* racing threads find the same */
		f = vdso_clock_gettime();
		if (!f)
			f = cgt_syscall;
		__atomic_store_n(&cgt, f, __ATOMIC_RELAXED);
	}
	struct timespec ts;
	f(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID: time spent
 * waiting for a CPU is left out, a page fault's kernel time, the host's
 * share of it on a VM included), 0 if unavailable. A system call: the
 * vDSO does not serve CPU clocks. */
uint64_t _nd_os_thread_cpu_ns(void)
{
	struct timespec ts;
	if (cgt_syscall(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The definition of sym that follows this library's in the lookup order
 * (dlsym RTLD_NEXT: the C++ runtime's operator new), NULL if none. Not a
 * system call, but the one use of the dynamic linker: kept here with the
 * other ways out of the library. */
void *_nd_os_next_symbol(const char *sym)
{
	return dlsym(RTLD_NEXT, sym);
}

void _nd_os_abort(void)
{
	/* SIGABRT to ourselves, as abort() does, without its stdio flush. */
	int tid = _nd_os_gettid(), pid = _nd_os_getpid();
	sc3(SYS_tgkill, pid, tid, 6 /* SIGABRT */);
	sc1(SYS_exit_group, 134);
	__builtin_unreachable();
}

int _nd_os_futex_wait(volatile uint32_t *addr, uint32_t val)
{
	return (int)sc6(SYS_futex, (long)addr, FUTEX_WAIT_PRIVATE, val, 0, 0, 0);
}

int _nd_os_futex_wake(volatile uint32_t *addr, int n)
{
	return (int)sc3(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n);
}

/* ---- files (sysfs, procfs, output) ------------------------------------- */

int _nd_os_open(const char *path, int flags, int mode)
{
	return (int)sc4(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode);
}

int _nd_os_close(int fd)
{
	return (int)sc1(SYS_close, fd);
}

long _nd_os_read_file(const char *path, char *buf, size_t len)
{
	if (len == 0)
		return -EINVAL;
	int fd = _nd_os_open(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	size_t got = 0;
	while (got < len - 1) {
		long r = sc3(SYS_read, fd, buf + got, len - 1 - got);
		if (r == -EINTR)
			continue;
		if (r < 0) {
			_nd_os_close(fd);
			return r;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	_nd_os_close(fd);
	return (long)got;
}

int _nd_os_write(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		long r = sc3(SYS_write, fd, buf, len);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return (int)r;
		buf += r;
		len -= (size_t)r;
	}
	return 0;
}

struct nd_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

int _nd_os_list_dir(const char *path, void (*fn)(const char *name, void *arg), void *arg)
{
	int fd = _nd_os_open(path, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	char buf[4096] __attribute__((aligned(8)));
	for (;;) {
		long n = sc3(SYS_getdents64, fd, buf, sizeof buf);
		if (n < 0) {
			_nd_os_close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			struct nd_dirent64 *d = (struct nd_dirent64 *)(buf + off);
			if (d->d_name[0] != '.')
				fn(d->d_name, arg);
			off += d->d_reclen;
		}
	}
	_nd_os_close(fd);
	return 0;
}

/* ---- files for the live statistics export ------------------------------ */

static void fill_info(const struct stat *st, _nd_file_info_t *out)
{
	out->dev = st->st_dev;
	out->ino = st->st_ino;
	out->size = (uint64_t)st->st_size;
	out->mode = st->st_mode;
	out->uid = st->st_uid;
}

int _nd_os_fstat(int fd, _nd_file_info_t *out)
{
	struct stat st;
	long r = sc4(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH);
	if (r < 0)
		return (int)r;
	fill_info(&st, out);
	return 0;
}

int _nd_os_lstat(const char *path, _nd_file_info_t *out)
{
	struct stat st;
	long r = sc4(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW);
	if (r < 0)
		return (int)r;
	fill_info(&st, out);
	return 0;
}

long _nd_os_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		long r = sc4(SYS_pread64, fd, (char *)buf + got, len - got, (long)(off + got));
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (long)got;
}

int _nd_os_ftruncate(int fd, uint64_t len)
{
	return (int)sc2(SYS_ftruncate, fd, (long)len);
}

void *_nd_os_map_shared_fd(int fd, size_t len, int *err)
{
	long r = sc6(SYS_mmap, 0, (long)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r < 0 && r > -4096) {
		if (err)
			*err = (int)r;
		return NULL;
	}
	return (void *)r;
}

int _nd_os_unlink(const char *path)
{
	return (int)sc3(SYS_unlinkat, AT_FDCWD, path, 0);
}

int _nd_os_getcwd(char *buf, size_t len)
{
	long r = sc2(SYS_getcwd, buf, len);
	return r < 0 ? (int)r : 0;
}

unsigned _nd_os_geteuid(void)
{
	return (unsigned)sc0(SYS_geteuid);
}

/* Start time of process pid (field 22 of /proc/PID/stat, clock ticks after
 * boot: with the pid it names one process, whatever reuses the pid later)
 * and its owner (the owner of /proc/PID). -ESRCH when it is gone (a zombie
 * too), another -errno when it cannot be told. */
int _nd_os_proc_identity(int pid, uint64_t *start, unsigned *uid)
{
	char path[48], buf[1024];
	if (pid <= 0)
		return -ESRCH;
	/* "/proc/" PID, by hand: this layer calls nothing above it. */
	char digits[12];
	int nd = 0;
	for (unsigned v = (unsigned)pid; v; v /= 10)
		digits[nd++] = (char)('0' + v % 10);
	int n = 0;
	for (const char *c = "/proc/"; *c; c++)
		path[n++] = *c;
	while (nd)
		path[n++] = digits[--nd];
	path[n] = '\0';
	_nd_file_info_t fi = { 0 };
	int r = _nd_os_lstat(path, &fi);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r; /* gone */
	*uid = fi.uid;
	path[n] = '/';
	path[n + 1] = 's';
	path[n + 2] = 't';
	path[n + 3] = 'a';
	path[n + 4] = 't';
	path[n + 5] = '\0';
	long len = _nd_os_read_file(path, buf, sizeof buf);
	if (len < 0)
		return len == -ENOENT ? -ESRCH : (int)len;
	/* "pid (comm) S ppid ...": comm may hold spaces and ')', so count
	 * fields from the last ')'; the state is field 3, start time 22. */
	const char *p = NULL;
	for (const char *q = buf; *q; q++)
		if (*q == ')')
			p = q;
	if (!p)
		return -EINVAL;
	if (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return -ESRCH; /* exited, not yet reaped: gone all the same */
	for (int field = 2; field < 22 && *p; p++)
		if (*p == ' ')
			field++;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	*start = v;
	return 0;
}

/* Replaces [p, p+len) with a fresh private anonymous mapping (MAP_FIXED,
 * atomically under the kernel's mmap lock): its pages, page tables and
 * memory policy go, so a later fault of a whole aligned 2 MiB may get a
 * transparent huge page (MADV_DONTNEED keeps the page tables, and a PMD
 * with a page table only gets 4 KiB faults). The caller must own the
 * range. On failure (-errno) the range may, rarely, be left unmapped. */
int _nd_os_mmap_fixed(void *p, size_t len, bool noreserve)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | (noreserve ? MAP_NORESERVE : 0);
	long r = sc6(SYS_mmap, (long)p, (long)len, PROT_READ | PROT_WRITE, flags, -1, 0);
	return r < 0 && r > -4096 ? (int)r : 0;
}

/* A new mapping at exactly p (MAP_FIXED_NOREPLACE: never over another
 * mapping). 0, or -EEXIST when any of [p, p+len) is taken (also on a
 * kernel before 4.17, which takes the flag as a hint), or -errno. */
int _nd_os_mmap_at(void *p, size_t len, bool noreserve)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | (noreserve ? MAP_NORESERVE : 0);
	long r = sc6(SYS_mmap, (long)p, (long)len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (r < 0 && r > -4096)
		return (int)r;
	if ((void *)r != p) {
		sc2(SYS_munmap, r, (long)len);
		return -EEXIST;
	}
	return 0;
}

/* read(2) of up to len bytes (EINTR retried): bytes read, 0 at the end,
 * or -errno. For files read in pieces (/proc/zoneinfo grows with CPUs). */
long _nd_os_read(int fd, void *buf, size_t len)
{
	long r;
	do
		r = sc3(SYS_read, fd, buf, len);
	while (r == -EINTR);
	return r;
}

/* Address space still allowed under RLIMIT_AS: the soft limit minus the
 * process's size now (/proc/self/statm, first field). UINT64_MAX when
 * unlimited or unknown. */
uint64_t _nd_os_as_room(void)
{
	struct { uint64_t cur, max; } lim;
	if (sc4(SYS_prlimit64, 0, 9 /* RLIMIT_AS */, 0, &lim) < 0 || lim.cur == UINT64_MAX)
		return UINT64_MAX;
	char buf[128];
	/* No /proc (a container without it): the limit itself, the space in
	 * use unknown. Still a limit: the lazy layout, whose mappings find
	 * where the room really ends (UINT64_MAX took the eager one, 64 MiB
	 * slots under ulimit -v 400000: malloc(100 MiB) failed; audit15) */
	if (_nd_os_read_file("/proc/self/statm", buf, sizeof buf) <= 0)
		return lim.cur;
	uint64_t pages = 0;
	for (const char *s = buf; *s >= '0' && *s <= '9'; s++)
		pages = pages * 10 + (uint64_t)(*s - '0');
	uint64_t used = pages << ND_PAGE_SHIFT;
	return used >= lim.cur ? 0 : lim.cur - used;
}

/* After mremap(MREMAP_MAYMOVE | MREMAP_FIXED) growing a private mapping
 * by bytes failed with ENOMEM: whether the destination is surely still
 * mapped as it was. Linux checks the map count (vm.max_map_count) before
 * it unmaps the destination since 5.1; after the unmap come only the
 * commit charge (vm.overcommit_memory: any growth under 2, the strict
 * rule; more than RAM + swap at once under 0, the heuristic; none under
 * 1) and allocations of the kernel's own that do not fail. Unknown (no
 * /proc, an older kernel): false. A refused move's cleanup, rare. */
bool _nd_os_move_refused_whole(uint64_t bytes)
{
	struct utsname u;
	if (sc1(SYS_uname, &u) < 0)
		return false;
	unsigned major = 0, minor = 0;
	const char *r = u.release;
	for (; *r >= '0' && *r <= '9'; r++)
		major = major * 10 + (unsigned)(*r - '0');
	for (r += *r == '.'; *r >= '0' && *r <= '9'; r++)
		minor = minor * 10 + (unsigned)(*r - '0');
	if (major < 5 || (major == 5 && minor < 1))
		return false;
	char buf[8];
	if (_nd_os_read_file("/proc/sys/vm/overcommit_memory", buf, sizeof buf) <= 0 || buf[0] == '2')
		return false;
	if (buf[0] == '1')
		return true;
	struct sysinfo si;
	if (sc1(SYS_sysinfo, &si) < 0)
		return false;
	uint64_t unit = si.mem_unit ? si.mem_unit : 1;
	return bytes / unit <= (uint64_t)si.totalram + si.totalswap;
}

/* ---- termination signals (the live statistics export) ------------------ */

static void (*term_fn)(void);

/* Our SIGTERM handler: the cleanup, then the default action. Installed
 * with SA_RESETHAND, so when the kernel delivered it the disposition is
 * SIG_DFL again: re-raising (blocked until we return) then terminates as
 * if we had never been there. If the program installed its own handler
 * later and chains to ours, the disposition is theirs: return to them. */
static void on_term(int sig)
{
	term_fn();
	struct sigaction cur;
	if (sigaction(sig, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL)
		sc3(SYS_tgkill, _nd_os_getpid(), _nd_os_gettid(), sig);
}

int _nd_os_on_sigterm(void (*fn)(void))
{
	struct sigaction old, sa = { 0 };
	/* libc's sigaction: it supplies the x86-64 sa_restorer. */
	if (sigaction(SIGTERM, NULL, &old) != 0)
		return -EINVAL;
	if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
		return -EBUSY; /* the program's own disposition stays */
	term_fn = fn;
	sa.sa_handler = on_term;
	sa.sa_flags = SA_RESETHAND | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGTERM, &sa, NULL) == 0 ? 0 : -EINVAL;
}

void _nd_os_on_sigterm_off(void)
{
	struct sigaction cur, dfl = { 0 };
	/* Only our own disposition (a program's later handler stays): after
	 * dlclose on_term is unmapped, and SIGTERM would crash the process
	 * (SIGSEGV) instead of ending it. */
	if (!term_fn || sigaction(SIGTERM, NULL, &cur) != 0 || cur.sa_handler != on_term)
		return;
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGTERM, &dfl, NULL);
}
