#!/usr/bin/env python3
"""Distributed training (runMode DIST: 1 parameter server, 2 workers) beside single-process
training (runMode LOCAL) of the same network on flights_3m, in one run.

usage: bench/dist_vs_local.py [build/bin/tarn] [--epochs N] [--rounds N] [--comm-periods 1,8]
                             [--tls]

Follows ../shared/docs/BENCHMARKING.md: the same normalized shards (two files, one per worker),
the same network (50 tanh units, Adam, batch 128), the same seed and validation split for both
modes; rounds alternate LOCAL and DIST, one warm-up round and then --rounds (at least 5)
measured ones; each mode's samples/s is the median over rounds, and DIST's share of LOCAL the
median of the per-round ratios (DIST / LOCAL of the same round). For each mode it prints training
samples/s (the epoch lines' figure: training passes only), the validation AUC after every epoch
(from the TensorBoard event files both modes write), wall time to reach LOCAL's final validation
AUC, the test AUC (tarn eval), and for DIST the bytes sent and received per training sample.
From the bytes per sample it estimates how DIST would scale on 10 machines on 10 Gbit/s.
Goal (issue 4): DIST >= 80% of LOCAL's samples/s on this 2-core machine, with the same AUC.
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
import subprocess
import sys
import time

import _common
from _common import add_method_args, check_tree, machine_info, med, ratios_per_round, write_results
from train_vs_pytorch_keras import NEG_TAGS, POS_TAGS, TRAIN_PARAMS, split_csv

NAME = "dist_vs_local"
ROOT = _common.ROOT
WORK = os.path.join(ROOT, "build", "dist-bench-work")
GOAL_SHARE = 0.80
GOAL_AUC = 0.005


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


def set_mode(ms, mode):
    path = os.path.join(ms, "ModelConfig.json")
    mc = json.load(open(path))
    mc["basic"]["runMode"] = mode
    json.dump(mc, open(path, "w"), indent=2)


def train(tarn, ms, mode, comm_period, tls=False):
    set_mode(ms, mode)
    extra = []
    if mode == "DIST":
        extra = ["-Dshifu.ps.instances=1", "-Dshifu.worker.instances=2",
                 "-Dshifu.worker.instances.backup=0", f"-Dtarn.train.comm-period={comm_period}",
                 f"-Dtarn.cluster.tls={'true' if tls else 'false'}"]
    else:
        extra = ["-Dtarn.threads=2"]
    proc, wall = run([tarn, "train", *extra], ms)  # the epoch lines: not -q
    epochs = [l for l in proc.stdout.splitlines() if l.startswith("Epoch ")]
    rates = [float(re.search(r"([\d.]+) samples/s", l).group(1)) for l in epochs]
    auc = tensorboard_scalars(os.path.join(ms, "tmp", "tensorboard"), "auc/valid")
    result = {"mode": mode, "wall_s": wall, "samples_per_s": rates,
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", default=os.path.join(ROOT, "build", "bin", "tarn"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=_common.MIN_ROUNDS,
                    help=f"measured rounds after one warm-up (>= {_common.MIN_ROUNDS})")
    ap.add_argument("--comm-periods", default="1,8")
    ap.add_argument("--tls", action="store_true",
                    help="also run each DIST configuration with tarn.cluster.tls on")
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
    runs = {"LOCAL": []}
    for k in periods:
        runs[f"DIST k={k}"] = []
        if a.tls:
            runs[f"DIST k={k} tls"] = []
    for r in range(a.rounds + 1):  # round 0 is the warm-up
        for label in runs:
            mode = "LOCAL" if label == "LOCAL" else "DIST"
            k = int(label.split("=")[1].split()[0]) if mode == "DIST" else 1
            res = train(tarn, ms, mode, k, tls=label.endswith(" tls"))
            if r > 0:
                runs[label].append(res)
            log(f"{NAME}: {'warm-up' if r == 0 else f'round {r}'} {label}: "
                f"{med(res['samples_per_s']) / 1e6:.2f} M samples/s, "
                f"valid AUC {res['valid_auc'][-1]:.4f}, test AUC {res['test_auc']:.4f}")

    def summary(rs):
        s = {"samples_per_s": med([med(r["samples_per_s"]) for r in rs]),
             "test_auc": med([r["test_auc"] for r in rs]),
             "final_valid_auc": med([r["valid_auc"][-1] for r in rs])}
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

    table = []
    ok = True
    lines = []
    print(f"\n{NAME}: flights_3m, {a.epochs} epochs, medians of {a.rounds} rounds after a warm-up "
          f"(LOCAL: 2 threads; DIST: 1 PS + 2 workers on the same 2 cores)")
    print(f"{'mode':<12}{'samples/s':>14}{'vs LOCAL':>10}{'valid AUC':>11}{'test AUC':>10}"
          f"{'bytes/sample':>14}{'s to AUC':>10}")
    for label, rs in runs.items():
        s = summary(rs)
        ttt = [time_to_target(r) for r in rs]
        ttt = [x for x in ttt if x is not None]
        s["seconds_to_local_auc"] = med(ttt) if ttt else None
        # Per round: this mode's samples/s over LOCAL's in the same round; the median of those.
        s["share_per_round"], share = ratios_per_round(
            [med(r["samples_per_s"]) for r in rs], [med(r["samples_per_s"]) for r in runs["LOCAL"]])
        s["share_of_local"] = share
        bps = s.get("bytes_per_sample")
        bps_text = f"{bps:.1f}" if bps else "-"
        ttt_text = f"{s['seconds_to_local_auc']:.1f}" if s["seconds_to_local_auc"] else "-"
        print(f"{label:<12}{s['samples_per_s'] / 1e6:>12.2f} M{share:>10.2f}"
              f"{s['final_valid_auc']:>11.4f}{s['test_auc']:>10.4f}{bps_text:>14}{ttt_text:>10}")
        lines.append(f"{NAME} {label}: {s['samples_per_s'] / 1e6:.2f} M samples/s, {share:.2f} of LOCAL "
                     f"(median of per-round ratios), valid AUC {s['final_valid_auc']:.4f}, test AUC "
                     f"{s['test_auc']:.4f}, bytes/sample {bps_text}, s to LOCAL's AUC {ttt_text}")
        if label != "LOCAL":
            # 10 machines on 10 Gbit/s: one PS link carries every worker's bytes.
            link = 10e9 / 8
            # 10 machines like this one, each running its share at the measured rate; one
            # parameter server's 10 Gbit/s link carries every worker's pushes and pulls.
            s["estimate_10_machines"] = {
                "network_bound_samples_per_s": link / bps if bps else None,
                "compute_bound_samples_per_s": 10 * s["samples_per_s"],
            }
            meets = share >= GOAL_SHARE and abs(s["test_auc"] - local["test_auc"]) <= GOAL_AUC
            s["meets_goal"] = meets
        if label.endswith(" tls"):
            plain = [med(r["samples_per_s"]) for r in runs[label[:-len(" tls")]]]
            s["tls_over_plain_samples_per_s"] = med(
                [med(r["samples_per_s"]) / p for r, p in zip(rs, plain)])
            print(f"{'':<12}TLS over plain (per round): {s['tls_over_plain_samples_per_s']:.3f}")
        table.append({"label": label, **s})
    best = max((t for t in table if t["label"] != "LOCAL"), key=lambda t: t["share_of_local"])
    ok = best["meets_goal"]
    for t in table:
        if t["label"] == "LOCAL":
            continue
        e = t["estimate_10_machines"]
        print(f"{t['label']}: 10 machines x 10 Gbit/s: one parameter server's link carries "
              f"{e['network_bound_samples_per_s'] / 1e6:.0f} M samples/s "
              f"({t['bytes_per_sample']:.1f} B/sample); compute ~{e['compute_bound_samples_per_s'] / 1e6:.0f} M "
              f"samples/s (10 x this machine); P parameter servers raise the network bound P-fold")
    lines.append(f"{NAME} goal: DIST >= {GOAL_SHARE:.0%} of LOCAL's samples/s with the same AUC: "
                 f"{'met' if ok else 'MISSED'} (best {best['label']}: {best['share_of_local']:.0%})")
    out = {"benchmark": NAME, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git": git,
           "machine": machine_info(), "epochs": a.epochs, "warmup_rounds": 1, "rounds": a.rounds,
           "ratio": "mode samples/s / LOCAL samples/s, per round; median reported",
           "results": table, "runs": runs}
    name = NAME + ("_tls" if a.tls else "")
    out["benchmark"] = name
    write_results(os.path.join(ROOT, "bench", "results", name + ".json"), out, lines)
    print(lines[-1] if lines[-1].startswith(f"{NAME} MARKED") else "", flush=True)
    print(f"goal: DIST >= {GOAL_SHARE:.0%} of LOCAL's samples/s with the same AUC: "
          f"{'met' if ok else 'MISSED'} (best {best['label']}: {best['share_of_local']:.0%})")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
