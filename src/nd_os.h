// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 1, os.c. */
#ifndef ND_OS_H
#define ND_OS_H

/* ======================================================================
 * src/os.c: the only file that makes system calls. Each wrapper returns
 * 0 (or a value >= 0) on success and a negative errno on failure; none
 * touches errno, none allocates.
 * ====================================================================== */

/* Kernel mempolicy modes (uapi/linux/mempolicy.h). */
#define ND_MPOL_DEFAULT 0
#define ND_MPOL_PREFERRED 1
#define ND_MPOL_BIND 2
#define ND_MPOL_INTERLEAVE 3
#define ND_MPOL_LOCAL 4
#define ND_MPOL_PREFERRED_MANY 5
#define ND_MPOL_WEIGHTED_INTERLEAVE 6
/* Mode flags get_mempolicy returns OR-ed into the mode. */
#define ND_MPOL_F_STATIC_NODES (1 << 15)
#define ND_MPOL_F_RELATIVE_NODES (1 << 14)
#define ND_MPOL_F_NUMA_BALANCING (1 << 13)
#define ND_MPOL_MODE_FLAGS (ND_MPOL_F_STATIC_NODES | ND_MPOL_F_RELATIVE_NODES | ND_MPOL_F_NUMA_BALANCING)
#define ND_MPOL_F_NODE (1 << 0)
#define ND_MPOL_F_ADDR (1 << 1)
#define ND_MPOL_MF_STRICT (1 << 0)
#define ND_MPOL_MF_MOVE (1 << 1)

/* Anonymous private read-write mapping; NULL on failure (*err = -errno).
 * noreserve: MAP_NORESERVE (reservation only, committed on touch). */
void *_nd_os_mmap(size_t len, bool noreserve, int *err);
/* As _nd_os_mmap but the result is aligned to align (a power of two). */
void *_nd_os_mmap_aligned(size_t len, size_t align, bool noreserve, int *err);
int _nd_os_munmap(void *p, size_t len);
/* Zeroed memory for the small tables of the init (the topology's, the
 * arena headers), never reused: packed in one page of .bss while they
 * fit, else an _nd_os_mmap of whole pages. Lock-free. _nd_os_small_free
 * unmaps only the latter. NULL on failure (*err = -errno). */
void *_nd_os_small(size_t len, int *err);
void _nd_os_small_free(void *p, size_t len);
/* The small page's one tail: len zeroed bytes whose first head (a multiple
 * of the cache line) end the small page, the rest following it (at most
 * 132 KiB) in .bss: a table of which a process writes only the head
 * shares the small tables' page. NULL if taken, too long, or the front
 * has grown into the head. Lock-free; never freed. */
void *_nd_os_small_tail(size_t len, size_t head);
/* Fresh mapping over [p, p+len) (MAP_FIXED): pages, page tables, policy
 * dropped. 0 or -errno. */
int _nd_os_mmap_fixed(void *p, size_t len, bool noreserve);
/* A new mapping at exactly p, never over another one: 0, -EEXIST, -errno. */
int _nd_os_mmap_at(void *p, size_t len, bool noreserve);
int _nd_os_madvise(void *p, size_t len, int advice);
/* Moves the pages of [src, src+len) to [dst, dst+len) (dst's old pages
 * dropped) without copying: mremap with MREMAP_DONTUNMAP, so src stays
 * mapped, empty, with its flags and policy. Both ranges in one mapping's
 * VMAs; src inside one VMA. 0 or -errno. */
int _nd_os_remap_pages(void *src, size_t len, void *dst);
/* Grows the mapping [p, p+len) ends to p + new_len in place (mremap
 * without MREMAP_MAYMOVE): its VMA (the one holding p, which must end at
 * p + len) takes the added range, with its flags and policy. 0, -ENOMEM
 * (the address space after it is not free), -EFAULT, -errno. */
int _nd_os_mremap_grow(void *p, size_t len, size_t new_len);
/* Moves [src, src+len) to dst grown to new_len (mremap MREMAP_MAYMOVE |
 * MREMAP_FIXED): pages, flags and policy move without a copy, whatever
 * was at [dst, dst+new_len) is replaced, src is unmapped. src inside one
 * VMA (else -EFAULT). 0 or -errno. */
int _nd_os_mremap_move(void *src, size_t len, size_t new_len, void *dst);
/* After _nd_os_mremap_move growing by bytes failed with -ENOMEM: true if
 * dst is surely mapped as it was (the kernel refused before unmapping
 * it: the map count), false if it may have been unmapped (or unknown). */
bool _nd_os_move_refused_whole(uint64_t bytes);
int _nd_os_mprotect(void *p, size_t len, int prot);
/* The kernel maps a file's pages 64 KiB about each one a process runs
 * (fault-around), but never across the end of a mapping: the library's
 * code past the functions every process runs (src/hot_text.ld) becomes
 * a mapping of its own (madvise), so running the hot code's last window
 * does not bring in the cold code after it (issue 11: a thread's first
 * remote free, a fork's child ran code past the first 64 KiB: 128 KiB
 * of code resident, 68 since); so do the hot list's other parts (what
 * runs only before the page level's setup's end, what only programs
 * other than the small workloads run after it, what only some workloads
 * run: os.c), so that a small process maps none of them once its setup
 * is done, and the read-only data past what a process reads
 * (src/hot_rodata.ld). Called at the init, before any cold code runs; 0,
 * -ENOENT without the link script's symbols, or -errno. */
int _nd_os_text_split(void);
/* The code run only by the init and the page level's setup (os.c's
 * _nd_os_text_once part), in the window that ld.so's first call (_init)
 * faults in before _nd_os_text_split, stayed resident for the process's
 * life: the setup calls this once done, and the code from _nd_os_text_once
 * to _nd_os_text_warm (what runs only before, what only other programs
 * run after) leaves the process (MADV_DONTNEED: file pages, faulted in
 * again if run). Called from code before _nd_os_text_once, whose return
 * does not fault the pages back. A debugger's breakpoint in those pages,
 * set before the call, is lost; the API's rarer calls (warm and cold
 * parts) are not dropped, so breakpoints there stay. */
void _nd_os_text_drop(void);
/* mask is a bitmap of maxnode bits (kernel convention: maxnode = bits+1
 * is handled inside). */
int _nd_os_mbind(void *p, size_t len, int mode, const uint64_t *mask, unsigned long maxnode_bits, unsigned flags);
int _nd_os_set_mempolicy(int mode, const uint64_t *mask, unsigned long maxnode_bits);
int _nd_os_get_mempolicy(int *mode, uint64_t *mask, unsigned long maxnode_bits, const void *addr, unsigned flags);
/* status[i] receives the node of pages[i] or a negative errno. */
int _nd_os_move_pages(int pid, unsigned long count, const void **pages, const int *nodes, int *status, int flags);
int _nd_os_getcpu(unsigned *cpu, unsigned *node);
/* mask of bytes bytes; returns the number of bytes the kernel wrote. */
int _nd_os_sched_getaffinity(int tid, size_t bytes, uint64_t *mask);
int _nd_os_sched_setaffinity(int tid, size_t bytes, const uint64_t *mask);
int _nd_os_gettid(void);
int _nd_os_getpid(void);
int _nd_os_getppid(void);
/* Secure execution (AT_SECURE: setuid/setgid/capabilities): the
 * environment must not steer the library. */
bool _nd_os_secure(void);
/* Whole-file read into buf (NUL-terminated, truncated to len-1 bytes).
 * Returns bytes read or a negative errno. */
long _nd_os_read_file(const char *path, char *buf, size_t len);
/* Write all of buf to fd (retries short writes). */
int _nd_os_write(int fd, const char *buf, size_t len);
int _nd_os_open(const char *path, int flags, int mode);
/* Bytes of address space RLIMIT_AS still allows (UINT64_MAX: no limit;
 * the limit itself when /proc/self/statm cannot be read). */
uint64_t _nd_os_as_room(void);
/* read(2): bytes read (0 at the end) or -errno; EINTR retried. */
long _nd_os_read(int fd, void *buf, size_t len);
int _nd_os_close(int fd);
/* Directory listing: calls fn(name, arg) for each entry. */
int _nd_os_list_dir(const char *path, void (*fn)(const char *name, void *arg), void *arg);
/* Monotonic nanoseconds (vDSO clock_gettime; not a syscall on x86-64). */
uint64_t _nd_os_now_ns(void);
/* CPU nanoseconds of the calling thread so far (a system call), 0 if
 * unavailable. */
uint64_t _nd_os_thread_cpu_ns(void);
/* rseq area registered by glibc for the calling thread, or NULL. */
struct _nd_rseq_abi {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;   /* kernel >= 6.3 */
	uint32_t mm_cid;    /* kernel >= 6.3 */
};
struct _nd_rseq_abi *_nd_os_rseq_area(void);
/* Size of the rseq area glibc registered (0 if none). */
unsigned _nd_os_rseq_size(void);
/* The next definition of a symbol after this library's (RTLD_NEXT). */
void *_nd_os_next_symbol(const char *sym);
void _nd_os_abort(void) __attribute__((noreturn));
/* The live statistics export's files: lstat/fstat (the fields used),
 * pread (loops until len bytes or end of file: returns bytes read),
 * shared read-write mapping of an open file. */
typedef struct _nd_file_info {
	uint64_t dev, ino, size;
	uint32_t mode; /* S_IFMT type and permission bits */
	uint32_t uid;
} _nd_file_info_t;
int _nd_os_fstat(int fd, _nd_file_info_t *out);
int _nd_os_lstat(const char *path, _nd_file_info_t *out);
long _nd_os_pread(int fd, void *buf, size_t len, uint64_t off);
int _nd_os_ftruncate(int fd, uint64_t len);
void *_nd_os_map_shared_fd(int fd, size_t len, int *err);
int _nd_os_unlink(const char *path);
int _nd_os_getcwd(char *buf, size_t len);
unsigned _nd_os_geteuid(void);
/* pid's start time (/proc/PID/stat field 22) and owner (of /proc/PID):
 * pid and start time name one process. -ESRCH when it is gone. */
int _nd_os_proc_identity(int pid, uint64_t *start, unsigned *uid);
/* Run fn (async-signal-safe) when SIGTERM kills the process, then die of
 * it as before; only if SIGTERM has its default action now (never takes
 * over a handler of the program). 0, or -EBUSY if the program has one. */
int _nd_os_on_sigterm(void (*fn)(void));
/* Gives SIGTERM back its default action if it is still ours (at the
 * library's destructor: exit or dlclose). */
void _nd_os_on_sigterm_off(void);
/* Futex wait/wake on a 32-bit word (private). */
int _nd_os_futex_wait(volatile uint32_t *addr, uint32_t val);
int _nd_os_futex_wake(volatile uint32_t *addr, int n);

#endif /* ND_OS_H */
