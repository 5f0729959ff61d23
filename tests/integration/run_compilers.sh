#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C++ programs under nodalloc (new/delete everywhere): cmake configures and
# builds a small project, g++ and clang++ compile cxx_new.cpp to assembly;
# the assembly and the built program's output must be the same as without
# the library. Plain and check modes.
source "$(dirname "$0")/common.sh"
need cmake make g++ clang++
mkdir -p "$WORK/src"
cp "$HERE/cxx_new.cpp" "$HERE/../../include/nodalloc.h" "$WORK/src/"
cat >"$WORK/src/main.cpp" <<'CPP'
#include <cstdio>
#include <map>
#include <string>
#include <vector>
int main() {
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 100000; i++) m[std::to_string(i % 997)].push_back(i);
  size_t s = 0;
  for (auto &kv : m) s += kv.second.size() * kv.first.size();
  std::printf("%zu %zu\n", m.size(), s);
}
CPP
printf 'cmake_minimum_required(VERSION 3.13)\nproject(t CXX)\nadd_executable(t main.cpp)\n' >"$WORK/src/CMakeLists.txt"

# job WORK SRC: prints the assembly's hash and the program's output
cat >"$WORK/job.sh" <<'SH'
set -e -o pipefail
d=$(mktemp -d "$1/build.XXXXXX"); s=$2
for cxx in g++ clang++; do
  "$cxx" -std=c++17 -O2 -S -o - "$s/cxx_new.cpp" | sha256sum
done
cmake -S "$s" -B "$d" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$d" -j2 >/dev/null
"$d/t"
SH

JOB=(bash "$WORK/job.sh" "$WORK" "$WORK/src")
JOB_NAME="g++, clang++, cmake"
"${JOB[@]}" >"$WORK/ref.out" 2>&1 || { echo "FAIL: without nodalloc:"; cat "$WORK/ref.out"; exit 1; }
[ "$(wc -l <"$WORK/ref.out")" -eq 3 ] || { echo "FAIL: expected 3 lines of output:"; cat "$WORK/ref.out"; exit 1; }
variant plain "${ND_STATS[@]}"
served_by_nodalloc cc1plus "$WORK/stats.plain" $((4 << 20))
variant check NODALLOC_CHECK=1
