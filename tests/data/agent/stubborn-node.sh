#!/bin/sh
# stubborn-node.sh: a stand-in for castor-node in the local cloud's tests. It ignores SIGTERM and
# SIGUSR1, writes "PID CHILD" (its pid and a background child's) to $STUB_DIR/$CASTOR_INSTANCE_ID.pids
# and runs until SIGKILL.
trap '' TERM USR1
sleep 300 &
echo "$$ $!" > "$STUB_DIR/$CASTOR_INSTANCE_ID.pids.tmp"
mv "$STUB_DIR/$CASTOR_INSTANCE_ID.pids.tmp" "$STUB_DIR/$CASTOR_INSTANCE_ID.pids"
while :; do sleep 0.05; done
