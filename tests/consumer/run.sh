#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nodalloc consumed by an outside CMake project (issue 14), three ways:
#   1. add_subdirectory(<nodalloc source>) (tests and benchmarks off by
#      default there, nodalloc::nodalloc alias);
#   2. FetchContent from the source tree (the same, as most projects do it);
#   3. find_package(nodalloc) after cmake --install to a temporary prefix,
#      and pkg-config on that prefix; nodactl of a runtime-only install
#      (no libnodalloc.so) finds the library by soname; then make
#      uninstall empties the prefix.
# Each builds tests/consumer/app.c, which must run and find its block on
# node 0 through nd_malloc_onnode.
#   run.sh SOURCE_DIR BUILD_DIR CMAKE CC
set -u
src=$1 build=$2 cmake=$3 cc=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "consumer: FAIL: $*" >&2; exit 1; }
app=$src/tests/consumer/app.c

# a consumer project whose way in is $1 (CMake lines)
project() {
	local dir=$1 how=$2
	mkdir -p "$dir"
	cat >"$dir/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.16)
project(consumer C)
$how
add_executable(app $app)
target_link_libraries(app PRIVATE nodalloc::nodalloc)
EOT
}
build_run() { # label dir [cmake args]
	local label=$1 dir=$2
	shift 2
	"$cmake" -S "$dir" -B "$dir/b" -DCMAKE_C_COMPILER="$cc" "$@" >"$tmp/$label.log" 2>&1 &&
		"$cmake" --build "$dir/b" -j2 >>"$tmp/$label.log" 2>&1 || { cat "$tmp/$label.log" >&2; fail "$label: build"; }
	out=$("$dir/b/app") || fail "$label: app failed: $out"
	echo "$label: $out"
}

project "$tmp/sub" "add_subdirectory($src nodalloc)"
build_run add_subdirectory "$tmp/sub"
# tests and benchmarks stay out of a consumer's build
grep -q "test_api_placex\|bench_policy" "$tmp/sub/b/Makefile" "$tmp/sub/b/nodalloc/Makefile" &&
	fail "add_subdirectory: nodalloc's tests or benchmarks are built"

project "$tmp/fetch" "include(FetchContent)
FetchContent_Declare(nodalloc SOURCE_DIR $src)
FetchContent_MakeAvailable(nodalloc)"
build_run FetchContent "$tmp/fetch"

prefix=$tmp/prefix
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "install"; }
project "$tmp/pkg" "find_package(nodalloc CONFIG REQUIRED)"
build_run find_package "$tmp/pkg" -DCMAKE_PREFIX_PATH="$prefix"

pcdir=$(dirname "$(find "$prefix" -name nodalloc.pc | head -n1)")
[ -d "$pcdir" ] || fail "pkg-config: no nodalloc.pc installed"
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs nodalloc) || fail "pkg-config nodalloc"
libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir nodalloc)
"$cc" -o "$tmp/app_pc" "$app" $flags -Wl,-rpath,"$libdir" || fail "pkg-config: build"
out=$("$tmp/app_pc") || fail "pkg-config: app failed: $out"
echo "pkg-config: $out"

# a runtime-only install (no unversioned libnodalloc.so, the development
# symlink): nodactl still finds the library, by its soname
find "$prefix" -name libnodalloc.so -delete
pre=$("$prefix/bin/nodactl" --localalloc -- sh -c 'echo "$LD_PRELOAD"' 2>&1) || fail "nodactl without libnodalloc.so: $pre"
case $pre in */libnodalloc.so.[0-9]*) echo "nodactl: preloads $pre" ;; *) fail "nodactl preloads '$pre'" ;; esac

# make uninstall removes every installed file
"$cmake" --build "$build" --target uninstall >"$tmp/uninstall.log" 2>&1 || { cat "$tmp/uninstall.log" >&2; fail "uninstall"; }
left=$(find "$prefix" -type f -o -type l | head -n5)
[ -z "$left" ] || fail "uninstall left: $left"
echo "uninstall: prefix empty"
