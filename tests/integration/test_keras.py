"""Keras models read natively: tests/keras/make_graphs.py builds a wide & deep model, a
DeepFM-like model, a Sequential MLP and a model with a Lambda in real Keras (Keras 3, and
Keras 2 through tf_keras), writes each model.to_json(), and `tarn keras describe` must read
every layer with the shape Keras gave it, and refuse the Lambda by its JSON path. Then tarn
trains the wide & deep and DeepFM JSON on Adult, Keras trains the same graphs on the rows tarn
normalized (tests/keras/fit_normalized.py), and both reach the same test AUC."""
import gzip
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import (EXAMPLE, ROOT, columns, edit_config, model_file_header, python_with,
                      read_shard, read_shard_ids, run)
from test_export import ort_python, score_with_onnx  # noqa: F401 (a fixture)
from test_graph_train import NN, eval_auc, model_set, normalized  # noqa: F401 (a fixture)
from test_serving import Server, assert_scores_equal_eval, eval_scores, predict

MAKE_GRAPHS = ROOT / "tests" / "keras" / "make_graphs.py"
NUMERIC_WIDTH = 6
CATEGORICAL = ["Work_Class", "Education", "Occupation"]
EMBEDDING_DIM = 4


@pytest.fixture(scope="module")
def keras3_python():
    """A Python with Keras 3 on a CPU backend: this one, or build/keras-venv (made on first use)."""
    return python_with(["keras", "tensorflow"], ["tensorflow-cpu"], "keras-venv")


@pytest.fixture(scope="module")
def keras2_python():
    """A Python with tf_keras (Keras 2), in the same venv."""
    return python_with(["tf_keras"], ["tensorflow-cpu", "tf_keras"], "keras-venv")


def make_graphs(python, out_dir, *flags):
    proc = subprocess.run([python, str(MAKE_GRAPHS), str(out_dir), *flags], capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    prefix = "keras2_" if flags else "keras3_"
    shapes = json.loads((out_dir / f"{prefix}shapes.json").read_text())
    return prefix, shapes


def describe(path):
    return json.loads(run("keras", "describe", path).stdout)


def check_models(out_dir, prefix, shapes, major):
    assert shapes["keras_version"].startswith(f"{major}.")
    for name in ("wide_deep", "deepfm", "sequential_mlp"):
        path = out_dir / f"{prefix}{name}.json"
        described = describe(path)
        assert described["kerasMajor"] == major
        layers = {layer["name"]: layer for layer in described["layers"]}
        # Every layer Keras built, with the output shape Keras computed for it.
        for layer, shape in shapes["models"][name].items():
            assert layers[layer]["shape"] == shape, (path, layer)
        order = [layer["name"] for layer in described["layers"]]
        for layer in described["layers"]:
            assert all(order.index(i) < order.index(layer["name"]) for i in layer["inputs"])
        assert layers[described["output"]]["width"] == 1
        inputs = {i["name"]: i for i in described["inputs"]}
        if name == "sequential_mlp":
            assert [i["role"] for i in inputs.values()] == ["numeric"]
            assert [layer["width"] for layer in described["layers"]] == [NUMERIC_WIDTH, 16, 16, 8,
                                                                         8, 1]
            assert layers["leaky"]["activation"] == "leakyrelu"
            continue
        assert list(inputs) == ["shifu_input_0", *CATEGORICAL]
        assert inputs["shifu_input_0"] == {"name": "shifu_input_0", "role": "numeric",
                                           "dtype": "float32", "shape": [NUMERIC_WIDTH]}
        for c in CATEGORICAL:
            assert inputs[c]["role"] == "ids" and inputs[c]["shape"] == [1]
        assert layers["deep_concat"]["width"] == NUMERIC_WIDTH + len(CATEGORICAL) * EMBEDDING_DIM
        if name == "wide_deep":
            assert layers["deep_2"]["activation"] == "tanh"
            assert layers["deep_2"]["l2"] == pytest.approx(1e-4)
            assert layers["deep_bn"]["kind"] == "batch_normalization"
            assert layers["deep_emb_Education"]["inputDim"] == 17
        else:
            assert [layers[f"fm_{i}_{j}"]["kind"] for i, j in ((0, 1), (0, 2), (1, 2))] == ["dot"] * 3
            assert layers["deep_gated"]["kind"] == "multiply"
            assert layers["logit"]["width"] == 1

    # Shared layers are one layer per call, nested models inlined, as Keras 2 and 3 wrote them.
    described = describe(out_dir / f"{prefix}shared_nested.json")
    layers = {layer["name"]: layer for layer in described["layers"]}
    for layer, shape in shapes["models"]["shared_nested"].items():
        holder = {"pair": "pair/pair_dense", "head": "head/head_logit"}.get(layer, layer)
        assert layers[holder]["shape"] == shape, layer
    assert [layers[f"shared_dense#{k}"]["shares"] for k in (1, 2)] == ["shared_dense"] * 2
    assert layers["pair#1/pair_dense"]["shares"] == "pair/pair_dense"
    assert "shares" not in layers["shared_dense"] and "shares" not in layers["flat#1"]
    assert layers["all"]["inputs"] == ["shifu_input_0", "shared_dense", "shared_dense#1",
                                       "shared_dense#2", "pair/pair_dense", "pair#1/pair_dense"]
    assert layers["head/head_hidden"]["inputs"] == ["all"] and "head" not in layers
    shared_emb = out_dir / f"{prefix}shared_embedding.json"
    proc = run("keras", "describe", shared_emb, check=False)
    assert proc.returncode == 2
    assert ("(Embedding 'emb#1'): an Embedding called more than once (shared with 'emb') is not "
            "supported") in proc.stderr

    bad = out_dir / f"{prefix}unsupported_lambda.json"
    entries = json.loads(bad.read_text())["config"]["layers"]
    index = [e["config"]["name"] for e in entries].index("fm")
    proc = run("keras", "describe", bad, check=False)
    assert proc.returncode == 2
    assert (f"{bad}: config.layers[{index}] (Lambda 'fm'): Lambda layers hold Python code and "
            "are not supported") in proc.stderr


@pytest.fixture(scope="module")
def keras3_graphs(keras3_python, tmp_path_factory):
    """make_graphs.py's Keras 3 models, made once for the tests below: (folder, prefix, shapes)."""
    out_dir = tmp_path_factory.mktemp("keras3")
    return (out_dir, *make_graphs(keras3_python, out_dir))


def test_reads_keras3_models(keras3_graphs):
    out_dir, prefix, shapes = keras3_graphs
    check_models(out_dir, prefix, shapes, 3)


def test_reads_keras2_models(tmp_path, keras2_python):
    prefix, shapes = make_graphs(keras2_python, tmp_path, "--keras2")
    check_models(tmp_path, prefix, shapes, 2)


def test_describe_usage_and_missing_file(tmp_path):
    proc = run("keras", "describe", tmp_path / "absent.json", check=False)
    assert proc.returncode == 1 and "absent.json" in proc.stderr
    proc = run("keras", "explain", "x", check=False)
    assert proc.returncode == 2 and "usage: tarn keras describe FILE" in proc.stderr


# The AUC comparison: tarn and Keras train the same to_json() graph on the same normalized rows.
# AdaGrad (as plain SGD) leaves a table row that no batch touched as it is, so tarn's tables may
# be updated densely or row by row (lazily) and Keras' dense update is still the same algorithm.
AUC_RUN = {"epochs": 4, "batch": 128, "learningRate": 0.05, "optimizer": "adagrad", "seed": 7}
FIT_NORMALIZED = ROOT / "tests" / "keras" / "fit_normalized.py"


def normalized_rows_of_shards(ms):
    """tarn's training rows (tmp/NormalizedData) as the Keras model's inputs: the numeric slots
    of the selected columns (the category indices left out) and each id column's ids."""
    selected = [c for c in columns(ms) if c.get("finalSelect")]
    rows = {"numeric": [], "ids": {}, "target": []}
    for shard in sorted((ms / "tmp" / "NormalizedData").glob("part-*.tshard")):
        header, floats = read_shard(shard)
        _, ids = read_shard_ids(shard)
        offsets, slots = {}, []
        offset = 0
        for f in header["features"]:
            offsets[f["name"]] = offset
            offset += f["width"]
        for c in selected:
            feature = next(f for f in header["features"] if f["name"] == c["columnName"])
            index = set(feature.get("indexSlots", []))
            slots += [offsets[feature["name"]] + k for k in range(feature["width"])
                      if k not in index]
        rows["numeric"] += [[r[s] for s in slots] for r in floats]
        rows["target"] += [r[-2] for r in floats]
        for k, c in enumerate(header["idColumns"]):
            rows["ids"].setdefault(c["name"], []).extend(i[k] for i in ids)
    return rows


def normalized_rows_of_eval(ms):
    """The eval rows `tarn eval -norm` normalized (EvalNormalized: target, weight, the inputs):
    numeric slots, and the categorical columns' category indices, which are their ids."""
    categorical = {c["columnName"] for c in columns(ms) if c["columnType"] == "C"}
    lines = (ms / "evals" / "Eval1" / "EvalNormalized").read_text().splitlines()
    names = lines[0].split("|")
    rows = {"numeric": [], "ids": {n: [] for n in names[2:] if n in categorical}, "target": []}
    # A graph model's EvalNormalized ends with the ids it reads, a "<column>#id" field per id
    # column; they equal the category indices.
    ids = {n[:-len("#id")] for n in names if n.endswith("#id")}
    for line in lines[1:]:
        values = line.split("|")
        rows["target"].append(int(values[0]))
        rows["numeric"].append([float(v) for n, v in zip(names[2:], values[2:])
                                if n not in categorical and not n.endswith("#id")])
        for n, v in zip(names[2:], values[2:]):
            if n in categorical and n in ids:
                assert int(float(v)) == int(values[names.index(n + "#id")]), n
            if n in categorical:
                rows["ids"][n].append(int(float(v)))
    return rows


def test_keras_and_tarn_reach_the_same_test_auc_on_adult(normalized, keras3_python, keras3_graphs,
                                                         tmp_path):
    """Real Keras builds a wide & deep and a DeepFM-like model (make_graphs.py), and one of
    shared layers and nested models, and writes to_json(); tarn trains each JSON on Adult (LOCAL)
    and scores the eval set; Keras trains the graph read back from the same JSON on the rows tarn
    normalized, with the same epochs, batch, optimizer and learning rate, and scores the same eval
    rows: the test AUCs agree within 0.005."""
    graphs = keras3_graphs[0]
    params = {"Propagation": "AdaGrad", "LearningRate": AUC_RUN["learningRate"],
              "MiniBatchs": AUC_RUN["batch"], "ModelGraph": "graph.json"}
    tarn_auc, model_sets = {}, {}
    for name in ("wide_deep", "deepfm", "shared_nested"):
        ms = model_set(normalized, tmp_path, "TensorFlow", params, AUC_RUN["epochs"], name)
        # Every normalized row trains (no validation split), as in Keras' fit.
        edit_config(ms, **{"train.validSetRate": 0.0})
        shutil.copy(graphs / f"keras3_{name}.json", ms / "graph.json")
        run("train", cwd=ms)
        tarn_auc[name] = eval_auc(ms)
        model_sets[name] = ms
    run("eval", "-norm", cwd=model_sets["wide_deep"])
    data = dict(AUC_RUN, train=normalized_rows_of_shards(model_sets["wide_deep"]),
                test=normalized_rows_of_eval(model_sets["wide_deep"]))
    assert len(data["test"]["target"]) == 16281
    assert sorted(data["train"]["ids"]) == sorted(data["test"]["ids"])
    (tmp_path / "data.json").write_text(json.dumps(data))
    proc = subprocess.run([keras3_python, str(FIT_NORMALIZED), str(tmp_path / "data.json"),
                           *(str(model_sets[n] / "graph.json") for n in tarn_auc)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    keras_auc = {Path(r["model"]).parent.name: r["auc"]
                 for r in map(json.loads, proc.stdout.splitlines())}
    for name, auc in tarn_auc.items():
        print(f"{name}: tarn test AUC {auc:.4f}, Keras {keras_auc[name]:.4f}")
    for name, auc in tarn_auc.items():
        assert auc > 0.8 and abs(auc - keras_auc[name]) <= 0.005, (name, auc, keras_auc[name])


# Runs in the Python with Keras 3: the bins each Hashing layer `hash_<column>` of a to_json()
# graph gives a list of texts, computed by Keras itself.
KERAS_BINS_SCRIPT = r'''
import json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras
import tensorflow as tf
graph, values, out = sys.argv[1:4]
model = keras.models.model_from_json(open(graph).read())
bins = {}
for column, texts in json.load(open(values)).items():
    layer = model.get_layer(f"hash_{column}")
    bins[column] = [int(b) for b in layer(tf.constant([[t] for t in texts])).numpy().ravel()]
json.dump(bins, open(out, "w"))
'''


def keras_bins(python, graph, values, tmp_path):
    """{column: {text: bin}}: what Keras' own Hashing layers of `graph` give `values`."""
    script, values_file, out = tmp_path / "bins.py", tmp_path / "texts.json", tmp_path / "bins.json"
    script.write_text(KERAS_BINS_SCRIPT)
    values_file.write_text(json.dumps(values))
    proc = subprocess.run([python, str(script), str(graph), str(values_file), str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    bins = json.loads(out.read_text())
    return {c: dict(zip(values[c], bins[c])) for c in values}


def raw_records(data_set):
    """Every record of one of the income example's data sets, as the file holds it."""
    names = (EXAMPLE / data_set / ".pig_header").read_text().strip().split("|")
    with gzip.open(EXAMPLE / data_set / "part-00000.gz", "rt", encoding="utf-8") as f:
        return [dict(zip(names, line.rstrip("\n").split("|"))) for line in f if line.strip()]


def test_hashing_layers_give_keras_bins_train_evaluate_and_export(
        normalized, keras3_python, keras3_graphs, ort_python, tmp_path):
    """make_graphs.py's `hashing` model reads the text of each of Adult's 8 categorical columns
    through a Hashing layer (FarmHash, SipHash with a salt, mask values). `tarn norm` writes the
    bins as the columns' ids: on every distinct raw value of the training and the eval set they
    are the bins Keras' own layers give. The graph trains and evaluates; `tarn eval -norm`'s ids
    are Keras' bins of each eval record; `tarn serve` scores the raw eval records as `tarn eval`;
    the ONNX export, fed Keras' bins, scores every eval row as `tarn eval`, and a row with an id
    outside a column's bins scores NaN."""
    graph = keras3_graphs[0] / "keras3_hashing.json"
    ms = model_set(normalized, tmp_path, "TensorFlow", dict(NN, ModelGraph="graph.json"), 3)
    shutil.copy(graph, ms / "graph.json")
    run("norm", cwd=ms)
    header, ids = read_shard_ids(ms / "tmp" / "NormalizedData" / "part-00000.tshard")
    id_columns = header["idColumns"]
    layers = {layer["config"]["name"]: layer["config"]
              for layer in json.loads(graph.read_text())["config"]["layers"]}
    assert len(id_columns) == 8
    for c in id_columns:
        hashing = layers["hash_" + c["name"]]
        assert (c["kind"], c["vocabulary"], c["numBins"], c["salt"], c["maskValue"]) == (
            "keras_hash", hashing["num_bins"], hashing["num_bins"], hashing["salt"],
            hashing["mask_value"])
    assert any(c["salt"] for c in id_columns) and any(c["maskValue"] for c in id_columns)

    train, test = raw_records("DataSet1"), raw_records("EvalSet1")
    assert len(ids) == len(train)
    values = {c["name"]: sorted({r[c["name"]] for r in train + test}) for c in id_columns}
    assert "?" in values["Occupation"]  # a missing marker, hashed like any text
    expected = keras_bins(keras3_python, graph, values, tmp_path)
    for k, c in enumerate(id_columns):
        name = c["name"]
        tarn_bins = {}
        for record, row in zip(train, ids):
            tarn_bins.setdefault(record[name], set()).add(row[k])
        assert all(len(b) == 1 for b in tarn_bins.values()), name
        assert {v: b.pop() for v, b in tarn_bins.items()} == {
            v: expected[name][v] for v in tarn_bins}, name

    run("train", cwd=ms)
    model_header = model_file_header(ms / "models" / "model0.tarn")
    assert [c["kind"] for c in model_header["idColumns"]] == ["keras_hash"] * 8
    auc = eval_auc(ms)
    print(f"hashing graph: test AUC {auc:.4f}")
    assert auc > 0.85

    # Eval records get Keras' bins too, row by row.
    run("eval", "-norm", cwd=ms)
    lines = (ms / "evals" / "Eval1" / "EvalNormalized").read_text().splitlines()
    names = lines[0].split("|")
    rows = [line.split("|") for line in lines[1:]]
    assert len(rows) == len(test)
    for c in id_columns:
        at = names.index(c["name"] + "#id")
        assert [int(r[at]) for r in rows] == [expected[c["name"]][t[c["name"]]] for t in test]

    run("export", "-t", "onnx", cwd=ms)
    sidecar = json.loads((ms / "onnx" / "model0.onnx.json").read_text())
    rules = {r["input"]: r for r in sidecar["ids"]}
    assert rules["Occupation"]["kind"] == "keras_hash" and rules["Occupation"]["missingId"] is None
    assert (rules["Occupation"]["salt"], rules["Occupation"]["maskValue"]) == ([11, 2**40 + 3], "?")
    width = sidecar["input"]["shape"][1]
    feeds = {"input": [[float(v) for v in r[2:2 + width]] for r in rows]}
    for name in rules:
        feeds[name] = [expected[name][t[name]] for t in test]
    run("eval", "-score", "-nosort", cwd=ms)
    scored = (ms / "evals" / "Eval1" / "EvalScore").read_text().splitlines()[1:]
    onnx_scores = score_with_onnx(ort_python, ms / "onnx" / "model0.onnx", feeds, tmp_path)["scores"]
    worst = max(abs(s * 1000 - float(line.split("|")[6])) for s, line in zip(onnx_scores, scored))
    assert worst <= 0.001, worst
    # tarn serve computes the same bins from the raw records ("?" hashed as Keras hashes it).
    server = Server("-m", ms)
    name = json.loads((ms / "ModelConfig.json").read_text())["basic"]["name"]
    try:
        served = []
        for start in range(0, len(test), 4000):
            served += predict(server, name, test[start:start + 4000])[0]
    finally:
        code, err = server.stop()
    assert code == 0, err
    assert_scores_equal_eval(served, eval_scores(ms))
    # Out-of-range bins: no raw value gives them, and the export rejects the row (NaN).
    bad = {name: rows[:3] for name, rows in feeds.items()}
    bad["Race"] = [-1, rules["Race"]["vocabulary"], 0]
    scores = score_with_onnx(ort_python, ms / "onnx" / "model0.onnx", bad, tmp_path)["scores"]
    assert math.isnan(scores[0]) and math.isnan(scores[1]) and not math.isnan(scores[2])
