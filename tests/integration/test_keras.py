"""Keras models read natively: tests/keras/make_graphs.py builds a wide & deep model, a
DeepFM-like model, a Sequential MLP and a model with a Lambda in real Keras (Keras 3, and
Keras 2 through tf_keras), writes each model.to_json(), and `tarn keras describe` must read
every layer with the shape Keras gave it, and refuse the Lambda by its JSON path."""
import json
import subprocess

import pytest

from conftest import ROOT, python_with, run

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

    bad = out_dir / f"{prefix}unsupported_lambda.json"
    entries = json.loads(bad.read_text())["config"]["layers"]
    index = [e["config"]["name"] for e in entries].index("fm")
    proc = run("keras", "describe", bad, check=False)
    assert proc.returncode == 2
    assert (f"{bad}: config.layers[{index}] (Lambda 'fm'): Lambda layers hold Python code and "
            "are not supported") in proc.stderr


def test_reads_keras3_models(tmp_path, keras3_python):
    prefix, shapes = make_graphs(keras3_python, tmp_path)
    check_models(tmp_path, prefix, shapes, 3)


def test_reads_keras2_models(tmp_path, keras2_python):
    prefix, shapes = make_graphs(keras2_python, tmp_path, "--keras2")
    check_models(tmp_path, prefix, shapes, 2)


def test_describe_usage_and_missing_file(tmp_path):
    proc = run("keras", "describe", tmp_path / "absent.json", check=False)
    assert proc.returncode == 1 and "absent.json" in proc.stderr
    proc = run("keras", "explain", "x", check=False)
    assert proc.returncode == 2 and "usage: tarn keras describe FILE" in proc.stderr
