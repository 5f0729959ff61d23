#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tests the layer checker (tests/check_layers.sh) on copies of src/ with a
# deliberate violation each: it must fail on an up-call, an up-include and
# an up-reference from a static inline of a layer's header, and pass the same
# names inside a comment or a string, and the tree as it is.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-$here/../src}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
# expect STATUS NAME EDIT [GREP]: copy src, apply EDIT (a sed script on a
# file: "file:sed"), run the checker, compare its exit status (and grep
# its output for GREP).
expect() {
	local want=$1 name=$2 edit=$3 pat=${4:-}
	rm -rf "$tmp/src" && cp -r "$src" "$tmp/src"
	if [ -n "$edit" ]; then
		sed -i "${edit#*:}" "$tmp/src/${edit%%:*}"
	fi
	out=$(bash "$here/check_layers.sh" "$tmp/src" "$here/layers_allow.txt" 2>&1)
	got=$?
	if [ "$got" = "$want" ] && { [ -z "$pat" ] || grep -q -- "$pat" <<<"$out"; }; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $name: exit $got (want $want)${pat:+, output should name '$pat'}"
		echo "$out" | head -5
	fi
}
expect 0 "the tree as it is" ""
expect 1 "topology.c calls malloc.c's init" \
	'topology.c:s|^int _nd_topo_init(void)$|int _nd_topo_init(void)\n{ _nd_ensure_init(); }\nint _nd_topo_init_x(void)|' \
	'topology.c:[0-9]*: _nd_ensure_init goes up'
expect 1 "msg.c calls options.c" \
	'msg.c:s|^void _nd_msg_set_verbose(bool on)$|void _nd_msg_x(void) { _nd_opt_int(ND_OPT_MSG_FD); }\nvoid _nd_msg_set_verbose(bool on)|' \
	'msg.c:[0-9]*: _nd_opt_int goes up'
expect 1 "os.c includes the topology's private header" \
	'os.c:0,/#include "internal.h"/s|#include "internal.h"|#include "internal.h"\n#include "topo_impl.h"|' \
	'os.c includes topo_impl.h'
expect 1 "an inline in os.c's header reads page.c's data" \
	'nd_os.h:s|^int _nd_os_munmap(void \*p, size_t len);|int _nd_os_munmap(void *p, size_t len);\nstatic inline int _nd_os_x(void) { return _nd_page_node_of(0); }|' \
	'nd_os.h:[0-9]*: _nd_page_node_of goes up'
expect 1 "a header in no row of the table" \
	'README.md:s|, `nd_page.h`||' 'nd_page.h is in no row'
expect 1 "a file in no row of the table" \
	'README.md:s|`topo_sysfs.c`, ||' 'topo_sysfs.c is in no row'
expect 0 "the same names in a comment and a string" \
	'topology.c:s|^int _nd_topo_init(void)$|/* _nd_ensure_init() */ static const char *nd_x = "_nd_page_alloc(";\nint _nd_topo_init(void)|'
echo "check_layers_test: $pass passed, $fail failed"
[ "$fail" = 0 ]
