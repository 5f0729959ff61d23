// SPDX-License-Identifier: MIT
/* Address space a process maps now (/proc/self/statm), read without stdio
 * or malloc: tests that set RLIMIT_AS before the first malloc (which
 * reserves the page level's arenas) call it first. 0 if unreadable. */
#ifndef ND_TEST_VM_BYTES_H
#define ND_TEST_VM_BYTES_H
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static unsigned long vm_bytes(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strtoul(buf, NULL, 10) * 4096;
}
#endif
