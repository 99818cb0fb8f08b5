#!/bin/sh
# expect_file.sh: run a command that must succeed and write FILE, then check FILE holds TEXT.
# usage: expect_file.sh <file> <text> -- cmd args...
file=$1 text=$2
shift 2
[ "$1" = "--" ] && shift
rm -f "$file"
out=$("$@" 2>&1) || { echo "command failed:"; echo "$out"; exit 1; }
[ -f "$file" ] || { echo "$file was not written"; echo "$out"; exit 1; }
grep -q -- "$text" "$file" || { echo "$file does not contain: $text"; head -c 2000 "$file"; exit 1; }
exit 0
