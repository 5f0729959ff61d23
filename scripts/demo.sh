#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: show the machine's topology as nodalloc sees it, then run a
# real program under the library and print the per-node table at its exit.
set -eu
build=${1:-build}
"$build/nodactl" --hardware
echo
echo "== python3 under nodalloc (NODALLOC_STATS=1) =="
LD_PRELOAD="$PWD/$build/libnodalloc.so" NODALLOC_STATS=1 \
  /usr/bin/python3 -c 'd={i:str(i)*10 for i in range(200000)}; print("dict of", len(d), "entries built")'
