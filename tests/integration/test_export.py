"""tarn export: ONNX models that score exactly like tarn eval, and Shifu's columnstats CSV."""
import csv
import json
import subprocess

import pytest

from conftest import EXAMPLE, columns, edit_config, make_income_model_set, python_with, run

SEED_PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [50], "ActivationFunc": ["tanh"],
               "LearningRate": 0.002, "MiniBatchs": 128, "RegularizedConstant": 0.01,
               "Propagation": "Adam"}
EVAL_ROWS = 16281
# EvalScore prints score x 1000 with 4 decimals: a 1e-5 agreement on the 0..1 score is 0.01
# of the printed value, plus half a unit of its last printed digit.
TOLERANCE = 0.011

SHIFU_COLUMNSTATS_HEADER = (
    "dataSet,columnFlag,columnName,columnNum,iv,ks,max,mean,median,min,missingCount,"
    "missingPercentage,stdDev,totalCount,distinctCount,weightedIv,weightedKs,weightedWoe,woe,"
    "skewness,kurtosis,columnType,finalSelect,psi,unitstats,version").split(",")

# Runs in the Python that has onnxruntime: scores the EvalNormalized rows with the model.
ORT_SCRIPT = r'''
import json, sys
import numpy as np
import onnxruntime as ort
model, vectors, out = sys.argv[1:4]
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
inp, outp = session.get_inputs()[0], session.get_outputs()[0]
result["input"] = [inp.name, [d if isinstance(d, int) else "?" for d in inp.shape]]
result["output"] = [outp.name, [d if isinstance(d, int) else "?" for d in outp.shape]]
result["metadata"] = session.get_modelmeta().custom_metadata_map
x = np.array(json.load(open(vectors)), dtype=np.float32)
result["scores"] = session.run([outp.name], {inp.name: x})[0][:, 0].astype(float).tolist()
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
        "evals.0.dataSet.dataPath": str(EXAMPLE / "EvalSet1"),
        "evals.0.dataSet.headerPath": str(EXAMPLE / "EvalSet1" / ".pig_header"),
        "evals.0.dataSet.targetColumnName": "Target",
        "evals.0.dataSet.posTags": [">50K"], "evals.0.dataSet.negTags": ["<=50K"]}
    if norm_type:
        changes["normalize.normType"] = norm_type
    edit_config(ms, **changes)
    for step in ("init", "stats", "norm", "varsel"):
        run(step, cwd=ms)
    return ms


def score_with_onnx(ort_python, model, vectors, tmp_path):
    vec_file, out_file, script = (tmp_path / "vectors.json", tmp_path / "ort.json",
                                  tmp_path / "ort_score.py")
    vec_file.write_text(json.dumps(vectors))
    script.write_text(ORT_SCRIPT)
    proc = subprocess.run([ort_python, str(script), str(model), str(vec_file), str(out_file)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out_file.read_text())


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

    run("eval", "-norm", cwd=ms)
    normalized = (ms / "evals" / "Eval1" / "EvalNormalized").read_text().splitlines()
    run("eval", "-score", "-nosort", cwd=ms)
    scored = (ms / "evals" / "Eval1" / "EvalScore").read_text().splitlines()
    assert len(normalized) == len(scored) == EVAL_ROWS + 1
    header = normalized[0].split("|")
    assert header[:2] == ["target", "weight"]
    assert scored[0].split("|")[:7] == ["target", "weight", "mean", "max", "min", "median",
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

    result = score_with_onnx(ort_python, model, vectors, tmp_path)
    assert result["input"] == ["input", ["?", width]]
    assert result["output"] == ["score", ["?", 1]]
    meta = result["metadata"]
    assert json.loads(meta["tarn.inputNames"]) == header[2:]
    assert json.loads(meta["tarn.inputColumns"]) == [c["columnName"] for c in sidecar["columns"]]
    if result["checker"] is not None:
        assert result["checker"] and result["ir_version"] == 8
        assert result["opset"] == [["", 13]]
        assert result["ops"] == ops

    onnx_scores = result["scores"]
    assert len(onnx_scores) == EVAL_ROWS
    worst = (0.0, -1)
    for i, (line, s) in enumerate(zip(scored[1:], onnx_scores)):
        fields = line.split("|")
        assert fields[0] == rows[i][0]  # same record order
        worst = max(worst, (abs(s * 1000 - float(fields[6])), i))
    assert worst[0] <= TOLERANCE, f"row {worst[1]}: ONNX and tarn eval differ by {worst[0]}"
    assert len({round(s, 4) for s in onnx_scores}) > 100  # a real model, not a constant


def test_onnx_export_paths_and_errors(tmp_path):
    ms = prepared(tmp_path, "income", epochs=1)
    proc = run("export", "-t", "onnx", cwd=ms, check=False)
    assert proc.returncode != 0 and "run 'tarn train' first" in proc.stderr

    proc = run("export", "-t", "pmml", cwd=ms, check=False)
    assert proc.returncode != 0
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
