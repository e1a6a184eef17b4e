"""tarn serve: TensorFlow-Serving-compatible REST over real processes. Predictions equal
tarn eval's scores, new versions land under load without a failed request, training feeds a
running server, and bad requests get 4xx."""
import gzip
import http.client
import json
import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import (EXAMPLE, INCOME_EVAL_SET, edit_config, make_income_model_set,
                      model_file_header, python_with, run, tarn_bin)

PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [20], "ActivationFunc": ["tanh"],
          "LearningRate": 0.01, "MiniBatchs": 128, "Propagation": "Adam"}
POLL_MS = 250


def assert_scores_equal_eval(got, expected):
    """Served scores against EvalScore's (mean x 1000 at full precision: 1e-6 on the score is
    1e-3 printed), from a real model, not a constant."""
    worst = max((abs(g * 1000 - e), i) for i, (g, e) in enumerate(zip(got, expected)))
    assert worst[0] <= 1e-3, f"row {worst[1]}: serve and tarn eval differ by {worst[0]}"
    assert len({round(s, 4) for s in got}) > 100


def prepared(base, name="income", bags=1, epochs=2, steps=("init", "stats", "norm", "varsel"),
             **config):
    ms = make_income_model_set(base, name)
    changes = {
        "train.algorithm": "TensorFlow", "train.params": PARAMS, "train.numTrainEpochs": epochs,
        "train.baggingNum": bags, "varSelect.filterNum": 50,
        **INCOME_EVAL_SET}
    changes.update(config)
    edit_config(ms, **changes)
    for step in steps:
        run(step, cwd=ms)
    return ms


def eval_records():
    """The EvalSet1 rows as {column: raw text}, in file order."""
    header = (EXAMPLE / "EvalSet1" / ".pig_header").read_text().strip().split("|")
    rows = []
    with gzip.open(EXAMPLE / "EvalSet1" / "part-00000.gz", "rt") as f:
        for line in f:
            fields = line.rstrip("\n").split("|")
            rows.append(dict(zip(header, fields)))
    return rows


class Server:
    """A `tarn serve` process on a free port; stop() sends SIGTERM."""

    def __init__(self, *args, cwd=None):
        self.proc = subprocess.Popen([tarn_bin(), "serve", "--port", "0", *map(str, args)],
                                     cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self._read_line(60)
        m = re.match(r"listening on ([\d.]+):(\d+)", line or "")
        if not m:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"tarn serve did not start: {line!r} {out} {err}")
        self.host, self.port = m.group(1), int(m.group(2))

    def _read_line(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline() if ready else None

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=30)

    def request(self, method, path, body=None, conn=None):
        c = conn or self.connect()
        data = body if body is None or isinstance(body, (bytes, str)) else json.dumps(body)
        c.request(method, path, body=data,
                  headers={"Content-Type": "application/json"} if data is not None else {})
        r = c.getresponse()
        payload = r.read()
        if conn is None:
            c.close()
        try:
            parsed = json.loads(payload) if payload else None
        except ValueError:
            parsed = payload.decode()
        return r.status, parsed, dict(r.getheaders())

    def metric(self, name):
        _, text, _ = self.request("GET", "/metrics")
        m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
        return float(m.group(1)) if m else None

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, err


def flat(scores):
    """[[s1], [s2], ...] (score is [-1, 1] in the signature) -> [s1, s2, ...]."""
    assert all(isinstance(s, list) and len(s) == 1 for s in scores), scores[:3]
    return [s[0] for s in scores]


def predict(server, model, rows, conn=None, version=None):
    path = f"/v1/models/{model}" + (f"/versions/{version}" if version else "") + ":predict"
    status, body, headers = server.request("POST", path, {"instances": rows}, conn=conn)
    assert status == 200, body
    return flat(body["predictions"]), int(headers["X-Model-Version"])


def eval_scores(ms):
    """tarn eval's mean score of every eval row, in input order (score x 1000 as printed)."""
    run("eval", "-score", "-nosort", cwd=ms)
    lines = (ms / "evals" / "Eval1" / "EvalScore").read_text().splitlines()
    header = lines[0].split("|")
    assert header[2] == "mean"
    return [float(line.split("|")[2]) for line in lines[1:]]


def model_columns(server, name):
    _, meta, _ = server.request("GET", f"/v1/models/{name}/metadata")
    return [c["name"] for c in meta["tarn"]["columns"]]


def test_predictions_equal_tarn_eval_scores(tmp_path):
    ms = prepared(tmp_path, bags=2)
    run("train", cwd=ms)
    expected = eval_scores(ms)
    base = tmp_path / "base"
    out = run("export", "-t", "serving", "-o", base, cwd=ms)
    assert "serving version" in out.stderr and (base / "1" / "READY").exists()
    assert sorted(p.name for p in (base / "1").iterdir()) == ["READY", "model0.tarn",
                                                             "model1.tarn"]
    records = eval_records()
    assert len(records) == len(expected) == 16281

    server = Server("--model-base", base, "--name", "income")
    try:
        columns = model_columns(server, "income")
        assert "Target" not in columns and "Age" in columns
        conn = server.connect()
        got = []
        for start in range(0, len(records), 1000):
            chunk = [{c: r[c] for c in columns} for r in records[start:start + 1000]]
            scores, version = predict(server, "income", chunk, conn=conn)
            assert version == 1
            got += scores
        # Columnar format and KServe v2 give the same scores.
        sample = records[:50]
        status, body, _ = server.request(
            "POST", "/v1/models/income:predict",
            {"inputs": {c: [r[c] for r in sample] for c in columns}})
        assert status == 200 and flat(body["outputs"]) == got[:50]
        status, body, _ = server.request("POST", "/v2/models/income/infer", {"inputs": [
            {"name": c, "shape": [len(sample)], "datatype": "BYTES", "data": [r[c] for r in sample]}
            for c in columns]})
        assert status == 200 and body["outputs"][0]["data"] == got[:50]
        assert body["model_version"] == "1"
    finally:
        code, err = server.stop()
    assert code == 0, err
    assert_scores_equal_eval(got, expected)

    # The model set's own models/ (-m) serve the same scores.
    server = Server("-m", ms)
    try:
        scores, version = predict(server, ms.name, [{c: r[c] for c in columns}
                                                    for r in records[:20]])
        assert version == 1 and scores == got[:20]
    finally:
        assert server.stop()[0] == 0


def same(scores, reference):
    return len(scores) == len(reference) and all(
        abs(a - b) <= 1e-9 for a, b in zip(scores, reference))


def write_half(folder, source):
    """A version folder being written: part of a model file, no READY marker."""
    folder.mkdir()
    data = source.read_bytes()
    (folder / "model0.tarn").write_bytes(data[:len(data) // 2])


def write_corrupt(folder, source):
    """A complete-looking version (READY present, sizes right) whose model fails its checksum."""
    shutil.copytree(source.parent, folder)
    model = folder / "model0.tarn"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0x5A
    model.write_bytes(bytes(data))


def test_hot_reload_under_load_never_fails_a_request(tmp_path):
    ms = prepared(tmp_path, bags=3)
    run("train", cwd=ms)
    models = [ms / "models" / f"model{i}.tarn" for i in range(3)]
    staging = tmp_path / "staging"  # every good version, for the reference answers
    for i, v in enumerate([1, 2, 4, 6]):
        folder = staging / str(v)
        folder.mkdir(parents=True)
        shutil.copy(models[i % 3], folder / "model0.tarn")
        size = (folder / "model0.tarn").stat().st_size
        (folder / "READY").write_text(json.dumps(
            {"format": 1, "version": v, "models": ["model0.tarn"], "bytes": [size]}))
    records = eval_records()[:64]

    base = tmp_path / "base"
    base.mkdir()
    shutil.copytree(staging / "1", base / "1")
    reference = Server("--model-base", staging, "--version-policy", "specific:1,2,4,6",
                       "--name", "m")
    server = Server("--model-base", base, "--name", "m", "--poll-ms", POLL_MS,
                    "--threads", 2, "--access-log", tmp_path / "access.log")
    try:
        columns = model_columns(server, "m")
        batches = [[{c: r[c] for c in columns} for r in records[i:i + 1 + i % 3]]
                   for i in range(0, 48)]
        expected = {v: [predict(reference, "m", b, version=v)[0] for b in batches]
                    for v in (1, 2, 4, 6)}
        assert expected[1] != expected[2] != expected[4]  # the versions answer differently

        stop = threading.Event()
        results = {"ok": 0, "failures": [], "versions": set()}
        lock = threading.Lock()
        first_seen = {}

        def client(k):
            conn = server.connect()
            i = k
            while not stop.is_set():
                b = i % len(batches)
                i += 1
                try:
                    status, body, headers = server.request(
                        "POST", "/v1/models/m:predict", {"instances": batches[b]}, conn=conn)
                except (OSError, http.client.HTTPException) as e:
                    with lock:
                        results["failures"].append(f"connection error: {e!r}")
                    conn = server.connect()
                    continue
                with lock:
                    if status != 200:
                        results["failures"].append(f"{status} {body}")
                        continue
                    v = int(headers["X-Model-Version"])
                    results["versions"].add(v)
                    first_seen.setdefault(v, time.monotonic())
                    if v not in expected or not same(flat(body["predictions"]), expected[v][b]):
                        results["failures"].append(f"version {v} answered {body} for batch {b}")
                    else:
                        results["ok"] += 1

        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()

        def wait_for(version):
            for _ in range(2000):
                if version in first_seen:
                    return
                time.sleep(0.01)
            raise AssertionError(f"version {version} was never served")

        def land(version, write):
            polls_before = server.metric("tarn_serving_polls_total")
            landed = time.monotonic()
            write()
            if version is None:
                # Half-written or corrupt: give the server three polls to (not) take it.
                target = polls_before + 3
                while server.metric("tarn_serving_polls_total") < target:
                    time.sleep(0.02)
                return None
            wait_for(version)
            polls = server.metric("tarn_serving_polls_total") - polls_before
            return polls, first_seen[version] - landed

        wait_for(1)
        timings = {}
        timings[2] = land(2, lambda: shutil.copytree(staging / "2", base / "2"))
        land(None, lambda: write_half(base / "3", models[0]))
        timings[4] = land(4, lambda: shutil.copytree(staging / "4", base / "4"))
        land(None, lambda: write_corrupt(base / "5", staging / "1" / "model0.tarn"))
        # Copied folder by folder, the READY marker last, as export writes it.
        def write_six():
            (base / "6").mkdir()
            shutil.copy(staging / "6" / "model0.tarn", base / "6" / "model0.tarn")
            shutil.copy(staging / "6" / "READY", base / "6" / "READY.tmp")
            os.rename(base / "6" / "READY.tmp", base / "6" / "READY")
        timings[6] = land(6, write_six)
        time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join()
        status, body, _ = server.request("GET", "/v1/models/m")
        states = {s["version"]: s for s in body["model_version_status"]}
    finally:
        code, err = server.stop()
        reference.stop()
    assert code == 0, err
    assert results["failures"] == [], results["failures"][:5]
    assert results["ok"] > 100
    # Every response came from a complete version; 3 and 5 never answered.
    assert results["versions"] == {1, 2, 4, 6}
    assert states["6"]["state"] == "AVAILABLE"
    assert states["5"]["state"] == "END" and "checksum" in states["5"]["status"]["error_message"]
    assert "3" not in states
    assert "version 5" in err and "failed to load and is skipped" in err
    # The newest good version answered within two poll intervals of landing: at most two
    # scans of the base folder finished between writing it and its first answer.
    for version, (polls, seconds) in timings.items():
        print(f"version {version}: served after {polls:.0f} polls, {seconds * 1000:.0f} ms "
              f"(poll interval {POLL_MS} ms)")
        assert polls <= 2, f"version {version} took {polls} polls"
    # The access log saw the requests, each from a served version.
    lines = (tmp_path / "access.log").read_text().splitlines()
    logged = [json.loads(line) for line in lines]
    predicted = [r for r in logged if r["path"] == "/v1/models/m:predict"]
    assert len(predicted) >= results["ok"]
    assert {r["version"] for r in predicted} == {1, 2, 4, 6}
    assert all(r["status"] == 200 for r in predicted)


def test_training_exports_versions_that_a_running_server_follows(tmp_path):
    ms = prepared(tmp_path, epochs=3)
    base = tmp_path / "serving"
    base.mkdir()  # empty: the server waits for training's first version
    server = Server("--model-base", base, "--name", "income", "--poll-ms", 100)
    try:
        status, body, _ = server.request("GET", "/v2/health/ready")
        assert status == 503 and body == {"ready": False}
        status, body, _ = server.request("POST", "/v1/models/income:predict",
                                         {"instances": [{"Age": 40}]})
        assert status == 503 and "no version loaded yet" in body["error"]
        out = run("train", f"-Dtarn.serving.exportDir={base}",
                  "-Dtarn.serving.exportEveryEpochs=1", cwd=ms)
        # Epochs 1 and 2 during training, then the trained model.
        assert sorted(int(p.name) for p in base.iterdir()) == [1, 2, 3]
        assert "serving version" in out.stderr
        assert (base / "3" / "model0.tarn").read_bytes() == \
            (ms / "models" / "model0.tarn").read_bytes()
        expected = eval_scores(ms)
        records = eval_records()[:200]
        # Training may end before the server's next poll: wait until it serves a version.
        deadline = time.time() + 30
        while server.request("GET", "/v2/health/ready")[0] != 200:
            assert time.time() < deadline, "no version loaded within 30 s of training's end"
            time.sleep(0.02)
        columns = model_columns(server, "income")
        for _ in range(500):
            scores, version = predict(server, "income", [{c: r[c] for c in columns}
                                                         for r in records])
            if version == 3:
                break
            time.sleep(0.02)
        assert version == 3
        worst = max(abs(g * 1000 - e) for g, e in zip(scores, expected))
        assert worst <= 1e-3 + 5e-5
    finally:
        code, err = server.stop()
    assert code == 0, err
    assert "now serving version 3" in err


def test_bad_requests_get_4xx_and_sigterm_finishes_in_flight_requests(tmp_path):
    ms = prepared(tmp_path, epochs=1)
    run("train", cwd=ms)
    base = tmp_path / "base"
    run("export", "-t", "serving", "-o", base, "--version", 7, cwd=ms)
    proc = run("export", "-t", "serving", "-o", base, "--version", 7, cwd=ms, check=False)
    assert proc.returncode != 0 and "already exists" in proc.stderr
    proc = run("export", "-t", "serving", cwd=ms, check=False)
    assert proc.returncode != 0 and "needs -o BASE" in proc.stderr
    run("export", "-t", "serving", "-o", base, cwd=ms)
    assert sorted(p.name for p in base.iterdir()) == ["7", "8"]

    server = Server("--model-base", base, "--name", "income", "--max-body-bytes", 100000)
    try:
        cases = [
            ("POST", "/v1/models/income:predict", b'{"instances": [', 400, "malformed JSON"),
            ("POST", "/v1/models/income:predict", {"instances": [{"Age": "old"}]}, 400,
             "is not a number"),
            ("POST", "/v1/models/income:predict", {"instances": [{"Zip": 1}]}, 400,
             "unknown column"),
            ("POST", "/v1/models/income:predict", {"instances": [[1, 2]]}, 400, "numbers for"),
            ("POST", "/v1/models/nope:predict", {"instances": []}, 404, "not served here"),
            ("POST", "/v1/models/income/versions/3:predict", {"instances": []}, 404,
             "version 3 of model"),
            ("GET", "/v1/models/income:predict", None, 405, "use POST"),
            ("POST", "/v1/models/income:predict", b"x" * 200000, 413, "over the limit"),
            ("GET", "/v1/models/..%2F..%2Fetc%2Fpasswd", None, 404, "not served here"),
            ("GET", "/../../etc/passwd", None, 404, "no such endpoint"),
        ]
        for method, path, body, want, message in cases:
            status, answer, _ = server.request(method, path, body)
            assert status == want, (path, answer)
            assert message in answer["error"], (path, answer)
        _, status_body, _ = server.request("GET", "/v1/models/income")
        assert [s["version"] for s in status_body["model_version_status"]] == ["8"]
        # Still healthy, and predicting.
        assert server.request("GET", "/v2/health/live")[0] == 200
        scores, version = predict(server, "income", [{"Age": 40, "Gender": "Male"}])
        assert version == 8 and 0 < scores[0] < 1
        metrics = server.request("GET", "/metrics")[1]
        assert 'tarn_serving_requests_total{endpoint="predict",code="400"} 4' in metrics
        assert 'tarn_serving_model_version{model="income"} 8' in metrics

        # SIGTERM while requests are being answered: every started request completes.
        stop = threading.Event()
        answered, errors = [0], []

        def client():
            conn = server.connect()
            while not stop.is_set():
                try:
                    status, _, _ = server.request("POST", "/v1/models/income:predict",
                                                  {"instances": [{"Age": 30}] * 8}, conn=conn)
                except (OSError, http.client.HTTPException):
                    return  # the server has closed: no more requests are accepted
                if status == 200:
                    answered[0] += 1
                else:
                    errors.append(status)

        threads = [threading.Thread(target=client) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        code, err = server.stop()
        stop.set()
        for t in threads:
            t.join()
    finally:
        if server.proc.poll() is None:
            server.stop()
    assert code == 0, err
    assert "SIGTERM" in err and "stopped" in err
    assert errors == [] and answered[0] > 0


# ---- Shifu-parity serving: whole data rows, stock clients, TF Serving shapes, start-up ----

@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A trained income model set and a serving base with its one version."""
    root = tmp_path_factory.mktemp("parity")
    ms = prepared(root, epochs=1)
    run("train", cwd=ms)
    base = root / "base"
    run("export", "-t", "serving", "-o", base, cwd=ms)
    return ms, base


@pytest.fixture
def income_server(exported):
    server = Server("--model-base", exported[1], "--name", "income")
    yield server
    code, err = server.stop()
    assert code == 0, err


def test_raw_records_may_carry_every_column_of_the_model_set(income_server, exported):
    server = income_server
    ms, base = exported
    names = [c["columnName"] for c in json.loads((ms / "ColumnConfig.json").read_text())]
    assert model_file_header(base / "1" / "model0.tarn")["modelSetColumns"] == names
    records = eval_records()[:100]
    assert "Target" in records[0]  # rows exactly as they sit in the data
    columns = model_columns(server, "income")
    _, meta, _ = server.request("GET", "/v1/models/income/metadata")
    assert "Target" in meta["tarn"]["ignoredColumns"] and "Target" not in columns
    expected, _ = predict(server, "income", [{c: r[c] for c in columns} for r in records])
    whole, _ = predict(server, "income", records)
    assert whole == expected
    status, body, _ = server.request(
        "POST", "/v1/models/income:predict",
        {"inputs": {c: [r[c] for r in records] for c in records[0]}})
    assert status == 200 and flat(body["outputs"]) == expected
    status, body, _ = server.request("POST", "/v2/models/income/infer", {"inputs": [
        {"name": c, "shape": [len(records)], "datatype": "BYTES", "data": [r[c] for r in records]}
        for c in records[0]]})
    assert status == 200 and body["outputs"][0]["data"] == expected
    # A name the model set never had is still refused, by name.
    status, body, _ = server.request("POST", "/v1/models/income:predict",
                                     {"instances": [dict(records[0], Zip="94110")]})
    assert status == 400
    assert 'instances[0]: unknown column "Zip": not a column of the model set' in body["error"]


# Runs in the Python that has tritonclient and kserve: scores records through both clients
# with their defaults (binary tensor data) and a few variants; writes what came back.
CLIENTS_SCRIPT = r'''
import asyncio, json, sys
import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException
from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig

address, spec_path, out_path = sys.argv[1:4]
spec = json.load(open(spec_path))
records, numeric = spec["records"], set(spec["numeric"])
n = len(records)

def column(name):
    values = [r[name] for r in records]
    if name in numeric:
        # None (a missing value) becomes NaN, which JSON writes as NaN.
        return "FP64", np.array([np.nan if v is None else float(v) for v in values])
    return "BYTES", np.array([v.encode() for v in values], dtype=np.object_)

def triton_inputs(binary):
    inputs = []
    for name in spec["columns"]:
        dtype, array = column(name)
        t = httpclient.InferInput(name, [n], dtype)
        t.set_data_from_numpy(array, binary_data=binary)
        inputs.append(t)
    return inputs

result = {}
client = httpclient.InferenceServerClient(address)
result["ready"] = client.is_server_ready() and client.is_model_ready("income")
result["extensions"] = client.get_server_metadata()["extensions"]
# Defaults: binary inputs, and (no outputs named) binary outputs.
answer = client.infer("income", triton_inputs(True))
result["binary_output"] = "binary_data_size" in answer.get_output("score").get("parameters", {})
result["triton_binary"] = answer.as_numpy("score")[:, 0].tolist()
answer = client.infer("income", triton_inputs(False),
                      outputs=[httpclient.InferRequestedOutput("score", binary_data=False)])
result["triton_json"] = answer.as_numpy("score")[:, 0].tolist()
# A gzip body; the answer asked gzip too comes back plain, which the client reads.
answer = client.infer("income", triton_inputs(True), request_compression_algorithm="gzip",
                      response_compression_algorithm="gzip")
result["triton_gzip"] = answer.as_numpy("score")[:, 0].tolist()
try:
    client.infer("income", triton_inputs(True),
                 outputs=[httpclient.InferRequestedOutput("probability")])
except InferenceServerException as e:
    result["unknown_output"] = [e.status(), e.message()]

async def kserve_scores():
    kclient = InferenceRESTClient(RESTConfig(protocol="v2"))
    inputs = []
    for name in spec["columns"]:
        dtype, array = column(name)
        t = InferInput(name, [n], dtype)
        t.set_data_from_numpy(array, binary_data=True)
        inputs.append(t)
    response = await kclient.infer("http://" + address, InferRequest("income", inputs),
                                   model_name="income")
    return response.outputs[0].as_numpy()[:, 0].tolist()

result["kserve"] = asyncio.run(kserve_scores())
json.dump(result, open(out_path, "w"))
'''


@pytest.fixture(scope="module")
def clients_python():
    """A Python with tritonclient[http] and kserve (a venv under build/, made on first use)."""
    return python_with(["tritonclient.http", "kserve", "numpy"], ["tritonclient[http]", "kserve"],
                       "serving-clients-venv")


def test_tritonclient_and_kserve_with_their_defaults(income_server, clients_python, tmp_path):
    server = income_server
    records = eval_records()[:40]
    _, meta, _ = server.request("GET", "/v2/models/income")
    numeric = [i["name"] for i in meta["inputs"] if i["datatype"] == "FP64"]
    columns = [i["name"] for i in meta["inputs"]]
    assert "Age" in numeric and "Education" in columns
    records[0]["Age"] = None  # tritonclient sends it as NaN (JSON) or a NaN double (binary)
    expected, _ = predict(server, "income", [{c: r[c] for c in columns} for r in records])
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"records": records, "numeric": numeric, "columns": columns}))
    script = tmp_path / "clients.py"
    script.write_text(CLIENTS_SCRIPT)
    out = tmp_path / "out.json"
    proc = subprocess.run([clients_python, str(script), f"{server.host}:{server.port}", str(spec),
                           str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["ready"] and result["extensions"] == ["binary_tensor_data"]
    assert result["binary_output"]
    for key in ("triton_binary", "triton_json", "triton_gzip", "kserve"):
        assert len(result[key]) == len(expected), key
        worst = max(abs(a - b) for a, b in zip(result[key], expected))
        assert worst <= 1e-12, (key, worst)
    status, message = result["unknown_output"]
    assert str(status) == "400" and 'unknown output "probability"' in message


def test_v2_json_limits(income_server):
    server = income_server
    cases = [
        ({"name": "Age", "shape": [1], "datatype": "INT8", "data": [300]}, "does not fit INT8"),
        ({"name": "Age", "shape": [1], "datatype": "UINT8", "data": [-3]}, "does not fit UINT8"),
    ]
    for tensor, message in cases:
        status, body, _ = server.request("POST", "/v2/models/income/infer", {"inputs": [tensor]})
        assert status == 400 and message in body["error"], body
    # NaN, Infinity and -Infinity literals are missing values (as TF Serving reads them).
    status, body, _ = server.request(
        "POST", "/v1/models/income:predict",
        '{"instances": [{"Age": NaN}, {"Age": Infinity}, {"Age": -Infinity}, {"Age": null}]}')
    assert status == 200, body
    scores = flat(body["predictions"])
    assert len(set(scores)) == 1


def test_v1_metadata_describes_the_requests_and_answers(income_server):
    server = income_server
    _, meta, _ = server.request("GET", "/v1/models/income/metadata")
    signatures = meta["metadata"]["signature_def"]["signature_def"]
    default = signatures["serving_default"]
    assert default["method_name"] == "tensorflow/serving/predict"
    # One input per raw column, shape [-1]; "score" [-1, 1].
    inputs = default["inputs"]
    assert set(inputs) == set(model_columns(server, "income"))
    assert inputs["Age"]["dtype"] == "DT_DOUBLE" and inputs["Education"]["dtype"] == "DT_STRING"
    assert all([d["size"] for d in i["tensor_shape"]["dim"]] == ["-1"] for i in inputs.values())
    score = default["outputs"]["score"]
    assert [d["size"] for d in score["tensor_shape"]["dim"]] == ["-1", "1"]
    # A request built from the signature alone: a value per input, in row and columnar form.
    records = eval_records()[:5]
    row = [{name: (float(r[name]) if i["dtype"] == "DT_DOUBLE" else r[name])
            for name, i in inputs.items()} for r in records]
    status, body, _ = server.request("POST", "/v1/models/income:predict",
                                     {"signature_name": "serving_default", "instances": row})
    assert status == 200, body
    predictions = body["predictions"]
    assert len(predictions) == 5 and all(len(p) == 1 for p in predictions)  # [[s], ...]: [-1, 1]
    status, body, _ = server.request("POST", "/v1/models/income:predict",
                                     {"inputs": {n: [r[n] for r in row] for n in inputs}})
    assert status == 200 and body["outputs"] == predictions
    # The normalized signature: input "input" [-1, W], by name or not.
    normalized = signatures["normalized"]["inputs"]["input"]
    width = int(normalized["tensor_shape"]["dim"][1]["size"])
    assert width == meta["tarn"]["vectorWidth"]
    vectors = [[(i + j) % 5 * 0.25 - 0.5 for j in range(width)] for i in range(3)]
    answers = []
    for body in ({"signature_name": "normalized", "instances": [{"input": v} for v in vectors]},
                 {"signature_name": "normalized", "inputs": {"input": vectors}},
                 {"instances": vectors}):
        status, answer, _ = server.request("POST", "/v1/models/income:predict", body)
        assert status == 200, answer
        answers.append(answer.get("predictions", answer.get("outputs")))
    assert answers[0] == answers[1] == answers[2] and len(answers[0][0]) == 1
    assert len(set(flat(answers[0]))) == 3
    status, body, _ = server.request("POST", "/v1/models/income:predict",
                                     {"signature_name": "classify", "instances": row})
    assert status == 400 and 'signature_name "classify" is not a signature' in body["error"]


def test_missing_model_base_fails_at_start_and_gzip_bodies_are_read(income_server, tmp_path):
    proc = subprocess.run([tarn_bin(), "serve", "--port", "0", "--model-base",
                           tmp_path / "no-such-base"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--model-base" in proc.stderr and "does not exist" in proc.stderr, proc.stderr
    server = income_server
    records = eval_records()[:20]
    expected, _ = predict(server, "income", records)
    body = gzip.compress(json.dumps({"instances": records}).encode())
    for corrupt in (False, True):
        data = body[:len(body) // 2] if corrupt else body
        c = server.connect()
        c.request("POST", "/v1/models/income:predict", body=data,
                  headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        r = c.getresponse()
        answer = json.loads(r.read())
        c.close()
        if corrupt:
            assert r.status == 400 and "the gzip body is truncated" in answer["error"], answer
        else:
            assert r.status == 200 and flat(answer["predictions"]) == expected


def test_graph_model_serves_the_scores_of_tarn_eval(tmp_path):
    """A WDL (categorical columns as ids, ZSCALE_INDEX, Native_Country hashed into 16 buckets)
    serves from whole raw data rows, in every request form, the scores `tarn eval` gives the
    same rows."""
    params = dict(PARAMS, NumEmbedColumnIds=[1, 3, 5, 6, 7, 13], NumEmbedOuputs=8)
    ms = prepared(tmp_path, name="wdl", epochs=2, steps=("init",), **{
        "normalize.normType": "ZSCALE_INDEX", "train.algorithm": "WDL", "train.params": params})
    cols = json.loads((ms / "ColumnConfig.json").read_text())
    for c in cols:
        if c["columnName"] == "Native_Country":
            c["hashSeed"] = 16
    (ms / "ColumnConfig.json").write_text(json.dumps(cols, indent=2))
    run("stats", cwd=ms)
    run("norm", "-Dtarn.norm.id-hash-seed=3", cwd=ms)
    run("varsel", cwd=ms)
    run("train", cwd=ms)
    header = model_file_header(ms / "models" / "model0.tarn")
    kinds = {c["name"]: c["kind"] for c in header["idColumns"]}
    assert "graph" in header and kinds["Native_Country"] == "hash" and kinds["Race"] == "index"
    assert [n["vocabulary"] for n in header["graph"]["nodes"]
            if n["name"] == "embed_Native_Country"] == [17]  # 16 buckets and the missing id
    expected = eval_scores(ms)
    records = eval_records()
    assert len(records) == len(expected)

    server = Server("-m", ms)
    try:
        _, meta, _ = server.request("GET", f"/v1/models/{ms.name}/metadata")
        assert meta["tarn"]["vectorWidth"] == -1  # a normalized vector carries no ids
        conn = server.connect()
        got = []
        for start in range(0, len(records), 2000):  # whole rows: target and all
            scores, _ = predict(server, ms.name, records[start:start + 2000], conn=conn)
            got += scores
        sample = records[:50]
        columns = list(sample[0])
        status, body, _ = server.request(
            "POST", f"/v1/models/{ms.name}:predict",
            {"inputs": {c: [r[c] for r in sample] for c in columns}})
        assert status == 200 and flat(body["outputs"]) == got[:50]
        status, body, _ = server.request("POST", f"/v2/models/{ms.name}/infer", {"inputs": [
            {"name": c, "shape": [len(sample)], "datatype": "BYTES", "data": [r[c] for r in sample]}
            for c in model_columns(server, ms.name)]})
        assert status == 200 and body["outputs"][0]["data"] == got[:50]
    finally:
        code, err = server.stop()
    assert code == 0, err
    assert_scores_equal_eval(got, expected)
