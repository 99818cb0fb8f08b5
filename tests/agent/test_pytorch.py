"""test_pytorch.py: the PyTorch example (examples/pytorch/train.py) under castor, end to end on this
machine: a real controller API (castor-test-api-serve) and replicas as processes with
torch.distributed over gloo. The test plays castor-node and the daemon: it starts the replicas with
the allocation's configuration in their environment and changes the allocation through the
server. It runs 2 replicas, changes their batch size and gain without a restart, resizes to 1 and
then to 3 replicas, and checks that

* every resize checkpoints and the next replicas continue from it: the step count, the parameters
  (bit for bit), the loss and the data position (no sample twice in an epoch);
* the batch size and accumulation follow castor's decision, and the learning rate the gain of
  that batch under the statistics measured (1 at the initial batch);
* the step times the controller pooled are those of every step, per configuration, but the first
  of each process and after each batch change;
* the gradient statistics and progress the controller received match an independent computation
  here: each micro-batch's gradient by plain autograd from the traced parameters and samples, the
  Pollux estimators and bias-corrected moving average written anew (pollux-reference section 2),
  to a relative 1e-6.

Before that, in processes of their own: a checkpoint is durable before it is reported; with
DataLoader workers, a SIGTERM to the whole process group (as castor-node sends it) ends in a whole
checkpoint and exit 75, and no worker outlives the trainer; castor's gain multiplies the rate a
torch lr_scheduler sets (StepLR), for the step only; a mixed-precision loss scale goes on from the
checkpoint, and so do the random generators (dropout).

Run by ctest with /usr/bin/python3.11 (Debian's python3-torch). Without torch or numpy it is
skipped (exit 77), saying so, unless CI is set: then it fails."""

import argparse
import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from procs import free_port  # noqa: E402  (a port below the ephemeral range)

SKIP = 77
TOKENS = {
    "CASTOR_NODE_TOKEN": "e2e-node-token-0123456789",
    "CASTOR_JOB_TOKEN": "e2e-job-token-0123456789",
    "CASTOR_USER_TOKEN": "e2e-user-token-0123456789",
}
JOB = "e2e"
M0 = 32
BASE_LR = 0.05
REL = 1e-6
BUSBW = 2.5e9  # bytes/s: the all-reduce bandwidth castor-node would have measured
WAIT = 120.0  # seconds any one phase may take on a busy machine


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Controller:
    """castor-test-api-serve in a child process: HTTP on its port, commands on its stdin."""

    def __init__(self, binary, tmp):
        env = dict(os.environ, **TOKENS)
        self.proc = subprocess.Popen([binary, os.path.join(tmp, "state.db")], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        check(len(line) == 2 and line[0] == "port", f"the API server did not start: {line}")
        self.url = f"http://127.0.0.1:{line[1]}"

    def command(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        check(answer == "ok", f"{line}: {answer}")

    def call(self, method, path, token, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": "Bearer " + TOKENS[token], "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Phase:
    """The replicas of one allocation, started as castor-node would start them."""

    def __init__(self, t, world, max_steps):
        alloc = t.ctl.call("GET", f"/v1/jobs/{JOB}/allocation", "CASTOR_JOB_TOKEN")
        check(alloc["world_size"] == world, f"allocation {alloc}")
        self.world = world
        self.config = (alloc["local_bsz"], alloc["accum_steps"], alloc["lr_gain"])
        port = free_port()
        self.procs = []
        for rank in range(world):
            env = dict(os.environ, CASTOR_URL=t.ctl.url, CASTOR_JOB=JOB,
                       CASTOR_JOB_TOKEN=TOKENS["CASTOR_JOB_TOKEN"], CASTOR_RANK=str(rank),
                       CASTOR_WORLD_SIZE=str(world), CASTOR_NODES="1",
                       CASTOR_LOCAL_BSZ=str(alloc["local_bsz"]),
                       CASTOR_ACCUM_STEPS=str(alloc["accum_steps"]),
                       CASTOR_LR_GAIN=str(alloc["lr_gain"]), CASTOR_INIT_BSZ=str(M0),
                       CASTOR_REPORT_INTERVAL="0.2", CASTOR_LIB=t.lib,
                       CASTOR_ALLREDUCE_BUSBW=str(BUSBW),
                       PYTHONPATH=os.path.join(t.source, "python"), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), **t.extra_env)
            log = open(os.path.join(t.tmp, f"phase{len(t.phases)}-rank{rank}.log"), "w")
            self.procs.append(subprocess.Popen(
                [sys.executable, t.example, "--max-steps", str(max_steps), "--lr", str(BASE_LR),
                 "--checkpoint-dir", t.ckpt, "--trace-dir", t.trace, "--step-sleep", "0.002"],
                env=env, stdout=log, stderr=subprocess.STDOUT))
        t.phases.append(self)

    def wait(self, code):
        end = time.time() + WAIT
        for p in self.procs:
            try:
                rc = p.wait(timeout=max(1.0, end - time.time()))
            except subprocess.TimeoutExpired:
                raise Failure("a replica did not exit in time")
            check(rc == code, f"a replica exited with {rc}, not {code}")

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def parses(line):
    try:
        json.loads(line)
        return True
    except json.JSONDecodeError:
        return False


class Test:
    def __init__(self, args, tmp):
        self.tmp = tmp
        self.source = args.source
        self.lib = os.path.join(args.build, "libcastor.so")
        self.example = os.path.join(args.source, "examples", "pytorch", "train.py")
        self.ckpt = os.path.join(tmp, "ckpt")
        self.trace = os.path.join(tmp, "trace")
        self.extra_env = {}
        if args.preload:
            self.extra_env = {"LD_PRELOAD": args.preload,
                              "ASAN_OPTIONS": "detect_leaks=0:verify_asan_link_order=0"}
        self.phases = []
        self.ctl = Controller(os.path.join(args.build, "tests", "castor-test-api-serve"), tmp)

    def records(self, rank):
        """Rank's trace so far: every whole line. A line that does not parse is read again (a read
        that raced a write of it), and one that still does not is a failure that shows it."""
        path = os.path.join(self.trace, f"rank{rank}.jsonl")
        for attempt in range(40):
            if not os.path.exists(path):
                return []
            with open(path) as f:
                lines = [line for line in f if line.endswith("\n")]
            try:
                return [json.loads(line) for line in lines]
            except json.JSONDecodeError as err:
                bad = next(n for n, line in enumerate(lines) if not parses(line))
                if attempt == 39:
                    raise Failure(f"{path}: line {bad + 1} of {len(lines)} is not JSON ({err}): "
                                  f"{lines[bad][:200]!r}")
                time.sleep(0.05)
        return []

    def wait_until(self, phase, cond, what):
        end = time.time() + WAIT
        while time.time() < end:
            recs = self.records(0)
            if recs and cond(recs):
                return recs
            if any(p.poll() is not None for p in phase.procs):
                raise Failure(f"a replica ended while waiting for {what}")
            time.sleep(0.05)
        raise Failure(f"timed out waiting for {what}")

    def logs(self):
        out = []
        for name in sorted(os.listdir(self.tmp)):
            if name.endswith(".log"):
                with open(os.path.join(self.tmp, name)) as f:
                    out.append(f"--- {name}\n" + "".join(f.readlines()[-15:]))
        return "\n".join(out)


# ---- the independent computation ----

class Estimator:
    """The Pollux gradient noise statistics, from the published description: the unbiased estimate
    over n > 1 gradients, the differenced one over consecutive single gradients, a bias-corrected
    moving average with theta = 0.999^scale, reset when leaving the differenced estimator."""

    def __init__(self):
        self.sqr_b = self.var_b = self.unbias = 0.0
        self.sqr, self.var = 1.0, 0.0
        self.biased = False

    def update(self, n, local_sum, total, local_bsz, prev=None, pair=None):
        if n == 1:
            if prev is None:
                return  # a first single gradient only starts the pairing
            local, total, count, biased = (prev + local_sum) / 2, pair, 2, True
        else:
            local, count, biased = local_sum / n, n, False
        scale = count * local_bsz / M0
        sqr = (count * total - local) / (count - 1)
        var = (local - total) * scale / (count - 1)
        if self.biased and not biased:
            self.sqr_b = self.var_b = self.unbias = 0.0
        theta = 0.999 ** scale
        self.sqr_b = theta * self.sqr_b + (1 - theta) * sqr
        self.var_b = theta * self.var_b + (1 - theta) * var
        self.unbias = theta * self.unbias + (1 - theta)
        self.sqr, self.var = self.sqr_b / self.unbias, self.var_b / self.unbias
        self.biased = biased

    def reported(self):
        return max(self.sqr, 0.0), max(self.var, 1e-6)

    def gain(self, scale):
        sqr, var = self.reported()
        den = var / scale + sqr
        return (var + sqr) / den if den > 0 else 1.0


def rel_close(a, b, rel=REL):
    return abs(a - b) <= rel * max(abs(a), abs(b))


DURABLE_CHECK = r"""
import os, sys
import torch
from castor import pytorch as cp
events = []
real_fsync, real_replace = os.fsync, os.replace

def fsync(fd):
    events.append(("fsync", os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))))
    real_fsync(fd)

def replace(a, b):
    events.append(("replace", os.path.realpath(a), os.path.realpath(b)))
    real_replace(a, b)

ckpt = os.path.realpath(sys.argv[1])
m = torch.nn.Linear(4, 1).double()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
ds = torch.utils.data.TensorDataset(torch.randn(16, 4).double(), torch.randn(16, 1).double())
tr = cp.Trainer(m, opt, ds, batch_size=4, checkpoint_dir=ckpt, handle_sigterm=False)
checkpointed = tr.castor.checkpointed

class Handle:
    def __getattr__(self, name):
        return getattr(tr_castor, name)

    def checkpointed(self):
        events.append(("checkpointed",))
        return checkpointed()

tr_castor = tr.castor
tr.castor = Handle()
os.fsync, os.replace = fsync, replace
try:
    tr.checkpoint()
finally:
    os.fsync, os.replace = real_fsync, real_replace
path = os.path.join(ckpt, cp.CHECKPOINT_NAME)
want = [("fsync", path + ".tmp"), ("replace", path + ".tmp", path), ("fsync", ckpt),
        ("checkpointed",)]
if events != want:
    print(f"the checkpoint is not made durable before it is reported: {events}, not {want}")
    sys.exit(1)
tr.castor = tr_castor
tr.close(finished=False)
"""


def check_durable_checkpoint(t):
    """A checkpoint is fsync'd (the file, then its folder after the rename) before the controller
    is told of it, so that a VM powered off right after a notice leaves the checkpoint it counts."""
    ckpt = os.path.join(t.tmp, "durable")
    env = dict(os.environ, CASTOR_LIB=t.lib, PYTHONPATH=os.path.join(t.source, "python"))
    for k in ("CASTOR_URL", "CASTOR_JOB", "CASTOR_CHECKPOINT_DIR"):
        env.pop(k, None)
    env.update(t.extra_env)
    r = subprocess.run([sys.executable, "-c", DURABLE_CHECK, ckpt], env=env, cwd=t.tmp,
                       capture_output=True, text=True, timeout=WAIT)
    check(r.returncode == 0, f"the durable checkpoint check: {r.stdout}{r.stderr}")


WORKERS_CHECK = r"""
import os, sys, time
import torch
from castor import pytorch as cp
ckpt, marks = sys.argv[1], sys.argv[2]

def mark(worker_id):  # the caller's worker_init_fn: still called
    open(os.path.join(marks, f"worker-{worker_id}-{os.getpid()}"), "w").close()

torch.manual_seed(0)
ds = torch.utils.data.TensorDataset(torch.randn(4096, 4), torch.randn(4096, 1))
m = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
tr = cp.Trainer(m, opt, ds, batch_size=16, num_workers=2, worker_init_fn=mark,
                checkpoint_dir=ckpt)
for step in tr.steps(100000):
    for x, y in step:
        step.backward(torch.nn.functional.mse_loss(tr.model(x), y))
        time.sleep(0.01)
    if step.number == 5:
        print("ready", flush=True)
tr.close()
print("exit", tr.exit_code, "step", tr.step_count, flush=True)
sys.exit(tr.exit_code)
"""


def _group_pids(pgid):
    """The live (not zombie) processes of process group pgid."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(name))
    return out


def check_loader_workers_survive_sigterm(t):
    """With DataLoader workers (num_workers=2), castor-node's SIGTERM to the replica's process
    group stops the trainer at the next step, which checkpoints and exits EXIT_RESIZE: the
    workers ignore it (a worker killed would fail the checkpoint, and the exit be a failure), the
    caller's worker_init_fn still runs in them, and they end with the trainer."""
    ckpt, marks = os.path.join(t.tmp, "workers-ckpt"), os.path.join(t.tmp, "workers-marks")
    os.makedirs(marks)
    env = dict(os.environ, CASTOR_LIB=t.lib, PYTHONPATH=os.path.join(t.source, "python"))
    for k in ("CASTOR_URL", "CASTOR_JOB", "CASTOR_CHECKPOINT_DIR", "CASTOR_INIT_BSZ"):
        env.pop(k, None)
    env.update(t.extra_env)
    p = subprocess.Popen([sys.executable, "-c", WORKERS_CHECK, ckpt, marks], env=env, cwd=t.tmp,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        line = p.stdout.readline()
        if not line.startswith("ready"):
            raise Failure(f"the trainer with workers runs: {line}{p.stdout.read()}")
        check(len(os.listdir(marks)) == 2, f"the caller's worker_init_fn ran: {os.listdir(marks)}")
        os.killpg(p.pid, signal.SIGTERM)  # as castor-node stops a replica
        out = p.stdout.read()
        rc = p.wait(WAIT)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    check(rc == 75, f"the trainer checkpointed and exited 75 on SIGTERM, not {rc}: {out}")
    check(os.listdir(ckpt) == ["castor-checkpoint.pt"],
          f"the checkpoint was written whole: {os.listdir(ckpt)}")
    end = time.time() + 15
    while _group_pids(p.pid) and time.time() < end:
        time.sleep(0.1)
    check(not _group_pids(p.pid), f"the workers ended with the trainer: {_group_pids(p.pid)}")


SCHEDULER_CHECK = r"""
import math, sys
import torch
from castor import pytorch as cp
torch.manual_seed(0)
ds = torch.utils.data.TensorDataset(torch.randn(512, 4).double(), torch.randn(512, 1).double())
m = torch.nn.Linear(4, 1).double()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)  # halves it every step
tr = cp.Trainer(m, opt, ds, batch_size=16)  # castor's gain: CASTOR_LR_GAIN=2
for step in tr.steps(5):
    before = [p.detach().clone() for p in m.parameters()]
    for x, y in step:
        step.backward(torch.nn.functional.mse_loss(tr.model(x), y))
    grads = [p.grad.detach().clone() for p in m.parameters()]
    step.finish()
    want = 0.1 * 0.5 ** (step.number - 1) * 2.0  # the scheduler's, times the gain
    for b, g, p in zip(before, grads, m.parameters()):
        if not torch.allclose(p.detach(), b - want * g, rtol=1e-12, atol=1e-15):
            print(f"step {step.number} did not step at lr {want}: {step.lrs}")
            sys.exit(1)
    if not math.isclose(opt.param_groups[0]["lr"], sched.get_last_lr()[0], rel_tol=1e-15):
        print(f"step {step.number}: the optimizer's lr {opt.param_groups[0]['lr']} is not the "
              f"scheduler's {sched.get_last_lr()[0]}")
        sys.exit(1)
    sched.step()
tr.close(finished=False)
"""


def check_lr_scheduler(t):
    """castor's gain multiplies the learning rate a torch lr_scheduler sets, for the step only:
    StepLR halving it every step and a gain of 2, each step moves the parameters by
    0.1 * 0.5^k * 2 times the gradient, and the scheduler's rate stays the optimizer's."""
    env = dict(os.environ, CASTOR_LIB=t.lib, PYTHONPATH=os.path.join(t.source, "python"),
               CASTOR_LR_GAIN="2")
    for k in ("CASTOR_URL", "CASTOR_JOB", "CASTOR_CHECKPOINT_DIR"):
        env.pop(k, None)
    env.update(t.extra_env)
    r = subprocess.run([sys.executable, "-c", SCHEDULER_CHECK], env=env, cwd=t.tmp,
                       capture_output=True, text=True, timeout=WAIT)
    check(r.returncode == 0, f"the lr scheduler check: {r.stdout}{r.stderr}")


SCALER_CHECK = r"""
import sys
import torch
from castor import pytorch as cp
folder = sys.argv[1]


# torch.cuda.amp.GradScaler's interface and dynamic loss scale on the CPU (torch's needs CUDA): a
# scaled gradient above fp16's largest (65504) is an overflow, whose step is skipped and whose
# scale is halved; after 3 steps without one the scale doubles.
class Scaler:

    def __init__(self):
        self._scale, self._good, self._inf = 2.0 ** 16, 0, False

    def scale(self, loss):
        return loss * self._scale

    def get_scale(self):
        return self._scale

    def unscale_(self, opt):
        self._inf = False
        for group in opt.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._inf |= bool(p.grad.abs().max() > 65504.0)
                    p.grad.div_(self._scale)

    def step(self, opt):
        if not self._inf:
            opt.step()

    def update(self):
        self._good = 0 if self._inf else self._good + 1
        if self._inf:
            self._scale /= 2
        elif self._good == 3:
            self._scale, self._good = self._scale * 2, 0

    def state_dict(self):
        return {"scale": self._scale, "_growth_tracker": self._good}

    def load_state_dict(self, state):
        if not state:  # torch's: an empty state is a disabled scaler's, refused by an enabled one
            raise RuntimeError("The source state dict is empty")
        self._scale, self._good = state["scale"], state["_growth_tracker"]


# A disabled scaler (GradScaler(enabled=False), or one made where CUDA is not): its state is {}.
class Disabled(Scaler):

    def state_dict(self):
        return {}


def train(folder, upto, restore, scaler_class=Scaler):
    torch.manual_seed(0)
    ds = torch.utils.data.TensorDataset(4 * torch.randn(512, 4).double(),
                                        4 * torch.randn(512, 1).double())
    m = torch.nn.Linear(4, 1).double()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    scaler = scaler_class()
    tr = cp.Trainer(m, opt, ds, batch_size=16, grad_scaler=scaler, checkpoint_dir=folder)
    if restore:
        tr.restore()
    for step in tr.steps(upto):
        for x, y in step:
            step.backward(torch.nn.functional.mse_loss(tr.model(x), y))
    tr.close(finished=False)
    return [p.detach().clone() for p in m.parameters()], scaler.get_scale()


whole, whole_scale = train(folder + "/whole", 12, False)
train(folder + "/split", 6, False)
split, split_scale = train(folder + "/split", 12, True)
if split_scale != whole_scale or any(not torch.equal(a, b) for a, b in zip(whole, split)):
    print(f"a restart did not continue bit for bit: loss scale {split_scale} (uninterrupted "
          f"{whole_scale}), parameters {split} (uninterrupted {whole})")
    sys.exit(1)
# a checkpoint of a disabled scaler restores under an enabled one, which starts at its own scale
train(folder + "/disabled", 6, False, Disabled)
_, scale = train(folder + "/disabled", 7, True)
if scale != 2.0 ** 16 and scale != 2.0 ** 15:
    print(f"after a disabled scaler's checkpoint the loss scale is {scale}")
    sys.exit(1)
print("ok", whole_scale)
"""


def check_grad_scaler_resumes(t):
    """A mixed-precision trainer's loss scale is part of its checkpoint: a run stopped after 6
    steps and restored goes on with the loss scale it had, so that its 12 steps skip the same
    overflowing steps and end with the parameters of an uninterrupted run, bit for bit (a
    restart from the scaler's initial scale overflowed again and skipped other steps). A
    disabled scaler's checkpoint (its state empty) restores under an enabled one (it raised)."""
    folder = os.path.join(t.tmp, "scaler")
    env = dict(os.environ, CASTOR_LIB=t.lib, PYTHONPATH=os.path.join(t.source, "python"))
    for k in ("CASTOR_URL", "CASTOR_JOB", "CASTOR_CHECKPOINT_DIR", "CASTOR_INIT_BSZ"):
        env.pop(k, None)
    env.update(t.extra_env)
    r = subprocess.run([sys.executable, "-c", SCALER_CHECK, folder], env=env, cwd=t.tmp,
                       capture_output=True, text=True, timeout=WAIT)
    check(r.returncode == 0, f"the grad scaler check: {r.stdout}{r.stderr}")


RNG_CHECK = r"""
import sys
import torch
from castor import pytorch as cp
folder = sys.argv[1]


def train(sub, upto, restore):
    torch.manual_seed(0)
    ds = torch.utils.data.TensorDataset(torch.randn(512, 4).double(), torch.randn(512, 1).double())
    m = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Dropout(0.5),
                            torch.nn.Linear(16, 1)).double()
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    tr = cp.Trainer(m, opt, ds, batch_size=16, checkpoint_dir=folder + "/" + sub)
    if restore:
        tr.restore()
    for step in tr.steps(upto):
        for x, y in step:
            step.backward(torch.nn.functional.mse_loss(tr.model(x), y))
    tr.close(finished=False)
    return [p.detach().clone() for p in m.parameters()]


whole = train("whole", 12, False)
train("split", 6, False)
split = train("split", 12, True)
if any(not torch.equal(a, b) for a, b in zip(whole, split)):
    print("a restart did not continue bit for bit: the dropout masks after it differ")
    sys.exit(1)
print("ok")
"""


def check_rng_resumes(t):
    """Every rank's random number generators are part of the checkpoint: a model with dropout
    stopped after 6 steps and restored draws the dropout masks an uninterrupted run draws, and
    ends its 12 steps with the same parameters, bit for bit (a restart drew them anew from the
    script's seed)."""
    folder = os.path.join(t.tmp, "rng")
    env = dict(os.environ, CASTOR_LIB=t.lib, PYTHONPATH=os.path.join(t.source, "python"))
    for k in ("CASTOR_URL", "CASTOR_JOB", "CASTOR_CHECKPOINT_DIR", "CASTOR_INIT_BSZ"):
        env.pop(k, None)
    env.update(t.extra_env)
    r = subprocess.run([sys.executable, "-c", RNG_CHECK, folder], env=env, cwd=t.tmp,
                       capture_output=True, text=True, timeout=WAIT)
    check(r.returncode == 0, f"the random generators check: {r.stdout}{r.stderr}")


def run(t, torch, example):
    ctl = t.ctl
    ctl.call("POST", "/v1/nodes", "CASTOR_NODE_TOKEN", {"instance_id": "n1", "gpus": 4})
    ctl.call("POST", "/v1/jobs", "CASTOR_USER_TOKEN", {
        "name": JOB, "command": ["python3", "train.py"], "workdir": t.tmp,
        "init_batch_size": M0, "max_batch_size": 512, "max_local_bsz": 64, "max_replicas": 4})
    ctl.command(f"alloc {JOB} 16 0 1.0 n1=2")

    # phase 0: 2 replicas; castor changes their batch and gain in flight, then takes one away
    p0 = Phase(t, 2, 100000)
    recs = t.wait_until(p0, lambda r: r[-1]["step"] >= 25, "25 steps on 2 replicas")
    ctl.command(f"config {JOB} 24 1 1.2")
    recs = t.wait_until(p0, lambda r: r[-1]["local_bsz"] == 24, "the new batch size")
    switch = next(r["step"] for r in recs if r["local_bsz"] == 24)
    t.wait_until(p0, lambda r: r[-1]["step"] >= switch + 15, "steps at the new batch size")
    ctl.command(f"alloc {JOB} 32 0 1.0 n1=1")
    p0.wait(75)
    grads = [ctl.call("GET", f"/v1/jobs/{JOB}", "CASTOR_USER_TOKEN")]
    end0 = t.records(0)[-1]["step"]
    # the resize's checkpoint was reported: the controller counts nothing of phase 0 as lost
    check(grads[0]["checkpoint_progress"] > 0 and
          rel_close(grads[0]["checkpoint_progress"], grads[0]["progress"]),
          f"the controller heard of the checkpoint: {grads[0]}")
    check(grads[0]["state"] == "running", f"the job runs on: {grads[0]['state']}")
    # the sync prior: the model's gradient bytes over the node's all-reduce bandwidth
    nbytes = sum(p.numel() * p.element_size() for p in example.make_model(0).parameters())
    check(grads[0].get("sync_prior") is not None and
          rel_close(grads[0]["sync_prior"], nbytes / BUSBW, 1e-12),
          f"the controller has the sync prior {grads[0].get('sync_prior')}, want {nbytes / BUSBW}")

    # phase 1: 1 replica (the differenced estimator), then 3
    p1 = Phase(t, 1, 100000)
    t.wait_until(p1, lambda r: r[-1]["step"] >= end0 + 30, "30 steps on 1 replica")
    ctl.command(f"alloc {JOB} 16 1 1.3 n1=3")
    p1.wait(75)
    grads.append(ctl.call("GET", f"/v1/jobs/{JOB}", "CASTOR_USER_TOKEN"))
    end1 = t.records(0)[-1]["step"]

    # phase 2: 3 replicas until the last step
    last = end1 + 20
    p2 = Phase(t, 3, last)
    p2.wait(0)
    grads.append(ctl.call("GET", f"/v1/jobs/{JOB}", "CASTOR_USER_TOKEN"))
    job = grads[-1]
    # the last step ended the job: the controller recorded it finished, at its final progress
    check(job["state"] == "finished" and job["finished_at"] > 0,
          f"the job is finished when its replicas exit 0: {job['state']}")
    check(rel_close(job["checkpoint_progress"], job["progress"]),
          "a finished job has nothing left to lose")

    traces = {r: t.records(r) for r in range(3)}
    steps = traces[0]
    check([r["step"] for r in steps] == list(range(1, last + 1)),
          "rank 0 ran every step once, numbered across the restarts")
    ends = [end0, end1, last]
    phase_of = [0 if s["step"] <= end0 else 1 if s["step"] <= end1 else 2 for s in steps]

    # continuity at each restart: parameters bit for bit, loss, data position. One step's loss is
    # one mini-batch's (it moved by 0.37 between two steps in a CI run), so the loss checks
    # compare means over windows of up to W steps.
    W = 5

    def mean_loss(a, b):
        xs = [s["loss"] for s in steps[max(a, 0):b]]
        return sum(xs) / len(xs)

    first = mean_loss(0, W)
    for k in (0, 1):
        before = steps[ends[k] - 1]
        after = steps[ends[k]]
        check(after["restored"] and not before["restored"], f"phase {k + 1} restored")
        check(after["params"] == before["params_after"],
              f"phase {k + 1} starts from the parameters phase {k} ended with")
        m_before = mean_loss(ends[k] - W, ends[k])
        m_after = mean_loss(ends[k], min(ends[k] + W, ends[k + 1]))
        check(abs(m_after - m_before) < 0.3,
              f"the loss continues: mean {m_before} over the last steps, then {m_after}")
        check(m_after < 0.8 * first, f"restarted replicas do not start over: mean {first} at "
              f"the start, {m_after} after restart {k + 1}")
    check(mean_loss(len(steps) - W, len(steps)) < 0.5 * first,
          f"training makes progress: {first} -> {mean_loss(len(steps) - W, len(steps))}")

    # the configuration each step ran at follows castor's decisions
    want = []
    for s in steps:
        if phase_of[s["step"] - 1] == 0:
            want.append((2, 16, 0, 1.0) if s["step"] < switch else (2, 24, 1, 1.2))
        elif phase_of[s["step"] - 1] == 1:
            want.append((1, 32, 0, 1.0))
        else:
            want.append((3, 16, 1, 1.3))
    for s, w in zip(steps, want):
        got = (s["world"], s["local_bsz"], s["accum_steps"])
        check(got == w[:3], f"step {s['step']} ran at {got}, castor said {w[:3]}")
        # the gain of castor's batch under the statistics the replicas measure now (the
        # controller's w[3] only before any): 1 at the initial batch, AdaScale's (1, scale] above
        scale = s["world"] * s["local_bsz"] * (s["accum_steps"] + 1) / M0
        ok = s["lr_gain"] == 1.0 if scale == 1 else 1.0 <= s["lr_gain"] <= scale
        check(ok, f"step {s['step']} ran at gain {s['lr_gain']} for {scale} x the initial batch")
        check(math.isclose(s["lr"], BASE_LR * s["lr_gain"], rel_tol=1e-12),
              f"step {s['step']}: learning rate {s['lr']} at gain {s['lr_gain']}")
    check(switch > 25, "the batch size changed in flight, after the change was made")

    # data: each step's micro-batches have the decided size, no sample twice in an epoch, and
    # every step starts where the one before ended
    seen = {}
    pos = None
    for i, s in enumerate(steps):
        world, local, accum = want[i][:3]
        g = world * local * (accum + 1)
        recs = [traces[r][_index(traces[r], s["step"])] for r in range(world)]
        idx = [x for rec in recs for mb in rec["indices"] for x in mb]
        check(all(len(mb) == local for rec in recs for mb in rec["indices"]) and
              all(len(rec["indices"]) == accum + 1 for rec in recs),
              f"step {s['step']}: micro-batches of the decided size")
        check(len(set(idx)) == g, f"step {s['step']}: the replicas' samples are disjoint")
        epoch = seen.setdefault(s["epoch"], set())
        check(not (epoch & set(idx)), f"step {s['step']}: a sample seen twice in an epoch")
        epoch.update(idx)
        if pos is not None:
            exp = pos if pos[1] + g <= 4096 else (pos[0] + 1, 0)
            check((s["epoch"], s["position"]) == exp, f"step {s['step']}: data position")
        pos = (s["epoch"], s["position"] + g)
    check(len(seen) >= 2, "the run crossed an epoch")

    # the step times the controller pooled: every step under its configuration, but the first
    # of each process and the first after each batch change (setup: loader, communicators)
    counts = {}
    for i, w in enumerate(want):
        if i == 0 or phase_of[i] != phase_of[i - 1] or w[:3] != want[i - 1][:3]:
            continue
        counts[(1, w[0], float(w[1]), w[2])] = counts.get((1, w[0], float(w[1]), w[2]), 0) + 1
    pooled = {(c["nodes"], c["replicas"], float(c["local_bsz"]), c["accum_steps"]): c["count"]
              for c in job["reports"]}
    check(pooled == counts, f"the controller pooled {pooled}, the steps were {counts}")

    # the gradient statistics, computed anew from the traced parameters and samples
    data = example.make_dataset(0)
    model = example.make_model(0)
    params = list(model.parameters())
    est = Estimator()
    progress = 0.0
    prev = None
    for i, s in enumerate(steps):
        world, local, accum, _ = want[i]
        if i > 0 and (phase_of[i] != phase_of[i - 1] or want[i] != want[i - 1]):
            prev = None  # a restart or a new batch size breaks the pairing
        torch.nn.utils.vector_to_parameters(torch.tensor(s["params"], dtype=torch.float64),
                                            params)
        gs = []
        for r in range(world):
            rec = traces[r][_index(traces[r], s["step"])]
            for mb in rec["indices"]:
                x, y = data[mb]
                loss = example.loss_fn(model, x, y)
                gs.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)]))
        n = len(gs)
        sqr = [float(g @ g) for g in gs]
        mean = torch.stack(gs).mean(dim=0)
        total = float(mean @ mean)
        # what rank 0 handed to libcastor (micro norms in rank order) is what was computed here
        got = s["micro_sqr"][0]
        check(len(got) == n and all(rel_close(a, b, 1e-9) for a, b in zip(got, sqr)),
              f"step {s['step']}: micro-batch norms {got} vs {sqr}")
        if n == 1:
            pair = None
            if prev is not None:
                pm = (prev[1] + gs[0]) / 2
                pair = float(pm @ pm)
            est.update(1, sqr[0], None, local, prev[0] if prev else None, pair)
            prev = (sqr[0], gs[0])
        else:
            est.update(n, sum(sqr), total, local)
        progress += est.gain(world * local * (accum + 1) / M0)
        if s["step"] in ends:
            k = ends.index(s["step"])
            got_sqr, got_var = grads[k]["grad"]["sqr"], grads[k]["grad"]["var"]
            sqr_e, var_e = est.reported()
            check(rel_close(got_sqr, sqr_e) and rel_close(got_var, var_e),
                  f"after step {s['step']} the controller has sqr {got_sqr} var {got_var}, the "
                  f"independent computation {sqr_e} {var_e}")
            check(rel_close(grads[k]["progress"], progress),
                  f"after step {s['step']} progress {grads[k]['progress']} vs {progress}")
            worst = max(abs(got_sqr - sqr_e) / abs(sqr_e), abs(got_var - var_e) / abs(var_e))
            print(f"after step {s['step']}: sqr {got_sqr:.9g} var {got_var:.9g} progress "
                  f"{progress:.6f} match the independent computation (relative {worst:.1e})")


def _index(recs, step):
    for i in range(len(recs) - 1, -1, -1):
        if recs[i]["step"] == step:
            return i
    raise Failure(f"no trace of step {step}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--preload", default="", help="LD_PRELOAD for the replicas (sanitizers)")
    args = ap.parse_args()
    try:
        import numpy  # noqa: F401  (torch's tensors need it here)
        import torch
    except ImportError as e:
        if os.environ.get("CI"):
            print(f"test_pytorch: FAILED: {e}: install python3-torch (scripts/install-deps)")
            return 1
        print(f"test_pytorch: skipped: {e} (install python3-torch to run it)")
        return SKIP
    spec = importlib.util.spec_from_file_location(
        "castor_example", os.path.join(args.source, "examples", "pytorch", "train.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with tempfile.TemporaryDirectory(prefix="castor-e2e-") as tmp:
        t = None
        try:
            t = Test(args, tmp)
            check_durable_checkpoint(t)
            check_loader_workers_survive_sigterm(t)
            check_lr_scheduler(t)
            check_grad_scaler_resumes(t)
            check_rng_resumes(t)
            run(t, torch, example)
        except Failure as e:
            print(f"test_pytorch: FAILED: {e}")
            if t:
                print(t.logs())
            return 1
        finally:
            if t:
                for p in t.phases:
                    p.kill()
                t.ctl.stop()
    print("test_pytorch: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
