"""tarn eval against Shifu's eval: weights and inherited keys of eval sets, EvalScore and
EvalPerformance.json as Shifu writes them, the epoch line's errors, the HTML report."""
import json
import re
import shutil

import pytest

from conftest import EXAMPLE, SHARED, edit_config, epoch_lines, make_income_model_set, run
from test_shifu_compat import cancer_model_set

PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [20], "ActivationFunc": ["tanh"],
          "LearningRate": 0.002, "MiniBatchs": 128, "Propagation": "Adam"}
EVAL_ROWS = 16281


def trained(tmp_path, name, bags=1, epochs=2, **config):
    """The Adult model set, trained; its eval set as `tarn new` writes it but for the data."""
    ms = make_income_model_set(tmp_path, name)
    edit_config(ms, **{
        "train.algorithm": "NN", "train.params": PARAMS, "train.numTrainEpochs": epochs,
        "train.baggingNum": bags, "varSelect.filterNum": 20,
        "evals.0.dataSet.dataPath": str(EXAMPLE / "EvalSet1"),
        "evals.0.dataSet.headerPath": str(EXAMPLE / "EvalSet1" / ".pig_header"), **config})
    run("init", cwd=ms)
    run("stats", cwd=ms)
    run("norm", "-shuffle", "-Dshifu.norm.shuffle.size=2", cwd=ms)  # two workers in DIST
    run("varsel", cwd=ms)
    out = run("train", cwd=ms).stdout
    return ms, out


@pytest.fixture(scope="module")
def weighted_model(tmp_path_factory):
    """Trained with the training set's FnlWgt as weights, two bags."""
    ms, out = trained(tmp_path_factory.mktemp("eval"), "weighted", bags=2,
                      **{"dataSet.weightColumnName": "FnlWgt"})
    return ms, out


def eval_set(ms):
    return json.loads((ms / "ModelConfig.json").read_text())["evals"][0]


def read_score(ms):
    lines = (ms / "evals" / "Eval1" / "EvalScore").read_text().splitlines()
    return lines[0].split("|"), [line.split("|") for line in lines[1:]]


def performance(ms):
    return json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())


def eval_targets():
    """The Target field of every eval row, in input order."""
    import gzip
    with gzip.open(EXAMPLE / "EvalSet1" / "part-00000.gz", "rt") as f:
        return [line.rstrip("\n").split("|")[-1].strip() for line in f if line.strip()]


def exact_auc(pairs):
    """Mann-Whitney U / (P N) of (score, is_positive) pairs; ties count one half."""
    pairs = sorted(pairs)
    rank_sum, i, positives = 0.0, 0, sum(1 for _, p in pairs if p)
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        mid_rank = (i + 1 + j) / 2
        rank_sum += mid_rank * sum(1 for _, p in pairs[i:j] if p)
        i = j
    negatives = len(pairs) - positives
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def trapezoid(points):
    return sum((y1 + y0) * (x1 - x0) / 2 for (x0, y0), (x1, y1) in zip(points, points[1:]))


# ---- item 4: eval weights and inherited keys ----

def test_eval_set_without_weight_column_weighs_rows_one(weighted_model):
    ms, _ = weighted_model
    ev = eval_set(ms)
    # What `tarn new` writes: no weight column, blank target, empty tags.
    assert ev["dataSet"]["weightColumnName"] == "" and ev["dataSet"]["targetColumnName"] == ""
    assert ev["dataSet"]["posTags"] == [] and ev["dataSet"]["negTags"] == []
    out = run("eval", cwd=ms).stdout
    header, rows = read_score(ms)
    # The target and tags are the training set's; the weight is 1.0, not FnlWgt.
    assert header[:2] == ["Target", "weight"]
    assert len(rows) == EVAL_ROWS and {r[1] for r in rows} == {"1.0"}
    assert {r[0] for r in rows} == {">50K", "<=50K"}
    perf = performance(ms)
    assert perf["weightedAreaUnderRoc"] == perf["areaUnderRoc"]
    assert perf["exactWeightedAreaUnderRoc"] == perf["exactAreaUnderRoc"]
    assert perf["gains"][0]["weightedTp"] + perf["gains"][0]["weightedFn"] == sum(
        1 for r in rows if r[0] == ">50K")
    assert not list((ms / "evals" / "Eval1").glob("*_weighted_*.csv"))  # Shifu's hasWeight
    assert "eval Eval1: 16281 rows" in out

    # Naming the weight column weighs the rows by it.
    edit_config(ms, **{"evals.0.dataSet.weightColumnName": "FnlWgt"})
    try:
        run("eval", cwd=ms)
        header, rows = read_score(ms)
        assert header[:2] == ["Target", "FnlWgt"]
        assert len({r[1] for r in rows}) > 1000
        perf = performance(ms)
        assert perf["exactWeightedAreaUnderRoc"] != perf["exactAreaUnderRoc"]
        total = perf["gains"][0]
        weight_sum = sum(float(r[1]) for r in rows)
        assert abs(total["weightedTp"] + total["weightedFn"] + total["weightedFp"] +
                   total["weightedTn"] - weight_sum) < 1e-6 * weight_sum
        assert list((ms / "evals" / "Eval1").glob("*_weighted_roc.csv"))
    finally:
        edit_config(ms, **{"evals.0.dataSet.weightColumnName": ""})


def test_eval_set_errors_name_its_own_keys(weighted_model, tmp_path):
    ms = tmp_path / "ms"
    shutil.copytree(weighted_model[0], ms)
    edit_config(ms, **{"evals.0.dataSet.targetColumnName": "Outcome"})
    proc = run("eval", cwd=ms, check=False)
    assert proc.returncode != 0
    assert "evals[0].dataSet.targetColumnName 'Outcome'" in proc.stderr, proc.stderr
    edit_config(ms, **{"evals.0.dataSet.targetColumnName": " ",  # blank: the training set's
                       "evals.0.dataSet.posTags": ["yes"], "evals.0.dataSet.negTags": ["no"]})
    proc = run("eval", cwd=ms, check=False)
    assert proc.returncode != 0
    assert "evals[0].dataSet.posTags" in proc.stderr and "'Target'" in proc.stderr, proc.stderr
    edit_config(ms, **{"evals.0.dataSet.posTags": [], "evals.0.dataSet.negTags": [],
                       "evals.0.dataSet.weightColumnName": "Weight"})
    proc = run("eval", cwd=ms, check=False)
    assert proc.returncode != 0
    assert "evals[0].dataSet.weightColumnName 'Weight'" in proc.stderr, proc.stderr


# ---- item 5: EvalScore and EvalPerformance.json as Shifu writes them ----

def test_eval_score_and_performance_as_shifu_writes_them(weighted_model):
    ms, _ = weighted_model
    out = run("eval", cwd=ms).stdout
    header, rows = read_score(ms)
    assert header == ["Target", "weight", "mean", "max", "min", "median", "model0", "model1"]
    scores = [[float(v) for v in r[2:]] for r in rows]
    # Full precision, Java's Double.toString: a leading zero, no 4-decimal rounding.
    assert not any(v.startswith(".") for r in rows for v in r[2:])
    # The gain chart CSVs too, as Shifu 0.12.0 writes them (0.2379, not .2379).
    roc_csv = (ms / "evals" / "Eval1" / "Eval1_unit_wise_roc.csv").read_text().splitlines()
    assert roc_csv[0].startswith("ActionRate,WeightedActionRate,Recall")
    cells = [v for line in roc_csv[1:] for v in line.split(",")]
    assert len(cells) > 50 and not any(v.startswith(".") for v in cells)
    assert any(v.startswith("0.") for v in cells)
    assert sum(1 for r in rows if len(r[2].split(".")[1]) > 4) > EVAL_ROWS // 2
    for s in scores[:200]:
        assert abs(s[0] - (s[4] + s[5]) / 2) < 1e-6 * max(1.0, s[0])  # mean of the two bags
        assert s[1] == max(s[4:]) and s[2] == min(s[4:])
    # In input order (Shifu LOCAL's order; -sort gives Eval.pig's).
    assert [r[0] for r in rows] == eval_targets()

    # The exact areas are the true ones, from EvalScore's own figures.
    perf = performance(ms)
    pairs = [(float(r[2]), r[0] == ">50K") for r in rows]
    assert abs(perf["exactAreaUnderRoc"] - exact_auc(pairs)) < 1e-9
    # Shifu's areas are trapezoids over its bucket lists.
    roc = [(p["fpr"], p["recall"]) for p in perf["roc"]]
    pr = [(p["recall"], p["precision"]) for p in perf["pr"]]
    assert len(roc) == len(pr) == 11 and roc[0] == (0.0, 0.0) and roc[-1] == (1.0, 1.0)
    assert abs(perf["areaUnderRoc"] - trapezoid(roc)) < 1e-12
    assert abs(perf["areaUnderPr"] - trapezoid(pr)) < 1e-12
    assert perf["areaUnderRoc"] < perf["exactAreaUnderRoc"]  # the curve bends inside buckets
    # Both are printed.
    m = re.search(r"AUC ([\d.]+) \(Shifu's, 10 buckets; exact ([\d.]+)\)", out)
    assert m and float(m.group(1)) == round(perf["areaUnderRoc"], 4), out
    assert float(m.group(2)) == round(perf["exactAreaUnderRoc"], 4)

    # More buckets bring Shifu's area towards the exact one.
    edit_config(ms, **{"evals.0.performanceBucketNum": 100})
    try:
        run("eval", cwd=ms)
        fine = performance(ms)
        assert len(fine["roc"]) == 101
        assert perf["areaUnderRoc"] < fine["areaUnderRoc"] <= fine["exactAreaUnderRoc"] + 1e-9
        assert fine["exactAreaUnderRoc"] == perf["exactAreaUnderRoc"]
    finally:
        edit_config(ms, **{"evals.0.performanceBucketNum": 10})


def test_eval_score_in_input_order_unless_sort_is_asked(weighted_model):
    ms, _ = weighted_model
    run("eval", "-score", cwd=ms)
    _, unsorted = read_score(ms)
    assert [r[0] for r in unsorted] == eval_targets()
    run("eval", "-score", "-nosort", cwd=ms)  # Shifu's flag for input order is accepted
    assert read_score(ms)[1] == unsorted
    run("eval", "-score", "-sort", cwd=ms)
    _, rows = read_score(ms)
    assert sorted(map(tuple, rows)) == sorted(map(tuple, unsorted))  # the same rows, reordered
    means = [float(r[2]) for r in rows]
    assert means == sorted(means, reverse=True)  # by the mean, highest first, as Eval.pig
    # Ties keep their input order: the sort is stable, so reruns give the same file.
    score_file = ms / "evals" / "Eval1" / "EvalScore"
    before = score_file.read_bytes()
    run("eval", "-score", "-sort", cwd=ms)
    assert score_file.read_bytes() == before


def test_cancer_judgement_eval_as_shifu(tmp_path):
    """Shifu's example: its eval sets name no weight column (null) while training weighs by
    column_3, and their bucketed areaUnderRoc lies below the exact AUC of a strong model
    (Shifu reports 0.9345 where the exact AUC is 0.977)."""
    ms, _ = cancer_model_set(tmp_path)
    example = SHARED / "datasets" / "shifu-examples" / "cancer-judgement" / "DataStore"
    edit_config(ms, **{"dataSet.weightColumnName": "column_3", "train.numTrainEpochs": 40,
                       "evals.0.dataSet.headerPath": str(example / "EvalSet1" / ".pig_header"),
                       "evals.1.dataSet.headerPath": str(example / "EvalSet1" / ".pig_header")})
    for step in ("init", "stats", "norm", "varsel", "train"):
        run(step, cwd=ms)
    run("eval", "-run", "EvalA", cwd=ms)
    lines = (ms / "evals" / "EvalA" / "EvalScore").read_text().splitlines()
    assert lines[0].split("|")[:2] == ["diagnosis", "weight"]
    assert {line.split("|")[0] for line in lines[1:]} == {"M", "B"}
    assert {line.split("|")[1] for line in lines[1:]} == {"1.0"}
    perf = json.loads((ms / "evals" / "EvalA" / "EvalPerformance.json").read_text())
    assert perf["exactAreaUnderRoc"] > 0.95
    assert perf["areaUnderRoc"] < perf["exactAreaUnderRoc"] - 0.01
    assert perf["weightedAreaUnderRoc"] == perf["areaUnderRoc"]


# ---- item 6: the epoch line ----

def test_epoch_line_prints_shifus_errors_beside_tarns_loss(weighted_model, tmp_path):
    _, out = weighted_model
    lines = epoch_lines(out)
    # Each line names its bag (bags training in parallel interleave their lines).
    assert sorted((e["bag"], e["epoch"]) for e in lines) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    # Shifu's error is a plain mean squared error: its in-memory data drops the weight
    # (FnlWgt, ~2e5 here), which tarn's weighted loss keeps.
    assert all(0.05 < e["train_error"] < 0.25 and 0 < e["train_loss"] < 1 for e in lines)

    # Unweighted with squared loss, Shifu's error is twice tarn's loss (tarn minimizes half
    # the squared error), in LOCAL and DIST alike.
    ms, local = trained(tmp_path, "squared", epochs=2,
                        **{"train.params": dict(PARAMS, Loss="squared")})
    for e in epoch_lines(local):
        assert abs(e["train_error"] - 2 * e["train_loss"]) < 2e-6, e
        assert abs(e["valid_error"] - 2 * e["valid_loss"]) < 2e-6, e
    shutil.rmtree(ms / "models")
    edit_config(ms, **{"basic.runMode": "DIST"})
    dist = run("train", "-Dtarn.cluster.backend=embedded", "-Dshifu.ps.instances=1",
               "-Dshifu.worker.instances.backup=0", cwd=ms).stdout
    dist_lines = epoch_lines(dist)
    assert len(dist_lines) == 2, dist
    for e in dist_lines:
        # Shifu averages the two workers' means; tarn's loss is one mean over both.
        assert abs(e["train_error"] - 2 * e["train_loss"]) < 0.01 * e["train_error"], e
        assert abs(e["valid_error"] - 2 * e["valid_loss"]) < 0.01 * e["valid_error"], e

    # Default (log) loss: Shifu still prints the squared error, near 0.1 on Adult.
    ms, out = trained(tmp_path, "log", epochs=2)
    for e in epoch_lines(out):
        assert 0.05 < e["train_error"] < 0.2 and e["train_loss"] > 2 * e["train_error"], e
        assert 0.05 < e["valid_error"] < 0.2, e
    model = (ms / "models" / "model0.tarn").read_bytes()
    header = json.loads(model[24:24 + int.from_bytes(model[12:16], "little")])
    assert abs(header["training"]["shifuValidError"] - epoch_lines(out)[-1]["valid_error"]) < 1e-9


# ---- item 18: the HTML report ----

def test_report_shows_ks_distributions_bags_and_the_model(weighted_model):
    ms, _ = weighted_model
    run("eval", cwd=ms)
    _, rows = read_score(ms)
    html = (ms / "evals" / "Eval1" / "Eval1_report.html").read_text()
    assert html.count("<svg") == 5
    assert "Score distribution of positives and negatives" in html
    m = re.search(r"<td>KS</td><td>([\d.]+) at score", html)
    assert m and 0.3 < float(m.group(1)) < 0.9
    # Each bag's AUC, computed from its own EvalScore column.
    for bag in (0, 1):
        auc = exact_auc([(float(r[6 + bag]), r[0] == ">50K") for r in rows])
        m = re.search(rf"<tr><td>model{bag}</td><td>([\d.]+)</td><td>([\d.]+)</td><td>2</td>", html)
        assert m, html
        assert abs(float(m.group(2)) - auc) < 6e-5
        assert float(m.group(1)) < float(m.group(2))
    assert re.search(r"\d+ inputs \u2192 20 tanh \u2192 1 sigmoid", html)
    assert "NN, 2 bags" in html and "2 epochs, seed" in html
