#!/usr/bin/env python3
"""The DIST scale run (issue 11, "Scale"): the generated CTR-like table (bench/gen_ctr.py)
trained with 4 parameter servers and 4 workers (local backend: real processes), undisturbed and
then with one parameter server killed (SIGKILL) mid-training and restarted.

usage: bench/dist_ctr_scale.py [build/bin/tarn] [--data DIR] [--model wdl|mlp] [--epochs N]
                               [--ps 4] [--workers 4] [--buckets N] [--kill-at 0.3]

--data is a folder written by bench/gen_ctr.py (default build/bench-work/ctr/data-5m; absent:
SKIP, with the command that makes it). The model set (build/bench-work/ctr/scale-<model>-<rows>)
is made once per data and options (delete it to make it again): gen_ctr.make_model_set,
`tarn stats`, `tarn norm -Dtarn.norm.shards=<workers>` (a worker trains whole files), `tarn
varsel`, each timed (wall, CPU, peak RSS). --model wdl trains Shifu's WDL with user_id hashed
into --buckets buckets, its tables row-sharded over the servers; --model mlp trains an MLP on the
ZSCALE-normalized columns (no tables: the dense vector is all the servers hold).

Each run samples every node's /proc/PID/status (VmHWM, VmRSS) every 0.2 s, and reports:
- per parameter server: peak RSS (VmHWM) against its share of the tables, rows touched x
  (dim + optimizer state) x 4 bytes / servers, where rows touched are the buckets user_id's
  distinct ids occupy (table_rows) and the other columns' vocabularies; and a server's RSS
  when the job has started (its baseline);
- samples/s: the epoch lines' figure (training passes only); steady state = the median over the
  epochs after the first;
- bytes per sample: tmp/dist/history.json (the workers' transport counters);
- test AUC: `tarn eval` (exactAreaUnderRoc) on the held-out test.psv.
The killed run kills parameter server 1 when --kill-at of an epoch's time has gone in the second
epoch (timed from tmp/cluster.json's epoch changes), checks that the coordinator relaunched it and rolled back, and compares
its test AUC with the undisturbed run's (goal: |diff| <= 0.01). Results:
bench/results/dist_ctr_scale.json (--model mlp: dist_ctr_scale-mlp.json).
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

import _common
import gen_ctr
from _common import add_method_args, check_tree, machine_info, write_results

NAME = "dist_ctr_scale"
ROOT = _common.ROOT
WORK = os.path.join(ROOT, "build", "bench-work", "ctr")
GOAL_AUC_DIFF = 0.01
MLP_PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [32], "ActivationFunc": ["tanh"],
              "Propagation": "Adam", "LearningRate": 0.002, "MiniBatchs": 256}
OPTIMIZER_STATE_PER_VALUE = {"Adam": 2, "AdaGrad": 1, "B": 0}  # lazy per-row state


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def prepare(tarn, data, model, workers, buckets, epochs):
    truth = json.load(open(os.path.join(data, "truth.json")))
    ms = os.path.join(WORK, f"scale-{model}-{truth['rows']}")
    stamp = os.path.join(ms, "prepared.json")
    # Not the binary's time: preparing 5M rows takes minutes (delete the folder to redo it).
    want = {"data": os.path.abspath(data), "truth": truth,
            "workers": workers, "buckets": buckets, "epochs": epochs}
    if os.path.exists(stamp) and json.load(open(stamp)) == want:
        return ms, truth, json.load(open(stamp + ".steps"))
    gen_ctr.make_model_set(tarn, data, ms, buckets, epochs)
    if model == "mlp":
        path = os.path.join(ms, "ModelConfig.json")
        mc = json.load(open(path))
        mc["normalize"]["normType"] = "ZSCALE"
        mc["train"].update(algorithm="NN", params=dict(MLP_PARAMS))
        with open(path, "w") as f:
            json.dump(mc, f, indent=2)
    steps = {}
    for step in (["stats"], ["norm", f"-Dtarn.norm.shards={workers}"], ["varsel"]):
        t0 = time.time()
        r = subprocess.run(["/usr/bin/time", "-v", "-o", os.path.join(ms, "time.txt"), tarn,
                            *step, "-q"], cwd=ms, capture_output=True, text=True)
        if r.returncode != 0:
            log(r.stdout[-4000:] + r.stderr[-4000:])
            raise SystemExit(f"{NAME}: tarn {step[0]} failed ({r.returncode}) in {ms}")
        fig = _common.parse_time_v(os.path.join(ms, "time.txt"))
        steps[step[0]] = {"wall_s": time.time() - t0, "cpu_s": fig["user_s"] + fig["sys_s"],
                          "peak_rss_bytes": fig["rss_kb"] * 1024}
        log(f"{NAME}: {step[0]} {steps[step[0]]['wall_s']:.1f}s, "
            f"{fig['rss_kb'] / 1024:.0f} MB peak RSS")
    steps["column_config_bytes"] = os.path.getsize(os.path.join(ms, "ColumnConfig.json"))
    json.dump(steps, open(stamp + ".steps", "w"))
    json.dump(want, open(stamp, "w"))
    return ms, truth, steps


def table_rows(ms, truth):
    """{id column: rows of its tables the training touches}. user_id: its distinct ids (every
    one occurs in the training rows) hashed into hashSeed buckets occupy, in expectation,
    B (1 - (1 - 1/B)^n) buckets (the hash is uniform; within 0.1% at this size). The index
    columns: their vocabulary (bins + the missing bin), all of which they touch."""
    cols = json.load(open(os.path.join(ms, "ColumnConfig.json")))
    out = {}
    for c in cols:
        if c["columnName"] not in truth["categorical"]:
            continue
        buckets = c.get("hashSeed", 0)
        if buckets > 0:
            n = truth["distinct_ids"] if c["columnName"] == "user_id" else 0
            out[c["columnName"]] = round(buckets * (1 - (1 - 1 / buckets) ** n))
        else:
            out[c["columnName"]] = len(c["columnBinning"].get("binCategory") or []) + 1
    return out


class NodeSampler(threading.Thread):
    """Samples every node of tmp/cluster.json: peak VmHWM and the first VmRSS seen, per pid."""

    def __init__(self, ms, period=0.2):
        super().__init__(daemon=True)
        self.ms, self.period = ms, period
        self.nodes = {}  # pid -> {role, index, first_rss, hwm}
        self.stop = threading.Event()

    def run(self):
        path = os.path.join(self.ms, "tmp", "cluster.json")
        while not self.stop.is_set():
            try:
                d = json.load(open(path))
                nodes = d.get("nodes", [])
                # The coordinator gathers the whole model (every table) at the end.
                nodes.append({"role": "coordinator", "index": 0, "state": "running",
                              "pid": d.get("coordinator", {}).get("pid")})
            except (OSError, ValueError):
                nodes = []
            for n in nodes:
                pid = n.get("pid")
                if not pid or n.get("state") != "running":
                    continue
                fig = self.status(pid)
                if not fig:
                    continue
                rec = self.nodes.setdefault(pid, {"role": n["role"], "pid": pid,
                                                  "index": n.get("index", n.get("slot")),
                                                  "first_rss": fig["VmRSS"], "hwm": 0})
                rec["hwm"] = max(rec["hwm"], fig["VmHWM"])
            self.stop.wait(self.period)

    @staticmethod
    def status(pid):
        out = {}
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(("VmHWM:", "VmRSS:")):
                        key, val = line.split(":", 1)
                        out[key] = int(val.split()[0]) * 1024
        except OSError:
            return None
        return out if len(out) == 2 else None


class ServerKiller(threading.Thread):
    """Kills parameter server `index` (SIGKILL) `at` of an epoch's time into epoch 2, while the
    workers push to it. tmp/cluster.json changes with the job's phase and epoch (not with every
    batch), so epoch 1's length is timed from its changes."""

    def __init__(self, ms, at, index=1):
        super().__init__(daemon=True)
        self.ms, self.at, self.index = ms, at, index
        self.done = threading.Event()
        self.killed = None

    def state(self):
        try:
            d = json.load(open(os.path.join(self.ms, "tmp", "cluster.json")))
        except (OSError, ValueError):
            return None, None, []
        return d.get("phase"), d.get("epoch"), d.get("nodes", [])

    def run(self):
        t0 = time.time()
        seen = {}
        while not self.done.is_set():
            phase, epoch, nodes = self.state()
            if phase == "train" and epoch not in seen:
                seen[epoch] = time.time()
            if phase == "train" and epoch == 2 and 1 in seen and \
                    time.time() >= seen[2] + self.at * (seen[2] - seen[1]):
                victim = [n for n in nodes if n["role"] == "ps" and n.get("index") == self.index
                          and n["state"] == "running"]
                if victim:
                    os.kill(victim[0]["pid"], signal.SIGKILL)
                    self.killed = {"pid": victim[0]["pid"], "index": self.index, "epoch": 2,
                                   "after_s": time.time() - t0,
                                   "into_epoch_s": time.time() - seen[2],
                                   "epoch1_s": seen[2] - seen[1]}
                    log(f"{NAME}: killed parameter server {self.index} (pid "
                        f"{victim[0]['pid']}) {self.killed['into_epoch_s']:.1f}s into epoch 2")
                    return
            self.done.wait(0.02)


def train(tarn, ms, label, ps, workers, kill_at=None):
    for d in ("models", os.path.join("tmp", "modelsTmp"), os.path.join("tmp", "dist"), "logs"):
        shutil.rmtree(os.path.join(ms, d), ignore_errors=True)
    if os.path.exists(os.path.join(ms, "tmp", "cluster.json")):
        os.remove(os.path.join(ms, "tmp", "cluster.json"))  # the last job's nodes
    cmd = [tarn, "train", f"-Dshifu.ps.instances={ps}", f"-Dshifu.worker.instances={workers}",
           "-Dshifu.worker.instances.backup=0"]
    sampler = NodeSampler(ms)
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=ms, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    sampler.start()
    killer = ServerKiller(ms, kill_at) if kill_at is not None else None
    if killer:
        killer.start()
    lines = []
    for line in proc.stdout:
        lines.append(line)
        sys.stderr.write(f"  [{label}] {line}")
    proc.wait()
    wall = time.time() - t0
    sampler.stop.set()
    sampler.join()
    killed = None
    if killer:
        killer.done.set()
        killer.join()
        killed = killer.killed
        if killed is None:
            raise SystemExit(f"{NAME}: [{label}] the job ended before the server was killed")
    out = "".join(lines)
    if proc.returncode != 0:
        log(out[-4000:])
        raise SystemExit(f"{NAME}: [{label}] tarn train failed ({proc.returncode})")
    epochs = [ln for ln in out.splitlines() if ln.startswith("Epoch #")]
    rates = [float(re.search(r"([\d.]+) samples/s", ln).group(1)) for ln in epochs]
    hist = json.load(open(os.path.join(ms, "tmp", "dist", "history.json")))
    res = {"label": label, "wall_s": wall, "epoch_samples_per_s": rates,
           "bytes_per_sample": [h["bytesPerSample"] for h in hist],
           "epoch_s": [h["seconds"] for h in hist], "nodes": list(sampler.nodes.values())}
    if killed:
        coord = open(os.path.join(ms, "logs", "coordinator.log")).read()
        killed["relaunched"] = "relaunched parameter server" in coord
        killed["rolled_back"] = "rolled back to the checkpoint" in coord
        res["killed"] = killed
    res["model_bytes"] = os.path.getsize(os.path.join(ms, "models", "model0.tarn"))
    gen_ctr.tarn_run(tarn, ["eval", "-q"], ms)
    perf = json.load(open(os.path.join(ms, "evals", "Eval1", "EvalPerformance.json")))
    res["test_auc"] = perf["exactAreaUnderRoc"]
    return res


def table_share_bytes(ms, model, rows_by_column, ps):
    """The tables' bytes a server holds: rows touched x (dim + optimizer state) x 4 / servers,
    summed over WDL's tables (wide_<column>: dim 1, embed_<column>: NumEmbedOuputs)."""
    if model != "wdl":
        return 0, {}
    mc = json.load(open(os.path.join(ms, "ModelConfig.json")))
    params = mc["train"]["params"]
    state = OPTIMIZER_STATE_PER_VALUE.get(params.get("Propagation", "Adam"), 0)
    dim = params.get("NumEmbedOuputs", 8)
    tables = {}
    for col, rows in rows_by_column.items():
        tables[f"wide_{col}"] = rows * 1 * (1 + state) * 4
        tables[f"embed_{col}"] = rows * dim * (1 + state) * 4
    return sum(tables.values()) / ps, tables


def mb(x):
    return x / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", default=os.path.join(ROOT, "build", "bin", "tarn"))
    ap.add_argument("--data", default=os.path.join(WORK, "data-5m"))
    ap.add_argument("--model", choices=["wdl", "mlp"], default="wdl")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--ps", type=int, default=4)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--buckets", type=int, default=4_000_000)
    ap.add_argument("--kill-at", type=float, default=0.3)
    ap.add_argument("--rounds", type=int, default=1, help="(accepted from run-all; one run each)")
    ap.add_argument("--threads", type=int, default=2, help="(accepted from run-all; unused)")
    add_method_args(ap)
    a = ap.parse_args()
    tarn = os.path.abspath(a.tarn)
    if not os.path.exists(os.path.join(a.data, "truth.json")):
        log(f"SKIP {NAME}: {a.data} has no generated table; make it with "
            f"bench/gen_ctr.py {a.data} (about two minutes for 5M rows)")
        return 0
    if a.epochs < 2:
        ap.error("--epochs must be at least 2: the server is killed in the second epoch")
    git = check_tree(NAME, a)
    ms, truth, steps = prepare(tarn, a.data, a.model, a.workers, a.buckets, a.epochs)
    rows = table_rows(ms, truth) if a.model == "wdl" else {}
    share, tables = table_share_bytes(ms, a.model, rows, a.ps)

    _common.sample_load("before")
    base = train(tarn, ms, "undisturbed", a.ps, a.workers)
    kill = train(tarn, ms, "ps killed", a.ps, a.workers, kill_at=a.kill_at)

    def res_nodes(res, role):
        return sorted((n for n in res["nodes"] if n["role"] == role), key=lambda n: n["index"])

    def servers(res):
        return res_nodes(res, "ps")

    steady = statistics.median(base["epoch_samples_per_s"][1:])
    auc_diff = kill["test_auc"] - base["test_auc"]
    ok_auc = abs(auc_diff) <= GOAL_AUC_DIFF
    ok_kill = kill["killed"]["relaunched"] and kill["killed"]["rolled_back"]
    print(f"{NAME} ({truth['rows']} rows, {truth['distinct_ids']} ids, {a.model}, {a.ps} PS, "
          f"{a.workers} workers, {a.epochs} epochs, {machine_info()['nproc']} cores): "
          f"{steady:.0f} samples/s steady, {statistics.median(base['bytes_per_sample']):.0f} "
          f"bytes/sample, test AUC {base['test_auc']:.4f} (true probability "
          f"{truth['test_auc_true_probability']:.4f}, without the id's effect "
          f"{truth['test_auc_without_id_effect']:.4f})")
    for n in servers(base):
        # Above its baseline (a server with nothing declared) is what the tables cost it.
        ratio = (f", {(n['hwm'] - n['first_rss']) / share:.2f}x its table share "
                 f"{mb(share):.1f} MB above the start" if share else "")
        print(f"{NAME} ps {n['index']}: peak RSS {mb(n['hwm']):.1f} MB (at start "
              f"{mb(n['first_rss']):.1f} MB){ratio}")
    # A relaunched server is first sampled after it reloaded its rows: its baseline is the
    # start of the server it replaced (sorted() keeps the order the pids were seen in).
    start_of = {}
    for n in servers(kill):
        start_of.setdefault(n["index"], n["first_rss"])
    for n in servers(kill):
        ratio = (f", {(n['hwm'] - start_of[n['index']]) / share:.2f}x its table share above "
                 f"the first server's start" if share else "")
        print(f"{NAME} [ps killed] ps {n['index']} pid {n.get('pid', '?')}: peak RSS "
              f"{mb(n['hwm']):.1f} MB (at start {mb(n['first_rss']):.1f} MB){ratio}")
    for n in res_nodes(base, "coordinator") + res_nodes(base, "worker"):
        model = (f" (the model file: {mb(base['model_bytes']):.1f} MB)"
                 if n["role"] == "coordinator" else "")
        print(f"{NAME} {n['role']} {n['index']}: peak RSS {mb(n['hwm']):.1f} MB (at start "
              f"{mb(n['first_rss']):.1f} MB){model}")
    print(f"{NAME} killed ps 1 {kill['killed']['after_s']:.0f}s in: relaunched "
          f"{kill['killed']['relaunched']}, rolled back {kill['killed']['rolled_back']}; test AUC "
          f"{kill['test_auc']:.4f} vs {base['test_auc']:.4f}: diff {auc_diff:+.4f} "
          f"[{'OK' if ok_auc else 'MISSED'} within {GOAL_AUC_DIFF}]")
    result = {"name": NAME, "machine": machine_info(), "git": git,
              "tarn_sha256": _common.sha256(tarn), "args": vars(a), "truth": truth,
              "prepare_steps": steps, "table_rows_touched": rows, "table_bytes": tables,
              "table_share_bytes_per_ps": share, "steady_samples_per_s": steady,
              "undisturbed": base, "ps_killed": kill, "test_auc_diff": auc_diff,
              "goal_auc_diff_ok": ok_auc, "ps_restart_ok": ok_kill}
    out = os.path.join(ROOT, "bench", "results",
                       f"{NAME}.json" if a.model == "wdl" else f"{NAME}-{a.model}.json")
    lines = []
    write_results(out, result, lines)
    for line in lines:  # the marks ('loaded', 'dirty tree'), if any
        print(line)
    return 0 if ok_kill else 1


if __name__ == "__main__":
    sys.exit(main())
