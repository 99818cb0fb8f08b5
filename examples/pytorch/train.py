"""train.py: a small classifier on synthetic data (nothing downloaded) trained with
DistributedDataParallel on CPU (gloo) under castor: castor-node starts one process per replica with
CASTOR_RANK, CASTOR_WORLD_SIZE, CASTOR_MASTER_ADDR, CASTOR_MASTER_PORT and the configuration in the
environment;
castor.pytorch reports to the controller, follows its batch size and learning-rate gain, and on a
resize checkpoints and exits with 75 for castor-node to restart it.

    MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 CASTOR_RANK=0 CASTOR_WORLD_SIZE=1 \\
    CASTOR_LOCAL_BSZ=32 PYTHONPATH=python /usr/bin/python3.11 examples/pytorch/train.py

--trace-dir writes one JSON line per step and rank (what the end-to-end test checks)."""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

FEATURES, HIDDEN, CLASSES, SAMPLES = 16, 32, 4, 4096


def make_dataset(seed=0):
    """Synthetic classification: Gaussian inputs labelled by a fixed random linear teacher with
    noise (float64, so that gradient statistics can be checked tightly)."""
    g = torch.Generator()
    g.manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=g, dtype=torch.float64)
    teacher = torch.randn(FEATURES, CLASSES, generator=g, dtype=torch.float64)
    logits = x @ teacher + 0.5 * torch.randn(SAMPLES, CLASSES, generator=g, dtype=torch.float64)
    return torch.utils.data.TensorDataset(x, logits.argmax(dim=1))


def make_model(seed=0):
    """A two-layer perceptron in float64."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, CLASSES)
    ).double()


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-steps", type=int, default=500)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--batch-size", type=int, default=32, help="without CASTOR_LOCAL_BSZ")
    ap.add_argument("--init-batch-size", type=int, default=64, help="without CASTOR_INIT_BSZ")
    ap.add_argument("--checkpoint-dir", default="castor-example-checkpoint")
    ap.add_argument("--trace-dir", default=None)
    ap.add_argument("--step-sleep", type=float, default=0.0, help="seconds of extra work a step")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from castor.pytorch import Trainer

    rank = int(os.environ.get("CASTOR_RANK", "0"))
    world = int(os.environ.get("CASTOR_WORLD_SIZE", "1"))
    # castor-node says where rank 0 listens (CASTOR_MASTER_ADDR, CASTOR_MASTER_PORT: a port of the
    # job's own, so that two jobs on one machine do not meet); MASTER_* set by hand win
    os.environ.setdefault("MASTER_ADDR", os.environ.get("CASTOR_MASTER_ADDR", "127.0.0.1"))
    os.environ.setdefault("MASTER_PORT", os.environ.get("CASTOR_MASTER_PORT", "29500"))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)

    model = make_model(args.seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    # the loader's batch size is the default; castor's decisions replace it (and the loader)
    loader = torch.utils.data.DataLoader(make_dataset(args.seed), batch_size=args.batch_size)
    trainer = Trainer(model, optimizer, loader, init_batch_size=args.init_batch_size,
                      checkpoint_dir=args.checkpoint_dir, seed=args.seed)
    restored = trainer.restore()
    trace = None
    if args.trace_dir:
        os.makedirs(args.trace_dir, exist_ok=True)
        trace = open(os.path.join(args.trace_dir, f"rank{rank}.jsonl"), "a")

    for step in trainer.steps(args.max_steps):
        before = flat_params(trainer.module) if trace and rank == 0 else None
        for x, y in step:
            step.backward(loss_fn(trainer.model, x, y))
            if args.step_sleep:
                time.sleep(args.step_sleep)
        step.finish()
        if trace:
            rec = {
                "step": step.number, "rank": rank, "world": step.world_size,
                "local_bsz": step.local_bsz, "accum_steps": step.accum_steps,
                "epoch": step.epoch, "position": step.position, "indices": step.indices,
                "lr_gain": step.lr_gain, "lr": step.lrs[0],
                "loss": step.loss, "restored": restored, "pid": os.getpid(),
            }
            if rank == 0:
                rec.update(params=before, micro_sqr=step.micro_sqr, avg_sqr=step.avg_sqr)
                if trainer.stopping or step.number == args.max_steps:
                    rec["params_after"] = flat_params(trainer.module)
            trace.write(json.dumps(rec) + "\n")
            trace.flush()
            restored = False
        if rank == 0 and step.number % 50 == 0:
            print(f"step {step.number} loss {step.loss:.4f} world {step.world_size} "
                  f"local_bsz {step.local_bsz} accum {step.accum_steps} gain {step.lr_gain:.3f}",
                  flush=True)
    trainer.close()
    dist.destroy_process_group()
    return trainer.exit_code


if __name__ == "__main__":
    sys.exit(main())
