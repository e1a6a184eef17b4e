"""init, stats, norm and varsel end to end on the shipped Adult example."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import (EXAMPLE, columns, edit_config, make_income_model_set, read_gzip_lines,
                      read_shard, run)

ADULT_TRAIN_ROWS = 32561


def test_new_writes_shifu_layout(tmp_path):
    run("new", "m1", "-t", "TENSORFLOW", cwd=tmp_path)
    ms = tmp_path / "m1"
    mc = json.loads((ms / "ModelConfig.json").read_text())
    assert mc["train"]["algorithm"] == "TensorFlow"
    assert mc["train"]["params"]["ActivationFunc"] == ["relu"]
    for f in ["meta", "categorical", "forceselect", "forceremove"]:
        assert (ms / "columns" / f"{f}.column.names").exists()
    again = run("new", "m1", cwd=tmp_path, check=False)
    assert again.returncode != 0 and "already exists" in again.stderr


def test_full_pipeline_on_adult(income):
    run("init", cwd=income)
    cols = columns(income)
    assert [c["columnName"] for c in cols][-1] == "Target"
    by_name = {c["columnName"]: c for c in cols}
    assert by_name["Target"]["columnFlag"] == "Target"
    assert by_name["Age"]["columnType"] == "N"
    assert by_name["Work_Class"]["columnType"] == "C"
    assert by_name["Education"]["columnType"] == "C"

    run("stats", cwd=income)
    by_name = {c["columnName"]: c for c in columns(income)}
    age = by_name["Age"]
    st, bins = age["columnStats"], age["columnBinning"]
    assert st["totalCount"] == ADULT_TRAIN_ROWS
    assert 38.0 < st["mean"] < 39.0 and 13.0 < st["stdDev"] < 14.0
    assert st["min"] == 17 and st["max"] == 90
    assert sum(bins["binCountPos"]) + sum(bins["binCountNeg"]) == ADULT_TRAIN_ROWS
    assert len(bins["binCountPos"]) == bins["length"] + 1 == len(bins["binBoundary"]) + 1
    assert bins["binBoundary"][0] == "-Infinity"
    # EqualPositive: positives spread evenly over the bins (ties allowing).
    pos = bins["binCountPos"][:-1]
    assert max(pos) < 3 * min(pos)
    wc = by_name["Work_Class"]
    assert wc["columnStats"]["missingCount"] > 1000  # '?' is a missing value
    assert "Private" in wc["columnBinning"]["binCategory"]
    assert 5 <= wc["columnStats"]["distinctCount"] <= 10
    # The strongest Adult predictors.
    ks_rank = sorted((c for c in by_name.values() if c["columnStats"]["ks"] is not None),
                     key=lambda c: -c["columnStats"]["ks"])
    assert {ks_rank[0]["columnName"], ks_rank[1]["columnName"]} <= {
        "Relationship", "Maried_Status", "Education_Num", "Education", "Age"}

    run("norm", cwd=income)
    shards = sorted((income / "tmp" / "NormalizedData").glob("part-*.tshard"))
    assert len(shards) == 1
    header, rows = read_shard(shards[0])
    assert len(rows) == ADULT_TRAIN_ROWS
    assert header["normType"] == "ZSCALE"
    assert len(header["features"]) == 14
    assert sum(r[-2] for r in rows) == 7841  # positives
    assert all(r[-1] == 1.0 for r in rows)

    run("varsel", "-DignoredKey=1", cwd=income)
    selected = [c["columnName"] for c in columns(income) if c["finalSelect"]]
    assert len(selected) == 14  # `new` writes filterNum 200: every candidate
    edit_config(income, **{"varSelect.filterNum": -1})
    run("varsel", cwd=income)
    selected = [c["columnName"] for c in columns(income) if c["finalSelect"]]
    assert len(selected) == 13  # filterOutRatio 0.05 of 14 -> floor(13.3)
    listing = run("varsel", "-list", cwd=income).stdout
    assert "Relationship" in listing and "top by IV" in listing
    assert (income / "varsel" / "ColumnConfig.json.0").exists()
    assert "filterBy=KS" in (income / "varsel" / "varsel.history").read_text()
    run("varsel", "-reset", cwd=income)
    assert not any(c["finalSelect"] for c in columns(income))


@pytest.mark.parametrize("exact_mb", ["64", "0"], ids=["exact-values", "streaming-histogram"])
def test_results_do_not_depend_on_thread_count(tmp_path, exact_mb):
    outputs = []
    for threads in (1, 2):
        ms = make_income_model_set(tmp_path, f"t{threads}")
        opts = [f"-Dtarn.threads={threads}", "-Dtarn.data.chunk-bytes=65536",
                f"-Dtarn.stats.exact-values-mb={exact_mb}"]
        run("init", *opts, cwd=ms)
        run("stats", *opts, cwd=ms)
        run("norm", "-shuffle", "-Dshifu.norm.shuffle.size=3", *opts, cwd=tmp_path / f"t{threads}")
        cc = columns(ms)
        shards = [p.read_bytes() for p in sorted((ms / "tmp" / "NormalizedData").glob("part-*"))]
        outputs.append((json.dumps(cc), shards))
    assert outputs[0][0] == outputs[1][0]
    assert outputs[0][1] == outputs[1][1]


def test_shuffle_keeps_every_row(income):
    run("init", cwd=income)
    run("stats", cwd=income)
    run("norm", cwd=income)
    _, plain = read_shard(next((income / "tmp" / "NormalizedData").glob("part-*.tshard")))
    run("norm", "-shuffle", "-Dshifu.norm.shuffle.size=4", cwd=income)
    shards = sorted((income / "tmp" / "NormalizedData").glob("part-*.tshard"))
    assert len(shards) == 4
    shuffled = [r for s in shards for r in read_shard(s)[1]]
    assert len(shuffled) == len(plain)
    assert sorted(map(tuple, shuffled)) == sorted(map(tuple, plain))
    assert shuffled[:50] != plain[:50]
    sizes = [len(read_shard(s)[1]) for s in shards]
    assert min(sizes) > 0.2 * len(plain)


def test_text_format_is_shifus_layout(income):
    run("init", cwd=income)
    run("stats", cwd=income)
    edit_config(income, **{"dataSet.metaColumnNameFile": "columns/meta.column.names"})
    run("norm", "-format", "text", cwd=income)
    out = income / "tmp" / "NormalizedData"
    header = (out / ".pig_header").read_text().strip().split("|")
    assert header[-1] == "weight" and header[0] == "Age"
    lines = read_gzip_lines(out / "part-00000.gz")
    assert len(lines) == ADULT_TRAIN_ROWS
    fields = lines[0].split("|")
    assert len(fields) == 16
    assert fields[14] in ("0", "1") and float(fields[15]) == 1.0
    float(fields[0])


def test_text_format_keeps_the_weight_columns_raw_value(income):
    # Shifu's norm writes the weight column's own field raw (cancer-judgement: 17.99), and the
    # weight again last.
    edit_config(income, **{"dataSet.weightColumnName": "hours_per_wk"})
    run("init", cwd=income)
    run("stats", cwd=income)
    run("norm", "-format", "text", cwd=income)
    out = income / "tmp" / "NormalizedData"
    header = (out / ".pig_header").read_text().strip().split("|")
    at = header.index("hours_per_wk")
    raw = [line.split("|")[12].strip() for line in
           read_gzip_lines(EXAMPLE / "DataSet1" / "part-00000.gz")[:200]]
    lines = read_gzip_lines(out / "part-00000.gz")[:200]
    assert [line.split("|")[at] for line in lines] == raw
    assert [float(line.split("|")[-1]) for line in lines] == [float(v) for v in raw]


@pytest.mark.parametrize("norm_type,width", [("WOE", 14), ("ONEHOT", None), ("HYBRID", 14),
                                             ("ZSCALE_ONEHOT", None), ("WOE_ZSCORE", 14),
                                             ("ASIS_PR", 14), ("WEIGHT_WOE", 14),
                                             ("OLD_ZSCALE", 14), ("ASIS_WOE", 14)])
def test_every_norm_type_runs(income, norm_type, width):
    run("init", cwd=income)
    run("stats", cwd=income)
    edit_config(income, **{"normalize.normType": norm_type})
    run("norm", cwd=income)
    header, rows = read_shard(next((income / "tmp" / "NormalizedData").glob("part-*.tshard")))
    features = sum(f["width"] for f in header["features"])
    if width is not None:
        assert features == width
    else:
        assert features > 14
    assert len(rows) == ADULT_TRAIN_ROWS
    assert all(len(r) == features + 2 for r in rows[:10])


def test_unknown_norm_type_is_refused(income):
    run("init", cwd=income)
    run("stats", cwd=income)
    # Not a member of Shifu's ModelNormalizeConf.NormType.
    edit_config(income, **{"normalize.normType": "WEIGHT_ZSCALE"})
    proc = run("norm", cwd=income, check=False)
    assert proc.returncode != 0
    assert "'WEIGHT_ZSCALE' is not one of Shifu's normalization types" in proc.stderr
    assert "WOE_ZSCALE_INDEX" in proc.stderr  # the message lists what is accepted


def test_correlation_and_correlation_filter(income):
    run("init", cwd=income)
    run("stats", cwd=income)
    run("stats", "-c", cwd=income)
    lines = (income / "correlation.csv").read_text().splitlines()
    names = lines[0].split(",")[1:]
    assert len(names) == 14 and len(lines) == 15
    i, j = names.index("Education"), names.index("Education_Num")
    # Education (categorical, as positive rate) and Education_Num carry the same information.
    assert float(lines[i + 1].split(",")[j + 1]) > 0.8
    assert float(lines[i + 1].split(",")[i + 1]) == pytest.approx(1.0)
    edit_config(income, **{"varSelect.correlationThreshold": 0.8, "varSelect.filterNum": 50})
    run("varsel", cwd=income)
    selected = {c["columnName"] for c in columns(income) if c["finalSelect"]}
    assert not {"Education", "Education_Num"} <= selected


@pytest.mark.parametrize("filter_by", ["KS", "IV", "MIX", "PARETO"])
def test_varsel_rankings(income, filter_by):
    run("init", cwd=income)
    run("stats", cwd=income)
    (income / "columns" / "forceselect.column.names").write_text("Race\n")
    (income / "columns" / "forceremove.column.names").write_text("Relationship\n")
    run("init", cwd=income)
    run("stats", cwd=income)
    edit_config(income, **{"varSelect.filterBy": filter_by, "varSelect.filterNum": 4})
    run("varsel", cwd=income)
    cols = {c["columnName"]: c for c in columns(income)}
    selected = {n for n, c in cols.items() if c["finalSelect"]}
    assert len(selected) == 4
    assert "Race" in selected and "Relationship" not in selected
    assert cols["Relationship"]["columnFlag"] == "ForceRemove"
    if filter_by in ("KS", "IV"):
        key = filter_by.lower()
        others = [c for n, c in cols.items() if n not in selected and c["columnStats"][key]]
        weakest = min(cols[n]["columnStats"][key] for n in selected if n != "Race")
        assert all(c["columnStats"][key] <= weakest for c in others)


def test_help_explains_every_command():
    out = run("--help").stdout
    for cmd in ["new", "init", "stats", "norm", "varsel"]:
        assert cmd in out
        assert "usage: tarn " + cmd in run(cmd, "--help").stdout
    bad = run("frobnicate", check=False)
    assert bad.returncode == 2 and "unknown command" in bad.stderr
    bad_flag = run("norm", "-bogus", check=False)
    assert bad_flag.returncode == 2 and "-bogus" in bad_flag.stderr


def test_exact_and_streaming_stats_agree(tmp_path):
    """Columns with few values get exact one-pass stats; the two-pass path must agree."""
    results = []
    for exact_mb in ("64", "0"):
        ms = make_income_model_set(tmp_path, f"e{exact_mb}")
        run("init", cwd=ms)
        run("stats", f"-Dtarn.stats.exact-values-mb={exact_mb}", cwd=ms)
        results.append({c["columnName"]: c for c in columns(ms)})
    exact, streaming = results
    for name in ("Age", "Education_Num", "hours_per_wk", "Capital_Gain"):
        a, b = exact[name], streaming[name]
        # Few distinct values: the histogram is exact too, so the bins are the same.
        assert a["columnBinning"]["binBoundary"] == b["columnBinning"]["binBoundary"], name
        assert a["columnBinning"]["binCountPos"] == b["columnBinning"]["binCountPos"], name
        assert a["columnStats"]["ks"] == pytest.approx(b["columnStats"]["ks"], rel=1e-12)
        assert a["columnStats"]["mean"] == pytest.approx(b["columnStats"]["mean"], rel=1e-12)
        assert a["columnStats"]["kurtosis"] == pytest.approx(b["columnStats"]["kurtosis"], rel=1e-9)
        assert a["columnStats"]["distinctCount"] == pytest.approx(b["columnStats"]["distinctCount"], rel=0.03)
    # FnlWgt has about 21,000 distinct values: more than the histogram's 1,000 centroids.
    assert exact["FnlWgt"]["columnStats"]["ks"] == pytest.approx(streaming["FnlWgt"]["columnStats"]["ks"], abs=1.0)


@pytest.mark.parametrize("fmt", ["binary", "text"])
def test_shuffle_larger_than_its_memory_budget(income, fmt):
    """A bucket bigger than tarn.norm.shuffle.buffer-mb is shuffled through sub-buckets."""
    run("init", cwd=income)
    run("stats", cwd=income)
    out = income / "tmp" / "NormalizedData"

    def rows():
        if fmt == "binary":
            return [tuple(r) for s in sorted(out.glob("part-*.tshard")) for r in read_shard(s)[1]]
        return [l for s in sorted(out.glob("part-*.gz")) for l in read_gzip_lines(s)]

    run("norm", "-format", fmt, cwd=income)
    plain = rows()
    small = ["-shuffle", "-Dshifu.norm.shuffle.size=1", "-Dtarn.norm.shuffle.buffer-mb=1"]
    run("norm", "-format", fmt, *small, cwd=income)
    first = rows()
    run("norm", "-format", fmt, *small, cwd=income)
    assert rows() == first  # seeded: the same order every time
    assert sorted(first) == sorted(plain) and first != plain
    # Rows from the start of the input are spread over the whole output.
    head = set(plain[:1000])
    positions = [i for i, r in enumerate(first) if r in head]
    assert max(positions) > 0.9 * len(first) and min(positions) < 0.1 * len(first)


def _high_cardinality_model_set(tmp_path, name, rows=20000):
    """A generated table: `measure` (distinct 4-decimal floats, 8% missing), `code` (six short
    values) and `city` (2,000 categories), and a 0/1 target; a model set on it through init."""
    import random
    rng = random.Random(20261202)
    lines = ["measure,code,city,label"]
    for _ in range(rows):
        measure = "" if rng.random() < 0.08 else f"{rng.gauss(50, 15):.4f}"
        code = str(rng.choice([1, 2, 3, 5, 8, 13]))
        city = f"c{rng.randrange(2000)}"
        lines.append(f"{measure},{code},{city},{int(rng.random() < 0.3)}")
    data = tmp_path / f"{name}.csv"
    data.write_text("\n".join(lines) + "\n")
    run("new", name, cwd=tmp_path)
    ms = tmp_path / name
    edit_config(ms, **{"dataSet.dataPath": str(data), "dataSet.headerPath": "",
                       "dataSet.dataDelimiter": ",", "dataSet.headerDelimiter": ",",
                       "dataSet.targetColumnName": "label", "dataSet.posTags": ["1"],
                       "dataSet.negTags": ["0"]})
    (ms / "columns" / "categorical.column.names").write_text("city\n")
    run("init", cwd=ms)
    return ms, lines[1:]


def test_high_cardinality_columns_normalize_every_value(tmp_path):
    """stats and norm skip work on short fields through caches that turn themselves off on
    columns of many distinct values: the results are the same whatever the thread count, and
    every normalized value is the z-score of its own raw value."""
    outputs = []
    for threads in (1, 2):
        ms, raw = _high_cardinality_model_set(tmp_path, f"hc{threads}")
        # A small exact-value budget: `measure` outgrows it in the first pass.
        opts = [f"-Dtarn.threads={threads}", "-Dtarn.data.chunk-bytes=65536",
                "-Dtarn.stats.exact-values-mb=1"]
        run("stats", *opts, cwd=ms)
        run("norm", *opts, cwd=ms)
        shards = sorted((ms / "tmp" / "NormalizedData").glob("part-*"))
        outputs.append(((ms / "ColumnConfig.json").read_text(), [p.read_bytes() for p in shards]))
    assert outputs[0] == outputs[1]
    cc = {c["columnName"]: c for c in columns(ms)}
    assert cc["measure"]["columnStats"]["distinctCount"] > 15000  # counted by the sketch
    header, rows = read_shard(shards[0])
    names = [f["name"] for f in header["features"]]
    assert len(rows) == len(raw)
    cutoff = json.loads((ms / "ModelConfig.json").read_text())["normalize"]["stdDevCutOff"]
    for j, name in enumerate(("measure", "code")):
        st = cc[name]["columnStats"]
        mean, sd = st["mean"], st["stdDev"]
        k = names.index(name)
        for line, row in zip(raw, rows):
            field = line.split(",")[j]
            x = float(field) if field else mean  # a missing value normalizes as the mean
            x = min(max(x, mean - cutoff * sd), mean + cutoff * sd)
            assert row[k] == pytest.approx((x - mean) / sd, rel=1e-6, abs=1e-6), (name, line)
    # Every row of a category gets the same value, one for each positive rate of the bins.
    by_city = {}
    k = names.index("city")
    for line, row in zip(raw, rows):
        by_city.setdefault(line.split(",")[2], set()).add(row[k])
    assert all(len(v) == 1 for v in by_city.values())
    rates = set(cc["city"]["columnBinning"]["binPosRate"][:-1])
    assert len(rates) > 10
    assert len({v for s in by_city.values() for v in s}) == len(rates)
