#!/bin/sh
# replica.sh: a replica for castor-node's tests. It records its environment (rank-R-PID.env),
# starts a background child in its process group (rank-R-PID.child holds its pid), and on SIGTERM
# records it (rank-R-PID.term) and then exits 0 (MODE=exit, the default) or goes on (MODE=ignore:
# only SIGKILL ends it). MODE=fail-once: rank 1's first start exits 3 at once (a crash at start),
# every other start runs as MODE=ignore. MODE=exit75: exits 75 at once ("checkpointed, restart
# me"), which is not a failure. MODE=slow0: rank 0 runs as MODE=ignore (it stops only at its
# SIGKILL), the others as MODE=exit. MODE=done: runs until the file "finish" appears in its folder,
# then exits 0 (its work done, without telling the controller). MODE=donefail: the same, but every
# rank other than 0 then exits 3 (its peer, the rendezvous' host, gone).
out="$PWD/rank-$CASTOR_RANK-$$"
env > "$out.tmp" && mv "$out.tmp" "$out.env"
case "${MODE:-exit}" in
fail-once)
    if [ "$CASTOR_RANK" = 1 ] && [ ! -e "$PWD/failed-once" ]; then
        : > "$PWD/failed-once"
        exit 3
    fi
    MODE=ignore
    ;;
exit75) exit 75 ;;
slow0)
    if [ "$CASTOR_RANK" = 0 ]; then MODE=ignore; else MODE=exit; fi
    ;;
esac
sleep 300 &
child=$!
echo "$child" > "$out.child"
trap 'echo term > "$out.term"; if [ "${MODE:-exit}" = exit ]; then kill "$child"; exit 0; fi' TERM
while :; do
    sleep 0.05
    case "${MODE:-exit}" in
    done | donefail)
        if [ -e "$PWD/finish" ]; then
            kill "$child"
            if [ "$MODE" = done ] || [ "$CASTOR_RANK" = 0 ]; then exit 0; fi
            sleep 0.3
            exit 3
        fi
        ;;
    esac
done
