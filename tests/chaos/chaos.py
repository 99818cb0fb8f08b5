"""chaos.py: the chaos run (docs/chaos.md). The local world under everything at once, for a bounded
time: jobs (castor-job-emulator) keep arriving through the API while castor-node processes are
preempted - with and without notice, singly and half the fleet at once - the controller is
SIGKILLed at random moments and started again, the cloud's calls fail at a configured rate
(throttling, capacity, quota, 5xx, timeouts, answers lost after the call: the `faults:` section),
and once the disk under the state database fills up (the controller runs with RLIMIT_FSIZE at its
files' sizes). Then the fleet is reloaded to 0 nodes and the controller stopped, and it prints:

  jobs submitted, finished, lost (must be 0)
  instances launched, terminated, leaked (must be 0)
  duplicate launches (must be 0)
  work lost to preemptions, beside the checkpoint intervals
  the longest time the loop went without completing a tick (and while the controller was up)

Exit status 0 when every must holds, 1 otherwise.

    python3 tests/chaos/chaos.py --build build --source .                    # 10 min, 50 kills
    python3 tests/chaos/chaos.py --build build --source . --duration 90 --kills 8 --jobs 6

Only the standard library: any python3 runs it."""

import argparse
import ctypes
import json
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from procs import alive, free_port, proc_stat  # noqa: E402

OFFER = "box.2gpu/spot"
NODES = 4
EPOCHS = 25          # of cifar10: about 1,000 emulated seconds on one GPU
SPEED = 40.0         # emulated seconds per real second: about 25 s a job alone
CKPT_S = 100.0       # emulated seconds between a job's checkpoints
REPORT_S = 10.0      # emulated seconds between rank 0's reports


class Failure(Exception):
    pass


def reap():
    """Orphaned nodes come to this process (a subreaper): collect the ended ones."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class Chaos:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.rng = random.Random(args.seed)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tokens = {}
        for role in ("node", "job", "user"):
            tok = f"chaos-{role}-" + os.urandom(16).hex()
            fd = os.open(os.path.join(tmp, f"{role}.token"), os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, tok.encode())
            os.close(fd)
            self.tokens[role] = tok
        self.config = os.path.join(tmp, "castor.yaml")
        self.log = os.path.join(tmp, "castor.log")
        self.run_dir = os.path.join(tmp, "run")
        self.state = os.path.join(tmp, "state.db")
        self.daemon = None
        self.down = []           # (from, to) wall times the controller was not running
        self.kills = 0
        self.submitted = []
        self.preemptions = {"single-notice": 0, "single-no-notice": 0, "half-notice": 0,
                            "half-no-notice": 0}
        self.preempters = []
        self.disk_full = None    # what the full disk did
        self.full = (0, 0)       # when
        self.refused = 0         # submissions refused (then made again)
        self.retry = 0           # submissions to make again
        self.write_config(NODES)

    # ---- the controller ----

    def write_config(self, nodes):
        text = f"""cluster: chaos
world: local
cloud:
  run_dir: run
  offers:
    - name: {OFFER}
      gpus: 2
      spot: true
      price: 1.0
      capacity: {2 * NODES}
  grace: 5
  env:
    CASTOR_NODE_HEARTBEAT_S: 0.5
    CASTOR_NODE_GRACE_S: 5
    CASTOR_NODE_TIMEOUT_S: 2
    CASTOR_NODE_BACKOFF_MAX_S: 1
    CASTOR_EMULATOR_LOG_LEVEL: debug
interval: 1
state: state.db
launch_timeout: 20
api:
  port: {self.port}
tokens:
  node: node.token
  job: job.token
  user: user.token
policy: pollux
fleet:
  planner: fixed
  nodes: {nodes}
faults:
  rate: {self.args.fault_rate}
  seed: {self.args.seed}
  timeout: 0.5
"""
        tmp = self.config + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.config)

    def start(self):
        log = open(self.log, "a")

        def limit():
            # a full disk is RLIMIT_FSIZE set on the running controller (fill_disk): its writes
            # then fail with EFBIG, as with ENOSPC, instead of the signal ending it
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        env = {"PATH": "/usr/bin:/bin", "ASAN_OPTIONS": "detect_leaks=0"}
        self.daemon = subprocess.Popen([os.path.join(self.args.build, "castor"), "run", "-c",
                                        self.config], cwd=self.tmp, stdout=log, stderr=log,
                                       env=env, preexec_fn=limit)
        log.close()
        end = time.time() + 30
        while time.time() < end:
            if self.daemon.poll() is not None:
                raise Failure(f"castor run exited with {self.daemon.returncode} at start")
            try:
                self.call("GET", "/v1/fleet")
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        raise Failure("the API did not come up in 30 s")

    def kill(self):
        t0 = time.time()
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        self.kills += 1
        return t0

    def call(self, method, path, body=None, timeout=10):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": "Bearer " + self.tokens["user"],
            "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    # ---- what happens to it ----

    def submit(self):
        name = f"job{len(self.submitted):03d}"
        work = os.path.join(self.tmp, "work", name)
        os.makedirs(work, 0o700)
        spec = {"name": name, "command": [os.path.join(self.args.build, "castor-job-emulator"),
                                          "cifar10"],
                "workdir": work,
                "env": {"CASTOR_EMULATOR_SPEED": str(SPEED), "CASTOR_EMULATOR_EPOCHS": str(EPOCHS),
                        "CASTOR_EMULATOR_REPORT_S": str(REPORT_S),
                        "CASTOR_EMULATOR_FINISH_WAIT_S": "60"},
                "init_batch_size": 128, "max_batch_size": 128, "max_local_bsz": 128,
                "max_replicas": 1, "checkpoint_interval": CKPT_S}
        try:
            self.call("POST", "/v1/jobs", spec)
            self.submitted.append(name)
        except urllib.error.HTTPError as e:  # refused (a full disk): nothing was made
            print(f"chaos: {name} refused ({e.code}); submitted again later", flush=True)
            os.rmdir(work)
            self.refused += 1
            return False
        except (urllib.error.URLError, OSError) as e:
            # no answer: it may or may not be there; the job list at the end decides
            print(f"chaos: {name}: no answer ({e}); counted if the controller has it", flush=True)
            self.submitted.append(name)
        return True

    def records(self):
        out = {}
        if not os.path.isdir(self.run_dir):
            return out
        for fname in os.listdir(self.run_dir):
            if not fname.endswith(".instance"):
                continue
            rec = {}
            try:
                with open(os.path.join(self.run_dir, fname)) as f:
                    for line in f:
                        k, _, v = line.rstrip("\n").partition("=")
                        rec[k] = v
            except OSError:
                continue
            if "id" in rec:
                out[rec["id"]] = rec
        return out

    def live(self):
        return [i for i, r in self.records().items()
                if r.get("state") != "gone" and alive(int(r.get("pid", "0") or 0))]

    def busy(self, nodes):
        """The nodes running replicas (a process in the node's session besides castor-node)."""
        recs = self.records()
        sessions = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                st = proc_stat(int(name))
                if st and st[0] not in ("Z", "X"):
                    sessions.setdefault(st[2], []).append(int(name))
        return [n for n in nodes if len(sessions.get(int(recs[n]["pid"]), [])) > 1]

    @staticmethod
    def kill_session(sid):
        for name in os.listdir("/proc"):
            if name.isdigit():
                st = proc_stat(int(name))
                if st and st[2] == sid:
                    try:
                        os.kill(int(name), signal.SIGKILL)
                    except OSError:
                        pass

    def preempt(self):
        nodes = self.live()
        if not nodes:
            return
        busy = self.busy(nodes)
        if busy:  # a preemption costs something only where jobs run: aim there
            nodes = busy + [n for n in nodes if n not in busy] if self.rng.random() < 0.5 else busy
        half = self.rng.random() < 0.3
        notice = self.rng.random() < 0.5
        victims = self.rng.sample(nodes, max(1, len(nodes) // 2) if half else 1)
        kind = ("half-" if half else "single-") + ("notice" if notice else "no-notice")
        self.preemptions[kind] += 1
        recs = self.records()
        for v in victims:
            if notice:  # the local cloud's own preemption: SIGUSR1 with 2 s, then SIGKILL
                self.preempters.append(subprocess.Popen(
                    [os.path.join(self.args.build, "tests", "castor-test-local-preempt"),
                     self.run_dir, v, "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            else:  # the machine is gone at once: every process of the node's session, SIGKILL
                self.kill_session(int(recs[v]["pid"]))
        print(f"chaos: {time.time() - self.t0:6.1f} s: preempt {kind}: {victims}", flush=True)

    def fill_disk(self):
        """The disk under the running controller fills up for a few seconds (no file of its may
        grow past 4 KiB: the database's WAL, the database, its log), then is freed."""
        before = len(self.submitted)
        t0 = time.time()
        resource.prlimit(self.daemon.pid, resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
        refused = 0
        for _ in range(3):  # jobs keep arriving; the refused come again later
            if not self.submit():
                refused += 1
                self.retry += 1
            time.sleep(2)
        resource.prlimit(self.daemon.pid, resource.RLIMIT_FSIZE,
                         (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        self.full = (t0, time.time())
        alive_after = self.daemon.poll() is None
        if not alive_after:  # it may stop; it must start again with nothing lost
            self.down.append((self.full[1], self.full[1]))
            self.start()
        self.disk_full = (f"{self.full[1] - t0:.0f} s; {len(self.submitted) - before} submissions "
                          f"taken, {refused} refused while full; the controller "
                          f"{'kept running' if alive_after else 'stopped, and was started again'}")
        print(f"chaos: {time.time() - self.t0:6.1f} s: disk full ({self.disk_full})", flush=True)

    # ---- the run ----

    def run(self):
        a = self.args
        self.t0 = time.time()
        self.start()
        end = self.t0 + a.duration
        kill_at = sorted(self.t0 + self.rng.uniform(3, a.duration - 3) for _ in range(a.kills))
        job_at = sorted(self.t0 + self.rng.uniform(0, 0.7 * a.duration) for _ in range(a.jobs))
        preempt_every = a.duration / max(1, a.preemptions)
        next_preempt = self.t0 + preempt_every
        disk_at = self.t0 + 0.4 * a.duration
        while time.time() < end or kill_at or job_at:
            now = time.time()
            reap()
            if job_at and now >= job_at[0]:
                job_at.pop(0)
                if not self.submit():
                    self.retry += 1
            if self.retry and not job_at:
                job_at.append(now + 1.0)
                self.retry -= 1
            if kill_at and now >= kill_at[0]:
                kill_at.pop(0)
                t0 = self.kill()
                time.sleep(self.rng.uniform(0, 1.0))
                self.start()
                self.down.append((t0, time.time()))
            if disk_at and now >= disk_at:
                disk_at = None
                self.fill_disk()
            if now >= next_preempt and now < end:
                next_preempt += preempt_every
                self.preempt()
            time.sleep(0.05)
        print(f"chaos: {time.time() - self.t0:6.1f} s: chaos over; waiting for the jobs",
              flush=True)
        for p in self.preempters:
            p.wait()
        # the jobs finish, the fleet goes to nothing, the controller stops
        deadline = time.time() + a.drain
        while time.time() < deadline:
            reap()
            jobs = self.jobs()
            if jobs and all(j["state"] in ("finished", "cancelled", "failed") for j in jobs):
                break
            time.sleep(1)
        self.write_config(0)
        self.daemon.send_signal(signal.SIGHUP)
        deadline = time.time() + 120
        while self.live() and time.time() < deadline:
            reap()
            time.sleep(0.5)
        self.daemon.send_signal(signal.SIGTERM)
        self.daemon.wait(timeout=60)
        reap()
        return self.report()

    def jobs(self):
        try:
            return self.call("GET", "/v1/jobs")["jobs"]
        except (urllib.error.URLError, OSError, KeyError):
            return None

    def stored_jobs(self):
        """{name: state} from the state database itself (the controller has stopped)."""
        db = sqlite3.connect(f"file:{self.state}?mode=ro", uri=True)
        try:
            return dict(db.execute("SELECT name, state FROM jobs"))
        finally:
            db.close()

    # ---- the figures ----

    def work_lost(self):
        """Per job, from rank 0's log lines (the nodes' logs): each restart's progress beside the
        most the run it replaced had reached, and the progress between consecutive checkpoints.
        Checkpoints are numbered over a job's life and each start names the one it resumed from,
        so nothing here orders lines that different nodes stamped: a run is a start and the lines
        after it in the same log, and the run a restart replaced is the one that wrote the
        checkpoint the restart names (or the last that resumed from it and wrote none)."""
        runs = {}  # job -> [run]; a run: {"from", "at", "high", "ckpts": {number: progress}}
        for fname in sorted(os.listdir(self.run_dir)):
            if not fname.endswith(".log"):
                continue
            current = {}  # job -> its run in progress in this log
            with open(os.path.join(self.run_dir, fname), errors="replace") as f:
                for line in f:
                    if '"job":"' not in line:
                        continue
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    msg, job = rec.get("msg", ""), rec.get("job")
                    if not msg.startswith("rank 0: "):
                        continue
                    body = msg[len("rank 0: "):]
                    if body.startswith("start: progress "):
                        number = int(body.rsplit("checkpoint number ", 1)[1].split()[0])
                        at = float(body.split()[2].rstrip(","))
                        current[job] = {"from": number, "at": at, "high": at, "ckpts": {},
                                        "t": rec.get("time", "")}
                        runs.setdefault(job, []).append(current[job])
                        continue
                    run = current.get(job)
                    if run is None:
                        continue
                    if body.startswith("checkpoint (") and "number " in body:
                        val = float(body.split("progress ")[1].split(",")[0])
                        run["ckpts"][int(body.rsplit("number ", 1)[1].split()[0])] = val
                        run["high"] = max(run["high"], val)
                    elif body.startswith("reported ") and "progress " in body:
                        run["high"] = max(run["high"],
                                          float(body.rsplit("progress ", 1)[1].split()[0]))
                    elif body.startswith("stopped by a signal at progress "):
                        run["high"] = max(run["high"], float(body.rsplit(" ", 1)[1]))
        lost, intervals, restarts = [], [], 0
        for job, rs in runs.items():
            ckpts = {}
            for r in rs:
                ckpts.update(r["ckpts"])
            numbers = sorted(ckpts)
            for a, b in zip(numbers, numbers[1:]):
                if b == a + 1 and ckpts[b] > ckpts[a]:
                    intervals.append(ckpts[b] - ckpts[a])
            for r in rs:
                # the run it replaced: the last one before it that resumed from the same checkpoint
                # and wrote none (those starts are a restart apart: their stamps order them), else
                # the one that wrote that checkpoint
                same = [q for q in rs if q is not r and q["from"] == r["from"] and not q["ckpts"]
                        and q["t"] < r["t"]]
                wrote = [q for q in rs if r["from"] in q["ckpts"]]
                pred = max(same, key=lambda q: q["t"]) if same else wrote[0] if wrote else None
                if r["at"] > 0 or pred:
                    restarts += 1
                    lost.append(max(0.0, pred["high"] - r["at"]) if pred else 0.0)
        return lost, intervals, restarts

    def tick_gaps(self):
        db = sqlite3.connect(f"file:{self.state}?mode=ro", uri=True)
        try:
            ats = [r[0] for r in db.execute("SELECT at FROM decisions ORDER BY at")]
            ok = db.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            db.close()
        worst = worst_up = worst_full = 0.0
        for a, b in zip(ats, ats[1:]):
            gap = b - a
            worst = max(worst, gap)
            if self.full[0] < b and self.full[1] > a:
                worst_full = max(worst_full, gap)
            elif not any(d0 < b and d1 > a for d0, d1 in self.down):
                worst_up = max(worst_up, gap)
        return worst, worst_up, worst_full, len(ats), ok

    def report(self):
        jobs = self.stored_jobs()
        recs = self.records()
        finished = sum(1 for n in self.submitted if jobs.get(n) == "finished")
        lost_jobs = [n for n in self.submitted if n not in jobs]
        unfinished = [n for n in self.submitted if n in jobs and jobs[n] != "finished"]
        tokens = {}
        for r in recs.values():
            tokens.setdefault(r.get("token"), []).append(r["id"])
        dups = {t: ids for t, ids in tokens.items() if len(ids) > 1}
        leaked = [i for i, r in recs.items() if alive(int(r.get("pid", "0") or 0))]
        gone = len(recs) - len(leaked)
        lost, intervals, restarts = self.work_lost()
        worst, worst_up, worst_full, nticks, integrity = self.tick_gaps()
        interval = max(intervals) if intervals else float("nan")
        mean_iv = sum(intervals) / len(intervals) if intervals else float("nan")
        print("\nchaos: the run")
        print(f"  duration {time.time() - self.t0:.0f} s, seed {self.args.seed}, cloud fault rate "
              f"{self.args.fault_rate:.0%}")
        print(f"  controller SIGKILLed {self.kills} times; preemptions {self.preemptions}")
        print(f"  disk full once: {self.disk_full}")
        print(f"  jobs submitted {len(self.submitted)} (and {self.refused} refused, made again), "
              f"finished {finished}, lost {len(lost_jobs)}"
              f"{' ' + str(lost_jobs) if lost_jobs else ''}, unfinished {len(unfinished)}"
              f"{' ' + str(unfinished) if unfinished else ''}")
        print(f"  instances launched {len(recs)}, terminated {gone}, leaked {len(leaked)}"
              f"{' ' + str(leaked) if leaked else ''}")
        print(f"  duplicate launches {len(dups)}{' ' + str(dups) if dups else ''}")
        print(f"  work lost: {restarts} restarts, {sum(lost):.1f} progress lost in all, at most "
              f"{max(lost) if lost else 0:.1f} at once; checkpoint intervals {mean_iv:.1f} on "
              f"average, {interval:.1f} at most (progress units, iterations at M0)")
        print(f"  ticks {nticks}; longest without a tick {worst:.1f} s in all (restarts included), "
              f"{worst_up:.1f} s while the controller was up, {worst_full:.1f} s across the full "
              f"disk; state integrity {integrity}")
        bad = []
        if lost_jobs:
            bad.append("jobs lost")
        if unfinished:
            bad.append("jobs unfinished")
        if leaked:
            bad.append("instances leaked")
        if dups:
            bad.append("duplicate launches")
        if integrity != "ok":
            bad.append("state not intact")
        if lost and intervals and max(lost) > 2 * interval:
            bad.append("work lost beyond two checkpoint intervals")
        if self.kills < self.args.kills:
            bad.append("fewer kills than asked")
        print(f"chaos: {'FAILED: ' + ', '.join(bad) if bad else 'passed'}")
        return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build folder (castor, castor-node, ...)")
    ap.add_argument("--source", required=True)
    ap.add_argument("--duration", type=float, default=600, help="seconds of chaos")
    ap.add_argument("--kills", type=int, default=50, help="controller SIGKILLs")
    ap.add_argument("--jobs", type=int, default=30, help="jobs submitted")
    ap.add_argument("--preemptions", type=int, default=40, help="preemption events")
    ap.add_argument("--fault-rate", type=float, default=0.2, help="share of cloud calls failing")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--drain", type=float, default=300, help="seconds for the jobs to finish")
    ap.add_argument("--keep", action="store_true", help="keep the run's folder")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.source = os.path.abspath(args.source)
    if args.duration < 10:
        ap.error("--duration must be at least 10 s")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphaned nodes come here
    tmp = tempfile.mkdtemp(prefix="castor-chaos-")
    c = Chaos(args, tmp)
    rc = 1
    try:
        rc = c.run()
    except Failure as e:
        print(f"chaos: FAILED: {e}")
    finally:
        if c.daemon and c.daemon.poll() is None:
            c.daemon.kill()
            c.daemon.wait()
        for i, r in c.records().items():
            pid = int(r.get("pid", "0") or 0)
            if pid > 1 and alive(pid):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
        reap()
        if args.keep or rc != 0:
            print(f"chaos: the run's folder is {tmp}")
        else:
            subprocess.run(["rm", "-rf", tmp])
    return rc


if __name__ == "__main__":
    sys.exit(main())
