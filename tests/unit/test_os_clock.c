// SPDX-License-Identifier: MIT
/* The library's clock (_nd_os_now_ns: decay, the large-run cache, the
 * watermark reads) calls the vDSO's __vdso_clock_gettime, found in the
 * vDSO's symbol table, not libc's clock_gettime (issue 11): that wrapper
 * sits in a 64 KiB window of libc's code that nothing else a malloc-only
 * process runs touches, and the kernel maps a file's pages 64 KiB about
 * each fault. `cat /proc/self/smaps` under LD_PRELOAD had 1176-1208 KiB
 * of libc resident, 1112 since (1088 without the library).
 *  - the shared library imports no clock_gettime;
 *  - its clock is CLOCK_MONOTONIC: each reading lies between two of
 *    libc's taken around it. */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "internal.h"
#include "run_cmd.h"

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	CHECK(run("nm -D --undefined-only %s/libnodalloc.so", ND_BINARY_DIR) == 0, "nm: %s", run_out);
	CHECK(strstr(run_out, "memset") && !strstr(run_out, "clock_gettime"),
	      "libnodalloc.so imports libc's clock_gettime:\n%s", run_out);
	int bad = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t a = mono(), n = _nd_os_now_ns(), b = mono();
		bad += !(a <= n && n <= b);
	}
	CHECK(bad == 0, "%d of 1000 readings outside libc's CLOCK_MONOTONIC readings around them", bad);
	return CHECK_DONE();
}
