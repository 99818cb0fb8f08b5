"""procs.py: what the Python world tests (tests/chaos/chaos.py, tests/e2e/test_pytorch_world.py)
share: a free loopback port, and a process's state, parent and session read from /proc.
Standard library only."""

import socket


def free_port():
    """A port free now on 127.0.0.1 (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
