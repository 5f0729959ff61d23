// SPDX-License-Identifier: MIT
/* Page level options: purge=free (MADV_FREE) still drops the committed
 * count of a freed big run and keeps the range usable; a small
 * arena_reserve gives small slots whose exhaustion is ENOMEM; a bad purge
 * value and a negative purge_decay_ms are reported by name; a decay too
 * long for nanoseconds in 64 bits is clamped, not wrapped. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"


int main(void)
{
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	char fd[16];
	snprintf(fd, sizeof fd, "%d", pfd[1]);
	_nd_opt_set("msg_fd", fd);
	CHECK(_nd_opt_set("purge", "sometimes") == 0); /* a string option: checked by page.c */
	CHECK(_nd_opt_set("arena_reserve", "10M") == 0); /* rounds up to 16 MiB */
	CHECK(_nd_opt_set("purge_decay_ms", "-7") == 0); /* an integer: checked by reserve.c */
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: cpus=2-3 mem=1G", err, sizeof err) == 0, "%s", err);
	void *p = _nd_page_alloc_exact(0, 1, 1); /* setup reads the options */
	CHECK(p != NULL);
	char msgs[1024] = "";
	ssize_t n = read(pfd[0], msgs, sizeof msgs - 1);
	msgs[n > 0 ? n : 0] = '\0';
	CHECK(strstr(msgs, "nodalloc: warning: NODALLOC_PURGE: bad value 'sometimes'") != NULL, "got: %s", msgs);
	CHECK(strstr(msgs, "nodalloc: warning: NODALLOC_PURGE_DECAY_MS: negative value -7") != NULL, "got: %s", msgs);
	CHECK_EQ(_nd_page_g.decay_ns, 0);
	/* 2^58 ms times 10^6 is 0 mod 2^64 (decay off): clamped, the longest */
	CHECK(_nd_opt_set("purge_decay_ms", "288230376151711744") == 0);
	_nd_reserve_read_options();
	CHECK(_nd_page_g.decay_ns >= (uint64_t)INT64_MAX / 1000000 * 1000000, "decay %llu ns", (unsigned long long)_nd_page_g.decay_ns);
	CHECK(_nd_opt_set("purge_decay_ms", "1000") == 0);
	_nd_reserve_read_options();
	CHECK_EQ(_nd_page_g.decay_ns, 1000000000);
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	CHECK_EQ(in.slot_bytes, 16u << 20);
	CHECK_EQ(in.capacity_pages, (1u << 30) >> 12); /* capacity is the node's, the slot is smaller */
	/* The slot is the limit: 4095 more pages fit, not 4096. */
	errno = 0;
	CHECK(_nd_page_alloc_exact(0, 4096, 1) == NULL && errno == ENOMEM);
	void *q = _nd_page_alloc_exact(0, 2048, 1);
	CHECK(q != NULL);
	int got = -1;
	nd_policy_t pref0;
	CHECK(nd_policy_parse("preferred:0", &pref0, err, sizeof err) == 0);
	void *r = _nd_page_alloc(2048, 1, &pref0, -1, &got); /* no 2048-page block left in slot 0: node 1 */
	CHECK(r != NULL && got == 1, "got %d", got);
	CHECK(_nd_page_free(q) == 0 && _nd_page_free(r) == 0 && _nd_page_free(p) == 0);
	CHECK(_nd_page_check(0, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
