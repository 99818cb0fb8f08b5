"""test_pytorch_world.py: the PyTorch example under the whole local world, with nothing played by
the test: `castor run` (world local, the pollux policy, a fixed fleet of two 1-GPU nodes) launches
castor-node processes, which start examples/pytorch/train.py replicas from the job spec submitted
through the API: a gang of 2 (min_replicas), one on each node, DistributedDataParallel over gloo
with rank 0's address and port as castor-node gives them. Rank 1's first start crashes (exit 1):
castor-node reports it and the controller restarts the gang as a new attempt. While it trains, the node of rank 1 gets
a preemption notice (SIGUSR1, as the local cloud's preemption sends it) and is then killed, the
way a cloud reclaims a spot node; every rank checkpoints, the fleet replaces the node, and the gang
starts again on the old and the new node. The test checks that

* the job is finished at the controller (the adapter says so when its steps end), every step
  number ran exactly once on rank 0 and the run went through at least one restart that continued
  from the checkpoint bit for bit (parameters, step count) - the periodic checkpoints and the
  notice's checkpoint cost no step twice;
* every step's replicas match the world size it ran at, and their configuration is one the
  controller gave (local batch within the spec's limits, gain >= 1); the controller pooled every
  step under 2 replicas on 2 nodes;
* the controller heard of the checkpoints (checkpoint progress > 0) and a restart was counted,
  and the crash was counted as one failure;
* the job says `reconfigure: in_flight`: rank 0 ran in two processes only (after the crash, and
  after the notice): nothing else restarted it (castor-node's own test changes the configuration
  under a running in-flight job and checks that no replica restarts);
* at the end (fleet: 0 nodes through a reload, then SIGTERM) no process of the run is left.

On failure it prints the logs and the state database; with CASTOR_TEST_KEEP=DIR it also copies
the run's tree under DIR. Run by ctest with /usr/bin/python3.11 (Debian's python3-torch). Without torch it is skipped (exit
77), saying so, unless CI is set: then it fails."""

import argparse
import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from procs import alive, free_port, ppid_of  # noqa: E402

SKIP = 77
JOB = "torch"
STEPS = 400
WAIT = 240.0  # seconds the whole run may take on a busy machine
# The replicas' command: rank 1 exits 1 at its first start; every other start runs the example
# (exec: its parent stays the castor-node)
CRASH_ONCE = ('if [ "$CASTOR_RANK" = 1 ] && [ ! -e crashed-once ]; then : > crashed-once; '
              'echo "rank 1: crashing once, as the test asks" >&2; exit 1; fi; exec "$0" "$@"')


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class World:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tokens = {}
        for role in ("node", "job", "user"):
            tok = f"pyworld-{role}-" + secrets.token_hex(16)
            path = os.path.join(tmp, f"{role}.token")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, tok.encode())
            os.close(fd)
            self.tokens[role] = tok
        self.config = os.path.join(tmp, "castor.yaml")
        self.log_path = os.path.join(tmp, "castor.log")
        self.run_dir = os.path.join(tmp, "run")
        self.trace = os.path.join(tmp, "trace")
        self.ckpt = os.path.join(tmp, "ckpt")
        self.daemon = None
        self.write_config(2)

    def write_config(self, nodes):
        env = ["    CASTOR_NODE_HEARTBEAT_S: 0.5", "    CASTOR_NODE_GRACE_S: 20",
               "    CASTOR_NODE_TIMEOUT_S: 3", "    CASTOR_NODE_BACKOFF_MAX_S: 0.5"]
        text = "\n".join([
            "cluster: pyworld", "world: local", "cloud:", "  run_dir: run", "  offers:",
            "    - name: box.1gpu/spot", "      gpus: 1", "      spot: true", "      price: 0.5",
            "      capacity: 3", "  grace: 20", "  env:", *env,
            "interval: 1", "state: state.db", "launch_timeout: 60",
            "api:", f"  port: {self.port}",
            "tokens:", "  node: node.token", "  job: job.token", "  user: user.token",
            "policy: pollux", "fleet:", "  planner: fixed", f"  nodes: {nodes}", ""])
        tmp = self.config + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.config)

    def start(self):
        log = open(self.log_path, "a")
        env = {"PATH": "/usr/bin:/bin"}
        if self.args.preload:
            env["ASAN_OPTIONS"] = "detect_leaks=0"
        self.daemon = subprocess.Popen([os.path.join(self.args.build, "castor"), "run", "-c",
                                        self.config], cwd=self.tmp, stdout=log, stderr=log,
                                       env=env)
        self.wait(lambda: self.log_has("API listening on"), "the API to listen", 60)

    def log_has(self, text):
        with open(self.log_path, errors="replace") as f:
            return text in f.read()

    def wait(self, cond, what, limit=WAIT):
        end = time.time() + limit
        while time.time() < end:
            v = cond()
            if v:
                return v
            if self.daemon and self.daemon.poll() is not None:
                raise Failure(f"castor run exited ({self.daemon.returncode}) waiting for {what}")
            time.sleep(0.2)
        raise Failure(f"timed out waiting for {what}")

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": "Bearer " + self.tokens["user"],
            "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def submit(self):
        env = {"PYTHONPATH": os.path.join(self.args.source, "python"),
               "CASTOR_LIB": os.path.join(self.args.build, "libcastor.so"),
               "CASTOR_REPORT_INTERVAL": "1"}
        if self.args.preload:
            env.update(LD_PRELOAD=self.args.preload,
                       ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0")
        example = os.path.join(self.args.source, "examples", "pytorch", "train.py")
        work = os.path.join(self.tmp, "work")
        os.mkdir(work, 0o700)
        self.call("POST", "/v1/jobs", {
            "name": JOB,
            # rank 1's first start crashes before Python runs (exit 1, as a replica that
            # cannot reach its rendezvous would): the gang restarts as attempt 1
            "command": ["/bin/sh", "-c", CRASH_ONCE, sys.executable, example, "--max-steps",
                        str(STEPS), "--checkpoint-dir", self.ckpt, "--trace-dir", self.trace,
                        "--step-sleep", "0.02"],
            "workdir": work, "env": env, "init_batch_size": 64, "max_batch_size": 256,
            "max_local_bsz": 128, "min_replicas": 2, "max_replicas": 2,
            "checkpoint_interval": 3,
            # the adapter follows the controller's batch as it runs: no restart for one
            "reconfigure": "in_flight"})

    def records(self, rank):
        path = os.path.join(self.trace, f"rank{rank}.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]

    def nodes(self):
        """The local cloud's records: {id: {key: value}}."""
        out = {}
        if not os.path.isdir(self.run_dir):
            return out
        for name in os.listdir(self.run_dir):
            path = os.path.join(self.run_dir, name)
            if not os.path.isfile(path):
                continue
            rec = {}
            try:
                with open(path) as f:
                    for line in f:
                        k, _, v = line.rstrip("\n").partition("=")
                        rec[k] = v
            except OSError:
                continue
            if "id" in rec and "pid" in rec:
                out[rec["id"]] = rec
        return out

    def live_node_pids(self):
        return [int(r["pid"]) for r in self.nodes().values() if alive(int(r["pid"]))]

    def stop(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        for pid in self.live_node_pids():
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # the polls that fill a controller's log while nothing happens
    NOISE = ("/heartbeat -> ", "/assignment -> ", "GET /v1/jobs/")

    def tail(self):
        """Each log's first 40 lines (the submission and the first decisions), then its lines
        other than polls (launches, registrations, notices, allocations, warnings and errors; at
        most 150), and its last 20 lines: what a failure report needs."""
        out = []
        for root, _, files in os.walk(self.tmp):
            for name in sorted(files):
                if name.endswith(".log"):
                    path = os.path.join(root, name)
                    with open(path, errors="replace") as f:
                        lines = f.readlines()
                    told = [ln for ln in lines[40:-20]
                            if not any(n in ln for n in self.NOISE)][:150]
                    out.append(f"--- {path} ({len(lines)} lines)\n" + "".join(lines[:40]) +
                               ("... the lines other than polls after those:\n" + "".join(told)
                                if told else "") +
                               ("...\n" + "".join(lines[-20:]) if len(lines) > 40 else ""))
        out.append(self.state())
        return "\n".join(out)

    def report_rows(self):
        """The job's pooled step times at the controller: (nodes, replicas, count) rows."""
        db = sqlite3.connect(f"file:{os.path.join(self.tmp, 'state.db')}?mode=ro", uri=True,
                             timeout=5)
        try:
            return db.execute("SELECT r.nodes, r.replicas, r.count FROM reports r"
                              " JOIN jobs j ON j.id = r.job_id WHERE j.name = ?",
                              (JOB,)).fetchall()
        finally:
            db.close()

    def state(self):
        """What the controller's state database holds: jobs, nodes, allocations and the last
        decisions (each tick's plan), the record of what the decide step saw and chose."""
        path = os.path.join(self.tmp, "state.db")
        if not os.path.exists(path):
            return "--- no state database"
        out = [f"--- {path}"]
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
            for title, sql in (
                    ("jobs", "SELECT id, name, state, progress, checkpoint_progress, restarts,"
                     " local_bsz, accum_steps, reported_at FROM jobs"),
                    ("nodes", "SELECT id, instance_id, state, gpus, launched_at, ready_at,"
                     " terminated_at, heartbeat_at, notice_at, address FROM nodes"),
                    ("allocations", "SELECT * FROM allocations"),
                    ("decisions", "SELECT tick, at, summary FROM decisions"
                     " ORDER BY id DESC LIMIT 8")):
                out.append(f"{title}:")
                out.extend("  " + repr(row) for row in db.execute(sql))
            db.close()
        except sqlite3.Error as e:
            out.append(f"  unreadable: {e}")
        return "\n".join(out)


def run(w):
    w.start()
    w.submit()
    w.wait(lambda: len(w.records(0)) >= 60, "60 steps of the job")
    recs = w.records(0)
    first_world = recs[-1]["world"]
    print(f"test_pytorch_world: {len(recs)} steps, world {first_world}", flush=True)

    # the notice: the node running the last rank gets SIGUSR1, then dies as a cloud takes it.
    # The replica to notice is the one running now: the record read may be of one that a new
    # configuration (the first reports' batch size) is just restarting, whose parent has reaped it
    victim_rank = first_world - 1

    def running_victim():
        rec = w.records(victim_rank)[-1]
        pid = ppid_of(rec["pid"]) if alive(rec["pid"]) else None
        return (rec, pid) if pid in w.live_node_pids() else None

    rec, node_pid = w.wait(running_victim, f"rank {victim_rank} running under a castor-node", 60)
    before = len(recs)
    os.kill(node_pid, signal.SIGUSR1)
    w.wait(lambda: not alive(rec["pid"]), "the noticed replica to checkpoint and exit", 60)
    os.killpg(node_pid, signal.SIGKILL)
    print(f"test_pytorch_world: node {node_pid} noticed and killed after step "
          f"{w.records(0)[-1]['step']}", flush=True)

    job = w.wait(lambda: (lambda j: j if j["state"] == "finished" else None)(
        w.call("GET", f"/v1/jobs/{JOB}")), "the job to finish")

    steps = w.records(0)
    numbers = [s["step"] for s in steps]
    check(numbers == list(range(1, STEPS + 1)),
          f"rank 0 ran every step once: {len(numbers)} records, first repeats at "
          f"{next((n for i, n in enumerate(numbers) if i and n <= numbers[i - 1]), None)}")
    restarts = [i for i, s in enumerate(steps) if s["restored"] and i > 0]
    check(restarts and any(i >= before - 1 for i in restarts),
          f"a restart after the notice: restored at {restarts}")
    for i in restarts:
        prev, cur = steps[i - 1], steps[i]
        check("params_after" in prev and cur["params"] == prev["params_after"],
              f"step {cur['step']} continues from the checkpoint step {prev['step']} ended with")
    # rank 0 ran in two processes: attempt 1 after the crash, and the gang after the notice
    pids = {s["pid"] for s in steps}
    configs = {(s["local_bsz"], s["accum_steps"]) for s in steps}
    print(f"test_pytorch_world: rank 0 ran in {len(pids)} processes, at configurations "
          f"{sorted(configs)}", flush=True)
    check(len(pids) <= 2, f"rank 0 restarted only for the crash and the notice: {len(pids)} "
          f"processes, configurations {sorted(configs)}")
    worlds = sorted({s["world"] for s in steps})
    print(f"test_pytorch_world: restarts before steps {[steps[i]['step'] for i in restarts]}, "
          f"world sizes {worlds}", flush=True)
    traces = {r: w.records(r) for r in range(max(worlds))}
    for s in steps:
        check(s["world"] == 2, f"step {s['step']}: world {s['world']}, the spec's gang of 2")
        ranks = [r for r in range(s["world"]) if any(x["step"] == s["step"] and
                                                     x["world"] == s["world"]
                                                     for x in traces[r])]
        check(len(ranks) == s["world"], f"step {s['step']}: {len(ranks)} ranks ran it at world "
              f"{s['world']}")
        g = s["world"] * s["local_bsz"] * (s["accum_steps"] + 1)
        check(s["local_bsz"] <= 128 and g <= 256 and s["lr_gain"] >= 1.0 - 1e-12,
              f"step {s['step']}: local batch {s['local_bsz']}, total {g}, gain {s['lr_gain']}")
    # each step pooled under its placement (castor-node's CASTOR_NODES): 2 replicas on 2 nodes
    rows = w.report_rows()
    check(rows and all(nodes == 2 and replicas == 2 for nodes, replicas, _ in rows),
          f"the controller pooled every step on 2 nodes: (nodes, replicas, count) {rows}")
    check(job["checkpoint_progress"] > 0 and job["restarts"] >= 1,
          f"the controller counted checkpoints and restarts: {job}")
    check(job["failures"] == 1 and "rank 1 on node" in (job["failure"] or "") and
          "exited with status 1" in job["failure"],
          f"rank 1's crash at its first start counted once, and the gang restarted: {job}")
    # (means over up to 5 steps: one step's loss is one mini-batch's)
    losses = [s["loss"] for s in steps]
    n = min(5, len(losses))
    head, tail = sum(losses[:n]) / n, sum(losses[-n:]) / n
    check(tail < 0.6 * head, f"training made progress: mean {head} -> {tail}")

    # the fleet to nothing, then the controller stops: no process of the run is left
    w.write_config(0)
    w.daemon.send_signal(signal.SIGHUP)
    w.wait(lambda: not w.live_node_pids(), "the nodes to be terminated", 120)
    w.daemon.send_signal(signal.SIGTERM)
    check(w.daemon.wait(timeout=30) == 0, "castor run exits 0 on SIGTERM")
    print(f"test_pytorch_world: {len(w.nodes())} nodes launched in all, none left", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--preload", default="", help="LD_PRELOAD for the replicas (sanitizers)")
    args = ap.parse_args()
    try:
        import numpy  # noqa: F401  (torch's tensors need it here)
        import torch  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI"):
            print(f"test_pytorch_world: FAILED: {e}: install python3-torch (scripts/install-deps)")
            return 1
        print(f"test_pytorch_world: skipped: {e} (install python3-torch to run it)")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="castor-pyworld-") as tmp:
        w = None
        try:
            w = World(args, tmp)
            run(w)
        except (Failure, urllib.error.URLError, subprocess.TimeoutExpired) as e:
            print(f"test_pytorch_world: FAILED: {e}")
            if w:
                print(w.tail())
                keep = os.environ.get("CASTOR_TEST_KEEP")
                if keep:  # the whole run's tree, for a closer look (logs, traces, state)
                    w.stop()
                    shutil.copytree(tmp, os.path.join(keep, os.path.basename(tmp)),
                                    ignore_dangling_symlinks=True)
            return 1
        finally:
            if w:
                w.stop()
    print("test_pytorch_world: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
