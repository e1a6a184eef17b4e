"""Categorical columns as integer ids (docs/TRAINING.md, "Id columns") on the shipped Adult data.

The expected ids are computed here from the raw rows, ColumnConfig.json and the documented
hash, independently of tarn's code.
"""
import gzip
import json

from conftest import (EXAMPLE, INCOME_EVAL_SET, columns, edit_config, income_with_hashed_column,
                      read_gzip_lines, read_shard, read_shard_ids, run)

MISSING_VALUES = {"", "*", "#", "?", "null", "~"}  # `tarn new`'s missingOrInvalidValues
MASK = (1 << 64) - 1
HASHED = "Native_Country"
BUCKETS = 16  # fewer than its ~40 values, so buckets are shared
HASH_SEED = 3


def category_hash64(raw, seed):
    """The documented hash: FNV-1a 64 (offset basis XOR seed) then SplitMix64's finalizer."""
    h = 0xcbf29ce484222325 ^ seed
    for b in raw.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001b3) & MASK
    h ^= h >> 30
    h = (h * 0xbf58476d1ce4e5b9) & MASK
    h ^= h >> 27
    h = (h * 0x94d049bb133111eb) & MASK
    return h ^ (h >> 31)


def expected_id(col, raw):
    if col["columnName"] == HASHED:
        return BUCKETS if raw in MISSING_VALUES else category_hash64(raw, HASH_SEED) % BUCKETS
    groups = [g.split("@^") for g in col["columnBinning"]["binCategory"]]
    if raw not in MISSING_VALUES:
        for i, g in enumerate(groups):
            if raw in g:
                return i
    return len(groups)  # missing or unseen: the missing bin, as Shifu's WDLWorker


def raw_rows():
    with gzip.open(EXAMPLE / "DataSet1" / "part-00000.gz", "rt") as f:
        return [line.rstrip("\n").split("|") for line in f]


def test_norm_writes_index_and_hashed_ids_that_match_the_raw_data(tmp_path):
    # Stats on a sample, so that norm can meet categories stats never saw.
    ms = income_with_hashed_column(tmp_path, "income", "ZSCALE_INDEX", HASHED, BUCKETS,
                                   **{"stats.sampleRate": 0.3})
    out = run("norm", f"-Dtarn.norm.id-hash-seed={HASH_SEED}", cwd=ms)
    cols = {c["columnName"]: c for c in columns(ms)}
    assert cols[HASHED]["hashSeed"] == BUCKETS  # stats keeps the field

    header, ids = read_shard_ids(ms / "tmp" / "NormalizedData" / "part-00000.tshard")
    id_cols = header["idColumns"]
    categorical = [c["columnName"] for c in cols.values()
                   if c["columnType"] == "C" and c.get("columnFlag") != "Target"]
    assert [c["name"] for c in id_cols] == categorical
    assert f"{len(id_cols)} id columns" in out.stdout + out.stderr
    for c in id_cols:
        assert c["columnNum"] == cols[c["name"]]["columnNum"]
        if c["name"] == HASHED:
            assert (c["kind"], c["vocabulary"], c["buckets"], c["hashSeed"]) == \
                ("hash", BUCKETS + 1, BUCKETS, HASH_SEED)
        else:
            assert c["kind"] == "index"
            assert c["vocabulary"] == len(cols[c["name"]]["columnBinning"]["binCategory"]) + 1

    rows = raw_rows()
    assert len(ids) == len(rows)
    seen = {c["name"]: set() for c in id_cols}
    for r, (raw, got) in enumerate(zip(rows, ids)):
        want = [expected_id(cols[c["name"]], raw[c["columnNum"]]) for c in id_cols]
        assert got == want, f"row {r}"
        for c, v in zip(id_cols, got):
            seen[c["name"]].add(v)
    assert len(seen[HASHED]) > BUCKETS // 2  # the hash spreads the countries over the buckets
    assert BUCKETS in seen[HASHED]  # '?' countries: the missing id

    # The floats are unchanged by the ids: an index column's float is its index.
    _, floats = read_shard(ms / "tmp" / "NormalizedData" / "part-00000.tshard")
    workclass = next(i for i, c in enumerate(id_cols) if c["name"] == "Work_Class")
    offset = [f["name"] for f in header["features"]].index("Work_Class")
    assert all(int(f[offset]) == i[workclass] for f, i in zip(floats[:2000], ids[:2000]))

    # -format text: the ids as integers, named in .pig_header, before the weight.
    run("norm", "-format", "text", f"-Dtarn.norm.id-hash-seed={HASH_SEED}", cwd=ms)
    names = (ms / "tmp" / "NormalizedData" / ".pig_header").read_text().strip().split("|")
    assert names[-1] == "weight"
    assert names[-1 - len(id_cols):-1] == [c["name"] + "#id" for c in id_cols]
    lines = read_gzip_lines(ms / "tmp" / "NormalizedData" / "part-00000.gz")
    for line, want in zip(lines[:3000], ids[:3000]):
        fields = line.split("|")
        assert fields[-1 - len(id_cols):-1] == [str(v) for v in want]


def hashed_model_set(tmp_path, name, norm_type, hash_seed, **config):
    return income_with_hashed_column(tmp_path, name, norm_type, HASHED, hash_seed, **config)


def test_shuffled_ids_stay_with_their_rows(tmp_path):
    ms = hashed_model_set(tmp_path, "income", "ZSCALE_INDEX", BUCKETS)
    run("norm", "-shuffle", "-Dshifu.norm.shuffle.size=2", "-Dtarn.norm.shuffle.buffer-mb=1",
        cwd=ms)
    shards = sorted((ms / "tmp" / "NormalizedData").glob("part-*.tshard"))
    assert len(shards) == 2
    total = 0
    for shard in shards:
        header, floats = read_shard(shard)
        _, ids = read_shard_ids(shard)
        total += len(ids)
        offsets = {}
        at = 0
        for f in header["features"]:
            offsets[f["name"]] = at
            at += f["width"]
        # A shuffled record moves as one: an index column's id is still its row's index float.
        checked = 0
        for k, c in enumerate(header["idColumns"]):
            if c["kind"] == "index":
                assert all(int(f[offsets[c["name"]]]) == i[k] for f, i in zip(floats, ids)), c
                checked += 1
        assert checked >= 5
    assert total == len(raw_rows())


EVAL_SET = {"train.numTrainEpochs": 3, **INCOME_EVAL_SET}


def eval_scores(ms):
    run("eval", cwd=ms)
    return (ms / "evals" / "Eval1" / "EvalScore").read_text()


def test_mlp_ignores_id_columns_local_and_dist(tmp_path):
    # ZSCALE writes no index, so only the hashed column has ids: the floats are the same
    # with and without them, and so must be the trained model.
    plain = hashed_model_set(tmp_path, "plain", "ZSCALE", 0, **EVAL_SET)
    hashed = hashed_model_set(tmp_path, "hashed", "ZSCALE", BUCKETS, **EVAL_SET)
    for ms in (plain, hashed):
        run("norm", cwd=ms)
    assert "idColumns" not in read_shard(plain / "tmp" / "NormalizedData" / "part-00000.tshard")[0]
    header, _ = read_shard(hashed / "tmp" / "NormalizedData" / "part-00000.tshard")
    assert [c["name"] for c in header["idColumns"]] == [HASHED]
    for ms in (plain, hashed):
        run("train", cwd=ms)
    assert eval_scores(hashed) == eval_scores(plain)

    edit_config(hashed, **{"basic.runMode": "DIST"})
    run("train", "-Dtarn.cluster.backend=embedded", "-Dshifu.ps.instances=1", cwd=hashed)
    run("eval", cwd=hashed)
    perf = json.loads((hashed / "evals" / "Eval1" / "EvalPerformance.json").read_text())
    assert perf["areaUnderRoc"] > 0.8
