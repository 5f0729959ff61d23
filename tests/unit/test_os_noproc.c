// SPDX-License-Identifier: MIT
/* Without /proc (a container that does not mount it) the library still
 * works: the setup's end reads /proc/self/pagemap to keep private code
 * pages (os.c's _nd_os_text_drop: unreadable, it drops nothing), the
 * address space limit's room reads /proc/self/statm (unreadable: no
 * limit assumed), the watermarks read /proc/zoneinfo. python3, with the
 * shared library preloaded, runs in a mount namespace whose /proc is an
 * empty tmpfs: its objects (nodalloc's: nd_node_of), threads and a large
 * block work and it exits 0 (audit15: a suspicion cleared). Under an
 * address space limit too: without statm the room is the limit itself
 * (the lazy layout), so a 100 MiB block under ulimit -v 400000 works, as
 * with /proc (before: the eager layout's 64 MiB slots, ENOMEM). Skipped
 * where a mount namespace cannot be made (no CAP_SYS_ADMIN). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"

static const char *script =
	"import ctypes, os, threading\n"
	"assert not os.path.exists('/proc/self/pagemap'), '/proc is still there'\n"
	"nd = ctypes.CDLL(None)\n"
	"nd.nd_malloc.restype = ctypes.c_void_p\n"
	"nd.nd_malloc.argtypes = [ctypes.c_size_t]\n"
	"nd.nd_free.argtypes = [ctypes.c_void_p]\n"
	"nd.nd_node_of.argtypes = [ctypes.c_void_p]\n"
	"b = ctypes.create_string_buffer(100000)\n"
	"assert nd.nd_node_of(ctypes.addressof(b)) >= 0, 'python3 buffers are not nodalloc blocks'\n"
	"x = [bytes(i % 5000) for i in range(50000)]\n"
	"def work():\n"
	"    y = [bytearray(i % 70000) for i in range(5000)]\n"
	"    assert sum(map(len, y)) == sum(i % 70000 for i in range(5000))\n"
	"t = [threading.Thread(target=work) for _ in range(4)]\n"
	"for s in t: s.start()\n"
	"for s in t: s.join()\n"
	"p = nd.nd_malloc(1 << 24)\n"
	"assert p and nd.nd_node_of(p) >= 0\n"
	"ctypes.memset(p, 7, 1 << 24)\n"
	"nd.nd_free(p)\n"
	"assert sum(map(len, x)) == sum(i % 5000 for i in range(50000))\n"
	"print('noproc ok')\n";

static const char *big_script =
	"import ctypes, os\n"
	"assert not os.path.exists('/proc/self/statm'), '/proc is still there'\n"
	"nd = ctypes.CDLL(None)\n"
	"nd.nd_malloc.restype = ctypes.c_void_p\n"
	"nd.nd_malloc.argtypes = [ctypes.c_size_t]\n"
	"nd.nd_free.argtypes = [ctypes.c_void_p]\n"
	"p = nd.nd_malloc(100 << 20)\n"
	"assert p, 'malloc(100 MiB) failed under the limit'\n"
	"ctypes.memset(p, 7, 100 << 20)\n"
	"nd.nd_free(p)\n"
	"print('noproc limit ok')\n";

/* In the child before exec: a mount namespace with an empty /proc, and
 * the address space limit *arg (bytes) if arg is not NULL. */
static void hide_proc(void *arg)
{
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("none", "/proc", "tmpfs", 0, NULL) != 0)
		_exit(77);
	if (arg) {
		struct rlimit rl = { *(const rlim_t *)arg, *(const rlim_t *)arg };
		if (setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(78);
	}
}

int main(void)
{
	char lib[4096];
	if (!python3_with_lib("test_os_noproc", "", lib, sizeof lib))
		return CHECK_DONE();
	char out[8192];
	int st = run_child_then("/usr/bin/python3", (char *const[]){ "python3", "-c", (char *)script, NULL }, "LD_PRELOAD",
				lib, true, out, sizeof out, hide_proc, NULL);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("test_os_noproc: no mount namespace here, skipped\n");
		return CHECK_DONE();
	}
	printf("%s", out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "noproc ok"), "python3: status %d, output:\n%s", st,
	      out);
	rlim_t lim = (rlim_t)400000 << 10; /* ulimit -v 400000 */
	st = run_child_then("/usr/bin/python3", (char *const[]){ "python3", "-c", (char *)big_script, NULL }, "LD_PRELOAD",
			    lib, true, out, sizeof out, hide_proc, &lim);
	printf("%s", out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "noproc limit ok"),
	      "python3 under ulimit -v 400000 without /proc: status %d, output:\n%s", st, out);
	return CHECK_DONE();
}
