"""Graph models trained by `tarn train` on the shipped Adult data: Shifu's algorithm WDL,
DeepFM, DCN and Keras model.to_json() graphs (the committed fixtures), evaluated by `tarn eval`,
resumed bit-identically, and refused where tarn cannot take them yet (PMML export). In DIST:
test_distributed.py; ONNX export: test_export.py."""
import json
import shutil

import pytest

from conftest import (INCOME_EVAL_SET, ROOT, edit_config, epoch_lines, make_income_model_set,
                      model_file_header, run)

FIXTURES = ROOT / "tests" / "unit" / "model" / "testdata"
NN = {"NumHiddenLayers": 1, "NumHiddenNodes": [32], "ActivationFunc": ["relu"],
      "LearningRate": 0.002, "MiniBatchs": 128, "Propagation": "Adam"}


@pytest.fixture(scope="module")
def normalized(tmp_path_factory):
    """Adult through init, stats, norm (ZSCALE_INDEX: categorical columns as ids) and varsel."""
    ms = make_income_model_set(tmp_path_factory.mktemp("graph"), "adult")
    edit_config(ms, **{
        "normalize.normType": "ZSCALE_INDEX", "varSelect.filterNum": 50,
        **INCOME_EVAL_SET})
    for step in ("init", "stats", "norm", "varsel"):
        run(step, cwd=ms)
    return ms


def model_set(normalized, tmp_path, algorithm, params, epochs, name="ms"):
    ms = tmp_path / name
    shutil.copytree(normalized, ms, ignore=shutil.ignore_patterns("models", "modelsTmp", "evals"))
    edit_config(ms, **{"train.algorithm": algorithm, "train.params": params,
                       "train.numTrainEpochs": epochs})
    return ms


def eval_auc(ms):
    run("eval", cwd=ms)
    return json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())[
        "exactAreaUnderRoc"]


def adult_keras_fixture(normalized, name, dest):
    """A committed Keras fixture, its Embedding input_dims set to Adult's id counts (bins and
    the missing bin) and its numeric input to Adult's numeric width."""
    cols = {c["columnName"]: c for c in json.loads((normalized / "ColumnConfig.json").read_text())}
    model = json.loads((FIXTURES / name).read_text())
    for layer in model["config"]["layers"]:
        cfg = layer["config"]
        if layer["class_name"] == "Embedding":
            column = layer["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0]
            cfg["input_dim"] = len(cols[column]["columnBinning"]["binCategory"]) + 1
    dest.write_text(json.dumps(model))
    return dest


def test_shifu_wdl_trains_evaluates_and_resumes_bit_identically(normalized, tmp_path):
    params = dict(NN, NumEmbedColumnIds=[1, 3, 5, 6, 7], NumEmbedOuputs=8, L2Reg=1e-5)
    full = model_set(normalized, tmp_path, "WDL", params, 4, "full")
    out = run("train", cwd=full).stdout
    assert [e["epoch"] for e in epoch_lines(out)] == [1, 2, 3, 4]
    header = model_file_header(full / "models" / "model0.tarn")
    ops = [n["op"] for n in header["graph"]["nodes"]]
    assert ops.count("embedding") == 8 + 5  # the wide weights of 8 categorical inputs, 5 embeddings
    assert eval_auc(full) > 0.85

    part = model_set(normalized, tmp_path, "WDL", params, 2, "part")
    run("train", cwd=part)
    edit_config(part, **{"train.numTrainEpochs": 4, "train.isContinuous": True})
    out = run("train", cwd=part)
    assert "resumes" in out.stderr and [e["epoch"] for e in epoch_lines(out.stdout)] == [3, 4]
    assert (part / "models/model0.tarn").read_bytes() == (full / "models/model0.tarn").read_bytes()


@pytest.mark.parametrize("algorithm,extra", [("DeepFM", {}), ("DCN", {"NumCrossLayers": 2})])
def test_deepfm_and_dcn_train_and_evaluate(normalized, tmp_path, algorithm, extra):
    ms = model_set(normalized, tmp_path, algorithm, dict(NN, **extra), 3)
    run("train", cwd=ms)
    assert eval_auc(ms) > 0.85


@pytest.mark.parametrize("fixture", ["keras3_wide_deep.json", "keras3_deepfm.json"])
def test_keras_graphs_train_and_evaluate(normalized, tmp_path, fixture):
    ms = model_set(normalized, tmp_path, "TensorFlow", dict(NN, ModelGraph="graph.json"), 3)
    adult_keras_fixture(normalized, fixture, ms / "graph.json")
    run("train", cwd=ms)
    assert eval_auc(ms) > 0.8


def test_graph_models_are_refused_where_not_supported_yet(normalized, tmp_path):
    ms = model_set(normalized, tmp_path, "WDL", NN, 1)
    run("train", cwd=ms)
    out = run("export", "-t", "pmml", cwd=ms, check=False)
    assert out.returncode != 0 and "does not export graph models to PMML" in out.stderr
    # An embedded column that is not categorical is refused by the key.
    edit_config(ms, **{"train.params": dict(NN, NumEmbedColumnIds=[0])})
    out = run("train", cwd=ms, check=False)
    assert out.returncode != 0
    assert "train.params.NumEmbedColumnIds[0]: column 'Age' has no category ids" in out.stderr


def test_graph_bags_trained_in_parallel_equal_bags_one_after_another(normalized, tmp_path):
    # Each bag its own graph trainer and tables: the same bytes as one bag after another.
    params = dict(NN, NumEmbedColumnIds=[1, 3, 5], NumEmbedOuputs=4)
    runs = {}
    for parallel in (1, 2):
        ms = model_set(normalized, tmp_path, "WDL", params, 2, f"p{parallel}")
        edit_config(ms, **{"train.baggingNum": 2})
        run("train", "-Dtarn.threads=2", f"-Dtarn.train.parallel-bags={parallel}", cwd=ms)
        runs[parallel] = [(ms / f"models/model{b}.tarn").read_bytes() for b in range(2)]
    assert runs[1][0] != runs[1][1]
    assert runs[2] == runs[1]
