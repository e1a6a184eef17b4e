"""tarn export: PMML and ONNX models that score exactly like tarn eval, and Shifu's columnstats
CSV."""
import csv
import gzip
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import (EXAMPLE, INCOME_EVAL_SET, columns, edit_config, income_with_hashed_column,
                      make_income_model_set, model_file_header, python_with, run)
from test_graph_train import adult_keras_fixture
from test_id_columns import category_hash64

SEED_PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [50], "ActivationFunc": ["tanh"],
               "LearningRate": 0.002, "MiniBatchs": 128, "RegularizedConstant": 0.01,
               "Propagation": "Adam"}
EVAL_ROWS = 16281
# EvalScore prints score x 1000 at full precision: a 1e-5 agreement on the 0..1 score is
# 0.01 of the printed value.
TOLERANCE = 0.01

SHIFU_COLUMNSTATS_HEADER = (
    "dataSet,columnFlag,columnName,columnNum,iv,ks,max,mean,median,min,missingCount,"
    "missingPercentage,stdDev,totalCount,distinctCount,weightedIv,weightedKs,weightedWoe,woe,"
    "skewness,kurtosis,columnType,finalSelect,psi,unitstats,version").split(",")

# Runs in the Python that has onnxruntime: scores rows with the model. The feeds file maps each
# model input's name to its rows (float32 vectors, or int64 ids).
ORT_SCRIPT = r'''
import json, sys
import numpy as np
import onnxruntime as ort
model, feeds, out = sys.argv[1:4]
result = {}
try:
    import onnx
    m = onnx.load(model)
    onnx.checker.check_model(m, full_check=True)
    result["checker"] = True
    result["ir_version"] = m.ir_version
    result["opset"] = [[o.domain, o.version] for o in m.opset_import]
    result["ops"] = [n.op_type for n in m.graph.node]
except ImportError:
    result["checker"] = None
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
shape = lambda v: [d if isinstance(d, int) else "?" for d in v.shape]
inputs, outp = session.get_inputs(), session.get_outputs()[0]
result["input"] = [inputs[0].name, shape(inputs[0])]
result["inputs"] = [[i.name, shape(i), i.type] for i in inputs]
result["output"] = [outp.name, shape(outp)]
result["metadata"] = session.get_modelmeta().custom_metadata_map
rows = json.load(open(feeds))
dtype = {"tensor(float)": np.float32, "tensor(int64)": np.int64}
feed = {i.name: np.array(rows[i.name], dtype=dtype[i.type]) for i in inputs}
result["scores"] = session.run([outp.name], feed)[0][:, 0].astype(float).tolist()
json.dump(result, open(out, "w"))
'''


@pytest.fixture(scope="session")
def ort_python():
    """A Python with onnxruntime: this one, or a venv under build/ (created on first use)."""
    return python_with(["onnxruntime", "numpy"], ["onnxruntime", "onnx"], "onnx-venv")


def prepared(base, name, epochs=2, norm_type=None, **params):
    ms = make_income_model_set(base, name)
    changes = {
        "train.algorithm": "TensorFlow", "train.params": dict(SEED_PARAMS, **params),
        "train.numTrainEpochs": epochs, "varSelect.filterNum": 50,
        **INCOME_EVAL_SET}
    if norm_type:
        changes["normalize.normType"] = norm_type
    edit_config(ms, **changes)
    for step in ("init", "stats", "norm", "varsel"):
        run(step, cwd=ms)
    return ms


def score_with_onnx(ort_python, model, feeds, tmp_path):
    """onnxruntime's scores of `feeds` (input name -> rows) with `model`, and what it saw."""
    vec_file, out_file, script = (tmp_path / "feeds.json", tmp_path / "ort.json",
                                  tmp_path / "ort_score.py")
    vec_file.write_text(json.dumps(feeds))
    script.write_text(ORT_SCRIPT)
    proc = subprocess.run([ort_python, str(script), str(model), str(vec_file), str(out_file)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out_file.read_text())


def eval_inputs_and_scores(ms):
    """tarn eval's EvalNormalized (its inputs) and EvalScore (-nosort) lines for every eval row,
    in input order, headers first."""
    run("eval", "-norm", cwd=ms)
    normalized = (ms / "evals" / "Eval1" / "EvalNormalized").read_text().splitlines()
    run("eval", "-score", "-nosort", cwd=ms)
    scored = (ms / "evals" / "Eval1" / "EvalScore").read_text().splitlines()
    assert len(normalized) == len(scored) == EVAL_ROWS + 1
    return normalized, scored


def assert_onnx_scores_match(onnx_scores, scored, rows, tolerance):
    """onnxruntime's scores equal EvalScore's model0 (x 1000) within `tolerance` on every row;
    `rows` are the EvalNormalized rows the scores came from."""
    assert len(onnx_scores) == EVAL_ROWS
    worst = (0.0, -1)
    for i, (line, s) in enumerate(zip(scored[1:], onnx_scores)):
        fields = line.split("|")
        # Same record order: EvalScore has the raw tag, EvalNormalized the 0/1 target.
        assert {">50K": "1", "<=50K": "0"}[fields[0]] == rows[i][0]
        worst = max(worst, (abs(s * 1000 - float(fields[6])), i))
    print(f"worst |ONNX x 1000 - EvalScore| = {worst[0]:.3g} (row {worst[1]})")
    assert worst[0] <= tolerance, f"row {worst[1]}: ONNX and tarn eval differ by {worst[0]}"
    assert len({round(s, 4) for s in onnx_scores}) > 100  # a real model, not a constant


@pytest.mark.parametrize("norm_type,params,ops", [
    (None, {}, ["Gemm", "Tanh", "Gemm", "Sigmoid"]),
    ("ZSCALE_ONEHOT", {"NumHiddenLayers": 2, "NumHiddenNodes": [20, 10],
                       "ActivationFunc": ["leakyrelu", "swish"]},
     ["Gemm", "LeakyRelu", "Gemm", "Sigmoid", "Mul", "Gemm", "Sigmoid"]),
    ("ONEHOT", {"NumHiddenLayers": 1, "NumHiddenNodes": [16], "ActivationFunc": ["relu"]},
     ["Gemm", "Relu", "Gemm", "Sigmoid"]),
])
def test_onnx_model_scores_like_tarn_eval(tmp_path, ort_python, norm_type, params, ops):
    ms = prepared(tmp_path, "income", norm_type=norm_type, **params)
    run("train", cwd=ms)
    out = run("export", "-t", "onnx", cwd=ms)
    assert "model0.onnx" in out.stderr
    model = ms / "onnx" / "model0.onnx"
    sidecar = json.loads((ms / "onnx" / "model0.onnx.json").read_text())

    normalized, scored = eval_inputs_and_scores(ms)
    header = normalized[0].split("|")
    assert header[:2] == ["target", "weight"]
    assert scored[0].split("|")[:7] == ["Target", "weight", "mean", "max", "min", "median",
                                        "model0"]

    # The sidecar describes exactly the vector eval feeds the network.
    width = sidecar["input"]["shape"][1]
    assert sidecar["input"]["name"] == "input" and sidecar["output"]["name"] == "score"
    assert sidecar["inputNames"] == header[2:]
    assert len(header) - 2 == width == sum(c["width"] for c in sidecar["columns"])
    assert [c["offset"] for c in sidecar["columns"]] == [
        sum(c["width"] for c in sidecar["columns"][:k]) for k in range(len(sidecar["columns"]))]
    assert sidecar["normType"] == (norm_type or "ZSCALE")
    selected = [c["columnName"] for c in columns(ms) if c["finalSelect"]]
    assert sorted(c["columnName"] for c in sidecar["columns"]) == sorted(selected)
    if norm_type and "ONEHOT" in norm_type:
        assert width > len(sidecar["columns"])  # categorical columns take one value per bin

    # Build each row from the sidecar: every column's `width` values, found by name in the
    # EvalNormalized header (a one-hot column's name repeats once per value).
    positions, seen = [], {}
    for c in sidecar["columns"]:
        at = [i for i, n in enumerate(header) if n == c["columnName"]]
        start = seen.get(c["columnName"], 0)
        positions += at[start:start + c["width"]]
        seen[c["columnName"]] = start + c["width"]
    assert len(positions) == width
    rows = [line.split("|") for line in normalized[1:]]
    vectors = [[float(r[p]) for p in positions] for r in rows]

    result = score_with_onnx(ort_python, model, {"input": vectors}, tmp_path)
    assert result["input"] == ["input", ["?", width]]
    assert result["output"] == ["score", ["?", 1]]
    meta = result["metadata"]
    assert json.loads(meta["tarn.inputNames"]) == header[2:]
    assert json.loads(meta["tarn.inputColumns"]) == [c["columnName"] for c in sidecar["columns"]]
    if result["checker"] is not None:
        assert result["checker"] and result["ir_version"] == 8
        assert result["opset"] == [["", 13]]
        assert result["ops"] == ops

    assert_onnx_scores_match(result["scores"], scored, rows, TOLERANCE)


def test_onnx_export_paths_and_errors(tmp_path):
    ms = prepared(tmp_path, "income", epochs=1)
    proc = run("export", "-t", "onnx", cwd=ms, check=False)
    assert proc.returncode != 0 and "run 'tarn train' first" in proc.stderr

    proc = run("export", "-t", "pfa", cwd=ms, check=False)
    assert proc.returncode != 0 and "'pfa'" in proc.stderr
    assert "pmml" in proc.stderr and "onnx" in proc.stderr and "columnstats" in proc.stderr

    run("train", cwd=ms)
    run("export", "-t", "ONNX", "-o", tmp_path / "out" / "adult.onnx", cwd=ms)
    assert (tmp_path / "out" / "adult.onnx").stat().st_size > 1000
    sidecar = json.loads((tmp_path / "out" / "adult.onnx.json").read_text())
    assert sidecar["model"] == "adult.onnx"
    assert sidecar["source"].endswith("models/model0.tarn")
    assert not (ms / "onnx").exists()

    edit_config(ms, **{"train.baggingNum": 2})
    run("train", cwd=ms)
    proc = run("export", "-t", "onnx", "-o", tmp_path / "one.onnx", cwd=ms, check=False)
    assert proc.returncode != 0 and "2 models" in proc.stderr
    run("export", "-t", "onnx", "-o", tmp_path / "bag", cwd=ms)
    assert sorted(p.name for p in (tmp_path / "bag").iterdir()) == [
        "model0.onnx", "model0.onnx.json", "model1.onnx", "model1.onnx.json"]
    # Exports are written atomically: no temporary file is left behind.
    assert not list((tmp_path / "bag").glob("*.tmp.*"))

    # A damaged model is refused with its name.
    model = ms / "models" / "model1.tarn"
    model.write_bytes(model.read_bytes()[:-10])
    proc = run("export", "-t", "onnx", cwd=ms, check=False)
    assert proc.returncode != 0 and "model1.tarn" in proc.stderr


def test_columnstats_matches_column_config(tmp_path):
    ms = make_income_model_set(tmp_path)
    run("init", cwd=ms)
    run("stats", cwd=ms)
    run("varsel", cwd=ms)
    run("export", "-t", "columnstats", cwd=ms)
    with open(ms / "columnstats.csv", newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == SHIFU_COLUMNSTATS_HEADER
    cols = columns(ms)
    assert len(table) == len(cols) + 1
    rows = {r[2]: dict(zip(table[0], r)) for r in table[1:]}
    for c in cols:
        r = rows[c["columnName"]]
        st = c["columnStats"]
        assert r["dataSet"] == "income"
        assert r["columnNum"] == str(c["columnNum"])
        assert r["columnFlag"] == (c["columnFlag"] or "null")
        assert r["columnType"] == c["columnType"]
        assert r["finalSelect"] == ("true" if c["finalSelect"] else "false")
        assert r["version"] == "0.13.0"
        for key in ("iv", "ks", "mean", "stdDev", "max", "min", "median", "missingPercentage",
                    "woe", "skewness", "kurtosis"):
            value = st.get(key)
            if value is None:
                assert r[key] == "null", (c["columnName"], key)
            elif isinstance(value, str):  # "NaN" / "Infinity" in ColumnConfig.json
                assert r[key] == value, (c["columnName"], key)
            else:
                assert float(r[key]) == pytest.approx(value, rel=1e-15), (c["columnName"], key)
        for key in ("missingCount", "totalCount", "distinctCount"):
            assert r[key] == ("null" if st.get(key) is None else str(st[key]))
    age = rows["Age"]
    assert age["columnFlag"] == "null" and age["columnType"] == "N"
    assert age["min"] == "17.0" and age["max"] == "90.0"  # Java's Double.toString
    assert age["totalCount"] == "32561"
    assert rows["Target"]["columnFlag"] == "Target"
    assert rows["Work_Class"]["columnType"] == "C" and int(rows["Work_Class"]["missingCount"]) > 0

    out = tmp_path / "reports" / "stats.csv"
    run("export", "-t", "columnstats", "-o", out, cwd=ms)
    assert out.read_text() == (ms / "columnstats.csv").read_text()


# ------------------------------------------------------------------------------------- PMML

PMML_NS = {"p": "http://www.dmg.org/PMML-4_4"}
# Agreement on the 0..1 score. The PMML evaluator computes in double, tarn's network in float32:
# what is left is tarn's rounding.
PMML_TOLERANCE = 1e-6

# Runs in the Python that has jpmml_evaluator (JPMML, on Java): scores raw records, every
# field as the text the data file holds.
JPMML_SCRIPT = r'''
import gzip, json, sys
import pandas as pd
from jpmml_evaluator import make_evaluator
pmml, data, header, out = sys.argv[1:5]
names = open(header).read().strip().split("|")
with gzip.open(data, "rt") as f:
    rows = [line.rstrip("\n").split("|") for line in f if line.strip()]
frame = pd.DataFrame(rows, columns=names, dtype=object)
evaluator = make_evaluator(pmml).verify()
inputs = [f.getName() for f in evaluator.getInputFields()]
scored = evaluator.evaluateAll(frame[inputs])
json.dump({"inputs": inputs,
           "outputs": [f.getName() for f in evaluator.getOutputFields()],
           "raw": scored["RawResult"].astype(float).tolist(),
           "final": scored["FinalResult"].astype(float).tolist()}, open(out, "w"))
'''


@pytest.fixture(scope="session")
def jpmml_python():
    """A Python with jpmml_evaluator (JPMML-Evaluator, needs Java): this one or a venv."""
    if subprocess.run(["java", "-version"], capture_output=True).returncode != 0:
        pytest.skip("java is not installed: JPMML-Evaluator needs it")
    return python_with(["jpmml_evaluator", "pandas"], ["jpmml-evaluator"], "pmml-venv")


def score_with_jpmml(python, pmml, tmp_path):
    script, out = tmp_path / "jpmml_score.py", tmp_path / "jpmml.json"
    script.write_text(JPMML_SCRIPT)
    data = EXAMPLE / "EvalSet1"
    proc = subprocess.run([python, str(script), str(pmml), str(data / "part-00000.gz"),
                           str(data / ".pig_header"), str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def eval_scores(ms):
    """tarn eval's scores (x 1000) of every eval row in input order, from EvalScore: a dict
    from the column name (mean, model0, ...) to the scores."""
    run("eval", "-score", "-nosort", cwd=ms)
    lines = (ms / "evals" / "Eval1" / "EvalScore").read_text().splitlines()
    header = lines[0].split("|")
    rows = [line.split("|") for line in lines[1:]]
    return {name: [float(r[i]) for r in rows] for i, name in enumerate(header)
            if name == "mean" or name.startswith("model")}


def assert_scores_match(result, expected, tolerance=PMML_TOLERANCE):
    assert len(result["raw"]) == len(expected) == EVAL_ROWS
    worst = max((abs(r * 1000 - e), i) for i, (r, e) in enumerate(zip(result["raw"], expected)))
    print(f"worst |PMML x 1000 - EvalScore| = {worst[0]:.3g} (row {worst[1]})")
    # EvalScore prints score x 1000 with 4 decimals: half a unit of the last digit on top.
    assert worst[0] <= tolerance * 1000 + 0.00005, (
        f"row {worst[1]}: PMML and tarn eval differ by {worst[0]} (x 1000)")
    assert result["final"] == [float(round(r * 1000)) for r in result["raw"]]
    assert len({round(r, 4) for r in result["raw"]}) > 100  # a real model, not a constant


def pmml_tree(path):
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.dmg.org/PMML-4_4}PMML" and root.get("version") == "4.4"
    return root


@pytest.mark.parametrize("algorithm,norm_type,params,model_tag,activations", [
    ("NN", None, {}, "NeuralNetwork", ["tanh", "logistic"]),
    ("NN", "WOE", {"NumHiddenLayers": 2, "NumHiddenNodes": [12, 8],
                   "ActivationFunc": ["relu", "linear"]},
     "NeuralNetwork", ["rectifier", "identity", "logistic"]),
    ("LR", None, {}, "RegressionModel", []),
    ("LR", "WOE", {}, "RegressionModel", []),
    ("NN", "WOE_ZSCORE", {"ActivationFunc": ["sigmoid"]}, "NeuralNetwork",
     ["logistic", "logistic"]),
    ("NN", "HYBRID", {}, "NeuralNetwork", ["tanh", "logistic"]),
    # The index kinds: category indices, bins' lower bounds, max-min, an appended index.
    ("NN", "DISCRETE_ZSCORE", {}, "NeuralNetwork", ["tanh", "logistic"]),
    ("NN", "MAXMIN_INDEX", {}, "NeuralNetwork", ["tanh", "logistic"]),
    ("NN", "WOE_ZSCALE_APPEND_INDEX", {}, "NeuralNetwork", ["tanh", "logistic"]),
])
def test_pmml_scores_raw_records_like_tarn_eval(tmp_path, jpmml_python, algorithm, norm_type,
                                                params, model_tag, activations):
    ms = prepared(tmp_path, "income", norm_type=norm_type, **params)
    if algorithm == "LR":
        edit_config(ms, **{"train.algorithm": "LR"})
    run("train", cwd=ms)
    out = run("export", "-t", "pmml", cwd=ms)
    pmml = ms / "pmmls" / "income0.pmml"
    assert str(pmml) in out.stderr
    assert sorted(p.name for p in (ms / "pmmls").iterdir()) == ["income0.pmml"]

    root = pmml_tree(pmml)
    selected = [c for c in columns(ms) if c["finalSelect"]]
    fields = root.findall("p:DataDictionary/p:DataField", PMML_NS)
    assert sorted(f.get("name") for f in fields) == sorted(
        [c["columnName"] for c in selected] + ["Target"])
    types = {c["columnName"]: c["columnType"] for c in selected}
    for f in fields[:-1]:
        assert f.get("optype") == ("categorical" if types[f.get("name")] == "C" else "continuous")
        assert {v.get("value") for v in f.findall("p:Value", PMML_NS)} >= {"?", ""}
    model = root.find(f"p:{model_tag}", PMML_NS)
    assert model is not None and model.get("modelName") == "income0"
    layers = model.findall("p:NeuralLayer", PMML_NS)
    assert [layer.get("activationFunction") for layer in layers] == activations
    if model_tag == "RegressionModel":
        assert model.get("normalizationMethod") == "logit"
        predictors = model.findall("p:RegressionTable/p:NumericPredictor", PMML_NS)
        assert len(predictors) == len(selected)
    derived = [d.get("name") for d in model.findall("p:LocalTransformations/p:DerivedField",
                                                    PMML_NS)]
    suffix = "_" + (norm_type or "ZSCALE").lower()
    assert all(name.split(suffix)[0] in types for name in derived)

    result = score_with_jpmml(jpmml_python, pmml, tmp_path)
    assert sorted(result["inputs"]) == sorted(types)
    assert result["outputs"] == ["RawResult", "FinalResult"]
    assert_scores_match(result, eval_scores(ms)["model0"])


def test_bagging_pmml_averages_the_models(tmp_path, jpmml_python):
    ms = prepared(tmp_path, "income", norm_type="ONEHOT", NumHiddenNodes=[8])
    edit_config(ms, **{"train.baggingNum": 2})
    run("train", cwd=ms)
    run("export", "-t", "pmml", cwd=ms)
    run("export", "-t", "baggingpmml", cwd=ms)
    assert sorted(p.name for p in (ms / "pmmls").iterdir()) == [
        "income.pmml", "income0.pmml", "income1.pmml"]
    assert not list((ms / "pmmls").glob("*.tmp.*"))

    root = pmml_tree(ms / "pmmls" / "income.pmml")
    segments = root.findall("p:MiningModel/p:Segmentation/p:Segment", PMML_NS)
    assert root.find("p:MiningModel/p:Segmentation", PMML_NS).get(
        "multipleModelMethod") == "average"
    assert [s.find("p:NeuralNetwork", PMML_NS).get("modelName") for s in segments] == [
        "income0", "income1"]

    scores = eval_scores(ms)
    bag = score_with_jpmml(jpmml_python, ms / "pmmls" / "income.pmml", tmp_path)
    assert_scores_match(bag, scores["mean"])
    second = score_with_jpmml(jpmml_python, ms / "pmmls" / "income1.pmml", tmp_path)
    assert_scores_match(second, scores["model1"])


def test_pmml_export_paths_and_refusals(tmp_path):
    ms = prepared(tmp_path, "income", epochs=1, ActivationFunc=["swish"])
    proc = run("export", "-t", "pmml", cwd=ms, check=False)
    assert proc.returncode != 0 and "run 'tarn train' first" in proc.stderr
    run("train", cwd=ms)
    proc = run("export", "-t", "pmml", cwd=ms, check=False)
    assert proc.returncode != 0
    assert "swish" in proc.stderr and "PMML" in proc.stderr and "model0.tarn" in proc.stderr
    assert not (ms / "pmmls").exists() or not list((ms / "pmmls").iterdir())

    edit_config(ms, **{"train.params.ActivationFunc": ["tanh"], "train.baggingNum": 2})
    run("train", cwd=ms)
    proc = run("export", "-t", "pmml", "-o", tmp_path / "one.pmml", cwd=ms, check=False)
    assert proc.returncode != 0 and "2 models" in proc.stderr
    run("export", "-t", "PMML", "-o", tmp_path / "out", cwd=ms)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["income0.pmml",
                                                                   "income1.pmml"]
    run("export", "-t", "baggingpmml", "-o", tmp_path / "adult.pmml", cwd=ms)
    root = pmml_tree(tmp_path / "adult.pmml")
    assert len(root.findall("p:MiningModel/p:Segmentation/p:Segment", PMML_NS)) == 2


# --------------------------------------------------------------------- ONNX: graph models

GRAPH_NN = {"NumHiddenLayers": 1, "NumHiddenNodes": [16], "ActivationFunc": ["relu"],
            "LearningRate": 0.002, "MiniBatchs": 128, "Propagation": "Adam"}
HASHED, BUCKETS, HASH_SEED = "Native_Country", 16, 3
# 1e-6 on the 0..1 score (x 1000 as EvalScore prints it). Both sides compute in float32, in
# different orders: on Adult the graphs differ by at most 3 float32 ulps (1.8e-7).
GRAPH_TOLERANCE = 0.001


@pytest.fixture(scope="module")
def graph_normalized(tmp_path_factory):
    """Adult through init, stats, norm (ZSCALE_INDEX: categorical columns as their category
    index; Native_Country hashed into 16 buckets) and varsel, for the graph models."""
    ms = income_with_hashed_column(tmp_path_factory.mktemp("graph-onnx"), "adult", "ZSCALE_INDEX",
                                   HASHED, BUCKETS, **{"varSelect.filterNum": 50, **INCOME_EVAL_SET})
    run("norm", f"-Dtarn.norm.id-hash-seed={HASH_SEED}", cwd=ms)
    run("varsel", cwd=ms)
    return ms


def sidecar_id(rule, raw, missing_values):
    """The id the sidecar's rule gives a raw field, computed here from the sidecar alone."""
    if raw in missing_values:
        return rule["missingId"]
    if rule["kind"] == "hash":
        return category_hash64(raw, rule["hashSeed"]) % rule["buckets"]
    for i, group in enumerate(rule["categories"]):
        if raw in group:
            return i
    return rule["missingId"]


def raw_eval_rows():
    data = EXAMPLE / "EvalSet1"
    names = (data / ".pig_header").read_text().strip().split("|")
    with gzip.open(data / "part-00000.gz", "rt") as f:
        return [dict(zip(names, line.rstrip("\n").split("|"))) for line in f if line.strip()]


@pytest.mark.parametrize("algorithm,params,ops", [
    # Shifu's WDL, embedding the hashed Native_Country (column 13) too.
    ("WDL", {"NumEmbedColumnIds": [1, 3, 5, 6, 7, 13], "NumEmbedOuputs": 8},
     {"Gather", "Concat", "Gemm", "Relu", "Sigmoid", "Add"}),
    ("DeepFM", {}, {"Gather", "Sub", "ReduceSum", "Mul", "Gemm", "Sigmoid"}),
    ("DCN", {"NumCrossLayers": 2}, {"Gather", "MatMul", "Mul", "Add", "Concat", "Gemm"}),
    ("TensorFlow", {"ModelGraph": "keras3_wide_deep.json"},
     {"Gather", "BatchNormalization", "Identity", "Gemm", "Sigmoid"}),
    ("TensorFlow", {"ModelGraph": "keras3_deepfm.json"},
     {"Gather", "Mul", "ReduceSum", "Gemm", "Sigmoid"}),
    # A Dense called twice (one kernel) and nested models inlined.
    ("TensorFlow", {"ModelGraph": "keras3_shared_nested.json"},
     {"Gather", "Concat", "Gemm", "Sigmoid"}),
])
def test_graph_model_onnx_scores_every_eval_row_like_tarn_eval(
        graph_normalized, tmp_path, ort_python, algorithm, params, ops):
    ms = tmp_path / "ms"
    shutil.copytree(graph_normalized, ms, ignore=shutil.ignore_patterns("models", "evals"))
    if "ModelGraph" in params:
        adult_keras_fixture(graph_normalized, params["ModelGraph"], ms / "graph.json")
        params = dict(params, ModelGraph="graph.json")
    edit_config(ms, **{"train.algorithm": algorithm, "train.params": dict(GRAPH_NN, **params),
                       "train.numTrainEpochs": 2})
    run("train", cwd=ms)
    header = model_file_header(ms / "models" / "model0.tarn")
    assert "graph" in header
    out = run("export", "-t", "onnx", cwd=ms)
    assert "graph model" in out.stderr
    model = ms / "onnx" / "model0.onnx"
    sidecar = json.loads((ms / "onnx" / "model0.onnx.json").read_text())

    # tarn's inputs for every eval row: the normalized vector, then one id per id column.
    normalized, scored = eval_inputs_and_scores(ms)
    names = normalized[0].split("|")
    rows = [line.split("|") for line in normalized[1:]]
    id_at = {n[:-len("#id")]: i for i, n in enumerate(names) if n.endswith("#id")}
    assert sorted(id_at) == sorted(c["name"] for c in header["idColumns"])
    width = sidecar["input"]["shape"][1]
    assert names[2:2 + width] == sidecar["inputNames"]
    feeds = {"input": [[float(v) for v in r[2:2 + width]] for r in rows]}

    # The sidecar says which column feeds which int64 input and how; its rules, applied here
    # to the raw eval records, give exactly the ids tarn computed.
    rules = sidecar["ids"]
    assert rules and len({r["input"] for r in rules}) == len(rules)
    kinds = {r["input"]: r["kind"] for r in rules}
    if algorithm == "WDL":
        assert kinds[HASHED] == "hash" and kinds["Race"] == "index"
        hashed = next(r for r in rules if r["input"] == HASHED)
        assert (hashed["buckets"], hashed["hashSeed"], hashed["missingId"]) == (
            BUCKETS, HASH_SEED, BUCKETS)
    raw = raw_eval_rows()
    assert len(raw) == EVAL_ROWS
    missing = set(sidecar["missingValues"])
    for rule in rules:
        tarn_ids = [int(r[id_at[rule["input"]]]) for r in rows]
        assert [sidecar_id(rule, record[rule["input"]], missing) for record in raw] == tarn_ids
        assert max(tarn_ids) < rule["vocabulary"]
        feeds[rule["input"]] = tarn_ids

    result = score_with_onnx(ort_python, model, feeds, tmp_path)
    assert result["inputs"] == [["input", ["?", width], "tensor(float)"]] + [
        [r["input"], ["?"], "tensor(int64)"] for r in rules]
    assert result["output"] == ["score", ["?", 1]]
    assert json.loads(result["metadata"]["tarn.idInputs"]) == [r["input"] for r in rules]
    if result["checker"] is not None:
        assert result["checker"] and result["ir_version"] == 8
        assert result["opset"] == [["", sidecar["opset"]]] == [["", 13]]
        assert ops <= set(result["ops"])

    assert_onnx_scores_match(result["scores"], scored, rows, GRAPH_TOLERANCE)
    if algorithm == "WDL":
        assert_out_of_range_ids_score_as_missing(ort_python, model, feeds, rules, tmp_path)


def assert_out_of_range_ids_score_as_missing(ort_python, model, feeds, rules, tmp_path):
    """An id outside [0, vocabulary) fed to the export scores as the column's missing id, as an
    unknown category does in tarn eval and tarn serve; ONNX's Gather would otherwise read a
    negative id from the end of the table (or fail on one past it)."""
    n = 200
    one_of_each_kind = {r["kind"]: r for r in rules}.values()  # an index and a hashed column
    for rule in one_of_each_kind:
        vocabulary, missing = rule["vocabulary"], rule["missingId"]
        variants = [missing, -1, -vocabulary, vocabulary, 10**12]
        sub = {name: [v for _ in variants for v in rows[:n]] for name, rows in feeds.items()}
        sub[rule["input"]] = [bad for bad in variants for _ in range(n)]
        scores = score_with_onnx(ort_python, model, sub, tmp_path)["scores"]
        as_missing = scores[:n]
        for k in range(1, len(variants)):
            assert scores[k * n:(k + 1) * n] == as_missing, (rule["input"], variants[k])


def test_graph_models_are_not_exported_to_pmml(graph_normalized, tmp_path):
    ms = tmp_path / "ms"
    shutil.copytree(graph_normalized, ms, ignore=shutil.ignore_patterns("models", "evals"))
    edit_config(ms, **{"train.algorithm": "WDL", "train.params": GRAPH_NN,
                       "train.numTrainEpochs": 1})
    run("train", cwd=ms)
    for kind in ("pmml", "baggingpmml"):
        proc = run("export", "-t", kind, cwd=ms, check=False)
        assert proc.returncode != 0
        assert "model0.tarn is a graph model" in proc.stderr
        assert "does not export graph models to PMML" in proc.stderr
        assert "tarn export -t onnx" in proc.stderr
    assert not (ms / "pmmls").exists() or not list((ms / "pmmls").iterdir())
