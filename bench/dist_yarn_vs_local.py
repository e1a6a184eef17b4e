#!/usr/bin/env python3
"""DIST training in YARN containers (the mini cluster, tests/yarn/cluster) beside DIST on the
local backend: the same job on the same machine, in one run.

usage: bench/dist_yarn_vs_local.py [build/bin/tarn] [--epochs N] [--rounds N]

The job: the income example (examples/income-estimation, 32.5k rows, two shuffled shards), 30
tanh units, Adam, batch 128, 1 parameter server, 2 workers, 1 backup, commPeriod 1, sync, every
node on 127.0.0.1. The cluster is started once (about a minute) and stopped at the end. Each
round trains once per backend, the order alternating between rounds. Per run it takes the
epoch lines' samples/s (the training passes, as the coordinator measures them) from the second
epoch on, and the epoch cycle from tmp/dist/history.json (`endedAt`: training, validation and
the checkpoint between two epochs' ends, what a user waits for). Reported: both figures both
ways, and the median over rounds of each round's YARN / local ratio.
Goal (issue 13): DIST on YARN at least 90% of DIST on the local backend's samples/s.
Results go to bench/results/dist_yarn_vs_local.json.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import _common
from _common import git_info, machine_info, med

NAME = "dist_yarn_vs_local"
ROOT = _common.ROOT
WORK = os.path.join(ROOT, "build", "dist-yarn-bench-work")
CLUSTER = os.path.join(ROOT, "tests", "yarn", "cluster")
EXAMPLE = os.path.join(ROOT, "examples", "income-estimation", "DataStore")
GOAL_SHARE = 0.90
PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [30], "ActivationFunc": ["tanh"],
          "LearningRate": 0.002, "MiniBatchs": 128, "RegularizedConstant": 0.01,
          "Propagation": "Adam"}
JOB = ["-Dtarn.cluster.host=127.0.0.1", "-Dshifu.ps.instances=1", "-Dshifu.worker.instances=2",
       "-Dshifu.worker.instances.backup=1", "-Dtarn.train.comm-period=1"]
YARN = ["-Dtarn.cluster.backend=yarn", "-Dshifu.am.memory=256m", "-Dshifu.ps.memory=256m",
        "-Dshifu.worker.memory=256m", "-Dshifu.ps.vcores=1", "-Dshifu.worker.vcores=1"]
EPOCH_RATE = re.compile(r"^Epoch #(\d+) .*?([\d.]+) samples/s", re.M)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, cwd, env=None):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        log(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{NAME}: {' '.join(cmd)} failed ({proc.returncode})")
    return proc


def prepare(tarn, epochs):
    ms = os.path.join(WORK, "income")
    stamp = os.path.join(ms, "prepared.json")
    want = {"tarn": os.path.getmtime(tarn), "epochs": epochs}
    if os.path.exists(stamp) and json.load(open(stamp)) == want:
        return ms
    shutil.rmtree(ms, ignore_errors=True)
    os.makedirs(WORK, exist_ok=True)
    run([tarn, "new", "income", "-q"], WORK)
    path = os.path.join(ms, "ModelConfig.json")
    mc = json.load(open(path))
    mc["basic"]["runMode"] = "DIST"
    mc["dataSet"].update(dataPath=os.path.join(EXAMPLE, "DataSet1"),
                         headerPath=os.path.join(EXAMPLE, "DataSet1", ".pig_header"),
                         targetColumnName="Target", posTags=[">50K"], negTags=["<=50K"])
    mc["train"].update(algorithm="TensorFlow", numTrainEpochs=epochs, params=PARAMS)
    json.dump(mc, open(path, "w"), indent=2)
    for step in (["init"], ["stats"], ["norm", "-shuffle", "-Dshifu.norm.shuffle.size=2"],
                 ["varsel"]):
        run([tarn, *step, "-q"], ms)
    json.dump(want, open(stamp, "w"))
    return ms


def start_cluster():
    """Starts the mini cluster in a folder of this benchmark's own; returns its environment."""
    run_dir = os.path.join(WORK, "yarn-run")
    proc = run([CLUSTER, "start", "--dir", run_dir, "--owner-pid", str(os.getpid())], ROOT)
    conf = re.search(r"export HADOOP_CONF_DIR=(\S+)", proc.stdout).group(1)
    user = json.load(open(os.path.join(conf, "ready.json")))["user"]
    return run_dir, dict(os.environ, HADOOP_CONF_DIR=conf, HADOOP_USER_NAME=user)


def train(tarn, ms, backend, env):
    extra = YARN if backend == "yarn" else []
    t0 = time.perf_counter()
    proc = run([tarn, "train", *JOB, *extra], ms, env)
    wall = time.perf_counter() - t0
    rates = [float(m.group(2)) for m in EPOCH_RATE.finditer(proc.stdout)]
    history = json.load(open(os.path.join(ms, "tmp", "dist", "history.json")))
    ends = [h["endedAt"] for h in history]
    cycles = [b - a for a, b in zip(ends, ends[1:])]
    return {"backend": backend, "wall_s": wall, "samples_per_s": rates,
            "train_s": [h["trainSeconds"] for h in history], "cycle_s": cycles,
            "steady_samples_per_s": med(rates[1:]), "steady_cycle_s": med(cycles)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", default=os.path.join(ROOT, "build", "bin", "tarn"))
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="(accepted from run-all; unused)")
    a = ap.parse_args()
    tarn = os.path.abspath(a.tarn)
    missing = [t for t in ("java", "javac", "mvn") if shutil.which(t) is None]
    if missing:
        log(f"SKIP {NAME}: {', '.join(missing)} not found (the mini cluster needs a Java 17 "
            "JDK and Maven)")
        return 0
    binary_sha = _common.sha256(tarn)
    load_start = os.getloadavg()
    ms = prepare(tarn, a.epochs)
    run_dir, yarn_env = start_cluster()
    runs = {"local": [], "yarn": []}
    try:
        for r in range(a.rounds):
            order = ("local", "yarn") if r % 2 == 0 else ("yarn", "local")
            for backend in order:
                res = train(tarn, ms, backend, yarn_env if backend == "yarn" else None)
                runs[backend].append(res)
                log(f"{NAME}: round {r + 1} {backend}: "
                    f"{res['steady_samples_per_s'] / 1e3:.0f}k samples/s, "
                    f"epoch cycle {res['steady_cycle_s'] * 1e3:.0f} ms")
    finally:
        subprocess.run([CLUSTER, "stop", "--dir", run_dir], capture_output=True)

    rate_ratios = [y["steady_samples_per_s"] / l["steady_samples_per_s"]
                   for l, y in zip(runs["local"], runs["yarn"])]
    cycle_ratios = [l["steady_cycle_s"] / y["steady_cycle_s"]
                    for l, y in zip(runs["local"], runs["yarn"])]
    local_rate = med([x["steady_samples_per_s"] for x in runs["local"]])
    yarn_rate = med([x["steady_samples_per_s"] for x in runs["yarn"]])
    local_cycle = med([x["steady_cycle_s"] for x in runs["local"]])
    yarn_cycle = med([x["steady_cycle_s"] for x in runs["yarn"]])
    share = med(rate_ratios)
    load_end = os.getloadavg()
    loaded = max(load_start[0], load_end[0]) > len(os.sched_getaffinity(0))
    load_text = (f"load average {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end"
                 + (" (loaded)" if loaded else ""))
    lines = [
        f"{NAME}: income, 1 PS + 2 workers + 1 backup, k=1, sync, {a.epochs} epochs, "
        f"{a.rounds} rounds, epochs 2.. ; {load_text}",
        f"{'backend':<8}{'samples/s':>12}{'epoch cycle':>14}",
        f"{'local':<8}{local_rate / 1e3:>11.0f}k{local_cycle * 1e3:>11.0f} ms",
        f"{'yarn':<8}{yarn_rate / 1e3:>11.0f}k{yarn_cycle * 1e3:>11.0f} ms",
        f"{NAME}: YARN / local samples/s, median of per-round ratios: {share:.2f} "
        f"(rounds: {', '.join(f'{x:.2f}' for x in rate_ratios)})",
        f"{NAME}: YARN / local epochs per second (whole cycle, checkpoint included), median of "
        f"per-round ratios: {med(cycle_ratios):.2f}",
        f"goal: DIST on YARN >= {GOAL_SHARE:.0%} of DIST on the local backend's samples/s: "
        f"{'met' if share >= GOAL_SHARE else 'MISSED'} ({share:.0%})",
    ]
    res = {"benchmark": NAME, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git": git_info(),
           "machine": machine_info(), "tarn_sha256": binary_sha, "epochs": a.epochs,
           "rounds": a.rounds, "load_average_start": load_start, "loaded": loaded,
           "samples_per_s": {"local": local_rate, "yarn": yarn_rate},
           "epoch_cycle_s": {"local": local_cycle, "yarn": yarn_cycle},
           "ratio_samples_per_s": share, "ratios_samples_per_s": rate_ratios,
           "ratio_epochs_per_s": med(cycle_ratios), "ratios_epochs_per_s": cycle_ratios,
           "meets_goal": share >= GOAL_SHARE, "runs": runs}
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    _common.finish(NAME, os.path.join(ROOT, "bench", "results", NAME + ".json"), res, lines,
                   tarn, binary_sha, False)
    return 0 if share >= GOAL_SHARE else 2


if __name__ == "__main__":
    sys.exit(main())
