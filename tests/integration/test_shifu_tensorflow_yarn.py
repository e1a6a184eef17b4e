"""shifu-tensorflow scripts through `tarn train --yarn` on the mini HDFS + YARN
(tests/yarn/cluster): the roles run in YARN containers under tarn's assembly
ApplicationMaster, the script, ModelConfig.json, ColumnConfig.json and each worker's data
files reach them through HDFS, and the model the chief writes comes back into models/.

The containers run on this machine, so the venv of test_shifu_tensorflow.py (an absolute
path) is the Python they run, and a marker file outside the containers lets the script kill
worker 1 once only."""
import json
import re
import shutil

import pytest

from conftest import edit_config, make_income_model_set, run
from test_shifu_tensorflow import EXAMPLE_SCRIPT, PARAMS, score, tf2_python
from yarn_cluster import yarn_cluster  # noqa: F401  (the fixture)

# 1 parameter server, 2 workers (one per file), 1 backup, in small containers; the AM
# listens on loopback (its containers run on this machine).
YARN = ("--yarn", "-Dtarn.cluster.host=127.0.0.1", "-Dtarn.assembly.am-memory-mb=256",
        "-Dshifu.ps.instances=1", "-Dshifu.worker.instances.backup=1",
        "-Dshifu.ps.memory=256m", "-Dshifu.worker.memory=256m")
CHIEF_LINE = '    output = keras.layers.Dense(1, activation="sigmoid", name="shifu_output_0")(layer)'


@pytest.fixture(scope="module")
def normalized(tmp_path_factory, yarn_cluster):
    """Adult, train.algorithm TensorFlow in runMode DIST, normalized into two shards."""
    base = tmp_path_factory.mktemp("stf-yarn")
    ms = make_income_model_set(base, "income")
    edit_config(ms, **{"train.algorithm": "TensorFlow", "train.params": PARAMS,
                       "train.numTrainEpochs": 2, "basic.runMode": "DIST"})
    for step in (["init"], ["stats"], ["norm", "-shuffle", "-Dshifu.norm.shuffle.size=2"],
                 ["varsel"]):
        run(*step, cwd=ms)
    return ms


def train(ms, python, yarn_cluster, check=True):
    return run("train", f"-Dtarn.train.script.python={python}", *YARN, cwd=ms,
               env=yarn_cluster.env, check=check)


def test_edited_script_on_yarn_survives_a_killed_worker(normalized, tmp_path, yarn_cluster):
    python = tf2_python()
    ms = tmp_path / "edited"
    shutil.copytree(normalized, ms)
    killed, revived = tmp_path / "killed", tmp_path / "revived"
    text = EXAMPLE_SCRIPT.read_text()
    loop = "        while not sess.should_stop() and len(x):\n"
    done = '    logging.info("worker %d done after %d passes over its data", ctx["task_index"], epoch)\n'
    assert text.count(CHIEF_LINE) == 1 and text.count(loop) == 1 and text.count(done) == 1
    # The user's edit: one more hidden layer in model(shifu_context).
    edited = text.replace(CHIEF_LINE, '    layer = keras.layers.Dense(8, activation="relu", '
                                      'name="extra_hidden")(layer)\n' + CHIEF_LINE)
    # Worker 1 is killed (SIGKILL) once it has joined the training session, the first time
    # only; the task's second run (the backup) says it joined, and the chief exports the
    # model only after that (or fails after 5 minutes), so the takeover is part of the run.
    edited = edited.replace(loop, (
        "        if ctx['task_index'] == 1:\n"
        f"            if not os.path.exists({str(killed)!r}):\n"
        f"                open({str(killed)!r}, 'w').close()\n"
        "                import signal\n"
        "                os.kill(os.getpid(), signal.SIGKILL)\n"
        f"            open({str(revived)!r}, 'w').close()\n") + loop)
    edited = edited.replace(done, (
        "    waited = 0\n"
        f"    while ctx['is_chief'] and not os.path.exists({str(revived)!r}):\n"
        "        time.sleep(0.5)\n"
        "        waited += 1\n"
        "        if waited > 600:\n"
        "            sys.exit(7)\n") + done)
    (ms / "distributed_tf_keras.py").write_text(edited)

    proc = train(ms, python, yarn_cluster)
    err = proc.stderr
    # The same decision line as on this machine.
    assert (f"train: {ms}/distributed_tf_keras.py: running this script (differs from every "
            "Shifu stock copy") in err, err
    assert "1 parameter server(s), 2 worker(s), 1 backup(s) on 2 data file(s)" in err, err
    app = re.search(r"YARN application (application_\d+_\d+) runs the roles", err).group(1)
    assert "train: the chief exited 0; the script's model is in" in err, err
    assert killed.exists() and revived.exists()

    status = json.loads((ms / "tmp" / "shifu-tensorflow" / "run" / "status.json").read_text())
    assert status["application_id"] == app and status["backend"] == "yarn"
    comps = {c["name"]: c for c in status["components"]}
    assert comps["ps"]["number_of_containers"] == 1
    assert comps["worker"]["number_of_containers"] == 2 and comps["worker"]["backups"] == 1
    workers = comps["worker"]["containers"]
    chief = next(c for c in workers if c["component_instance_name"] == "worker-0")
    assert chief["exit_code"] == 0
    dead = next(c for c in workers if c["component_instance_name"] == "worker-1")
    assert dead["state"] == "FAILED" and dead["exit_code"] == 128 + 9, dead
    takeover = next(c for c in workers if c.get("replaced") == "worker-1")
    assert takeover["tf_task"]["index"] == 1
    assert f"train: {takeover['component_instance_name']} took over worker-1's task" in err
    # The backup read task 1's file, copied from HDFS into its container.
    container = takeover["log_dir"].rstrip("/").split("/")[-1]
    logs = run("yarn", "logs", app, "--container", container, env=yarn_cluster.env).stdout
    assert re.search(r"worker task 1 \(container \S+\): TRAINING_DATA_PATH \S+/data/"
                     r"part-00001\.gz \(from hdfs://\S+/data/part-00001\.gz\)", logs), logs[-3000:]
    chief_logs = run("yarn", "logs", app, "--container",
                     chief["log_dir"].rstrip("/").split("/")[-1], env=yarn_cluster.env).stdout
    assert "shifu-tensorflow: worker 0 epoch 1: training loss" in chief_logs, chief_logs[-3000:]

    # The model is the one the script wrote in its container: the extra layer, scoring.
    assert (ms / "models" / "saved_model.pb").exists()
    generic = json.loads((ms / "models" / "GenericModelConfig.json").read_text())
    assert generic["properties"]["algorithm"] == "tensorflow"
    result = score(python, ms, ms / "tmp" / "shifu-tensorflow" / "NormalizedData" /
                   "part-00001.gz")
    assert "extra_hidden" in result["ops"] and "hidden_layer_1" in result["ops"]
    assert result["in_range"] and result["rows"] > 10000
    assert result["auc"] > 0.8, result


def test_a_failing_chief_on_yarn_names_its_container_log(normalized, tmp_path, yarn_cluster):
    python = tf2_python()
    ms = tmp_path / "failing"
    shutil.copytree(normalized, ms)
    text = EXAMPLE_SCRIPT.read_text()
    edited = text.replace("def main():\n", "def main():\n"
                          "    if os.environ['JOB_NAME'] == 'worker' and "
                          "os.environ['TASK_ID'] == '0':\n"
                          "        sys.exit(5)\n", 1)
    (ms / "distributed_tf_keras.py").write_text(edited)
    proc = train(ms, python, yarn_cluster, check=False)
    assert proc.returncode != 0
    err = proc.stderr
    assert re.search(r"the chief \(worker 0\) ended FAILED with exit code 5 \(YARN application "
                     r"(application_\d+_\d+) FINISHED FAILED", err), err
    app = re.search(r"YARN application (application_\d+_\d+) runs the roles", err).group(1)
    assert re.search(rf"worker-0 \(worker\) exited 5, log: tarn yarn logs {app} --container "
                     r"container_\S+ \(\S+/stdout\)", err), err
    assert not (ms / "models" / "saved_model.pb").exists()
