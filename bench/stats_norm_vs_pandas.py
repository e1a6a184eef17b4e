#!/usr/bin/env python3
"""tarn stats + norm versus the same work in pandas, on flights_3m.

Usage:  bench/stats_norm_vs_pandas.py TARN [--rounds N] [--threads N]

Follows ../shared/docs/BENCHMARKING.md: tarn and pandas run side by side in one run,
alternating (A B A B ...), one warm-up round and then --rounds measured rounds (at least 5).
Every command runs in its own process under /usr/bin/time -v (wall time, peak RSS).

Comparisons (one summary line each):
  stats    `tarn stats` (one pass, plus a recount pass when needed)  vs  a python process doing pd.read_csv
           of the gzip file plus the same per-column summaries, EqualPositive bins and
           KS/IV/WOE; it saves its stats to a small JSON.
  norm     `tarn norm` (reads the CSV again, reuses ColumnConfig.json)  vs  a python
           process doing pd.read_csv again, reusing the saved JSON stats, ZSCALE with
           clipping at mean +- 6 sd, writing float32 features+target+weight row-major
           with numpy tofile (and fsync, as tarn's AtomicFile does).
  threads  `tarn stats` and `tarn norm` with -Dtarn.threads=1 against the default
           (all cores), for the per-core figures.

The orchestrator uses only the standard library (system python3); pandas and numpy
come from PyPI into build/bench-venv, made here on first use. The same file is the
pandas worker (--pandas-stats / --pandas-norm / --compare-norm), run with the venv's
python. Results: bench/results/stats_norm_vs_pandas.json.
"""

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time

import _common
from _common import (add_method_args, check_rounds, check_tree, finish, machine_info, med, ratios_per_round,
                     sha256, write_results)

NAME = "stats_norm_vs_pandas"
TARGET = "delayed15"
POS_TAGS = ["1"]
NEG_TAGS = ["0"]
CATEGORICAL = ["origin", "destination"]
MAX_NUM_BIN = 10  # ModelConfig stats.maxNumBin (Shifu's default)
STD_CUTOFF = 6.0  # ModelConfig normalize.stdDevCutOff (Shifu's default)
MEAN_COLUMN = "distance"  # agreement checks
KS_COLUMNS = ["dep_minute_of_day", "origin"]

# --------------------------------------------------------------------------------------
# pandas worker: runs inside build/bench-venv, one process per measured command
# --------------------------------------------------------------------------------------


def _bin_metrics(np, count_neg, count_pos):
    """KS, IV, WOE as tarn's ComputeBinMetrics (Shifu's calculateColumnMetrics, eps 1e-10,
    WOE negative-over-positive); every entry counts, the missing bin included."""
    eps = 1e-10
    count_neg = np.asarray(count_neg, dtype=np.float64)
    count_pos = np.asarray(count_pos, dtype=np.float64)
    tn, tp = count_neg.sum(), count_pos.sum()
    if tn == 0 or tp == 0:
        return 0.0, 0.0, 0.0, [0.0] * len(count_neg)
    n, p = count_neg / tn, count_pos / tp
    bin_woe = np.log((n + eps) / (p + eps))
    iv = float(((n - p) * bin_woe).sum())
    ks = float(np.abs(np.cumsum(p) - np.cumsum(n)).max() * 100.0)
    woe = float(np.log((tn + eps) / (tp + eps)))
    return ks, iv, woe, bin_woe.tolist()


def _finish_numeric(np, out, c, x, pos, neg, cuts, count, missing, moments, quartiles, nunique=None):
    """The numeric column's record from its moments and EqualPositive cut points (the
    positives' deciles, cut points at or below the positives' minimum dropped: they make empty
    bins), counting pos / neg per bin [b_i, b_i+1) and in the missing bin (numpy)."""
    bounds = np.concatenate([[-np.inf], cuts])
    nb = len(bounds)
    idx = np.searchsorted(bounds, x, side="right") - 1
    idx[np.isnan(x)] = nb  # the missing bin
    cpos = np.bincount(idx[pos], minlength=nb + 1)
    cneg = np.bincount(idx[neg], minlength=nb + 1)
    _bin_record(np, out, c, cpos, cneg, bounds.tolist(), count, missing, moments, quartiles, nunique)


def _bin_record(np, out, c, cpos, cneg, bounds, count, missing, moments, quartiles, nunique=None):
    ks, iv, woe, bin_woe = _bin_metrics(np, cneg, cpos)
    out[c] = dict(type="N", count=int(count), missing=int(missing), nunique=nunique, **moments,
                  p25=quartiles[0], p50=quartiles[1], p75=quartiles[2], bounds=bounds,
                  count_pos=[int(v) for v in cpos], count_neg=[int(v) for v in cneg],
                  ks=ks, iv=iv, woe=woe, bin_woe=bin_woe)


def _cut_points(np, deciles, pos_min):
    cuts = np.unique(np.asarray([v for v in deciles if v is not None and not np.isnan(v)], dtype=np.float64))
    return cuts[cuts > pos_min] if pos_min is not None else np.array([])


def _finish_categorical(np, out, c, cats, pos_counts, counts, miss_pos, miss_neg, missing):
    """The categorical column's record from per-category (positive, total) counts: categories
    sorted by positive rate, the missing bin last, and the row-weighted mean / sample sd /
    min / max of the category positive rate (what tarn reports for C columns)."""
    cats = [str(k) for k in cats]
    pos_counts = np.asarray(pos_counts, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    rate = pos_counts / counts
    order = np.lexsort((np.asarray(cats), rate))  # by rate, ties by name: one order for every peer
    cats = [cats[i] for i in order]
    pos_counts, counts, rate = pos_counts[order], counts[order], rate[order]
    cpos = np.append(pos_counts, miss_pos)
    cneg = np.append(counts - pos_counts, miss_neg)
    ks, iv, woe, bin_woe = _bin_metrics(np, cneg, cpos)
    n = counts.sum()
    mean = float((counts * rate).sum() / n) if n else 0.0
    var = float(((counts * rate * rate).sum() - n * mean * mean) / (n - 1)) if n > 1 else 0.0
    miss_total = miss_pos + miss_neg
    out[c] = {"type": "C", "count": int(n), "missing": int(missing), "nunique": len(cats),
              "mean": mean, "std": max(var, 0.0) ** 0.5,
              "min": float(rate.min()) if len(rate) else None, "max": float(rate.max()) if len(rate) else None,
              "ks": ks, "iv": iv, "woe": woe, "bin_woe": bin_woe, "categories": cats, "rates": rate.tolist(),
              "missing_rate": (miss_pos / miss_total) if miss_total else 0.0}


DECILES = [i / MAX_NUM_BIN for i in range(1, MAX_NUM_BIN)]


def _stats_pandas(spec, threads, cols, tm):
    """pandas at its best: read_csv(engine="pyarrow"), one vectorized agg / quantile call over
    every numeric column, the positives' deciles in one quantile call, groupby value counts."""
    import numpy as np
    import pandas as pd
    import pyarrow

    pyarrow.set_cpu_count(threads)
    pyarrow.set_io_thread_count(threads)
    tm["import_s"] = time.perf_counter() - tm["t0"]
    df = pd.read_csv(spec["data"], engine="pyarrow")
    tm["read_s"] = time.perf_counter() - tm["t0"] - tm["import_s"]
    y = df[spec["target"]].to_numpy(dtype=np.float64)
    pos, neg = y == 1.0, y == 0.0
    cat = [c for c in spec["features"] if c in spec["categorical"]]
    num = [c for c in spec["features"] if c not in spec["categorical"]]
    if num:
        dn = df[num]
        mom = dn.agg(["count", "mean", "std", "skew", "kurt", "min", "max"])
        qs = dn.quantile([0.25, 0.5, 0.75])
        pdec = dn[pos].quantile(DECILES)
        pmin = dn[pos].min()
        for c in num:
            x = dn[c].to_numpy(dtype=np.float64)
            m = mom[c]
            _finish_numeric(np, cols, c, x, pos, neg, _cut_points(np, pdec[c].to_numpy(), pmin[c]),
                            m["count"], len(x) - m["count"],
                            {k: float(m[k]) for k in ("mean", "std", "skew", "kurt", "min", "max")},
                            [float(v) for v in qs[c]])
    t = spec["target"]
    for c in cat:
        g = df.groupby(c, sort=False)[t].agg(["sum", "count"])
        na = df[c].isna().to_numpy()
        _finish_categorical(np, cols, c, g.index, g["sum"], g["count"], int(pos[na].sum()), int(neg[na].sum()),
                            int(na.sum()))
    return len(df), int(pos.sum())


def _stats_polars(spec, threads, cols, tm):
    """polars: read_csv, one select for every column's moments, quartiles and the positives'
    deciles, then per column one group_by of its bin (the count of cut points <= x), in one
    collect_all; categorical columns: group_by value counts."""
    os.environ["POLARS_MAX_THREADS"] = str(threads)
    import numpy as np
    import polars as pl

    tm["import_s"] = time.perf_counter() - tm["t0"]
    df = pl.read_csv(spec["data"], infer_schema_length=10000)
    tm["read_s"] = time.perf_counter() - tm["t0"] - tm["import_s"]
    t = spec["target"]
    df = df.with_columns(pl.col(t).cast(pl.Float64))
    isp, isn = pl.col(t) == 1.0, pl.col(t) == 0.0
    cat = [c for c in spec["features"] if c in spec["categorical"]]
    num = [c for c in spec["features"] if c not in spec["categorical"]]
    if num:
        exprs = []
        for c in num:
            x = pl.col(c).cast(pl.Float64)
            exprs += [x.count().alias(f"{c}|count"), x.null_count().alias(f"{c}|missing"),
                      x.mean().alias(f"{c}|mean"), x.std().alias(f"{c}|std"),
                      x.skew(bias=False).alias(f"{c}|skew"), x.kurtosis(bias=False).alias(f"{c}|kurt"),
                      x.min().alias(f"{c}|min"), x.max().alias(f"{c}|max"),
                      x.filter(isp).min().alias(f"{c}|pmin")]
            exprs += [x.quantile(q, "linear").alias(f"{c}|q{q}") for q in (0.25, 0.5, 0.75)]
            exprs += [x.filter(isp).quantile(q, "linear").alias(f"{c}|d{q}") for q in DECILES]
        r = df.select(exprs).row(0, named=True)
        lazy, meta = [], []
        for c in num:
            cuts = _cut_points(np, [r[f"{c}|d{q}"] for q in DECILES], r[f"{c}|pmin"])
            x = pl.col(c).cast(pl.Float64)
            b = pl.sum_horizontal([(x >= float(v)).cast(pl.Int32) for v in cuts]) if len(cuts) else pl.lit(0)
            b = pl.when(x.is_null() | x.is_nan()).then(len(cuts) + 1).otherwise(b).alias("bin")
            lazy.append(df.lazy().group_by(b).agg(isp.sum().alias("pos"), isn.sum().alias("neg")))
            meta.append((c, cuts))
        for (c, cuts), g in zip(meta, pl.collect_all(lazy)):
            nb = len(cuts) + 1
            cpos, cneg = np.zeros(nb + 1, np.int64), np.zeros(nb + 1, np.int64)
            for bi, pv, nv in g.iter_rows():
                cpos[bi], cneg[bi] = pv, nv
            _bin_record(np, cols, c, cpos, cneg, [-np.inf] + cuts.tolist(), r[f"{c}|count"], r[f"{c}|missing"],
                        {k: r[f"{c}|{k}"] for k in ("mean", "std", "skew", "kurt", "min", "max")},
                        [r[f"{c}|q{q}"] for q in (0.25, 0.5, 0.75)])
    lazy = [df.lazy().group_by(c).agg(isp.sum().alias("pos"), pl.len().alias("n"), isn.sum().alias("neg"))
            for c in cat]
    for c, g in zip(cat, pl.collect_all(lazy)):
        miss = g.filter(pl.col(c).is_null())
        g = g.filter(pl.col(c).is_not_null())
        _finish_categorical(np, cols, c, g[c].to_list(), g["pos"].to_numpy(), g["n"].to_numpy(),
                            int(miss["pos"].sum()), int(miss["neg"].sum()), int(miss["n"].sum()))
    return df.height, int(df.select(isp.sum()).item())


def _stats_duckdb(spec, threads, cols, tm):
    """DuckDB: the CSV into a table (one scan), one SELECT for every column's moments,
    quartiles and the positives' deciles, one UNION ALL of per-column GROUP BYs over the bins
    (the count of cut points <= x), GROUP BY value counts for categorical columns."""
    import duckdb
    import numpy as np

    tm["import_s"] = time.perf_counter() - tm["t0"]
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads)}")
    data = spec["data"].replace("'", "''")
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{data}', header = true, sample_size = 20480)")
    tm["read_s"] = time.perf_counter() - tm["t0"] - tm["import_s"]
    q = lambda name: '"' + name.replace('"', '""') + '"'  # noqa: E731
    t = q(spec["target"])
    cat = [c for c in spec["features"] if c in spec["categorical"]]
    num = [c for c in spec["features"] if c not in spec["categorical"]]
    rows, positives = con.execute(f"SELECT count(*), count(*) FILTER (WHERE {t} = 1) FROM t").fetchone()
    if num:
        sel = []
        for c in num:
            x = f"CAST({q(c)} AS DOUBLE)"
            sel += [f"count({x})", f"avg({x})", f"stddev_samp({x})", f"skewness({x})", f"kurtosis({x})",
                    f"min({x})", f"max({x})", f"min({x}) FILTER (WHERE {t} = 1)",
                    f"quantile_cont({x}, [0.25, 0.5, 0.75])",
                    f"quantile_cont({x}, {DECILES}) FILTER (WHERE {t} = 1)"]
        r = con.execute("SELECT " + ", ".join(sel) + " FROM t").fetchone()
        parts, meta = [], []
        for i, c in enumerate(num):
            cnt, mean, sd, sk, ku, mn, mx, pmin, quart, dec = r[10 * i:10 * i + 10]
            cuts = _cut_points(np, dec or [], pmin)
            x = f"CAST({q(c)} AS DOUBLE)"
            b = " + ".join(f"CAST({x} >= {float(v)!r} AS INTEGER)" for v in cuts) or "0"
            parts.append(f"SELECT {i} AS col, CASE WHEN {x} IS NULL OR isnan({x}) THEN {len(cuts) + 1} ELSE {b} END "
                         f"AS bin, count(*) FILTER (WHERE {t} = 1) AS pos, count(*) FILTER (WHERE {t} = 0) AS neg "
                         "FROM t GROUP BY bin")
            meta.append((c, cuts, cnt, {"mean": mean, "std": sd, "skew": sk, "kurt": ku, "min": mn, "max": mx},
                         quart))
        counts = {}
        for col, bi, pv, nv in con.execute(" UNION ALL ".join(parts)).fetchall():
            counts.setdefault(col, []).append((bi, pv, nv))
        for i, (c, cuts, cnt, mom, quart) in enumerate(meta):
            nb = len(cuts) + 1
            cpos, cneg = np.zeros(nb + 1, np.int64), np.zeros(nb + 1, np.int64)
            for bi, pv, nv in counts.get(i, []):
                cpos[bi], cneg[bi] = pv, nv
            _bin_record(np, cols, c, cpos, cneg, [-np.inf] + cuts.tolist(), cnt, rows - cnt, mom, list(quart))
    for c in cat:
        g = con.execute(f"SELECT {q(c)}, count(*) FILTER (WHERE {t} = 1), count(*), "
                        f"count(*) FILTER (WHERE {t} = 0) FROM t GROUP BY {q(c)}").fetchall()
        miss = [x for x in g if x[0] is None]
        g = [x for x in g if x[0] is not None]
        _finish_categorical(np, cols, c, [x[0] for x in g], [x[1] for x in g], [x[2] for x in g],
                            sum(x[1] for x in miss), sum(x[3] for x in miss), sum(x[2] for x in miss))
    return rows, positives


def _stats_lightgbm(spec, threads, cols, tm):
    """LightGBM as a binning peer: the CSV through pyarrow, then lgb.Dataset(...).construct()
    with max_bin = maxNumBin (its defaults otherwise: bin bounds from a sample of 200,000 rows,
    categorical columns as dictionary codes). Binning only: no moments, no KS/IV."""
    import lightgbm as lgb
    import numpy as np
    import pyarrow
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    pyarrow.set_cpu_count(threads)
    pyarrow.set_io_thread_count(threads)
    tm["import_s"] = time.perf_counter() - tm["t0"]
    tab = pacsv.read_csv(spec["data"])
    tm["read_s"] = time.perf_counter() - tm["t0"] - tm["import_s"]
    feats = spec["features"]
    mats = []
    for c in feats:
        col = tab.column(c)
        if c in spec["categorical"]:
            codes = pc.dictionary_encode(col).combine_chunks().indices
            mats.append(codes.to_numpy(zero_copy_only=False).astype(np.float64))
        else:
            mats.append(col.to_numpy().astype(np.float64))
    x = np.column_stack(mats)
    y = tab.column(spec["target"]).to_numpy().astype(np.float64)
    cat_idx = [i for i, c in enumerate(feats) if c in spec["categorical"]]
    ds = lgb.Dataset(x, label=y, feature_name=feats, categorical_feature=cat_idx or "auto", free_raw_data=False,
                     params={"max_bin": MAX_NUM_BIN, "num_threads": threads, "verbose": -1})
    ds.construct()
    for i, c in enumerate(feats):
        cols[c] = {"type": "C" if c in spec["categorical"] else "N", "lightgbm_bins": int(ds.feature_num_bin(i))}
    return int(ds.num_data()), int((y == 1).sum())


STATS_PEERS = {"pandas": _stats_pandas, "polars": _stats_polars, "duckdb": _stats_duckdb,
               "lightgbm": _stats_lightgbm}


def peer_stats(engine, threads, spec_json, out_json):
    """One peer's stats of the data spec_json names (the peer worker's entry): per column
    count, missing, moments, quartiles, EqualPositive bins with pos / neg counts, KS/IV/WOE."""
    tm = {"t0": time.perf_counter()}
    with open(spec_json) as f:
        spec = json.load(f)
    cols = {}
    rows, positives = STATS_PEERS[engine](spec, int(threads), cols, tm)
    tm["compute_s"] = time.perf_counter() - tm.pop("t0") - tm["import_s"] - tm["read_s"]
    out = {"engine": engine, "threads": int(threads), "rows": int(rows), "positives": positives,
           "target": spec["target"], "features": spec["features"], "columns": cols, "timings": tm}
    with open(out_json + ".tmp", "w") as f:
        json.dump(out, f)
    os.replace(out_json + ".tmp", out_json)


def pandas_norm(spec_json, stats_json, out_bin, timings_json):
    """The same ZSCALE as tarn norm, in pandas (read_csv engine="pyarrow"), reusing the stats
    the pandas stats step saved (as tarn reuses ColumnConfig)."""
    t0 = time.perf_counter()
    import numpy as np
    import pandas as pd

    t_import = time.perf_counter()
    with open(spec_json) as f:
        spec = json.load(f)
    with open(stats_json) as f:
        st = json.load(f)
    df = pd.read_csv(spec["data"], engine="pyarrow")
    t_read = time.perf_counter()
    y = df[spec["target"]].to_numpy(dtype=np.float64)
    pos = y == 1.0
    valid = pos | (y == 0.0)
    if not valid.all():
        df, pos = df[valid], pos[valid]
    features = st["features"]
    out = np.empty((len(df), len(features) + 2), dtype=np.float32)

    def zscore(x, mean, sd):
        if sd <= 1e-5:
            return np.zeros(len(x))
        return (np.clip(x, mean - STD_CUTOFF * sd, mean + STD_CUTOFF * sd) - mean) / sd

    for j, c in enumerate(features):
        cs = st["columns"][c]
        if cs["type"] == "C":
            codes, uniques = pd.factorize(df[c])  # -1 for missing
            lut = pd.Series(cs["rates"], index=cs["categories"]).reindex(uniques.astype(str))
            lut = np.append(lut.fillna(cs["missing_rate"]).to_numpy(np.float64), cs["missing_rate"])
            x = lut[codes]  # code -1 picks the trailing missing rate
        else:
            x = df[c].to_numpy(dtype=np.float64)
            x = np.where(np.isnan(x), cs["mean"], x)  # missing -> mean, as tarn
        out[:, j] = zscore(x, cs["mean"], cs["std"])
    out[:, -2] = pos
    out[:, -1] = 1.0  # weight
    t_norm = time.perf_counter()
    with open(out_bin, "wb") as f:
        out.tofile(f)
        f.flush()
        os.fsync(f.fileno())
    t_end = time.perf_counter()
    with open(timings_json, "w") as f:
        json.dump({"import_s": t_import - t0, "read_s": t_read - t_import,
                   "compute_s": t_norm - t_read, "write_fsync_s": t_end - t_norm}, f)


def generate(kind, rows, cols, out_csv):
    """A generated table (numpy, seeded), written as plain CSV with pyarrow: `highcard`, float
    columns of many distinct values (normal, log-normal, uniform, a mixture) or `wide`, many
    such columns; 8% of each column's values missing (empty fields); `label` 0/1 drawn from
    the sigmoid of a sum of the columns' effects."""
    import numpy as np
    import pyarrow as pa
    from pyarrow import csv as pacsv

    rng = np.random.default_rng(20261201 if kind == "highcard" else 20261202)
    data, logit = {}, np.full(rows, -1.4)
    for j in range(cols):
        kind_j = j % 4
        if kind_j == 0:
            x = rng.normal(50.0, 15.0, rows)
        elif kind_j == 1:
            x = rng.lognormal(3.0, 1.0, rows)
        elif kind_j == 2:
            x = rng.uniform(-1000.0, 1000.0, rows)
        else:
            x = np.where(rng.random(rows) < 0.3, rng.normal(-5, 1, rows), rng.normal(10, 4, rows))
        x = np.round(x, 4)
        z = (x - x.mean()) / x.std()
        logit += (0.6 if j < 12 else 0.05) * np.sin(j + 1.0) * z
        mask = rng.random(rows) < 0.08
        data[f"f{j:03d}"] = pa.array(x, mask=mask)
    data["label"] = pa.array((rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int8))
    with open(out_csv + ".tmp", "wb") as f:
        f.write((",".join(data) + "\n").encode())  # pyarrow would quote the header's names
        pacsv.write_csv(pa.table(data), f, pacsv.WriteOptions(include_header=False, quoting_style="none"))
    os.replace(out_csv + ".tmp", out_csv)


def compare_norm(tarn_folder, pandas_bin, out_json):
    """Max |tarn - pandas| per column of the two normalized matrices."""
    import numpy as np

    shards = sorted(p for p in os.listdir(tarn_folder) if p.endswith(".tshard"))
    mats, names = [], None
    for p in shards:
        with open(os.path.join(tarn_folder, p), "rb") as f:
            head = f.read(40)
            assert head[:8] == b"TARNSHRD", p
            hbytes = int.from_bytes(head[12:16], "little")
            rows = int.from_bytes(head[16:24], "little")
            fpr = int.from_bytes(head[24:28], "little")
            hjson = json.loads(f.read(hbytes))
            names = [ft.get("name") for ft in hjson.get("features", [])]
        start = (40 + hbytes + 63) // 64 * 64
        mats.append(np.fromfile(os.path.join(tarn_folder, p), dtype="<f4", offset=start,
                                count=rows * fpr).reshape(rows, fpr))
    t = np.concatenate(mats) if len(mats) > 1 else mats[0]
    pm = np.fromfile(pandas_bin, dtype="<f4").reshape(-1, t.shape[1])
    res = {"tarn_rows": int(t.shape[0]), "pandas_rows": int(pm.shape[0]),
           "floats_per_row": int(t.shape[1]), "features": names}
    if t.shape == pm.shape:
        d = np.abs(t.astype(np.float64) - pm.astype(np.float64)).max(axis=0)
        res["max_abs_diff_per_column"] = d.tolist()
        res["max_abs_diff"] = float(d.max())
    with open(out_json, "w") as f:
        json.dump(res, f)


# --------------------------------------------------------------------------------------
# orchestrator: standard library only
# --------------------------------------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "build", "bench-venv")
WORK = os.path.join(ROOT, "build", "bench-work")
RESULTS = os.path.join(ROOT, "bench", "results", NAME + ".json")


def log(msg):
    print(msg, flush=True)


def die(msg):
    print(f"{NAME}: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def venv_python():
    return os.path.join(VENV, "bin", "python")


PEERS = tuple(STATS_PEERS)
# Every peer tried at both in the first shape's warm-up round; the measured rounds (and later
# shapes) run it at the faster one (every count in every round would not fit in a session on
# the shared machine).
PEER_THREADS = (1, 2)
VENV_PACKAGES = ["pandas", "numpy", "pyarrow", "polars", "duckdb", "lightgbm", "threadpoolctl"]
GOAL_SPEEDUP = 5.0  # issue 13: tarn stats / norm over the fastest of polars, DuckDB, tuned pandas
GOAL_MB_PER_CORE_PASS = 500.0
GOAL_RSS_MB = 300.0


def ensure_venv():
    """build/bench-venv with VENV_PACKAGES from PyPI (latest); returns their versions."""
    py = venv_python()
    probe = ("import json, importlib.metadata as m, numpy, pandas, pyarrow, polars, duckdb, lightgbm\n"
             f"print(json.dumps({{p: m.version(p) for p in {VENV_PACKAGES!r}}}))")
    if os.path.exists(py):
        r = subprocess.run([py, "-c", probe], capture_output=True, text=True)
        if r.returncode == 0:
            return json.loads(r.stdout)
    log(f"{NAME}: making {os.path.relpath(VENV, ROOT)} ({', '.join(VENV_PACKAGES)} from PyPI)")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    r = subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + VENV_PACKAGES)
    if r.returncode != 0:
        die(f"pip install {' '.join(VENV_PACKAGES)} failed (is PyPI reachable?)")
    r = subprocess.run([py, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def peer_env():
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)  # BENCHMARKING.md: the peer runs without these
    return env


def run_timed(cmd, cwd, env=None, label=""):
    res = _common.run_timed(cmd, cwd, os.path.join(WORK, "time-v.txt"), env)
    if res["returncode"] != 0:
        die(f"{label} failed (exit {res['returncode']}): {' '.join(cmd)}")
    res.pop("stdout")
    res.pop("returncode")
    return res


def tarn_pass_times(stderr):
    """Per-pass seconds from tarn's progress lines ('stats: ..., 0.3s', and 'stats recount of
    N columns: ..., 0.2s' when some numeric column has too many distinct values for exact
    one-pass counts)."""
    return [float(m.group(2)) for m in
            re.finditer(r"^(stats|stats recount of \d+ columns|norm): \d+ rows.*?([\d.]+)s$",
                         stderr, re.M)]


def gzip_size(path):
    n = 0
    with gzip.open(path, "rb") as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                return n
            n += len(b)


def prepare_model_set(tarn, shape, data, target, categorical):
    """build/bench-work/SHAPE: tarn new, ModelConfig edits, tarn init (once per run)."""
    ms = os.path.join(WORK, shape)
    shutil.rmtree(ms, ignore_errors=True)
    subprocess.run([tarn, "new", shape, "-q"], cwd=WORK, check=True)
    mc_path = os.path.join(ms, "ModelConfig.json")
    with open(mc_path) as f:
        mc = json.load(f)
    mc["dataSet"].update(dataPath=data, headerPath="", dataDelimiter=",", headerDelimiter=",",
                         targetColumnName=target, posTags=POS_TAGS, negTags=NEG_TAGS)
    with open(mc_path, "w") as f:
        json.dump(mc, f, indent=2)
    with open(os.path.join(ms, "columns", "categorical.column.names"), "w") as f:
        f.write("".join(c + "\n" for c in categorical))
    subprocess.run([tarn, "init", "-q"], cwd=ms, check=True)
    with open(os.path.join(ms, "ColumnConfig.json")) as f:
        cc = json.load(f)
    types = {}
    for c in cc:
        types.setdefault(c["columnType"], []).append(c["columnName"])
    log(f"{NAME}: {shape}: model set {os.path.relpath(ms, ROOT)}: column types "
        + "; ".join(f"{k}: {len(v)} ({', '.join(v[:8])}{' ...' if len(v) > 8 else ''})" for k, v in types.items()))
    features = [c["columnName"] for c in cc if c["columnName"] != target and c.get("columnFlag") not in ("Target", "Meta")]
    return ms, features


def summarize(runs, rows, mb=None, passes=None, cores=None):
    walls = [r["wall_s"] for r in runs]
    rss = [r["rss_kb"] for r in runs]
    s = {"wall_s": walls, "rss_kb": rss,
         "user_s": [r.get("user_s") for r in runs], "sys_s": [r.get("sys_s") for r in runs],
         "cpu_s": [r.get("user_s", 0) + r.get("sys_s", 0) for r in runs],
         "median_wall_s": med(walls), "median_rss_mb": med(rss) / 1024.0,
         "max_rss_mb": max(rss) / 1024.0, "rows_per_s": rows / med(walls)}
    if "passes_s" in runs[0]:
        s["passes_s"] = [r["passes_s"] for r in runs]
        if all(len(r["passes_s"]) == len(runs[0]["passes_s"]) for r in runs):
            s["median_passes_s"] = [med(p) for p in zip(*s["passes_s"])]
    if "phases" in runs[0]:
        s["phases"] = [r["phases"] for r in runs]
        s["median_phases"] = {k: med([r["phases"][k] for r in runs]) for k in runs[0]["phases"]}
    s["median_cpu_s"] = med(s["cpu_s"])
    if mb is not None:
        s["mb_per_s_per_core_per_pass"] = mb * passes / med(walls) / cores
        # The same per CPU-second used (user + sys): steadier than wall on a busy machine.
        s["mb_per_cpu_s_per_pass"] = mb * passes / s["median_cpu_s"]
    return s


SHAPES = ("flights_3m", "highcard", "wide")


def shape_data(shape, a):
    """(CSV path, target, categorical columns) of a data shape, generating the table on first
    use (build/bench-work/gen-*.csv, kept while its size settings match)."""
    if shape == "flights_3m":
        data = a.data or os.path.join(os.path.dirname(ROOT), "shared", "datasets", "flights_3m.csv.gz")
        return os.path.abspath(data), TARGET, CATEGORICAL
    rows, cols = (a.highcard_rows, a.highcard_cols) if shape == "highcard" else (a.wide_rows, a.wide_cols)
    path = os.path.join(WORK, f"gen-{shape}-{rows}x{cols}.csv")
    if not os.path.exists(path):
        log(f"{NAME}: generating {os.path.relpath(path, ROOT)} ({rows} rows x {cols} float columns, 8% missing)")
        subprocess.run([venv_python(), os.path.abspath(__file__), "--generate", shape, str(rows), str(cols), path],
                       check=True)
    return path, "label", []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", help="the tarn binary (e.g. build/bin/tarn)")
    ap.add_argument("--rounds", type=int, default=_common.MIN_ROUNDS,
                    help=f"measured rounds after one warm-up (>= {_common.MIN_ROUNDS})")
    ap.add_argument("--threads", type=int, default=0, help="tarn threads (default: the machine's cores)")
    ap.add_argument("--data", default=None, help="flights_3m.csv.gz (default ../shared/datasets/)")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated subset of " + ",".join(SHAPES))
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--highcard-rows", type=int, default=1_000_000)
    ap.add_argument("--highcard-cols", type=int, default=12)
    ap.add_argument("--wide-rows", type=int, default=25_000)
    ap.add_argument("--wide-cols", type=int, default=300)
    add_method_args(ap)
    ap.add_argument("--peer-stats", nargs=4, metavar=("ENGINE", "THREADS", "SPEC", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--pandas-norm", nargs=4, metavar=("SPEC", "STATS", "OUT_BIN", "TIMINGS"), help=argparse.SUPPRESS)
    ap.add_argument("--compare-norm", nargs=3, metavar=("TARN_DIR", "PANDAS_BIN", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--generate", nargs=4, metavar=("KIND", "ROWS", "COLS", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer_stats:
        return peer_stats(*a.peer_stats)
    if a.pandas_norm:
        return pandas_norm(*a.pandas_norm)
    if a.compare_norm:
        return compare_norm(*a.compare_norm)
    if a.generate:
        return generate(a.generate[0], int(a.generate[1]), int(a.generate[2]), a.generate[3])

    shapes = [x for x in a.shapes.split(",") if x]
    peers = [x for x in a.peers.split(",") if x]
    for x in shapes:
        if x not in SHAPES:
            die(f"unknown shape {x} (known: {', '.join(SHAPES)})")
    for x in peers:
        if x not in PEERS:
            die(f"unknown peer {x} (known: {', '.join(PEERS)})")
    if "flights_3m" in shapes and not os.path.exists(shape_data("flights_3m", a)[0]):
        log(f"SKIP {NAME} flights_3m: dataset {shape_data('flights_3m', a)[0]} is missing "
            "(see ../shared/datasets/README.md)")
        shapes.remove("flights_3m")
    if not shapes:
        return 0
    if not a.tarn:
        die("usage: bench/stats_norm_vs_pandas.py TARN")
    tarn = os.path.abspath(a.tarn)
    if not os.access(tarn, os.X_OK):
        die(f"tarn binary {tarn} not found; run 'make build'")
    if not os.access("/usr/bin/time", os.X_OK):
        die("/usr/bin/time is missing; run scripts/install-deps (Debian package 'time')")
    git = check_tree(NAME, a)
    check_rounds(NAME, a)

    os.makedirs(WORK, exist_ok=True)
    machine = machine_info()
    threads = a.threads or machine["nproc"]
    versions = ensure_venv()
    versions["tarn"] = subprocess.run([tarn, "--version"], capture_output=True, text=True).stdout.strip()
    versions["python"] = subprocess.run([venv_python(), "-c", "import platform; print(platform.python_version())"],
                                        capture_output=True, text=True).stdout.strip()
    tarn_sha = sha256(tarn)
    log(f"{NAME}: {versions['tarn']} ({threads} threads) | peers at {', '.join(map(str, PEER_THREADS))} threads: "
        + " ".join(f"{k} {v}" for k, v in versions.items() if k != "tarn")
        + f" | {machine['nproc']} cores, {machine['cpu_model']}")
    me = os.path.abspath(__file__)
    penv = peer_env()
    res = {"benchmark": NAME, "machine": machine, "versions": versions, "git": git, "tarn_sha256": tarn_sha,
           "threads": {"tarn": threads, "peers": list(PEER_THREADS)}, "warmup_rounds": 1, "rounds": a.rounds,
           "ratio": "peer wall / tarn wall (the peer at its better thread count), per round; median reported",
           "goals": {"speedup_over_fastest_peer": GOAL_SPEEDUP, "mb_per_s_per_core_per_pass": GOAL_MB_PER_CORE_PASS,
                     "tarn_peak_rss_mb": GOAL_RSS_MB},
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "shapes": {}}
    lines = []
    all_ok = True
    best_t = {}  # peer -> the thread count it is measured at
    for shape in shapes:
        data, target, categorical = shape_data(shape, a)
        ms, features = prepare_model_set(tarn, shape, data, target, categorical)
        comp_bytes = os.path.getsize(data)
        raw_bytes = gzip_size(data) if data.endswith(".gz") else comp_bytes
        mb = raw_bytes / 1e6
        sw = os.path.join(WORK, shape + "-peers")
        os.makedirs(sw, exist_ok=True)
        spec_json = os.path.join(sw, "spec.json")
        with open(spec_json, "w") as f:
            json.dump({"data": data, "target": target, "categorical": categorical, "features": features}, f)
        p_stats = os.path.join(sw, "pandas-norm-stats.json")
        p_bin = os.path.join(sw, "pandas_norm.f32")
        p_time = os.path.join(sw, "pandas_norm_timings.json")

        def tarn_cmd(step, t):
            def run():
                r = run_timed([tarn, step, f"-Dtarn.threads={t}"], cwd=ms, label=f"tarn {step} ({shape})")
                r["passes_s"] = tarn_pass_times(r.pop("stderr"))
                return r
            return run

        def peer_cmd(engine, t):
            out = os.path.join(sw, f"{engine}-{t}.json")

            def run():
                r = run_timed([venv_python(), me, "--peer-stats", engine, str(t), spec_json, out], cwd=sw, env=penv,
                              label=f"{engine} stats ({shape}, {t} threads)")
                r.pop("stderr")
                with open(out) as f:
                    r["out"] = json.load(f)
                r["phases"] = r["out"]["timings"]
                return r
            return run

        def pandas_norm_cmd():
            def run():
                r = run_timed([venv_python(), me, "--pandas-norm", spec_json, p_stats, p_bin, p_time], cwd=sw,
                              env=penv, label=f"pandas norm ({shape})")
                r.pop("stderr")
                with open(p_time) as f:
                    r["phases"] = json.load(f)
                return r
            return run

        # One round = these commands in this order: tarn, then every peer, so they alternate.
        # The warm-up runs every peer at every thread count; the rounds after it, at its faster.
        explore = not best_t  # thread counts are tried on the first shape; later shapes reuse them

        def plan_of(rnd):
            ts = (lambda e: PEER_THREADS) if rnd == 0 and explore else (lambda e: (best_t[e],))
            plan = [("stats.tarn", tarn_cmd("stats", threads))]
            plan += [(f"stats.{e}.{t}", peer_cmd(e, t)) for e in peers for t in ts(e)]
            plan += [("norm.tarn", tarn_cmd("norm", threads))]
            if "pandas" in peers:
                plan += [("norm.pandas", pandas_norm_cmd())]
            plan += [("stats.tarn1", tarn_cmd("stats", 1)), ("norm.tarn1", tarn_cmd("norm", 1))]
            return plan

        runs = {}
        warmup = {}
        for rnd in range(a.rounds + 1):
            line = []
            for key, fn in plan_of(rnd):
                if key == "norm.pandas":
                    # pandas norm reuses the pandas stats of this round (as tarn reuses ColumnConfig).
                    shutil.copy(os.path.join(sw, f"pandas-{best_t.get('pandas', PEER_THREADS[-1])}.json"), p_stats)
                r = fn()
                if rnd > 0:
                    runs.setdefault(key, []).append(r)
                else:
                    warmup[key] = r
                line.append(f"{key} {r['wall_s']:.2f}s/{r['rss_kb'] / 1024:.0f}MB")
            if rnd == 0 and explore:
                for e in peers:
                    best_t[e] = min(PEER_THREADS, key=lambda t: warmup[f"stats.{e}.{t}"]["wall_s"])
                res["peer_threads_chosen_on"] = shape
            log(f"{NAME}: {shape}: {'warm-up' if rnd == 0 else f'round {rnd}/{a.rounds}'}: " + "  ".join(line))

        with open(os.path.join(ms, "ColumnConfig.json")) as f:
            cc = {c["columnName"]: c for c in json.load(f)}
        rows = cc[features[0]]["columnStats"]["totalCount"]
        sres = {"data": data, "rows": rows, "columns": len(features) + 1, "numeric": len(features) - len(categorical),
                "categorical": categorical, "compressed_bytes": comp_bytes, "uncompressed_bytes": raw_bytes,
                "comparisons": {}}

        def passes_of(step):
            """Passes tarn made over the CSV, from its own progress lines."""
            times = runs[f"{step}.tarn"][0].get("passes_s") or []
            return max(1, len(times))


        checks = []

        def check(name, ok, detail):
            checks.append({"check": name, "ok": bool(ok), "detail": detail})

        for step in ("stats", "norm"):
            passes = passes_of(step)
            t = summarize(runs[f"{step}.tarn"], rows, mb, passes, threads)
            t1 = summarize(runs[f"{step}.tarn1"], rows, mb, passes, 1)
            sp, sp_med = ratios_per_round([x["wall_s"] for x in runs[f"{step}.tarn1"]],
                                          [x["wall_s"] for x in runs[f"{step}.tarn"]])
            comp = {"tarn": t, "tarn_1_thread": t1, "tarn_passes": passes, "thread_speedup_per_round": sp,
                    "median_thread_speedup": sp_med, "peers": {}}
            extra = (" (passes " + " + ".join(f"{x:.1f}" for x in t["median_passes_s"]) + " s)"
                     if "median_passes_s" in t else "")
            parts = [f"tarn {t['median_wall_s']:.2f} s (cpu {t['median_cpu_s']:.2f} s, {t['max_rss_mb']:.0f} MB peak)"
                     f"{extra}, {t['mb_per_s_per_core_per_pass']:.0f} MB/s/core/pass on {threads} threads, "
                     f"{t1['mb_per_s_per_core_per_pass']:.0f} on 1 ({t1['median_wall_s']:.2f} s); per CPU-second "
                     f"{t['mb_per_cpu_s_per_pass']:.0f} and {t1['mb_per_cpu_s_per_pass']:.0f} MB/pass"]
            step_peers = [e for e in peers if step == "stats"] or (["pandas"] if "pandas" in peers else [])
            fastest = None
            for e in step_peers:
                if step == "stats":
                    tb = best_t[e]
                    prs = runs[f"stats.{e}.{tb}"]
                else:
                    tb = threads
                    prs = runs["norm.pandas"]
                pp = summarize(prs, rows)
                pp["threads"] = tb
                if step == "stats" and explore:
                    pp["warmup_wall_s_by_threads"] = {str(t): warmup[f"stats.{e}.{t}"]["wall_s"] for t in PEER_THREADS}
                pp["ratio_per_round"], pp["median_ratio"] = ratios_per_round(
                    [x["wall_s"] for x in prs], [x["wall_s"] for x in runs[f"{step}.tarn"]])
                pp["cpu_ratio_per_round"], pp["median_cpu_ratio"] = ratios_per_round(pp["cpu_s"], t["cpu_s"])
                comp["peers"][e] = pp
                ph = pp.get("median_phases", {})
                label = f"{e} (binning only)" if e == "lightgbm" else e
                parts.append(f"{label} {pp['median_wall_s']:.2f} s at {tb} thread{'s' if tb > 1 else ''} "
                             f"(read {ph.get('read_s', 0):.2f} s, {pp['max_rss_mb']:.0f} MB) {pp['median_ratio']:.2f}x")
                if e != "lightgbm" and (fastest is None or pp["median_wall_s"] < comp["peers"][fastest]["median_wall_s"]):
                    fastest = e
            goals = []
            if fastest:
                fr = comp["peers"][fastest]["median_ratio"]
                comp["fastest_peer"] = fastest
                goals.append(f"fastest peer ({fastest}) {fr:.2f}x [{'OK' if fr >= GOAL_SPEEDUP else 'MISSED'} "
                             f">= {GOAL_SPEEDUP:.0f}x]")
            mbs = t["mb_per_s_per_core_per_pass"]
            goals.append(f"{mbs:.0f} MB/s/core/pass [{'OK' if mbs >= GOAL_MB_PER_CORE_PASS else 'MISSED'} "
                         f">= {GOAL_MB_PER_CORE_PASS:.0f}]")
            goals.append(f"peak RSS {max(t['max_rss_mb'], t1['max_rss_mb']):.0f} MB "
                         f"[{'OK' if max(t['max_rss_mb'], t1['max_rss_mb']) < GOAL_RSS_MB else 'MISSED'} "
                         f"< {GOAL_RSS_MB:.0f}]")
            sres["comparisons"][step] = comp
            lines.append(f"{NAME} {shape} {step} ({rows} rows, {len(features)} features, {mb:.0f} MB CSV): "
                         + " | ".join(parts) + " | " + "; ".join(goals))

        # Agreement with tarn's ColumnConfig figures, every column, every peer (the last round's).
        for e in peers:
            if e == "lightgbm":
                continue
            out = runs[f"stats.{e}.{best_t[e]}"][-1]["out"]
            check(f"{e} rows", out["rows"] == rows, f"tarn {rows} {e} {out['rows']}")
            bad = []
            worst = {"mean": 0.0, "std": 0.0, "ks": 0.0, "iv": 0.0}
            for c in features:
                ts, ps = cc[c]["columnStats"], out["columns"][c]
                if ts.get("missingCount") != ps["missing"]:
                    bad.append(f"{c} missing {ts.get('missingCount')} vs {ps['missing']}")
                if ps["type"] == "N":
                    for key, pkey, tol in (("mean", "mean", 1e-6), ("stdDev", "std", 1e-4)):
                        rel = abs(ts[key] - ps[pkey]) / max(abs(ps[pkey]), 1e-12)
                        worst[pkey] = max(worst[pkey], rel)
                        if rel > tol:
                            bad.append(f"{c} {key} {ts[key]:.8g} vs {ps[pkey]:.8g}")
                ks_tol = 1.0 if ps["type"] == "N" else 0.01
                dks, div = abs(ts["ks"] - ps["ks"]), abs(ts["iv"] - ps["iv"])
                worst["ks"], worst["iv"] = max(worst["ks"], dks), max(worst["iv"], div / max(abs(ps["iv"]), 1e-3))
                if dks > ks_tol:
                    bad.append(f"{c} KS {ts['ks']:.3f} vs {ps['ks']:.3f}")
                if div > 0.005 + 0.05 * abs(ps["iv"]):
                    bad.append(f"{c} IV {ts['iv']:.4f} vs {ps['iv']:.4f}")
            check(f"{e} every column", not bad,
                  f"{len(features)} columns; worst: mean rel {worst['mean']:.1e}, sd rel {worst['std']:.1e}, "
                  f"KS {worst['ks']:.2f} points, IV rel {worst['iv']:.3f}" + (f"; {'; '.join(bad[:6])}" if bad else ""))
        if "pandas" in peers:
            cmpf = os.path.join(sw, "compare_norm.json")
            subprocess.run([venv_python(), me, "--compare-norm", os.path.join(ms, "tmp", "NormalizedData"), p_bin, cmpf],
                           check=True, env=penv)
            with open(cmpf) as f:
                cn = json.load(f)
            check("norm rows", cn["tarn_rows"] == cn["pandas_rows"] == rows,
                  f"tarn {cn['tarn_rows']} pandas {cn['pandas_rows']}")
            check("norm values", cn.get("max_abs_diff", 1.0) <= 1e-4,
                  f"max |tarn - pandas| {cn['max_abs_diff']:.2e}" if "max_abs_diff" in cn else f"shapes differ: {cn}")
            sres["norm_compare"] = cn
        sres["agreement"] = checks
        ok = all(c["ok"] for c in checks)
        all_ok = all_ok and ok
        lines.append(f"{NAME} {shape} agreement: {'OK' if ok else 'MISMATCH'}: " + "; ".join(
            f"{c['check']} {'ok' if c['ok'] else 'FAIL'} ({c['detail']})" for c in checks))
        res["shapes"][shape] = sres
        for line in lines[-3:]:
            log(line)
        if shape != shapes[-1]:  # what is done so far, should a later shape not finish
            write_results(RESULTS, dict(res, complete=False), list(lines))

    finish(NAME, RESULTS, res, lines, tarn, tarn_sha, ran_a_copy=False)
    return 0 if all_ok else 2


if __name__ == "__main__":
    sys.exit(main())
