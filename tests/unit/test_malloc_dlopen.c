// SPDX-License-Identifier: MIT
/* The library can be dlopen'ed (issue 12 item 7): its initial-exec TLS is
 * one pointer (the thread record's), so it fits in the static TLS surplus
 * glibc keeps for libraries loaded later (about 2.3 KB before did not:
 * "cannot allocate memory in static TLS block"). A process that does not
 * use nodalloc as its malloc (python3, glibc's malloc) loads it with
 * RTLD_LOCAL as a binding would, allocates on a node with
 * nd_malloc_onnode from two threads, one of which outlives dlclose, frees,
 * and unloads it. Also: the library's PT_TLS segment is at most 16 bytes.
 * And with a live export (NODALLOC_STATS_EXPORT=1, whose SIGTERM handler
 * removes the file): after dlclose a SIGTERM ends the process as SIGTERM
 * (the handler left in the unmapped library made it SIGSEGV, audit16). */
#define _GNU_SOURCE
#include <elf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"

static const char *script =
	"import ctypes, threading, sys\n"
	"lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)\n"
	"lib.nd_malloc_onnode.restype = ctypes.c_void_p\n"
	"lib.nd_malloc_onnode.argtypes = [ctypes.c_size_t, ctypes.c_int]\n"
	"lib.nd_node_of.argtypes = [ctypes.c_void_p]\n"
	"lib.nd_free.argtypes = [ctypes.c_void_p]\n"
	"ps = [lib.nd_malloc_onnode(n, 0) for n in (24, 4000, 100000)]\n"
	"assert all(ps), ps\n"
	"assert all(lib.nd_node_of(p) == 0 for p in ps)\n"
	"go = threading.Event(); ready = threading.Event()\n"
	"m, nodeof, fr = lib.nd_malloc_onnode, lib.nd_node_of, lib.nd_free\n"
	"def worker():\n"
	"    q = m(64, 0)\n"
	"    assert q and nodeof(q) == 0\n"
	"    fr(q)\n"
	"    ready.set()\n"
	"    go.wait()\n"
	"t = threading.Thread(target=worker); t.start()\n"
	"ready.wait()\n"
	"del m, nodeof, fr\n"
	"for p in ps: lib.nd_free(p)\n"
	"import _ctypes\n"
	"h = lib._handle\n"
	"del lib\n"
	"_ctypes.dlclose(h)\n"
	"go.set(); t.join()\n"
	"print('dlopen ok')\n";

/* argv[1]: the library. Ends by SIGTERM, after "unloaded". */
static const char *term_script =
	"import ctypes, os, signal, sys, _ctypes\n"
	"path = '/dev/shm/nodalloc-%d.stats' % os.getpid()\n"
	"lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)\n"
	"lib.nd_malloc_onnode.restype = ctypes.c_void_p\n"
	"lib.nd_free.argtypes = [ctypes.c_void_p]\n"
	"lib.nd_free(lib.nd_malloc_onnode(64, 0))\n"
	"assert os.path.exists(path), 'no export'\n"
	"h = lib._handle\n"
	"del lib\n"
	"_ctypes.dlclose(h)\n"
	"assert not os.path.exists(path), 'export left'\n"
	"print('unloaded', flush=True)\n"
	"os.kill(os.getpid(), signal.SIGTERM)\n"
	"print('survived SIGTERM', flush=True)\n";

static long tls_size(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	Elf64_Ehdr eh;
	long r = -2;
	if (fread(&eh, sizeof eh, 1, f) == 1) {
		for (int i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (fseek(f, (long)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize), SEEK_SET) || fread(&ph, sizeof ph, 1, f) != 1)
				break;
			if (ph.p_type == PT_TLS)
				r = (long)ph.p_memsz;
		}
		if (r == -2)
			r = 0;
	}
	fclose(f);
	return r;
}

int main(void)
{
	char lib[4096];
	bool python3 = python3_with_lib("test_malloc_dlopen", "dlopen part ", lib, sizeof lib);
	long t = tls_size(lib);
	CHECK(t >= 0 && t <= 16, "%s: PT_TLS of %ld bytes", lib, t);
	if (!python3)
		return CHECK_DONE();
	char out[4096];
	int st = run_child("/usr/bin/python3", (char *const[]){ "python3", "-c", (char *)script, lib, NULL }, NULL, NULL,
			   true, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "dlopen ok"), "python3 dlopen: status %d, output:\n%s",
	      st, out);
	st = run_child("/usr/bin/python3", (char *const[]){ "python3", "-c", (char *)term_script, lib, NULL },
		       "NODALLOC_STATS_EXPORT", "1", true, out, sizeof out);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && strstr(out, "unloaded"),
	      "SIGTERM after dlclose: status 0x%x (signal %d), output:\n%s", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0, out);
	return CHECK_DONE();
}
