#!/bin/sh
# expect_variant.sh: write a bad variant of a good file (one sed expression), then check a command
# on it with expect.sh.
# usage: expect_variant.sh GOOD SED_EXPR OUT STATUS TEXT -- cmd args... (@FILE@ stands for OUT)
good=$1 expr=$2 out=$3 status=$4 text=$5
shift 5
[ "$1" = "--" ] && shift
sed "$expr" "$good" >"$out" || exit 1
n=$#
i=0
while [ $i -lt $n ]; do
    a=$1
    shift
    [ "$a" = "@FILE@" ] && a=$out
    set -- "$@" "$a"
    i=$((i + 1))
done
exec "$(dirname "$0")/expect.sh" "$status" "$text" -- "$@"
