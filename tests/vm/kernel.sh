#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetch the test bed's kernel once per build directory:
#   bash tests/vm/kernel.sh CACHE_DIR     -> CACHE_DIR/kernel/vmlinuz
# Debian's linux-image package for one pinned version, fetched with
# `apt-get download` and unpacked with dpkg-deb (only ./boot: the 400 MB of
# modules are not needed, everything the tests use is built in, checked
# below against the package's config). If the pinned version has left the
# archive, falls back to the version linux-image-amd64 depends on now.
# Exit 0 = ready, 77 = cannot fetch (the caller skips), 1 = kernel unusable.
set -u
# The pinned kernel (VM_KERNEL_PKG overrides it, e.g. to try the fallback).
KPKG_PINNED=${VM_KERNEL_PKG:-linux-image-6.1.0-56-amd64} # 6.1.192-2 (bookworm-security)

cache=${1:?usage: kernel.sh CACHE_DIR}
kdir=$cache/kernel
mkdir -p "$kdir"
exec 9>"$kdir/.lock"
flock 9 # ctest -j: one fetch at a time

if [ -s "$kdir/vmlinuz" ] && [ -s "$kdir/config" ] && [ -s "$kdir/package" ]; then
	exit 0
fi

dl=$kdir/dl
rm -rf "$dl" && mkdir -p "$dl" && chmod 777 "$dl" # _apt may write here
fetch() { (cd "$dl" && apt-get download -q "$1" >"$dl/apt.log" 2>&1); }
latest() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'; }

pkg=$KPKG_PINNED
if ! fetch "$pkg"; then
	# no package lists yet (a fresh machine): read them once, as root
	if [ -z "$(latest)" ] && [ "$(id -u)" -eq 0 ]; then
		apt-get update -q >/dev/null 2>&1
	fi
	if ! fetch "$pkg"; then
		alt=$(latest)
		if [ -n "$alt" ] && [ "$alt" != "$pkg" ] && fetch "$alt"; then
			echo "vm: pinned $pkg is not in the archive, using $alt" >&2
			pkg=$alt
		else
			echo "vm: cannot fetch the kernel package $pkg${alt:+ or $alt} with apt-get download:" >&2
			sed 's/^/vm:   /' "$dl/apt.log" >&2 2>/dev/null
			exit 77
		fi
	fi
fi
deb=$(ls "$dl"/*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "vm: apt-get download of $pkg left no .deb" >&2; exit 77; }

x=$dl/x
mkdir -p "$x"
if ! dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$x" --wildcards './boot/*'; then
	echo "vm: cannot unpack $deb" >&2
	exit 1
fi
vmlinuz=$(ls "$x"/boot/vmlinuz-* 2>/dev/null | head -1)
config=$(ls "$x"/boot/config-* 2>/dev/null | head -1)
if [ -z "$vmlinuz" ] || [ -z "$config" ]; then
	echo "vm: $deb has no /boot/vmlinuz-* or /boot/config-*" >&2
	exit 1
fi

# What the bed needs, built in (=y, not =m: there are no modules in the
# initramfs): NUMA from ACPI SRAT/SLIT, move_pages (MIGRATION), rseq,
# pagemap, initramfs gz, serial console, devtmpfs, #! scripts.
missing=""
for opt in NUMA X86_64_ACPI_NUMA ACPI_NUMA MIGRATION RSEQ PROC_PAGE_MONITOR \
	BLK_DEV_INITRD RD_GZIP SERIAL_8250 SERIAL_8250_CONSOLE DEVTMPFS TMPFS \
	BINFMT_ELF BINFMT_SCRIPT SYSFS PROC_FS; do
	grep -q "^CONFIG_$opt=y" "$config" || missing+=" CONFIG_$opt"
done
if [ -n "$missing" ]; then
	echo "vm: kernel $pkg lacks built-in:$missing" >&2
	exit 1
fi

cp "$vmlinuz" "$kdir/vmlinuz.tmp" && mv "$kdir/vmlinuz.tmp" "$kdir/vmlinuz"
cp "$config" "$kdir/config"
echo "$pkg $(dpkg-deb -f "$deb" Version)" >"$kdir/package"
rm -rf "$dl"
exit 0
