#!/bin/sh
# expect_seed.sh: --seed N replaces a scenario's seed. Runs a scenario (castor alone) with --seed N,
# then a copy of it whose seed key says N, and checks that the two give the same JSON; then with
# --seed M and checks that the market's other draws give other dollars.
# usage: expect_seed.sh <castor> <scenario> <N> <M> <scratch dir>
castor=$1 scenario=$2 n=$3 m=$4 dir=$5
mkdir -p "$dir" || exit 1
# the copy sits beside the scenario so that its relative paths still resolve
copy="$(dirname "$scenario")/.seed-$$.yaml"
trap 'rm -f "$copy"' EXIT
{ grep -v '^seed:' "$scenario"; echo "seed: $n"; } > "$copy" || exit 1
"$castor" simulate --scenario "$scenario" --seed "$n" --quiet --json "$dir/flag.json" >/dev/null ||
    { echo "--seed $n failed"; exit 1; }
"$castor" simulate --scenario "$copy" --quiet --json "$dir/key.json" >/dev/null ||
    { echo "the copy with seed: $n failed"; exit 1; }
"$castor" simulate --scenario "$scenario" --seed "$m" --quiet --json "$dir/other.json" >/dev/null ||
    { echo "--seed $m failed"; exit 1; }
cmp -s "$dir/flag.json" "$dir/key.json" ||
    { echo "--seed $n and a scenario whose seed is $n differ"; exit 1; }
field() { sed -n "s/^ *\"dollars\": \([0-9.eE+-]*\),*$/\1/p" "$1" | head -n 1; }
d1=$(field "$dir/flag.json") d2=$(field "$dir/other.json")
echo "seed $n: \$$d1; seed $m: \$$d2"
[ -n "$d1" ] && [ "$d1" != "$d2" ] || { echo "expected other dollars with seed $m"; exit 1; }
exit 0
