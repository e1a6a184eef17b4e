"""Training without varsel, and every normType of Shifu's enum, on the shipped Adult example.

Expected values come from Shifu's formulas (Normalizer.java), computed here from
ColumnConfig.json and the raw rows, independently of tarn's own code.
"""
import bisect
import gzip
import json
import math

import pytest

from conftest import EXAMPLE, columns, edit_config, read_shard, run
from test_serving import Server, eval_records, eval_scores, model_columns, predict, prepared

MISSING_VALUES = {"", "*", "#", "?", "null", "~"}  # `tarn new`'s missingOrInvalidValues


def training_rows():
    """DataSet1 as lists of raw fields, in file order."""
    with gzip.open(EXAMPLE / "DataSet1" / "part-00000.gz", "rt") as f:
        return [line.rstrip("\n").split("|") for line in f]


def good_candidates(cols):
    """Shifu's CommonUtils.isGoodCandidate (binary target, no column flagged Candidate)."""
    def good(c):
        s, b = c["columnStats"], c["columnBinning"]
        bins = b.get("binCategory") if c["columnType"] == "C" else b.get("binBoundary")
        return (c.get("columnFlag") not in ("Target", "Meta", "ForceRemove", "Weight")
                and s.get("mean") is not None and s.get("stdDev") is not None and bins
                and (s.get("ks") or 0) > 0 and (s.get("iv") or 0) > 0)
    return [c["columnName"] for c in cols if good(c)]


# --- Shifu's Normalizer, for one column -------------------------------------------------------

def number(raw):
    if raw in MISSING_VALUES:
        return None
    try:
        v = float(raw)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


class Reference:
    """Normalizer.fullNormalize for one ColumnConfig entry."""

    def __init__(self, col, cutoff):
        self.c, self.cutoff = col, cutoff
        self.cat = col["columnType"] == "C"
        s, b = col["columnStats"], col["columnBinning"]
        self.mean, self.sd, self.min, self.max = s["mean"], s["stdDev"], s["min"], s["max"]
        self.woe, self.weighted_woe = s["woe"], s["weightedWoe"]
        self.b = b
        self.bounds = [float(x) for x in b.get("binBoundary") or []]
        self.groups = [g.split("@^") for g in b.get("binCategory") or []]
        self.nbins = len(self.groups) if self.cat else len(self.bounds)  # without missing

    def bin(self, raw):
        """BinUtils.getBinNum: (index or None, unseen)."""
        if self.cat:
            if raw in MISSING_VALUES:
                return None, False
            for i, g in enumerate(self.groups):
                if raw in g:
                    return i, False
            return None, True
        v = number(raw)
        if v is None:
            return None, False
        return max(0, bisect.bisect_right(self.bounds, v) - 1), False

    def zscore(self, v, mean=None, sd=None):
        mean = self.mean if mean is None else mean
        sd = self.sd if sd is None else sd
        v = min(v, mean + self.cutoff * sd)
        v = max(v, mean - self.cutoff * sd)
        return (v - mean) / sd if sd > 0.00001 else 0.0

    def value(self, raw):
        v = number(raw)
        return self.mean if v is None else v

    def pos_rate(self, raw):
        i, _ = self.bin(raw)
        return self.b["binPosRate"][-1 if i is None else i]

    def woe_of(self, raw, weighted):
        i, unseen = self.bin(raw)
        woes = self.b["binWeightedWoe" if weighted else "binCountWoe"]
        if unseen:  # tarn takes the column's WOE (Shifu with shifu.norm.unseen.value=true)
            return self.weighted_woe if weighted else self.woe
        return woes[-1 if i is None else i]

    def woe_zscore(self, raw, weighted):
        woes = self.b["binWeightedWoe" if weighted else "binCountWoe"]
        counts = [n + p for n, p in zip(self.b["binCountNeg"], self.b["binCountPos"])]
        total = sum(counts)
        s = sum(w * n for w, n in zip(woes, counts))
        sq = sum(w * w * n for w, n in zip(woes, counts))
        mean, sd = s / total, math.sqrt(abs((sq - s * s / total) / (total - 1)))
        return self.zscore(self.woe_of(raw, weighted), mean, sd)

    def index(self, raw):
        i, _ = self.bin(raw)
        return self.nbins if i is None else i

    def discrete(self, raw):
        i, _ = self.bin(raw)
        if i is None or i >= len(self.bounds):
            v = self.mean
        elif i == 0:
            v = self.min
        else:
            v = self.bounds[i]
        return self.zscore(v)

    def maxmin(self, raw):
        span = self.max - self.min
        return (self.value(raw) - self.min) / span if span > 1e-7 else 0.0

    def onehot(self, raw):
        out = [0.0] * (self.nbins + 1)
        out[self.index(raw)] = 1.0
        return out

    def normalize(self, raw, norm_type):
        t, cat = norm_type, self.cat
        numeric_z = [self.zscore(self.value(raw))]
        if t in ("ZSCALE", "ZSCORE"):
            return [self.zscore(self.pos_rate(raw))] if cat else numeric_z
        if t in ("OLD_ZSCALE", "OLD_ZSCORE"):
            return [self.pos_rate(raw)] if cat else numeric_z
        if t in ("WOE", "WEIGHT_WOE"):
            return [self.woe_of(raw, t == "WEIGHT_WOE")]
        if t in ("WOE_ZSCALE", "WOE_ZSCORE", "WEIGHT_WOE_ZSCALE", "WEIGHT_WOE_ZSCORE"):
            return [self.woe_zscore(raw, t.startswith("WEIGHT"))]
        if t in ("HYBRID", "WEIGHT_HYBRID"):
            return [self.woe_of(raw, t == "WEIGHT_HYBRID")] if cat else numeric_z
        if t == "ONEHOT":
            return self.onehot(raw)
        if t == "ZSCALE_ONEHOT":
            return self.onehot(raw) if cat else numeric_z
        if t == "ASIS_WOE":
            return [self.woe_of(raw, False)] if cat else [self.value(raw)]
        if t == "ASIS_PR":
            return [self.pos_rate(raw)] if cat else [self.value(raw)]
        if t in ("DISCRETE_ZSCALE", "DISCRETE_ZSCORE"):
            return [self.zscore(self.pos_rate(raw))] if cat else [self.discrete(raw)]
        if cat and t in ("ZSCALE_INDEX", "ZSCORE_INDEX", "ZSCALE_ORDINAL", "WOE_INDEX",
                         "WOE_ZSCALE_INDEX", "MAXMIN_INDEX", "INDEX"):
            return [self.index(raw)]
        if t in ("ZSCALE_INDEX", "ZSCORE_INDEX", "ZSCALE_ORDINAL"):
            return numeric_z
        if t == "WOE_INDEX":
            return [self.woe_of(raw, False)]
        if t == "WOE_ZSCALE_INDEX":
            return [self.woe_zscore(raw, False)]
        if t == "MAXMIN_INDEX":
            return [self.maxmin(raw)]
        if t == "INDEX":
            return [self.index(raw)]
        if t in ("ZSCALE_APPEND_INDEX", "ZSCORE_APPEND_INDEX"):
            return [self.index(raw) if cat else numeric_z[0], self.index(raw)]
        if t == "WOE_APPEND_INDEX":
            return [self.woe_of(raw, False), self.index(raw)]
        if t == "WOE_ZSCALE_APPEND_INDEX":
            return [self.woe_zscore(raw, False), self.index(raw)]
        raise AssertionError(f"no reference for {t}")


INDEX_TYPES = {"ZSCALE_INDEX", "ZSCORE_INDEX", "ZSCALE_ORDINAL", "WOE_INDEX", "WOE_ZSCALE_INDEX",
               "MAXMIN_INDEX", "INDEX"}

FAMILIES = {
    "zscore": ["ZSCALE", "ZSCORE", "OLD_ZSCALE", "OLD_ZSCORE", "DISCRETE_ZSCALE",
               "DISCRETE_ZSCORE"],
    "woe": ["WOE", "WEIGHT_WOE", "WOE_ZSCALE", "WOE_ZSCORE", "WEIGHT_WOE_ZSCALE",
            "WEIGHT_WOE_ZSCORE", "HYBRID", "WEIGHT_HYBRID"],
    "index": sorted(INDEX_TYPES),
    "multi": ["ONEHOT", "ZSCALE_ONEHOT", "ZSCALE_APPEND_INDEX", "ZSCORE_APPEND_INDEX",
              "WOE_APPEND_INDEX", "WOE_ZSCALE_APPEND_INDEX"],
    "asis": ["ASIS_WOE", "ASIS_PR"],
}


@pytest.fixture(scope="module")
def sampled_stats(tmp_path_factory):
    """Adult after init and stats on a 30% sample, so that norm meets categories stats never saw."""
    ms = prepared(tmp_path_factory.mktemp("normtypes"), steps=("init",))
    edit_config(ms, **{"stats.sampleRate": 0.3})
    run("stats", cwd=ms)
    return ms


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_norm_types_follow_shifus_formulas(sampled_stats, family):
    ms = sampled_stats
    cols = columns(ms)
    cutoff = json.loads((ms / "ModelConfig.json").read_text())["normalize"]["stdDevCutOff"]
    rows = training_rows()
    target = len(rows[0]) - 1
    # The first 3000 rows, and every later one with an unseen category or a missing value.
    refs = {c["columnNum"]: Reference(c, cutoff) for c in cols if c["columnFlag"] != "Target"}
    special = [i for i, r in enumerate(rows) if i >= 3000 and any(
        r[n] in MISSING_VALUES or ref.bin(r[n])[1] for n, ref in refs.items())]
    checked = list(range(3000)) + special
    unseen = sum(1 for i in checked for n, ref in refs.items() if ref.bin(rows[i][n])[1])
    missing = sum(1 for i in checked for n in refs if rows[i][n] in MISSING_VALUES)
    assert unseen > 0 and missing > 1000, (unseen, missing)  # both paths are exercised

    for norm_type in FAMILIES[family]:
        edit_config(ms, **{"normalize.normType": norm_type})
        run("norm", cwd=ms)
        header, data = read_shard(ms / "tmp" / "NormalizedData" / "part-00000.tshard")
        assert len(data) == len(rows)
        feats = header["features"]
        assert [f["name"] for f in feats] == [c["columnName"] for c in cols
                                              if c["columnFlag"] != "Target"]
        for f in feats:
            ref = refs[f["columnNum"]]
            width = {"ONEHOT": ref.nbins + 1,
                     "ZSCALE_ONEHOT": ref.nbins + 1 if ref.cat else 1}.get(
                         norm_type, 2 if "APPEND_INDEX" in norm_type else 1)
            assert f["width"] == width, (norm_type, f)
            # Category (and bin) indices are marked for models that embed them.
            if norm_type == "INDEX" or (ref.cat and norm_type in INDEX_TYPES):
                slots = [0]
            elif "APPEND_INDEX" in norm_type:
                slots = [0, 1] if ref.cat and norm_type.startswith("ZS") else [1]
            else:
                slots = []
            assert f.get("indexSlots", []) == slots, (norm_type, f)
            if slots:
                assert f["indexCount"] == ref.nbins + 1
        offsets = [0]
        for f in feats:
            offsets.append(offsets[-1] + f["width"])
        worst = (0.0, None)
        for i in checked:
            raw, got = rows[i], data[i]
            assert got[-2] == (1.0 if raw[target] == ">50K" else 0.0)
            for k, f in enumerate(feats):
                want = refs[f["columnNum"]].normalize(raw[f["columnNum"]], norm_type)
                for w, g in zip(want, got[offsets[k]:offsets[k + 1]]):
                    err = abs(w - g) / max(1.0, abs(w))
                    if err > worst[0]:
                        worst = (err, (i, f["name"], raw[f["columnNum"]], w, g))
        assert worst[0] < 1e-5, (norm_type, worst)  # float32 output


def test_zscale_index_model_scores_raw_records_in_serve_as_in_eval(sampled_stats, tmp_path):
    ms = sampled_stats
    edit_config(ms, **{"normalize.normType": "ZSCALE_INDEX"})
    run("norm", cwd=ms)
    run("train", cwd=ms)
    expected = eval_scores(ms)
    records = eval_records()[:300]
    # An unseen and a missing category score as the missing bin's index, as training saw.
    odd = [dict(records[0], Work_Class="Space-Agency"), dict(records[1], Occupation="?")]
    server = Server("-m", ms)
    try:
        cols = model_columns(server, ms.name)
        got, _ = predict(server, ms.name, [{c: r[c] for c in cols} for r in records])
        odd_scores, _ = predict(server, ms.name, [{c: r[c] for c in cols} for r in odd])
        missing_scores, _ = predict(server, ms.name, [
            dict({c: records[0][c] for c in cols}, Work_Class="?"),
            dict({c: records[1][c] for c in cols}, Occupation="Space-Pilot")])
    finally:
        assert server.stop()[0] == 0
    worst = max(abs(g * 1000 - e) for g, e in zip(got, expected))
    assert worst <= 1e-3 + 5e-5, worst
    assert odd_scores == missing_scores
    assert len({round(s, 4) for s in got}) > 50

    # eval -norm writes the model's inputs of raw eval rows: Shifu's values, indices included.
    run("eval", "-norm", cwd=ms)
    lines = (ms / "evals" / "Eval1" / "EvalNormalized").read_text().splitlines()
    names = lines[0].split("|")[2:]
    assert names == cols
    cutoff = json.loads((ms / "ModelConfig.json").read_text())["normalize"]["stdDevCutOff"]
    refs = {c["columnName"]: Reference(c, cutoff) for c in columns(ms)}
    for record, line in zip(records, lines[1:]):
        values = [float(v) for v in line.split("|")[2:]]
        for name, value in zip(names, values):
            want = refs[name].normalize(record[name], "ZSCALE_INDEX")[0]
            assert abs(value - want) <= 1e-5 * max(1.0, abs(want)), (name, record[name])


def test_train_without_varsel_uses_every_good_candidate_as_shifu_does(tmp_path):
    ms = prepared(tmp_path, steps=())
    (ms / "columns" / "meta.column.names").write_text("FnlWgt\n")  # meta: not a candidate
    for step in ("init", "stats", "norm"):
        run(step, cwd=ms)
    cols = columns(ms)
    assert not any(c["finalSelect"] for c in cols)
    good = good_candidates(cols)
    assert "FnlWgt" not in good and "Target" not in good and len(good) == 13
    header, _ = read_shard(ms / "tmp" / "NormalizedData" / "part-00000.tshard")
    assert set(good) <= {f["name"] for f in header["features"]}  # norm wrote every one

    out = run("train", cwd=ms)
    assert ("no column has finalSelect: training on all 13 good candidate columns, "
            "as Shifu does") in out.stderr
    run("eval", cwd=ms)
    perf = json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())
    assert perf["areaUnderRoc"] > 0.85
    expected = eval_scores(ms)

    run("export", "-t", "onnx", cwd=ms)
    sidecar = json.loads((ms / "onnx" / "model0.onnx.json").read_text())
    assert [c["columnName"] for c in sidecar["columns"]] == good
    assert sidecar["input"]["shape"] == ["N", 13]
    base = tmp_path / "base"
    run("export", "-t", "serving", "-o", base, cwd=ms)
    records = eval_records()[:200]
    server = Server("--model-base", base, "--name", "income")
    try:
        assert model_columns(server, "income") == good  # exactly the good candidates, in order
        got, version = predict(server, "income", [{c: r[c] for c in good} for r in records])
    finally:
        assert server.stop()[0] == 0
    assert version == 1
    worst = max(abs(g * 1000 - e) for g, e in zip(got, expected))
    assert worst <= 1e-3 + 5e-5, worst
