// SPDX-License-Identifier: MIT
/* The setup's end drops the code run only before it (os.c's
 * _nd_os_text_drop, MADV_DONTNEED): a page of the file refaults as it
 * was, but a private copy of a code page does not come back: what a
 * debugger (ptrace, /proc/PID/mem), a uprobe or a live patch wrote there
 * was lost (gdb's breakpoint on nd_realloc, set before the run, was never
 * hit: audit14). The drop now leaves pages that are not the file's.
 *
 * A process that does not use nodalloc as its malloc (python3) loads the
 * shared library, checks that its page level is not set up yet (the
 * topology can still be replaced), writes every page of the library's
 * code back as it was through /proc/self/mem (as a debugger's breakpoint
 * does: each page becomes a private copy, pagemap's file bit clear), then
 * sets the page level up with an allocation: every one of those pages is
 * still the process's private copy. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"

static const char *script =
	"import ctypes, struct, sys\n"
	"lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)\n"
	"err = ctypes.create_string_buffer(256)\n"
	"assert lib.nd_topology_emulate(b'0: cpus=0 mem=64M', err, 256) == 0, 'set up before: ' + err.value.decode()\n"
	"PG = 4096\n"
	"code = []\n"
	"for l in open('/proc/self/maps'):\n"
	"    f = l.split()\n"
	"    if len(f) >= 6 and f[1] == 'r-xp' and f[5].rsplit('/', 1)[-1].startswith('libnodalloc.so'):\n"
	"        lo, hi = (int(x, 16) for x in f[0].split('-'))\n"
	"        code.append((lo, hi))\n"
	"assert code, 'no code mapping of the library'\n"
	"pages = [a for lo, hi in code for a in range(lo, hi, PG)]\n"
	"with open('/proc/self/mem', 'r+b', buffering=0) as m:\n"
	"    for a in pages:\n"
	"        m.seek(a); b = m.read(1); m.seek(a); m.write(b)\n"
	"def private():\n"
	"    n = 0\n"
	"    with open('/proc/self/pagemap', 'rb') as pm:\n"
	"        for a in pages:\n"
	"            pm.seek(a // PG * 8)\n"
	"            e, = struct.unpack('<Q', pm.read(8))\n"
	"            n += (e >> 63 & 1) == 1 and (e >> 61 & 1) == 0\n"
	"    return n\n"
	"before = private()\n"
	"assert before == len(pages), '%d of %d code pages private after the writes' % (before, len(pages))\n"
	"lib.nd_malloc.restype = ctypes.c_void_p\n"
	"lib.nd_malloc.argtypes = [ctypes.c_size_t]\n"
	"lib.nd_free.argtypes = [ctypes.c_void_p]\n"
	"p = lib.nd_malloc(64)\n"
	"assert p\n"
	"lib.nd_free(p)\n"
	"after = private()\n"
	"print('code pages %d, private %d before the setup, %d after' % (len(pages), before, after))\n"
	"assert after == before, 'the setup dropped %d private code pages' % (before - after)\n"
	"print('text drop ok')\n";

int main(void)
{
	char lib[4096];
	if (!python3_with_lib("test_os_text_drop", "", lib, sizeof lib))
		return CHECK_DONE();
	char out[8192];
	int st = run_child("/usr/bin/python3", (char *const[]){ "python3", "-c", (char *)script, lib, NULL }, NULL, NULL,
			   true, out, sizeof out);
	printf("%s", out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "text drop ok"), "python3: status %d, output:\n%s",
	      st, out);
	return CHECK_DONE();
}
