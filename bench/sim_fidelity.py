#!/usr/bin/env python3
"""sim_fidelity.py: castor simulate against the Pollux authors' simulator results.

Runs `castor simulate` on a folder of workload traces under pollux, optimus and tiresias, and
prints, per policy and workload, castor's average job completion time, the authors' (from the
artifact's results-jobload/<policy>-1.0/summary.json), their ratio, and the wall time per run.
Standard library only. Usage:

  bench/sim_fidelity.py [--castor build/castor] [--workloads DIR] [--results DIR] [--load 1.0]
                        [--json FILE]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ART = os.path.join(HERE, "..", "..", "shared", "data", "pollux-artifact", "simulator")

# The fidelity bars: optimus and tiresias within 15% per workload and 10% on the mean;
# pollux's mean at most 10% above the authors'.
BARS = {"optimus": (0.15, 0.10), "tiresias": (0.15, 0.10)}
POLLUX_MEAN_BAR = 0.10


def run(castor, workloads, policy, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "summary.json")
        cmd = [castor, "simulate", "--workload", workloads, "--policy", policy, "--quiet",
               "--out", out] + extra
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit("castor simulate failed:\n" + proc.stdout + proc.stderr)
        with open(out) as f:
            summary = json.load(f)
    walls = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^(\S+) \S+: average JCT .* ([0-9.]+) s wall\)$", proc.stdout, re.M)}
    return summary, walls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--castor", default=os.path.join(HERE, "..", "build", "castor"))
    ap.add_argument("--workloads", default=os.path.join(ART, "workloads"))
    ap.add_argument("--results", default=os.path.join(ART, "results-jobload"))
    ap.add_argument("--load", default="1.0",
                    help="which of the authors' job-load results to compare with (0.5 .. 2.0)")
    ap.add_argument("--json", help="write the figures here as JSON")
    ap.add_argument("extra", nargs="*", help="more options for castor simulate (after --)")
    a = ap.parse_args()

    report = {}
    ok = True
    print("castor simulate vs the Pollux authors' simulator (average JCT, seconds)")
    print("%-9s %-12s %10s %10s %7s %8s" % ("policy", "workload", "castor", "authors", "ratio",
                                           "wall s"))
    for policy in ("pollux", "optimus", "tiresias"):
        ours, walls = run(a.castor, a.workloads, policy, a.extra)
        with open(os.path.join(a.results, policy + "-" + a.load, "summary.json")) as f:
            theirs = json.load(f)["avgs"]
        rows = {}
        for w in sorted(ours["avgs"]):
            o, t = ours["avgs"][w], theirs.get(w)
            ratio = o / t if t else float("nan")
            rows[w] = {"castor": o, "authors": t, "ratio": ratio, "wall_s": walls.get(w)}
            print("%-9s %-12s %10.1f %10.1f %7.3f %8.2f" % (policy, w, o, t or float("nan"),
                                                            ratio, walls.get(w, float("nan"))))
            if policy in BARS and t and abs(ratio - 1) > BARS[policy][0]:
                ok = False
        mo = sum(r["castor"] for r in rows.values()) / len(rows)
        mt = sum(r["authors"] for r in rows.values() if r["authors"]) / len(rows)
        print("%-9s %-12s %10.1f %10.1f %7.3f" % (policy, "mean", mo, mt, mo / mt))
        if policy in BARS and abs(mo / mt - 1) > BARS[policy][1]:
            ok = False
        if policy == "pollux" and mo / mt > 1 + POLLUX_MEAN_BAR:
            ok = False
        report[policy] = {"workloads": rows, "mean": {"castor": mo, "authors": mt,
                                                       "ratio": mo / mt}}
    print("fidelity bars (optimus, tiresias: 15%% per workload, 10%% on the mean; pollux mean "
          "<= +10%%): %s" % ("met" if ok else "NOT met"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
