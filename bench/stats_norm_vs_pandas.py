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
from _common import finish, git_info, machine_info, med, sha256

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


def _tag_masks(pd, np, y):
    """Positive / negative masks of the target column as pandas' read_csv typed it."""
    if pd.api.types.is_numeric_dtype(y):
        pos = y.isin([float(t) for t in POS_TAGS]).to_numpy()
        neg = y.isin([float(t) for t in NEG_TAGS]).to_numpy()
    else:
        s = y.astype(str).str.strip()
        pos = s.isin(POS_TAGS).to_numpy()
        neg = s.isin(NEG_TAGS).to_numpy()
    return pos, neg


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


def pandas_stats(data, out_json, timings_json):
    t0 = time.perf_counter()
    import numpy as np
    import pandas as pd

    t_import = time.perf_counter()
    df = pd.read_csv(data)  # pandas defaults: C engine, header from the first line
    t_read = time.perf_counter()

    pos, neg = _tag_masks(pd, np, df[TARGET])
    valid = pos | neg
    if not valid.all():  # tarn skips rows whose target is neither tag
        df, pos, neg = df[valid], pos[valid], neg[valid]
    features = [c for c in df.columns if c != TARGET]
    cols = {}
    for c in features:
        s = df[c]
        missing = int(s.isna().sum())
        count = int(len(s) - missing)
        if c in CATEGORICAL or not pd.api.types.is_numeric_dtype(s):
            # Per-category positive / negative counts, sorted by positive rate.
            g = pd.Series(pos, index=s.index, dtype=np.int64).groupby(s, sort=False).agg(["sum", "count"])
            g = g.rename(columns={"sum": "pos"})
            g["neg"] = g["count"] - g["pos"]
            g["rate"] = g["pos"] / g["count"]
            g = g.sort_values("rate", kind="stable")
            na = s.isna().to_numpy()
            miss_pos, miss_neg = int(pos[na].sum()), int(neg[na].sum())
            cpos = np.append(g["pos"].to_numpy(), miss_pos)
            cneg = np.append(g["neg"].to_numpy(), miss_neg)
            ks, iv, woe, bin_woe = _bin_metrics(np, cneg, cpos)
            # Row-level mean / sample sd of the category positive rate: what ZSCALE z-scores.
            cnt, rate = g["count"].to_numpy(np.float64), g["rate"].to_numpy()
            n = cnt.sum()
            mean = float((cnt * rate).sum() / n) if n else 0.0
            var = float(((cnt * rate * rate).sum() - n * mean * mean) / (n - 1)) if n > 1 else 0.0
            miss_total = miss_pos + miss_neg
            cols[c] = {
                "type": "C", "count": count, "missing": missing, "nunique": int(len(g)),
                "mean": mean, "std": max(var, 0.0) ** 0.5,
                "min": float(rate.min()) if len(rate) else None,
                "max": float(rate.max()) if len(rate) else None,
                "ks": ks, "iv": iv, "woe": woe, "bin_woe": bin_woe,
                "categories": [str(k) for k in g.index], "rates": rate.tolist(),
                "missing_rate": (miss_pos / miss_total) if miss_total else 0.0,
            }
        else:
            x = s.to_numpy(dtype=np.float64)
            q = s.quantile([0.25, 0.5, 0.75])
            # EqualPositive: cut points at the positives' deciles; bin i = [b_i, b_i+1).
            xp = x[pos]
            xp = xp[~np.isnan(xp)]
            if len(xp):
                cuts = np.unique(np.quantile(xp, np.arange(1, MAX_NUM_BIN) / MAX_NUM_BIN))
                cuts = cuts[cuts > xp.min()]  # a cut at the minimum would make an empty bin
            else:
                cuts = np.array([])
            bounds = np.concatenate([[-np.inf], cuts])
            nb = len(bounds)
            idx = np.searchsorted(bounds, x, side="right") - 1
            idx[np.isnan(x)] = nb  # the missing bin
            cpos = np.bincount(idx[pos], minlength=nb + 1)
            cneg = np.bincount(idx[neg], minlength=nb + 1)
            ks, iv, woe, bin_woe = _bin_metrics(np, cneg, cpos)
            cols[c] = {
                "type": "N", "count": count, "missing": missing, "nunique": int(s.nunique()),
                "mean": float(s.mean()), "std": float(s.std()), "skew": float(s.skew()),
                "kurt": float(s.kurt()), "min": float(s.min()), "max": float(s.max()),
                "p25": float(q[0.25]), "p50": float(q[0.5]), "p75": float(q[0.75]),
                "bounds": bounds.tolist(), "count_pos": cpos.tolist(), "count_neg": cneg.tolist(),
                "ks": ks, "iv": iv, "woe": woe, "bin_woe": bin_woe,
            }
    t_stats = time.perf_counter()
    out = {"rows": int(len(df)), "positives": int(pos.sum()), "target": TARGET,
           "features": features, "columns": cols}
    with open(out_json, "w") as f:
        json.dump(out, f)
    t_end = time.perf_counter()
    with open(timings_json, "w") as f:
        json.dump({"import_s": t_import - t0, "read_csv_s": t_read - t_import,
                   "compute_s": t_stats - t_read, "write_s": t_end - t_stats}, f)


def pandas_norm(data, stats_json, out_bin, timings_json):
    t0 = time.perf_counter()
    import numpy as np
    import pandas as pd

    t_import = time.perf_counter()
    with open(stats_json) as f:
        st = json.load(f)  # reuse the stats of the pandas stats step, as tarn reuses ColumnConfig
    df = pd.read_csv(data)
    t_read = time.perf_counter()

    pos, neg = _tag_masks(pd, np, df[TARGET])
    valid = pos | neg
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
        json.dump({"import_s": t_import - t0, "read_csv_s": t_read - t_import,
                   "compute_s": t_norm - t_read, "write_fsync_s": t_end - t_norm}, f)


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


def ensure_venv():
    """build/bench-venv with pandas, numpy and pyarrow from PyPI; returns their versions.

    pyarrow is pandas' recommended string backend (pandas 3 uses it when present): the peer at
    its best, as BENCHMARKING.md asks."""
    py = venv_python()
    probe = ("import json, numpy, pandas\n"
             "try:\n import pyarrow; pa = pyarrow.__version__\n"
             "except ImportError:\n pa = None\n"
             "print(json.dumps({'pandas': pandas.__version__, 'numpy': numpy.__version__,"
             " 'pyarrow': pa}))")
    if os.path.exists(py):
        r = subprocess.run([py, "-c", probe], capture_output=True, text=True)
        if r.returncode == 0 and json.loads(r.stdout).get("pyarrow"):
            return json.loads(r.stdout)
    log(f"{NAME}: making {os.path.relpath(VENV, ROOT)} (pandas, numpy, pyarrow from PyPI)")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    r = subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "pandas", "numpy", "pyarrow"])
    if r.returncode != 0:
        die("pip install pandas numpy pyarrow failed (is PyPI reachable?)")
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


def prepare_model_set(tarn, data):
    """build/bench-work/flights_3m: tarn new, ModelConfig edits, tarn init (once per run)."""
    ms = os.path.join(WORK, "flights_3m")
    shutil.rmtree(ms, ignore_errors=True)
    subprocess.run([tarn, "new", "flights_3m", "-q"], cwd=WORK, check=True)
    mc_path = os.path.join(ms, "ModelConfig.json")
    with open(mc_path) as f:
        mc = json.load(f)
    mc["dataSet"].update(dataPath=data, headerPath="", dataDelimiter=",", headerDelimiter=",",
                         targetColumnName=TARGET, posTags=POS_TAGS, negTags=NEG_TAGS)
    with open(mc_path, "w") as f:
        json.dump(mc, f, indent=2)
    with open(os.path.join(ms, "columns", "categorical.column.names"), "w") as f:
        f.write("\n".join(CATEGORICAL) + "\n")
    subprocess.run([tarn, "init", "-q"], cwd=ms, check=True)
    with open(os.path.join(ms, "ColumnConfig.json")) as f:
        cc = json.load(f)
    types = {c["columnName"]: c["columnType"] for c in cc}
    log(f"{NAME}: model set {os.path.relpath(ms, ROOT)}: column types "
        + " ".join(f"{k}={v}" for k, v in types.items()))
    return ms


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarn", nargs="?", help="the tarn binary (e.g. build/bin/tarn)")
    ap.add_argument("--rounds", type=int, default=5, help="measured rounds after one warm-up (>= 5)")
    ap.add_argument("--threads", type=int, default=0, help="tarn threads (default: the machine's cores)")
    ap.add_argument("--data", default=None, help="flights_3m.csv.gz (default ../shared/datasets/)")
    ap.add_argument("--pandas-stats", nargs=3, metavar=("DATA", "OUT_JSON", "TIMINGS"), help=argparse.SUPPRESS)
    ap.add_argument("--pandas-norm", nargs=4, metavar=("DATA", "STATS", "OUT_BIN", "TIMINGS"), help=argparse.SUPPRESS)
    ap.add_argument("--compare-norm", nargs=3, metavar=("TARN_DIR", "PANDAS_BIN", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.pandas_stats:
        return pandas_stats(*a.pandas_stats)
    if a.pandas_norm:
        return pandas_norm(*a.pandas_norm)
    if a.compare_norm:
        return compare_norm(*a.compare_norm)

    data = a.data or os.path.join(os.path.dirname(ROOT), "shared", "datasets", "flights_3m.csv.gz")
    data = os.path.abspath(data)
    if not os.path.exists(data):
        log(f"SKIP {NAME}: dataset {data} is missing (see ../shared/datasets/README.md)")
        return 0
    if not a.tarn:
        die("usage: bench/stats_norm_vs_pandas.py TARN")
    tarn = os.path.abspath(a.tarn)
    if not os.access(tarn, os.X_OK):
        die(f"tarn binary {tarn} not found; run 'make build'")
    if not os.access("/usr/bin/time", os.X_OK):
        die("/usr/bin/time is missing; run scripts/install-deps (Debian package 'time')")
    if a.rounds < 5:
        die("--rounds must be at least 5 (BENCHMARKING.md)")

    os.makedirs(WORK, exist_ok=True)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    machine = machine_info()
    threads = a.threads or machine["nproc"]
    versions = ensure_venv()
    versions["tarn"] = subprocess.run([tarn, "--version"], capture_output=True, text=True).stdout.strip()
    versions["python"] = subprocess.run([venv_python(), "-c", "import platform; print(platform.python_version())"],
                                        capture_output=True, text=True).stdout.strip()
    tarn_sha = sha256(tarn)
    log(f"{NAME}: {versions['tarn']} ({threads} threads) | python {versions['python']} pandas "
        f"{versions['pandas']} numpy {versions['numpy']} pyarrow {versions['pyarrow']} (1 thread) | "
        f"{machine['nproc']} cores, {machine['cpu_model']}")

    ms = prepare_model_set(tarn, data)
    comp_bytes = os.path.getsize(data)
    raw_bytes = gzip_size(data)
    mb = raw_bytes / 1e6
    p_stats = os.path.join(WORK, "pandas_stats.json")
    p_bin = os.path.join(WORK, "pandas_norm.f32")
    p_time = os.path.join(WORK, "pandas_timings.json")
    me = os.path.abspath(__file__)
    penv = peer_env()

    def tarn_cmd(step, t):
        def run():
            r = run_timed([tarn, step, f"-Dtarn.threads={t}"], cwd=ms, label=f"tarn {step}")
            r["passes_s"] = tarn_pass_times(r.pop("stderr"))
            return r
        return run

    def pandas_cmd(args, label):
        def run():
            r = run_timed([venv_python(), me] + args, cwd=WORK, env=penv, label=label)
            r.pop("stderr")
            with open(p_time) as f:
                r["phases"] = json.load(f)
            return r
        return run

    # One round = these commands in this order: each tarn command directly followed by
    # its peer, so the pairs alternate A B A B across rounds.
    plan = [
        ("stats.tarn", tarn_cmd("stats", threads)),
        ("stats.pandas", pandas_cmd(["--pandas-stats", data, p_stats, p_time], "pandas stats")),
        ("norm.tarn", tarn_cmd("norm", threads)),
        ("norm.pandas", pandas_cmd(["--pandas-norm", data, p_stats, p_bin, p_time], "pandas norm")),
        ("stats.tarn1", tarn_cmd("stats", 1)),
        ("norm.tarn1", tarn_cmd("norm", 1)),
    ]
    runs = {k: [] for k, _ in plan}
    for rnd in range(a.rounds + 1):
        line = []
        for key, fn in plan:
            r = fn()
            if rnd > 0:
                runs[key].append(r)
            line.append(f"{key} {r['wall_s']:.2f}s/{r['rss_kb'] / 1024:.0f}MB")
        log(f"{NAME}: {'warm-up' if rnd == 0 else f'round {rnd}/{a.rounds}'}: " + "  ".join(line))

    # tarn's row count and stats from its ColumnConfig.json, the last round's.
    with open(os.path.join(ms, "ColumnConfig.json")) as f:
        cc = {c["columnName"]: c for c in json.load(f)}
    with open(p_stats) as f:
        ps = json.load(f)
    rows = ps["rows"]
    cmpf = os.path.join(WORK, "compare_norm.json")
    subprocess.run([venv_python(), me, "--compare-norm", os.path.join(ms, "tmp", "NormalizedData"),
                    p_bin, cmpf], check=True, env=penv)
    with open(cmpf) as f:
        cn = json.load(f)

    res = {"benchmark": NAME, "dataset": {"path": data, "rows": rows, "columns": len(ps["features"]) + 1,
                                          "compressed_bytes": comp_bytes, "uncompressed_bytes": raw_bytes},
           "machine": machine, "versions": versions, "git": git_info(), "tarn_sha256": tarn_sha,
           "threads": {"tarn": threads, "pandas": 1}, "warmup_rounds": 1, "rounds": a.rounds,
           "ratio": "pandas wall / tarn wall, per round; median reported",
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "comparisons": {}}
    lines = []
    def passes_of(step):
        """Passes tarn made over the CSV, from its own progress lines."""
        times = runs[f"{step}.tarn"][0].get("passes_s") or []
        return max(1, len(times))

    for step, passes in (("stats", passes_of("stats")), ("norm", 1)):
        t = summarize(runs[f"{step}.tarn"], rows, mb, passes, threads)
        p = summarize(runs[f"{step}.pandas"], rows)
        ratios = [pp["wall_s"] / tt["wall_s"] for tt, pp in zip(runs[f"{step}.tarn"], runs[f"{step}.pandas"])]
        cpu_ratios = [pc / tc for tc, pc in zip(t["cpu_s"], p["cpu_s"])]
        res["comparisons"][step] = {"tarn": t, "pandas": p, "ratio_per_round": ratios,
                                    "median_ratio": med(ratios), "cpu_ratio_per_round": cpu_ratios,
                                    "median_cpu_ratio": med(cpu_ratios), "tarn_passes": passes}
        extra = ""
        if "median_passes_s" in t and step == "stats":
            extra = " (passes " + " + ".join(f"{x:.1f}" for x in t["median_passes_s"]) + " s)"
        ph = p.get("median_phases", {})
        lines.append(
            f"{NAME} {step}: tarn {t['rows_per_s'] / 1e6:.2f} Mrows/s {t['median_wall_s']:.2f} s "
            f"(cpu {t['median_cpu_s']:.2f} s) {t['median_rss_mb']:.0f} MB{extra} | pandas "
            f"{p['rows_per_s'] / 1e6:.2f} Mrows/s {p['median_wall_s']:.2f} s (cpu {p['median_cpu_s']:.2f} s) "
            f"{p['median_rss_mb']:.0f} MB (read_csv {ph.get('read_csv_s', 0):.2f} s) | "
            f"pandas/tarn {med(ratios):.2f}x wall, {med(cpu_ratios):.2f}x cpu | tarn {t['mb_per_s_per_core_per_pass']:.1f} MB/s/core/pass "
            f"({mb:.1f} MB CSV x {passes} pass{'es' if passes > 1 else ''} / {threads} cores)")
    for step, passes in (("stats", passes_of("stats")), ("norm", 1)):
        t1 = summarize(runs[f"{step}.tarn1"], rows, mb, passes, 1)
        tn = res["comparisons"][step]["tarn"]
        sp = [a1["wall_s"] / an["wall_s"] for a1, an in zip(runs[f"{step}.tarn1"], runs[f"{step}.tarn"])]
        res["comparisons"][f"{step}_threads"] = {"tarn_1_thread": t1, f"tarn_{threads}_threads": tn,
                                                 "speedup_per_round": sp, "median_speedup": med(sp)}
        extra = ""
        if "median_passes_s" in t1 and step == "stats":
            extra = " (passes " + " + ".join(f"{x:.1f}" for x in t1["median_passes_s"]) + " s)"
        lines.append(
            f"{NAME} {step} threads: tarn 1 thread {t1['median_wall_s']:.2f} s (cpu {t1['median_cpu_s']:.2f} s) "
            f"{t1['median_rss_mb']:.0f} MB "
            f"{t1['mb_per_s_per_core_per_pass']:.1f} MB/s/core/pass{extra} | {threads} threads "
            f"{tn['median_wall_s']:.2f} s (cpu {tn['median_cpu_s']:.2f} s) {tn['median_rss_mb']:.0f} MB "
            f"{tn['mb_per_s_per_core_per_pass']:.1f} "
            f"MB/s/core/pass | speedup {med(sp):.2f}x")

    # Agreement of the two tools on the same data.
    checks = []

    def check(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    t_rows = cc[MEAN_COLUMN]["columnStats"]["totalCount"]
    check("stats rows", t_rows == rows, f"tarn {t_rows} pandas {rows}")
    check("norm rows", cn["tarn_rows"] == cn["pandas_rows"] == rows,
          f"tarn {cn['tarn_rows']} pandas {cn['pandas_rows']}")
    for key, pkey in (("mean", "mean"), ("stdDev", "std")):
        tv, pv = cc[MEAN_COLUMN]["columnStats"][key], ps["columns"][MEAN_COLUMN][pkey]
        rel = abs(tv - pv) / max(abs(pv), 1e-300)
        check(f"{key}({MEAN_COLUMN})", rel <= 1e-6, f"tarn {tv:.10g} pandas {pv:.10g} rel {rel:.1e}")
    for c in KS_COLUMNS:
        tv, pv = cc[c]["columnStats"]["ks"], ps["columns"][c]["ks"]
        check(f"KS({c})", abs(tv - pv) <= 1.0, f"tarn {tv:.3f} pandas {pv:.3f}")
    if "max_abs_diff" in cn:
        check("norm values", cn["max_abs_diff"] <= 1e-4, f"max |tarn - pandas| {cn['max_abs_diff']:.2e}")
    else:
        check("norm values", False, f"shapes differ: {cn}")
    res["agreement"] = {"checks": checks, "norm_compare": cn}
    ok = all(c["ok"] for c in checks)
    lines.append(f"{NAME} agreement: {'OK' if ok else 'MISMATCH'}: " + "; ".join(
        f"{c['check']} {'ok' if c['ok'] else 'FAIL'} ({c['detail']})" for c in checks))

    finish(NAME, RESULTS, res, lines, tarn, tarn_sha, ran_a_copy=False)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
