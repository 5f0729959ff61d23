#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs, through apt, what the build and the tests need and is missing.
# Idempotent and quiet when everything is there.
set -u
pkgs=(
  build-essential cmake pkg-config clang  # build (gcc and clang), install test
  python3 sqlite3 memcached   # real programs under LD_PRELOAD (malloc users)
  redis-server postgresql     # servers under LD_PRELOAD (run_redis.sh, run_postgres.sh)
  xz-utils zstd pigz perl     # multi-threaded programs under LD_PRELOAD (run_threads.sh)
  qemu-system-x86 busybox-static cpio  # the NUMA VM test bed
  libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 valgrind gnuplot-nox  # benchmarks
)
# python3's own regression tests (run_pysuite.sh): the package names the version
py=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) &&
  pkgs+=("libpython$py-testsuite")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q "${missing[@]}" >/dev/null; }; then
  echo "install-deps: error: apt-get could not install: ${missing[*]}" >&2
  exit 1
fi
