"""castor.pytorch: training a PyTorch model under castor.

A Trainer wraps the model (in DistributedDataParallel when torch.distributed is initialised), its
optimizer and a dataset. Each optimizer step it

* times the step (every micro-batch's forward and backward, and the optimizer) and the part spent
  waiting for the gradient all-reduce;
* computes the gradient statistics with backward hooks on every parameter: the squared norm of
  this replica's gradient of each micro-batch, before the all-reduce (divided by the Adam
  preconditioner and the mixed-precision loss scale), and of the all-reduced average - what
  libcastor's castor_step expects (docs/worker.md);
* shares the norms of every replica and rank 0's decision in one all-reduce, and on rank 0 hands
  the step to libcastor, which reports to the controller;
* applies castor's decision at the step boundary on every rank at once: the AdaScale learning-rate
  gain, a new local batch size or accumulation (the DataLoader is re-created), or - when the
  allocation's world size changed - a checkpoint and an exit with EXIT_RESIZE, for castor-node to
  restart the replicas with the new configuration;
* checkpoints and restores the model, the optimizer, the grad scaler, the data position (epoch
  and sample index in a seeded permutation, which any world size and batch size can continue
  from) and libcastor's state.

    trainer = Trainer(model, optimizer, dataset, checkpoint_dir="ckpt")
    trainer.restore()
    for step in trainer.steps(max_steps):
        for x, y in step:
            step.backward(loss_fn(trainer.model(x), y))
    trainer.close()
    sys.exit(trainer.exit_code)
"""

import atexit
import contextlib
import errno
import math
import multiprocessing.util  # noqa: F401  (its exit handler is registered before ours: see below)
import os
import signal
import sys
import time
import weakref

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from castor._lib import Castor

EXIT_RESIZE = 75  # EX_TEMPFAIL: checkpointed; restart me with the configuration castor gives
CHECKPOINT_NAME = "castor-checkpoint.pt"
ADAM_WARMUP = 5  # the Adam preconditioner applies from this Adam step on (src/agent/gns.h)

# The slots after the norms in the per-step all-reduce: rank 0's decision, any rank's stop, and
# rank 0's "a periodic checkpoint is due" (its clock decides, so that every rank saves together).
_D_VERSION, _D_WORLD, _D_NODES, _D_LOCAL, _D_ACCUM, _D_GAIN, _D_STOP, _D_CKPT = range(8)
_D_LEN = 8
FINISH_TRIES = 3  # attempts to tell the controller the job finished, a second apart
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class _WorkerInit:
    """The worker_init_fn of the Trainer's DataLoader workers: they ignore SIGTERM and SIGINT,
    which castor-node sends the replica's whole process group (and a terminal the foreground
    group) for the trainer alone, which checkpoints at the next step boundary and then exits; a
    worker killed meanwhile would fail that checkpoint. Then the caller's worker_init_fn. The
    workers still end with the trainer: its exit shuts them down (Trainer.close, or the exit
    handler below), and PyTorch's workers leave by themselves when their parent is gone."""

    def __init__(self, user_fn=None):
        self.user_fn = user_fn

    def __call__(self, worker_id):
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        # blocked in the trainer while it started the worker (see _make_loader): one sent since
        # is discarded by the SIG_IGN above
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        if self.user_fn is not None:
            self.user_fn(worker_id)


_TRAINERS = weakref.WeakSet()


@atexit.register
def _shut_down_workers():
    """At the interpreter's exit, the live Trainers' DataLoader workers are told to stop and
    joined, before multiprocessing's own exit handler (registered earlier, so run later) would
    SIGTERM them - which they ignore - and wait for them forever."""
    for tr in list(_TRAINERS):
        tr._close_loader()


def _step_start(n, epoch, pos, global_bsz):
    """Where a step of global_bsz samples starts: (epoch, pos), the remainder of an epoch too small
    for a whole step skipped."""
    if global_bsz > n:
        raise ValueError(f"a step of {global_bsz} samples is larger than the dataset ({n})")
    if pos + global_bsz > n:
        return epoch + 1, 0
    return epoch, pos


class ElasticSampler:
    """The data position of a job whose world size and batch size change between restarts: one
    seeded permutation of the dataset per epoch, and the index of the next sample in it. A step
    takes the next world x local x (accum + 1) samples; micro-batch k of rank r is the slice
    [(r (accum + 1) + k) local, + local) of them. state_dict() is the position."""

    def __init__(self, size, seed=0):
        self.size = size
        self.seed = seed
        self.epoch = 0
        self.pos = 0
        self._perm_epoch = None
        self._perm = None

    def permutation(self, epoch):
        if self._perm_epoch != epoch:
            g = torch.Generator()
            g.manual_seed(self.seed * 1000003 + epoch)
            self._perm = torch.randperm(self.size, generator=g)
            self._perm_epoch = epoch
        return self._perm

    def step_indices(self, world, rank, local, accum, epoch=None, pos=None):
        """This rank's micro-batches of the step at (epoch, pos) (default: the current position):
        (epoch, pos) where it starts, and a list of accum + 1 lists of dataset indices."""
        g = world * local * (accum + 1)
        epoch, pos = _step_start(self.size, self.epoch if epoch is None else epoch,
                                 self.pos if pos is None else pos, g)
        perm = self.permutation(epoch)
        out = []
        for k in range(accum + 1):
            off = pos + (rank * (accum + 1) + k) * local
            out.append(perm[off:off + local].tolist())
        return epoch, pos, out

    def advance(self, world, local, accum):
        """Past one step."""
        g = world * local * (accum + 1)
        self.epoch, self.pos = _step_start(self.size, self.epoch, self.pos, g)
        self.pos += g

    def state_dict(self):
        return {"epoch": self.epoch, "pos": self.pos, "seed": self.seed, "size": self.size}

    def load_state_dict(self, state):
        if state["size"] != self.size:
            raise ValueError("the checkpoint's data position is for a dataset of another size")
        self.epoch, self.pos, self.seed = state["epoch"], state["pos"], state["seed"]


class _StepBatches:
    """The batch sampler of one DataLoader: this rank's micro-batches, step after step, from a
    position; a new one is made (with a new DataLoader) when the batch size changes."""

    def __init__(self, sampler, world, rank, local, accum):
        self.sampler = sampler
        self.args = (world, rank, local, accum)
        self.start = (sampler.epoch, sampler.pos)

    def __iter__(self):
        world, rank, local, accum = self.args
        epoch, pos = self.start
        while True:
            epoch, pos, micro = self.sampler.step_indices(world, rank, local, accum, epoch, pos)
            yield from micro
            pos += world * local * (accum + 1)


class Step:
    """One optimizer step: iterate it for the micro-batches (accum_steps + 1 of them) and call
    backward(loss) for each; finish() (called by Trainer.steps when you do not) steps the
    optimizer. Its fields say where it ran: number, epoch, position, indices (this rank's
    micro-batches), world_size, local_bsz, accum_steps, lr_gain; after finish, loss (the mean of
    this rank's micro-batch losses), lrs (each parameter group's learning rate the optimizer
    stepped with), micro_sqr and avg_sqr (on rank 0: what castor_step got)."""

    def __init__(self, trainer):
        tr = trainer
        self.trainer = tr
        self.number = tr.step_count + 1
        self.world_size = tr.world_size
        self.local_bsz = tr.local_bsz
        self.accum_steps = tr.accum_steps
        self.lr_gain = tr.lr_gain
        self.epoch, self.position, self.indices = tr.sampler.step_indices(
            tr.world_size, tr.rank, tr.local_bsz, tr.accum_steps)
        self.losses = []
        self.loss = None
        self.lrs = None
        self.micro_sqr = None
        self.avg_sqr = None
        self.finished = False
        self._t_start = None
        self._t_backward = 0.0
        self._sync = 0.0
        self._backwards = 0

    def __iter__(self):
        tr = self.trainer
        self._t_start = time.perf_counter()
        for k in range(self.accum_steps + 1):
            batch = next(tr._batches)
            last = k == self.accum_steps
            ctx = tr.model.no_sync() if (tr._ddp and not last) else contextlib.nullcontext()
            with ctx:
                yield batch
            if self._backwards != k + 1:
                raise RuntimeError("call step.backward(loss) once for each micro-batch")

    def backward(self, loss):
        """Backward for the current micro-batch, collecting its gradient's squared norm."""
        tr = self.trainer
        tr._begin_micro()
        t0 = time.perf_counter()
        (tr.grad_scaler.scale(loss) if tr.grad_scaler else loss).backward()
        t1 = time.perf_counter()
        tr._end_micro()
        self._t_backward = t1
        # the exposed synchronisation: from this replica's last gradient to the end of backward
        self._sync = max(0.0, t1 - tr._t_last_grad) if tr._t_last_grad > t0 else 0.0
        self.losses.append(float(loss.detach()))
        self._backwards += 1

    def finish(self):
        if not self.finished:
            self.trainer._finish(self)
            self.finished = True


def _fsync_dir(path):
    """fsync a directory, so that a rename in it survives a power loss (where the platform can:
    a file system that refuses, EINVAL, has nothing more to do)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


class Trainer:
    """Trains model with optimizer on dataset under castor; see the module's documentation.

    dataset: a map-style Dataset, or a DataLoader whose dataset, batch size (the default local
    batch), workers and collate_fn are taken (its sampler is not: castor's batches replace it).
    model: the nn.Module (not yet wrapped: the Trainer wraps it in DistributedDataParallel when
    torch.distributed is initialised; trainer.model is what to call). optimizer: built on the
    model's parameters; each step its learning rates (as they are then: a torch lr_scheduler's
    are the base ones) are multiplied by castor's gain ** lr_gain_power (1 for SGD; 0.5 is the
    reference's choice for Adam) for optimizer.step() only, and set back after it. batch_size and
    accum_steps: used when castor-node has not given them (CASTOR_LOCAL_BSZ, CASTOR_ACCUM_STEPS).
    init_batch_size: M0, the total batch the learning rate is tuned at (CASTOR_INIT_BSZ, which
    castor-node sets from the job spec, wins: the controller counts progress in the spec's).
    num_workers, collate_fn, worker_init_fn: the DataLoader's (its workers ignore SIGTERM and
    SIGINT, which are for the trainer).
    checkpoint_dir: where the checkpoint lives (CASTOR_CHECKPOINT_DIR wins; None: no checkpoint).
    checkpoint_interval: seconds between periodic checkpoints (CASTOR_CHECKPOINT_INTERVAL, which
    castor-node sets from the job spec, wins; None: only at a stop and at the end); each one is
    reported to the controller, which counts the work after the last one as lost on a preemption.
    grad_scaler: a torch.cuda.amp.GradScaler for mixed precision. handle: a castor.Castor (default
    Castor.from_env()). On SIGTERM (a preemption notice) every rank checkpoints at the next step
    boundary and the steps end with EXIT_RESIZE.
    """

    def __init__(self, model, optimizer, dataset, *, batch_size=None, accum_steps=0,
                 init_batch_size=None, checkpoint_dir=None, seed=0, lr_gain_power=1.0,
                 num_workers=0, collate_fn=None, grad_scaler=None, handle=None,
                 handle_sigterm=True, checkpoint_interval=None, worker_init_fn=None):
        if isinstance(dataset, DataLoader):  # take what castor does not decide from the loader
            batch_size = batch_size or dataset.batch_size
            num_workers = num_workers or dataset.num_workers
            collate_fn = collate_fn or dataset.collate_fn
            worker_init_fn = worker_init_fn or dataset.worker_init_fn
            dataset = dataset.dataset
        self.rank = dist.get_rank() if dist.is_initialized() else 0
        self.world_size = dist.get_world_size() if dist.is_initialized() else 1
        spec_m0 = os.environ.get("CASTOR_INIT_BSZ")
        if init_batch_size and not spec_m0:
            os.environ["CASTOR_INIT_BSZ"] = str(init_batch_size)
        elif init_batch_size and spec_m0 and float(spec_m0) != float(init_batch_size):
            print(f"castor: init_batch_size {init_batch_size} ignored: the job's spec says "
                  f"{spec_m0} (CASTOR_INIT_BSZ), which the controller counts progress in",
                  file=sys.stderr)
        self.castor = handle if handle is not None else Castor.from_env()
        d = self.castor.decision()
        self.local_bsz = int(round(d.local_bsz)) if d.local_bsz > 0 else int(batch_size or 0)
        self.accum_steps = d.accum_steps if d.local_bsz > 0 else int(accum_steps)
        if self.local_bsz < 1:
            raise ValueError("no local batch size: set CASTOR_LOCAL_BSZ or pass batch_size")
        self.castor.set_batch(self.local_bsz, self.accum_steps)
        self.lr_gain = d.lr_gain
        self.lr_gain_power = lr_gain_power
        self._start_world = d.world_size  # the allocation this process was started for
        self.module = model
        self._ddp = dist.is_initialized()
        self.model = torch.nn.parallel.DistributedDataParallel(model) if self._ddp else model
        self.optimizer = optimizer
        self.dataset = dataset
        self.sampler = ElasticSampler(len(dataset), seed)
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.worker_init_fn = worker_init_fn
        self.grad_scaler = grad_scaler
        self.checkpoint_dir = os.environ.get("CASTOR_CHECKPOINT_DIR", checkpoint_dir)
        env_interval = os.environ.get("CASTOR_CHECKPOINT_INTERVAL")
        self.checkpoint_interval = float(env_interval) if env_interval else checkpoint_interval
        self._last_checkpoint = time.monotonic()
        self._checkpoint_due = False
        self.completed = False  # steps() reached max_steps
        self.step_count = 0
        self.exit_code = 0
        self.restored = False
        self.extra = {}  # the caller's own state, kept in the checkpoint
        self.stopping = False
        self._stop_requested = False
        self._loader = None
        self._batches = None
        self._collecting = False
        self._t_last_grad = 0.0
        self._g_prev = None
        self._micro = []
        self._groups = len(optimizer.param_groups)
        self._params = [[p for p in g["params"] if p.requires_grad]
                        for g in optimizer.param_groups]
        self._group_of = {p: gi for gi, params in enumerate(self._params) for p in params}
        # what one all-reduce carries: with the node's bandwidth, the job's sync prior
        self.castor.set_grad_bytes(sum(p.numel() * p.element_size() for params in self._params
                                       for p in params))
        self._cur = None
        self._hooks = []
        for gi, params in enumerate(self._params):
            for p in params:
                self._hooks.append(p.register_hook(self._make_hook(gi, p)))
        if handle_sigterm:
            signal.signal(signal.SIGTERM, self._on_sigterm)
        _TRAINERS.add(self)
        self._make_loader()

    # ---- gradient statistics ----

    def _precond(self, p):
        """Adam's preconditioner for p's elements, or None (plain gradients): sqrt(v / (1 -
        beta2^t)) + eps from the optimizer's state, from Adam step ADAM_WARMUP on."""
        st = self.optimizer.state.get(p)
        if not st or "exp_avg_sq" not in st:
            return None
        t = int(st["step"]) if "step" in st else 0
        if t < ADAM_WARMUP:
            return None
        group = self.optimizer.param_groups[self._group_of[p]]
        beta2, eps = group["betas"][1], group["eps"]
        return (st["exp_avg_sq"] / (1.0 - beta2 ** t)).sqrt().add_(eps)

    def _sqr(self, p, g):
        """|g / P|^2 for a gradient g of p, P its preconditioner: a float64 scalar tensor on g's
        device (read back once per micro-batch, not once per parameter)."""
        pre = self._precond(p)
        if pre is not None:
            g = g / pre
        return g.detach().double().pow(2).sum()

    def _make_hook(self, gi, p):
        def hook(grad):
            if self._collecting:
                self._cur[gi] = self._cur[gi] + self._sqr(p, grad)
            self._t_last_grad = time.perf_counter()
            return None
        return hook

    def _begin_micro(self):
        self._cur = [0.0] * self._groups
        self._collecting = True

    def _end_micro(self):
        self._collecting = False
        cur = torch.tensor([float(x) for x in self._cur], dtype=torch.float64)
        if self.grad_scaler is not None:
            cur = cur / float(self.grad_scaler.get_scale()) ** 2
        self._micro.append(cur)

    def _group_sqr(self, grads_of):
        """Per group, the squared norm of the preconditioned vectors grads_of(p)."""
        out = []
        for params in self._params:
            s = 0.0
            for p in params:
                g = grads_of(p)
                if g is not None:
                    s += self._sqr(p, g)
            out.append(float(s))
        return out

    # ---- the step ----

    def steps(self, max_steps=None):
        """The steps, until max_steps (counted over restarts) or until castor asks for a restart
        (then exit_code is EXIT_RESIZE, after a checkpoint)."""
        while max_steps is None or self.step_count < max_steps:
            step = Step(self)
            yield step
            step.finish()
            if self.stopping:
                self.checkpoint()
                self.castor.flush(10.0)
                self.exit_code = EXIT_RESIZE
                return
            if self._checkpoint_due:
                self.checkpoint()
        self.checkpoint()
        self.castor.flush(10.0)
        self.completed = True

    def _finish(self, step):
        tr_n = self.accum_steps + 1
        if len(self._micro) != tr_n:
            raise RuntimeError(f"{len(self._micro)} backward calls in a step of {tr_n} micro-batches")
        if self.grad_scaler is not None:
            self.grad_scaler.unscale_(self.optimizer)
        if tr_n > 1:  # the step's gradient: the mean of its micro-batches' gradients
            for params in self._params:
                for p in params:
                    if p.grad is not None:
                        p.grad.div_(tr_n)
        total = self._group_sqr(lambda p: p.grad)
        n = self.world_size * tr_n
        pair = None
        if n == 1:
            if self._g_prev is not None:
                prev = self._g_prev
                pair = self._group_sqr(
                    lambda p: None if p.grad is None or prev.get(p) is None
                    else (prev[p] + p.grad) / 2)
            self._g_prev = {p: p.grad.detach().clone() for params in self._params
                            for p in params if p.grad is not None}
        # every replica's micro-batch norms, rank 0's decision and anyone's stop, in one all-reduce
        g = self._groups
        buf = torch.zeros(g * n + _D_LEN, dtype=torch.float64)
        for k, cur in enumerate(self._micro):
            for gi in range(g):
                buf[gi * n + self.rank * tr_n + k] = cur[gi]
        if self.rank == 0:
            d = self.castor.decision()
            buf[g * n:g * n + _D_STOP] = torch.tensor(
                [d.version, d.world_size, d.nodes, d.local_bsz, d.accum_steps, d.lr_gain],
                dtype=torch.float64)
        buf[g * n + _D_STOP] = 1.0 if self._stop_requested else 0.0
        if self.rank == 0 and self.checkpoint_interval and self.checkpoint_dir and \
                time.monotonic() - self._last_checkpoint >= self.checkpoint_interval:
            buf[g * n + _D_CKPT] = 1.0
        if self._ddp:
            dist.all_reduce(buf)
        # the optimizer, at the learning rates of now (a scheduler's) times castor's gain, which
        # are set back after the step: the optimizer and a scheduler only ever see their own
        t0 = time.perf_counter()
        groups = self.optimizer.param_groups
        base = [group["lr"] for group in groups]
        scale = self.lr_gain ** self.lr_gain_power
        for group, lr in zip(groups, base):
            group["lr"] = lr * scale
        step.lrs = [group["lr"] for group in groups]
        try:
            if self.grad_scaler is not None:
                self.grad_scaler.step(self.optimizer)
                self.grad_scaler.update()
            else:
                self.optimizer.step()
        finally:
            for group, lr in zip(groups, base):
                group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        t1 = time.perf_counter()
        step_seconds = (step._t_backward - step._t_start) + (t1 - t0)
        micro = [buf[gi * n:(gi + 1) * n].tolist() for gi in range(g)]
        avg = pair if n == 1 else total
        if n == 1 and avg is None:
            avg = [math.nan] * g
        if self.rank == 0:
            self.castor.step(step_seconds, min(step._sync, 0.999 * step_seconds), micro, avg)
            step.micro_sqr, step.avg_sqr = micro, avg
        step.loss = sum(step.losses) / len(step.losses)
        self._micro = []
        self.sampler.advance(self.world_size, self.local_bsz, self.accum_steps)
        self.step_count += 1
        self._apply(buf[g * n:].tolist())

    def _apply(self, d):
        """Take the decision shared by rank 0 (the same on every rank)."""
        self._checkpoint_due = d[_D_CKPT] > 0
        if d[_D_STOP] > 0:
            self.stopping = True
            return
        world = int(d[_D_WORLD])
        if world != self._start_world:
            self.stopping = True  # a new allocation: checkpoint, castor-node restarts us
            return
        local, accum, gain = int(round(d[_D_LOCAL])), int(d[_D_ACCUM]), d[_D_GAIN]
        if gain > 0:
            self.lr_gain = gain
        if local >= 1 and (local, accum) != (self.local_bsz, self.accum_steps):
            self.local_bsz, self.accum_steps = local, accum
            self.castor.set_batch(local, accum)
            self._g_prev = None
            self._make_loader()

    def _make_loader(self):
        self._close_loader()
        batches = _StepBatches(self.sampler, self.world_size, self.rank, self.local_bsz,
                               self.accum_steps)
        workers = self.num_workers > 0
        self._loader = DataLoader(self.dataset, batch_sampler=batches,
                                  num_workers=self.num_workers, collate_fn=self.collate_fn,
                                  worker_init_fn=_WorkerInit(self.worker_init_fn)
                                  if workers else self.worker_init_fn)
        # the workers start here: SIGTERM and SIGINT wait (for this thread) until they ignore them
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if workers else None
        try:
            self._batches = iter(self._loader)
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _close_loader(self):
        """Stop the DataLoader's workers (they ignore SIGTERM: they are told and joined)."""
        it, self._batches, self._loader = self._batches, None, None
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()

    def _on_sigterm(self, signum, frame):
        self._stop_requested = True

    # ---- checkpoints ----

    def _path(self):
        return os.path.join(self.checkpoint_dir, CHECKPOINT_NAME) if self.checkpoint_dir else None

    def _rng_state(self):
        """This rank's random number generators (torch's CPU one, and CUDA's where this process
        uses CUDA): what dropout and random augmentation draw from next."""
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        return {"cpu": torch.get_rng_state(), "cuda": cuda}

    def _set_rng_state(self, rng):
        """Take back a rank's generators from _rng_state (CUDA's where it has as many devices)."""
        torch.set_rng_state(rng["cpu"])
        cuda = rng.get("cuda")
        if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)

    def checkpoint(self):
        """Save model, optimizer, the grad scaler's loss scale, every rank's random number
        generators, data position, step count, libcastor's state and extra (rank 0 writes,
        atomically; every rank waits for it)."""
        path = self._path()
        if path is None:
            return
        rng = [self._rng_state()]
        if self._ddp:  # every rank's, so that each goes on with its own after a restart
            rng = [None] * self.world_size
            dist.all_gather_object(rng, self._rng_state())
        if self.rank == 0:
            os.makedirs(self.checkpoint_dir, exist_ok=True)
            state = {
                "castor_checkpoint": 1,
                "model": self.module.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "base_lrs": [group["lr"] for group in self.optimizer.param_groups],
                "sampler": self.sampler.state_dict(),
                "step": self.step_count,
                "castor": self.castor.save_state(),
                "extra": self.extra,
            }
            if self.grad_scaler is not None:  # the loss scale and its growth count go on
                state["grad_scaler"] = self.grad_scaler.state_dict()
            state["rng"] = rng
            # durable before it is reported: the file's data, then its name (a VM powered off
            # right after a notice must not leave an empty or old checkpoint counted as current)
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            _fsync_dir(self.checkpoint_dir)
            rc = self.castor.checkpointed()
            if rc != 0:
                print(f"castor: the controller did not hear of the checkpoint at step "
                      f"{self.step_count} (code {rc}); training goes on", file=sys.stderr)
        self._last_checkpoint = time.monotonic()
        self._checkpoint_due = False
        if self._ddp:
            dist.barrier()

    def restore(self):
        """Load the checkpoint if there is one (every rank): True when one was loaded."""
        path = self._path()
        if path is None or not os.path.exists(path):
            return False
        state = torch.load(path, map_location="cpu")
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        # the learning rates without castor's gain (a checkpoint from before the gain was set
        # back after each step saved the optimizer's with it)
        for group, lr in zip(self.optimizer.param_groups, state["base_lrs"]):
            group["lr"] = lr
        self.sampler.load_state_dict(state["sampler"])
        self.step_count = state["step"]
        self.castor.load_state(state["castor"])
        if self.grad_scaler is not None and state.get("grad_scaler"):  # {}: a disabled one's
            self.grad_scaler.load_state_dict(state["grad_scaler"])
        self.extra = state.get("extra", {})
        self._g_prev = None
        self._make_loader()
        # the generators as they were at the checkpoint (after the new loader, whose start draws
        # from them), so that dropout and augmentation go on as in an uninterrupted run; a
        # restart at another world size has no such continuation and keeps its own
        rng = state.get("rng")
        if rng and len(rng) == self.world_size:
            self._set_rng_state(rng[self.rank])
        self.restored = True
        return True

    def close(self, finished=None):
        """Send what is pending to the controller, tell it the job finished (finished; default:
        steps() reached max_steps and no restart is asked), and free libcastor's handle."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self._close_loader()
        self.castor.flush(10.0)
        if finished is None:
            finished = self.completed and self.exit_code == 0
        if finished and self.rank == 0:
            for attempt in range(FINISH_TRIES):
                rc = self.castor.finished()
                if rc == 0:
                    break
                print(f"castor: the controller was not told the job finished (code {rc})",
                      file=sys.stderr)
                time.sleep(1.0)
        self.castor.close()
