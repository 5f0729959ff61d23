#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The library uses no stdio (issue 12 item 9; src/README.md): neither the
# shared library nor any object of the static one imports a printf or
# scanf function, a FILE function (fopen, fputs, ...) or the stdio
# streams. CONTROL is a program that does use stdio: the same scan must
# flag it, so a scan that finds nothing proves something.
# usage: check_no_stdio.sh LIB.so LIB.a CONTROL
set -u
so=$1 ar=$2 control=$3
pat='^(_IO_\w*|__\w*printf\w*|\w*printf|\w*scanf|__isoc99_\w+|f(open|open64|close|read|write|puts|putc|gets|getc|flush|seek|tell|dopen|fileno|printf)(_unlocked)?|puts|putchar|putc|getchar|perror|setvbuf|setbuf|tmpfile|popen|pclose|stdout|stderr|stdin)(@.*)?$'
scan() { grep -E "$pat" | sort -u; }
bad=0
found=$(nm -D --undefined-only "$so" | awk '{print $NF}' | scan)
if [ -n "$found" ]; then
	echo "check_no_stdio: $so imports stdio: $(echo $found)"
	bad=1
fi
found=$(nm -A --undefined-only "$ar" | awk '{print $NF, $1}' | while read -r sym obj; do
	echo "$sym" | grep -qE "$pat" && echo "$obj$sym"
done | sort -u)
if [ -n "$found" ]; then
	echo "check_no_stdio: objects of $ar import stdio: $(echo $found)"
	bad=1
fi
n=$(nm --undefined-only "$ar" | grep -c ' U ')
ctl=$(nm -D --undefined-only "$control" 2>/dev/null | awk '{print $NF}' | scan)
[ -z "$ctl" ] && ctl=$(nm --undefined-only "$control" | awk '{print $NF}' | scan)
if [ -z "$ctl" ]; then
	echo "check_no_stdio: the control $control shows no stdio import: the scan is broken"
	bad=1
fi
echo "check_no_stdio: $n undefined symbols in the static library's objects scanned; control flagged: $(echo $ctl | wc -w) stdio imports"
echo "check_no_stdio: $([ $bad = 0 ] && echo 1 passed, 0 failed || echo 0 passed, 1 failed)"
exit $bad
