#!/usr/bin/env python3
"""tarn train of N bags (train.baggingNum) on 1 and on 2 threads versus JAX + optax training the
same N networks, sequentially and with jax.vmap over the bags.

Usage:  bench/train_bags_vs_jax.py TARN [--rounds N] [--bags N] [--datasets a,b] [--epochs N]

The seed network of bench/train_vs_pytorch_keras.py (inputs -> 50 tanh -> 1 sigmoid, Xavier,
Adam lr 0.002, batch 128, L2 0.01 on the weights, log loss, every train row trains), on the same
model sets (made by that script's functions), N times: baggingNum N with baggingSampleRate 1
and no replacement, so every bag trains every row, each from its own initial weights and with
its own shuffles, as each JAX network does. The work is N x rows x epochs samples.

- tarn: `tarn train -Dtarn.threads=1` (the bags one after another) and `-Dtarn.threads=2`
  (two bags at a time, tarn.train.parallel-bags' default). Its rate is the run's own total line,
  `train: N bags trained S samples in T s`: every bag's samples over the wall time from the
  first bag's start to the last bag's end, epoch 1 included (tarn has no compile step; counting
  it lowers tarn's rate).
- JAX + optax (the fastest single-bag peer, docs/BENCHMARKS.md): one jitted epoch a lax.scan of
  Adam steps, as train_vs_pytorch_keras.py's; variant "seq" trains the N networks one after
  another with that one compiled epoch; variant "vmap" trains them at once, jax.vmap of the
  epoch over the bags' parameters, optimizer states and shuffle keys (the rows shared). Steady
  state: epoch 1 (compiling) left out: "seq" the first bag's first epoch, "vmap" its first
  epoch. Both variants at 1 and 2 threads in the warm-up; the fastest is measured.

Rounds alternate tarn 1 thread, tarn 2 threads, JAX (one warm-up, then --rounds, at least 5);
ratios are medians of per-round ratios. AUC: tarn eval's (the mean of the N models' scores)
against the mean of JAX's N networks' predictions on the same normalized test rows.
The peer runs in build/train-jax-venv (made here: jax, optax, numpy from PyPI).
Results: bench/results/train_bags_vs_jax.json.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

import _common
from _common import (add_method_args, check_rounds, check_tree, finish, machine_info, med, peak_flops,
                     ratios_per_round)
from _train_peers import Runner, fmt_rate, jax_thread_flags, peer_env, private_copy
import train_vs_pytorch_keras as single

NAME = "train_bags_vs_jax"
DATASETS = {"letter_p2": {"target": "a_to_m", "epochs": 10}, "spam": {"target": "spam", "epochs": 10}}
VARIANTS = ("seq", "vmap")
THREADS = (1, 2)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "build", "train-bench-work")  # shared with train_vs_pytorch_keras
RESULTS = os.path.join(ROOT, "bench", "results", NAME + ".json")
VENV = os.path.join(ROOT, "build", "train-jax-venv")
VENV_PY = os.path.join(VENV, "bin", "python")
PACKAGES = ["jax", "optax", "numpy"]
TOTAL_RE = re.compile(r"train: (\d+) bags? trained (\d+) samples in ([\d.e+-]+) s")
_runner = Runner(NAME, WORK)
die, run, run_timed = _runner.die, _runner.run, _runner.run_timed


def log(msg):
    print(msg, flush=True)


def auc(y, score):
    """Area under the ROC curve (Mann-Whitney, ties at their average rank), numpy only."""
    import numpy as np

    order = np.argsort(score, kind="mergesort")
    s = score[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = y > 0.5
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def jax_bags(variant, data_dir, bags, epochs, seed, threads, out_json):
    """The peer: N seed networks with JAX + optax; writes the timings and the ensemble's AUC."""
    t0 = time.perf_counter()
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    x = np.load(os.path.join(data_dir, "x_train.npy"))
    y = np.load(os.path.join(data_dir, "y_train.npy"))
    xt = np.load(os.path.join(data_dir, "x_test.npy"))
    yt = np.load(os.path.join(data_dir, "y_test.npy"))
    n, d = x.shape
    B, H, REG = single.BATCH, single.HIDDEN, single.REG
    opt = optax.adam(single.LEARNING_RATE, b1=single.ADAM_BETA1, b2=single.ADAM_BETA2, eps=single.ADAM_EPS)
    glorot = jax.nn.initializers.glorot_uniform()

    def init(k):
        k1, k2 = jax.random.split(k)
        return {"w1": glorot(k1, (d, H), jnp.float32), "b1": jnp.zeros(H, jnp.float32),
                "w2": glorot(k2, (H, 1), jnp.float32), "b2": jnp.zeros(1, jnp.float32)}

    def logits(p, xb):
        return (jnp.tanh(xb @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])[:, 0]

    def loss_fn(p, xb, yb):
        l2 = 0.5 * REG * (jnp.sum(p["w1"] ** 2) + jnp.sum(p["w2"] ** 2))
        return optax.sigmoid_binary_cross_entropy(logits(p, xb), yb).mean() + l2

    def step(carry, xb, yb):
        p, s = carry
        loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
        upd, s = opt.update(g, s, p)
        return (optax.apply_updates(p, upd), s), loss

    full = n // B

    def epoch(p, s, X, Y, k):
        perm = jax.random.permutation(k, n)
        idx = perm[:full * B].reshape(full, B)
        (p, s), losses = jax.lax.scan(lambda c, i: step(c, X[i], Y[i]), (p, s), idx)
        loss = losses[-1]
        if n % B:
            rest = perm[full * B:]
            (p, s), loss = step((p, s), X[rest], Y[rest])
        return p, s, loss

    X, Y = jnp.asarray(x), jnp.asarray(y)
    keys = jax.random.split(jax.random.PRNGKey(seed), bags)
    epoch_s = []
    t_fit = time.perf_counter()
    if variant == "seq":
        one_epoch = jax.jit(epoch)
        models = []
        for b in range(bags):
            key, k0 = jax.random.split(keys[b])
            p = init(k0)
            s = opt.init(p)
            for _ in range(epochs):
                te = time.perf_counter()
                key, k = jax.random.split(key)
                p, s, loss = one_epoch(p, s, X, Y, k)
                loss.block_until_ready()
                epoch_s.append(time.perf_counter() - te)
            models.append(p)
        pred = np.mean([np.asarray(jax.nn.sigmoid(logits(p, jnp.asarray(xt)))) for p in models], axis=0)
        steady_samples = n * (bags * epochs - 1)
        steady_s = sum(epoch_s[1:])
    else:
        split = jax.vmap(lambda k: jax.random.split(k))
        ks = split(keys)
        key, k0 = ks[:, 0], ks[:, 1]
        p = jax.vmap(init)(k0)
        s = jax.vmap(opt.init)(p)
        all_epochs = jax.jit(jax.vmap(epoch, in_axes=(0, 0, None, None, 0)))
        for _ in range(epochs):
            te = time.perf_counter()
            ks = split(key)
            key, k = ks[:, 0], ks[:, 1]
            p, s, loss = all_epochs(p, s, X, Y, k)
            loss.block_until_ready()
            epoch_s.append(time.perf_counter() - te)
        pred = np.asarray(jax.nn.sigmoid(jax.vmap(logits, in_axes=(0, None))(p, jnp.asarray(xt)))).mean(axis=0)
        steady_samples = bags * n * (epochs - 1)
        steady_s = sum(epoch_s[1:])
    res = {"peer": "jax", "variant": variant, "bags": bags, "epochs": epochs, "threads": threads,
           "jax": jax.__version__, "optax": optax.__version__, "xla_flags": os.environ.get("XLA_FLAGS"),
           "train_rows": int(n), "test_rows": int(len(yt)), "setup_s": t_fit - t0, "epoch_s": epoch_s,
           "train_s": sum(epoch_s), "steady_samples_per_s": steady_samples / steady_s,
           "samples_per_s": bags * n * epochs / sum(epoch_s), "auc": auc(yt, pred)}
    with open(out_json, "w") as f:
        json.dump(res, f)


def ensure_venv():
    probe = [VENV_PY, "-c", "import jax, optax, numpy; jax.numpy.ones(2).sum(); print(jax.__version__)"]
    if os.path.exists(VENV_PY) and subprocess.run(probe, capture_output=True).returncode == 0:
        return True
    log(f"{NAME}: making {os.path.relpath(VENV, ROOT)} ({', '.join(PACKAGES)} from PyPI)")
    if not os.path.exists(VENV_PY) and subprocess.run([sys.executable, "-m", "venv", VENV]).returncode:
        return False
    subprocess.run([VENV_PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + PACKAGES)
    return subprocess.run(probe, capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", help="the tarn binary (e.g. build/bin/tarn)")
    ap.add_argument("--rounds", type=int, default=_common.MIN_ROUNDS,
                    help=f"measured rounds after one warm-up (>= {_common.MIN_ROUNDS})")
    ap.add_argument("--bags", type=int, default=5, help="baggingNum (default 5, Shifu's)")
    ap.add_argument("--datasets", default="letter_p2", help="comma-separated subset of " + ",".join(DATASETS))
    ap.add_argument("--epochs", type=int, default=None, help="epochs (10)")
    add_method_args(ap)
    ap.add_argument("--peer", nargs=7, metavar=("VARIANT", "DATA_DIR", "BAGS", "EPOCHS", "SEED", "THREADS", "OUT"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer:
        v, dd, bags, ep, seed, th, out = a.peer
        return jax_bags(v, dd, int(bags), int(ep), int(seed), int(th), out)

    shared = os.path.join(os.path.dirname(ROOT), "shared", "datasets")
    names = [n for n in a.datasets.split(",") if n]
    for n in names:
        if n not in DATASETS:
            die(f"unknown dataset {n} (known: {', '.join(DATASETS)})")
    present = [n for n in names if os.path.exists(os.path.join(shared, n + ".csv.gz"))
               and os.path.exists(os.path.join(shared, n + ".split.csv.gz"))]
    for n in names:
        if n not in present:
            log(f"SKIP {NAME} {n}: {shared}/{n}.csv.gz or its .split.csv.gz is missing")
    if not present:
        return 0
    if not a.tarn:
        die("usage: bench/train_bags_vs_jax.py TARN")
    if a.bags < 2:
        die("--bags: at least 2")
    tarn = os.path.abspath(a.tarn)
    if not os.access(tarn, os.X_OK):
        die(f"tarn binary {tarn} not found; run 'make build'")
    if not os.access("/usr/bin/time", os.X_OK):
        die("/usr/bin/time is missing; run scripts/install-deps (Debian package 'time')")
    git = check_tree(NAME, a)
    check_rounds(NAME, a)
    if not ensure_venv():
        die(f"{VENV} cannot import jax and optax (is PyPI reachable?)")
    os.makedirs(WORK, exist_ok=True)
    machine = machine_info()
    src_tarn = tarn
    tarn, tarn_sha = private_copy(src_tarn, WORK, "tarn-under-test-bags")
    peak = peak_flops(machine["nproc"])
    if peak:
        log(f"{NAME}: measured peak ({peak['isa']}): {peak['gflops_1_thread']:.1f} GFLOP/s on 1 core, "
            f"{peak['gflops_all_threads']:.1f} on {peak['threads']}")
    me = os.path.abspath(__file__)
    res = {"benchmark": NAME, "machine": machine, "git": git, "tarn_sha256": tarn_sha, "tarn_binary": src_tarn,
           "tarn_version": subprocess.run([tarn, "--version"], capture_output=True, text=True).stdout.strip(),
           "bags": a.bags, "peak": peak, "warmup_rounds": 1, "rounds": a.rounds,
           "network": {"hidden": single.HIDDEN, "batch": single.BATCH, "l2": single.REG,
                       "learning_rate": single.LEARNING_RATE, "optimizer": "Adam"},
           "rate": {"tarn": "all bags' samples / wall seconds from the first bag's start to the last's end "
                            "(tarn train's total line), epoch 1 included",
                    "jax": "steady state: samples / seconds, epoch 1 (compiling) left out"},
           "ratio": "per round tarn samples/s / JAX samples/s (JAX's fastest variant and thread count); median",
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "datasets": {}}
    lines = []
    ok = True
    for name in present:
        spec = DATASETS[name]
        epochs = a.epochs or spec["epochs"]
        if epochs < 2:
            die("at least 2 epochs: JAX's steady state starts at the second")
        wd = os.path.join(WORK, name)
        os.makedirs(wd, exist_ok=True)
        n_train, n_test = single.split_csv(os.path.join(shared, name + ".csv.gz"),
                                           os.path.join(shared, name + ".split.csv.gz"), wd)
        ms, selected, _ = single.prepare_model_set(tarn, name, spec["target"], os.path.join(wd, "train.csv.gz"),
                                                   os.path.join(wd, "test.csv.gz"), epochs, 2)
        mc_path = os.path.join(ms, "ModelConfig.json")
        with open(mc_path) as f:
            mc = json.load(f)
        mc["train"].update(baggingNum=a.bags, baggingSampleRate=1.0, baggingWithReplacement=False)
        with open(mc_path, "w") as f:
            json.dump(mc, f, indent=2)
        arrays = os.path.join(wd, "arrays-bags")

        def tarn_train(threads):
            r = run_timed([tarn, "train", f"-Dtarn.threads={threads}", "-Dtarn.train.tensorboard=false"], ms,
                          label=f"tarn train ({name}, {threads} threads)")
            m = TOTAL_RE.search(r["stderr"])
            if not m or int(m.group(1)) != a.bags or int(m.group(2)) != a.bags * n_train * epochs:
                sys.stderr.write(r["stderr"][-3000:])
                die(f"tarn train ({name}) did not train {a.bags} x {n_train} x {epochs} samples")
            r["samples"], r["train_s"] = int(m.group(2)), float(m.group(3))
            r["samples_per_s"] = r["samples"] / r["train_s"]
            r["total_line"] = m.group(0)
            r.pop("stdout")
            r.pop("stderr")
            return r

        def jax_train(variant, threads, seed):
            out = os.path.join(wd, "jax-bags.json")
            env = peer_env()
            env["XLA_FLAGS"] = jax_thread_flags(threads)
            r = run_timed([VENV_PY, me, "--peer", variant, arrays, str(a.bags), str(epochs), str(seed),
                           str(threads), out], wd, env=env, label=f"jax {variant} ({name})")
            r.pop("stdout")
            r.pop("stderr")
            with open(out) as f:
                r.update(json.load(f))
            return r

        runs = {"tarn1": [], "tarn2": [], "jax": []}
        warmup = {}
        best = None
        for rnd in range(a.rounds + 1):
            t1, t2 = tarn_train(1), tarn_train(2)
            parts = [f"tarn 1t {fmt_rate(t1['samples_per_s'])}/s", f"tarn 2t {fmt_rate(t2['samples_per_s'])}/s"]
            if rnd == 0:
                run([tarn, "eval", "-norm", "-Dtarn.threads=2"], ms, f"tarn eval -norm ({name})")
                run([VENV_PY, os.path.join(ROOT, "bench", "train_vs_pytorch_keras.py"), "--prepare", ms, arrays],
                    wd, f"peer arrays ({name})")
                for v in VARIANTS:
                    for th in THREADS:
                        j = jax_train(v, th, rnd)
                        warmup[f"{v}/{th}"] = j
                        parts.append(f"jax {v}/{th}t {fmt_rate(j['steady_samples_per_s'])}/s auc {j['auc']:.4f}")
                best = max(warmup, key=lambda k: warmup[k]["steady_samples_per_s"])
            else:
                runs["tarn1"].append(t1)
                runs["tarn2"].append(t2)
                v, th = best.split("/")
                j = jax_train(v, int(th), rnd)
                runs["jax"].append(j)
                parts.append(f"jax {best}t {fmt_rate(j['steady_samples_per_s'])}/s auc {j['auc']:.4f}")
            log(f"{NAME}: {name}: {'warm-up' if rnd == 0 else f'round {rnd}/{a.rounds}'}: " + "  ".join(parts))

        run([tarn, "eval", "-Dtarn.threads=2"], ms, f"tarn eval ({name})")
        with open(os.path.join(ms, "evals", "Eval1", "EvalPerformance.json")) as f:
            tarn_auc = json.load(f).get("exactAreaUnderRoc")
        with open(os.path.join(arrays, "info.json")) as f:
            inputs = json.load(f)["inputs"]
        model_flops = 2 * inputs * single.HIDDEN * 2 + 2 * single.HIDDEN * 1 * 3  # as train_vs_pytorch_keras
        jax_rates = [x["steady_samples_per_s"] for x in runs["jax"]]
        d = {"train_rows": n_train, "test_rows": n_test, "epochs": epochs, "inputs": inputs,
             "samples_per_run": a.bags * n_train * epochs, "model_flops_per_sample": model_flops,
             "jax_best": best, "warmup": {k: {f: x[f] for f in ("steady_samples_per_s", "wall_s", "auc", "epoch_s")}
                                          for k, x in warmup.items()},
             "jax": {"samples_per_s": jax_rates, "median_samples_per_s": med(jax_rates),
                     "auc": [x["auc"] for x in runs["jax"]], "wall_s": [x["wall_s"] for x in runs["jax"]],
                     "epoch_s": [x["epoch_s"] for x in runs["jax"]], "versions": {
                         "jax": runs["jax"][0]["jax"], "optax": runs["jax"][0]["optax"]}},
             "tarn_auc": tarn_auc}
        parts = []
        for key, th in (("tarn1", 1), ("tarn2", 2)):
            rates = [x["samples_per_s"] for x in runs[key]]
            t = {"threads": th, "samples_per_s": rates, "median_samples_per_s": med(rates),
                 "train_s": [x["train_s"] for x in runs[key]], "wall_s": [x["wall_s"] for x in runs[key]],
                 "cpu_s": [x.get("user_s", 0) + x.get("sys_s", 0) for x in runs[key]],
                 "rss_kb": [x["rss_kb"] for x in runs[key]],
                 "load_before": [x["load_before"][0] for x in runs[key]]}
            t["cores_used"] = med(t["cpu_s"]) / med(t["wall_s"])  # whole command, data loading included
            t["ratio_per_round"], t["median_ratio"] = ratios_per_round(rates, jax_rates)
            t["gflops"] = t["median_samples_per_s"] * model_flops / 1e9
            if peak:
                t["peak_share_all_cores"] = t["gflops"] / peak["gflops_all_threads"]
                t["peak_share_1_core"] = t["gflops"] / peak["gflops_1_thread"]
            d[key] = t
            parts.append(f"tarn {th} thread{'s' if th > 1 else ''} {fmt_rate(t['median_samples_per_s'])}samples/s: "
                         f"{t['median_ratio']:.2f}x JAX [{min(t['ratio_per_round']):.2f}-"
                         f"{max(t['ratio_per_round']):.2f}], cores used {t['cores_used']:.2f}, {t['gflops']:.1f} GFLOP/s"
                         + (f" = {100 * t['peak_share_all_cores']:.1f}% of {peak['gflops_all_threads']:.0f} on "
                            f"{peak['threads']} cores, {100 * t['peak_share_1_core']:.1f}% of 1 core's "
                            f"{peak['gflops_1_thread']:.0f}" if peak else ""))
        d["speedup_2_over_1"], d["median_speedup_2_over_1"] = ratios_per_round(
            d["tarn2"]["samples_per_s"], d["tarn1"]["samples_per_s"])
        jax_auc = med(d["jax"]["auc"])
        d["auc_diff"] = tarn_auc - jax_auc
        auc_ok = abs(d["auc_diff"]) <= single.GOAL_AUC
        ok = ok and auc_ok
        line = (f"{NAME} {name} ({a.bags} bags x {n_train} rows x {epochs} epochs, {inputs} inputs): JAX ({best} "
                f"threads) {fmt_rate(d['jax']['median_samples_per_s'])}samples/s steady | " + " | ".join(parts)
                + f" | tarn 2 threads / 1 thread {d['median_speedup_2_over_1']:.2f}x | ensemble AUC tarn "
                f"{tarn_auc:.4f} JAX {jax_auc:.4f} [{'OK' if auc_ok else 'MISMATCH'} within {single.GOAL_AUC}]")
        d["summary_line"] = line
        res["datasets"][name] = d
        lines.append(line)
        log(line)
    finish(NAME, RESULTS, res, lines, src_tarn, tarn_sha, ran_a_copy=True)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
