"""Bad input gets a clear error naming the file, line or key, and never damages earlier output."""
import json
import shutil

from conftest import (EXAMPLE, columns, edit_config, good_rows, make_income_model_set, run,
                      small_model_set)


def test_wrong_field_counts_fail_above_the_ratio_with_file_and_line(tmp_path):
    rows = good_rows(100)
    rows[9] = "9|red|only-three\n"
    rows[41] = "41|red|4|1|extra\n"
    ms = small_model_set(tmp_path, rows)
    for step in ("init", "stats"):
        proc = run(step, cwd=ms, check=False)
        assert proc.returncode != 0
        assert "part-00000:10: expected 4 fields, found 3" in proc.stderr
        assert "part-00000:42: expected 4 fields, found 5" in proc.stderr
        assert "tarn.data.max-bad-row-ratio" in proc.stderr
        # Allowed with a higher ratio: the bad rows are skipped and counted.
        run(step, "-Dtarn.data.max-bad-row-ratio=0.05", cwd=ms)
    size = {c["columnName"]: c for c in columns(ms)}["size"]
    assert size["columnStats"]["totalCount"] == 98


def test_missing_data_path_is_named(tmp_path):
    ms = small_model_set(tmp_path, good_rows(10))
    edit_config(ms, **{"dataSet.dataPath": str(tmp_path / "nowhere")})
    proc = run("init", cwd=ms, check=False)
    assert proc.returncode != 0 and str(tmp_path / "nowhere") in proc.stderr


def test_broken_config_names_the_key(tmp_path):
    ms = small_model_set(tmp_path, good_rows(10))
    edit_config(ms, **{"stats.maxNumBin": "lots"})
    proc = run("init", cwd=ms, check=False)
    assert proc.returncode != 0
    assert "stats.maxNumBin must be an integer" in proc.stderr
    (ms / "ModelConfig.json").write_text("{ not json")
    proc = run("init", cwd=ms, check=False)
    assert proc.returncode != 0 and "ModelConfig.json: not valid JSON" in proc.stderr


def test_bad_setting_names_key_and_type(tmp_path):
    ms = small_model_set(tmp_path, good_rows(10))
    proc = run("init", "-Dtarn.threads=two", cwd=ms, check=False)
    assert proc.returncode != 0
    assert "tarn.threads" in proc.stderr and "integer" in proc.stderr


def test_unknown_target_and_tags(tmp_path):
    ms = small_model_set(tmp_path, good_rows(10))
    edit_config(ms, **{"dataSet.targetColumnName": "lable"})
    proc = run("init", cwd=ms, check=False)
    assert proc.returncode != 0 and "'lable'" in proc.stderr
    edit_config(ms, **{"dataSet.targetColumnName": "label", "dataSet.posTags": ["yes"],
                       "dataSet.negTags": ["no"]})
    run("init", cwd=ms)
    proc = run("stats", cwd=ms, check=False)
    assert proc.returncode != 0 and "no row has a target value" in proc.stderr
    assert "'0'" in proc.stderr or "'1'" in proc.stderr


def test_nan_inf_and_junk_numbers_count_as_missing(tmp_path):
    rows = good_rows(60)
    rows[3] = "3|red|NaN|0\n"
    rows[4] = "4|red|inf|1\n"
    rows[5] = "5|red|12abc|0\n"
    ms = small_model_set(tmp_path, rows)
    run("init", cwd=ms)
    run("stats", cwd=ms)
    size = {c["columnName"]: c for c in columns(ms)}["size"]
    assert size["columnType"] == "N"
    assert size["columnStats"]["missingCount"] == 3
    assert size["columnStats"]["validNumCount"] == 57


def test_failed_norm_keeps_previous_output(tmp_path):
    ms = small_model_set(tmp_path, good_rows(200))
    run("init", cwd=ms)
    run("stats", cwd=ms)
    run("norm", cwd=ms)
    out = ms / "tmp" / "NormalizedData"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # Now break the data: a tenth of the rows lose a field.
    data = tmp_path / "bad-data" / "part-00000"
    data.write_text("".join(r if i % 10 else "x|y\n" for i, r in enumerate(good_rows(200))))
    proc = run("norm", cwd=ms, check=False)
    assert proc.returncode != 0
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert after == before
    assert not list((ms / "tmp").glob("NormalizedData.partial-*"))


def test_gzip_and_plain_give_identical_stats(tmp_path):
    plain = small_model_set(tmp_path, good_rows(300), name="plain")
    gz = small_model_set(tmp_path, good_rows(300), name="gz", gz=True)
    for ms in (plain, gz):
        run("init", cwd=ms)
        run("stats", cwd=ms)
    assert columns(plain) == columns(gz)


def test_header_from_first_line_and_quoted_csv(tmp_path):
    data = tmp_path / "csvdata"
    data.mkdir()
    rows = ['id,comment,score,label\n']
    for i in range(50):
        comment = f'"said ""hi"", then left"' if i % 5 == 0 else f"plain {i}"
        rows.append(f"{i},{comment},{i % 10},{i % 2}\n")
    (data / "data.csv").write_text("".join(rows))
    (data / "_SUCCESS").write_text("")
    run("new", "csv", cwd=tmp_path)
    ms = tmp_path / "csv"
    edit_config(ms, **{"dataSet.dataPath": str(data), "dataSet.headerPath": "",
                       "dataSet.dataDelimiter": ",", "dataSet.targetColumnName": "label",
                       "dataSet.posTags": ["1"], "dataSet.negTags": ["0"]})
    run("init", cwd=ms)
    cols = columns(ms)
    assert [c["columnName"] for c in cols] == ["id", "comment", "score", "label"]
    run("stats", cwd=ms)
    score = {c["columnName"]: c for c in columns(ms)}["score"]
    assert score["columnStats"]["totalCount"] == 50


def test_filter_expressions(tmp_path):
    ms = small_model_set(tmp_path, good_rows(90))
    edit_config(ms, **{"dataSet.filterExpressions": "color == 'red' || (size > 90 && !(id < 10))"})
    run("init", cwd=ms)
    run("stats", cwd=ms)
    total = {c["columnName"]: c for c in columns(ms)}["size"]["columnStats"]["totalCount"]
    expected = sum(1 for r in good_rows(90)
                   if r.split("|")[1] == "red" or (int(r.split("|")[2]) > 90 and int(r.split("|")[0]) >= 10))
    assert total == expected
    edit_config(ms, **{"dataSet.filterExpressions": "size > 3 + 4"})
    proc = run("stats", cwd=ms, check=False)
    assert proc.returncode != 0 and "filterExpressions" in proc.stderr
    edit_config(ms, **{"dataSet.filterExpressions": "weight > 3"})
    proc = run("stats", cwd=ms, check=False)
    assert proc.returncode != 0 and "weight" in proc.stderr


def test_column_name_file_typo_is_an_error(tmp_path):
    ms = small_model_set(tmp_path, good_rows(10))
    (ms / "columns" / "meta.column.names").write_text("idd\n")
    proc = run("init", cwd=ms, check=False)
    assert proc.returncode != 0
    assert "meta.column.names" in proc.stderr and "'idd'" in proc.stderr


def test_non_finite_numbers_are_missing_values_not_categories(tmp_path):
    """A numeric column with a fifth of its values NaN, Infinity, -inf or 1e999 stays numeric;
    init says how many it saw, and stats bins only the finite values."""
    tokens = ["NaN", "Infinity", "-inf", "1e999"]
    rows = [f"{i}|red|{tokens[i % 4] if i % 5 == 0 else (i * 7) % 100}|{int((i * 7) % 100 > 50)}\n"
            for i in range(200)]
    ms = small_model_set(tmp_path, rows)
    proc = run("init", cwd=ms)
    size = {c["columnName"]: c for c in columns(ms)}["size"]
    assert size["columnType"] == "N"
    assert "size (40)" in proc.stderr and "count as missing values" in proc.stderr
    run("stats", cwd=ms)
    size = {c["columnName"]: c for c in columns(ms)}["size"]
    assert size["columnStats"]["missingCount"] == 40
    assert size["columnStats"]["validNumCount"] == 160
    assert all(b == "-Infinity" or abs(b) < 100 for b in size["columnBinning"]["binBoundary"])


def test_init_on_an_empty_data_file_names_it(tmp_path):
    ms = small_model_set(tmp_path, [])
    proc = run("init", cwd=ms, check=False)
    assert proc.returncode == 2, proc.stderr
    assert str(tmp_path / "bad-data" / "part-00000") + ": no data rows" in proc.stderr
    assert not (ms / "ColumnConfig.json").exists()


def test_rerunning_init_keeps_the_previous_column_config(tmp_path):
    ms = small_model_set(tmp_path, good_rows(200))
    run("init", cwd=ms)
    run("stats", cwd=ms)
    run("varsel", cwd=ms)
    before = (ms / "ColumnConfig.json").read_text()
    assert any(c["finalSelect"] for c in json.loads(before))
    proc = run("init", cwd=ms)
    kept = ms / "init" / "ColumnConfig.json.0"
    assert kept.read_text() == before
    assert "kept as " + str(kept) in proc.stderr and "with finalSelect" in proc.stderr
    assert not any(c["finalSelect"] for c in columns(ms))
    run("init", cwd=ms)  # each rerun keeps its own version
    assert (ms / "init" / "ColumnConfig.json.1").exists()


def test_norm_removes_folders_of_interrupted_runs(tmp_path):
    import os
    import subprocess
    ms = small_model_set(tmp_path, good_rows(200))
    run("init", cwd=ms)
    run("stats", cwd=ms)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a PID no process has any more
    stale = ms / "tmp" / f"NormalizedData.partial-{gone.pid}"
    live = ms / "tmp" / f"NormalizedData.partial-{os.getpid()}"  # a run still going
    for d in (stale, live):
        d.mkdir(parents=True)
        (d / "part-00000.tshard").write_bytes(b"half a shard")
    proc = run("norm", cwd=ms)
    assert not stale.exists() and live.exists()
    assert f"removed {stale}" in proc.stderr
    assert list((ms / "tmp" / "NormalizedData").glob("part-*"))
