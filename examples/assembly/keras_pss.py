"""A small TensorFlow 2 Keras program trained with ParameterServerStrategy, as tarn's
assembly runner (or TonY, or Submarine) runs it: every task reads its role from TF_CONFIG.

  ps, worker  run a tf.distribute.Server and wait (the coordinator drives them);
  chief       builds a Keras model under the strategy, trains it with a ClusterCoordinator
              (a custom loop: Keras 3 has no model.fit for ParameterServerStrategy) and
              writes the model as a Keras file (--out, default model.keras).

The data is generated (a seeded, linearly separable binary target), so the program needs
nothing but TensorFlow. A worker lost while training is waited for: the coordinator
reschedules its steps and takes the task back when it returns at the same address, which is
what tarn's backups do.
"""
import argparse
import json
import os
import socket
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="model.keras", help="the Keras file the chief writes")
    parser.add_argument("--steps", type=int, default=2000, help="training steps")
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("--rejoin-s", type=float, default=0,
                        help="after its steps, how long the chief waits for every worker to "
                             "answer at its address (a replaced one too), before it trains "
                             "--steps/10 more steps with them all and writes the model")
    args = parser.parse_args()

    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    print(f"task {task['type']}:{task['index']} in {config['cluster']}", flush=True)
    if task["type"] in ("ps", "worker"):
        server = tf.distribute.Server(tf.train.ClusterSpec(config["cluster"]),
                                      job_name=task["type"], task_index=task["index"],
                                      protocol="grpc", start=True)
        server.join()
        return 0

    strategy = tf.distribute.ParameterServerStrategy(
        tf.distribute.cluster_resolver.TFConfigClusterResolver())
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = keras.Sequential([
            keras.Input(shape=(args.features,), name="features"),
            keras.layers.Dense(16, activation="relu", name="hidden"),
            keras.layers.Dense(1, activation="sigmoid", name="score"),
        ])
        optimizer = keras.optimizers.SGD(learning_rate=0.1)

    def dataset_fn():
        x = tf.random.stateless_uniform((2048, args.features), seed=(7, 11))
        y = tf.cast(tf.reduce_sum(x, axis=1, keepdims=True) > args.features / 2, tf.float32)
        return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2048, seed=3).repeat().batch(64)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def train_step(it):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(keras.losses.binary_crossentropy(y, model(x, training=True)))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        x, y = next(it)
        return strategy.run(replica_step, args=(x, y))

    def train(first, last):
        for step in range(first, last + 1):
            loss = coordinator.schedule(train_step, args=(iterator,))
            if step % 100 == 0:
                coordinator.join()
                print(f"step {step} loss {float(loss.fetch()):.4f}", flush=True)
        coordinator.join()

    train(1, args.steps)
    if args.rejoin_s > 0:
        workers = config["cluster"].get("worker", [])
        wait_for_addresses(workers, args.rejoin_s)
        print(f"every worker answers: {workers}", flush=True)
        train(args.steps + 1, args.steps + max(1, args.steps // 10))
    model.save(args.out)
    print(f"wrote {os.path.abspath(args.out)}", flush=True)
    return 0


def wait_for_addresses(addresses, limit_s):
    """Until each host:port accepts a connection; an error after limit_s seconds."""
    deadline = time.monotonic() + limit_s
    for address in addresses:
        host, port = address.rsplit(":", 1)
        while True:
            try:
                socket.create_connection((host, int(port)), timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"worker {address} did not answer within {limit_s} s")
                time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
