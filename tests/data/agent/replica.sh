#!/bin/sh
# replica.sh: a replica for castor-node's tests. It records its environment (rank-R-PID.env),
# starts a background child in its process group (rank-R-PID.child holds its pid), and on SIGTERM
# records it (rank-R-PID.term) and then exits 0 (MODE=exit, the default) or goes on (MODE=ignore:
# only SIGKILL ends it).
out="$PWD/rank-$CASTOR_RANK-$$"
env > "$out.tmp" && mv "$out.tmp" "$out.env"
sleep 300 &
child=$!
echo "$child" > "$out.child"
trap 'echo term > "$out.term"; if [ "${MODE:-exit}" = exit ]; then kill "$child"; exit 0; fi' TERM
while :; do sleep 0.05; done
