"""varsel by sensitivity (filterBy SE and ST) on the shipped Adult data and Shifu's cancer example.

The reference below re-implements Shifu's VarSelectMapper/VarSelectReducer in Python from the
model file and the normalized shards: the first layer's sums once per row, each column's terms
subtracted from them (CacheFlatNetwork), d = full - perturbed (SE) or target - perturbed (ST),
columns ranked by rms = sqrt(sum d^2 / n).
"""
import json
import math
import shutil
import struct
from pathlib import Path

import pytest

from conftest import (INCOME_EVAL_SET, columns, edit_config, make_income_model_set,
                      read_shard, run)
from test_shifu_compat import cancer_model_set

SMALL_NN = {"NumHiddenLayers": 1, "NumHiddenNodes": [8], "ActivationFunc": ["tanh"],
            "LearningRate": 0.005, "MiniBatchs": 128, "Propagation": "Adam"}


def read_model(path):
    data = Path(path).read_bytes()
    assert data[:8] == b"TARNMODL"
    _version, json_len, count = struct.unpack_from("<IIQ", data, 8)
    header = json.loads(data[24:24 + json_len])
    params = struct.unpack_from(f"<{count}f", data, 24 + json_len)
    return header, list(params)


ACTIVATIONS = {"tanh": math.tanh, "sigmoid": lambda z: 1 / (1 + math.exp(-z)),
               "linear": lambda z: z, "relu": lambda z: max(0.0, z)}


def shifu_sensitivity(model_set):
    """{column name: (mean, rms, variance)} for SE and for ST, as Shifu computes them."""
    header, params = read_model(model_set / "models" / "model0.tarn")
    layers = header["spec"]["layers"]
    names = [c["columnName"] for c in header["columns"]]
    # Offsets of each layer's W (outputs x inputs, row-major) and b.
    offsets, at = [], 0
    for layer in layers:
        w = at
        at += layer["inputs"] * layer["outputs"]
        offsets.append((w, at))
        at += layer["outputs"]
    rows = []
    for shard in sorted((model_set / "tmp" / "NormalizedData").glob("part-*.tshard")):
        schema, shard_rows = read_shard(shard)
        slots, pos = {}, 0
        for f in schema["features"]:
            slots[f["name"]] = list(range(pos, pos + f.get("width", 1)))
            pos += f.get("width", 1)
        picks = [slots[n] for n in names]
        for r in shard_rows:
            rows.append(([[r[j] for j in p] for p in picks], r[-2]))

    first_w, first_b = offsets[0]
    n_in, n_hidden = layers[0]["inputs"], layers[0]["outputs"]
    act0 = ACTIVATIONS[layers[0]["activation"]]

    def rest(z1):  # from the first layer's sums to the score
        out = [act0(z) for z in z1]
        for k in range(1, len(layers)):
            w, b = offsets[k]
            n_i, act = layers[k]["inputs"], ACTIVATIONS[layers[k]["activation"]]
            out = [act(params[b + o] + sum(params[w + o * n_i + i] * out[i] for i in range(n_i)))
                   for o in range(layers[k]["outputs"])]
        return out[0]

    sums = {kind: [[0.0, 0.0] for _ in names] for kind in ("SE", "ST")}
    for values, target in rows:
        flat = [v for col in values for v in col]
        terms = [[params[first_w + h * n_in + j] * flat[j] for j in range(n_in)]
                 for h in range(n_hidden)]
        z1 = [params[first_b + h] + sum(terms[h]) for h in range(n_hidden)]
        full = rest(z1)
        j0 = 0
        for c, col in enumerate(values):
            cut = [z1[h] - sum(terms[h][j0:j0 + len(col)]) for h in range(n_hidden)]
            j0 += len(col)
            perturbed = rest(cut)
            for kind, diff in (("SE", full - perturbed), ("ST", target - perturbed)):
                sums[kind][c][0] += abs(diff)
                sums[kind][c][1] += diff * diff
    out = {}
    for kind, per_column in sums.items():
        out[kind] = {}
        for name, (s_abs, s_sq) in zip(names, per_column):
            mean, ms = s_abs / len(rows), s_sq / len(rows)
            out[kind][name] = (mean, math.sqrt(ms), ms - mean * mean)
    return out


def read_report(path):
    """The se report: [(columnNum, name, mean, rms, variance)] in file order."""
    out = []
    for line in Path(path).read_text().splitlines():
        num, name, mean, rms, var = line.split("\t")
        out.append((int(num), name, float(mean), float(rms), float(var)))
    return out


def selected(model_set):
    return {c["columnName"] for c in columns(model_set) if c["finalSelect"]}


def trained_income(tmp_path, name="income", epochs=3):
    """Adult, all 14 columns selected by KS, then a small NN trained on them."""
    ms = make_income_model_set(tmp_path, name)
    edit_config(ms, **{"train.algorithm": "NN", "train.params": SMALL_NN,
                       "train.numTrainEpochs": epochs, "varSelect.filterNum": 50})
    for step in ("init", "stats", "norm", "varsel", "train"):
        run(step, cwd=ms)
    assert len(selected(ms)) == 14
    return ms


@pytest.fixture(scope="module")
def income_trained(tmp_path_factory):
    return trained_income(tmp_path_factory.mktemp("se"))


@pytest.fixture(scope="module")
def reference(income_trained):
    return shifu_sensitivity(income_trained)


@pytest.mark.parametrize("kind", ["SE", "ST"])
def test_ranking_is_shifus_formula_on_adult(income_trained, reference, tmp_path, kind):
    ms = tmp_path / "ms"
    shutil.copytree(income_trained, ms)
    edit_config(ms, **{"varSelect.filterBy": kind, "varSelect.filterNum": 6})
    out = run("varsel", cwd=ms).stdout
    assert "sensitivity of" in out
    report = read_report(ms / "varsel" / "se.1")  # se.0 would pair with the KS run's backup
    assert (ms / "tmp" / "varselectStats" / "se").read_text() == (ms / "varsel" / "se.1").read_text()
    assert (ms / "varsel" / "ColumnConfig.json.1").exists()
    assert len(report) == 14
    rms = [r[3] for r in report]
    assert rms == sorted(rms, reverse=True)
    want = reference[kind]
    for num, name, mean, r, var in report:
        assert columns(ms)[num]["columnName"] == name
        w_mean, w_rms, w_var = want[name]
        assert mean == pytest.approx(w_mean, rel=1e-5, abs=1e-9), name
        assert r == pytest.approx(w_rms, rel=1e-5, abs=1e-9), name
        assert var == pytest.approx(w_var, rel=1e-4, abs=1e-9), name
    # The selection is the 6 columns whose removal moves the score (SE) or the error (ST) most.
    ranked = sorted(want, key=lambda n: -want[n][1])
    assert want[ranked[5]][1] > want[ranked[6]][1] * (1 + 1e-5), "near tie at the cut"
    assert selected(ms) == set(ranked[:6])
    history = (ms / "varsel" / "varsel.history").read_text()
    assert f"filterBy={kind} selected=6" in history


def test_selection_does_not_depend_on_thread_count(income_trained, tmp_path):
    reports, selections = [], []
    for threads in (1, 3):
        ms = tmp_path / f"t{threads}"
        shutil.copytree(income_trained, ms)
        edit_config(ms, **{"varSelect.filterBy": "SE", "varSelect.filterOutRatio": 0.3,
                           "varSelect.filterNum": -1})
        run("varsel", f"-Dtarn.threads={threads}", cwd=ms)
        reports.append((ms / "varsel" / "se.1").read_bytes())
        selections.append(selected(ms))
    assert reports[0] == reports[1]
    assert selections[0] == selections[1]
    assert len(selections[0]) == int(14 * 0.7)  # all but filterOutRatio of the model's inputs


def test_columns_chosen_by_se_train_a_better_model_than_the_rest(income_trained, tmp_path):
    ms = tmp_path / "ms"
    shutil.copytree(income_trained, ms)
    edit_config(ms, **{"varSelect.filterBy": "SE", "varSelect.filterNum": 4,
                       **INCOME_EVAL_SET})
    run("varsel", cwd=ms)
    report = read_report(ms / "varsel" / "se.1")
    top = [r[1] for r in report[:4]]
    bottom = [r[1] for r in report[-4:]]
    assert selected(ms) == set(top)

    def auc_with(names):
        cc = json.loads((ms / "ColumnConfig.json").read_text())
        for c in cc:
            c["finalSelect"] = c["columnName"] in names
        (ms / "ColumnConfig.json").write_text(json.dumps(cc))
        run("train", cwd=ms)
        run("eval", cwd=ms)
        return json.loads((ms / "evals/Eval1/EvalPerformance.json").read_text())["areaUnderRoc"]

    auc_top, auc_bottom = auc_with(top), auc_with(bottom)
    assert auc_top > auc_bottom + 0.05, (top, auc_top, bottom, auc_bottom)


def test_force_select_postcorrelation_se_and_report_only(income_trained, tmp_path):
    ms = tmp_path / "ms"
    shutil.copytree(income_trained, ms)
    cc = json.loads((ms / "ColumnConfig.json").read_text())
    for c in cc:
        if c["columnName"] == "Race":
            c["columnFlag"] = "ForceSelect"
    (ms / "ColumnConfig.json").write_text(json.dumps(cc))
    run("stats", "-c", cwd=ms)
    edit_config(ms, **{"varSelect.filterBy": "SE", "varSelect.filterNum": 5,
                       "varSelect.correlationThreshold": 0.8,
                       "varSelect.postCorrelationMetric": "SE"})
    run("varsel", cwd=ms)
    rms = {r[1]: r[3] for r in read_report(ms / "varsel" / "se.1")}
    chosen = selected(ms)
    assert len(chosen) == 5 and "Race" in chosen
    # Of each pair correlated above 0.8 (Education/Education_Num, Maried_Status/Relationship
    # on Adult), most correlated first, the column with the smaller rms is dropped.
    lines = (ms / "correlation.csv").read_text().splitlines()
    names = lines[0].split(",")[1:]
    pairs = sorted(((abs(float(v)), names[i], names[j])
                    for i, line in enumerate(lines[1:]) for j, v in enumerate(line.split(",")[1:])
                    if j > i and abs(float(v)) > 0.8), reverse=True)
    assert len(pairs) >= 2
    dropped = set()
    for _r, a, b in pairs:
        if a not in dropped and b not in dropped:
            dropped.add(min((a, b), key=lambda n: rms[n]))
    assert not dropped & chosen
    others = sorted((n for n in rms if n != "Race" and n not in dropped), key=lambda n: -rms[n])
    assert chosen == {"Race", *others[:4]}

    before = (ms / "ColumnConfig.json").read_text()
    edit_config(ms, **{"varSelect.filterEnable": False})
    run("varsel", cwd=ms)
    assert (ms / "ColumnConfig.json").read_text() == before
    assert (ms / "varsel" / "se.2").exists()


def test_varsel_trains_the_model_when_none_exists(tmp_path):
    ms = make_income_model_set(tmp_path)
    edit_config(ms, **{"train.algorithm": "NN", "train.params": SMALL_NN,
                       "train.numTrainEpochs": 2, "train.baggingNum": 3,
                       "varSelect.filterBy": "ST", "varSelect.filterNum": 5})
    for step in ("init", "stats", "norm"):
        run(step, cwd=ms)
    proc = run("varsel", cwd=ms)
    assert proc.stdout.count("Training Error:") == 2  # one bag, all epochs
    model = read_model(ms / "models" / "model0.tarn")[0]
    assert len(model["columns"]) == 14  # every candidate: none was selected yet
    assert not (ms / "models" / "model1.tarn").exists()
    assert len(selected(ms)) == 5
    assert len(read_report(ms / "varsel" / "se.0")) == 14
    # A second run reuses model0 (shifu.varsel.se.reuse, true by default in tarn) ...
    again = run("varsel", cwd=ms)
    assert "Training Error:" not in again.stdout
    # ... unless told to retrain as Shifu does by default; it then trains on the 5 selected.
    retrained = run("varsel", "-Dshifu.varsel.se.reuse=false", cwd=ms)
    assert retrained.stdout.count("Training Error:") == 2
    assert len(read_model(ms / "models" / "model0.tarn")[0]["columns"]) == 5
    assert len(selected(ms)) == 5


def test_sensitivity_errors_name_the_problem(tmp_path):
    ms = make_income_model_set(tmp_path)
    edit_config(ms, **{"varSelect.filterBy": "SE", "train.algorithm": "GBT"})
    for step in ("init", "stats", "norm"):
        run(step, cwd=ms)
    proc = run("varsel", cwd=ms, check=False)
    assert proc.returncode != 0 and "NN, LR or TensorFlow" in proc.stderr
    edit_config(ms, **{"train.algorithm": "NN", "varSelect.filterBy": "SR"})
    proc = run("varsel", cwd=ms, check=False)
    assert proc.returncode != 0 and "SR" in proc.stderr
    help_text = run("varsel", "--help").stdout
    assert "SE" in help_text and "ST" in help_text and "varsel/se.N" in help_text


def test_se_on_shifus_cancer_judgement(tmp_path):
    ms, _ = cancer_model_set(tmp_path)
    # Shifu's network (2 x 45 sigmoid, Propagation Q), fewer epochs to keep the test short.
    edit_config(ms, **{"train.numTrainEpochs": 30, "varSelect.filterBy": "SE",
                       "varSelect.filterNum": 10})
    for step in ("init", "stats", "norm"):
        run(step, cwd=ms)
    run("varsel", cwd=ms)
    report = read_report(ms / "varsel" / "se.0")
    assert len(report) == 30
    want = shifu_sensitivity(ms)["SE"]
    for _num, name, mean, rms, _var in report:
        assert rms == pytest.approx(want[name][1], rel=1e-5, abs=1e-9), name
        assert mean == pytest.approx(want[name][0], rel=1e-5, abs=1e-9), name
    assert selected(ms) == {r[1] for r in report[:10]}
