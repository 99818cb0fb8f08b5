"""procs.py: what the Python world tests (tests/chaos/chaos.py, tests/e2e/test_pytorch_world.py)
share: a free loopback port (below the ephemeral range), and a process's state, parent and session read from /proc.
Standard library only."""

import random
import socket

# Ports drawn below the kernel's ephemeral range (Linux: 32768 and up), so that no socket of
# another test, whose connections take ephemeral ports, can take one between the draw and the
# child process's bind; castor-node's rank-0 ports (29500 to 29999) left out.
PORT_LOW, PORT_HIGH = 20000, 29499


def free_port():
    """A port free now on 127.0.0.1, drawn from PORT_LOW to PORT_HIGH and checked by a bind."""
    for _ in range(200):
        port = random.randint(PORT_LOW, PORT_HIGH)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port from %d to %d" % (PORT_LOW, PORT_HIGH))


def proc_stat(pid):
    """(state, parent pid, session) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(") ", 1)[1].split()
        return rest[0], int(rest[1]), int(rest[3])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid):
    """Whether the process runs (exists and is not a zombie)."""
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def ppid_of(pid):
    """The process's parent, or 0 when it is gone."""
    st = proc_stat(pid)
    return st[1] if st else 0
