"""The command line every command shares: -D settings that tarn does not know are warned
about with the nearest name, -q is quiet everywhere, usage and config errors exit 2 and
runtime failures 1, and out-of-range config values name the file."""
import pytest

from conftest import edit_config, good_rows, run, small_model_set


def trained_ready(tmp_path, **config):
    """A small model set through varsel, ready to train."""
    ms = small_model_set(tmp_path, good_rows(300))
    edit_config(ms, **{"train.numTrainEpochs": 3, **config})
    for step in ("init", "stats", "norm", "varsel"):
        run(step, cwd=ms)
    return ms


def test_unknown_d_setting_is_warned_with_the_nearest_name(tmp_path):
    ms = small_model_set(tmp_path, good_rows(50))
    # A ModelConfig.json key given with -D: it does nothing, and the warning says where it goes.
    proc = run("init", "-Dbasic.runMode=DIST", cwd=ms)
    assert "-Dbasic.runMode is not a tarn setting and is ignored" in proc.stderr
    assert 'basic.runMode is a ModelConfig.json key: set "runMode" in its "basic" section' \
        in proc.stderr
    # A typo of a setting.
    proc = run("init", "-Dshifu.ps.memroy=1g", cwd=ms)
    assert "did you mean -Dshifu.ps.memory?" in proc.stderr
    # A typo of a ModelConfig.json key.
    proc = run("init", "-Dtrain.numTrainEpoch=3", cwd=ms)
    assert "did you mean ModelConfig.json's train.numTrainEpochs" in proc.stderr
    # Declared settings and Hadoop's own keys are quiet.
    proc = run("init", "-Dtarn.threads=1", "-Dfs.defaultFS=hdfs://localhost:9", cwd=ms)
    assert "is not a tarn setting" not in proc.stderr


@pytest.mark.parametrize("mode", ["mapred", "MapReD"])
def test_run_mode_mapred_says_what_tarn_does_instead(tmp_path, mode):
    ms = small_model_set(tmp_path, good_rows(50))
    edit_config(ms, **{"basic.runMode": mode})
    proc = run("init", cwd=ms)
    assert f"basic.runMode {mode} is Shifu's MapReduce mode; tarn runs each step in this " \
        "process instead" in proc.stderr
    assert "runMode DIST" in proc.stderr
    edit_config(ms, **{"basic.runMode": "yarn"})
    proc = run("init", cwd=ms, check=False)
    assert proc.returncode == 2
    assert str(ms / "ModelConfig.json") + ": basic.runMode must be LOCAL, DIST or MAPRED" \
        in proc.stderr


def test_quiet_silences_every_step_and_the_epochs(tmp_path):
    ms = small_model_set(tmp_path, good_rows(300))
    data = tmp_path / "bad-data"
    edit_config(ms, **{"train.numTrainEpochs": 3, "evals.0.dataSet.dataPath": str(data),
                       "evals.0.dataSet.headerPath": str(data / ".pig_header"),
                       "evals.0.dataSet.targetColumnName": "label",
                       "evals.0.dataSet.posTags": ["1"], "evals.0.dataSet.negTags": ["0"]})
    for step in (["init"], ["stats"], ["norm"], ["varsel"], ["train"], ["eval"],
                 ["export", "-t", "columnstats"]):
        proc = run(*step, "-q", cwd=ms)
        assert proc.stdout == "" and proc.stderr == "", (step, proc.stdout, proc.stderr)
    # Without -q, train prints every epoch; -q keeps what a command is asked to print.
    assert run("train", cwd=ms).stdout.count("Epoch ") == 3
    assert "selected columns" in run("varsel", "-list", "-q", cwd=ms).stdout
    assert "tarn.threads" in run("settings", "-q").stdout


def test_quiet_distributed_training_prints_no_epochs(tmp_path):
    ms = trained_ready(tmp_path, **{"basic.runMode": "DIST"})
    loud = run("train", "-Dshifu.worker.instances.backup=0", cwd=ms)
    assert loud.stdout.count("Epoch ") == 3, loud.stdout
    quiet = run("train", "-q", "-Dshifu.worker.instances.backup=0", cwd=ms)
    assert "Epoch" not in quiet.stdout + quiet.stderr
    assert "Epoch #3 " in (ms / "logs" / "coordinator.log").read_text()  # the log keeps them


def test_usage_and_config_errors_exit_2_runtime_failures_1(tmp_path):
    ms = small_model_set(tmp_path, good_rows(50))
    usage = [run("stats", "--bogus", cwd=ms, check=False),
             run("frobnicate", check=False),
             run("serve", "--bogus", check=False),
             run("yarn", "bogus", check=False),
             run("node", "--bogus", check=False),
             run("init", "-Dtarn.threads=two", cwd=ms, check=False),
             run("init", cwd=tmp_path, check=False),  # not in a model set folder
             run("init", "-m", tmp_path / "nowhere", check=False)]
    assert [p.returncode for p in usage] == [2] * len(usage), [p.stderr for p in usage]
    assert "'tarn stats' has no option --bogus" in usage[0].stderr
    # Runtime failures: a step before the one it needs, a data path that is not there.
    assert run("stats", cwd=ms, check=False).returncode == 1
    edit_config(ms, **{"dataSet.dataPath": str(tmp_path / "nowhere")})
    assert run("init", cwd=ms, check=False).returncode == 1


@pytest.mark.parametrize("key,value,message", [
    ("train.numTrainEpochs", 0, "train.numTrainEpochs must be at least 1, got 0"),
    ("train.baggingNum", 0, "train.baggingNum must be at least 1, got 0"),
    ("train.validSetRate", 1.5, "train.validSetRate must be between 0 and 1"),
    ("train.params.LearningRate", -1, "train.params.LearningRate must be"),
    ("train.params.NumHiddenNodes", [0], "train.params.NumHiddenNodes"),
    ("train.params.MiniBatchs", "many",
     'train.params.MiniBatchs must be a positive integer, got "many"'),
    ("train.params.CheckpointInterval", -1,
     "train.params.CheckpointInterval must be a non-negative integer, got -1"),
])
@pytest.mark.parametrize("run_mode", ["LOCAL", "DIST"])
def test_out_of_range_config_values_name_the_file(tmp_path, key, value, message, run_mode):
    ms = trained_ready(tmp_path)
    edit_config(ms, **{key: value, "basic.runMode": run_mode})
    proc = run("train", cwd=ms, check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"{ms / 'ModelConfig.json'}: {message}" in proc.stderr, proc.stderr
