// SPDX-License-Identifier: MIT
/* Address space a process maps now (/proc/self/statm), read without stdio
 * or malloc: tests that set RLIMIT_AS before the first malloc (which
 * reserves the page level's arenas) call it first. 0 if unreadable. */
#ifndef ND_TEST_VM_BYTES_H
#define ND_TEST_VM_BYTES_H
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Field i of /proc/self/statm (0: size, 1: resident), in pages. Resident
 * counts are approximate on kernels >= 6.2 (per-CPU counters: off by up
 * to 32 pages per CPU), so tests compare them with a margin. */
static unsigned long statm_pages(int i)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	char *s = buf;
	for (; i > 0; i--)
		strtoul(s, &s, 10);
	return strtoul(s, NULL, 10);
}

static unsigned long vm_bytes(void) __attribute__((unused));
static unsigned long vm_bytes(void)
{
	return statm_pages(0) * 4096;
}

/* RLIMIT_AS (soft and hard) set to the address space mapped now plus
 * room bytes: 0, 255 if statm was unreadable, 254 if setrlimit failed
 * (a child's exit status). */
static int as_limit_room(unsigned long room) __attribute__((unused));
static int as_limit_room(unsigned long room)
{
	unsigned long vm = vm_bytes();
	if (!vm)
		return 255;
	struct rlimit rl = { vm + room, vm + room };
	return setrlimit(RLIMIT_AS, &rl) == 0 ? 0 : 254;
}

/* This binary re-executed as name with the argument "child" (env=value
 * set first when env is not NULL; stderr to /dev/null: the warnings of
 * refused mappings): its wait status. */
static int as_limit_child(const char *name, const char *env, const char *value) __attribute__((unused));
static int as_limit_child(const char *name, const char *env, const char *value)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 2);
		if (env)
			setenv(env, value, 1);
		execl("/proc/self/exe", name, "child", (char *)NULL);
		_exit(252);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}
#endif
