#!/usr/bin/env python3
"""A generated CTR-like table for the scale run: a seeded, deterministic click log.

usage: bench/gen_ctr.py OUT_DIR [--rows N] [--test-rows N] [--ids N] [--seed S] [--zipf A]
       bench/gen_ctr.py OUT_DIR --model-set DIR [--tarn build/bin/tarn] [--buckets N] [--rows ...]

Writes OUT_DIR/train.psv and OUT_DIR/test.psv ('|'-delimited, a header line first) and
OUT_DIR/truth.json (what was generated and the AUCs its own probabilities reach). Columns:

- user_id: N distinct ids (default 2,000,000). Every id occurs at least once in the training
  rows; the other rows draw their id Zipf-like (P(rank k) ~ 1 / k^A, A = --zipf), so a few ids
  are frequent and most are rare. The test rows draw every id Zipf-like (new traffic).
- device (4 values), site (300), hour (24), ad_category (60): categorical, modest cardinality.
- price, account_age_days, hist_ctr, noise: numeric (noise carries no signal).
- click: the target, 1 with probability sigmoid(logit), where logit = the id's own effect
  (normal, sd --id-effect) + per-category effects + numeric effects.

The planted per-id effect is what an id embedding can learn and a model without the id
cannot: truth.json records the test AUC of the true probability with and without the id's
effect (the best any model can do either way). Pure Python (standard library): 5M rows take
about a minute or two.

--model-set DIR makes a model set for the data (the data is generated first when
OUT_DIR/truth.json is missing or was made with other options): `tarn new`, then ModelConfig.json
(runMode DIST, algorithm WDL, normType ZSCALE_INDEX so that the small categorical columns are
embedded by their category index; train.txt the training rows, test.txt the eval set), the
categorical column list, `tarn init`, and user_id's ColumnConfig `hashSeed` = --buckets (its id
is the hashed bucket: see docs/TRAINING.md "Id columns").
"""
import argparse
import bisect
import itertools
import json
import math
import os
import random
import subprocess
import sys

DEVICES = ["mobile", "desktop", "tablet", "tv"]
DEVICE_WEIGHTS = [0.62, 0.28, 0.08, 0.02]
N_SITES = 300
N_HOURS = 24
N_AD_CATEGORIES = 60
HEADER = ["user_id", "device", "site", "hour", "ad_category", "price", "account_age_days",
          "hist_ctr", "noise", "click"]
CHUNK = 200_000


def exact_auc(scores, labels):
    """Area under the ROC curve (ties count half), by sorting."""
    pairs = sorted(zip(scores, labels))
    pos = sum(labels)
    neg = len(labels) - pos
    if pos == 0 or neg == 0:
        return float("nan")
    rank_sum = 0.0
    i = 0
    n = len(pairs)
    while i < n:
        j = i
        while j < n and pairs[j][0] == pairs[i][0]:
            j += 1
        avg_rank = (i + j + 1) / 2.0  # ranks i+1 .. j
        rank_sum += avg_rank * sum(lbl for _, lbl in pairs[i:j])
        i = j
    return (rank_sum - pos * (pos + 1) / 2.0) / (pos * neg)


class Model:
    """The generating process: effects drawn once from the seed."""

    def __init__(self, rng, n_ids, id_effect_sd, zipf):
        self.n_ids = n_ids
        self.id_effect = [rng.gauss(0.0, id_effect_sd) for _ in range(n_ids)]
        # Id strings are not in rank order, so neither the hash nor the text gives rank away.
        perm = list(range(n_ids))
        rng.shuffle(perm)
        self.id_name = [f"u{p:07d}" for p in perm]
        self.zipf_cum = list(itertools.accumulate(1.0 / (k + 1) ** zipf for k in range(n_ids)))
        self.device_effect = [0.25, -0.2, 0.1, -0.5]
        self.site_effect = [rng.gauss(0.0, 0.5) for _ in range(N_SITES)]
        self.site_cum = list(itertools.accumulate(1.0 / (k + 1) ** 0.8 for k in range(N_SITES)))
        self.hour_effect = [0.3 * math.sin(2 * math.pi * h / 24.0) for h in range(N_HOURS)]
        self.ad_effect = [rng.gauss(0.0, 0.4) for _ in range(N_AD_CATEGORIES)]
        self.bias = -1.6

    def zipf_ids(self, rng, k):
        total = self.zipf_cum[-1]
        cum = self.zipf_cum
        n = self.n_ids - 1
        return [min(bisect.bisect_left(cum, rng.random() * total), n) for _ in range(k)]

    def rows(self, rng, ids):
        """Yields (line, label, logit, logit without the id's effect) for the given id ranks."""
        site_total = self.site_cum[-1]
        for rank in ids:
            device = bisect.bisect_left(DEVICE_CUM, rng.random())
            site = min(bisect.bisect_left(self.site_cum, rng.random() * site_total), N_SITES - 1)
            hour = rng.randrange(N_HOURS)
            ad = rng.randrange(N_AD_CATEGORIES)
            log_price = rng.gauss(3.0, 0.8)
            age = rng.expovariate(1.0 / 400.0)
            hist = rng.betavariate(2.0, 20.0)
            noise = rng.gauss(0.0, 1.0)
            rest = (self.bias + self.device_effect[device] + self.site_effect[site]
                    + self.hour_effect[hour] + self.ad_effect[ad] - 0.35 * (log_price - 3.0)
                    + 0.2 * math.log1p(age / 100.0) + 8.0 * (hist - 0.09))
            logit = rest + self.id_effect[rank]
            label = 1 if rng.random() < 1.0 / (1.0 + math.exp(-logit)) else 0
            line = (f"{self.id_name[rank]}|{DEVICES[device]}|s{site}|h{hour}|ad{ad}|"
                    f"{math.exp(log_price):.2f}|{age:.1f}|{hist:.5f}|{noise:.4f}|{label}\n")
            yield line, label, logit, rest


DEVICE_CUM = list(itertools.accumulate(DEVICE_WEIGHTS))
DEVICE_CUM[-1] = 1.0


def write(path, model, rng, ids, keep_truth):
    tmp = path + ".tmp"
    labels, logits, rests = [], [], []
    positives = 0
    with open(tmp, "w") as f:
        f.write("|".join(HEADER) + "\n")
        for start in range(0, len(ids), CHUNK):
            lines = []
            for line, label, logit, rest in model.rows(rng, ids[start:start + CHUNK]):
                lines.append(line)
                positives += label
                if keep_truth:
                    labels.append(label)
                    logits.append(logit)
                    rests.append(rest)
            f.write("".join(lines))
    os.replace(tmp, path)
    return positives, labels, logits, rests


# The WDL the scale run trains: every categorical column embedded (user_id by its hashed
# bucket), a small deep tower. Shifu's keys (docs/TRAINING.md "Training graph models").
WDL_PARAMS = {"NumHiddenLayers": 2, "NumHiddenNodes": [32, 16], "ActivationFunc": ["relu", "relu"],
              "NumEmbedOuputs": 8, "Propagation": "Adam", "LearningRate": 0.002,
              "MiniBatchs": 256, "L2Reg": 0.0, "WeightInitializer": "xavier"}


def tarn_run(tarn, args, cwd):
    proc = subprocess.run([tarn, *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"gen_ctr: tarn {' '.join(args)} failed ({proc.returncode}) in {cwd}")
    return proc


def make_model_set(tarn, data_dir, ms, buckets, epochs=2):
    """A DIST WDL model set over data_dir's train.psv (eval set: test.psv), initialized, with
    user_id hashed into `buckets` buckets. Returns the model set's path."""
    import shutil
    ms = os.path.abspath(ms)
    data_dir = os.path.abspath(data_dir)
    truth = json.load(open(os.path.join(data_dir, "truth.json")))
    shutil.rmtree(ms, ignore_errors=True)
    os.makedirs(os.path.dirname(ms), exist_ok=True)
    tarn_run(tarn, ["new", os.path.basename(ms), "-q"], os.path.dirname(ms))
    path = os.path.join(ms, "ModelConfig.json")
    mc = json.load(open(path))
    ds = dict(headerPath="", dataDelimiter="|", headerDelimiter="|", targetColumnName="click",
              posTags=["1"], negTags=["0"])
    mc["basic"]["runMode"] = "DIST"
    mc["dataSet"].update(dataPath=os.path.join(data_dir, "train.psv"),
                         categoricalColumnNameFile="columns/categorical.column.names", **ds)
    mc["varSelect"]["filterNum"] = 100
    mc["normalize"]["normType"] = "ZSCALE_INDEX"
    mc["train"].update(algorithm="WDL", numTrainEpochs=epochs, validSetRate=0.1, baggingNum=1,
                       params=dict(WDL_PARAMS))
    mc["evals"][0]["dataSet"].update(dataPath=os.path.join(data_dir, "test.psv"), **ds)
    with open(path, "w") as f:
        json.dump(mc, f, indent=2)
    with open(os.path.join(ms, "columns", "categorical.column.names"), "w") as f:
        f.write("\n".join(truth["categorical"]) + "\n")
    tarn_run(tarn, ["init", "-q"], ms)
    cc_path = os.path.join(ms, "ColumnConfig.json")
    cols = json.load(open(cc_path))
    for c in cols:
        if c["columnName"] == "user_id":
            c["hashSeed"] = buckets
    with open(cc_path, "w") as f:
        json.dump(cols, f, indent=2)
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--test-rows", type=int, default=500_000)
    ap.add_argument("--ids", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--zipf", type=float, default=1.05)
    ap.add_argument("--id-effect", type=float, default=1.0, help="sd of the per-id logit effect")
    ap.add_argument("--model-set", help="make a DIST WDL model set for the data here")
    ap.add_argument("--tarn", default=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "build", "bin", "tarn"))
    ap.add_argument("--buckets", type=int, default=4_000_000, help="user_id's hashSeed")
    a = ap.parse_args()
    if a.ids > a.rows:
        ap.error(f"--ids {a.ids} is more than --rows {a.rows}: every id occurs in the training rows")
    truth_path = os.path.join(a.out, "truth.json")
    wanted = {"seed": a.seed, "rows": a.rows, "test_rows": a.test_rows, "distinct_ids": a.ids,
              "zipf": a.zipf, "id_effect_sd": a.id_effect}
    if not a.model_set or not os.path.exists(truth_path) or any(
            json.load(open(truth_path)).get(k) != v for k, v in wanted.items()):
        generate(a)
    if a.model_set:
        print(make_model_set(os.path.abspath(a.tarn), a.out, a.model_set, a.buckets))
    return 0


def generate(a):
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    model = Model(rng, a.ids, a.id_effect, a.zipf)

    train_ids = list(range(a.ids)) + model.zipf_ids(rng, a.rows - a.ids)
    rng.shuffle(train_ids)
    train_pos, _, _, _ = write(os.path.join(a.out, "train.psv"), model, rng, train_ids, False)
    counts = [0] * a.ids
    for r in train_ids:
        counts[r] += 1
    del train_ids

    test_ids = model.zipf_ids(rng, a.test_rows)
    test_pos, labels, logits, rests = write(os.path.join(a.out, "test.psv"), model, rng,
                                            test_ids, True)
    seen_often = sum(1 for r in test_ids if counts[r] >= 10)
    truth = {
        "seed": a.seed, "rows": a.rows, "test_rows": a.test_rows, "distinct_ids": a.ids,
        "zipf": a.zipf, "id_effect_sd": a.id_effect, "columns": HEADER, "target": "click",
        "categorical": ["user_id", "device", "site", "hour", "ad_category"],
        "train_positive_rate": train_pos / a.rows, "test_positive_rate": test_pos / a.test_rows,
        "ids_seen_once_in_train": sum(1 for c in counts if c == 1),
        "most_frequent_id_rows": max(counts),
        "test_rows_whose_id_has_10_or_more_train_rows": seen_often / a.test_rows,
        "test_auc_true_probability": exact_auc(logits, labels),
        "test_auc_without_id_effect": exact_auc(rests, labels),
    }
    with open(os.path.join(a.out, "truth.json.tmp"), "w") as f:
        json.dump(truth, f, indent=2)
    os.replace(os.path.join(a.out, "truth.json.tmp"), os.path.join(a.out, "truth.json"))
    json.dump(truth, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    sys.exit(main())
