#!/bin/sh
# expect_value_trade.sh: castor's --value trades dollars for completion time. Runs a scenario at a
# low and a high value (castor alone) and checks that the high one spends more and finishes the
# jobs sooner on average.
# usage: expect_value_trade.sh <castor> <scenario> <low> <high> <scratch dir>
castor=$1 scenario=$2 low=$3 high=$4 dir=$5
mkdir -p "$dir" || exit 1
for v in "$low" "$high"; do
    out=$("$castor" simulate --scenario "$scenario" --value "$v" --quiet --json "$dir/value-$v.json" 2>&1) ||
        { echo "--value $v failed:"; echo "$out"; exit 1; }
done
# the castor object's "dollars" and "avg_jct_s" (one per line in the JSON written)
field() { sed -n "s/^ *\"$2\": \([0-9.eE+-]*\),*$/\1/p" "$dir/value-$1.json" | head -n 1; }
d1=$(field "$low" dollars) j1=$(field "$low" avg_jct_s)
d2=$(field "$high" dollars) j2=$(field "$high" avg_jct_s)
echo "value $low: \$$d1, $j1 s; value $high: \$$d2, $j2 s"
awk -v d1="$d1" -v j1="$j1" -v d2="$d2" -v j2="$j2" \
    'BEGIN { exit !(d1 > 0 && d2 > d1 && j1 > 0 && j2 > 0 && j2 < j1) }' ||
    { echo "expected more dollars and a lower average JCT at value $high"; exit 1; }
exit 0
