"""Distributed training on a real YARN + HDFS (tests/yarn/cluster): tarn's coordinator is the
ApplicationMaster, parameter servers and workers run in YARN containers, the data, checkpoints
and model live in HDFS."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (EXAMPLE, INCOME_EVAL_SET, edit_config, epoch_lines, make_income_model_set,
                      run, tarn_bin)
from yarn_cluster import yarn_cluster  # noqa: F401  (the fixture)

PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [30], "ActivationFunc": ["tanh"],
          "LearningRate": 0.002, "MiniBatchs": 128, "RegularizedConstant": 0.01,
          "Propagation": "Adam"}
EPOCHS = 6
# 1 parameter server, 2 workers (one per file), 1 backup, in small containers.
YARN = ("-Dtarn.cluster.backend=yarn", "-Dtarn.cluster.host=127.0.0.1", "-Dshifu.ps.instances=1",
        "-Dshifu.worker.instances.backup=1", "-Dshifu.am.memory=256m", "-Dshifu.ps.memory=256m",
        "-Dshifu.worker.memory=256m", "-Dshifu.ps.vcores=1", "-Dshifu.worker.vcores=1")


CATEGORICAL = ["Work_Class", "Education", "Maried_Status", "Occupation", "Relationship", "Race",
               "Gender", "Native_Country"]


@pytest.fixture(scope="module")
def model_set(tmp_path_factory, yarn_cluster):
    """The Adult table and a column-name file in HDFS; init, stats, norm and varsel read
    them from there. A copy trained on one machine (LOCAL) is the reference."""
    base = tmp_path_factory.mktemp("yarn-train")
    ms = make_income_model_set(base, "income")
    hdfs = f"/user/{yarn_cluster.user}/adult"
    yarn_cluster.put_tree(EXAMPLE / "DataSet1", hdfs + "/DataSet1")
    yarn_cluster.put_bytes(("\n".join(CATEGORICAL) + "\n").encode(), hdfs + "/categorical.names")
    edit_config(ms, **{
        "dataSet.dataPath": yarn_cluster.uri(hdfs + "/DataSet1"),
        "dataSet.headerPath": yarn_cluster.uri(hdfs + "/DataSet1/.pig_header"),
        "dataSet.categoricalColumnNameFile": yarn_cluster.uri(hdfs + "/categorical.names"),
        "train.algorithm": "TensorFlow", "train.params": PARAMS, "train.numTrainEpochs": EPOCHS,
        **INCOME_EVAL_SET})
    for step in (["init"], ["stats"], ["norm", "-shuffle", "-Dshifu.norm.shuffle.size=2"],
                 ["varsel"]):
        run(*step, cwd=ms, env=yarn_cluster.env)
    types = {c["columnName"]: c["columnType"] for c in
             json.loads((ms / "ColumnConfig.json").read_text())}
    assert all(types[c] == "C" for c in CATEGORICAL) and types["Age"] == "N"
    local = base / "local"
    shutil.copytree(ms, local)
    run("train", cwd=local, env=yarn_cluster.env)
    edit_config(ms, **{"basic.runMode": "DIST"})
    return {"ms": ms, "local_auc": auc(local), "base": base}


def auc(ms):
    run("eval", cwd=ms)
    return json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())["exactAreaUnderRoc"]


def processes(*words):
    """Pids whose command line holds every word (YARN containers run on this machine)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if all(w.encode() in cmd for w in words):
            found.append(int(d.name))
    return found


def train_in_background(ms, env, *extra):
    full = dict(os.environ, **env)
    return subprocess.Popen([tarn_bin(), "train", *YARN, *extra], cwd=ms, env=full, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_for_line(proc, pattern, lines, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if re.search(pattern, line):
            return
    raise AssertionError(f"no {pattern!r} in:\n{''.join(lines)}")


def test_train_on_yarn_succeeds_and_matches_local(model_set, yarn_cluster, tmp_path):
    ms = tmp_path / "income"
    shutil.copytree(model_set["ms"], ms)
    proc = run("train", *YARN, cwd=ms, env=yarn_cluster.env)
    out = proc.stdout
    assert re.search(r"YARN application application_\d+_\d+: FINISHED SUCCEEDED", out), out
    assert len(epoch_lines(out)) == EPOCHS, out
    app_id = re.search(r"submitted YARN application (application_\d+_\d+)", out).group(1)
    # The model came back from HDFS; eval works as after a local run.
    assert abs(auc(ms) - model_set["local_auc"]) < 0.01
    cluster = json.loads((ms / "tmp" / "cluster.json").read_text())
    assert cluster["phase"] == "succeeded"
    assert all(n["where"].startswith("container_") for n in cluster["nodes"])
    assert sorted(n["role"] for n in cluster["nodes"]) == ["backup", "ps", "worker", "worker"]
    # Finished: a worker container's logs come from the aggregated logs in HDFS.
    worker = next(n["where"] for n in cluster["nodes"] if n["role"] == "worker")
    logs = run("yarn", "logs", app_id, "--container", worker, env=yarn_cluster.env).stdout
    assert f"Container: {worker} on localhost:" in logs, logs[:2000]
    assert "LogAggregationType: AGGREGATED" in logs and "LogType:stderr" in logs, logs[:2000]
    status = run("yarn", "status", app_id, env=yarn_cluster.env).stdout
    assert "SUCCEEDED" in status
    # The model, checkpoints and history are in HDFS beside the staged shards.
    root = f"/user/{yarn_cluster.user}/.tarn/staging/modelsets"
    home = [d for d in yarn_cluster.list(root) if d.startswith("income-")]
    assert home, yarn_cluster.list(root)
    listed = yarn_cluster.list(f"{root}/{home[0]}")
    assert {"NormalizedData", "checkpoints", "models", "history.json"} <= set(listed), listed
    assert yarn_cluster.list(f"{root}/{home[0]}/models") == ["model0.tarn"]


def kill_during_training(model_set, yarn_cluster, tmp_path, epoch, *command_words):
    """Trains on YARN, kills the processes whose command line holds the words once `epoch`
    is printed, and returns the model set and the whole output of a successful run."""
    ms = tmp_path / "income"
    shutil.copytree(model_set["ms"], ms)
    # Every message to the parameter server 5 ms late (the results do not change): the
    # client learns of epochs from a status file rewritten at most once a second, and
    # undelayed these epochs can all be over before it prints the one to kill at.
    proc = train_in_background(ms, yarn_cluster.env, "-Dtarn.net.test-delay-ms=5")
    lines = []
    wait_for_line(proc, rf"^Epoch #{epoch} ", lines)
    victims = processes(*command_words)
    assert victims, f"no process running {' '.join(command_words)}"
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=400)
    out = "".join(lines) + out
    assert proc.returncode == 0, out
    assert "FINISHED SUCCEEDED" in out
    return ms, out


def test_worker_container_killed_mid_training_still_succeeds(model_set, yarn_cluster, tmp_path):
    ms, _ = kill_during_training(model_set, yarn_cluster, tmp_path, 2,
                                 "node", "--role", "worker", "--index", "0")
    assert abs(auc(ms) - model_set["local_auc"]) < 0.01


def test_killed_application_master_resumes_in_its_second_attempt(model_set, yarn_cluster,
                                                                  tmp_path):
    ms, out = kill_during_training(model_set, yarn_cluster, tmp_path, 3,
                                   "node", "--role", "coordinator", "--job", "job.json")
    app_id = re.search(r"submitted YARN application (application_\d+_\d+)", out).group(1)
    log = run("yarn", "logs", app_id, env=yarn_cluster.env, check=False).stdout
    assert "resuming from the checkpoint" in log or "resuming bag 0" in log, log[-3000:]
    history = json.loads((ms / "tmp" / "dist" / "history.json").read_text())
    # The second attempt resumed from the checkpoint: the history keeps the epochs up to it
    # (in HDFS before the checkpoint was committed) and those trained again after it, each once.
    assert [h["epoch"] for h in history] == list(range(1, EPOCHS + 1)), history
    assert abs(auc(ms) - model_set["local_auc"]) < 0.01


def test_model_server_containers_serve_after_training_until_killed(model_set, yarn_cluster,
                                                                    tmp_path):
    import urllib.request
    ms = tmp_path / "income"
    shutil.copytree(model_set["ms"], ms)
    proc = run("train", *YARN, "-Dshifu.serving.instances=1", cwd=ms, env=yarn_cluster.env)
    out = proc.stdout
    assert "training done, model servers running" in out, out
    app_id = re.search(r"submitted YARN application (application_\d+_\d+)", out).group(1)
    url = re.search(r"model server: (http://\S+)", out).group(1)
    try:
        # The server mirrors the version training exported to HDFS (1 s polls).
        deadline = time.time() + 90
        state = None
        while time.time() < deadline:
            try:
                status = json.loads(urllib.request.urlopen(url, timeout=5).read())
                state = status["model_version_status"][0]["state"]
                if state == "AVAILABLE":
                    break
            except (OSError, KeyError, IndexError, ValueError):
                pass
            time.sleep(0.5)
        assert state == "AVAILABLE", state
        header = (EXAMPLE / "EvalSet1" / ".pig_header").read_text().strip().split("|")
        row = "25|Private|226802|11th|7|Never-married|Machine-op-inspct|Own-child|Black|Male|0|0|40|United-States|<=50K".split("|")
        record = {k: v for k, v in zip(header, row) if k != "Target"}
        request = urllib.request.Request(url + ":predict",
                                         data=json.dumps({"instances": [record]}).encode(),
                                         headers={"Content-Type": "application/json"})
        answer = json.loads(urllib.request.urlopen(request, timeout=10).read())
        score = answer["predictions"][0]
        score = score[0] if isinstance(score, list) else score
        assert 0 <= score <= 1
        status = run("yarn", "status", app_id, env=yarn_cluster.env).stdout
        assert "RUNNING" in status and "model server" in status, status
    finally:
        run("yarn", "kill", app_id, env=yarn_cluster.env, check=False)
    assert yarn_cluster.app(app_id)["state"] == "KILLED"
