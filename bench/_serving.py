"""Helpers shared by the serving benchmarks (serving_vs_ceiling.py, serving_vs_peers.py): the
income model, its request rows, `tarn serve` processes, wrk, the open-loop load generator and
the handler-time histogram of /metrics. Not a benchmark itself: run-all skips `_*` files."""
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request

import _common

ROOT = _common.ROOT
EXAMPLE = os.path.join(ROOT, "examples", "income-estimation", "DataStore")


def run(name, cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
        raise SystemExit(f"{name}: {' '.join(map(str, cmd))} failed")
    return r


def make_model(name, tarn, work, eval_set=False):
    """A trained income model set (14 raw columns -> 50 tanh -> 1, 2 epochs on the bundled
    Adult data) under WORK/income and its serving version under WORK/base (WORK is emptied
    first). eval_set: EvalSet1 is the model set's eval set (for `tarn eval -norm`)."""
    ms = os.path.join(work, "income")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run(name, [tarn, "new", "income"], cwd=work)
    path = os.path.join(ms, "ModelConfig.json")
    with open(path) as f:
        mc = json.load(f)
    mc["dataSet"].update({
        "dataPath": os.path.join(EXAMPLE, "DataSet1"),
        "headerPath": os.path.join(EXAMPLE, "DataSet1", ".pig_header"),
        "targetColumnName": "Target", "posTags": [">50K"], "negTags": ["<=50K"]})
    if eval_set:
        mc["evals"][0]["dataSet"].update({
            "dataPath": os.path.join(EXAMPLE, "EvalSet1"),
            "headerPath": os.path.join(EXAMPLE, "EvalSet1", ".pig_header"),
            "targetColumnName": "Target", "posTags": [">50K"], "negTags": ["<=50K"]})
    mc["varSelect"]["filterNum"] = 50
    mc["train"].update({"algorithm": "TensorFlow", "numTrainEpochs": 2, "params": {
        "NumHiddenLayers": 1, "NumHiddenNodes": [50], "ActivationFunc": ["tanh"],
        "LearningRate": 0.002, "MiniBatchs": 128, "Propagation": "Adam"}})
    with open(path, "w") as f:
        json.dump(mc, f, indent=2)
    for step in ("init", "stats", "norm", "varsel", "train"):
        run(name, [tarn, step], cwd=ms)
    base = os.path.join(work, "base")
    run(name, [tarn, "export", "-t", "serving", "-o", base], cwd=ms)
    return ms, base


def raw_records(n):
    """The first n records of EvalSet1 as {column: raw text}, without the target."""
    header = open(os.path.join(EXAMPLE, "EvalSet1", ".pig_header")).read().strip().split("|")
    records = []
    with gzip.open(os.path.join(EXAMPLE, "EvalSet1", "part-00000.gz"), "rt") as f:
        for line in f:
            rec = dict(zip(header, line.rstrip("\n").split("|")))
            rec.pop("Target")
            records.append(rec)
            if len(records) == n:
                break
    return records


class Server:
    """`tarn serve --port 0 ARGS`, optionally under `pin` (a command prefix such as
    ['taskset', '-c', '0'])."""

    def __init__(self, name, tarn, args, threads, scheme="http", pin=()):
        self.proc = subprocess.Popen([*pin, tarn, "serve", "--port", "0", "--threads",
                                      str(threads), "-q", *args], stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"listening on ([\d.]+):(\d+)", line)
        if not m:
            self.proc.kill()
            raise SystemExit(f"{name}: tarn serve did not start ({line!r})")
        self.url = f"{scheme}://{m.group(1)}:{m.group(2)}"
        self.port = int(m.group(2))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def wrk(name, work, url, body_file, seconds, connections, token=None, pin=()):
    """wrk's closed-loop maximum rate: one thread, `connections` keep-alive connections."""
    lua = os.path.join(work, "post.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
                f'wrk.body = io.open("{body_file}", "rb"):read("*a")\n')
        if token:
            f.write(f'wrk.headers["Authorization"] = "Bearer {token}"\n')
    r = run(name, [*pin, "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", lua, url])
    m = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
    errors = re.search(r"Socket errors: (.*)", r.stdout)
    return {"requests_per_s": float(m.group(1)), "non_2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": errors.group(1) if errors else None}


def wrk_version():
    return subprocess.run(["wrk", "--version"], capture_output=True,
                          text=True).stdout.splitlines()[0:1]


def build_loadgen(name, work):
    """bench/serving_loadgen.cpp built with g++ into WORK; its path."""
    binary = os.path.join(work, "serving_loadgen")
    run(name, ["g++", "-O2", "-std=c++20", "-o", binary,
               os.path.join(ROOT, "bench", "serving_loadgen.cpp"), "-lssl", "-lcrypto"])
    return binary


def loadgen(binary, port, path, body_file, rate, seconds, connections, tls=None, pin=()):
    """The open-loop client at `rate` requests/s. tls: (CA file, token) for HTTPS with a bearer
    token."""
    extra = ["--tls", tls[0], "--header", f"Authorization: Bearer {tls[1]}"] if tls else []
    r = subprocess.run([*pin, binary, "127.0.0.1", str(port), path, body_file, str(rate),
                        str(connections), str(seconds), "1", *extra], capture_output=True,
                       text=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-2000:])
    return out


def handler_histogram(url, endpoint="predict"):
    """An endpoint's handler-time histogram from /metrics: {upper bound in s: cumulative
    count}."""
    text = urllib.request.urlopen(url + "/metrics").read().decode()
    out = {}
    for m in re.finditer(r'^tarn_serving_request_duration_seconds_bucket\{endpoint="'
                         + re.escape(endpoint) + r'",le="([^"]+)"\} (\d+)$', text, re.M):
        out[float(m.group(1))] = int(m.group(2))
    return out


def histogram_quantile(before, after, q):
    """The bucket bound under which a share q of the requests between two scrapes fell."""
    bounds = sorted(after)
    total = after[bounds[-1]] - before.get(bounds[-1], 0)
    if total <= 0:
        return None
    for b in bounds:
        if after[b] - before.get(b, 0) >= q * total:
            return b
    return bounds[-1]
