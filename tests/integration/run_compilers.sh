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

# job DIR: prints the assembly's hash and the program's output
cat >"$WORK/job.sh" <<'SH'
set -e -o pipefail
d=$1; s=$2
for cxx in g++ clang++; do
  "$cxx" -std=c++17 -O2 -S -o - "$s/cxx_new.cpp" | sha256sum
done
cmake -S "$s" -B "$d" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$d" -j2 >/dev/null
"$d/t"
SH

bash "$WORK/job.sh" "$WORK/b.plain0" "$WORK/src" >"$WORK/none.out" 2>&1 || { echo "FAIL: without nodalloc:"; cat "$WORK/none.out"; exit 1; }
variant() {
  local name=$1; shift
  env "$@" LD_PRELOAD="$LIB" bash "$WORK/job.sh" "$WORK/b.$name" "$WORK/src" >"$WORK/$name.out" 2>"$WORK/$name.err" 9>>"$WORK/stats.$name" || {
    echo "FAIL: ($name) exited with $?"; tail -20 "$WORK/$name.err"; exit 1; }
  no_nodalloc_errors "$WORK/$name.err"
  same_output "g++, clang++, cmake ($name)" "$WORK/none.out" "$WORK/$name.out"
}
variant plain "${ND_STATS[@]}"
served_by_nodalloc cc1plus "$WORK/stats.plain" $((4 << 20))
variant check NODALLOC_CHECK=1
