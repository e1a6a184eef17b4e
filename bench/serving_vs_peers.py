#!/usr/bin/env python3
"""tarn serve against nginx (an HTTP ceiling), MLServer and onnxruntime in-process, pinned.

Usage:  bench/serving_vs_peers.py TARN [--rounds N] [--seconds S] [--connections N]
                                  [--allow-dirty]

Every server runs on one core and every client on another (`taskset -c`; the first two cores
this process may use), so the client never takes the server's core:

  - tarn: `tarn serve --threads 1` with the income model (14 raw columns -> 50 tanh -> 1, 2
    epochs on the bundled Adult data), KServe v2 `POST /v2/models/income/infer` with one tensor
    per raw column (FP64 numeric, BYTES categorical; the first rows of EvalSet1).
  - nginx (Debian's, run here with a generated config: `daemon off`, one worker process, no
    access log): `return 200` of tarn's own answer to the 1-row request, byte for byte, on the
    same route. The ceiling of an HTTP server that is not tarn's own stack.
  - MLServer (PyPI `mlserver`; PyPI has no `mlserver-onnx`, so a custom runtime of a few lines
    calls onnxruntime, one intra-op thread), `parallel_workers` 0 (inference in the server's
    process), serving the same model exported by `tarn export -t onnx`. It cannot take raw
    columns (it has no normalization): it gets the normalized vector `input`, FP32 [N, W],
    the rows `tarn eval -norm` writes for the same records.
  - onnxruntime in-process (no server): InferenceSession.run on batches of 1 and 32 of the same
    normalized rows, one thread, on the server core. tarn has no in-process scoring command
    (`tarn eval` scores files), so there is no tarn figure to set beside it.

Agreement first: MLServer's and onnxruntime's scores of the 32 rows equal tarn's within 1e-5.
Per round (one warm-up, then --rounds; the order of the servers reverses every round): wrk
(`-t1 -c16` keep-alive, S seconds) on 1-row requests to tarn, nginx and MLServer and on 32-row
requests to tarn and MLServer; onnxruntime at batch 1 and 32 for S seconds each. Then the
open-loop client (bench/serving_loadgen.cpp, --connections connections; latency from when each
request was due) at half of each server's own median maximum 1-row rate, S seconds per round,
servers alternating: p50/p90/p99/p99.9, and for tarn the time in its handler from /metrics.

Goals printed beside the figures (issue 13): tarn's 1-row requests/s >= 80% of nginx's (the
median of the per-round ratios) and tarn's p99 at half its maximum < 1 ms.
Results: bench/results/serving_vs_peers.json.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import _common
import _serving
from _common import add_method_args, check_rounds, check_tree, machine_info, med, sha256
from _serving import Server, handler_histogram, histogram_quantile, loadgen

NAME = "serving_vs_peers"
ROOT = _common.ROOT
WORK = os.path.join(ROOT, "build", "bench-work", "serving-peers")
VENV = os.path.join(ROOT, "build", "serving-peers-venv")
VENV_PACKAGES = ["mlserver", "onnxruntime", "numpy"]
MODEL = "income"
INFER = f"/v2/models/{MODEL}/infer"
GOAL_RATIO = 0.8
GOAL_P99_US = 1000
AGREEMENT = 1e-5

# The MLServer runtime: onnxruntime behind MLServer's model API (one intra-op thread, as every
# server here has one core).
RUNTIME = '''
import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceResponse
from mlserver.utils import get_model_uri


class OnnxRuntime(MLModel):
    async def load(self):
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        uri = await get_model_uri(self._settings)
        self._session = ort.InferenceSession(uri, options, providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name
        return True

    async def predict(self, payload):
        x = NumpyCodec.decode_input(payload.inputs[0]).astype(np.float32, copy=False)
        score = self._session.run(None, {self._input: x})[0].astype(np.float64)
        return InferenceResponse(model_name=self.name,
                                 outputs=[NumpyCodec.encode_output("score", score)])
'''


def run(cmd, cwd=None):
    return _serving.run(NAME, cmd, cwd)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status, r.read()


def venv_python():
    return os.path.join(VENV, "bin", "python")


def ensure_venv():
    """build/serving-peers-venv with VENV_PACKAGES from PyPI (latest); their versions, or None
    (with a message) when it cannot be made."""
    py = venv_python()
    probe = ("import json, importlib.metadata as m, mlserver, onnxruntime, numpy\n"
             f"print(json.dumps({{p: m.version(p) for p in {VENV_PACKAGES!r}}}))")
    if os.path.exists(py):
        r = subprocess.run([py, "-c", probe], capture_output=True, text=True)
        if r.returncode == 0:
            return json.loads(r.stdout)
    print(f"{NAME}: making {os.path.relpath(VENV, ROOT)} ({', '.join(VENV_PACKAGES)} from PyPI)",
          flush=True)
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    r = subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        *VENV_PACKAGES])
    if r.returncode != 0:
        print(f"{NAME}: pip install {' '.join(VENV_PACKAGES)} failed (is PyPI reachable?)")
        return None
    r = subprocess.run([py, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def normalized_rows(tarn, ms, n):
    """The first n rows of `tarn eval -norm` (EvalSet1's records in order): their vectors."""
    run([tarn, "eval", "-norm"], cwd=ms)
    path = os.path.join(ms, "evals", "Eval1", "EvalNormalized")
    with open(path) as f:
        header = f.readline().rstrip("\n").split("|")
        if header[:2] != ["target", "weight"]:
            raise SystemExit(f"{NAME}: {path}: unexpected header {header[:3]}")
        rows = [[float(v) for v in f.readline().rstrip("\n").split("|")[2:]] for _ in range(n)]
    return rows


def v2_raw_body(records, inputs):
    """A KServe v2 infer body with one tensor per raw column the model reads (`inputs`: the
    model metadata's name -> datatype)."""
    tensors = []
    for col, dtype in inputs.items():
        values = [r.get(col) for r in records]
        if dtype == "FP64":
            try:
                values = [float(v) for v in values]
            except (TypeError, ValueError):
                raise SystemExit(f"{NAME}: column {col!r} is numeric but a record has "
                                 f"{values!r}: pick records without missing numbers")
        tensors.append({"name": col, "shape": [len(records)], "datatype": dtype, "data": values})
    return {"inputs": tensors}


def v2_normalized_body(rows):
    return {"inputs": [{"name": "input", "shape": [len(rows), len(rows[0])], "datatype": "FP32",
                        "data": [v for row in rows for v in row]}]}


def scores_of(answer):
    out = [o for o in answer["outputs"] if o["name"] == "score"][0]
    data = out["data"]
    return [float(x[0]) if isinstance(x, list) else float(x) for x in data]


class Nginx:
    """nginx answering `body` to POST INFER, one worker process, pinned."""

    def __init__(self, body, pin):
        d = os.path.join(WORK, "nginx")
        os.makedirs(d, exist_ok=True)
        if "'" in body or "\\" in body or "$" in body:
            raise SystemExit(f"{NAME}: the fixed body has a character nginx would interpret")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        temp = "\n".join(f"  {k}_temp_path {d}/{k};" for k in
                         ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
{temp}
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  server {{
    listen 127.0.0.1:{self.port};
    location = {INFER} {{
      default_type application/json;
      return 200 '{body}';
    }}
  }}
}}
""")
        self.proc = subprocess.Popen([*pin, "nginx", "-p", d, "-c", conf, "-e",
                                      os.path.join(d, "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: post(self.url + INFER, b"{}")[0] == 200, self.proc, "nginx", 30)

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)  # graceful: finish requests, then exit
        return self.proc.wait(timeout=30)


class MLServer:
    """`mlserver start` of the ONNX model through the RUNTIME above, pinned."""

    def __init__(self, onnx_model, pin):
        d = os.path.join(WORK, "mlserver")
        model_dir = os.path.join(d, MODEL)
        os.makedirs(model_dir, exist_ok=True)
        shutil.copy(onnx_model, os.path.join(model_dir, "model.onnx"))
        with open(os.path.join(model_dir, "onnx_runtime.py"), "w") as f:
            f.write(RUNTIME)
        with open(os.path.join(model_dir, "model-settings.json"), "w") as f:
            json.dump({"name": MODEL, "implementation": "onnx_runtime.OnnxRuntime",
                       "parameters": {"uri": "./model.onnx"}}, f)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        with open(os.path.join(d, "settings.json"), "w") as f:
            json.dump({"host": "127.0.0.1", "http_port": self.port, "grpc_port": free_port(),
                       "metrics_port": free_port(), "parallel_workers": 0, "debug": False}, f)
        self.log = open(os.path.join(d, "mlserver.log"), "w")
        self.proc = subprocess.Popen([*pin, os.path.join(VENV, "bin", "mlserver"), "start", d],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=d)

        def ready():
            try:
                with urllib.request.urlopen(f"{self.url}/v2/models/{MODEL}/ready", timeout=5) as r:
                    return r.status == 200
            except (urllib.error.URLError, ConnectionError):
                return False
        wait_until(ready, self.proc, f"mlserver (log: {self.log.name})", 300)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self.log.close()
        return code


def wait_until(check, proc, what, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise SystemExit(f"{NAME}: {what} exited ({proc.returncode}) {err[-2000:]}")
        try:
            if check():
                return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{NAME}: {what} did not get ready within {timeout} s")


# Runs in the venv, pinned to the server core: onnxruntime in-process on the vectors file.
ORT_WORKER = r'''
import json, sys, time
import numpy as np
import onnxruntime as ort
model, vectors, batch, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.inter_op_num_threads = 1
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
name = session.get_inputs()[0].name
x = np.array(json.load(open(vectors))[:batch], dtype=np.float32)
scores = session.run(None, {name: x})[0][:, 0].astype(float).tolist()
end = time.perf_counter() + 0.5  # warm-up
while time.perf_counter() < end:
    session.run(None, {name: x})
calls, t0 = 0, time.perf_counter()
end = t0 + seconds
while True:
    for _ in range(100):
        session.run(None, {name: x})
    calls += 100
    t = time.perf_counter()
    if t >= end:
        break
print(json.dumps({"batch": batch, "calls_per_s": calls / (t - t0),
                  "predictions_per_s": calls * batch / (t - t0), "scores": scores}))
'''


def ort_in_process(pin, model, vectors, batch, seconds):
    script = os.path.join(WORK, "ort_worker.py")
    with open(script, "w") as f:
        f.write(ORT_WORKER)
    r = run([*pin, venv_python(), script, model, vectors, str(batch), str(seconds)])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tarn")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--connections", type=int, default=16)
    add_method_args(ap)
    args = ap.parse_args()
    tarn = os.path.abspath(args.tarn)
    for tool in ("wrk", "g++", "nginx", "taskset"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            print(f"SKIP {NAME}: {tool} is not installed (scripts/install-deps installs it)")
            return 0
    os.environ["PATH"] += os.pathsep + "/usr/sbin"  # nginx, for users without sbin in PATH
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        print(f"SKIP {NAME}: needs 2 cores to pin the server and the client apart")
        return 0
    server_pin = ["taskset", "-c", str(cores[0])]
    client_pin = ["taskset", "-c", str(cores[1])]
    git = check_tree(NAME, args)
    check_rounds(NAME, args)
    versions = ensure_venv()
    if versions is None:
        print(f"SKIP {NAME}: no MLServer / onnxruntime venv")
        return 0
    versions["nginx"] = subprocess.run(["nginx", "-v"], capture_output=True,
                                       text=True).stderr.strip()
    versions["wrk"] = _serving.wrk_version()

    ms, base = _serving.make_model(NAME, tarn, WORK, eval_set=True)
    run([tarn, "export", "-t", "onnx"], cwd=ms)
    onnx_model = os.path.join(ms, "onnx", "model0.onnx")
    records = _serving.raw_records(32)
    vectors = normalized_rows(tarn, ms, 32)
    vectors_file = os.path.join(WORK, "vectors.json")
    with open(vectors_file, "w") as f:
        json.dump(vectors, f)
    binary = _serving.build_loadgen(NAME, WORK)
    secs = args.seconds
    conns = args.connections

    servers = {}
    codes = {}
    try:
        servers["tarn"] = Server(NAME, tarn, ["--model-base", base, "--name", MODEL], 1,
                                 pin=server_pin)
        with urllib.request.urlopen(servers["tarn"].url + f"/v2/models/{MODEL}") as r:
            meta = json.loads(r.read())
        inputs = {i["name"]: i["datatype"] for i in meta["inputs"]}
        bodies = {}
        for side, make in (("raw", lambda n: v2_raw_body(records[:n], inputs)),
                           ("normalized", lambda n: v2_normalized_body(vectors[:n]))):
            for n in (1, 32):
                path = os.path.join(WORK, f"{side}-{n}.json")
                with open(path, "w") as f:
                    json.dump(make(n), f, separators=(",", ":"))
                bodies[side, n] = path
        status, tarn_one = post(servers["tarn"].url + INFER, open(bodies["raw", 1], "rb").read())
        assert status == 200, tarn_one
        servers["nginx"] = Nginx(tarn_one.decode(), server_pin)
        servers["mlserver"] = MLServer(onnx_model, server_pin)

        # Agreement: the same model everywhere, and nginx answers tarn's bytes.
        _, many = post(servers["tarn"].url + INFER, open(bodies["raw", 32], "rb").read())
        tarn_scores = scores_of(json.loads(many))
        _, ml = post(servers["mlserver"].url + INFER,
                     open(bodies["normalized", 32], "rb").read())
        ml_scores = scores_of(json.loads(ml))
        ort_scores = ort_in_process(server_pin, onnx_model, vectors_file, 32, 0.1)["scores"]
        _, ng = post(servers["nginx"].url + INFER, open(bodies["raw", 1], "rb").read())
        agreement = {
            "mlserver_max_abs_diff": max(abs(a - b) for a, b in zip(tarn_scores, ml_scores)),
            "onnxruntime_max_abs_diff": max(abs(a - b) for a, b in zip(tarn_scores, ort_scores)),
            "rows": len(tarn_scores), "nginx_answers_tarn_bytes": ng == tarn_one,
            "answer_bytes": len(tarn_one)}
        agree = (len(tarn_scores) == len(ml_scores) == len(ort_scores) == 32 and
                 agreement["mlserver_max_abs_diff"] <= AGREEMENT and
                 agreement["onnxruntime_max_abs_diff"] <= AGREEMENT and ng == tarn_one)
        print(f"{NAME}: agreement on 32 rows: MLServer - tarn "
              f"{agreement['mlserver_max_abs_diff']:.2g}, onnxruntime - tarn "
              f"{agreement['onnxruntime_max_abs_diff']:.2g}, nginx answers "
              f"tarn's {len(tarn_one)} bytes: {ng == tarn_one} "
              f"[{'OK' if agree else 'MISMATCH'} within {AGREEMENT}]", flush=True)
        if not agree:
            return 2

        def url(s):
            return servers[s].url + INFER

        one_body = {"tarn": bodies["raw", 1], "nginx": bodies["raw", 1],
                    "mlserver": bodies["normalized", 1]}
        many_body = {"tarn": bodies["raw", 32], "mlserver": bodies["normalized", 32]}
        rounds = []
        for r in range(args.rounds + 1):
            order = ["tarn", "nginx", "mlserver"]
            if r % 2:
                order.reverse()
            _common.sample_load("before")
            row = {"round": r, "warmup": r == 0, "order": order, "one_row": {},
                   "thirty_two_rows": {}}
            for s in order:
                row["one_row"][s] = _serving.wrk(NAME, WORK, url(s), one_body[s], secs, conns,
                                                 pin=client_pin)
            for s in [s for s in order if s in many_body]:
                row["thirty_two_rows"][s] = _serving.wrk(NAME, WORK, url(s), many_body[s], secs,
                                                         conns, pin=client_pin)
            row["onnxruntime"] = {
                str(b): {k: v for k, v in ort_in_process(server_pin, onnx_model, vectors_file, b,
                                                         secs).items() if k != "scores"}
                for b in (1, 32)}
            _common.sample_load("after")
            one = {s: row["one_row"][s]["requests_per_s"] for s in order}
            many = {s: row["thirty_two_rows"][s]["requests_per_s"] * 32 for s in many_body}
            row["ratio_tarn_to_nginx"] = one["tarn"] / one["nginx"]
            row["ratio_tarn_to_mlserver"] = one["tarn"] / one["mlserver"]
            row["ratio_tarn_to_mlserver_32"] = many["tarn"] / many["mlserver"]
            rounds.append(row)
            ort = row["onnxruntime"]
            print(f"  round {r}{' (warm-up)' if r == 0 else ''}: 1 row tarn {one['tarn']:.0f}/s, "
                  f"nginx {one['nginx']:.0f}/s ({row['ratio_tarn_to_nginx'] * 100:.0f}%), "
                  f"MLServer {one['mlserver']:.0f}/s | 32 rows tarn {many['tarn']:.0f}, MLServer "
                  f"{many['mlserver']:.0f} predictions/s | onnxruntime in-process "
                  f"{ort['1']['predictions_per_s']:.0f} (batch 1), "
                  f"{ort['32']['predictions_per_s']:.0f} (batch 32) predictions/s", flush=True)
        measured = [r for r in rounds if not r["warmup"]]
        max_one = {s: med([r["one_row"][s]["requests_per_s"] for r in measured])
                   for s in servers}
        rates = {s: max(1, round(max_one[s] / 2)) for s in servers}
        latency = []
        for r in range(args.rounds):
            order = ["tarn", "nginx", "mlserver"]
            if r % 2:
                order.reverse()
            _common.sample_load("before")
            row = {}
            for s in order:
                before = handler_histogram(servers[s].url, "infer") if s == "tarn" else None
                row[s] = loadgen(binary, servers[s].port, INFER, one_body[s], rates[s], secs,
                                 conns, pin=client_pin)
                if before is not None:
                    # Time inside tarn's handler (parse, normalize, score, encode), to tell the
                    # server's share of the latency from the network's and the scheduler's.
                    after = handler_histogram(servers[s].url, "infer")
                    row[s]["handler_p50_le_s"] = histogram_quantile(before, after, 0.5)
                    row[s]["handler_p99_le_s"] = histogram_quantile(before, after, 0.99)
            _common.sample_load("after")
            for s in order:
                # No answer in the whole round: its latencies are at least the round's length,
                # not the zeros the client prints; left out of the medians and counted.
                row[s]["no_answer"] = row[s]["answered"] == 0
                if row[s]["no_answer"]:
                    for k in ("p50_us", "p90_us", "p99_us", "p999_us", "max_us"):
                        row[s][k] = None
            latency.append(row)
            print(f"  latency round {r + 1}: " + " | ".join(
                f"{s} at {rates[s]}/s " + (
                    f"NO ANSWER in {secs} s ({row[s]['unanswered_at_end']} due)"
                    if row[s]["no_answer"] else
                    f"p50 {row[s]['p50_us']:.0f} us, p99 {row[s]['p99_us']:.0f} us, p99.9 "
                    f"{row[s]['p999_us']:.0f} us (unanswered at the end "
                    f"{row[s]['unanswered_at_end']}, errors {row[s]['errors']})")
                for s in order), flush=True)
        # Whether each server still answers (tells a stalled server from a starved one).
        alive = {}
        for s in servers:
            try:
                alive[s] = post(url(s), open(one_body[s], "rb").read())[0] == 200
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                alive[s] = False
    finally:
        for s, server in servers.items():
            codes[s] = server.stop()

    def lat(s, key):
        xs = [x[s][key] for x in latency if not x[s]["no_answer"]]
        return med(xs) if xs else None

    def handler_us(key):
        xs = [x["tarn"][key] for x in latency if x["tarn"][key] is not None]
        return med(xs) * 1e6 if xs else None

    summary = {
        "one_row_requests_per_s": max_one,
        "thirty_two_rows_predictions_per_s": {
            s: med([r["thirty_two_rows"][s]["requests_per_s"] * 32 for r in measured])
            for s in ("tarn", "mlserver")},
        "onnxruntime_predictions_per_s": {
            b: med([r["onnxruntime"][b]["predictions_per_s"] for r in measured])
            for b in ("1", "32")},
        "ratio_tarn_to_nginx": med([r["ratio_tarn_to_nginx"] for r in measured]),
        "ratio_tarn_to_nginx_rounds": [r["ratio_tarn_to_nginx"] for r in measured],
        "ratio_tarn_to_mlserver": med([r["ratio_tarn_to_mlserver"] for r in measured]),
        "ratio_tarn_to_mlserver_32": med([r["ratio_tarn_to_mlserver_32"] for r in measured]),
        "fixed_rate_per_s": rates,
        "latency_us": {s: {k: lat(s, k + "_us") for k in ("p50", "p90", "p99", "p999")}
                       for s in servers},
        "latency_rounds_without_an_answer": {
            s: sum(x[s]["no_answer"] for x in latency) for s in servers},
        "answers_after_the_latency_rounds": alive,
        "tarn_handler_p50_le_us": handler_us("handler_p50_le_s"),
        "tarn_handler_p99_le_us": handler_us("handler_p99_le_s"),
        "errors": sum(x[s]["errors"] for x in latency for s in servers) +
                  sum(w["non_2xx"] for r in rounds for part in ("one_row", "thirty_two_rows")
                      for w in r[part].values()),
    }
    ok_ratio = summary["ratio_tarn_to_nginx"] >= GOAL_RATIO
    t_lat = summary["latency_us"]["tarn"]
    ok_p99 = t_lat["p99"] is not None and t_lat["p99"] < GOAL_P99_US
    one, lt = summary["one_row_requests_per_s"], summary["latency_us"]
    silent = summary["latency_rounds_without_an_answer"]

    def us(s, key):
        v = lt[s][key]
        return (f"{v:.0f} us" if v is not None else "none") + (
            f" ({silent[s]} of {len(latency)} rounds without an answer)" if silent[s] else "")
    lines = [
        f"{NAME}: 1 row (KServe v2, raw columns) tarn {one['tarn']:.0f} req/s = "
        f"{summary['ratio_tarn_to_nginx'] * 100:.0f}% of nginx's {one['nginx']:.0f} "
        f"[{'OK' if ok_ratio else 'MISSED'} >= {GOAL_RATIO * 100:.0f}%] | at {rates['tarn']}/s "
        f"(half max): p50 {us('tarn', 'p50')}, p99 {us('tarn', 'p99')}, p99.9 "
        f"{us('tarn', 'p999')} [{'OK' if ok_p99 else 'MISSED'} p99 < 1 ms] (in the handler: "
        f"p50 <= {summary['tarn_handler_p50_le_us'] or float('nan'):.0f} us, p99 <= "
        f"{summary['tarn_handler_p99_le_us'] or float('nan'):.0f} us) | nginx at "
        f"{rates['nginx']}/s: p99 {us('nginx', 'p99')} | errors {summary['errors']}",
        f"{NAME}: beside: MLServer (normalized FP32 input, onnxruntime runtime) 1 row "
        f"{one['mlserver']:.0f} req/s (tarn/MLServer {summary['ratio_tarn_to_mlserver']:.1f}x), "
        f"p99 {us('mlserver', 'p99')} at {rates['mlserver']}/s; 32 rows tarn "
        f"{summary['thirty_two_rows_predictions_per_s']['tarn']:.0f}, MLServer "
        f"{summary['thirty_two_rows_predictions_per_s']['mlserver']:.0f} predictions/s "
        f"(tarn/MLServer {summary['ratio_tarn_to_mlserver_32']:.1f}x); onnxruntime in-process "
        f"{summary['onnxruntime_predictions_per_s']['1']:.0f} (batch 1), "
        f"{summary['onnxruntime_predictions_per_s']['32']:.0f} (batch 32) predictions/s; "
        f"server on core {cores[0]}, clients on core {cores[1]}; answering after the latency "
        f"rounds: {', '.join(f'{s} {alive[s]}' for s in servers)}"]
    result = {
        "benchmark": NAME, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git": git,
        "machine": machine_info(), "tarn_sha256": sha256(tarn), "versions": versions,
        "server_core": cores[0], "client_core": cores[1], "server_threads": 1,
        "connections": conns, "seconds": secs, "rounds": rounds, "latency": latency,
        "agreement": agreement, "summary": summary, "exit_codes": codes,
        "mlserver_input": "normalized FP32 [N, W] (MLServer cannot normalize raw columns)",
        "tarn_in_process": "not measured: the tarn CLI has no in-process scoring command",
        "goals": {"ratio_to_nginx_min": GOAL_RATIO, "p99_us_max": GOAL_P99_US,
                  "ratio_met": ok_ratio, "p99_met": ok_p99},
    }
    _common.finish(NAME, os.path.join(ROOT, "bench", "results", NAME + ".json"), result, lines,
                   tarn, result["tarn_sha256"], False)
    if any(codes.values()) or summary["errors"] > 0 or not all(alive.values()):
        print(f"{NAME}: a server failed (exit codes {codes}) or requests failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
