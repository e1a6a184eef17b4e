#!/usr/bin/env python3
"""tarn train versus PyTorch and Keras training the same network on the same rows.

Usage:  bench/train_vs_pytorch_keras.py TARN [--rounds N] [--threads N] [--datasets a,b]
                                        [--epochs N] [--flights-epochs N]

Follows ../shared/docs/BENCHMARKING.md: for each dataset (letter_p2, spam, flights_3m) the
three trainers run side by side in one run, alternating (tarn, PyTorch, Keras, tarn, ...), one
warm-up round and then --rounds measured rounds (at least 5); every command runs in its own
process under /usr/bin/time -v (wall time, peak RSS).

Same work: the dataset's is_test split file (stratified 80/20, seed 42) cuts it into a train
CSV and a test CSV (build/train-bench-work/NAME/{train,test}.csv.gz); tarn runs its pipeline
(init, stats, norm, varsel: all columns, ZSCALE) on the train rows and trains a
inputs -> 50 tanh -> 1 sigmoid network (Xavier-uniform, Adam lr 0.002, batch 128, L2 0.01 on
weights only, log loss, shuffled every epoch, train.validSetRate 0: every train row trains).
The peers train the same network on exactly tarn's normalized feature vectors (read from
tmp/NormalizedData, the finalSelect columns in ColumnConfig order) and score the test rows as
tarn normalized them (`tarn eval -norm` -> evals/Eval1/EvalNormalized); tarn's test AUC comes
from `tarn eval` on the raw test CSV. L2 convention: tarn adds RegularizedConstant x W to the
gradient of the batch's mean loss (the gradient of 0.5 x reg x sum W^2) before Adam, biases
excluded; PyTorch: Adam's (coupled) weight_decay=reg on the weight matrices only; Keras:
kernel_regularizer l2(reg / 2) (Keras' l2(l) adds l x sum W^2 to the loss, gradient 2 l W).

Threads: tarn -Dtarn.threads=2; torch.set_num_threads(2); TensorFlow intra-op 2, inter-op 1.
The orchestrator uses only the standard library (any python3); the peers run in
build/train-bench-venv (made here: `/usr/bin/python3 -m venv --system-site-packages` so Debian's
python3-torch 1.13 is visible, then tensorflow-cpu, scikit-learn and numpy<2 from PyPI: Debian's
torch 1.13 is built against numpy 1.x). The same file is the peer worker (--prepare, --peer).
Results: bench/results/train_vs_pytorch_keras.json.
"""

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time

import _common
from _common import (add_method_args, check_rounds, check_tree, finish, machine_info, med, peak_flops,
                     ratios_per_round, write_results)
from _train_peers import (PEER_OMP_WAIT_POLICY, PEERS, ensure_peers, fmt_rate, keras_epoch_timer,
                          peer_env, peer_versions, private_copy, read_shards, Runner,
                          start_peer, steady_rate, tarn_epochs, venv_python)

NAME = "train_vs_pytorch_keras"
DATASETS = {
    # name: target column, default epochs
    "letter_p2": {"target": "a_to_m", "epochs": 10},
    "spam": {"target": "spam", "epochs": 10},
    # Keras on flights_3m: at its ~50k samples/s on this machine a run takes minutes; it is the
    # slowest peer on letter_p2 and spam, so it is left out here to keep the run short.
    "flights_3m": {"target": "delayed15", "epochs": 2, "skip_peers": ("keras",)},
}
POS_TAGS = ["1"]
NEG_TAGS = ["0"]
HIDDEN = 50
LEARNING_RATE = 0.002
BATCH = 128
REG = 0.01
# Adam constants of tarn's optimizer (src/model/optimizer.h), used by both peers.
ADAM_BETA1, ADAM_BETA2, ADAM_EPS = 0.9, 0.999, 1e-8
TRAIN_PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [HIDDEN], "ActivationFunc": ["tanh"],
                "LearningRate": LEARNING_RATE, "MiniBatchs": BATCH, "RegularizedConstant": REG,
                "Propagation": "Adam", "WeightInitializer": "xavier"}
# Keras' documented knob for small models: this many batches per tf.function call (each batch
# still one Adam update); ~4x the default's samples/s on letter_p2.
KERAS_STEPS_PER_EXECUTION = 32
# Each peer's ways to run; the first dataset's warm-up round tries every one at every thread
# count (PEER_THREADS), later datasets' the chosen variant at every thread count, and the
# measured rounds run the peer's fastest pair (by steady-state samples/s): with ~40 s a peer
# process on the shared machine (minutes with torch.compile), every pair in every round would
# not fit in a session.
PEER_VARIANTS = {"pytorch": ("eager", "compile"), "jax": ("scan",), "keras": ("graph", "jit")}
PEER_THREADS = (1, 2)  # every peer tried at both in the warm-up; the better one is measured
GOAL_SPEEDUP = 10.0  # issue 13: tarn's steady samples/s over the fastest peer's
GOAL_AUC = 0.005  # |tarn AUC - peer AUC| on the same test rows
GOAL_PEAK_SHARE = 0.40  # issue 13: tarn's GFLOP/s over the measured 2-core peak, on letter_p2

# --------------------------------------------------------------------------------------
# peer worker: runs inside build/train-bench-venv
# --------------------------------------------------------------------------------------


def prepare(ms, out_dir):
    """Peers' arrays from tarn's outputs: x_train/y_train (the finalSelect columns of the
    normalized shards, in ColumnConfig order), x_test/y_test (EvalNormalized)."""
    import numpy as np

    with open(os.path.join(ms, "ColumnConfig.json")) as f:
        cc = json.load(f)
    selected = [(c["columnNum"], c["columnName"]) for c in cc if c.get("finalSelect")]
    header, m = read_shards(os.path.join(ms, "tmp", "NormalizedData"))
    offsets, off = {}, 0
    for ft in header["features"]:
        offsets[(ft["columnNum"], ft["name"])] = (off, ft["width"])
        off += ft["width"]
    cols = []
    for key in selected:
        o, w = offsets[key]
        cols.extend(range(o, o + w))
    x_train = np.ascontiguousarray(m[:, cols], dtype=np.float32)
    y_train = np.ascontiguousarray(m[:, -2], dtype=np.float32)
    w_train = m[:, -1]
    path = os.path.join(ms, "evals", "Eval1", "EvalNormalized")
    with open(path) as f:
        names = f.readline().rstrip("\n").split("|")
    t = np.loadtxt(path, delimiter="|", skiprows=1, dtype=np.float64, ndmin=2)
    if names[:2] != ["target", "weight"] or names[2:] != [n for _, n in selected]:
        raise SystemExit(f"{path}: header {names[:6]}... does not list target, weight and the "
                         f"{len(selected)} selected columns in order")
    x_test = np.ascontiguousarray(t[:, 2:], dtype=np.float32)
    y_test = np.ascontiguousarray(t[:, 0], dtype=np.float32)
    os.makedirs(out_dir, exist_ok=True)
    for k, v in (("x_train", x_train), ("y_train", y_train), ("x_test", x_test), ("y_test", y_test)):
        np.save(os.path.join(out_dir, k + ".npy"), v)
    info = {"train_rows": int(x_train.shape[0]), "test_rows": int(x_test.shape[0]),
            "inputs": int(x_train.shape[1]), "selected": [n for _, n in selected],
            "train_positive_rate": float(y_train.mean()), "test_positive_rate": float(y_test.mean()),
            "train_weights_all_one": bool((w_train == 1).all()),
            "test_targets": sorted(set(float(v) for v in np.unique(y_test)))}
    with open(os.path.join(out_dir, "info.json"), "w") as f:
        json.dump(info, f)


def _torch_train(res, variant, x, y, xt, seed, epochs, epoch_s):
    """PyTorch: tensors made up front, a plain loop of X[perm[i:i+128]] batches (no DataLoader),
    fused Adam where this build has it on CPU; variant "compile" also runs the model through
    torch.compile. Returns the test predictions."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    n, d = x.shape
    X = torch.from_numpy(x)
    Y = torch.from_numpy(y).unsqueeze(1)
    model = nn.Sequential(nn.Linear(d, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))
    weights = [model[0].weight, model[2].weight]
    biases = [model[0].bias, model[2].bias]
    for w in weights:
        nn.init.xavier_uniform_(w)
    for b in biases:
        nn.init.zeros_(b)
    # Coupled L2 on the weight matrices only: grad += REG * W, as tarn.
    groups = [{"params": weights, "weight_decay": REG}, {"params": biases, "weight_decay": 0.0}]
    adam = dict(lr=LEARNING_RATE, betas=(ADAM_BETA1, ADAM_BETA2), eps=ADAM_EPS)
    try:
        opt = torch.optim.Adam(groups, fused=True, **adam)
        res["adam"] = "fused"
    except (RuntimeError, TypeError, ValueError) as e:  # no fused CPU kernel in this build
        opt = torch.optim.Adam(groups, foreach=True, **adam)
        res["adam"] = f"foreach (fused: {e})"
    forward = torch.compile(model) if variant == "compile" else model
    loss_fn = nn.BCEWithLogitsLoss()  # sigmoid output + log loss, mean over the batch
    for _ in range(epochs):
        te = time.perf_counter()
        perm = torch.randperm(n)
        for i in range(0, n, BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(forward(X[idx]), Y[idx])
            loss.backward()
            opt.step()
        epoch_s.append(time.perf_counter() - te)
    res["final_loss"] = float(loss.item())
    with torch.no_grad():
        return torch.sigmoid(model(torch.from_numpy(xt))).numpy().ravel()


def _jax_train(res, x, y, xt, seed, epochs, epoch_s):
    """JAX + optax: the data on the device once, one jitted epoch = a shuffle and a lax.scan of
    Adam steps over the full batches (the last, short batch one more step in the same jit)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    n, d = x.shape
    key = jax.random.PRNGKey(seed)
    k1, k2, key = jax.random.split(key, 3)
    glorot = jax.nn.initializers.glorot_uniform()
    params = {"w1": glorot(k1, (d, HIDDEN), jnp.float32), "b1": jnp.zeros(HIDDEN, jnp.float32),
              "w2": glorot(k2, (HIDDEN, 1), jnp.float32), "b2": jnp.zeros(1, jnp.float32)}
    opt = optax.adam(LEARNING_RATE, b1=ADAM_BETA1, b2=ADAM_BETA2, eps=ADAM_EPS)
    state = opt.init(params)

    def logits(p, xb):
        return (jnp.tanh(xb @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])[:, 0]

    def loss_fn(p, xb, yb):
        # Mean log loss plus 0.5 REG sum W^2 (gradient REG W on the weights only, as tarn).
        l2 = 0.5 * REG * (jnp.sum(p["w1"] ** 2) + jnp.sum(p["w2"] ** 2))
        return optax.sigmoid_binary_cross_entropy(logits(p, xb), yb).mean() + l2

    def step(carry, xb, yb):
        p, s = carry
        loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
        upd, s = opt.update(g, s, p)
        return (optax.apply_updates(p, upd), s), loss

    full = n // BATCH

    @jax.jit
    def epoch(p, s, X, Y, k):
        perm = jax.random.permutation(k, n)
        idx = perm[:full * BATCH].reshape(full, BATCH)
        (p, s), losses = jax.lax.scan(lambda c, i: step(c, X[i], Y[i]), (p, s), idx)
        loss = losses[-1]
        if n % BATCH:
            rest = perm[full * BATCH:]
            (p, s), loss = step((p, s), X[rest], Y[rest])
        return p, s, loss

    X, Y = jnp.asarray(x), jnp.asarray(y)
    for _ in range(epochs):
        te = time.perf_counter()
        key, k = jax.random.split(key)
        params, state, loss = epoch(params, state, X, Y, k)
        loss.block_until_ready()
        epoch_s.append(time.perf_counter() - te)
    res["final_loss"] = float(loss)
    return np.asarray(jax.nn.sigmoid(jax.jit(logits)(params, jnp.asarray(xt))))


def _keras_train(res, variant, x, y, xt, epochs, epoch_s):
    """Keras 3 (TensorFlow): model.fit on numpy arrays, steps_per_execution 32; variant "jit"
    compiles the train step with XLA (jit_compile=True)."""
    import keras

    d = x.shape[1]
    reg = keras.regularizers.L2(REG / 2)  # Keras: loss += l * sum W^2, so l = reg / 2
    model = keras.Sequential([
        keras.Input((d,)),
        keras.layers.Dense(HIDDEN, activation="tanh", kernel_initializer="glorot_uniform",
                           bias_initializer="zeros", kernel_regularizer=reg),
        keras.layers.Dense(1, activation="sigmoid", kernel_initializer="glorot_uniform",
                           bias_initializer="zeros", kernel_regularizer=reg),
    ])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=LEARNING_RATE, beta_1=ADAM_BETA1,
                                                  beta_2=ADAM_BETA2, epsilon=ADAM_EPS),
                  loss="binary_crossentropy", steps_per_execution=KERAS_STEPS_PER_EXECUTION,
                  jit_compile=(variant == "jit"))
    h = model.fit(x, y, batch_size=BATCH, epochs=epochs, shuffle=True, verbose=0,
                  callbacks=[keras_epoch_timer(epoch_s)])
    res["final_loss"] = float(h.history["loss"][-1])
    res["jit_compile"] = str(getattr(model, "jit_compile", None))
    return model.predict(xt, batch_size=8192, verbose=0).ravel()


def peer(kind, variant, data_dir, epochs, seed, threads, out_json):
    """Trains the network with one peer (PEER_VARIANTS) on data_dir's arrays; writes timings
    (per epoch: the steady state is epochs 2..N) and the test AUC."""
    t0 = time.perf_counter()
    import numpy as np
    from sklearn.metrics import roc_auc_score

    res = {"peer": kind, "variant": variant, "epochs": epochs, "seed": seed, "threads": threads}
    res["versions"] = start_peer(kind, threads, seed)
    t_import = time.perf_counter()
    x = np.load(os.path.join(data_dir, "x_train.npy"))
    y = np.load(os.path.join(data_dir, "y_train.npy"))
    xt = np.load(os.path.join(data_dir, "x_test.npy"))
    yt = np.load(os.path.join(data_dir, "y_test.npy"))
    n = x.shape[0]
    t_fit = time.perf_counter()
    epoch_s = []
    if kind == "pytorch":
        pred = _torch_train(res, variant, x, y, xt, seed, epochs, epoch_s)
    elif kind == "jax":
        pred = _jax_train(res, x, y, xt, seed, epochs, epoch_s)
    else:
        pred = _keras_train(res, variant, x, y, xt, epochs, epoch_s)
    train_s = sum(epoch_s)
    t_end = time.perf_counter()
    res.update({"train_rows": int(n), "test_rows": int(len(yt)), "inputs": int(x.shape[1]),
                "import_s": t_import - t0, "load_s": t_fit - t_import, "train_s": train_s,
                "epoch_s": epoch_s, "predict_s": t_end - t_fit - train_s,
                "samples_per_s": n * epochs / train_s,
                "steady_samples_per_s": steady_rate(n, epoch_s),
                "auc": float(roc_auc_score(yt, pred))})
    with open(out_json, "w") as f:
        json.dump(res, f)


# --------------------------------------------------------------------------------------
# orchestrator: standard library only
# --------------------------------------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "build", "train-bench-work")
RESULTS = os.path.join(ROOT, "bench", "results", NAME + ".json")
_runner = Runner(NAME, WORK)
die, run, run_timed = _runner.die, _runner.run, _runner.run_timed


def log(msg):
    print(msg, flush=True)


def split_csv(data, split, out_dir):
    """train.csv.gz (is_test 0) and test.csv.gz (is_test 1), each with the header line; made
    once (kept while newer than the dataset). Returns (train rows, test rows)."""
    train, test = os.path.join(out_dir, "train.csv.gz"), os.path.join(out_dir, "test.csv.gz")
    counts = os.path.join(out_dir, "split-counts.json")
    src_m = max(os.path.getmtime(data), os.path.getmtime(split))
    if all(os.path.exists(p) and os.path.getmtime(p) > src_m for p in (train, test, counts)):
        with open(counts) as f:
            c = json.load(f)
        return c["train"], c["test"]
    n = [0, 0]
    with gzip.open(data, "rt", newline="") as fd, gzip.open(split, "rt") as fs, \
            gzip.open(train + ".tmp", "wt", compresslevel=1, newline="") as ftr, \
            gzip.open(test + ".tmp", "wt", compresslevel=1, newline="") as fte:
        header = fd.readline()
        if fs.readline().strip() != "is_test":
            die(f"{split}: the first line is not 'is_test'")
        ftr.write(header)
        fte.write(header)
        outs = (ftr, fte)
        for line, flag in zip(fd, fs):
            k = 1 if flag.strip() == "1" else 0
            outs[k].write(line)
            n[k] += 1
        if fd.readline() or fs.readline():
            die(f"{split} and {data} have different row counts")
    os.replace(train + ".tmp", train)
    os.replace(test + ".tmp", test)
    with open(counts, "w") as f:
        json.dump({"train": n[0], "test": n[1]}, f)
    return n[0], n[1]


def prepare_model_set(tarn, name, target, train_csv, test_csv, epochs, threads):
    """build/train-bench-work/NAME/NAME: tarn new, ModelConfig edits, init, stats, norm, varsel."""
    wd = os.path.join(WORK, name)
    ms = os.path.join(wd, name)
    shutil.rmtree(ms, ignore_errors=True)
    run([tarn, "new", name, "-t", "TENSORFLOW", "-q"], wd, "tarn new")
    mc_path = os.path.join(ms, "ModelConfig.json")
    with open(mc_path) as f:
        mc = json.load(f)
    ds = dict(headerPath="", dataDelimiter=",", headerDelimiter=",", targetColumnName=target,
              posTags=POS_TAGS, negTags=NEG_TAGS)
    mc["dataSet"].update(dataPath=train_csv, **ds)
    mc["varSelect"]["filterNum"] = 100000  # keep every column
    mc["normalize"]["normType"] = "ZSCALE"
    mc["train"].update(numTrainEpochs=epochs, validSetRate=0.0, baggingNum=1, params=dict(TRAIN_PARAMS))
    mc["evals"][0]["dataSet"].update(dataPath=test_csv, **ds)
    with open(mc_path, "w") as f:
        json.dump(mc, f, indent=2)
    for step in ("init", "stats", "norm", "varsel"):
        run([tarn, step, f"-Dtarn.threads={threads}", "-q"], ms, f"tarn {step} ({name})")
    with open(os.path.join(ms, "ColumnConfig.json")) as f:
        cc = json.load(f)
    sel = [c["columnName"] for c in cc if c.get("finalSelect")]
    feats = [c for c in cc if c["columnName"] != target and c.get("columnFlag") not in ("Target", "Meta")]
    cats = [c["columnName"] for c in feats if c.get("columnType") == "C"]
    log(f"{NAME}: {name}: model set {os.path.relpath(ms, ROOT)}: {len(sel)} of {len(feats)} "
        f"columns selected" + (f"; categorical: {', '.join(cats)}" if cats else ""))
    return ms, sel, len(feats)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", help="the tarn binary (e.g. build/bin/tarn)")
    ap.add_argument("--rounds", type=int, default=_common.MIN_ROUNDS,
                    help=f"measured rounds after one warm-up (>= {_common.MIN_ROUNDS})")
    ap.add_argument("--threads", type=int, default=2, help="tarn's threads (default 2)")
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated subset")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--epochs", type=int, default=None, help="epochs for letter_p2 and spam (10)")
    ap.add_argument("--flights-epochs", type=int, default=None, help="epochs for flights_3m (2)")
    add_method_args(ap)
    ap.add_argument("--prepare", nargs=2, metavar=("MODEL_SET", "OUT_DIR"), help=argparse.SUPPRESS)
    ap.add_argument("--peer", nargs=7, metavar=("KIND", "VARIANT", "DATA_DIR", "EPOCHS", "SEED", "THREADS", "OUT"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.prepare:
        return prepare(*a.prepare)
    if a.peer:
        k, v, dd, ep, seed, th, out = a.peer
        return peer(k, v, dd, int(ep), int(seed), int(th), out)

    shared = os.path.join(os.path.dirname(ROOT), "shared", "datasets")
    names = [n for n in a.datasets.split(",") if n]
    for n in names:
        if n not in DATASETS:
            die(f"unknown dataset {n} (known: {', '.join(DATASETS)})")
    wanted = [p for p in a.peers.split(",") if p]
    for p in wanted:
        if p not in PEERS:
            die(f"unknown peer {p} (known: {', '.join(PEERS)})")
    present = [n for n in names if os.path.exists(os.path.join(shared, n + ".csv.gz"))
               and os.path.exists(os.path.join(shared, n + ".split.csv.gz"))]
    for n in names:
        if n not in present:
            log(f"SKIP {NAME} {n}: {shared}/{n}.csv.gz or its .split.csv.gz is missing "
                "(see ../shared/datasets/README.md)")
    if not present:
        return 0
    if not a.tarn:
        die("usage: bench/train_vs_pytorch_keras.py TARN")
    tarn = os.path.abspath(a.tarn)
    if not os.access(tarn, os.X_OK):
        die(f"tarn binary {tarn} not found; run 'make build'")
    helptext = subprocess.run([tarn, "--help"], capture_output=True, text=True).stdout
    if not re.search(r"^\s+train\s", helptext, re.M) or not re.search(r"^\s+eval\s", helptext, re.M):
        log(f"SKIP {NAME}: {tarn} has no 'train' / 'eval' command yet")
        return 0
    if not os.access("/usr/bin/time", os.X_OK):
        die("/usr/bin/time is missing; run scripts/install-deps (Debian package 'time')")
    git = check_tree(NAME, a)
    check_rounds(NAME, a)

    os.makedirs(WORK, exist_ok=True)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    machine = machine_info()
    threads = a.threads
    missing = ensure_peers(NAME, wanted)
    peers = [p for p in wanted if p not in missing]
    for p, why in missing.items():
        log(f"SKIP {NAME} peer {p}: {why}; reporting tarn's own figures")
    versions = peer_versions(tarn, peers)
    src_tarn = tarn
    tarn, tarn_sha = private_copy(src_tarn, WORK)
    peak = peak_flops(machine["nproc"])
    if peak:
        log(f"{NAME}: measured peak ({peak['isa']}, FMA loop): {peak['gflops_1_thread']:.1f} GFLOP/s on 1 core, "
            f"{peak['gflops_all_threads']:.1f} on {peak['threads']}")
    log(f"{NAME}: {versions['tarn']} ({threads} threads) | peers at {', '.join(map(str, PEER_THREADS))} threads | "
        + " | ".join(f"{v}: " + " ".join(f"{k} {x}" for k, x in d.items())
                     for v, d in versions.items() if isinstance(d, dict))
        + f" | {machine['nproc']} cores, {machine['cpu_model']}")

    me = os.path.abspath(__file__)
    res = {"benchmark": NAME, "machine": machine, "versions": versions, "git": git,
           "tarn_sha256": tarn_sha, "tarn_binary": src_tarn,
           "threads": {"tarn": threads, "peers": list(PEER_THREADS), "tensorflow_inter_op": 1,
                       "torch_interop": 1},
           "network": {"hidden": HIDDEN, "activation": "tanh", "output": "sigmoid", "loss": "log",
                       "initializer": "xavier uniform, biases 0", "optimizer": "Adam",
                       "learning_rate": LEARNING_RATE, "adam": [ADAM_BETA1, ADAM_BETA2, ADAM_EPS],
                       "batch": BATCH, "l2": REG, "l2_convention": "grad += l2 * W on weights, biases excluded"},
           "peak": peak, "goals": {"speedup_over_fastest_peer": GOAL_SPEEDUP, "auc_abs_diff": GOAL_AUC,
                                   "peak_share_letter_p2": GOAL_PEAK_SHARE},
           "peer_settings": {"variants": PEER_VARIANTS, "keras_steps_per_execution": KERAS_STEPS_PER_EXECUTION,
                             "OMP_WAIT_POLICY": PEER_OMP_WAIT_POLICY,
                             "unset": ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]},
           "skipped_peers": missing, "warmup_rounds": 1, "rounds": a.rounds,
           "rate": "steady state: train rows x (epochs - 1) / seconds of epochs 2..N",
           "ratio": "tarn steady samples/s / peer steady samples/s (the peer at its better thread count), "
                    "per round; median reported",
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "datasets": {}}
    lines = []
    ok = True
    best_variant = {}  # peer -> its fastest variant on the first dataset that ran it
    for name in present:
        spec = DATASETS[name]
        epochs = spec["epochs"]
        if name == "flights_3m" and a.flights_epochs:
            epochs = a.flights_epochs
        elif name != "flights_3m" and a.epochs:
            epochs = a.epochs
        if epochs < 2:
            die("at least 2 epochs: the steady state starts at the second")
        wd = os.path.join(WORK, name)
        os.makedirs(wd, exist_ok=True)
        data = os.path.join(shared, name + ".csv.gz")
        n_train, n_test = split_csv(data, os.path.join(shared, name + ".split.csv.gz"), wd)
        ms, selected, n_feats = prepare_model_set(tarn, name, spec["target"],
                                                  os.path.join(wd, "train.csv.gz"),
                                                  os.path.join(wd, "test.csv.gz"), epochs, threads)
        arrays = os.path.join(wd, "arrays")

        def tarn_train():
            r = run_timed([tarn, "train", f"-Dtarn.threads={threads}"], ms, label=f"tarn train ({name})")
            ep = tarn_epochs(r["stdout"])
            if len(ep) != epochs:
                sys.stderr.write(r["stdout"][-3000:] + r["stderr"][-3000:])
                die(f"tarn train ({name}) printed {len(ep)} epoch lines, expected {epochs}")
            r["epochs"] = ep
            # Seconds per epoch from tarn's samples/s (rows / rate): training without the load.
            r["epoch_s"] = [n_train / e["samples_per_s"] for e in ep]
            r["train_s"] = sum(r["epoch_s"])
            r["samples_per_s"] = n_train * epochs / r["train_s"]
            r["steady_samples_per_s"] = steady_rate(n_train, r["epoch_s"])
            r["log_tail"] = (r.pop("stdout") + r.pop("stderr"))[-2000:]
            return r

        def peer_train(kind, variant, th, seed):
            out = os.path.join(wd, f"{kind}.json")
            r = run_timed([venv_python(kind), me, "--peer", kind, variant, arrays, str(epochs), str(seed),
                           str(th), out], wd, env=peer_env(kind, th), label=f"{kind} {variant} ({name})")
            r.pop("stdout")
            r.pop("stderr")
            with open(out) as f:
                r.update(json.load(f))
            return r

        ds_peers = [p for p in peers if p not in spec.get("skip_peers", ())]
        for p in peers:
            if p not in ds_peers:
                log(f"{NAME}: {name}: peer {p} left out on this dataset (see DATASETS)")
        runs = {"tarn": []}
        warmup = {}
        best_threads = {}
        # Variants are tried on the first dataset (torch.compile alone takes minutes a process
        # on the loaded machine); later datasets try the chosen one at both thread counts.
        tried_variants = {p: (PEER_VARIANTS[p] if p not in best_variant else (best_variant[p],)) for p in ds_peers}
        for rnd in range(a.rounds + 1):
            parts = []
            r = tarn_train()
            parts.append(f"tarn {fmt_rate(r['steady_samples_per_s'])}/s {r['wall_s']:.2f}s")
            if rnd == 0:
                # The test rows, normalized as tarn does, for the peers (needs a trained model).
                run([tarn, "eval", "-norm", f"-Dtarn.threads={threads}"], ms, f"tarn eval -norm ({name})")
                if ds_peers:
                    run([venv_python(), me, "--prepare", ms, arrays], wd, f"peer arrays ({name})")
            else:
                runs["tarn"].append(r)
            for p in ds_peers:
                pairs = ([(v, th) for v in tried_variants[p] for th in PEER_THREADS] if rnd == 0
                         else [(best_variant[p], best_threads[p])])
                for v, th in pairs:
                    pr = peer_train(p, v, th, rnd)
                    if rnd == 0:
                        warmup.setdefault(p, {}).setdefault(v, {})[th] = pr
                    else:
                        runs.setdefault(p, []).append(pr)
                    parts.append(f"{p}/{v}/{th}t {fmt_rate(pr['steady_samples_per_s'])}/s "
                                 f"{pr['wall_s']:.1f}s auc {pr['auc']:.4f}")
                if rnd == 0:
                    best_variant[p], best_threads[p] = max(
                        ((v, th) for v in warmup[p] for th in warmup[p][v]),
                        key=lambda vt: warmup[p][vt[0]][vt[1]]["steady_samples_per_s"])
            log(f"{NAME}: {name}: {'warm-up' if rnd == 0 else f'round {rnd}/{a.rounds}'}: " + "  ".join(parts))

        # tarn's test AUC: `tarn eval` with the model of the last round (training is seeded).
        out = run([tarn, "eval", f"-Dtarn.threads={threads}"], ms, f"tarn eval ({name})")
        with open(os.path.join(ms, "evals", "Eval1", "EvalPerformance.json")) as f:
            perf = json.load(f)
        tarn_auc = perf.get("exactAreaUnderRoc")
        m = re.search(r"eval Eval1: (\d+) rows, AUC ([\d.]+)", out)
        eval_rows = int(m.group(1)) if m else None

        info = {}
        if ds_peers:
            with open(os.path.join(arrays, "info.json")) as f:
                info = json.load(f)
        inputs = info.get("inputs", len(selected))
        params = inputs * HIDDEN + HIDDEN + HIDDEN + 1
        # The model's own multiply-add count (tarn's Network::TrainFlopsPerRow): 2 FLOP per
        # multiply-add for the forward pass and the weight gradient of every layer, the input
        # gradient only past the first layer. 6 x parameters (the usual rule) beside it.
        model_flops = 2 * inputs * HIDDEN * 2 + 2 * HIDDEN * 1 * 3
        flops_6p = 6 * params

        def summ(rs):
            s = {k: [x[k] for x in rs] for k in ("steady_samples_per_s", "samples_per_s", "train_s",
                                                   "wall_s", "rss_kb")}
            s["cpu_s"] = [x.get("user_s", 0) + x.get("sys_s", 0) for x in rs]
            s["load_before"] = [x["load_before"][0] for x in rs]
            for k in list(s):
                s["median_" + k] = med(s[k])
            s["median_rss_mb"] = s["median_rss_kb"] / 1024.0
            s["epoch_s"] = [x["epoch_s"] for x in rs]
            return s

        t = summ(runs["tarn"])
        t["epochs"] = [x["epochs"] for x in runs["tarn"]]
        t["auc"] = tarn_auc
        t["eval_rows"] = eval_rows
        t["cpu_over_wall"] = t["median_cpu_s"] / t["median_wall_s"]
        t["gflops"] = t["median_steady_samples_per_s"] * model_flops / 1e9
        t["gflops_6p"] = t["median_steady_samples_per_s"] * flops_6p / 1e9
        if peak:
            t["peak_share_all_cores"] = t["gflops"] / peak["gflops_all_threads"]
            t["peak_share_1_core"] = t["gflops"] / peak["gflops_1_thread"]
        t["train_rate_from"] = "tarn's per-epoch samples/s lines, epochs 2..N: rows x (N-1) / sum(rows / rate)"
        dres = {"dataset": data, "train_rows": n_train, "test_rows": n_test, "epochs": epochs,
                "columns": n_feats, "selected": selected, "inputs": inputs, "parameters": params,
                "model_flops_per_sample": model_flops, "flops_6p_per_sample": flops_6p, "tarn": t,
                "peer_data": info, "warmup": {p: {v: {str(th): {k: x[k] for k in ("steady_samples_per_s", "wall_s",
                                                                                 "auc", "epoch_s")}
                                                      for th, x in d.items()} for v, d in w.items()}
                                              for p, w in warmup.items()},
                "best_variant": dict(best_variant), "variants_tried": tried_variants}
        checks = []
        if ds_peers:
            checks.append(("train rows", info["train_rows"] == n_train,
                           f"csv {n_train} tarn shards {info['train_rows']}"))
            checks.append(("test rows", info["test_rows"] == n_test and (eval_rows in (None, n_test)),
                           f"csv {n_test} EvalNormalized {info['test_rows']} tarn eval {eval_rows}"))
            checks.append(("weights", info["train_weights_all_one"], "all training weights are 1"))
        parts = [f"tarn {fmt_rate(t['median_steady_samples_per_s'])}samples/s steady (whole command "
                 f"{t['median_wall_s']:.2f} s, {t['median_rss_mb']:.0f} MB, cores used {t['cpu_over_wall']:.2f}, "
                 f"AUC {tarn_auc:.4f})"]
        goals = []
        fastest = None
        for p in ds_peers:
            th_best = best_threads[p]
            s = summ(runs[p])
            s["threads"] = th_best
            s["variant"] = best_variant[p]
            s["auc"] = [x["auc"] for x in runs[p]]
            s["median_auc"] = med(s["auc"])
            s["import_s"] = [x["import_s"] for x in runs[p]]
            s["versions"] = runs[p][0].get("versions")
            s["adam"] = runs[p][0].get("adam")
            s["jit_compile"] = runs[p][0].get("jit_compile")
            s["ratio_per_round"], s["median_ratio"] = ratios_per_round(
                [x["steady_samples_per_s"] for x in runs["tarn"]], s["steady_samples_per_s"])
            s["whole_command_ratio_per_round"], s["median_whole_command_ratio"] = ratios_per_round(
                s["wall_s"], [x["wall_s"] for x in runs["tarn"]])
            s["auc_diff"] = tarn_auc - s["median_auc"]
            dres[p] = s
            if fastest is None or s["median_steady_samples_per_s"] > dres[fastest]["median_steady_samples_per_s"]:
                fastest = p
            others = ", ".join(f"{v}/{th}t {fmt_rate(x['steady_samples_per_s'])}"
                               for v, d in warmup[p].items() for th, x in d.items()
                               if (v, th) != (best_variant[p], th_best))
            parts.append(f"{p} ({best_variant[p]}, {th_best} thread{'s' if th_best > 1 else ''}) "
                         f"{fmt_rate(s['median_steady_samples_per_s'])}samples/s steady (warm-up: {others}; whole command "
                         f"{s['median_wall_s']:.2f} s, {s['median_rss_mb']:.0f} MB, AUC {s['median_auc']:.4f})")
            goals.append(f"tarn/{p} {s['median_ratio']:.2f}x steady, {s['median_whole_command_ratio']:.2f}x whole "
                         f"command, AUC {s['auc_diff']:+.4f} [{'OK' if abs(s['auc_diff']) <= GOAL_AUC else 'MISMATCH'} "
                         f"within {GOAL_AUC}]")
            checks.append((f"AUC {p}", abs(s["auc_diff"]) <= GOAL_AUC,
                           f"tarn {tarn_auc:.4f} {p} {s['median_auc']:.4f}"))
        if fastest:
            fr = dres[fastest]["median_ratio"]
            dres["fastest_peer"] = fastest
            goals.append(f"tarn/fastest peer ({fastest}) {fr:.2f}x [{'OK' if fr >= GOAL_SPEEDUP else 'MISSED'} "
                         f">= {GOAL_SPEEDUP:.0f}x]")
        if peak:
            share = t["peak_share_all_cores"]
            goals.append(f"tarn {t['gflops']:.1f} GFLOP/s ({model_flops} FLOP/sample; {t['gflops_6p']:.1f} by 6 x "
                         f"{params} params) = {100 * share:.1f}% of the measured {peak['gflops_all_threads']:.0f} "
                         f"GFLOP/s on {peak['threads']} cores, {100 * t['peak_share_1_core']:.1f}% of 1 core's "
                         f"{peak['gflops_1_thread']:.0f}"
                         + (f" [{'OK' if share >= GOAL_PEAK_SHARE else 'MISSED'} >= {100 * GOAL_PEAK_SHARE:.0f}%]"
                            if name == "letter_p2" else ""))
        dres["checks"] = [{"check": c, "ok": bool(o), "detail": d} for c, o, d in checks]
        dres_ok = all(o for _, o, _ in checks)
        ok = ok and dres_ok
        line = (f"{NAME} {name} ({n_train} train x {epochs} epochs, {inputs} inputs, steady state epochs 2-{epochs}): "
                + " | ".join(parts) + " | " + "; ".join(goals))
        if checks and not dres_ok:
            line += " | MISMATCH: " + "; ".join(f"{c} ({d})" for c, o, d in checks if not o)
        dres["summary_line"] = line
        res["datasets"][name] = dres
        lines.append(line)
        log(line)
        if name != present[-1]:  # what is done so far, should a later dataset not finish
            write_results(RESULTS, dict(res, complete=False), list(lines))

    finish(NAME, RESULTS, res, lines, src_tarn, tarn_sha, ran_a_copy=True)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
