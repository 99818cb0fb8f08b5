#!/bin/sh
# expect.sh: run a command and check its exit status and what it printed.
# usage: expect.sh <status: 0, 1, 2 or nonzero> <substring expected in stdout+stderr> -- cmd args...
want=$1 text=$2
shift 2
[ "$1" = "--" ] && shift
out=$("$@" 2>&1)
got=$?
case $want in
nonzero) [ "$got" -ne 0 ] || { echo "expected a non-zero exit, got 0"; echo "$out"; exit 1; } ;;
*) [ "$got" -eq "$want" ] || { echo "expected exit $want, got $got"; echo "$out"; exit 1; } ;;
esac
case $out in
*"$text"*) ;;
*) echo "expected output containing: $text"; echo "--- got:"; echo "$out"; exit 1 ;;
esac
case $out in
*AddressSanitizer* | *"runtime error"*) echo "sanitizer report:"; echo "$out"; exit 1 ;;
esac
exit 0
