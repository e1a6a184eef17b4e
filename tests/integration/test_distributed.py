"""Distributed training (runMode DIST): real coordinator, parameter server and worker
processes on loopback, killed with SIGKILL mid-run."""
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import (INCOME_EVAL_SET, edit_config, epoch_lines, make_income_model_set,
                      model_file_header, model_file_params, run, tarn_bin)
from test_graph_train import adult_keras_fixture
from test_tensorboard import printed_epochs, read_scalars, tb_python  # noqa: F401 (a fixture)

PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [30], "ActivationFunc": ["tanh"],
          "LearningRate": 0.002, "MiniBatchs": 128, "RegularizedConstant": 0.01,
          "Propagation": "Adam"}
EPOCHS = 8
# A learning rate at which the validation error of PARAMS turns back up within EPOCHS.
EARLY_STOP_RATE = 0.05


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A normalized Adult model set in two shards (two workers), trained once on one
    machine (LOCAL) and once distributed, undisturbed: the references."""
    base = tmp_path_factory.mktemp("dist")
    ms = make_income_model_set(base, "income")
    edit_config(ms, **{
        "train.algorithm": "TensorFlow", "train.params": PARAMS,
        "train.numTrainEpochs": EPOCHS,
        **INCOME_EVAL_SET})
    run("init", cwd=ms)
    run("stats", cwd=ms)
    run("norm", "-shuffle", "-Dshifu.norm.shuffle.size=2", cwd=ms)
    run("varsel", cwd=ms)
    local = copy(ms, base / "local")
    run("train", cwd=local)
    edit_config(ms, **{"basic.runMode": "DIST"})
    dist = copy(ms, base / "undisturbed")
    out = run("train", *CLUSTER, cwd=dist).stdout
    return {"ms": ms, "local_auc": auc(local), "dist_auc": auc(dist), "dist_out": out,
            "dist": dist}


CLUSTER = ("-Dshifu.ps.instances=2", "-Dshifu.worker.instances.backup=1")


def copy(ms, dest):
    shutil.copytree(ms, dest)
    return dest


def auc(ms):
    run("eval", cwd=ms)
    return json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())["exactAreaUnderRoc"]


def cluster(ms):
    return json.loads((ms / "tmp" / "cluster.json").read_text())


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1][0] != "Z"


class Training:
    """`tarn train` in the background, its output read line by line."""

    def __init__(self, ms, *args):
        self.ms = ms
        self.proc = subprocess.Popen([tarn_bin(), "train", *args], cwd=ms, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines = []

    def wait_for(self, pattern, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matching {pattern!r}:\n{''.join(self.lines)}")

    def finish(self, timeout=120):
        rest, _ = self.proc.communicate(timeout=timeout)
        self.lines.append(rest)
        return self.proc.returncode, "".join(self.lines)


def running(ms, role, **match):
    """The pid of a running node of `role` (as cluster.json names it)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            nodes = cluster(ms)["nodes"]
        except (FileNotFoundError, json.JSONDecodeError):
            nodes = []
        for n in nodes:
            if n["role"] == role and n["state"] == "running" and all(
                    n.get(k) == v for k, v in match.items()):
                return n["pid"]
        time.sleep(0.05)
    raise AssertionError(f"no running {role} {match} in {cluster(ms)}")


def test_dist_reaches_local_auc_with_logs_cluster_file_and_status(prepared, tmp_path):
    assert abs(prepared["dist_auc"] - prepared["local_auc"]) < 0.01, prepared
    assert prepared["dist_auc"] > 0.88
    out = prepared["dist_out"]
    assert len([e for e in epoch_lines(out) if e["valid_error"] is not None]) == EPOCHS
    dist = prepared["dist"]
    logs = {p.name for p in (dist / "logs").iterdir()}
    assert {"coordinator.log", "ps-0.log", "ps-1.log", "worker-0.log", "worker-1.log",
            "worker-2.log"} <= logs, logs
    c = cluster(dist)
    assert c["phase"] == "succeeded"
    roles = sorted((n["role"], n["index"]) for n in c["nodes"])
    assert roles == [("backup", 2), ("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1)]
    job = (dist / "tmp" / "dist" / "job.json").read_text()
    assert "secret" not in job.lower() and "TARN_JOB_SECRET" not in (dist / "tmp" / "cluster.json").read_text()
    # The model is an ordinary tarn model: eval already scored it above.
    meta = dist / "models" / "model0.tarn"
    assert meta.exists()


def test_status_page_and_secret_not_on_command_lines(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "status")
    t = Training(ms, *CLUSTER, "-Dtarn.net.test-delay-ms=1")
    t.wait_for(r"^Epoch #1 ")
    url = cluster(ms)["coordinator"]["status"]
    page = urllib.request.urlopen(url, timeout=10).read().decode()
    assert "<table" in page and "ps" in page and "http-equiv=\"refresh\"" in page
    status = json.loads(urllib.request.urlopen(url + "status.json", timeout=10).read())
    assert status["phase"] in ("train", "validate", "checkpoint")
    assert status["history"] and "samplesPerSec" in status["history"][0]
    for n in status["nodes"]:
        if n["state"] == "running":
            cmdline = Path(f"/proc/{n['pid']}/cmdline").read_bytes().split(b"\0")
            assert b"--role" in cmdline and (n["role"] if n["role"] != "backup" else "worker").encode() in cmdline
            environ = Path(f"/proc/{n['pid']}/environ").read_bytes()
            secret = [e for e in environ.split(b"\0") if e.startswith(b"TARN_JOB_SECRET=")][0]
            assert secret.split(b"=", 1)[1] not in b" ".join(cmdline)
    code, out = t.finish()
    assert code == 0, out


def test_killed_worker_is_replaced_by_a_backup(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "worker")
    t = Training(ms, *CLUSTER, "-Dtarn.net.test-delay-ms=1")
    rng = random.Random()
    t.wait_for(rf"^Epoch #{rng.randint(1, 3)} ")
    time.sleep(rng.uniform(0, 0.3))
    victim = running(ms, "worker", slot=rng.randint(0, 1))
    os.kill(victim, signal.SIGKILL)
    code, out = t.finish()
    assert code == 0, out
    assert len(epoch_lines(out)) == EPOCHS
    log = (ms / "logs" / "coordinator.log").read_text()
    assert "takes over slot" in log and "killed by signal 9" in log, log
    assert abs(auc(ms) - prepared["dist_auc"]) < 0.01
    roles = [n for n in cluster(ms)["nodes"] if n["pid"] == victim]
    assert roles and roles[0]["state"] == "dead"


def test_killed_parameter_server_is_restarted_and_rolled_back(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "ps")
    t = Training(ms, *CLUSTER, "-Dtarn.net.test-delay-ms=1")
    t.wait_for(rf"^Epoch #{random.randint(2, 4)} ")
    # Half the time at once: the epoch line comes just before the checkpoint, so the server
    # dies while the coordinator talks to it rather than while workers do.
    time.sleep(random.choice([0, random.uniform(0, 0.2)]))
    os.kill(running(ms, "ps", index=random.randint(0, 1)), signal.SIGKILL)
    code, out = t.finish()
    assert code == 0, out
    log = (ms / "logs" / "coordinator.log").read_text()
    assert "relaunched parameter server" in log and "rolled back to the checkpoint" in log, log
    assert abs(auc(ms) - prepared["dist_auc"]) < 0.01


def test_killed_coordinator_then_resume_with_is_continuous(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "coordinator")
    # A checkpoint after every epoch (these epochs are far shorter than the
    # default 1 s between checkpoints), so the resume shows epochs kept.
    t = Training(ms, *CLUSTER, "-Dtarn.net.test-delay-ms=1", "-Dtarn.train.checkpoint-interval-ms=0")
    t.wait_for(r"^Epoch #3 ")
    # The committer writes manifests behind the training (on a loaded machine a whole epoch
    # behind or more): the kill comes once epoch 2's is committed.
    checkpoints = ms / "tmp" / "modelsTmp" / "dist"
    deadline = time.time() + 60
    while not any(int(m.name[len("manifest-b000-e"):-len(".json")]) >= 2
                  for m in checkpoints.glob("manifest-b000-e*.json")):
        assert t.proc.poll() is None, "training ended before epoch 2's checkpoint was seen"
        assert time.time() < deadline, "no checkpoint of epoch 2 within 60 s"
        time.sleep(0.02)
    nodes = [n["pid"] for n in cluster(ms)["nodes"] if n["state"] == "running"]
    os.kill(cluster(ms)["coordinator"]["pid"], signal.SIGKILL)
    code, out = t.finish()
    assert code != 0 and "isContinuous" in out, out
    deadline = time.time() + 10
    while any(alive(p) for p in nodes) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in nodes), "nodes outlived their coordinator"
    edit_config(ms, **{"train.isContinuous": True})
    proc = run("train", *CLUSTER, cwd=ms)
    assert "resuming bag 0 after epoch" in proc.stdout + proc.stderr
    done = int(re.search(r"after epoch (\d+)", proc.stdout + proc.stderr).group(1))
    assert done >= 2
    assert len(epoch_lines(proc.stdout)) == EPOCHS - done
    # The history kept the epochs up to the checkpoint and those trained again, each once.
    history = json.loads((ms / "tmp" / "dist" / "history.json").read_text())
    assert [h["epoch"] for h in history] == list(range(1, EPOCHS + 1)), history
    assert abs(auc(ms) - prepared["dist_auc"]) < 0.01


def test_no_backup_left_fails_clearly_or_continues_degraded(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "nobackup")
    t = Training(ms, "-Dshifu.worker.instances.backup=0", "-Dtarn.net.test-delay-ms=1")
    t.wait_for(r"^Epoch #2 ")
    os.kill(running(ms, "worker", slot=1), signal.SIGKILL)
    code, out = t.finish()
    assert code != 0 and "no backup worker is left" in out and "allow-degraded" in out, out
    t = Training(ms, "-Dshifu.worker.instances.backup=0", "-Dtarn.net.test-delay-ms=1",
                 "-Dtarn.train.allow-degraded=true")
    t.wait_for(r"^Epoch #2 ")
    os.kill(running(ms, "worker", slot=1), signal.SIGKILL)
    code, out = t.finish()
    assert code == 0, out
    assert "continuing degraded" in (ms / "logs" / "coordinator.log").read_text()


def frame(msg_type, payload):
    return struct.pack("<IHHQIIII", 0x464E5254, 1, msg_type, 1, len(payload), 0, 0, 0) + payload


def intrude(address):
    """Connects without the secret: garbage, a forged handshake, a bare frame.
    Returns what the server sent back after its challenge (b"" when it hung up)."""
    host, port = address.rsplit(":", 1)
    answers = []
    for attempt in (b"\x00garbage" * 100,
                    b"TARNAUTH" + struct.pack("<H", 1) + os.urandom(32) + os.urandom(32),
                    frame(20, b"\x01" * 64) + frame(3, b'{"node":2,"kind":"await"}')):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            hello = s.recv(42)
            assert hello.startswith(b"TARNAUTH")
            s.sendall(attempt)
            s.settimeout(5)
            try:
                data = s.recv(4096)
                while data and len(data) < 1 << 16:
                    more = s.recv(4096)
                    if not more:
                        break
                    data += more
            except (ConnectionResetError, socket.timeout):
                data = b""
            answers.append(data)
    return answers


def test_peers_without_the_secret_are_refused(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "intruder")
    t = Training(ms, *CLUSTER, "-Dtarn.net.test-delay-ms=1")
    t.wait_for(r"^Epoch #1 ")
    c = cluster(ms)
    ps = [n["address"] for n in c["nodes"] if n["role"] == "ps"]
    for address in [c["coordinator"]["address"], *ps]:
        assert intrude(address) == [b"", b"", b""], address
    code, out = t.finish()
    assert code == 0, out
    log = (ms / "logs" / "coordinator.log").read_text()
    assert "refused a connection" in log and "does not know the job secret" in log
    assert any("refused a connection" in p.read_text() for p in (ms / "logs").glob("ps-*.log"))
    # Same job, same seed: the intruders changed nothing.
    assert abs(auc(ms) - prepared["dist_auc"]) < 0.002


def test_tls_between_nodes_trains_the_same_model(prepared, tmp_path):
    # One parameter server, one worker, sync: the run is deterministic, so TLS must change
    # nothing a user sees but the wire.
    runs = {}
    for tls in ("false", "true"):
        ms = copy(prepared["ms"], tmp_path / f"tls-{tls}")
        out = run("train", *ONE_OF_EACH, f"-Dtarn.cluster.tls={tls}", cwd=ms).stdout
        runs[tls] = (ms, [(e["epoch"], e["train_error"], e["valid_error"]) for e in epoch_lines(out)])
    assert len(runs["true"][1]) == EPOCHS, runs["true"]
    assert runs["true"][1] == runs["false"][1]
    assert auc(runs["true"][0]) == auc(runs["false"][0])


def test_with_tls_peers_without_the_secret_or_tls_are_refused(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "tls-intruder")
    # Slowed down (every message to a parameter server waits 20 ms) so that the job is still
    # running while the intruders try.
    t = Training(ms, *CLUSTER, "-Dtarn.cluster.tls=true", "-Dtarn.net.test-delay-ms=20")
    t.wait_for(r"^Epoch #1 ")
    c = cluster(ms)
    coordinator = c["coordinator"]["address"]
    for address in [coordinator, *[n["address"] for n in c["nodes"] if n["role"] == "ps"]]:
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            # A TLS server waits for the client's hello: no tarn challenge in the clear.
            s.settimeout(0.5)
            with pytest.raises(socket.timeout):
                s.recv(64)
            # A plain tarn client's answer is not TLS: the server hangs up (at most a TLS alert).
            s.sendall(b"TARNAUTH" + struct.pack("<H", 1) + os.urandom(64))
            s.settimeout(5)
            try:
                data = s.recv(4096)
            except (ConnectionResetError, socket.timeout):
                data = b""
            assert b"TARNAUTH" not in data and b"TRNF" not in data, (address, data)
            assert data == b"" or data[0] == 0x15, (address, data)  # 0x15: a TLS alert record
    # A tarn node with TLS on but another job's secret fails the TLS handshake at once.
    env = dict(os.environ, TARN_JOB_SECRET="0" * 64, TARN_CLUSTER_TLS="1")
    intruder = subprocess.run([tarn_bin(), "node", "--role", "worker", "--index", "7",
                               "--node", "99", "--coordinator", coordinator],
                              env=env, capture_output=True, text=True, timeout=60)
    assert intruder.returncode != 0
    assert "TLS handshake" in intruder.stderr, intruder.stderr
    code, out = t.finish()
    assert code == 0, out
    log = (ms / "logs" / "coordinator.log").read_text()
    assert "refused a connection" in log and "TLS handshake" in log, log[-3000:]
    assert abs(auc(ms) - prepared["dist_auc"]) < 0.002


@pytest.mark.parametrize("mode,extra", [
    ("sync", ("-Dtarn.net.test-drop-rate=0.05", "-Dtarn.net.retry-ms=20")),
    ("async", ("-Dtarn.train.comm-period=4",)),
    ("ssp", ("-Dtarn.train.staleness=1", "-Dtarn.net.test-delay-ms=1")),
])
def test_consistency_modes(prepared, tmp_path, mode, extra):
    ms = copy(prepared["ms"], tmp_path / mode)
    proc = run("train", *CLUSTER, f"-Dtarn.train.consistency={mode}", *extra, cwd=ms)
    assert len(epoch_lines(proc.stdout)) == EPOCHS
    assert abs(auc(ms) - prepared["dist_auc"]) < 0.01
    assert json.loads(
        (ms / "tmp" / "cluster.json").read_text())["consistency"] == mode


def test_bad_cluster_settings_are_refused(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "bad")
    proc = run("train", "-Dshifu.worker.instances=5", cwd=ms, check=False)
    assert proc.returncode != 0 and "exceeds the 2 files" in proc.stderr
    proc = run("train", "-Dtarn.train.consistency=eventual", cwd=ms, check=False)
    assert proc.returncode != 0 and "tarn.train.consistency" in proc.stderr


def test_embedded_backend_runs_the_same_job_in_one_process(prepared, tmp_path):
    ms = copy(prepared["ms"], tmp_path / "embedded")
    proc = run("train", *CLUSTER, "-Dtarn.cluster.backend=embedded", cwd=ms)
    def errors_of(stdout):
        return [(e["train_error"], e["valid_error"], e["train_loss"], e["valid_loss"])
                for e in epoch_lines(stdout)]
    errors = errors_of(proc.stdout)
    reference = errors_of(prepared["dist_out"])
    # sync with two workers sums the same two gradients per step: the same numbers as
    # the multi-process run, over in-process connections instead of TCP.
    assert errors == reference
    assert "inproc:" in proc.stderr
    assert abs(auc(ms) - prepared["dist_auc"]) < 1e-9
    # The model knows every column of its model set (a server then accepts whole data rows).
    names = [c["columnName"] for c in json.loads((ms / "ColumnConfig.json").read_text())]
    assert model_file_header(ms / "models" / "model0.tarn")["modelSetColumns"] == names


def test_tensorboard_scalars_of_a_distributed_run(prepared, tmp_path, tb_python):
    tb = prepared["dist"] / "tmp" / "tensorboard"
    scalars = read_scalars(tb_python, [tb], tmp_path)[tb]
    printed = printed_epochs(prepared["dist_out"])
    assert set(scalars) == {"loss/train", "loss/valid", "auc/valid", "throughput/samples_per_sec"}
    assert [s for s, _ in scalars["loss/train"]] == list(range(1, EPOCHS + 1))
    for step, value in scalars["loss/train"]:
        assert value == pytest.approx(printed[(0, step)][0], rel=1e-5, abs=1e-6)
    for step, value in scalars["loss/valid"]:
        assert value == pytest.approx(printed[(0, step)][1], rel=1e-5, abs=1e-6)
    # The coordinator's AUC comes from the workers' score histograms (1/1000 bins).
    assert all(0.85 < v <= 1.0 for _, v in scalars["auc/valid"]), scalars["auc/valid"]


# One worker, one parameter server, a push per batch, sync: DIST runs the same training
# core as LOCAL (the bag's rows, the epoch's order, the batch slices, dropout, the
# validation summary), so the epochs' figures must be the same to the printed digits.
# Batches of 600 rows are cut into two slices, and LOCAL's two threads must not change
# that; dropout and a bag sample make the seeds of every path count.
ONE_OF_EACH = ("-Dshifu.ps.instances=1", "-Dshifu.worker.instances=1",
               "-Dshifu.worker.instances.backup=0", "-Dtarn.train.comm-period=1",
               "-Dtarn.train.consistency=sync")


def test_local_embedded_and_local_backend_print_the_same_epochs(tmp_path):
    ms = make_income_model_set(tmp_path, "same")
    edit_config(ms, **{
        "train.algorithm": "TensorFlow", "train.numTrainEpochs": 3,
        "train.baggingSampleRate": 0.8,
        "train.params": dict(PARAMS, MiniBatchs=600, DropoutRate=0.1),
        **INCOME_EVAL_SET})
    run("init", cwd=ms)
    run("stats", cwd=ms)
    run("norm", cwd=ms)
    run("varsel", cwd=ms)
    local = copy(ms, tmp_path / "LOCAL")
    local_out = run("train", "-Dtarn.threads=2", cwd=local).stdout
    edit_config(ms, **{"basic.runMode": "DIST"})
    runs = {"LOCAL": local_out}
    for backend in ("embedded", "local"):
        dist = copy(ms, tmp_path / f"DIST-{backend}")
        runs[backend] = run("train", *ONE_OF_EACH, f"-Dtarn.cluster.backend={backend}",
                            cwd=dist).stdout

    def figures(stdout):
        return [(e["epoch"], e["train_error"], e["valid_error"], e["train_loss"], e["valid_loss"])
                for e in epoch_lines(stdout)]
    reference = figures(runs["LOCAL"])
    assert [e[0] for e in reference] == [1, 2, 3], runs["LOCAL"]
    assert all(None not in e for e in reference), reference
    for name in ("embedded", "local"):
        assert figures(runs[name]) == reference, (name, runs[name], runs["LOCAL"])
    # The models hold the same parameters: the same scores on the eval set.
    assert auc(local) == auc(tmp_path / "DIST-embedded") == auc(tmp_path / "DIST-local")


# Graph models in DIST: the tables' rows live on the parameter servers (row r on server
# r % P); a worker pulls the rows each batch touches and pushes their gradients. LOCAL holds
# the same tables in one part, stepped by the same lazy per-row optimizer, so for each family
# the three paths must agree to the printed digits, here with two servers sharding the rows.
GRAPH_NN = {"NumHiddenLayers": 1, "NumHiddenNodes": [32], "ActivationFunc": ["relu"],
            "LearningRate": 0.002, "MiniBatchs": 256, "Propagation": "Adam", "DropoutRate": 0.1}
EPOCH_FIGURES = ("epoch", "train_error", "valid_error", "train_loss", "valid_loss")
GRAPH_FAMILIES = {
    "WDL": ("WDL", {"NumEmbedColumnIds": [1, 3, 5, 6, 7], "NumEmbedOuputs": 8, "L2Reg": 1e-5}),
    "DeepFM": ("DeepFM", {}),
    "DCN": ("DCN", {"NumCrossLayers": 2}),
    "Keras": ("TensorFlow", {"ModelGraph": "graph.json"}),
    # Keras' wide & deep with a BatchNormalization layer: moving statistics in DIST.
    "KerasBN": ("TensorFlow", {"ModelGraph": "graph.json"}),
}
KERAS_FIXTURES = {"Keras": "keras3_deepfm.json", "KerasBN": "keras3_wide_deep.json"}


@pytest.fixture(scope="module")
def normalized_ids(tmp_path_factory):
    """Adult normalized with categorical columns as ids (ZSCALE_INDEX), in two shards."""
    ms = make_income_model_set(tmp_path_factory.mktemp("dist-graph"), "adult")
    edit_config(ms, **{"normalize.normType": "ZSCALE_INDEX", "varSelect.filterNum": 50,
                       "train.baggingSampleRate": 0.8, **INCOME_EVAL_SET})
    for step in ("init", "stats", "norm", "varsel"):
        run(step, cwd=ms)
    return ms


def graph_model_set(normalized_ids, dest, family, epochs):
    algorithm, extra = GRAPH_FAMILIES[family]
    ms = copy(normalized_ids, dest)
    edit_config(ms, **{"train.algorithm": algorithm, "train.numTrainEpochs": epochs,
                       "train.params": dict(GRAPH_NN, **extra)})
    if family in KERAS_FIXTURES:
        adult_keras_fixture(ms, KERAS_FIXTURES[family], ms / "graph.json")
    return ms


@pytest.mark.parametrize("family", list(GRAPH_FAMILIES))
def test_graph_models_print_the_same_epochs_local_embedded_and_local_backend(
        normalized_ids, tmp_path, family):
    local = graph_model_set(normalized_ids, tmp_path / "LOCAL", family, 2)
    runs = {"LOCAL": run("train", "-Dtarn.threads=2", cwd=local).stdout}
    for backend, servers in (("embedded", 1), ("local", 2)):
        dist = graph_model_set(normalized_ids, tmp_path / f"DIST-{backend}", family, 2)
        edit_config(dist, **{"basic.runMode": "DIST"})
        runs[backend] = run("train", *ONE_OF_EACH, f"-Dshifu.ps.instances={servers}",
                            f"-Dtarn.cluster.backend={backend}", cwd=dist).stdout

    printed = {name: [{k: e[k] for k in EPOCH_FIGURES} for e in epoch_lines(out)]
               for name, out in runs.items()}
    assert [e["epoch"] for e in printed["LOCAL"]] == [1, 2], runs["LOCAL"]
    assert all(None not in e.values() for e in printed["LOCAL"]), printed
    for name in ("embedded", "local"):
        assert printed[name] == printed["LOCAL"], (name, runs[name], runs["LOCAL"])
    # The models hold the same parameters, tables whole and batch norm's moving
    # statistics: the same bytes, and the same scores on the eval set.
    params = [model_file_params(tmp_path / d / "models" / "model0.tarn")
              for d in ("LOCAL", "DIST-embedded", "DIST-local")]
    assert params[0] == params[1] == params[2]
    aucs = [auc(tmp_path / d) for d in ("LOCAL", "DIST-embedded", "DIST-local")]
    assert aucs[0] == aucs[1] == aucs[2] and aucs[0] > 0.8, aucs
    # Every table was sharded: each of the two servers checkpointed its share of each.
    manifest = json.loads(sorted((tmp_path / "DIST-local" / "tmp" / "modelsTmp" / "dist").glob(
        "manifest-*"))[-1].read_text())
    tables = {t["table"] for t in manifest["tables"]}
    assert tables and sorted((t["table"], t["ps"]) for t in manifest["tables"]) == [
        (name, ps) for name in sorted(tables) for ps in (0, 1)]
    # Bytes per sample: the rows a batch touches, pulled and pushed, beside the dense vector.
    history = json.loads((tmp_path / "DIST-local" / "tmp" / "dist" / "history.json").read_text())
    assert all(h["bytesPerSample"] > 0 for h in history), history


@pytest.mark.parametrize("family,least_auc", [("WDL", 0.85), ("KerasBN", 0.8)])
def test_graph_model_survives_a_killed_parameter_server(normalized_ids, tmp_path, family,
                                                        least_auc):
    """The roll back reloads every table share and every dense slice (batch norm's moving
    statistics with it) from the newest checkpoint."""
    ms = graph_model_set(normalized_ids, tmp_path / "ps", family, 4)
    edit_config(ms, **{"basic.runMode": "DIST"})
    t = Training(ms, *CLUSTER, "-Dtarn.net.test-delay-ms=1")
    t.wait_for(rf"^Epoch #{random.randint(1, 2)} ")
    time.sleep(random.choice([0, random.uniform(0, 0.2)]))
    os.kill(running(ms, "ps", index=random.randint(0, 1)), signal.SIGKILL)
    code, out = t.finish(timeout=300)
    assert code == 0, out
    assert epoch_lines(out)[-1]["epoch"] == 4, out
    log = (ms / "logs" / "coordinator.log").read_text()
    assert "relaunched parameter server" in log and "rolled back to the checkpoint" in log, log
    # The relaunched server read back only its own rows of each table.
    assert re.search(r"ps \d: embedding table \S+ .*part \d of 2, \d+ rows from .*rows-b000",
                     "".join(p.read_text() for p in (ms / "logs").glob("*.log"))), \
        [p.name for p in (ms / "logs").iterdir()]
    assert auc(ms) > least_auc


@pytest.fixture(scope="module")
def normalized_ids_in_two_files(normalized_ids, tmp_path_factory):
    """normalized_ids normalized again into two files: one for each of two workers."""
    ms = copy(normalized_ids, tmp_path_factory.mktemp("two-files") / "ms")
    run("norm", "-Dtarn.norm.shards=2", cwd=ms)
    assert len(list((ms / "tmp" / "NormalizedData").glob("part-*"))) == 2
    return ms


@pytest.mark.parametrize("family", ["WDL", "KerasBN"])
def test_two_workers_in_sync_are_deterministic_and_reach_local_auc(
        normalized_ids_in_two_files, tmp_path, family):
    """Two workers in sync mode: each table step averages both workers' rows, as the dense
    step averages their gradients, and batch norm's moving statistics are the mean of the
    workers' moved ones. Two runs give the same model; its AUC is within 0.005 of LOCAL's
    with the same effective batch (twice the rows, so as many steps)."""
    local = graph_model_set(normalized_ids_in_two_files, tmp_path / "LOCAL", family, 3)
    _algorithm, extra = GRAPH_FAMILIES[family]
    edit_config(local, **{"train.params": dict(GRAPH_NN, **extra,
                                               MiniBatchs=2 * GRAPH_NN["MiniBatchs"])})
    run("train", cwd=local)
    two_workers = ("-Dshifu.ps.instances=2", "-Dshifu.worker.instances=2",
                   "-Dshifu.worker.instances.backup=0", "-Dtarn.train.consistency=sync")
    outs = []
    for name in ("first", "second"):
        ms = graph_model_set(normalized_ids_in_two_files, tmp_path / name, family, 3)
        edit_config(ms, **{"basic.runMode": "DIST"})
        outs.append(run("train", *two_workers, cwd=ms).stdout)
    printed = [[{k: e[k] for k in EPOCH_FIGURES} for e in epoch_lines(out)] for out in outs]
    assert [e["epoch"] for e in printed[0]] == [1, 2, 3] and printed[0] == printed[1], outs
    models = [tmp_path / name / "models" / "model0.tarn" for name in ("first", "second")]
    assert model_file_params(models[0]) == model_file_params(models[1])
    header = model_file_header(models[0])
    assert header["training"]["workers"] == 2, header["training"]
    if family == "KerasBN":  # the servers kept the workers' moves of the moving statistics
        mean, variance = moving_statistics(models[0])
        assert all(m != 0 for m in mean) and all(v != 1 and v > 0 for v in variance)
    aucs = {"LOCAL": auc(local), "DIST": auc(tmp_path / "first")}
    assert aucs["DIST"] > 0.8 and abs(aucs["DIST"] - aucs["LOCAL"]) <= 0.005, aucs


def moving_statistics(model):
    """A graph model's one batch norm's moving mean and variance (the parameters' last floats),
    its width from the graph: the units of the dense node it normalizes (through dropout)."""
    nodes = {n["name"]: n for n in model_file_header(model)["graph"]["nodes"]}
    bn = [n for n in nodes.values() if n["op"] == "batch_norm"]
    assert len(bn) == 1, bn
    below = nodes[bn[0]["inputs"][0]]
    while "units" not in below:
        below = nodes[below["inputs"][0]]
    width = below["units"]
    state = struct.unpack(f"<{2 * width}f", model_file_params(model)[-8 * width:])
    return state[:width], state[width:]


def test_two_workers_async_move_batch_norm_and_tables_on_arrival(
        normalized_ids_in_two_files, tmp_path):
    """async: each worker's table push is its own step and its batch norm move since its last
    answer is added on arrival. Not deterministic: the model must be usable, its moving
    statistics moved off their start (mean 0, variance 1)."""
    ms = graph_model_set(normalized_ids_in_two_files, tmp_path / "async", "KerasBN", 3)
    edit_config(ms, **{"basic.runMode": "DIST"})
    run("train", "-Dshifu.ps.instances=2", "-Dshifu.worker.instances=2",
        "-Dshifu.worker.instances.backup=0", "-Dtarn.train.consistency=async", cwd=ms)
    mean, variance = moving_statistics(ms / "models" / "model0.tarn")
    assert all(m != 0 for m in mean) and all(v != 1 and v > 0 for v in variance), (mean, variance)
    assert auc(ms) > 0.8


@pytest.mark.parametrize("family", ["DeepFM", "KerasBN"])
def test_graph_model_resumes_from_its_table_shares_bit_identically(
        normalized_ids, tmp_path, family):
    """A killed coordinator, then isContinuous: every server reloads its share of each table
    (rows, per-row Adam state, step count) and its dense slice (with batch norm's moving
    statistics) from the newest manifest, and with one worker in sync mode the model is the
    undisturbed run's, byte for byte."""
    straight = graph_model_set(normalized_ids, tmp_path / "straight", family, 4)
    part = graph_model_set(normalized_ids, tmp_path / "part", family, 4)
    for ms in (straight, part):
        edit_config(ms, **{"basic.runMode": "DIST"})
    one_worker = (*ONE_OF_EACH, "-Dshifu.ps.instances=2")
    run("train", *one_worker, cwd=straight)
    t = Training(part, *one_worker, "-Dtarn.net.test-delay-ms=1")
    t.wait_for(r"^Epoch #2 ")
    os.kill(cluster(part)["coordinator"]["pid"], signal.SIGKILL)
    code, out = t.finish()
    assert code != 0, out
    edit_config(part, **{"train.isContinuous": True})
    proc = run("train", *one_worker, cwd=part)
    done = int(re.search(r"resuming bag 0 after epoch (\d+)", proc.stdout + proc.stderr).group(1))
    assert [e["epoch"] for e in epoch_lines(proc.stdout)] == list(range(done + 1, 5))
    assert (part / "models/model0.tarn").read_bytes() == \
        (straight / "models/model0.tarn").read_bytes()


@pytest.mark.parametrize("case", ["last epoch", "early stop", "graph model", "two bags"])
def test_coordinator_lost_before_the_model_is_written_resumes_to_write_it(
        request, tmp_path, case):
    """The coordinator dies right after bag 0's last checkpoint is committed, before its model
    file is written (tarn.train.test-crash-before-model, a test-only fault point). Resumed with
    isContinuous, the finished bag trains nothing again: its model is written from that
    checkpoint (early stopping: from the best epoch's parameters the checkpoint names; a graph
    model: its tables from the servers' shares) and is the uninterrupted run's, byte for byte,
    with its serving export and every epoch in the history once; a second bag then trains."""
    if case == "graph model":
        ids = request.getfixturevalue("normalized_ids")
        sets = [graph_model_set(ids, tmp_path / name, "DeepFM", 3) for name in ("straight", "part")]
    else:
        ms = request.getfixturevalue("prepared")["ms"]
        sets = [copy(ms, tmp_path / name) for name in ("straight", "part")]
    settings = [*ONE_OF_EACH, "-Dshifu.ps.instances=2", "-Dtarn.serving.exportDir=serving"]
    bags = 2 if case == "two bags" else 1
    if case == "early stop":
        # A learning rate at which the validation error turns back up: the best epoch is
        # not the last, and the model holds the best one's parameters.
        settings.append("-Dtarn.train.early-stop-patience=2")
        for ms in sets:
            edit_config(ms, **{"train.params": dict(PARAMS, LearningRate=EARLY_STOP_RATE)})
    straight, part = sets
    for ms in sets:
        edit_config(ms, **{"basic.runMode": "DIST", "train.baggingNum": bags,
                           "train.numTrainEpochs": 3})
    run("train", *settings, cwd=straight)

    lost = run("train", *settings, "-Dtarn.train.test-crash-before-model=0", cwd=part,
               check=False)
    assert lost.returncode != 0, lost.stdout + lost.stderr
    checkpoints = part / "tmp" / "modelsTmp" / "dist"
    final = json.loads(sorted(checkpoints.glob("manifest-*"))[-1].read_text())
    assert final["bag"] == 0 and final["state"]["final"] is True, final
    assert "outputsWritten" not in final["state"], final
    assert not (part / "models").exists() or not list((part / "models").iterdir())
    assert not (part / "serving").exists()

    edit_config(part, **{"train.isContinuous": True})
    resumed = run("train", *settings, cwd=part)
    log = resumed.stdout + resumed.stderr
    assert "bag 0 trained its last epoch" in log and "but its model was not written" in log, log
    assert [e["bag"] for e in epoch_lines(resumed.stdout)] == [1] * (3 if bags == 2 else 0), \
        resumed.stdout
    for bag in range(bags):
        name = f"model{bag}.tarn"
        assert (part / "models" / name).read_bytes() == (straight / "models" / name).read_bytes()
    versions = sorted(p.name for p in (straight / "serving").iterdir())
    assert versions == [str(v + 1) for v in range(bags)]
    assert sorted(p.name for p in (part / "serving").iterdir()) == versions
    for v in versions:
        assert (part / "serving" / v / "READY").exists()
        for f in (straight / "serving" / v).glob("*.tarn"):
            assert (part / "serving" / v / f.name).read_bytes() == f.read_bytes(), (v, f.name)
    history = json.loads((part / "tmp" / "dist" / "history.json").read_text())
    reference = json.loads((straight / "tmp" / "dist" / "history.json").read_text())
    figures = [[(h["bag"], h["epoch"], h["trainError"]) for h in hs] for hs in (history, reference)]
    assert figures[0] == figures[1]
    final = json.loads(sorted(checkpoints.glob("manifest-*"))[-1].read_text())
    assert final["bag"] == bags - 1 and final["state"]["outputsWritten"] is True, final
    if case == "early stop":
        epochs = len(reference)
        assert final["best"]["epoch"] < epochs, (final, epochs)
        header = model_file_header(part / "models" / "model0.tarn")
        assert header["training"]["epochs"] == epochs
        assert len(list(checkpoints.glob("best-*"))) <= 2

    # Once written, a resume leaves the finished bags alone.
    again = run("train", *settings, cwd=part)
    assert "but its model was not written" not in again.stdout + again.stderr
    assert epoch_lines(again.stdout) == []
    assert (part / "models" / "model0.tarn").read_bytes() == \
        (straight / "models" / "model0.tarn").read_bytes()
