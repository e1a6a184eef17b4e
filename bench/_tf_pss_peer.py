"""TensorFlow's ParameterServerStrategy peer of bench/dist_vs_local.py (not a benchmark itself:
run-all skips it). One file for every task; each reads its role from TF_CONFIG, as
examples/assembly/keras_pss.py does:

  --prepare MS DIR  (any python with numpy) the peer's arrays from tarn's model set MS: the
                    normalized shards' training rows (tarn's own shards, the finalSelect
                    columns; train_vs_pytorch_keras.prepare) and the test rows as tarn's
                    `eval -norm` wrote them; a seeded tenth of the training rows is left out,
                    as validSetRate 0.1 leaves a tenth out of tarn's training passes.
  ps, worker        a tf.distribute.Server that waits (the chief drives it).
  chief             builds the network under the strategy (inputs -> 50 tanh -> 1 sigmoid,
                    Glorot-uniform weights, Adam, L2 as train_vs_pytorch_keras' Keras peer, batch
                    128 per worker step), schedules training steps with a ClusterCoordinator
                    (Keras 3 has no model.fit for this strategy), each scheduled call running
                    STEPS_PER_CALL batches of one worker (Keras' steps_per_execution: each batch
                    still one Adam update of the variables on the parameter server). It runs
                    --epochs epochs of the training rows (an epoch: rows / 128 worker steps,
                    shared among the workers as the coordinator schedules them; each worker
                    reads every row in its own unseeded shuffle), timing each, then scores the
                    test rows and writes its figures and the test AUC to --out.
"""
import argparse
import json
import os
import sys
import time

STEPS_PER_CALL = 32  # the value train_vs_pytorch_keras uses for Keras' steps_per_execution
VALID_FRACTION = 0.1


def prepare(ms, out_dir, seed):
    import numpy as np

    from train_vs_pytorch_keras import prepare as prepare_arrays

    prepare_arrays(ms, out_dir)
    x = np.load(os.path.join(out_dir, "x_train.npy"))
    y = np.load(os.path.join(out_dir, "y_train.npy"))
    keep = np.random.default_rng(seed).random(len(y)) >= VALID_FRACTION
    rows = np.ascontiguousarray(np.concatenate([x[keep], y[keep, None]], axis=1), dtype="<f4")
    # The workers read this file themselves (the dataset function runs on each worker).
    tmp = os.path.join(out_dir, "train_rows.f32.tmp")
    rows.tofile(tmp)
    os.replace(tmp, os.path.join(out_dir, "train_rows.f32"))
    info = json.load(open(os.path.join(out_dir, "info.json")))
    info["peer_train_rows"] = int(keep.sum())
    with open(os.path.join(out_dir, "info.json"), "w") as f:
        json.dump(info, f)


def auc(y, score):
    """The area under the ROC curve (ties counted half): the Mann-Whitney statistic."""
    import numpy as np

    order = np.argsort(score, kind="mergesort")
    s = score[order]
    ranks = np.empty(len(s))
    _, first, counts = np.unique(s, return_index=True, return_counts=True)
    for f, c in zip(first, counts):
        ranks[f:f + c] = f + (c + 1) / 2.0
    pos = y[order] > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def chief(config, args):
    import numpy as np
    import tensorflow as tf
    import keras

    from train_vs_pytorch_keras import ADAM_BETA1, ADAM_BETA2, ADAM_EPS, BATCH, HIDDEN, LEARNING_RATE, REG

    info = json.load(open(os.path.join(args.data, "info.json")))
    d, n = info["inputs"], info["peer_train_rows"]
    rows_path = os.path.join(args.data, "train_rows.f32")
    strategy = tf.distribute.ParameterServerStrategy(tf.distribute.cluster_resolver.TFConfigClusterResolver())
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        reg = keras.regularizers.L2(REG / 2)  # Keras: loss += l * sum W^2, so l = reg / 2
        model = keras.Sequential([
            keras.Input((d,)),
            keras.layers.Dense(HIDDEN, activation="tanh", kernel_initializer="glorot_uniform",
                               bias_initializer="zeros", kernel_regularizer=reg),
            keras.layers.Dense(1, activation="sigmoid", kernel_initializer="glorot_uniform",
                               bias_initializer="zeros", kernel_regularizer=reg),
        ])
        optimizer = keras.optimizers.Adam(learning_rate=LEARNING_RATE, beta_1=ADAM_BETA1,
                                          beta_2=ADAM_BETA2, epsilon=ADAM_EPS)

    def dataset_fn():
        rows = tf.reshape(tf.io.decode_raw(tf.io.read_file(rows_path), tf.float32), [-1, d + 1])
        count = tf.shape(rows, out_type=tf.int64)[0]
        # Unseeded: each worker shuffles in its own order, every pass anew.
        idx = tf.data.Dataset.range(count).shuffle(count, reshuffle_each_iteration=True).repeat()
        return idx.batch(BATCH, drop_remainder=True).map(
            lambda i: (lambda r: (r[:, :d], r[:, d:]))(tf.gather(rows, i))).prefetch(2)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def train_calls(it):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                p = model(x, training=True)
                loss = tf.reduce_mean(keras.losses.binary_crossentropy(y, p)) + tf.add_n(model.losses)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        loss = tf.constant(0.0)
        for _ in tf.range(STEPS_PER_CALL):
            x, y = next(it)
            loss = strategy.run(replica_step, args=(x, y))
        return loss

    def train(calls):
        t = time.perf_counter()
        last = None
        for _ in range(calls):
            last = coordinator.schedule(train_calls, args=(iterator,))
        coordinator.join()
        return time.perf_counter() - t, float(last.fetch())

    res = {}
    if args.steps:
        # A fixed number of worker steps after a warm-up (tracing, the servers' first steps).
        calls = max(1, args.steps // STEPS_PER_CALL)
        warm_s, _ = train(max(1, args.warmup_steps // STEPS_PER_CALL))
        measured_s, loss = train(calls)
        res.update(warmup_s=warm_s, measured_steps=calls * STEPS_PER_CALL, measured_s=measured_s,
                   final_loss=loss, steady_samples_per_s=calls * STEPS_PER_CALL * BATCH / measured_s)
    calls_per_epoch = max(1, n // BATCH // STEPS_PER_CALL)
    epoch_s, losses = [], []
    for _ in range(args.epochs):
        s, loss = train(calls_per_epoch)
        epoch_s.append(s)
        losses.append(loss)
    xt = np.load(os.path.join(args.data, "x_test.npy"))
    yt = np.load(os.path.join(args.data, "y_test.npy"))
    w1, b1, w2, b2 = (np.asarray(w) for w in model.get_weights())
    score = (np.tanh(xt @ w1 + b1) @ w2 + b2).ravel()  # the sigmoid is monotone: AUC alike
    samples_per_epoch = calls_per_epoch * STEPS_PER_CALL * BATCH
    res.update({"threads": args.threads, "steps_per_call": STEPS_PER_CALL, "batch_per_step": BATCH,
           "workers": len(config["cluster"]["worker"]), "ps": len(config["cluster"]["ps"]),
           "samples_per_epoch": samples_per_epoch, "epoch_s": epoch_s, "final_loss": losses,
           "samples_per_s": [samples_per_epoch / s for s in epoch_s],
           "test_rows": int(len(yt)), "auc": auc(yt, score), "tensorflow": tf.__version__,
           "keras": keras.__version__})
    if not args.steps:
        res["steady_samples_per_s"] = (samples_per_epoch * (len(epoch_s) - 1) / sum(epoch_s[1:])
                                       if len(epoch_s) > 1 else None)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.replace(tmp, args.out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepare", nargs=2, metavar=("MS", "DIR"))
    ap.add_argument("--data", help="the --prepare folder")
    ap.add_argument("--epochs", type=int, default=0, help="epochs of the training rows")
    ap.add_argument("--steps", type=int, default=0,
                    help="before the epochs: this many worker steps, timed, after --warmup-steps")
    ap.add_argument("--warmup-steps", type=int, default=640)
    ap.add_argument("--threads", type=int, default=1, help="TensorFlow intra-op threads")
    ap.add_argument("--seed", type=int, default=12306)
    ap.add_argument("--out", help="the chief's results JSON")
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if args.prepare:
        prepare(*args.prepare, args.seed)
        return 0
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    from _train_peers import start_peer

    start_peer("keras", args.threads, args.seed)  # intra-op threads, inter-op 1, Keras' seed
    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    if task["type"] in ("ps", "worker"):
        server = tf.distribute.Server(tf.train.ClusterSpec(config["cluster"]), job_name=task["type"],
                                      task_index=task["index"], protocol="grpc", start=True)
        server.join()
        return 0
    chief(config, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
