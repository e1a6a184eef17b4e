#!/usr/bin/env python3
"""tarn's graph models (WDL, DeepFM) versus PyTorch and Keras training the same graph on the same rows.

Usage:  bench/train_graph_vs_pytorch_keras.py TARN [--rounds N] [--models wdl,deepfm] [--epochs N]
                                              [--peers pytorch,keras] [--baseline OTHER_TARN]

Follows ../shared/docs/BENCHMARKING.md. Data: Adult, Shifu's income-estimation example in
../shared/datasets (DataSet1: 32,561 training rows, EvalSet1: 16,281 test rows). tarn runs
init, stats, norm (ZSCALE_INDEX: numeric columns z-scored, the 8 categorical columns as
category-index ids) and varsel (every column) once, then trains `algorithm: WDL` or `DeepFM`
with the settings docs/TRAINING.md documents (hidden layers [64, 32] relu, Adam lr 0.001,
MiniBatchs 128, NumEmbedOuputs 8, WDL L2Reg 1e-5; 3 epochs, not the documented 8, to keep the
run short; validSetRate 0: every row trains).

Same graph: the peers build their network from the graph tarn wrote into its model file
("graph", the GraphSpec: every node, width and activation), node by node, with the same
initializers (Xavier-uniform kernels, zero biases, tables U(-0.05, 0.05)). A check loads tarn's
trained parameters into the PyTorch graph and compares its scores on the test rows with
`tarn eval`'s EvalScore. Same rows: the peers read tarn's normalized shards (the numeric slots
and the id columns), the test rows normalized by `tarn norm` with the same ColumnConfig.

PyTorch: nn.Embedding(sparse=True) tables stepped by SparseAdam, the dense layers by Adam
(coupled L2 weight_decay on the kernels when the graph has L2); tensors made up front, plain
loop over shuffled batches. Keras 3 (TensorFlow backend): the functional model, model.fit on
numpy arrays, steps_per_execution 32, Adam, kernel and embedding L2 regularizers of l2 / 2.

Rounds alternate tarn, PyTorch (1 thread, 2 threads), Keras (1, 2) per model; one warm-up round
and --rounds measured rounds, each command its own process under /usr/bin/time -v. The figure
is steady-state training samples/s: epochs 2..N (epoch 1, with Keras' tracing and every
allocation warm-up, is left out), from tarn's epoch lines and the peers' per-epoch timers; each
peer's better thread count (by median) is the one compared. --baseline runs a second tarn
binary in the same rounds (before/after measurements of tarn itself).
Results: bench/results/train_graph_vs_pytorch_keras.json.
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
from _common import ROOT, add_method_args, check_tree, finish, machine_info, med
from _train_peers import (ensure_peers, fmt_rate, keras_epoch_timer, peer_env,
                          peer_versions, private_copy, read_shards, Runner, start_peer,
                          tarn_epochs, venv_python)

NAME = "train_graph_vs_pytorch_keras"
PEERS = ("pytorch", "keras")  # the graph peers (a JAX graph is not written here)
ADULT = os.path.join(os.path.dirname(ROOT), "shared", "datasets", "shifu-examples",
                     "income-estimation", "DataStore")
EPOCHS = 3  # epoch 1 is left out of the steady state (Keras compiles in it)
BATCH = 128
NN = {"NumHiddenLayers": 2, "NumHiddenNodes": [64, 32], "ActivationFunc": ["relu", "relu"],
      "MiniBatchs": BATCH, "Propagation": "Adam", "WeightInitializer": "xavier", "NumEmbedOuputs": 8}
MODELS = {
    # docs/TRAINING.md "Training graph models", Measured
    "wdl": ("WDL", dict(NN, LearningRate=0.001, L2Reg=1e-5)),
    "deepfm": ("DeepFM", dict(NN, LearningRate=0.001)),
}
ADAM_BETA1, ADAM_BETA2, ADAM_EPS = 0.9, 0.999, 1e-8  # tarn's (src/model/optimizer.h)
KERAS_STEPS_PER_EXECUTION = 32
# Keras' jit_compile stays "auto", which is off without an accelerator. Tried on (XLA): WDL's
# steady rate was 40k samples/s at 2 threads in one run (19k off) but 5k at 1 thread, and its
# epoch 1 compiled for 1-2 minutes per process on the loaded 2-core machine: too long for
# 5 alternating rounds.
KERAS_JIT_COMPILE = "auto"
THREADS = (1, 2)
GOAL_SPEEDUP = 10.0  # tarn samples/s over the faster peer's (issue 11)
GOAL_AUC = 0.005
SCORE_TOLERANCE = 1e-4  # PyTorch with tarn's parameters vs tarn eval's scores (0..1)

# --------------------------------------------------------------------------------------
# peer worker: runs inside build/train-bench-venv
# --------------------------------------------------------------------------------------


def model_file(path):
    """A tarn model file (src/model/model_file.h): (header JSON, parameters float32)."""
    import numpy as np

    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"TARNMODL":
        raise SystemExit(f"{path}: not a tarn model file")
    hbytes = int.from_bytes(data[12:16], "little")
    count = int.from_bytes(data[16:24], "little")
    header = json.loads(data[24:24 + hbytes])
    return header, np.frombuffer(data, dtype="<f4", count=count, offset=24 + hbytes).copy()


def graph_arrays(header, shard_dir):
    """The graph's inputs from a folder of shards, as tarn's GraphFeed takes them: the numeric
    slots (every slot of the input columns that is not a category index, in column order) and,
    per ids input node, its column's ids. Returns (x, [ids...], y, w)."""
    import numpy as np

    sh, m, ids = read_shards(shard_dir, with_ids=True)
    feats, off = {}, 0
    for ft in sh["features"]:
        feats[ft["name"]] = (off, ft["width"], set(ft.get("indexSlots", [])))
        off += ft["width"]
    slots = []
    for c in header["columns"]:
        o, width, index = feats[c["columnName"]]
        slots.extend(o + s for s in range(width) if s not in index)
    id_cols = [c["name"] for c in sh.get("idColumns", [])]
    nodes = header["graph"]["nodes"]
    dense = [n for n in nodes if n["op"] == "input" and n["source"] == "dense"]
    if dense and dense[0]["width"] != len(slots):
        raise SystemExit(f"{shard_dir}: {len(slots)} numeric slots, the graph's input takes "
                         f"{dense[0]['width']}")
    x = np.ascontiguousarray(m[:, slots], dtype=np.float32)
    id_list = [np.ascontiguousarray(ids[:, id_cols.index(n["column"])], dtype=np.int64)
               for n in nodes if n["op"] == "input" and n["source"] == "ids"]
    return x, id_list, np.ascontiguousarray(m[:, -2]), np.ascontiguousarray(m[:, -1])


def prepare(model_path, train_shards, test_shards, out_dir):
    """The peers' arrays and graph: graph.json, tarn_params.npy, {train,test}.npz."""
    import numpy as np

    header, params = model_file(model_path)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "graph.json"), "w") as f:
        json.dump(header["graph"], f)
    np.save(os.path.join(out_dir, "tarn_params.npy"), params)
    info = {}
    for part, folder in (("train", train_shards), ("test", test_shards)):
        x, ids, y, w = graph_arrays(header, folder)
        np.savez(os.path.join(out_dir, part + ".npz"), x=x, y=y, w=w,
                 **{f"ids{k}": v for k, v in enumerate(ids)})
        info[part] = {"rows": int(len(y)), "numeric": int(x.shape[1]), "id_inputs": len(ids),
                      "positive_rate": float(y.mean()), "weights_all_one": bool((w == 1).all())}
    with open(os.path.join(out_dir, "info.json"), "w") as f:
        json.dump(info, f)


def load_arrays(data_dir, part):
    import numpy as np

    z = np.load(os.path.join(data_dir, part + ".npz"))
    ids = [z[f"ids{k}"] for k in range(sum(1 for n in z.files if n.startswith("ids")))]
    return z["x"], ids, z["y"]


def graph_inputs(spec):
    return [n for n in spec["nodes"] if n["op"] == "input"]


def torch_graph(spec, seed):
    """The GraphSpec as a torch module: forward(x, ids) -> the output node's logit (its final
    sigmoid left to BCEWithLogitsLoss)."""
    import torch
    from torch import nn

    acts = {"linear": lambda v: v, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
            "swish": nn.functional.silu,
            "leakyrelu": lambda v: nn.functional.leaky_relu(v, 0.01)}
    nodes = spec["nodes"]
    if nodes[-1].get("activation") != "sigmoid" or spec["loss"] != "log":
        raise SystemExit("the graph's output must be a sigmoid under log loss")

    class Graph(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(seed)
            self.tables, self.layers, width = nn.ModuleDict(), nn.ModuleDict(), {}
            for n in nodes:
                op, name = n["op"], n["name"]
                ins = n.get("inputs", [])
                if op == "input":
                    width[name] = n.get("width", 0)
                elif op == "embedding":
                    e = nn.Embedding(n["vocabulary"], n["units"], sparse=True)
                    nn.init.uniform_(e.weight, -0.05, 0.05)
                    self.tables[name] = e
                    width[name] = n["units"]
                elif op == "dense":
                    d = nn.Linear(width[ins[0]], n["units"], bias=n.get("use_bias", True))
                    nn.init.xavier_uniform_(d.weight)
                    if d.bias is not None:
                        nn.init.zeros_(d.bias)
                    self.layers[name] = d
                    width[name] = n["units"]
                elif op == "concatenate":
                    width[name] = sum(width[i] for i in ins)
                elif op in ("fm", "dot"):
                    width[name] = 1
                elif op in ("add", "multiply", "activation", "dropout"):
                    width[name] = width[ins[0]]
                else:
                    raise SystemExit(f"node '{name}': op {op} is not built by this benchmark")

        def forward(self, x, ids):
            v, k = {}, 0
            for i, n in enumerate(nodes):
                op, name = n["op"], n["name"]
                a = [v[j] for j in n.get("inputs", [])]
                last = i + 1 == len(nodes)
                act = acts["linear" if last else n.get("activation", "linear")]
                if op == "input":
                    if n["source"] == "dense":
                        v[name] = x
                    else:
                        v[name] = ids[k]
                        k += 1
                elif op == "embedding":
                    v[name] = self.tables[name](a[0])
                elif op == "dense":
                    v[name] = act(self.layers[name](a[0]))
                elif op == "concatenate":
                    v[name] = torch.cat(a, dim=1)
                elif op == "add":
                    v[name] = sum(a[1:], a[0])
                elif op == "multiply":
                    out = a[0]
                    for t in a[1:]:
                        out = out * t
                    v[name] = out
                elif op == "dot":
                    v[name] = (a[0] * a[1]).sum(dim=1, keepdim=True)
                elif op == "fm":
                    s = sum(a[1:], a[0])
                    v[name] = 0.5 * (s * s - sum(t * t for t in a)).sum(dim=1, keepdim=True)
                elif op == "activation":
                    v[name] = act(a[0])
                elif op == "dropout":
                    v[name] = nn.functional.dropout(a[0], n["rate"], self.training)
            return v[nodes[-1]["name"]]

        def load_tarn(self, params):
            """tarn's parameter vector (graph.h: dense W then b per node, then the tables)."""
            off = 0
            with torch.no_grad():
                for n in nodes:
                    if n["op"] == "dense":
                        d = self.layers[n["name"]]
                        c = d.weight.numel()
                        d.weight.copy_(torch.from_numpy(params[off:off + c]).view_as(d.weight))
                        off += c
                        if d.bias is not None:
                            d.bias.copy_(torch.from_numpy(params[off:off + d.bias.numel()]))
                            off += d.bias.numel()
                for n in nodes:
                    if n["op"] == "embedding":
                        e = self.tables[n["name"]].weight
                        e.copy_(torch.from_numpy(params[off:off + e.numel()]).view_as(e))
                        off += e.numel()
            return off

    return Graph()


def keras_graph(spec, l2):
    """The GraphSpec as a Keras functional model (inputs in node order)."""
    import keras
    from keras import layers, ops

    acts = {"linear": "linear", "relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "swish": "silu"}
    reg = keras.regularizers.L2(l2 / 2) if l2 > 0 else None  # Keras: l * sum w^2, gradient 2 l w
    v, inputs = {}, []
    for n in spec["nodes"]:
        op, name = n["op"], n["name"]
        a = [v[j] for j in n.get("inputs", [])]
        if op == "input":
            if n["source"] == "dense":
                t = keras.Input((n["width"],), name=name)
            else:
                t = keras.Input((1,), dtype="int32", name=name)
            inputs.append(t)
            v[name] = t
        elif op == "embedding":
            e = layers.Embedding(n["vocabulary"], n["units"], name=name,
                                 embeddings_initializer=keras.initializers.RandomUniform(-0.05, 0.05),
                                 embeddings_regularizer=reg)(a[0])
            v[name] = layers.Reshape((n["units"],))(e)
        elif op == "dense":
            v[name] = layers.Dense(n["units"], activation=acts[n.get("activation", "linear")],
                                   use_bias=n.get("use_bias", True), name=name,
                                   kernel_initializer="glorot_uniform", bias_initializer="zeros",
                                   kernel_regularizer=reg)(a[0])
        elif op == "concatenate":
            v[name] = layers.Concatenate(name=name)(a)
        elif op == "add":
            v[name] = layers.Add(name=name)(a)
        elif op == "multiply":
            v[name] = layers.Multiply(name=name)(a)
        elif op == "dot":
            v[name] = layers.Dot(axes=1, name=name)(a)
        elif op == "fm":
            def fm(ts):
                s = ops.sum(ops.stack(ts, axis=1), axis=1)
                sq = ops.sum(ops.stack([t * t for t in ts], axis=1), axis=1)
                return 0.5 * ops.sum(s * s - sq, axis=1, keepdims=True)
            v[name] = layers.Lambda(fm, output_shape=(1,), name=name)(a)
        elif op == "activation":
            v[name] = layers.Activation(acts[n["activation"]], name=name)(a[0])
        elif op == "dropout":
            v[name] = layers.Dropout(n["rate"], name=name)(a[0])
        else:
            raise SystemExit(f"node '{name}': op {op} is not built by this benchmark")
    return keras.Model(inputs, v[spec["nodes"][-1]["name"]])


def peer(kind, data_dir, epochs, seed, threads, l2, lr, out_json):
    """Trains the graph with PyTorch or Keras on data_dir's arrays; writes timings and AUC."""
    t0 = time.perf_counter()
    import numpy as np
    from sklearn.metrics import roc_auc_score

    res = {"peer": kind, "epochs": epochs, "seed": seed, "threads": threads}
    res["versions"] = start_peer(kind, threads, seed)
    t_import = time.perf_counter()
    with open(os.path.join(data_dir, "graph.json")) as f:
        spec = json.load(f)
    x, ids, y = load_arrays(data_dir, "train")
    xt, idst, yt = load_arrays(data_dir, "test")
    n = len(y)
    t_load = time.perf_counter()
    epoch_s = []
    if kind == "pytorch":
        import torch
        from torch import nn

        model = torch_graph(spec, seed)
        X, Y = torch.from_numpy(x), torch.from_numpy(y).unsqueeze(1)
        ID = [torch.from_numpy(i) for i in ids]
        kernels = [p for name, p in model.layers.named_parameters() if name.endswith("weight")]
        biases = [p for name, p in model.layers.named_parameters() if name.endswith("bias")]
        dense_opt = torch.optim.Adam([{"params": kernels, "weight_decay": l2},
                                      {"params": biases, "weight_decay": 0.0}],
                                     lr=lr, betas=(ADAM_BETA1, ADAM_BETA2), eps=ADAM_EPS)
        sparse_opt = torch.optim.SparseAdam(list(model.tables.parameters()), lr=lr,
                                            betas=(ADAM_BETA1, ADAM_BETA2), eps=ADAM_EPS)
        loss_fn = nn.BCEWithLogitsLoss()
        model.train()
        t_fit = time.perf_counter()
        for _ in range(epochs):
            te = time.perf_counter()
            perm = torch.randperm(n)
            for i in range(0, n, BATCH):
                idx = perm[i:i + BATCH]
                dense_opt.zero_grad(set_to_none=True)
                sparse_opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(X[idx], [t[idx] for t in ID]), Y[idx])
                loss.backward()
                dense_opt.step()
                sparse_opt.step()
            epoch_s.append(time.perf_counter() - te)
        train_s = time.perf_counter() - t_fit
        model.eval()
        with torch.no_grad():
            pred = torch.sigmoid(model(torch.from_numpy(xt), [torch.from_numpy(i) for i in idst]))
        pred = pred.numpy().ravel()
        res["final_loss"] = float(loss.item())
    else:
        import keras

        model = keras_graph(spec, l2)
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=lr, beta_1=ADAM_BETA1,
                                                      beta_2=ADAM_BETA2, epsilon=ADAM_EPS),
                      loss="binary_crossentropy", steps_per_execution=KERAS_STEPS_PER_EXECUTION,
                      jit_compile=KERAS_JIT_COMPILE)

        feed = [x] + [i.reshape(-1, 1).astype("int32") for i in ids]
        t_fit = time.perf_counter()
        h = model.fit(feed, y, batch_size=BATCH, epochs=epochs, shuffle=True, verbose=0,
                      callbacks=[keras_epoch_timer(epoch_s)])
        train_s = time.perf_counter() - t_fit
        pred = model.predict([xt] + [i.reshape(-1, 1).astype("int32") for i in idst],
                             batch_size=8192, verbose=0).ravel()
        res["final_loss"] = float(h.history["loss"][-1])
        res["jit_compile"] = str(getattr(model, "jit_compile", None))
    t_end = time.perf_counter()
    steady = sum(epoch_s[1:])
    res.update({"train_rows": int(n), "test_rows": int(len(yt)),
                "import_s": t_import - t0, "load_s": t_load - t_import, "train_s": train_s,
                "epoch_s": epoch_s, "predict_s": t_end - t_fit - train_s,
                "samples_per_s": n * epochs / train_s,
                "steady_samples_per_s": n * (epochs - 1) / steady if epochs > 1 else None,
                "auc": float(roc_auc_score(yt, pred))})
    with open(out_json, "w") as f:
        json.dump(res, f)


def check_scores(data_dir, eval_score, out_json):
    """tarn's trained parameters in the PyTorch graph, scored on the test rows, against tarn
    eval's EvalScore (model0, x scoreScale 1000): the same graph on the same inputs."""
    import numpy as np
    import torch

    with open(os.path.join(data_dir, "graph.json")) as f:
        spec = json.load(f)
    params = np.load(os.path.join(data_dir, "tarn_params.npy"))
    model = torch_graph(spec, 0)
    used = model.load_tarn(params)
    xt, idst, _ = load_arrays(data_dir, "test")
    model.eval()
    with torch.no_grad():
        pred = torch.sigmoid(model(torch.from_numpy(xt), [torch.from_numpy(i) for i in idst]))
    pred = pred.numpy().ravel().astype(np.float64)
    with open(eval_score) as f:
        names = f.readline().rstrip("\n").split("|")
        col = names.index("model0")
        tarn = np.array([float(line.split("|")[col]) for line in f]) / 1000.0
    res = {"rows": int(len(pred)), "eval_rows": int(len(tarn)), "params_read": int(used),
           "params_in_file": int(len(params))}
    if len(tarn) == len(pred):
        res["max_abs_diff"] = float(np.abs(tarn - pred).max())
    with open(out_json, "w") as f:
        json.dump(res, f)


# --------------------------------------------------------------------------------------
# orchestrator: standard library only
# --------------------------------------------------------------------------------------

WORK = os.path.join(ROOT, "build", "graph-bench-work")
RESULTS = os.path.join(ROOT, "bench", "results", NAME + ".json")
_runner = Runner(NAME, WORK)
die, run, run_timed = _runner.die, _runner.run, _runner.run_timed


def log(msg):
    print(msg, flush=True)


def edit(ms, changes):
    path = os.path.join(ms, "ModelConfig.json")
    with open(path) as f:
        mc = json.load(f)
    for key, value in changes.items():
        node = mc
        parts = key.split(".")
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[parts[-1]] = value
    with open(path, "w") as f:
        json.dump(mc, f, indent=2)


def prepare_model_sets(tarn):
    """build/graph-bench-work/adult (init, stats, norm, varsel on DataSet1) and adult-test
    (its ColumnConfig, `tarn norm` of EvalSet1: the test rows as the peers read them)."""
    ms = os.path.join(WORK, "adult")
    shutil.rmtree(ms, ignore_errors=True)
    run([tarn, "new", "adult", "-q"], WORK, "tarn new")
    data = {"dataPath": os.path.join(ADULT, "DataSet1"),
            "headerPath": os.path.join(ADULT, "DataSet1", ".pig_header"),
            "targetColumnName": "Target", "posTags": [">50K"], "negTags": ["<=50K"]}
    changes = {f"dataSet.{k}": v for k, v in data.items()}
    changes.update({f"evals.0.dataSet.{k}": v for k, v in data.items()})
    changes.update({"evals.0.dataSet.dataPath": os.path.join(ADULT, "EvalSet1"),
                    "evals.0.dataSet.headerPath": os.path.join(ADULT, "EvalSet1", ".pig_header"),
                    "normalize.normType": "ZSCALE_INDEX", "varSelect.filterNum": 50,
                    "train.validSetRate": 0.0, "train.baggingNum": 1})
    edit(ms, changes)
    for step in ("init", "stats", "norm", "varsel"):
        run([tarn, step, "-q"], ms, f"tarn {step}")
    test = os.path.join(WORK, "adult-test")
    shutil.rmtree(test, ignore_errors=True)
    os.makedirs(test)
    for name in ("ModelConfig.json", "ColumnConfig.json", "columns"):
        src = os.path.join(ms, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy2)(src, os.path.join(test, name))
    edit(test, {"dataSet.dataPath": changes["evals.0.dataSet.dataPath"],
                "dataSet.headerPath": changes["evals.0.dataSet.headerPath"]})
    run([tarn, "norm", "-q"], test, "tarn norm (test rows)")
    with open(os.path.join(ms, "ColumnConfig.json")) as f:
        cc = json.load(f)
    cats = [c["columnName"] for c in cc if c.get("finalSelect") and c.get("columnType") == "C"]
    sel = [c["columnName"] for c in cc if c.get("finalSelect")]
    log(f"{NAME}: model set {os.path.relpath(ms, ROOT)}: {len(sel)} columns selected, "
        f"categorical (ids): {', '.join(cats)}")
    return ms, test


def model_set_for(base, key, algorithm, params, epochs, suffix=""):
    ms = os.path.join(WORK, key + suffix)
    shutil.rmtree(ms, ignore_errors=True)
    shutil.copytree(base, ms, ignore=shutil.ignore_patterns("models", "modelsTmp", "evals"))
    edit(ms, {"train.algorithm": algorithm, "train.params": params, "train.numTrainEpochs": epochs})
    return ms


def shard_rows(folder):
    """Rows in a folder of tarn shards (the u64 at offset 16 of each header)."""
    total = 0
    for p in os.listdir(folder):
        if p.endswith(".tshard"):
            with open(os.path.join(folder, p), "rb") as f:
                total += int.from_bytes(f.read(24)[16:24], "little")
    return total


def tarn_train(tarn, ms, epochs, rows, label):
    r = run_timed([tarn, "train", "-Dtarn.threads=2"], ms, label=label)
    ep = tarn_epochs(r["stdout"])
    if len(ep) != epochs:
        sys.stderr.write(r["stdout"][-3000:] + r["stderr"][-3000:])
        die(f"{label} printed {len(ep)} epoch lines, expected {epochs}")
    r["epochs"] = ep
    r["train_s"] = sum(rows / e["samples_per_s"] for e in ep)
    r["samples_per_s"] = rows * epochs / r["train_s"]
    # Steady state: epochs 2..N (epoch 1 warms the allocator and the caches).
    r["steady_samples_per_s"] = rows * (epochs - 1) / sum(rows / e["samples_per_s"] for e in ep[1:])
    r["cpu_s"] = r.get("user_s", 0) + r.get("sys_s", 0)
    r["log_tail"] = (r.pop("stdout") + r.pop("stderr"))[-1500:]
    return r


def summarize(rs):
    s = {k: [x[k] for x in rs] for k in ("steady_samples_per_s", "samples_per_s", "train_s",
                                         "wall_s", "rss_kb")}
    for k in list(s):
        s["median_" + k] = med(s[k])
    s["median_rss_mb"] = s["median_rss_kb"] / 1024.0
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", help="the tarn binary (e.g. build/bin/tarn)")
    ap.add_argument("--rounds", type=int, default=5, help="measured rounds after one warm-up (>= 5)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of wdl,deepfm")
    ap.add_argument("--epochs", type=int, default=EPOCHS, help=f"epochs (default {EPOCHS}, >= 2)")
    ap.add_argument("--peers", default=",".join(PEERS), help="peers to run (pytorch,keras; '' for none)")
    ap.add_argument("--baseline", help="a second tarn binary run in the same rounds (before/after)")
    ap.add_argument("--threads", help=argparse.SUPPRESS)  # run-all passes no thread option; ignored
    ap.add_argument("--prepare", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--peer", nargs=8, help=argparse.SUPPRESS)
    ap.add_argument("--check", nargs=3, help=argparse.SUPPRESS)
    add_method_args(ap)
    a = ap.parse_args()
    if a.prepare:
        return prepare(*a.prepare)
    if a.peer:
        k, dd, ep, seed, th, l2, lr, out = a.peer
        return peer(k, dd, int(ep), int(seed), int(th), float(l2), float(lr), out)
    if a.check:
        return check_scores(*a.check)

    if not os.path.exists(os.path.join(ADULT, "DataSet1", ".pig_header")):
        log(f"SKIP {NAME}: {ADULT}/DataSet1 is missing (see ../shared/datasets/README.md)")
        return 0
    if not a.tarn:
        die("usage: bench/train_graph_vs_pytorch_keras.py TARN")
    keys = [k for k in a.models.split(",") if k]
    for k in keys:
        if k not in MODELS:
            die(f"unknown model {k} (known: {', '.join(MODELS)})")
    if a.rounds < 5:
        die("--rounds must be at least 5 (BENCHMARKING.md)")
    if a.epochs < 2:
        die("--epochs must be at least 2 (epoch 1 is left out of the steady state)")
    if not os.access("/usr/bin/time", os.X_OK):
        die("/usr/bin/time is missing; run scripts/install-deps (Debian package 'time')")
    for binary in [a.tarn] + ([a.baseline] if a.baseline else []):
        if not os.access(binary, os.X_OK):
            die(f"tarn binary {binary} not found; run 'make build'")
    helptext = subprocess.run([a.tarn, "--help"], capture_output=True, text=True).stdout
    if not re.search(r"^\s+train\s", helptext, re.M):
        log(f"SKIP {NAME}: {a.tarn} has no 'train' command yet")
        return 0

    git = check_tree(NAME, a)
    os.makedirs(WORK, exist_ok=True)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    machine = machine_info()
    wanted = [p for p in a.peers.split(",") if p]
    missing = ensure_peers(NAME, wanted) if wanted else {}
    peers = [p for p in wanted if p not in missing]
    for p, why in missing.items():
        log(f"SKIP {NAME} peer {p}: {why}; reporting tarn's own figures")
    src_tarn = os.path.abspath(a.tarn)
    tarn, tarn_sha = private_copy(src_tarn, WORK)
    baseline = None
    if a.baseline:
        baseline, baseline_sha = private_copy(os.path.abspath(a.baseline), WORK, "tarn-baseline")
    versions = peer_versions(tarn, peers)
    load0 = os.getloadavg()
    log(f"{NAME}: {versions['tarn']} | " + " ".join(f"{k} {v}" for k, v in versions.items() if k != "tarn")
        + f" | {machine['nproc']} cores, {machine['cpu_model']}, load {load0[0]:.1f}")
    penv = peer_env()
    me = os.path.abspath(__file__)
    base_ms, test_ms = prepare_model_sets(tarn)
    res = {"benchmark": NAME, "machine": machine, "versions": versions, "git": git,
           "tarn_sha256": tarn_sha, "tarn_binary": src_tarn, "epochs": a.epochs, "batch": BATCH,
           "peer_threads": list(THREADS), "tarn_threads_setting": 2,
           "steady_state": "epochs 2..N: rows x (N - 1) / their seconds (tarn: from its epoch lines)",
           "goals": {"speedup_over_faster_peer": GOAL_SPEEDUP, "auc_abs_diff": GOAL_AUC},
           "peer_settings": {"keras_steps_per_execution": KERAS_STEPS_PER_EXECUTION,
                             "keras_jit_compile": KERAS_JIT_COMPILE,
                             "pytorch": "nn.Embedding(sparse=True) + SparseAdam, Adam for the rest",
                             "unset": ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]},
           "skipped_peers": missing, "warmup_rounds": 1, "rounds": a.rounds,
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "load_average_start": load0, "models": {}}
    if baseline:
        res["baseline"] = {"binary": os.path.abspath(a.baseline), "sha256": baseline_sha}
    lines, ok = [], True
    for key in keys:
        algorithm, params = MODELS[key]
        ms = model_set_for(base_ms, key, algorithm, params, a.epochs)
        ms_base = model_set_for(base_ms, key, algorithm, params, a.epochs, "-baseline") if baseline else None
        arrays = os.path.join(WORK, key + "-arrays")
        l2, lr = params.get("L2Reg", 0.0), params["LearningRate"]
        runs = {"tarn": [], "baseline": []}
        runs.update({f"{p}-{t}": [] for p in peers for t in THREADS})
        info = {}
        rows = shard_rows(os.path.join(ms, "tmp", "NormalizedData"))  # validSetRate 0: all train
        for rnd in range(a.rounds + 1):
            parts = []
            r = tarn_train(tarn, ms, a.epochs, rows, f"tarn train ({key})")
            parts.append(f"tarn {fmt_rate(r['steady_samples_per_s'])}/s")
            if rnd > 0:
                runs["tarn"].append(r)
            if baseline:
                rb = tarn_train(baseline, ms_base, a.epochs, rows, f"baseline tarn train ({key})")
                parts.append(f"baseline {fmt_rate(rb['steady_samples_per_s'])}/s")
                if rnd > 0:
                    runs["baseline"].append(rb)
            if rnd == 0 and peers:
                # numpy only: the venv of any peer that runs (keras alone has no torch venv)
                run([venv_python(peers[0]), me, "--prepare", os.path.join(ms, "models", "model0.tarn"),
                     os.path.join(ms, "tmp", "NormalizedData"),
                     os.path.join(test_ms, "tmp", "NormalizedData"), arrays], WORK,
                    f"peer arrays ({key})", env=penv)
                with open(os.path.join(arrays, "info.json")) as f:
                    info = json.load(f)
            for p in peers:
                for t in THREADS:
                    out = os.path.join(WORK, f"{key}-{p}-{t}.json")
                    pr = run_timed([venv_python(p), me, "--peer", p, arrays, str(a.epochs), str(rnd),
                                    str(t), repr(l2), repr(lr), out], WORK, env=penv,
                                   label=f"{p} {t} threads ({key})")
                    pr.pop("stdout")
                    pr.pop("stderr")
                    with open(out) as f:
                        pr.update(json.load(f))
                    if rnd > 0:
                        runs[f"{p}-{t}"].append(pr)
                    parts.append(f"{p}/{t} {fmt_rate(pr['steady_samples_per_s'])}/s auc {pr['auc']:.4f}")
            log(f"{NAME}: {key}: {'warm-up' if rnd == 0 else f'round {rnd}/{a.rounds}'}: " + "  ".join(parts))

        out = run([tarn, "eval", "-q"], ms, f"tarn eval ({key})")
        with open(os.path.join(ms, "evals", "Eval1", "EvalPerformance.json")) as f:
            tarn_auc = json.load(f)["exactAreaUnderRoc"]
        t = summarize(runs["tarn"])
        t.update(auc=tarn_auc, epochs=[x["epochs"] for x in runs["tarn"]],
                 cpu_over_wall=med([x["cpu_s"] / x["wall_s"] for x in runs["tarn"]]))
        with open(os.path.join(ms, "models", "model0.tarn"), "rb") as f:
            f.seek(12)
            hbytes = int.from_bytes(f.read(4), "little")
            f.seek(24)
            graph = json.loads(f.read(hbytes))["graph"]
        d = {"algorithm": algorithm, "params": params, "train_rows": rows, "graph": graph,
             "tarn": t}
        checks = []
        if peers:
            checks.append(("train rows", info["train"]["rows"] == rows,
                           f"tarn's shards {rows}, peers' arrays {info['train']['rows']}"))
            checks.append(("weights", info["train"]["weights_all_one"], "all training weights are 1"))
        parts = [f"tarn {fmt_rate(t['median_steady_samples_per_s'])}samples/s (whole command "
                 f"{t['median_wall_s']:.1f} s, {t['median_rss_mb']:.0f} MB, cores used "
                 f"{t['cpu_over_wall']:.2f}, AUC {tarn_auc:.4f})"]
        if baseline:
            b = summarize(runs["baseline"])
            b["ratio_per_round"] = [x["steady_samples_per_s"] / y["steady_samples_per_s"]
                                    for x, y in zip(runs["tarn"], runs["baseline"])]
            b["median_ratio"] = med(b["ratio_per_round"])
            d["baseline"] = b
            parts.append(f"baseline {fmt_rate(b['median_steady_samples_per_s'])}samples/s, "
                         f"tarn/baseline {b['median_ratio']:.2f}x")
        best_peer = None
        for p in peers:
            per = {th: summarize(runs[f"{p}-{th}"]) for th in THREADS}
            for th, s in per.items():
                s["auc"] = [x["auc"] for x in runs[f"{p}-{th}"]]
                s["median_auc"] = med(s["auc"])
                s["epoch_s"] = [x["epoch_s"] for x in runs[f"{p}-{th}"]]
                s["import_s"] = [x["import_s"] for x in runs[f"{p}-{th}"]]
            bt = max(THREADS, key=lambda th: per[th]["median_steady_samples_per_s"])
            s = per[bt]
            ratios = [x["steady_samples_per_s"] / y["steady_samples_per_s"]
                      for x, y in zip(runs["tarn"], runs[f"{p}-{bt}"])]
            pd = {"threads": {str(th): v for th, v in per.items()}, "best_threads": bt,
                  "versions": runs[f"{p}-{bt}"][0].get("versions"),
                  "ratio_per_round": ratios, "median_ratio": med(ratios),
                  "auc_diff": tarn_auc - s["median_auc"]}
            if p == "keras":
                pd["jit_compile"] = runs[f"{p}-{bt}"][0].get("jit_compile")
            d[p] = pd
            if best_peer is None or s["median_steady_samples_per_s"] > \
                    d[best_peer]["threads"][str(d[best_peer]["best_threads"])]["median_steady_samples_per_s"]:
                best_peer = p
            others = ", ".join(f"{th} thread{'s' if th > 1 else ''} "
                               f"{fmt_rate(per[th]['median_steady_samples_per_s'])}/s" for th in THREADS)
            parts.append(f"{p} {fmt_rate(s['median_steady_samples_per_s'])}samples/s at {bt} "
                         f"thread{'s' if bt > 1 else ''} ({others}; whole command "
                         f"{s['median_wall_s']:.1f} s, {s['median_rss_mb']:.0f} MB, AUC {s['median_auc']:.4f})")
        goals = []
        for p in peers:
            goals.append(f"tarn/{p} {d[p]['median_ratio']:.2f}x, AUC {d[p]['auc_diff']:+.4f} "
                         f"[{'OK' if abs(d[p]['auc_diff']) <= GOAL_AUC else 'MISSED'} within {GOAL_AUC}]")
        if best_peer:
            r = d[best_peer]["median_ratio"]
            d["faster_peer"] = best_peer
            goals.append(f"tarn/faster peer ({best_peer}) {r:.2f}x "
                         f"[{'OK' if r >= GOAL_SPEEDUP else 'MISSED'} >= {GOAL_SPEEDUP:.0f}x]")
        if "pytorch" in peers:
            cj = os.path.join(WORK, f"{key}-check.json")
            run([venv_python("pytorch"), me, "--check", arrays,
                 os.path.join(ms, "evals", "Eval1", "EvalScore"), cj], WORK, f"score check ({key})", env=penv)
            with open(cj) as f:
                chk = json.load(f)
            d["same_graph_check"] = chk
            same = chk.get("max_abs_diff", 1.0) <= SCORE_TOLERANCE and \
                chk["params_read"] == chk["params_in_file"]
            checks.append(("same graph", same,
                           f"PyTorch with tarn's parameters vs tarn eval on {chk['rows']} test rows: "
                           f"max |diff| {chk.get('max_abs_diff')}, {chk['params_read']} of "
                           f"{chk['params_in_file']} parameters read"))
        d["checks"] = [{"check": c, "ok": bool(o), "detail": det} for c, o, det in checks]
        model_ok = all(o for _, o, _ in checks)
        ok = ok and model_ok
        line = (f"{NAME} {key} ({algorithm}, {rows} train rows x {a.epochs} epochs, steady state "
                f"epochs 2-{a.epochs}): " + " | ".join(parts) + (" | " + "; ".join(goals) if goals else "")
                + " | " + ("; ".join(f"{c} {'OK' if o else 'MISMATCH'} ({det})" for c, o, det in checks)
                           if checks else "no graph check (PyTorch absent)"))
        d["summary_line"] = line
        res["models"][key] = d
        lines.append(line)
        log(line)

    finish(NAME, RESULTS, res, lines, src_tarn, tarn_sha, ran_a_copy=True)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
