"""shifu-tensorflow model sets through tarn train: the rule that decides whether the model
set's Python script or tarn's native engine trains (printed on every run), the script run as
shifu-tensorflow runs it (parameter servers, workers and a backup, its environment, Shifu's
normalized text layout), and Shifu's own stock scripts on today's TensorFlow.

Shifu's scripts are not in tarn's tree: the tests that run them read them from a Shifu
checkout named by SHIFU_SOURCE (the folder holding src/main/python/, e.g. a clone of
ShifuML/shifu at its `release` branch) and skip without it."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, edit_config, make_income_model_set, python_with, run

EXAMPLE_SCRIPT = ROOT / "examples" / "shifu-tensorflow" / "distributed_tf_keras.py"
PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [16], "ActivationFunc": ["tanh"],
          "LearningRate": 0.01, "Propagation": "Adam", "MiniBatchs": 256}
ROLES = ("-Dshifu.ps.instances=1", "-Dshifu.worker.instances.backup=1")

# What tests/integration runs the saved model with: the rows of a normalized part, scored by
# the SavedModel's serving signature; prints the row count, the AUC and the graph's op names.
SCORE = r"""
import gzip, json, sys
import numpy as np
import tensorflow as tf
model_dir, part, columns, target = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
rows = [l.rstrip("\n").split("|") for l in gzip.open(part, "rt")]
x = np.array([[float(r[c] or 0) for c in columns] for r in rows], dtype=np.float32)
y = np.array([int(float(r[target])) for r in rows])
loaded = tf.saved_model.load(model_dir, tags=["train", "serve"])
fn = loaded.signatures["serving_default"]
score = fn(shifu_input_0=tf.constant(x))["shifu_output_0"].numpy().ravel()
order = np.argsort(score)
ranks = np.empty(len(score)); ranks[order] = np.arange(1, len(score) + 1)
pos = y == 1
auc = (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())
ops = sorted({op.name.split("/")[0] for op in fn.graph.get_operations()})
print(json.dumps({"rows": len(score), "auc": float(auc), "ops": ops,
                  "distinct": len(np.unique(score)),
                  "in_range": bool(((score >= 0) & (score <= 1)).all())}))
"""


@pytest.fixture(scope="module")
def normalized(tmp_path_factory):
    """Adult, train.algorithm TensorFlow in runMode DIST, normalized into two shards (two
    workers), its columns selected."""
    base = tmp_path_factory.mktemp("stf")
    ms = make_income_model_set(base, "income")
    edit_config(ms, **{"train.algorithm": "TensorFlow", "train.params": PARAMS,
                       "train.numTrainEpochs": 2, "basic.runMode": "DIST"})
    run("init", cwd=ms)
    run("stats", cwd=ms)
    run("norm", "-shuffle", "-Dshifu.norm.shuffle.size=2", cwd=ms)
    run("varsel", cwd=ms)
    return ms


def model_set(normalized, tmp_path, name):
    ms = tmp_path / name
    shutil.copytree(normalized, ms)
    return ms


def tf2_python():
    """TensorFlow 2 with Keras 2 (tf-keras): the example script's graph-mode Keras."""
    return python_with(["tensorflow", "tf_keras"], ["tensorflow-cpu", "tf_keras"], "keras-venv")


def shifu_script(name):
    """Shifu's stock `name` from the checkout SHIFU_SOURCE names; skips without one."""
    source = os.environ.get("SHIFU_SOURCE")
    if not source:
        pytest.skip("SHIFU_SOURCE is not set: it names a Shifu checkout (ShifuML/shifu, "
                    "branch release) whose src/main/python/ holds Shifu's stock scripts")
    path = Path(source) / "src" / "main" / "python" / name
    if not path.exists():
        pytest.skip(f"{path} does not exist in SHIFU_SOURCE")
    return path


def selected_columns(ms):
    cols = json.loads((ms / "ColumnConfig.json").read_text())
    chosen = [c["columnNum"] for c in cols if c.get("finalSelect")]
    target = next(c["columnNum"] for c in cols if c["columnFlag"] == "Target")
    return chosen, target


def score(python, ms, part):
    chosen, target = selected_columns(ms)
    proc = subprocess.run([python, "-c", SCORE, str(ms / "models"), str(part), json.dumps(chosen),
                           str(target)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def status_of(ms):
    return json.loads((ms / "tmp" / "shifu-tensorflow" / "run" / "status.json").read_text())


def test_edited_model_trains_with_ps_workers_and_a_backup(normalized, tmp_path):
    python = tf2_python()
    ms = model_set(normalized, tmp_path, "edited")
    # The user's edit: one more hidden layer in model(shifu_context).
    text = EXAMPLE_SCRIPT.read_text()
    anchor = '    output = keras.layers.Dense(1, activation="sigmoid", name="shifu_output_0")(layer)'
    assert anchor in text
    edited = text.replace(anchor, '    layer = keras.layers.Dense(8, activation="relu", '
                                  'name="extra_hidden")(layer)\n' + anchor)
    # And worker 1 dies the first time it starts, so that the backup takes over its task.
    crash = ('def main():\n'
             '    marker = os.path.join(os.path.dirname(os.environ["TRAIN_SCRIPT_PATH"]), "died")\n'
             '    if os.environ["JOB_NAME"] == "worker" and os.environ["TASK_ID"] == "1" and \\\n'
             '            not os.path.exists(marker):\n'
             '        open(marker, "w").close()\n'
             '        sys.exit(3)\n')
    assert edited.count("def main():\n") == 1
    edited = edited.replace("def main():\n", crash)
    (ms / "distributed_tf_keras.py").write_text(edited)

    proc = run("train", f"-Dtarn.train.script.python={python}", *ROLES, cwd=ms)
    err = proc.stderr
    assert (f"train: {ms}/distributed_tf_keras.py: running this script (differs from every "
            "Shifu stock copy") in err, err
    assert "1 parameter server(s), 2 worker(s), 1 backup(s) on 2 data file(s)" in err, err
    assert "written from tarn's shards" in err
    assert "shifu-tensorflow: worker 0 epoch 1: training loss" in err, err
    assert "train: the chief exited 0" in err

    # The roles as the runner ran them: one ps, workers 0 and 1, one backup.
    status = status_of(ms)
    comps = {c["name"]: c for c in status["components"]}
    assert comps["ps"]["number_of_containers"] == 1
    assert comps["worker"]["number_of_containers"] == 2 and comps["worker"]["backups"] == 1
    workers = comps["worker"]["containers"]
    chief = next(c for c in workers if c["component_instance_name"] == "worker-0")
    assert chief["exit_code"] == 0
    # worker-1 died (exit 3); the backup took over its task index.
    dead = next(c for c in workers if c["component_instance_name"] == "worker-1")
    assert dead["exit_code"] == 3 and dead["state"] == "FAILED"
    takeover = next(c for c in workers if c.get("replaced") == "worker-1")
    assert takeover["tf_task"]["index"] == 1
    assert f"train: {takeover['component_instance_name']} took over worker-1's task" in err
    assert (ms / "died").exists()
    # Each worker read its own file: TRAINING_DATA_PATH in the task's log.
    data_lists = ms / "tmp" / "shifu-tensorflow" / "worker-data"
    assert (data_lists / "worker-0.data").read_text().endswith("part-00000.gz")
    assert (data_lists / "worker-1.data").read_text().endswith("part-00001.gz")

    # The output is the model the script wrote: a SavedModel with the extra layer, scoring.
    assert (ms / "models" / "saved_model.pb").exists()
    generic = json.loads((ms / "models" / "GenericModelConfig.json").read_text())
    assert generic["properties"]["algorithm"] == "tensorflow"
    assert not list((ms / "models").glob("*.tarn"))
    result = score(python, ms, ms / "tmp" / "shifu-tensorflow" / "NormalizedData" /
                   "part-00001.gz")
    assert "extra_hidden" in result["ops"] and "hidden_layer_1" in result["ops"]
    assert result["in_range"]
    assert result["rows"] > 10000
    assert result["auc"] > 0.8, result


def test_stock_copy_trains_natively_and_run_refuses_python2_clearly(normalized, tmp_path):
    stock = shifu_script("distributed_tf_keras.py")
    ms = model_set(normalized, tmp_path, "stock")
    shutil.copy(stock, ms / "distributed_tf_keras.py")
    # Byte-identical to Shifu's stock copy: tarn's native engine, said with the commit.
    proc = run("train", *ROLES, cwd=ms)
    assert (f"train: {ms}/distributed_tf_keras.py: tarn's native engine trains instead "
            "(byte-identical to Shifu's stock distributed_tf_keras.py (ShifuML/shifu ") in proc.stderr
    assert (ms / "models" / "model0.tarn").exists()

    # Forced to run it: refused before any role starts, naming the Python 2 module, its line
    # and the Python and TensorFlow found.
    python = tf2_python()
    proc = run("train", "-Dtarn.train.script=run", f"-Dtarn.train.script.python={python}",
               *ROLES, cwd=ms, check=False)
    assert proc.returncode != 0
    err = proc.stderr
    assert "running this script (byte-identical to Shifu's stock" in err
    assert f"distributed_tf_keras.py cannot run on tarn.train.script.python '{python}' is Python 3." in err, err
    assert ": StringIO: a Python 2 module" in err
    assert "tf.estimator: removed in TensorFlow 2.16" in err
    assert "sys.maxint" in err
    assert not (ms / "tmp" / "shifu-tensorflow" / "run").exists()

    # TF_Type tensor (the docs' spelling) names distributed_tf_tensor.py: tf.contrib too.
    shutil.copy(shifu_script("distributed_tf_tensor.py"), ms / "distributed_tf_tensor.py")
    edit_config(ms, **{"train.params": {**PARAMS, "TF_Type": "Tensor"}})
    proc = run("train", "-Dtarn.train.script=run", f"-Dtarn.train.script.python={python}",
               *ROLES, cwd=ms, check=False)
    assert proc.returncode != 0
    assert f"train: {ms}/distributed_tf_tensor.py: running this script" in proc.stderr
    assert "tf.contrib: removed in TensorFlow 2.0" in proc.stderr, proc.stderr


def test_stock_tf20_keras_refused_on_new_tensorflow_and_runs_on_2_15(normalized, tmp_path):
    stock = shifu_script("distributed_tf20_keras.py")
    ms = model_set(normalized, tmp_path, "tf20")
    edit_config(ms, **{"train.params": {**PARAMS, "TF.version": "2.0"}})
    shutil.copy(stock, ms / "distributed_tf20_keras.py")
    # On TensorFlow >= 2.16 its module-level tf.estimator use cannot import: said up front.
    new_tf = tf2_python()
    proc = run("train", "-Dtarn.train.script=run", f"-Dtarn.train.script.python={new_tf}",
               *ROLES, cwd=ms, check=False)
    assert proc.returncode != 0
    assert "tf.estimator: removed in TensorFlow 2.16" in proc.stderr, proc.stderr

    # TensorFlow 2.15 with tensorflow-estimator runs Shifu's own script as shifu-tensorflow
    # does; its output is the SavedModel it writes.
    python = python_with(["tensorflow", "tensorflow_estimator"],
                         ["tensorflow-cpu==2.15.1", "tensorflow-estimator==2.15.0"], "tf215-venv")
    proc = run("train", "-Dtarn.train.script=run", f"-Dtarn.train.script.python={python}",
               *ROLES, cwd=ms, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Python 3.11" in proc.stderr or "Python 3." in proc.stderr
    assert "TensorFlow 2.15.1" in proc.stderr
    assert (ms / "models" / "saved_model.pb").exists()
    generic = json.loads((ms / "models" / "GenericModelConfig.json").read_text())
    assert generic["inputnames"] == ["shifu_input_0:0"]
    result = score(python, ms, ms / "tmp" / "shifu-tensorflow" / "NormalizedData" /
                   "part-00000.gz")
    # Loads and scores every row. Not a quality bar: Shifu's script takes one synchronous
    # step per epoch (SyncReplicasOptimizer aggregates an epoch's batches), two in all here.
    assert "hidden_layer_1" in result["ops"] and result["in_range"]
    assert result["rows"] > 10000 and result["distinct"] > 100, result
