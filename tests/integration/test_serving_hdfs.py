"""Serving versions from HDFS (the mini HDFS + YARN of tests/yarn/cluster).

`tarn serve --model-base hdfs://...` copies each complete version into its local cache and
serves it; a version without its READY marker, or whose files do not match the marker, is
never served. Then the seed-002 example (examples/assembly/seed-002.json) in its lean form on
YARN: tarn's own distributed trainer as an assembly component exporting versions into HDFS, and
a `tarn serve` component that follows them; a second training (LOCAL, on this machine) exports
one more version into the same HDFS folder and the server moves to it. The Keras part of the
example is the job test_assembly_yarn.py runs.
"""
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from assembly_status import component, instance, wait_until
from conftest import ROOT, edit_config, make_income_model_set, run, tarn_bin
from test_assembly_yarn import free_port, home, status, tarn  # noqa: F401  (home: a fixture)
from yarn_cluster import yarn_cluster  # noqa: F401  (the fixture)

EXAMPLE = ROOT / "examples" / "assembly"
INCOME = ROOT / "examples" / "income-estimation" / "DataStore"
PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [10], "ActivationFunc": ["tanh"],
          "LearningRate": 0.002, "MiniBatchs": 128, "RegularizedConstant": 0.01,
          "Propagation": "Adam"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The bundled income model set, normalized into two files and trained (LOCAL, 2 epochs)."""
    base = tmp_path_factory.mktemp("serving-hdfs")
    ms = make_income_model_set(base, "income")
    edit_config(ms, **{"train.algorithm": "TensorFlow", "train.params": PARAMS,
                       "train.numTrainEpochs": 2})
    for step in (["init"], ["stats"], ["norm", "-shuffle", "-Dshifu.norm.shuffle.size=2"],
                 ["varsel"], ["train"]):
        run(*step, cwd=ms)
    return ms


def record():
    header = (INCOME / "EvalSet1" / ".pig_header").read_text().strip().split("|")
    row = ("25|Private|226802|11th|7|Never-married|Machine-op-inspct|Own-child|Black|Male|0|0|"
           "40|United-States|<=50K").split("|")
    return {k: v for k, v in zip(header, row) if k != "Target"}


def get_json(url):
    return json.loads(urllib.request.urlopen(url, timeout=10).read())


def served_versions(url):
    """The AVAILABLE versions of GET /v1/models/NAME ([] while none is, or no answer)."""
    try:
        return [int(v["version"]) for v in get_json(url)["model_version_status"]
                if v["state"] == "AVAILABLE"]
    except (OSError, ValueError, KeyError):
        return []


def predict(url):
    """(version that answered, score) of one raw record."""
    request = urllib.request.Request(url + ":predict",
                                     data=json.dumps({"instances": [record()]}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        score = json.loads(answer.read())["predictions"][0][0]
        return int(answer.headers["X-Model-Version"]), score


def wait_for(what, check, limit_s=120):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {limit_s} s")


def polls(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return int(float(re.search(r"^tarn_serving_polls_total (\S+)$", text, re.M).group(1)))


def test_serve_follows_an_hdfs_base_and_never_serves_half_a_version(trained, yarn_cluster,
                                                                     tmp_path):
    base = f"/user/{yarn_cluster.user}/serve-hdfs"
    run("export", "-t", "serving", "-o", yarn_cluster.uri(base), cwd=trained,
        env=yarn_cluster.env)  # version 1, written into HDFS marker last
    assert yarn_cluster.list(base + "/1") == ["READY", "model0.tarn"]
    local = tmp_path / "versions"  # the files of the versions put by hand below
    run("export", "-t", "serving", "-o", local, cwd=trained)
    cache = tmp_path / "cache"
    server = subprocess.Popen(
        [tarn_bin(), "serve", "--model-base", yarn_cluster.uri(base), "--model-cache", str(cache),
         "--name", "income", "--port", "0", "--poll-ms", "200"],
        env={**os.environ, **yarn_cluster.env}, stdout=subprocess.PIPE,
        stderr=open(tmp_path / "serve.log", "w"), text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("listening on "), (line, (tmp_path / "serve.log").read_text())
        port = int(line.rsplit(":", 1)[1])
        url = f"http://127.0.0.1:{port}/v1/models/income"
        wait_for("version 1 served", lambda: served_versions(url) == [1])

        # Version 2 half written (its model, no marker); version 3 with a marker whose model
        # file is shorter than it records. Neither is served nor lands in the cache.
        model2 = (local / "1" / "model0.tarn").read_bytes()
        yarn_cluster.put_bytes(model2, base + "/2/model0.tarn")
        yarn_cluster.put_bytes(model2[:len(model2) // 2], base + "/3/model0.tarn")
        yarn_cluster.put_bytes((local / "1" / "READY").read_bytes(), base + "/3/READY")
        seen = polls(port)
        wait_for("three more scans", lambda: polls(port) >= seen + 3)
        assert served_versions(url) == [1]
        assert predict(url)[0] == 1
        assert sorted(p.name for p in cache.iterdir()) == ["1"]
        assert "does not match its marker" in (tmp_path / "serve.log").read_text()

        # The marker of 2 lands: served, and 1 leaves the cache once unloaded.
        yarn_cluster.put_bytes((local / "1" / "READY").read_bytes(), base + "/2/READY")
        wait_for("version 2 served", lambda: served_versions(url) == [2])
        version, score = predict(url)
        assert version == 2 and 0 <= score <= 1
        wait_for("version 1 pruned", lambda: sorted(p.name for p in cache.iterdir()) == ["2"])
    finally:
        server.terminate()
        assert server.wait(timeout=60) == 0


def test_seed002_trainer_and_server_on_yarn(trained, yarn_cluster, home, tmp_path):
    example = EXAMPLE / "seed-002.json"
    run("assembly", "validate", example)  # the whole example, Keras job included, is valid
    spec = json.loads(example.read_text())
    spec["components"] = [c for c in spec["components"] if c["name"] in ("serving", "trainer")]
    spec["resource"] = {"cpus": 1, "memory": "256"}
    component(spec, "trainer")["resource"] = {"cpus": 1, "memory": "768"}
    dist = tmp_path / "income"
    shutil.copytree(trained, dist)
    edit_config(dist, **{"basic.runMode": "DIST", "train.numTrainEpochs": 3})
    port = free_port()  # in place of the example's 8501
    serving = component(spec, "serving")
    serving["launch_command"] = serving["launch_command"].replace("8501", str(port))
    check = serving["readiness_check"]["properties"]
    check["url"] = check["url"].replace("8501", str(port))
    base = f"/user/{yarn_cluster.user}/seed002"
    spec["configuration"]["env"].update({
        "SERVING_HOST": "127.0.0.1", "MODEL_SET": str(dist),
        "SERVING_BASE": "hdfs://" + base,  # the configuration's default NameNode
        "EXPORT_EVERY_EPOCHS": "1"})
    path = tmp_path / "seed-002.json"
    path.write_text(json.dumps(spec, indent=1))

    out = tarn(home, "launch", path, "--backend", "yarn")
    assert "Service seed-002 submitted: YARN application application_" in out.stdout
    url = f"http://127.0.0.1:{port}/v1/models/income"
    s = wait_until(lambda: status(home, "seed-002"), "seed-002",
                   lambda s: s["state"] in ("FAILED", "STOPPED") or (
                       instance(s, "serving-0")["state"] == "READY" and
                       instance(s, "trainer-0")["state"] in ("SUCCEEDED", "FAILED")),
                   "the trainer's end", 240, 1)
    assert instance(s, "trainer-0")["state"] == "SUCCEEDED", json.dumps(s, indent=1)
    # Two versions during training (after epochs 1 and 2) and the final one, marker last.
    listed = sorted(int(name) for name in yarn_cluster.list(base))
    assert listed == [1, 2, 3], listed
    assert all("READY" in yarn_cluster.list(f"{base}/{v}") for v in listed)
    wait_for("the final version served", lambda: served_versions(url) == [3])
    version, score = predict(url)
    assert version == 3 and 0 <= score <= 1

    # Training again, on this machine, into the same HDFS folder: the server moves to it.
    again = tmp_path / "again"
    shutil.copytree(trained, again)
    run("train", f"-Dtarn.serving.exportDir={yarn_cluster.uri(base)}", cwd=again,
        env=yarn_cluster.env)
    wait_for("version 4 served", lambda: served_versions(url) == [4])
    assert predict(url)[0] == 4
    s = status(home, "seed-002")
    assert s["state"] in ("STARTED", "STABLE") and instance(s, "serving-0")["state"] == "READY"
    tarn(home, "stop", "seed-002")
