"""The generated CTR-like table of the scale run (bench/gen_ctr.py), small enough for CI: it is
seeded and plants a per-id signal that a WDL embedding the hashed id learns, and its model set
(a hashed id column) goes through init, stats and norm with the id column's stats bounded by
shifu.max.category.size."""
import collections
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, columns, edit_config, read_shard_ids, run, tarn_bin

GEN = ROOT / "bench" / "gen_ctr.py"
ROWS, IDS, TEST_ROWS, BUCKETS = 30000, 12000, 6000, 6000


def generate(out, *extra):
    subprocess.run([sys.executable, str(GEN), str(out), "--rows", str(ROWS), "--ids", str(IDS),
                    "--test-rows", str(TEST_ROWS), *extra], check=True, capture_output=True,
                   timeout=300)
    return json.loads((out / "truth.json").read_text())


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_table_is_seeded_has_every_id_and_a_planted_id_signal(tmp_path):
    truth = generate(tmp_path / "a")
    generate(tmp_path / "b")
    for name in ("train.psv", "test.psv"):
        assert digest(tmp_path / "a" / name) == digest(tmp_path / "b" / name), name
    other = generate(tmp_path / "c", "--seed", "12")
    assert digest(tmp_path / "c" / "train.psv") != digest(tmp_path / "a" / "train.psv")
    assert other["test_auc_true_probability"] > 0.5

    lines = (tmp_path / "a" / "train.psv").read_text().splitlines()
    header = lines[0].split("|")
    assert header == truth["columns"] and len(lines) == ROWS + 1
    ids = [ln.split("|")[0] for ln in lines[1:]]
    counts = collections.Counter(ids)
    assert len(counts) == IDS  # every id occurs in the training rows
    # Zipf-like: a frequent head, a long tail of ids with a single row.
    assert counts.most_common(1)[0][1] > ROWS / 20
    assert sum(1 for c in counts.values() if c == 1) > IDS / 2
    test_ids = {ln.split("|")[0] for ln in
                (tmp_path / "a" / "test.psv").read_text().splitlines()[1:]}
    assert test_ids <= set(ids)
    # The id's own effect is worth at least 0.05 of AUC to the best model that knows it.
    assert truth["test_auc_true_probability"] > truth["test_auc_without_id_effect"] + 0.05


def test_the_model_set_hashes_the_id_column_with_stats_bounded_by_the_category_cap(tmp_path):
    sys.path.insert(0, str(GEN.parent))
    import gen_ctr
    generate(tmp_path / "data")
    ms = gen_ctr.make_model_set(tarn_bin(), tmp_path / "data", tmp_path / "ctr", BUCKETS)
    mc = json.loads((tmp_path / "ctr" / "ModelConfig.json").read_text())
    assert (mc["basic"]["runMode"], mc["train"]["algorithm"]) == ("DIST", "WDL")
    cap = 500
    run("stats", f"-Dshifu.max.category.size={cap}", cwd=ms)
    cols = {c["columnName"]: c for c in columns(ms)}
    user = cols["user_id"]
    assert user["hashSeed"] == BUCKETS  # stats keeps it
    assert len(user["columnBinning"]["binCategory"]) == cap  # the most frequent ids only
    assert abs(user["columnStats"]["distinctCount"] - IDS) < 0.05 * IDS  # HyperLogLog
    assert user["columnStats"]["totalCount"] == ROWS
    assert len(cols["site"]["columnBinning"]["binCategory"]) <= 300

    run("norm", "-Dtarn.norm.shards=2", cwd=ms)
    shards = sorted((tmp_path / "ctr" / "tmp" / "NormalizedData").glob("part-*.tshard"))
    assert len(shards) == 2
    header, ids = read_shard_ids(shards[0])
    id_cols = {c["name"]: c for c in header["idColumns"]}
    assert (id_cols["user_id"]["kind"], id_cols["user_id"]["vocabulary"]) == ("hash",
                                                                              BUCKETS + 1)
    k = list(id_cols).index("user_id")
    user_ids = {row[k] for row in ids}
    # A quarter of the rows' ids at least, all inside the table (no missing user_id).
    assert len(user_ids) > IDS / 4 and max(user_ids) < BUCKETS


def test_a_wdl_that_embeds_the_hashed_id_beats_one_without_it(tmp_path):
    """The planted per-id signal is learnable: the same WDL, LOCAL, with and without user_id."""
    sys.path.insert(0, str(GEN.parent))
    import gen_ctr
    generate(tmp_path / "data")
    ms = Path(gen_ctr.make_model_set(tarn_bin(), tmp_path / "data", tmp_path / "ctr", BUCKETS))
    edit_config(ms, **{"basic.runMode": "LOCAL", "train.numTrainEpochs": 5})
    for step in ("stats", "norm", "varsel"):
        run(step, cwd=ms)

    def test_auc():
        run("train", "-Dtarn.threads=2", cwd=ms)
        run("eval", cwd=ms)
        return json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())[
            "exactAreaUnderRoc"]

    with_id = test_auc()
    cols = columns(ms)
    for c in cols:
        if c["columnName"] == "user_id":
            c["finalSelect"] = False
    (ms / "ColumnConfig.json").write_text(json.dumps(cols, indent=2))
    without_id = test_auc()
    assert with_id > without_id + 0.03, (with_id, without_id)
