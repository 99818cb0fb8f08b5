#!/usr/bin/env python3
"""derive.py: writes this folder's traces from data/workloads/: each Pollux workload with a
`deadline` column, set on every third job (rows 1, 4, 7, ...) to three quarters of the completion
time that job had on a fixed 16-node, 4-GPU on-demand cluster under pollux in `castor simulate`,
and at least 900 s; the other jobs have none.

  data/workloads-deadline/derive.py [--castor build/castor]

The completion times come from the castor given (its simulator and its pollux), so the traces
are those of the commit that derived them; README.md says which."""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "workloads")


def completion_times(castor, path):
    """{job name: seconds from submission to finish} on the fixed cluster."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        subprocess.run([castor, "simulate", "--workload", path, "--policy", "pollux", "--nodes",
                        "16", "--gpus-per-node", "4", "--quiet", "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            jcts = json.load(f)["jcts"]
    (times,) = jcts.values()
    return times


def derive(castor, name):
    src = os.path.join(SOURCE, name)
    times = completion_times(castor, src)
    with open(src) as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0].keys()) + ["deadline"]
    dst = os.path.join(HERE, name)
    with open(dst, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for i, row in enumerate(rows):
            row["deadline"] = max(900, round(0.75 * times[row["name"]])) if i % 3 == 0 else ""
            w.writerow(row)
    return sum(1 for i in range(len(rows)) if i % 3 == 0), len(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--castor", default=os.path.join(HERE, "..", "..", "build", "castor"))
    args = ap.parse_args()
    for name in sorted(os.listdir(SOURCE)):
        if name.endswith(".csv"):
            n, total = derive(args.castor, name)
            print(f"{name}: {n} of {total} jobs with a deadline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
