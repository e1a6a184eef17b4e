"""Binning methods, category merging, weights and sampling, end to end on the Adult data."""
import json

import pytest

from conftest import columns, edit_config, make_income_model_set, run

ROWS = 32561
POSITIVES = 7841


def stats_with(tmp_path, name="m", **config):
    ms = make_income_model_set(tmp_path, name)
    edit_config(ms, **config)
    run("init", cwd=ms)
    run("stats", cwd=ms)
    return {c["columnName"]: c for c in columns(ms)}, ms


def spread(counts):
    return max(counts) / max(1, min(counts))


@pytest.mark.parametrize("method", ["EqualPositive", "EqualNegative", "EqualTotal"])
def test_equal_population_methods_balance_the_right_counts(tmp_path, method):
    cols, _ = stats_with(tmp_path, **{"stats.binningMethod": method})
    b = cols["hours_per_wk"]["columnBinning"]  # 96 distinct values, heavy tie at 40
    age = cols["Age"]["columnBinning"]
    pos, neg = age["binCountPos"][:-1], age["binCountNeg"][:-1]
    balanced = {"EqualPositive": pos, "EqualNegative": neg,
                "EqualTotal": [p + n for p, n in zip(pos, neg)]}[method]
    assert spread(balanced) < 1.6, (method, balanced)
    assert sum(age["binCountPos"]) == POSITIVES
    assert len(b["binBoundary"]) >= 3


def test_equal_interval_has_equal_widths(tmp_path):
    cols, _ = stats_with(tmp_path, **{"stats.binningMethod": "EqualInterval"})
    bounds = cols["Age"]["columnBinning"]["binBoundary"]
    assert bounds[0] == "-Infinity" and len(bounds) == 10
    widths = [b - a for a, b in zip(bounds[1:], bounds[2:])]
    assert max(widths) - min(widths) < 1e-9
    # Shifu: min + w/2 + k*w with w = (max - min) / (bins - 1), Age in [17, 90].
    assert bounds[1] == pytest.approx(17 + (90 - 17) / 9 / 2)


def test_unknown_binning_method_is_refused(tmp_path):
    ms = make_income_model_set(tmp_path)
    edit_config(ms, **{"stats.binningMethod": "EqualFrequency"})
    run("init", cwd=ms)
    proc = run("stats", cwd=ms, check=False)
    assert proc.returncode != 0 and "EqualFrequency" in proc.stderr


def test_cate_max_num_bin_merges_categories(tmp_path):
    cols, _ = stats_with(tmp_path, **{"stats.cateMaxNumBin": 4})
    occ = cols["Occupation"]["columnBinning"]
    assert occ["length"] == 4 and len(occ["binCategory"]) == 4
    merged = [c for c in occ["binCategory"] if "@^" in c]
    assert merged, occ["binCategory"]
    names = [n for c in occ["binCategory"] for n in c.split("@^")]
    assert len(names) == len(set(names)) == 14  # every occupation in exactly one bin
    rates = occ["binPosRate"][:-1]
    assert rates == sorted(rates)


def test_weighted_binning_uses_the_weight_column(tmp_path):
    cols, _ = stats_with(tmp_path, **{"dataSet.weightColumnName": "FnlWgt",
                                      "stats.binningMethod": "WeightEqualPositive"})
    assert cols["FnlWgt"]["columnFlag"] == "Weight" and cols["FnlWgt"]["columnType"] == "N"
    # Described as Shifu does (KS, IV, bins); varsel never selects it (test_shifu_compat).
    assert cols["FnlWgt"]["columnStats"]["ks"] is not None
    age = cols["Age"]
    wpos = age["columnBinning"]["binWeightedPos"][:-1]
    assert spread(wpos) < 1.6
    assert age["columnStats"]["weightedKs"] != age["columnStats"]["ks"]
    assert sum(age["columnBinning"]["binCountPos"]) == POSITIVES


def test_sample_rate_and_neg_only(tmp_path):
    cols, _ = stats_with(tmp_path, "half", **{"stats.sampleRate": 0.5})
    total = cols["Age"]["columnStats"]["totalCount"]
    assert abs(total - ROWS / 2) < 0.02 * ROWS
    cols, _ = stats_with(tmp_path, "negonly", **{"stats.sampleRate": 0.5, "stats.sampleNegOnly": True})
    b = cols["Age"]["columnBinning"]
    assert sum(b["binCountPos"]) == POSITIVES
    assert abs(sum(b["binCountNeg"]) - (ROWS - POSITIVES) / 2) < 0.02 * ROWS


def test_norm_sampling(tmp_path):
    _, ms = stats_with(tmp_path, **{"normalize.sampleRate": 0.25, "normalize.sampleNegOnly": True})
    run("norm", cwd=ms)
    from conftest import read_shard
    _, rows = read_shard(next((ms / "tmp" / "NormalizedData").glob("part-*.tshard")))
    positives = sum(1 for r in rows if r[-2] == 1.0)
    assert positives == POSITIVES
    assert abs((len(rows) - positives) - (ROWS - POSITIVES) / 4) < 0.02 * ROWS
