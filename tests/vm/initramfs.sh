#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the test bed's initramfs (gzip'd newc cpio):
#   bash tests/vm/initramfs.sh OUT.cpio.gz EXPECTED_TOPOLOGY_FILE BINARY...
# Holds busybox (static) with its applet links in /bin, /init, the test
# binaries (vm_*) in /vmtest, any other binary given (nodactl, the programs
# tests run) in /bin, and every shared library they need as ldd resolves it
# (libnodalloc.so from the build directory, libc, the dynamic loader), each
# at the same absolute path as on the host so RUNPATH and PT_INTERP work.
set -euo pipefail
out=${1:?usage: initramfs.sh OUT EXPECTED BINARY...}
expected=${2:?}
shift 2
here=$(cd "$(dirname "$0")" && pwd)

bb=$(command -v busybox || true)
[ -x /bin/busybox ] && bb=/bin/busybox
# static: ldd says "not a dynamic executable" and fails
if [ -z "$bb" ] || ldd "$bb" >/dev/null 2>&1; then
	echo "vm: a static busybox is needed (apt-get install busybox-static)" >&2
	exit 77
fi

root=$(mktemp -d "${out%/*}/rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc/vmtest,vmtest}
ln -s bin "$root/sbin"
cp "$bb" "$root/bin/busybox"
for a in $("$bb" --list); do
	[ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done
install -m 755 "$here/init.sh" "$root/init"
cp "$expected" "$root/etc/vmtest/topology"

declare -A libdirs=()
names=""
for b in "$@"; do
	n=$(basename "$b")
	case $n in
	vm_*)
		cp "$b" "$root/vmtest/$n"
		names+="${n#vm_} "
		;;
	*) cp "$b" "$root/bin/$n" ;;
	esac
	# "name => /path (addr)" and "/lib64/ld-linux-x86-64.so.2 (addr)"
	while read -r lib; do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
		libdirs[$(dirname "$lib")]=1
	done < <(ldd "$b" 2>/dev/null | awk '/=> \//{print $3; next} /^[ \t]*\//{print $1}')
done
echo "$names" >"$root/etc/vmtest/tests"
(IFS=:; echo "${!libdirs[*]}") >"$root/etc/vmtest/libpath"

(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -6 >"$out.tmp"
mv "$out.tmp" "$out"
