#!/usr/bin/env python3
"""Distributed training (runMode DIST: 1 parameter server, 2 workers) beside single-process
training (runMode LOCAL) of the same network on flights_3m, at equal work, and beside
TensorFlow's ParameterServerStrategy, in one run.

usage: bench/dist_vs_local.py [build/bin/tarn] [--epochs N] [--rounds N] [--comm-periods 1,4,8]
                             [--tf-epochs N] [--tls]

Follows ../shared/docs/BENCHMARKING.md: the same normalized shards (two files, one per worker),
the same network (50 tanh units, Adam, batch 128), the same seed and validation split for both
modes; rounds alternate the configurations, one warm-up round and then --rounds (at least 5)
measured ones; each configuration's samples/s is the median over rounds, and every ratio the
median of the per-round ratios (both sides from the same round).

Configurations: LOCAL (batch 128); for each k, DIST k (2 workers, k batches of 128 per push)
and "LOCAL eq k", LOCAL at equal work: sync DIST with W workers and period k makes one Adam
step on the mean gradient of W x k batches (equal_work_batch), so LOCAL with batch W x k x 128
and the same learning rate makes the same steps per epoch, each on as many rows; and TensorFlow's
ParameterServerStrategy (bench/_tf_pss_peer.py: 1 PS and 2 workers as processes on loopback
with TF_CONFIG, driven by a chief with a ClusterCoordinator; the same network on tarn's
normalized training rows, batch 128 per worker step), in the warm-up at 1 and 2 intra-op
threads per process and measured at the better: steady-state samples/s from its second epoch
(--tf-epochs, 2 by default), the whole command's time beside it, its test AUC against tarn's.

For each tarn configuration it prints training samples/s (the epoch lines' figure: training
passes only), the validation AUC after every epoch (from the TensorBoard event files both modes
write), wall time to reach LOCAL's final validation AUC, the test AUC (tarn eval), and for DIST
the bytes sent and received per training sample, its share of LOCAL, of LOCAL at equal work and
its samples/s over TensorFlow's. From the bytes per sample it estimates how DIST would scale on
10 machines on 10 Gbit/s.
Goals (issues 4 and 13): DIST >= 80% of LOCAL's samples/s at equal work, >= 50% at k = 1,
>= 5x TensorFlow's ParameterServerStrategy, with the same AUC (within 0.005).
Results go to bench/results/dist_vs_local.json. With --tls every DIST configuration also runs
with -Dtarn.cluster.tls=true in the same rounds, and the table adds TLS's samples/s over the
same configuration's without (results in dist_vs_local_tls.json).
"""
import argparse
import json
import os
import re
import shutil
import struct
import socket
import subprocess
import sys
import time

import _common
import _train_peers
from _common import add_method_args, check_tree, machine_info, med, ratios_per_round, write_results
from train_vs_pytorch_keras import NEG_TAGS, POS_TAGS, TRAIN_PARAMS, split_csv

NAME = "dist_vs_local"
ROOT = _common.ROOT
WORK = os.path.join(ROOT, "build", "dist-bench-work")
WORKERS = 2  # DIST's workers, and TensorFlow's
BATCH = TRAIN_PARAMS["MiniBatchs"]  # rows per worker batch
GOAL_SHARE = 0.80  # issue 4 and 13: DIST / LOCAL at equal work
GOAL_SHARE_K1 = 0.50  # issue 13: DIST k=1 / LOCAL at equal work
GOAL_OVER_TF = 5.0  # issue 13: DIST samples/s over TensorFlow ParameterServerStrategy's
GOAL_AUC = 0.005
TF_THREADS = (1, 2)  # intra-op threads per TensorFlow process: both in the warm-up, the better measured


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, cwd):
    _common.sample_load("before")
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    _common.sample_load("after")
    if proc.returncode != 0:
        log(proc.stdout + proc.stderr)
        raise SystemExit(f"{NAME}: {' '.join(cmd)} failed ({proc.returncode})")
    return proc, time.time() - t0


def tensorboard_scalars(folder, tag):
    """{step: value} of `tag` from the TFRecord event files in folder (a minimal reader of the
    Event protobuf: step is field 2, summary field 5 > value field 1 > tag 1, simple_value 2)."""
    def varint(b, i):
        shift = v = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                return v, i

    def fields(b):
        i = 0
        while i < len(b):
            key, i = varint(b, i)
            num, wt = key >> 3, key & 7
            if wt == 0:
                v, i = varint(b, i)
            elif wt == 1:
                v, i = b[i:i + 8], i + 8
            elif wt == 5:
                v, i = b[i:i + 4], i + 4
            elif wt == 2:
                n, i = varint(b, i)
                v, i = b[i:i + n], i + n
            else:
                return
            yield num, v

    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.startswith("events.out.tfevents"):
            continue
        data = open(os.path.join(folder, name), "rb").read()
        i = 0
        while i + 12 <= len(data):
            (n,) = struct.unpack_from("<Q", data, i)
            rec = data[i + 12:i + 12 + n]
            i += 12 + n + 4
            step = None
            values = []
            for num, v in fields(rec):
                if num == 2:
                    step = v
                elif num == 5:
                    for vn, vv in fields(v):
                        if vn == 1:
                            t = s = None
                            for fn, fv in fields(vv):
                                if fn == 1:
                                    t = fv.decode()
                                elif fn == 2:
                                    s = struct.unpack("<f", fv)[0]
                            values.append((t, s))
            for t, s in values:
                if t == tag and step is not None:
                    out[step] = s
    return out


def prepare(tarn, data, split, epochs):
    os.makedirs(WORK, exist_ok=True)
    train_csv = os.path.join(WORK, "train.csv.gz")
    test_csv = os.path.join(WORK, "test.csv.gz")
    split_csv(data, split, WORK)
    ms = os.path.join(WORK, "flights_3m")
    stamp = os.path.join(ms, "prepared.json")
    want = {"tarn": os.path.getmtime(tarn), "epochs": epochs}
    if os.path.exists(stamp) and json.load(open(stamp)) == want:
        return ms, test_csv
    shutil.rmtree(ms, ignore_errors=True)
    run([tarn, "new", "flights_3m", "-t", "TENSORFLOW", "-q"], WORK)
    mc_path = os.path.join(ms, "ModelConfig.json")
    mc = json.load(open(mc_path))
    ds = dict(headerPath="", dataDelimiter=",", headerDelimiter=",", targetColumnName="delayed15",
              posTags=POS_TAGS, negTags=NEG_TAGS)
    mc["dataSet"].update(dataPath=train_csv, **ds)
    mc["varSelect"]["filterNum"] = 100000
    mc["normalize"]["normType"] = "ZSCALE"
    mc["train"].update(numTrainEpochs=epochs, validSetRate=0.1, baggingNum=1,
                       params=dict(TRAIN_PARAMS))
    mc["evals"][0]["dataSet"].update(dataPath=test_csv, **ds)
    json.dump(mc, open(mc_path, "w"), indent=2)
    for step in (["init"], ["stats"], ["norm", "-Dtarn.norm.shards=2"], ["varsel"]):
        run([tarn, *step, "-q"], ms)
    json.dump(want, open(stamp, "w"))
    return ms, test_csv


def configure(ms, mode, batch):
    path = os.path.join(ms, "ModelConfig.json")
    mc = json.load(open(path))
    mc["basic"]["runMode"] = mode
    mc["train"]["params"]["MiniBatchs"] = batch
    json.dump(mc, open(path, "w"), indent=2)


def equal_work_batch(comm_period):
    """LOCAL's batch that makes the optimizer steps DIST makes. In sync DIST each of the W
    workers sums the gradients of k batches of BATCH rows at the parameters it pulled
    (src/runtime/worker.cpp: no step between them) and pushes the sum with its weight; the
    parameter server adds the W pushes and steps once with the sum over the total weight
    (parameter_server.cpp Apply), i.e. one Adam step on the mean gradient of W * k * BATCH
    rows, at the same learning rate. LOCAL steps on each batch's mean gradient
    (train_step.cpp), so a LOCAL batch of W * k * BATCH rows at the same learning rate makes the
    same number of steps per epoch, each on as many rows."""
    return WORKERS * comm_period * BATCH


def train(tarn, ms, mode, comm_period, tls=False, batch=None):
    batch = batch or BATCH
    configure(ms, mode, batch)
    extra = []
    if mode == "DIST":
        extra = ["-Dshifu.ps.instances=1", f"-Dshifu.worker.instances={WORKERS}",
                 "-Dshifu.worker.instances.backup=0", f"-Dtarn.train.comm-period={comm_period}",
                 f"-Dtarn.cluster.tls={'true' if tls else 'false'}"]
    else:
        extra = ["-Dtarn.threads=2"]
    proc, wall = run([tarn, "train", *extra], ms)  # the epoch lines: not -q
    epochs = [l for l in proc.stdout.splitlines() if l.startswith("Epoch ")]
    rates = [float(re.search(r"([\d.]+) samples/s", l).group(1)) for l in epochs]
    auc = tensorboard_scalars(os.path.join(ms, "tmp", "tensorboard"), "auc/valid")
    result = {"mode": mode, "batch": batch, "wall_s": wall, "samples_per_s": rates,
              "valid_auc": [auc.get(i + 1) for i in range(len(epochs))]}
    if mode == "DIST":
        hist = json.load(open(os.path.join(ms, "tmp", "dist", "history.json")))
        result["bytes_per_sample"] = [h["bytesPerSample"] for h in hist]
        result["epoch_s"] = [h["seconds"] for h in hist]
        result["comm_period"] = comm_period
    else:
        result["epoch_s"] = None
    run([tarn, "eval", "-q"], ms)
    perf = json.load(open(os.path.join(ms, "evals", "Eval1", "EvalPerformance.json")))
    result["test_auc"] = perf["exactAreaUnderRoc"]
    return result


def free_ports(n):
    """n loopback ports free now (bound to port 0 and closed: TensorFlow's servers take a port
    number, not a socket)."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def tf_python():
    """A python with tensorflow-cpu and Keras 3: build/keras-venv (the integration tests' venv,
    often a link to a shared one) when it imports them, otherwise the training benchmarks'
    build/train-bench-venv (made from PyPI when missing); None when neither can."""
    probe = "import numpy, tensorflow, keras"
    shared = os.path.join(ROOT, "build", "keras-venv", "bin", "python")
    if os.path.exists(shared) and subprocess.run([shared, "-c", probe], capture_output=True,
                                                  env=_train_peers.peer_env()).returncode == 0:
        return shared
    if _train_peers.ensure_peers(NAME, ("keras",)):
        return None
    return _train_peers.venv_python("keras")


def tf_pss(py, arrays, threads, rnd, steps=0, epochs=0):
    """One run of TensorFlow's ParameterServerStrategy (bench/_tf_pss_peer.py): 1 PS and 2
    workers as processes on loopback and the chief (the coordinator) that trains `steps` worker
    steps after a warm-up (timed: the steady state), or `epochs` epochs; the chief's figures
    plus wall_s, the whole command's time (every process started, TensorFlow imported,
    trained, scored)."""
    me = os.path.join(ROOT, "bench", "_tf_pss_peer.py")
    ps, w0, w1, chief = (f"127.0.0.1:{p}" for p in free_ports(4))
    cluster = {"chief": [chief], "ps": [ps], "worker": [w0, w1]}
    out = os.path.join(WORK, f"tf-pss-{rnd}-{threads}-{steps}-{epochs}.json")
    if os.path.exists(out):
        os.remove(out)
    base = [py, me, "--threads", str(threads)]

    def env(kind, index):
        e = _train_peers.peer_env()
        e["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})
        return e

    _common.sample_load("before")
    t0 = time.time()
    servers = [subprocess.Popen(base, cwd=WORK, env=env(kind, i), stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(WORK, f"tf-pss-{kind}{i}.log"), "w"))
               for kind, i in (("ps", 0), ("worker", 0), ("worker", 1))]
    try:
        proc = subprocess.run(base + ["--data", arrays, "--steps", str(steps), "--epochs", str(epochs),
                                      "--out", out],
                              cwd=WORK, env=env("chief", 0), capture_output=True, text=True)
    finally:
        for s in servers:
            s.kill()
            s.wait()
    wall = time.time() - t0
    _common.sample_load("after")
    if proc.returncode != 0 or not os.path.exists(out):
        log(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{NAME}: TensorFlow ParameterServerStrategy chief failed ({proc.returncode}); "
                         f"the servers' logs: {WORK}/tf-pss-*.log")
    res = json.load(open(out))
    res["wall_s"] = wall
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", default=os.path.join(ROOT, "build", "bin", "tarn"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=_common.MIN_ROUNDS,
                    help=f"measured rounds after one warm-up (>= {_common.MIN_ROUNDS})")
    ap.add_argument("--comm-periods", default="1,4,8")
    ap.add_argument("--tls", action="store_true",
                    help="also run each DIST configuration with tarn.cluster.tls on")
    ap.add_argument("--tf-steps", type=int, default=3200,
                    help="TensorFlow ParameterServerStrategy's timed worker steps of 128 rows per "
                         "round, after 640 of warm-up (0 leaves TensorFlow out)")
    ap.add_argument("--tf-epochs", type=int, default=1,
                    help="epochs of TensorFlow's one training run for its test AUC, after the rounds")
    ap.add_argument("--threads", type=int, default=2, help="(accepted from run-all; unused)")
    add_method_args(ap)
    a = ap.parse_args()
    if a.rounds < _common.MIN_ROUNDS:
        raise SystemExit(f"{NAME}: --rounds must be at least {_common.MIN_ROUNDS} (BENCHMARKING.md)")
    tarn = os.path.abspath(a.tarn)
    shared = os.path.join(os.path.dirname(ROOT), "shared", "datasets")
    data = os.path.join(shared, "flights_3m.csv.gz")
    split = os.path.join(shared, "flights_3m.split.csv.gz")
    if not (os.path.exists(data) and os.path.exists(split)):
        log(f"SKIP {NAME}: {data} or its split is missing (see ../shared/datasets/README.md)")
        return 0
    git = check_tree(NAME, a)
    ms, _ = prepare(tarn, data, split, a.epochs)
    periods = [int(x) for x in a.comm_periods.split(",") if x]
    # label -> (mode, k, tls, LOCAL's batch)
    configs = {"LOCAL": ("LOCAL", 1, False, BATCH)}
    for k in periods:
        if equal_work_batch(k) != BATCH:
            configs[f"LOCAL eq k={k}"] = ("LOCAL", k, False, equal_work_batch(k))
        configs[f"DIST k={k}"] = ("DIST", k, False, BATCH)
        if a.tls:
            configs[f"DIST k={k} tls"] = ("DIST", k, True, BATCH)
    runs = {label: [] for label in configs}
    tf_py = tf_python() if a.tf_steps > 0 else None
    tf_arrays = os.path.join(WORK, "tf-pss-arrays")
    tf_why = None
    if a.tf_steps > 0 and tf_py is None:
        tf_why = "no python with tensorflow-cpu and keras (build/keras-venv or build/train-bench-venv)"
        log(f"{NAME}: TensorFlow ParameterServerStrategy left out: {tf_why}")
    tf_runs, tf_tried, tf_threads = [], {}, None
    for r in range(a.rounds + 1):  # round 0 is the warm-up
        for label, (mode, k, tls, batch) in configs.items():
            res = train(tarn, ms, mode, k, tls=tls, batch=batch)
            if r > 0:
                runs[label].append(res)
            log(f"{NAME}: {'warm-up' if r == 0 else f'round {r}'} {label}: "
                f"{med(res['samples_per_s']) / 1e6:.2f} M samples/s, "
                f"valid AUC {res['valid_auc'][-1]:.4f}, test AUC {res['test_auc']:.4f}")
        if tf_py is None:
            continue
        if r == 0:
            # The test rows as tarn normalized them (tarn eval -norm, with the model just
            # trained), and the training rows of tarn's shards, for the peer.
            run([tarn, "eval", "-norm", "-q"], ms)
            run([tf_py, os.path.join(ROOT, "bench", "_tf_pss_peer.py"), "--prepare", ms, tf_arrays], WORK)
        for th in (TF_THREADS if r == 0 else (tf_threads,)):
            res = tf_pss(tf_py, tf_arrays, th, r, steps=a.tf_steps)
            if r == 0:
                tf_tried[th] = res
            else:
                tf_runs.append(res)
            log(f"{NAME}: {'warm-up' if r == 0 else f'round {r}'} TF PSS {th} thread(s): "
                f"{res['steady_samples_per_s'] / 1e3:.1f} k samples/s steady, {res['wall_s']:.1f} s "
                f"command")
        if r == 0:
            tf_threads = max(tf_tried, key=lambda th: tf_tried[th]["steady_samples_per_s"])
    tf_full = None
    if tf_runs and a.tf_epochs > 0:
        # Whole epochs once, at the measured thread count: the test AUC beside tarn's.
        tf_full = tf_pss(tf_py, tf_arrays, tf_threads, "auc", epochs=a.tf_epochs)
        log(f"{NAME}: TF PSS {a.tf_epochs} epoch(s): {med(tf_full['samples_per_s']) / 1e3:.1f} k samples/s, "
            f"{tf_full['wall_s']:.1f} s command, test AUC {tf_full['auc']:.4f}")

    def rate(run_):
        return med(run_["samples_per_s"])

    def summary(rs):
        s = {"samples_per_s": med([rate(r) for r in rs]), "samples_per_s_rounds": [rate(r) for r in rs],
             "test_auc": med([r["test_auc"] for r in rs]),
             "final_valid_auc": med([r["valid_auc"][-1] for r in rs]), "batch": rs[0]["batch"]}
        if "bytes_per_sample" in rs[0]:
            s["bytes_per_sample"] = med([med(r["bytes_per_sample"]) for r in rs])
        return s

    local = summary(runs["LOCAL"])
    target = local["final_valid_auc"]

    def time_to_target(r):
        # Wall time (start-up included) until the validation AUC reaches LOCAL's final one
        # (within 0.001), taking the epochs as equal shares of the run.
        n = len(r["valid_auc"])
        for i, auc in enumerate(r["valid_auc"]):
            if auc is not None and auc >= target - 0.001:
                return r["wall_s"] * (i + 1) / n
        return None

    def equal_work_label(k):
        return f"LOCAL eq k={k}" if f"LOCAL eq k={k}" in runs else "LOCAL"

    tf = None
    if tf_runs:
        tf = {"threads": tf_threads, "steps_per_call": tf_runs[0]["steps_per_call"],
              "steady_samples_per_s_rounds": [x["steady_samples_per_s"] for x in tf_runs],
              "steady_samples_per_s": med([x["steady_samples_per_s"] for x in tf_runs]),
              "measured_steps": tf_runs[0]["measured_steps"],
              "wall_s": med([x["wall_s"] for x in tf_runs]),
              "warmup_by_threads": {str(th): {"steady_samples_per_s": x["steady_samples_per_s"],
                                              "wall_s": x["wall_s"]} for th, x in tf_tried.items()},
              "epochs_run": tf_full and {"epochs": a.tf_epochs, "epoch_s": tf_full["epoch_s"],
                                         "samples_per_s": tf_full["samples_per_s"],
                                         "wall_s": tf_full["wall_s"], "test_auc": tf_full["auc"]},
              "test_auc": tf_full["auc"] if tf_full else None}
    table = []
    lines = []
    print(f"\n{NAME}: flights_3m, {a.epochs} epochs, medians of {a.rounds} rounds after a warm-up "
          f"(LOCAL: 2 threads; DIST: 1 PS + {WORKERS} workers on the same 2 cores). Equal work: "
          f"LOCAL eq k=K steps on batches of {WORKERS} x K x {BATCH} rows, as sync DIST with K "
          f"steps on the mean gradient of {WORKERS} workers' K batches of {BATCH} (same learning "
          f"rate, same steps per epoch). Ratios: medians of per-round ratios.")
    print(f"{'mode':<14}{'batch':>6}{'samples/s':>12}{'vs LOCAL':>9}{'vs eq':>7}{'vs TF':>7}"
          f"{'valid AUC':>10}{'test AUC':>9}{'B/sample':>9}{'s to AUC':>9}")
    for label, rs in runs.items():
        mode, k, tls, _ = configs[label]
        s = summary(rs)
        ttt = [time_to_target(r) for r in rs]
        ttt = [x for x in ttt if x is not None]
        s["seconds_to_local_auc"] = med(ttt) if ttt else None
        # Per round: this mode's samples/s over LOCAL's in the same round; the median of those.
        s["share_per_round"], share = ratios_per_round([rate(r) for r in rs], [rate(r) for r in runs["LOCAL"]])
        s["share_of_local"] = share
        eq_text = over_tf_text = "-"
        if mode == "DIST":
            eq = equal_work_label(k)
            s["equal_work_local"] = eq
            s["share_of_equal_work_per_round"], s["share_of_equal_work"] = ratios_per_round(
                [rate(r) for r in rs], [rate(r) for r in runs[eq]])
            eq_text = f"{s['share_of_equal_work']:.2f}"
            if tf:
                s["over_tf_pss_per_round"], s["over_tf_pss"] = ratios_per_round(
                    [rate(r) for r in rs], tf["steady_samples_per_s_rounds"])
                over_tf_text = f"{s['over_tf_pss']:.1f}"
        bps = s.get("bytes_per_sample")
        bps_text = f"{bps:.1f}" if bps else "-"
        ttt_text = f"{s['seconds_to_local_auc']:.1f}" if s["seconds_to_local_auc"] else "-"
        print(f"{label:<14}{s['batch']:>6}{s['samples_per_s'] / 1e6:>10.2f} M{share:>9.2f}{eq_text:>7}"
              f"{over_tf_text:>7}{s['final_valid_auc']:>10.4f}{s['test_auc']:>9.4f}{bps_text:>9}{ttt_text:>9}")
        lines.append(f"{NAME} {label} (batch {s['batch']}): {s['samples_per_s'] / 1e6:.2f} M samples/s, "
                     f"{share:.2f} of LOCAL" + (f", {eq_text} of {s['equal_work_local']} (equal work)"
                                                if mode == "DIST" else "") +
                     (f", {over_tf_text}x TF PSS" if mode == "DIST" and tf else "") +
                     f", valid AUC {s['final_valid_auc']:.4f}, test AUC {s['test_auc']:.4f}, "
                     f"bytes/sample {bps_text}, s to LOCAL's AUC {ttt_text}")
        if mode == "DIST":
            # 10 machines like this one, each running its share at the measured rate; one
            # parameter server's 10 Gbit/s link carries every worker's pushes and pulls.
            link = 10e9 / 8
            s["estimate_10_machines"] = {
                "network_bound_samples_per_s": link / bps if bps else None,
                "compute_bound_samples_per_s": 10 * s["samples_per_s"],
            }
            eq_auc = summary(runs[s["equal_work_local"]])["test_auc"]
            s["auc_diff_vs_equal_work"] = s["test_auc"] - eq_auc
            s["meets_equal_work_goal"] = (s["share_of_equal_work"] >= (GOAL_SHARE_K1 if k == 1 else GOAL_SHARE)
                                          and abs(s["auc_diff_vs_equal_work"]) <= GOAL_AUC)
        if label.endswith(" tls"):
            plain = [rate(r) for r in runs[label[:-len(" tls")]]]
            s["tls_over_plain_samples_per_s"] = med([rate(r) / p for r, p in zip(rs, plain)])
            print(f"{'':<14}TLS over plain (per round): {s['tls_over_plain_samples_per_s']:.3f}")
        table.append({"label": label, **s})
    if tf:
        full = tf["epochs_run"]
        tf["auc_diff_vs_local"] = tf["test_auc"] - local["test_auc"] if full else None
        auc_text = (f"test AUC {tf['test_auc']:.4f} after {a.tf_epochs} epoch(s) ({tf['auc_diff_vs_local']:+.4f} "
                    f"vs LOCAL's {local['test_auc']:.4f}), that run {full['wall_s']:.1f} s the whole command"
                    if full else "no test AUC (--tf-epochs 0)")
        print(f"{'TF PSS':<14}{BATCH:>6}{tf['steady_samples_per_s'] / 1e6:>10.3f} M   (1 PS + {WORKERS} workers "
              f"+ chief, {tf_threads} intra-op thread(s), {tf['steps_per_call']} batches per scheduled "
              f"call; {tf['measured_steps']} worker steps timed after a warm-up, {tf['wall_s']:.1f} s the "
              f"whole command; {auc_text})")
        lines.append(f"{NAME} TF PSS: {tf['steady_samples_per_s'] / 1e3:.1f} k samples/s steady "
                     f"({tf_threads} intra-op thread(s) per process; warm-up: " +
                     ", ".join(f"{th} thread(s) {x['steady_samples_per_s'] / 1e3:.1f} k"
                               for th, x in sorted(tf_tried.items())) +
                     f"), {tf['wall_s']:.1f} s the whole command for {tf['measured_steps']} timed steps; "
                     + auc_text)
    for t in table:
        e = t.get("estimate_10_machines")
        if e and e["network_bound_samples_per_s"]:
            print(f"{t['label']}: 10 machines x 10 Gbit/s: one parameter server's link carries "
                  f"{e['network_bound_samples_per_s'] / 1e6:.0f} M samples/s "
                  f"({t['bytes_per_sample']:.1f} B/sample); compute ~{e['compute_bound_samples_per_s'] / 1e6:.0f} M "
                  f"samples/s (10 x this machine); P parameter servers raise the network bound P-fold")
    dist = [t for t in table if t["label"].startswith("DIST") and not t["label"].endswith(" tls")]
    goals = {}
    eq_many = [t for t in dist if configs[t["label"]][1] > 1]
    if eq_many:
        goals["equal_work_80"] = any(t["meets_equal_work_goal"] for t in eq_many)
        lines.append(f"{NAME} goal: DIST >= {GOAL_SHARE:.0%} of LOCAL's samples/s at equal work, the same AUC "
                     f"(within {GOAL_AUC}): {'met' if goals['equal_work_80'] else 'MISSED'} (" +
                     ", ".join(f"{t['label']} {t['share_of_equal_work']:.0%}, AUC "
                               f"{t['auc_diff_vs_equal_work']:+.4f}" for t in eq_many) + ")")
    k1 = [t for t in dist if configs[t["label"]][1] == 1]
    if k1:
        goals["k1_50"] = k1[0]["meets_equal_work_goal"]
        lines.append(f"{NAME} goal: DIST k=1 >= {GOAL_SHARE_K1:.0%} of LOCAL's samples/s at equal work: "
                     f"{'met' if goals['k1_50'] else 'MISSED'} ({k1[0]['share_of_equal_work']:.0%} of "
                     f"{k1[0]['equal_work_local']}, AUC {k1[0]['auc_diff_vs_equal_work']:+.4f})")
    if tf:
        # Every k: k = 1 is the closest to TensorFlow's step (one round trip per batch).
        goals["over_tf_5x"] = (all(t["over_tf_pss"] >= GOAL_OVER_TF for t in dist) and
                               tf["auc_diff_vs_local"] is not None and abs(tf["auc_diff_vs_local"]) <= GOAL_AUC)
        lines.append(f"{NAME} goal: DIST >= {GOAL_OVER_TF:.0f}x TensorFlow ParameterServerStrategy's samples/s, "
                     f"the same AUC: {'met' if goals['over_tf_5x'] else 'MISSED'} (" +
                     ", ".join(f"{t['label']} {t['over_tf_pss']:.1f}x" for t in dist) +
                     "; TF's test AUC " + (f"{tf['auc_diff_vs_local']:+.4f} vs LOCAL's)"
                                           if tf["auc_diff_vs_local"] is not None else "not measured)"))
    elif a.tf_steps > 0:
        lines.append(f"{NAME} goal: DIST >= {GOAL_OVER_TF:.0f}x TensorFlow ParameterServerStrategy: not "
                     f"measured ({tf_why})")
    out = {"benchmark": NAME, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git": git,
           "machine": machine_info(), "epochs": a.epochs, "warmup_rounds": 1, "rounds": a.rounds,
           "workers": WORKERS, "batch": BATCH,
           "equal_work": f"LOCAL eq k=K: batch {WORKERS} x K x {BATCH} at the same learning rate: the "
                         f"steps sync DIST makes with K (each the mean gradient of {WORKERS} workers' "
                         f"K batches of {BATCH})",
           "ratio": "samples/s over the other configuration's in the same round; the median reported",
           "goals": goals, "results": table, "tf_pss": tf, "tf_pss_runs": tf_runs,
           "tf_pss_warmup": tf_tried, "runs": runs}
    name = NAME + ("_tls" if a.tls else "")
    out["benchmark"] = name
    write_results(os.path.join(ROOT, "bench", "results", name + ".json"), out, lines)
    print("", flush=True)
    for line in lines:
        if " goal: " in line or " MARKED" in line or " TF PSS" in line:
            print(line, flush=True)
    ok = all(goals.values()) if goals else False
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
