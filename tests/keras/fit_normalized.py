"""Trains, in real Keras, a model read back from its `model.to_json()` on rows tarn normalized,
and scores rows tarn normalized: the Keras side of test_keras.py's AUC comparison.

    python fit_normalized.py DATA.json MODEL.json [MODEL.json ...]

DATA.json: {"epochs", "batch", "learningRate", "optimizer" ("adagrad"), "seed",
"train": ROWS, "test": ROWS}, ROWS = {"numeric": [[float]], "ids": {column: [int]},
"target": [0/1]}. Each model's graph comes from its JSON alone (keras.models.model_from_json),
so Keras trains exactly the graph tarn reads. Prints one JSON line per model:
{"model": path, "auc": exact ROC AUC on the test rows (ties count one half)}.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def inputs_of(model, rows, keras, np):
    """The model's inputs by name: shifu_input_0 the numeric vector, any other a column's ids."""
    out = {}
    for layer in model.layers:
        if not isinstance(layer, keras.layers.InputLayer):
            continue
        if layer.name == "shifu_input_0":
            out[layer.name] = np.asarray(rows["numeric"], dtype="float32")
        else:
            out[layer.name] = np.asarray(rows["ids"][layer.name], dtype="int32").reshape(-1, 1)
    return out


def exact_auc(scores, target, np):
    """The area under the ROC curve: the probability that a positive outranks a negative."""
    scores = np.asarray(scores, dtype="float64")
    target = np.asarray(target) > 0.5
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):  # average ranks over ties
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = target.sum()
    neg = len(target) - pos
    return float((ranks[target].sum() - pos * (pos + 1) / 2) / (pos * neg))


def optimizer(keras, name, learning_rate):
    # tarn's AdaGrad: G starts at 0, eps 1e-8 (Keras adds it under the square root). AdaGrad
    # leaves a row no batch touched unchanged, whether embedding tables are updated densely or
    # row by row (lazily), so the comparison does not depend on how tarn updates its tables.
    if name == "adagrad":
        return keras.optimizers.Adagrad(learning_rate=learning_rate, initial_accumulator_value=0.0,
                                        epsilon=1e-8)
    raise SystemExit(f"unsupported optimizer {name}")


def main():
    import keras
    import numpy as np

    with open(sys.argv[1]) as f:
        data = json.load(f)
    for path in sys.argv[2:]:
        keras.utils.set_random_seed(data["seed"])
        with open(path) as f:
            model = keras.models.model_from_json(f.read())
        model.compile(optimizer=optimizer(keras, data["optimizer"], data["learningRate"]),
                      loss="binary_crossentropy")
        train = data["train"]
        model.fit(inputs_of(model, train, keras, np), np.asarray(train["target"], dtype="float32"),
                  batch_size=data["batch"], epochs=data["epochs"], shuffle=True, verbose=0)
        test = data["test"]
        scores = model.predict(inputs_of(model, test, keras, np), batch_size=4096, verbose=0)
        scores = scores.reshape(-1)
        print(json.dumps({"model": path, "auc": exact_auc(scores, test["target"], np)}),
              flush=True)


if __name__ == "__main__":
    main()
