// SPDX-License-Identifier: MIT
/*
 * Under an address space limit (lazy slots), a run that no stretch of
 * free pages can hold fails and leaves the slot's part as it was (and
 * its reserved bytes): the span fallback gives the whole hole to the
 * buddy allocator before it looks (task bigslot), and kept it after a
 * failed look (audit20: reserved_MiB then counted the whole slot).
 * A child sets RLIMIT_AS, pins one page at six aligned eighths of the
 * slot, trims (the part shrinks to end after the last pin, past five
 * eighths: a part grows by powers of two, only a shrink leaves such an
 * end), asks for three eighths:
 * (status bits) 1: the run was served; 2: the part grew; 4: the slot's
 * check failed; 8: a run of a sixteenth fails afterwards.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "vm_bytes.h"

static int child(void)
{
	int e = as_limit_room(256ul << 20);
	if (e)
		return e;
	free(malloc(16)); /* the page level set up */
	_nd_page_info_t in;
	if (_nd_page_info(0, &in) != 0 || !in.usable || !_nd_page_lazy())
		return 250;
	uint64_t eighth = in.slot_pages / 8;
	void *pin[6];
	for (int k = 0; k < 6; k++)
		if (!(pin[k] = _nd_page_alloc_exact(0, 1, eighth)))
			return 251;
	_nd_page_trim(0); /* the part shrinks to end after the last pin */
	if (_nd_page_info(0, &in) != 0 || in.mapped_pages <= 5 * eighth || in.mapped_pages == in.slot_pages)
		return 252; /* not the premise: a part past five eighths, a hole after it */
	uint64_t part = in.mapped_pages;
	int st = 0;
	void *r = _nd_page_alloc_exact(0, 3 * eighth, 1);
	if (r) {
		st |= 1;
		_nd_page_free(r);
	}
	if (_nd_page_info(0, &in) != 0 || in.mapped_pages != part)
		st |= 2;
	char err[256] = "";
	if (_nd_page_check(0, err, sizeof err) != 0)
		st |= 4;
	void *one = _nd_page_alloc_exact(0, eighth / 2, 1);
	if (!one)
		st |= 8;
	else
		_nd_page_free(one);
	for (int k = 0; k < 6; k++)
		_nd_page_free(pin[k]);
	return st;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child();
	int st = as_limit_child("test_page_aslimit_span", NULL, NULL);
	CHECK(WIFEXITED(st), "the child was killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	CHECK(rc == 0, "child status %d (1: the run was served, 2: the part grew, 4: slot check failed, 8: a run of a "
		       "sixteenth failed; 25x: setup)", rc);
	return CHECK_DONE();
}
