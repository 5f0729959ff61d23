#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# unit.pkg_install (registered by cmake/install.cmake): installs the current
# build tree into a temporary prefix and uses it the way a user would.
#   0. the layout: libraries with their SONAME links, header, nodactl, man
#      page, nodalloc.pc, the CMake package; the installed nodactl runs;
#   a. pkg-config: the flags, then a program built with them and run with
#      LD_LIBRARY_PATH (and one linked whole from static_libs);
#   b. find_package(nodalloc CONFIG): nodalloc::nodalloc and nodalloc::static
#      (linked with --whole-archive, both ways the config knows), built, run;
#   c. the man page renders without a warning (when man/groff are here).
# Every program reports where nd_node_of and malloc came from and where
# nd_malloc_onnode(1 MiB, 0) put its memory; see check_run.
#
# usage: pkg_install.sh BUILD_DIR SOURCE_DIR VERSION CC CMAKE
set -u
build=$1 src=$2 version=$3 cc=$4 cmake=$5

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nd-pkg.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
note() { echo "NOTE: $*"; }

# ---- 0. install and check the layout -----------------------------------------
prefix=$tmp/prefix
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "cmake --install $build --prefix $prefix (is the build complete?)"; }
ok "cmake --install into $prefix"

so=$(find "$prefix" -name libnodalloc.so -print -quit)
[ -n "$so" ] || fail "no libnodalloc.so under $prefix"
libdir=$(dirname "$so")
rel=${libdir#"$prefix"/}
case $rel in
lib | lib64 | lib/x86_64-linux-gnu) ;;
*) fail "libdir $rel: the installed nodactl looks in ../lib, ../lib/x86_64-linux-gnu, ../lib64 only" ;;
esac
# libnodalloc.so -> libnodalloc.so.0 -> libnodalloc.so.0.<minor>
[ -L "$libdir/libnodalloc.so" ] || fail "libnodalloc.so is not a symlink"
[ "$(readlink "$libdir/libnodalloc.so")" = libnodalloc.so.0 ] ||
	fail "libnodalloc.so -> $(readlink "$libdir/libnodalloc.so"), expected libnodalloc.so.0"
[ -L "$libdir/libnodalloc.so.0" ] || fail "libnodalloc.so.0 is not a symlink"
real=$(readlink "$libdir/libnodalloc.so.0")
[ "$real" = "libnodalloc.so.$version" ] || fail "libnodalloc.so.0 -> $real, expected libnodalloc.so.$version"
{ [ -f "$libdir/$real" ] && [ ! -L "$libdir/$real" ]; } || fail "$real is not a regular file"
soname=$(objdump -p "$libdir/$real" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libnodalloc.so.0 ] || fail "SONAME of $real is '$soname', expected libnodalloc.so.0"
[ -f "$libdir/libnodalloc.a" ] || fail "no $rel/libnodalloc.a"
ar t "$libdir/libnodalloc.a" | grep -q 'malloc\.c\.o$' || fail "libnodalloc.a has no malloc.c.o"
cmp -s "$prefix/include/nodalloc.h" "$src/include/nodalloc.h" || fail "include/nodalloc.h missing or not the source's"
pc=$libdir/pkgconfig/nodalloc.pc
[ -f "$pc" ] || fail "no $rel/pkgconfig/nodalloc.pc"
for f in nodallocConfig.cmake nodallocConfigVersion.cmake nodallocTargets.cmake; do
	[ -f "$libdir/cmake/nodalloc/$f" ] || fail "no $rel/cmake/nodalloc/$f"
done
man1=$prefix/share/man/man1/nodactl.1
[ -f "$man1" ] || fail "no share/man/man1/nodactl.1"
if [ -x "$build/nodactl" ]; then
	[ -x "$prefix/bin/nodactl" ] || fail "the build has nodactl but bin/nodactl is not installed"
	# the installed copy runs from its new place (it is linked statically)
	"$prefix/bin/nodactl" --help >"$tmp/help.out" 2>&1 || { cat "$tmp/help.out" >&2; fail "bin/nodactl --help exits $?"; }
	grep -q -- --hardware "$tmp/help.out" || fail "bin/nodactl --help does not list --hardware"
	ok "bin/nodactl runs"
else
	note "no nodactl in the build: bin/nodactl not checked"
fi
if grep -rqF -- "$build" "$prefix/include" "$libdir/pkgconfig" "$libdir/cmake"; then
	fail "an installed text file names the build tree $build"
fi
ok "layout under $prefix ($rel), SONAME $soname"

# ---- the test program ----------------------------------------------------------
# Prints key=value lines; "fromlib" is 1 when the symbol is defined in the
# installed libnodalloc.so, "inexe" when it is in the executable itself.
cat >"$tmp/app.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nodalloc.h>

int main(int argc, char **argv);

static void where(const char *name, void *sym, const char *lib)
{
	Dl_info d, m;
	char a[PATH_MAX], b[PATH_MAX];
	if (!dladdr(sym, &d) || !dladdr((void *)main, &m)) {
		printf("%s_fromlib=0\n%s_inexe=0\n", name, name);
		return;
	}
	int fromlib = d.dli_fname && realpath(d.dli_fname, a) && realpath(lib, b) && strcmp(a, b) == 0;
	printf("%s_fromlib=%d\n%s_inexe=%d\n", name, fromlib, name, d.dli_fbase == m.dli_fbase);
}

int main(int argc, char **argv)
{
	const char *lib = argc > 1 ? argv[1] : "";
	where("nd_node_of", (void *)nd_node_of, lib);
	where("malloc", (void *)malloc, lib);
	size_t n = 1 << 20;
	char *p = nd_malloc_onnode(n, 0);
	if (!p) {
		printf("onnode=null\n");
		return 2;
	}
	memset(p, 0x5a, n);
	printf("onnode_node=%d\nonnode_usable=%zu\n", nd_node_of(p), nd_usable_size(p));
	void *q = malloc(100);
	printf("malloc_node=%d\n", nd_node_of(q));
	free(q);
	nd_free(p);
	printf("node_limit=%d\n", nd_node_limit());
	return 0;
}
EOF

# check_run LABEL KIND OUTPUT: KIND is shared (nodalloc comes from the
# installed .so) or static (linked whole into the executable).
exports_malloc=0
nm -D --defined-only "$libdir/$real" | awk '{ print $NF }' | grep -qx malloc && exports_malloc=1
stub_noted=0
check_run() {
	local label=$1 kind=$2 out=$3
	val() { sed -n "s/^$1=//p" "$out"; }
	[ "$(val node_limit)" -ge 1 ] 2>/dev/null || { cat "$out" >&2; fail "$label: no node_limit line (did it run?)"; }
	if [ "$kind" = shared ]; then
		[ "$(val nd_node_of_fromlib)" = 1 ] || fail "$label: nd_node_of does not come from $libdir/$real"
	else
		[ "$(val nd_node_of_inexe)" = 1 ] || fail "$label: nd_node_of is not in the executable"
	fi
	# The malloc override: the library exports malloc once the allocator
	# is real; then the program's malloc must be nodalloc's.
	if [ $exports_malloc = 1 ]; then
		if [ "$kind" = shared ]; then
			[ "$(val malloc_fromlib)" = 1 ] || fail "$label: malloc is not libnodalloc's"
		else
			[ "$(val malloc_inexe)" = 1 ] || fail "$label: malloc is not nodalloc's (archive not linked whole?)"
		fi
	fi
	# nd_malloc_onnode(1 MiB, 0): on node 0 (every machine has it). The
	# bootstrap allocator (before the slab issue) forwards to the C library
	# and reports usable size 0: then only that it ran is checked.
	local usable node
	usable=$(val onnode_usable) node=$(val onnode_node)
	if [ "$usable" = 0 ]; then
		[ $stub_noted = 1 ] || note "nd_usable_size is 0: the allocator is still the bootstrap stub, node checks skipped"
		stub_noted=1
	else
		[ "$usable" -ge 1048576 ] 2>/dev/null || fail "$label: nd_usable_size(1 MiB block) = '$usable'"
		[ "$node" = 0 ] || fail "$label: nd_node_of(nd_malloc_onnode(1 MiB, 0)) = '$node', expected 0"
		if [ $exports_malloc = 1 ]; then
			[ "$(val malloc_node)" -ge 0 ] 2>/dev/null || fail "$label: nd_node_of(malloc(100)) = '$(val malloc_node)'"
		fi
	fi
	ok "$label"
}

# ---- a. pkg-config -------------------------------------------------------------
pkgconf=
for c in pkg-config pkgconf; do
	command -v $c >/dev/null && { pkgconf=$c; break; }
done
[ -n "$pkgconf" ] || fail "neither pkg-config nor pkgconf is installed (apt-get install pkg-config; it belongs in scripts/install-deps.sh)"
# only our directory, so that a nodalloc installed on the system cannot answer
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig PKG_CONFIG_PATH=
# (words re-joined by single spaces: pkgconf leaves a trailing blank)
pcv() {
	local out
	out=$($pkgconf "$@" nodalloc 2>&1) || fail "$pkgconf $* nodalloc: $out"
	# shellcheck disable=SC2086
	echo $out
}
[ "$(pcv --modversion)" = "$version" ] || fail "pkg-config --modversion: '$(pcv --modversion)', expected $version"
cflags=$(pcv --cflags) libs=$(pcv --libs) slibs=$(pcv --static --libs)
[ "$cflags" = "-I$prefix/include" ] || fail "pkg-config --cflags: '$cflags', expected -I$prefix/include"
[ "$libs" = "-L$libdir -lnodalloc" ] || fail "pkg-config --libs: '$libs', expected -L$libdir -lnodalloc"
case " $slibs " in *" -lnodalloc "*"-lpthread "*) ;; *) fail "pkg-config --static --libs: '$slibs', expected -lnodalloc ... -lpthread" ;; esac
whole=$(pcv --variable=static_libs)
[ "$whole" = "-Wl,--whole-archive $libdir/libnodalloc.a -Wl,--no-whole-archive -lpthread" ] ||
	fail "pkg-config --variable=static_libs: '$whole'"
ok "$pkgconf: --cflags '$cflags' --libs '$libs' --static --libs '$slibs'"

# shellcheck disable=SC2086 # the flags are words
"$cc" -o "$tmp/app_pc" "$tmp/app.c" $cflags $libs -ldl 2>"$tmp/cc.err" ||
	{ cat "$tmp/cc.err" >&2; fail "cc app.c \$(pkg-config --cflags --libs nodalloc)"; }
LD_LIBRARY_PATH=$libdir "$tmp/app_pc" "$libdir/$real" >"$tmp/pc.out" 2>&1 ||
	{ cat "$tmp/pc.out" >&2; fail "app built with pkg-config exits $?"; }
check_run "pkg-config, shared: built and ran" shared "$tmp/pc.out"

# shellcheck disable=SC2086
"$cc" -o "$tmp/app_pcs" "$tmp/app.c" $cflags $whole -ldl 2>"$tmp/cc.err" ||
	{ cat "$tmp/cc.err" >&2; fail "cc app.c \$(pkg-config --variable=static_libs nodalloc)"; }
objdump -p "$tmp/app_pcs" | grep -q 'NEEDED.*libnodalloc' && fail "the static_libs program needs libnodalloc.so"
"$tmp/app_pcs" "$libdir/$real" >"$tmp/pcs.out" 2>&1 || { cat "$tmp/pcs.out" >&2; fail "app linked from static_libs exits $?"; }
check_run "pkg-config, static_libs (whole archive): built and ran" static "$tmp/pcs.out"

# ---- b. find_package -----------------------------------------------------------
mkdir -p "$tmp/cm"
cp "$tmp/app.c" "$tmp/cm/app.c"
cat >"$tmp/cm/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(nd_pkg_user C)
# the version file: 0.x accepts only its own minor version
find_package(nodalloc 99 CONFIG QUIET)
if(nodalloc_FOUND)
  message(FATAL_ERROR "find_package(nodalloc 99) accepted version \${nodalloc_VERSION}")
endif()
find_package(nodalloc $version CONFIG REQUIRED)
if(NOT nodalloc_VERSION STREQUAL "$version" OR NOT EXISTS "\${nodalloc_LIBRARY}"
   OR NOT EXISTS "\${nodalloc_INCLUDE_DIR}/nodalloc.h")
  message(FATAL_ERROR "nodalloc_VERSION '\${nodalloc_VERSION}' nodalloc_LIBRARY '\${nodalloc_LIBRARY}' nodalloc_INCLUDE_DIR '\${nodalloc_INCLUDE_DIR}'")
endif()
add_executable(app_shared app.c)
target_link_libraries(app_shared PRIVATE nodalloc::nodalloc \${CMAKE_DL_LIBS})
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE nodalloc::static \${CMAKE_DL_LIBS})
EOF
# twice: with CMake's WHOLE_ARCHIVE link feature (3.24+) and with the raw
# linker flags the config uses on older CMake
for variant in feature flags; do
	b=$tmp/cm-$variant
	extra=()
	[ $variant = flags ] && extra=(-DNODALLOC_NO_LINK_LIBRARY_FEATURE=ON)
	"$cmake" -S "$tmp/cm" -B "$b" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
		-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "${extra[@]}" >"$tmp/cm.log" 2>&1 ||
		{ cat "$tmp/cm.log" >&2; fail "configuring a find_package(nodalloc) project ($variant)"; }
	"$cmake" --build "$b" >>"$tmp/cm.log" 2>&1 ||
		{ cat "$tmp/cm.log" >&2; fail "building a find_package(nodalloc) project ($variant)"; }
	grep -q "nodalloc_DIR:PATH=$libdir/cmake/nodalloc" "$b/CMakeCache.txt" ||
		fail "find_package found $(grep nodalloc_DIR "$b/CMakeCache.txt"), not $libdir/cmake/nodalloc"
	link=$(cat "$b/CMakeFiles/app_static.dir/link.txt")
	case $link in
	*"--whole-archive $libdir/libnodalloc.a "*"--no-whole-archive"* | \
		*"--push-state,--whole-archive $libdir/libnodalloc.a "*"--pop-state"* | \
		*"-Xlinker --push-state -Xlinker --whole-archive $libdir/libnodalloc.a "*"--pop-state"*) ;;
	*) fail "nodalloc::static ($variant) is not linked with --whole-archive: $link" ;;
	esac
	grep -q "$libdir/libnodalloc.so" "$b/CMakeFiles/app_shared.dir/link.txt" ||
		fail "nodalloc::nodalloc does not link $libdir/libnodalloc.so"
	"$b/app_shared" "$libdir/$real" >"$tmp/cs.out" 2>&1 || { cat "$tmp/cs.out" >&2; fail "app_shared ($variant) exits $?"; }
	check_run "find_package nodalloc::nodalloc ($variant): built and ran" shared "$tmp/cs.out"
	"$b/app_static" "$libdir/$real" >"$tmp/cst.out" 2>&1 || { cat "$tmp/cst.out" >&2; fail "app_static ($variant) exits $?"; }
	check_run "find_package nodalloc::static ($variant): built and ran" static "$tmp/cst.out"
done

# ---- c. the man page -----------------------------------------------------------
if command -v groff >/dev/null; then
	groff -man -Tutf8 -ww -z "$man1" 2>"$tmp/groff.err" || fail "groff fails on nodactl.1: $(cat "$tmp/groff.err")"
	[ ! -s "$tmp/groff.err" ] || fail "groff warns on nodactl.1: $(cat "$tmp/groff.err")"
	ok "groff -man -ww: no warning"
else
	note "no groff: nodactl.1 not checked by groff"
fi
if command -v man >/dev/null; then
	MANWIDTH=80 MANPAGER=cat PAGER=cat man -l "$man1" >"$tmp/man.out" 2>"$tmp/man.err" ||
		fail "man -l nodactl.1 exits $?: $(cat "$tmp/man.err")"
	[ ! -s "$tmp/man.err" ] || fail "man -l nodactl.1 complains: $(cat "$tmp/man.err")"
	for want in 'NODACTL(1)' SYNOPSIS 'EXIT STATUS' NODALLOC_LIBRARY 'numastat(8)'; do
		grep -qF "$want" "$tmp/man.out" || fail "the rendered man page has no '$want'"
	done
	head -1 "$tmp/man.out"
	ok "man -l nodactl.1 renders"
else
	note "no man: nodactl.1 not rendered"
fi
echo "PASS"
