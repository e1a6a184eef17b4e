"""Builds, in real Keras, the models tarn must read from `model.to_json()`, and writes each
JSON with the output shape Keras gives every layer.

    python make_graphs.py OUT_DIR            # Keras 3 (the `keras` package)
    python make_graphs.py OUT_DIR --keras2   # Keras 2 (the `tf_keras` package)

Writes OUT_DIR/<prefix><model>.json for wide_deep, deepfm, sequential_mlp, unsupported_lambda,
shared_nested (shared layers, a nested Sequential called twice, a nested Functional),
shared_embedding (one Embedding on two columns, which tarn refuses) and, Keras 3 only, hashing
(every Adult categorical column's text through a Hashing layer) (prefix "keras3_" or
"keras2_"), and OUT_DIR/<prefix>shapes.json: {model: {layer name: output shape without the
batch dimension}} (a shared layer's is its first call's; a nested model's, its output's).
The inputs are Adult-like:
`shifu_input_0`, the normalized numeric vector, and one (1,) int32 id input per categorical
column, named after the column.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

NUMERIC_WIDTH = 6
# Adult's categorical columns and a vocabulary size for each (categories + the missing bin).
CATEGORICAL = {"Work_Class": 9, "Education": 17, "Occupation": 16}
EMBEDDING_DIM = 4


def inputs(keras):
    numeric = keras.Input(shape=(NUMERIC_WIDTH,), name="shifu_input_0")
    ids = {c: keras.Input(shape=(1,), dtype="int32", name=c) for c in CATEGORICAL}
    return numeric, ids


def wide_deep(keras):
    L = keras.layers
    numeric, ids = inputs(keras)
    # Wide: a weight per category (an embedding of dimension 1) beside the numeric inputs.
    wide_parts = [numeric] + [L.Flatten(name=f"wide_{c}")(L.Embedding(n, 1, name=f"wide_emb_{c}")(ids[c]))
                              for c, n in CATEGORICAL.items()]
    wide = L.Dense(1, name="wide_logit")(L.Concatenate(name="wide_concat")(wide_parts))
    deep_parts = [numeric] + [L.Flatten(name=f"deep_{c}")(
        L.Embedding(n, EMBEDDING_DIM, name=f"deep_emb_{c}")(ids[c])) for c, n in CATEGORICAL.items()]
    x = L.Concatenate(name="deep_concat")(deep_parts)
    x = L.Dense(16, activation="relu", name="deep_1")(x)
    x = L.Dropout(0.1, name="deep_dropout")(x)
    x = L.BatchNormalization(name="deep_bn")(x)
    x = L.Dense(8, activation="tanh", kernel_regularizer=keras.regularizers.L2(1e-4),
                name="deep_2")(x)
    deep = L.Dense(1, name="deep_logit")(x)
    out = L.Activation("sigmoid", name="score")(L.Add(name="wide_plus_deep")([wide, deep]))
    return keras.Model([numeric, *ids.values()], out, name="wide_deep")


def deepfm(keras):
    L = keras.layers
    numeric, ids = inputs(keras)
    first = [L.Dense(1, name="linear_numeric")(numeric)]
    first += [L.Flatten(name=f"first_{c}")(L.Embedding(n, 1, name=f"first_emb_{c}")(ids[c]))
              for c, n in CATEGORICAL.items()]
    # One embedding per column, shared by the FM and the deep part; one reshaped, the others
    # flattened, to (EMBEDDING_DIM,).
    vectors = []
    for k, (c, n) in enumerate(CATEGORICAL.items()):
        e = L.Embedding(n, EMBEDDING_DIM, name=f"emb_{c}")(ids[c])
        vectors.append(L.Reshape((EMBEDDING_DIM,), name=f"vec_{c}")(e) if k == 0 else
                       L.Flatten(name=f"vec_{c}")(e))
    # FM second order: sum over pairs i < j of <v_i, v_j>, with Dot and Add only.
    pairs = [L.Dot(axes=1, name=f"fm_{i}_{j}")([vectors[i], vectors[j]])
             for i in range(len(vectors)) for j in range(i + 1, len(vectors))]
    fm = L.Add(name="fm")(pairs)
    x = L.Concatenate(name="deep_concat")([numeric, *vectors])
    gate = L.Dense(8, activation="sigmoid", name="deep_gate")(x)
    value = L.Dense(8, activation="tanh", name="deep_value")(x)
    x = L.Multiply(name="deep_gated")([gate, value])
    deep = L.Dense(1, name="deep_logit")(x)
    logit = L.Add(name="logit")([*first, fm, deep])
    out = L.Activation("sigmoid", name="score")(logit)
    return keras.Model([numeric, *ids.values()], out, name="deepfm")


def sequential_mlp(keras, keras2):
    L = keras.layers
    # tarn's leaky relu has slope 0.01: Keras 2 calls it alpha, Keras 3 negative_slope.
    leaky = L.LeakyReLU(alpha=0.01, name="leaky") if keras2 else L.LeakyReLU(
        negative_slope=0.01, name="leaky")
    return keras.Sequential([
        L.Dense(16, activation="relu", input_shape=(NUMERIC_WIDTH,), name="hidden_1"),
        L.Dropout(0.2, name="dropout"),
        L.Dense(8, activation="swish", name="hidden_2"),
        leaky,
        L.Dense(1, activation="sigmoid", name="score"),
    ], name="mlp")


def unsupported_lambda(keras):
    L = keras.layers
    numeric, ids = inputs(keras)
    vectors = [L.Flatten(name=f"vec_{c}")(L.Embedding(n, EMBEDDING_DIM, name=f"emb_{c}")(ids[c]))
               for c, n in CATEGORICAL.items()]
    stacked = L.Concatenate(name="stacked")(vectors)
    fm = L.Lambda(lambda t: t[:, :1] * 0.5, output_shape=(1,), name="fm")(stacked)
    out = L.Dense(1, activation="sigmoid", name="score")(
        L.Concatenate(name="all")([numeric, fm]))
    return keras.Model([numeric, *ids.values()], out, name="with_lambda")


def shared_nested(keras):
    L = keras.layers
    numeric, ids = inputs(keras)
    flatten = L.Flatten(name="flat")  # a shared layer without weights
    vectors = [flatten(L.Embedding(n, EMBEDDING_DIM, name=f"emb_{c}")(ids[c]))
               for c, n in CATEGORICAL.items()]
    shared = L.Dense(3, activation="relu", name="shared_dense")  # one kernel for three vectors
    towers = [shared(v) for v in vectors]
    # A Sequential used as a layer and called twice: its Dense shares weights between the calls.
    pair = keras.Sequential([keras.Input(shape=(EMBEDDING_DIM,)),
                             L.Dense(2, activation="tanh", name="pair_dense")], name="pair")
    pairs = [pair(vectors[0]), pair(vectors[1])]
    x = L.Concatenate(name="all")([numeric, *towers, *pairs])
    # A Functional model used as a layer once.
    head_in = keras.Input(shape=(NUMERIC_WIDTH + 3 * len(CATEGORICAL) + 2 * 2,), name="head_in")
    h = L.Dense(8, activation="tanh", name="head_hidden")(head_in)
    h = L.Dropout(0.1, name="head_dropout")(h)
    head = keras.Model(head_in, L.Dense(1, name="head_logit")(h), name="head")
    out = L.Activation("sigmoid", name="score")(head(x))
    return keras.Model([numeric, *ids.values()], out, name="shared_nested")


def shared_embedding(keras):
    L = keras.layers
    numeric, ids = inputs(keras)
    emb = L.Embedding(17, EMBEDDING_DIM, name="emb")  # one table for two columns: refused
    both = [L.Flatten(name=f"vec_{c}")(emb(ids[c])) for c in ("Work_Class", "Education")]
    out = L.Dense(1, activation="sigmoid", name="score")(
        L.Concatenate(name="all")([numeric, *both]))
    return keras.Model([numeric, ids["Work_Class"], ids["Education"]], out, name="shared_emb")


# Adult's categorical columns read as text, each through a Hashing layer: FarmHash alone,
# SipHash with an integer salt or a pair of them, and mask values.
HASHED = {"Work_Class": dict(num_bins=16), "Education": dict(num_bins=32, salt=7),
          "Maried_Status": dict(num_bins=8, mask_value="?"),
          "Occupation": dict(num_bins=32, salt=[11, 2**40 + 3], mask_value="?"),
          "Relationship": dict(num_bins=8), "Race": dict(num_bins=8),
          "Gender": dict(num_bins=4, salt=1), "Native_Country": dict(num_bins=64, mask_value="?")}


def hashing(keras):
    L = keras.layers
    numeric = keras.Input(shape=(NUMERIC_WIDTH,), name="shifu_input_0")
    text = {c: keras.Input(shape=(1,), dtype="string", name=c) for c in HASHED}
    vectors = [L.Flatten(name=f"vec_{c}")(L.Embedding(o["num_bins"], EMBEDDING_DIM, name=f"emb_{c}")(
        L.Hashing(name=f"hash_{c}", **o)(text[c]))) for c, o in HASHED.items()]
    x = L.Dense(16, activation="relu", name="hidden")(
        L.Concatenate(name="all")([numeric, *vectors]))
    out = L.Dense(1, activation="sigmoid", name="score")(x)
    return keras.Model([numeric, *text.values()], out, name="hashing")


def output_shape(layer):
    # A shared layer has one output per call: its first call's (Keras 2: get_output_at).
    if hasattr(layer, "get_output_at"):
        shape = layer.get_output_at(0).shape
    else:
        shape = layer._inbound_nodes[0].outputs[0].shape
    return [int(d) for d in list(shape)[1:]]


def main():
    out_dir = sys.argv[1]
    keras2 = "--keras2" in sys.argv[2:]
    if keras2:
        import tf_keras as keras
    else:
        import keras
    prefix = "keras2_" if keras2 else "keras3_"
    os.makedirs(out_dir, exist_ok=True)
    shapes = {}
    for build in (wide_deep, deepfm, sequential_mlp, unsupported_lambda, shared_nested,
                  shared_embedding, *(() if keras2 else (hashing,))):
        model = build(keras, keras2) if build is sequential_mlp else build(keras)
        with open(os.path.join(out_dir, f"{prefix}{build.__name__}.json"), "w") as f:
            f.write(model.to_json())
        shapes[build.__name__] = {layer.name: output_shape(layer) for layer in model.layers}
    with open(os.path.join(out_dir, f"{prefix}shapes.json"), "w") as f:
        json.dump({"keras_version": keras.__version__, "models": shapes}, f, indent=1)
    print(f"keras {keras.__version__}: wrote {len(shapes)} models to {out_dir}")


if __name__ == "__main__":
    main()
