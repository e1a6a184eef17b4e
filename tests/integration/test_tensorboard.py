"""tarn train's TensorBoard event files, read back with TensorBoard's own reader (PyPI)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import edit_config, epoch_lines, make_income_model_set, run, tarn_bin

PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [20], "ActivationFunc": ["tanh"],
          "LearningRate": 0.002, "MiniBatchs": 128, "Propagation": "Adam"}
EPOCHS = 3
TAGS = {"loss/train", "loss/valid", "auc/valid", "throughput/samples_per_sec"}

# Runs in the Python that has tensorboard: every run folder's scalars as JSON.
READER = r'''
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
out = {}
for run in sys.argv[2:]:
    acc = EventAccumulator(run, size_guidance={"scalars": 0})
    acc.Reload()
    out[run] = {tag: [[e.step, e.value] for e in acc.Scalars(tag)]
                for tag in acc.Tags()["scalars"]}
json.dump(out, open(sys.argv[1], "w"))
'''


def _venv_dir():
    """A venv beside the tarn binary's build folder, else under ~/.cache."""
    build = Path(tarn_bin()).resolve().parent.parent
    if os.access(build, os.W_OK):
        return build / "tensorboard-venv"
    return Path.home() / ".cache" / "tarn" / "tensorboard-venv"


def _has_tensorboard(python):
    try:
        probe = subprocess.run(
            [str(python), "-c",
             "from tensorboard.backend.event_processing.event_accumulator import "
             "EventAccumulator"], capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError):
        return False
    return probe.returncode == 0


@pytest.fixture(scope="session")
def tb_python():
    """A Python with tensorboard: this one, or a venv made on first use."""
    if _has_tensorboard(sys.executable):
        return sys.executable
    venv = _venv_dir()
    python = venv / "bin" / "python"
    if not _has_tensorboard(python):
        try:
            if not python.exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                               capture_output=True, text=True, timeout=300)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "--retries", "2",
                            "--timeout", "30", "tensorboard"],
                           check=True, capture_output=True, text=True, timeout=900)
        except (subprocess.SubprocessError, OSError) as e:
            detail = getattr(e, "stderr", "") or ""
            pytest.skip(f"tensorboard is not available (pip install into {venv} failed: {e}"
                        f"{' ' + detail[-300:] if detail else ''})")
        if not _has_tensorboard(python):
            pytest.skip(f"tensorboard is not importable from {python}")
    return str(python)


def read_scalars(tb_python, runs, tmp_path):
    script, out = tmp_path / "tb_read.py", tmp_path / "tb_scalars.json"
    script.write_text(READER)
    proc = subprocess.run([tb_python, str(script), str(out), *map(str, runs)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return {Path(k): v for k, v in json.loads(out.read_text()).items()}


def printed_epochs(stdout):
    """{(bag, epoch): (training loss, valid loss)} from tarn train's epoch lines."""
    return {(e["bag"], e["epoch"]): (e["train_loss"], e["valid_loss"]) for e in epoch_lines(stdout)}


def check_run(scalars, printed, bag):
    assert set(scalars) == TAGS, scalars.keys()
    for tag, points in scalars.items():
        assert [step for step, _ in points] == list(range(1, EPOCHS + 1)), (tag, points)
    for step, value in scalars["loss/train"]:
        assert value == pytest.approx(printed[(bag, step)][0], rel=1e-5, abs=1e-6)
    for step, value in scalars["loss/valid"]:
        assert value == pytest.approx(printed[(bag, step)][1], rel=1e-5, abs=1e-6)
    assert all(0.6 < v <= 1.0 for _, v in scalars["auc/valid"]), scalars["auc/valid"]
    assert all(v > 0 for _, v in scalars["throughput/samples_per_sec"])


def test_train_writes_tensorboard_scalars_per_epoch(tmp_path, tb_python):
    ms = make_income_model_set(tmp_path)
    edit_config(ms, **{"train.algorithm": "NN", "train.params": PARAMS,
                       "train.numTrainEpochs": EPOCHS, "varSelect.filterNum": 20})
    for step in ("init", "stats", "norm", "varsel"):
        run(step, cwd=ms)
    tb = ms / "tmp" / "tensorboard"

    # One bag: one event file directly under tmp/tensorboard.
    out = run("train", cwd=ms).stdout
    printed = printed_epochs(out)
    assert len(printed) == EPOCHS, out
    files = sorted(p.name for p in tb.iterdir())
    assert len(files) == 1 and files[0].startswith("events.out.tfevents."), files
    check_run(read_scalars(tb_python, [tb], tmp_path)[tb], printed, 0)

    # Two bags: a folder each; a fresh (not continuous) run replaces the old logs.
    edit_config(ms, **{"train.baggingNum": 2})
    out = run("train", cwd=ms).stdout
    printed = printed_epochs(out)
    assert len(printed) == 2 * EPOCHS, out
    assert sorted(p.name for p in tb.iterdir()) == ["bag0", "bag1"]
    runs = [tb / "bag0", tb / "bag1"]
    scalars = read_scalars(tb_python, runs, tmp_path)
    for bag, folder in enumerate(runs):
        check_run(scalars[folder], printed, bag)
    assert scalars[runs[0]]["loss/train"] != scalars[runs[1]]["loss/train"]


def test_tensorboard_setting_false_writes_nothing(tmp_path):
    ms = make_income_model_set(tmp_path)
    edit_config(ms, **{"train.algorithm": "NN", "train.params": PARAMS,
                       "train.numTrainEpochs": 1, "varSelect.filterNum": 20})
    for step in ("init", "stats", "norm", "varsel"):
        run(step, cwd=ms)
    run("train", "-Dtarn.train.tensorboard=false", cwd=ms)
    assert (ms / "models" / "model0.tarn").exists()
    assert not (ms / "tmp" / "tensorboard").exists()
