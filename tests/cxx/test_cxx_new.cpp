// SPDX-License-Identifier: MIT
// The library defines C++'s operators new and delete (src/malloc.c): a
// program's new and delete reach nodalloc directly, a sized delete keeps
// its size (check mode verifies it), and out of memory still runs the
// new_handler and throws std::bad_alloc (the C++ runtime's operator, called
// when nodalloc has no memory), or returns nullptr for the nothrow forms.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <sys/wait.h>
#include <unistd.h>

#include "nodalloc.h"
#include "cxx_check.hpp"

// Every operator of the Itanium C++ ABI that a C++17 program calls.
static const char *const operators[] = {
	"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
	"_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t",
	"_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
	"_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

// The definition the program's calls bind to is the library's.
static void test_bound_to_nodalloc()
{
	for (const char *name : operators) {
		void *f = dlsym(RTLD_DEFAULT, name);
		Dl_info info;
		bool ours = f && dladdr(f, &info) && info.dli_fname && std::strstr(info.dli_fname, "libnodalloc");
		if (!ours)
			std::fprintf(stderr, "  %s is defined by %s\n", name, f && dladdr(f, &info) ? info.dli_fname : "nobody");
		CHECK(ours);
	}
}

struct alignas(128) Line {
	char b[200];
};

static void test_new_delete()
{
	for (size_t n = 0; n <= 40000; n = n * 2 + 1) {
		char *p = new char[n];
		CHECK(p != nullptr);
		CHECK(nd_usable_size(p) >= n);
		std::memset(p, 0x5a, n);
		delete[] p;
	}
	Line *l = new Line[3];
	CHECK(((uintptr_t)l & 127) == 0);
	delete[] l;
	for (size_t al = 32; al <= 8192; al *= 4) {
		void *p = ::operator new(1000, std::align_val_t(al));
		CHECK(((uintptr_t)p & (al - 1)) == 0);
		::operator delete(p, 1000, std::align_val_t(al));
		p = ::operator new[](al * 3, std::align_val_t(al), std::nothrow);
		CHECK(p && ((uintptr_t)p & (al - 1)) == 0);
		::operator delete[](p, std::align_val_t(al), std::nothrow);
	}
	// sized delete with the size the block was asked with (check mode
	// verifies it against the block)
	for (size_t n = 1; n <= 3000000; n = n * 3 + 7)
		::operator delete(::operator new(n), n);
}

static int handler_calls;
static void handler()
{
	handler_calls++;
	std::set_new_handler(nullptr); // the next failure throws
}

static void test_out_of_memory()
{
	const size_t huge = (size_t)1 << 60;
	for (int form = 0; form < 4; form++) {
		handler_calls = 0;
		std::set_new_handler(handler);
		bool threw = false;
		void *p = nullptr;
		try {
			if (form == 0)
				p = ::operator new(huge);
			else if (form == 1)
				p = ::operator new[](huge);
			else
				p = ::operator new(huge, std::align_val_t(form == 2 ? 64 : 8192));
		} catch (const std::bad_alloc &) {
			threw = true;
		}
		CHECK(threw && p == nullptr);
		CHECK(handler_calls == 1);
	}
	std::set_new_handler(nullptr);
	CHECK(::operator new(huge, std::nothrow) == nullptr);
	CHECK(::operator new[](huge, std::nothrow) == nullptr);
	CHECK(::operator new(huge, std::align_val_t(4096), std::nothrow) == nullptr);
	// the handler runs for the nothrow forms too, and its retry can succeed
	handler_calls = 0;
	std::set_new_handler(handler);
	CHECK(::operator new(huge, std::nothrow) == nullptr && handler_calls == 1);
	std::set_new_handler(nullptr);
}

// Child: a sized delete that names the wrong size, under NODALLOC_CHECK=1.
static int child_mismatch()
{
	void *p = ::operator new(1000);
	::operator delete(p, 24);
	return 0;
}

// Check mode catches a sized delete with a wrong size: only possible if the
// size reaches nodalloc (the C++ runtime's sized delete drops it).
static void test_sized_mismatch(const char *self)
{
	int fd[2];
	if (pipe(fd) != 0) {
		CHECK(!"pipe");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		setenv("NODALLOC_CHECK", "1", 1);
		execl(self, self, "mismatch", (char *)nullptr);
		_exit(127);
	}
	close(fd[1]);
	char buf[4096];
	size_t len = 0;
	ssize_t r;
	while ((r = read(fd[0], buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = 0;
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(std::strstr(buf, "size 24 is not the size of block") != nullptr);
	if (failed)
		std::fprintf(stderr, "  child status %#x, stderr: %s\n", st, buf);
}

int main(int argc, char **argv)
{
	if (argc > 1 && std::strcmp(argv[1], "mismatch") == 0)
		return child_mismatch();
	test_bound_to_nodalloc();
	test_new_delete();
	test_out_of_memory();
	test_sized_mismatch(argv[0]);
	std::printf("test_cxx_new: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
