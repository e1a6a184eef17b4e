"""train and eval end to end on the shipped Adult data."""
import json
import shutil

import pytest

from conftest import (INCOME_EVAL_SET, columns, edit_config, epoch_lines,
                      make_income_model_set, run)

SEED_PARAMS = {"NumHiddenLayers": 1, "NumHiddenNodes": [50], "ActivationFunc": ["tanh"],
               "LearningRate": 0.002, "MiniBatchs": 128, "RegularizedConstant": 0.01,
               "Propagation": "Adam"}


def prepared(tmp_path, name="income", epochs=10, **extra):
    ms = make_income_model_set(tmp_path, name)
    edit_config(ms, **{
        "train.algorithm": "TensorFlow", "train.params": dict(SEED_PARAMS, **extra),
        "train.numTrainEpochs": epochs, "varSelect.filterNum": 50,
        **INCOME_EVAL_SET})
    for step in ("init", "stats", "norm", "varsel"):
        run(step, cwd=ms)
    return ms


def test_seed_params_reach_auc_090_on_adult_eval_set(tmp_path):
    ms = prepared(tmp_path)
    out = run("train", cwd=ms).stdout
    epochs = epoch_lines(out)
    assert [e["epoch"] for e in epochs] == list(range(1, 11))
    assert all(e["valid_error"] is not None for e in epochs)
    assert (ms / "models" / "model0.tarn").exists()
    ev = run("eval", cwd=ms).stdout
    perf = json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())
    assert perf["exactAreaUnderRoc"] >= 0.90, ev
    score = (ms / "evals" / "Eval1" / "EvalScore").read_text().splitlines()
    assert score[0].startswith("Target|weight|mean|max|min|median|model0")
    assert len(score) == 16281 + 1
    means = [float(line.split("|")[2]) for line in score[1:]]  # input order, x scoreScale
    assert all(0 <= m <= 1000 for m in means) and len(set(means)) > 1000
    html = next((ms / "evals" / "Eval1").glob("*.html")).read_text()
    assert html.count("<svg") >= 3 and "http://" not in html.replace("http://www.w3.org", "")


def test_training_is_deterministic_and_resume_equals_uninterrupted(tmp_path):
    a = prepared(tmp_path, "a", epochs=4)
    run("train", cwd=a)
    b = prepared(tmp_path, "b", epochs=4)
    run("train", cwd=b)
    assert (a / "models/model0.tarn").read_bytes() == (b / "models/model0.tarn").read_bytes()
    c = prepared(tmp_path, "c", epochs=2)
    run("train", cwd=c)
    assert (c / "tmp/modelsTmp/model0-2.tarn").exists()
    edit_config(c, **{"train.numTrainEpochs": 4, "train.isContinuous": True})
    out = run("train", cwd=c)
    assert "resumes" in out.stderr and [e["epoch"] for e in epoch_lines(out.stdout)] == [3, 4]
    assert (c / "models/model0.tarn").read_bytes() == (a / "models/model0.tarn").read_bytes()


def test_corrupt_checkpoint_and_model_are_refused(tmp_path):
    ms = prepared(tmp_path, epochs=2)
    run("train", cwd=ms)
    ck = ms / "tmp/modelsTmp/model0-2.tarn"
    data = bytearray(ck.read_bytes())
    data[len(data) // 2] ^= 0xFF
    ck.write_bytes(bytes(data))
    edit_config(ms, **{"train.numTrainEpochs": 3, "train.isContinuous": True})
    proc = run("train", cwd=ms, check=False)
    assert proc.returncode != 0
    assert "model0-2.tarn" in proc.stderr and "checksum" in proc.stderr
    model = ms / "models/model0.tarn"
    model.write_bytes(model.read_bytes()[:100])
    proc = run("eval", cwd=ms, check=False)
    assert proc.returncode != 0 and "model0.tarn" in proc.stderr


def test_bad_train_params_name_the_key(tmp_path):
    ms = prepared(tmp_path, epochs=1, NumHiddenLayers=2)
    proc = run("train", cwd=ms, check=False)
    assert proc.returncode != 0 and "NumHiddenNodes" in proc.stderr
    edit_config(ms, **{"train.params": dict(SEED_PARAMS, Propagation="Z")})
    proc = run("train", cwd=ms, check=False)
    assert proc.returncode != 0 and "Propagation" in proc.stderr


def test_unknown_train_params_warn_and_shifus_own_keys_do_not(tmp_path):
    ms = prepared(tmp_path, epochs=1, LearnigRate=0.5, EnableEarlyStop=True, FixedLayers=[1],
                  **{"TF.optimizer": "Adam"})
    proc = run("train", cwd=ms)
    assert len(epoch_lines(proc.stdout)) == 1
    config = ms / "ModelConfig.json"
    warnings = [line for line in proc.stderr.splitlines() if "unknown key" in line]
    assert warnings == [f"warning: {config}: unknown key 'train.params.LearnigRate' is ignored; "
                        "did you mean LearningRate?"], proc.stderr
    # Shifu's keys are noted, not warned about: TF.optimizer is Shifu's TensorFlow's, the others
    # Shifu's NN's (this model set trains TensorFlow).
    assert f"{config}: train.params.TF.optimizer is read by Shifu's TensorFlow, not by tarn" \
        in proc.stderr, proc.stderr
    for key in ("EnableEarlyStop", "FixedLayers"):
        assert f"{config}: train.params.{key} is read by NN" in proc.stderr, proc.stderr


@pytest.mark.parametrize("propagation", ["B", "M", "Nesterov", "AdaGrad", "RMSProp", "R", "Q"])
def test_every_optimizer_trains(tmp_path, propagation):
    lr = {"B": 0.05, "M": 0.05, "Nesterov": 0.05, "AdaGrad": 0.05, "RMSProp": 0.002,
          "R": 0.1, "Q": 0.1}[propagation]
    epochs = 40 if propagation in ("R", "Q") else 3
    ms = prepared(tmp_path, epochs=epochs, Propagation=propagation, LearningRate=lr)
    run("train", cwd=ms)
    run("eval", cwd=ms)
    perf = json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())
    assert perf["exactAreaUnderRoc"] > 0.85, propagation


def test_bagging_and_lr(tmp_path):
    ms = prepared(tmp_path, epochs=2)
    edit_config(ms, **{"train.baggingNum": 3, "train.baggingSampleRate": 0.8,
                       "train.baggingWithReplacement": True})
    run("train", cwd=ms)
    assert len(list((ms / "models").glob("model*.tarn"))) == 3
    run("eval", cwd=ms)
    header = (ms / "evals/Eval1/EvalScore").read_text().splitlines()[0]
    assert header.endswith("model0|model1|model2")
    edit_config(ms, **{"train.algorithm": "LR", "train.baggingNum": 1})
    shutil.rmtree(ms / "models")
    run("train", cwd=ms)
    run("eval", cwd=ms)
    perf = json.loads((ms / "evals" / "Eval1" / "EvalPerformance.json").read_text())
    assert perf["exactAreaUnderRoc"] > 0.85


def bag_files(ms):
    """{relative path: bytes} of the models and checkpoints a run wrote."""
    return {str(p.relative_to(ms)): p.read_bytes()
            for d in ("models", "tmp/modelsTmp") for p in sorted((ms / d).glob("*.tarn"))}


def bag_epochs(stdout):
    """Each bag's epoch figures, timings left out: {(bag, epoch): (errors and losses)}."""
    return {(e["bag"], e["epoch"]): (e["train_error"], e["valid_error"], e["train_loss"],
                                     e["valid_loss"]) for e in epoch_lines(stdout)}


def test_bags_trained_in_parallel_equal_bags_one_after_another(tmp_path):
    # Three bags (sampled with replacement, validation, early stopping, a checkpoint an epoch)
    # on one thread and two at a time: the same model and checkpoint bytes, the same epochs.
    seq = prepared(tmp_path, "seq", epochs=4, CheckpointInterval=1)
    edit_config(seq, **{"train.baggingNum": 3, "train.baggingSampleRate": 0.8,
                        "train.baggingWithReplacement": True})
    par = tmp_path / "par"
    shutil.copytree(seq, par)
    part = tmp_path / "part"
    shutil.copytree(seq, part)
    stop = "-Dtarn.train.early-stop-patience=1"
    one = run("train", stop, "-Dtarn.threads=1", cwd=seq)
    assert "1 at a time, 1 thread each" in one.stderr, one.stderr
    two = run("train", stop, "-Dtarn.threads=2", "-Dtarn.train.parallel-bags=2", cwd=par)
    assert "3 x TensorFlow" in two.stderr and "2 bags at a time" in two.stderr, two.stderr
    assert "2 at a time, 1 thread each" in two.stderr
    assert sorted({b for b, _ in bag_epochs(two.stdout)}) == [0, 1, 2]
    assert bag_epochs(two.stdout) == bag_epochs(one.stdout)
    files = bag_files(seq)
    assert len([f for f in files if f.startswith("models/")]) == 3
    assert bag_files(par) == files

    # Resumed in parallel from the second epoch's checkpoints: the models of an uninterrupted
    # sequential run (without early stopping, whose best epoch a checkpoint does not keep).
    run("train", "-Dtarn.threads=1", cwd=seq)
    edit_config(part, **{"train.numTrainEpochs": 2})
    run("train", "-Dtarn.train.parallel-bags=2", cwd=part)
    edit_config(part, **{"train.numTrainEpochs": 4, "train.isContinuous": True})
    out = run("train", "-Dtarn.train.parallel-bags=2", cwd=part)
    assert out.stderr.count("resumes from") == 3
    for bag in range(3):
        name = f"models/model{bag}.tarn"
        assert (part / name).read_bytes() == (seq / name).read_bytes(), name

    bad = run("train", "-Dtarn.train.parallel-bags=-1", cwd=part, check=False)
    assert bad.returncode != 0 and "tarn.train.parallel-bags" in bad.stderr
