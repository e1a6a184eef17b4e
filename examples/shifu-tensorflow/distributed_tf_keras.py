"""A shifu-tensorflow training script for TensorFlow 2, written for tarn.

It follows the contract Shifu's distributed_tf_keras.py follows (docs/TRAINING.md,
"shifu-tensorflow scripts"): it takes no arguments; its role comes from JOB_NAME ("ps" or
"worker") and TASK_ID, the cluster from CLUSTER_SPEC ({"ps": [...], "worker": [...]}), a
worker's data from TRAINING_DATA_PATH (comma-separated gzip parts of Shifu's normalized
layout: one '|'-separated field per ColumnConfig column, the weight last), the columns from
SELECTED_COLUMN_NUMS / TARGET_COLUMN_NUM, the settings from ./ModelConfig.json. Worker 0 is
the chief: when training ends it writes a SavedModel (input "shifu_input_0", output
"shifu_output_0", tags train and serve) and GenericModelConfig.json to FINAL_MODEL_PATH;
checkpoints go to TMP_MODEL_PATH. Progress lines go to 127.0.0.1:SOCKET_SERVER_PORT.

Training is between-graph replication with parameter servers, as in shifu-tensorflow: the
variables live on the ps tasks, each worker trains on its own files and updates them
asynchronously, and training stops when the shared global step has covered numTrainEpochs
passes over the data. TensorFlow 2 runs this through tf.compat.v1 (graph mode); the model is
Keras 2 (tf.keras up to TensorFlow 2.15, the tf-keras package from 2.16 on, where tf.keras is
Keras 3, which has no graph mode).

Edit model(shifu_context) to change the network; keep its input and output layer names.
"""
import gzip
import json
import logging
import math
import os
import random
import socket
import sys
import time

import numpy as np
import tensorflow as tf

try:  # Keras 2: tf-keras on TensorFlow >= 2.16, tf.keras before
    import tf_keras as keras
except ImportError:
    keras = tf.keras

tf.compat.v1.disable_eager_execution()


###############################################################################################
# The model: edit this function. shifu_context holds ModelConfig.json ("model_conf") and the
# values read from the environment (see read_shifu_context).
###############################################################################################
def model(shifu_context):
    params = shifu_context["model_conf"]["train"]["params"]
    inputs = keras.Input(shape=(shifu_context["feature_count"],), name="shifu_input_0")
    layer = inputs
    activations = params.get("ActivationFunc", ["tanh"])
    for i in range(int(params.get("NumHiddenLayers", 1))):
        layer = keras.layers.Dense(int(params["NumHiddenNodes"][i]),
                                   activation=activations[min(i, len(activations) - 1)].lower(),
                                   kernel_initializer="glorot_uniform",
                                   name="hidden_layer_%d" % (i + 1))(layer)
    output = keras.layers.Dense(1, activation="sigmoid", name="shifu_output_0")(layer)
    return keras.Model(inputs, output)


###############################################################################################
# The harness: the shifu-tensorflow contract.
###############################################################################################
def read_shifu_context():
    with open("./ModelConfig.json") as f:
        model_conf = json.load(f)
    train = model_conf["train"]
    params = train.get("params", {})
    features = [int(c) for c in os.environ["SELECTED_COLUMN_NUMS"].split()]
    cluster_spec = json.loads(os.environ["CLUSTER_SPEC"])
    job_name = os.environ["JOB_NAME"]
    task_index = int(os.environ["TASK_ID"])
    return {
        "model_conf": model_conf,
        "cluster_spec": {"ps": cluster_spec["ps"], "worker": cluster_spec["worker"]},
        "job_name": job_name,
        "task_index": task_index,
        "is_chief": job_name == "worker" and task_index == 0,
        "n_workers": int(os.environ.get("WORKER_CNT", len(cluster_spec["worker"]))),
        "delimiter": os.environ.get("DELIMITER", "|"),
        "feature_column_nums": features,
        "feature_count": len(features),
        "target_column_num": int(os.environ["TARGET_COLUMN_NUM"]),
        "total_training_data_number": int(os.environ["TOTAL_TRAINING_DATA_NUMBER"]),
        "training_data_path": os.environ.get("TRAINING_DATA_PATH", ""),
        "tmp_model_path": os.environ["TMP_MODEL_PATH"],
        "final_model_path": os.environ["FINAL_MODEL_PATH"],
        "socket_server_port": int(os.environ["SOCKET_SERVER_PORT"]),
        "epochs": int(train.get("numTrainEpochs", 1)),
        "valid_training_data_ratio": float(train.get("validSetRate", 0.2)),
        "batch_size": int(params.get("MiniBatchs", 128)),
        "learning_rate": float(params.get("LearningRate", 0.001)),
        "optimizer": str(params.get("Propagation", "adam")).lower(),
        "norm_type": model_conf.get("normalize", {}).get("normType", ""),
    }


def load_data(ctx):
    """This worker's rows: features, target and weight (the last field), split into
    training and validation rows by validSetRate."""
    rng = random.Random(1000 + ctx["task_index"])
    out = {"train": ([], [], []), "valid": ([], [], [])}
    cols, target = ctx["feature_column_nums"], ctx["target_column_num"]
    for path in filter(None, ctx["training_data_path"].split(",")):
        with gzip.open(path, "rt") as f:
            for line in f:
                fields = line.rstrip("\n").split(ctx["delimiter"])
                if len(fields) < 2:
                    continue
                row = np.zeros(len(cols), dtype=np.float32)
                for k, c in enumerate(cols):
                    try:
                        v = float(fields[c])
                        row[k] = 0.0 if math.isnan(v) else v
                    except ValueError:
                        row[k] = 0.0
                weight = float(fields[-1]) if fields[-1] else 1.0
                part = "valid" if rng.random() < ctx["valid_training_data_ratio"] else "train"
                out[part][0].append(row)
                out[part][1].append([float(fields[target])])
                out[part][2].append([weight if weight >= 0 else 1.0])
    return {k: tuple(np.array(a, dtype=np.float32).reshape(len(a), -1) for a in v)
            for k, v in out.items()}


def optimizer_for(ctx):
    name, rate = ctx["optimizer"], ctx["learning_rate"]
    if name in ("b", "sgd", "gd", "gradientdescent"):
        return tf.compat.v1.train.GradientDescentOptimizer(rate)
    if name == "adagrad":
        return tf.compat.v1.train.AdagradOptimizer(rate)
    return tf.compat.v1.train.AdamOptimizer(rate)


def export(ctx):
    """Worker 0: the last checkpoint as a SavedModel in FINAL_MODEL_PATH."""
    tf.compat.v1.reset_default_graph()
    keras.backend.clear_session()
    net = model(ctx)
    saver = tf.compat.v1.train.Saver(var_list=net.weights)
    export_dir = ctx["final_model_path"]
    with tf.compat.v1.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(ctx["tmp_model_path"]))
        if tf.io.gfile.exists(export_dir):
            tf.io.gfile.rmtree(export_dir)
        builder = tf.compat.v1.saved_model.Builder(export_dir)
        signature = tf.compat.v1.saved_model.predict_signature_def(
            inputs={"shifu_input_0": net.inputs[0]}, outputs={"shifu_output_0": net.outputs[0]})
        builder.add_meta_graph_and_variables(
            sess, ["train", "serve"], signature_def_map={"serving_default": signature},
            clear_devices=True)
        builder.save()
    generic = {"inputnames": [net.inputs[0].name],
               "properties": {"algorithm": "tensorflow", "tags": ["train", "serve"],
                              "outputnames": net.outputs[0].name, "normtype": ctx["norm_type"]}}
    with tf.io.gfile.GFile(os.path.join(export_dir, "GenericModelConfig.json"), "w") as f:
        f.write(json.dumps(generic, indent=2))
    logging.info("exported the model to %s", export_dir)


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    ctx = read_shifu_context()
    cluster = tf.train.ClusterSpec(ctx["cluster_spec"])
    server = tf.compat.v1.train.Server(cluster, job_name=ctx["job_name"],
                                       task_index=ctx["task_index"])
    progress = socket.create_connection(("127.0.0.1", ctx["socket_server_port"]))
    if ctx["job_name"] == "ps":
        logging.info("parameter server %d serving", ctx["task_index"])
        server.join()
        return 0

    data = load_data(ctx)
    x, y, w = data["train"]
    vx, vy, vw = data["valid"]
    batch = ctx["batch_size"]
    logging.info("worker %d: %d training rows, %d validation rows from %s", ctx["task_index"],
                 len(x), len(vx), ctx["training_data_path"])
    # The shared step counts every worker's batches: stop after `epochs` passes over all rows.
    rows = ctx["total_training_data_number"] * (1 - ctx["valid_training_data_ratio"])
    last_step = max(1, int(ctx["epochs"] * math.ceil(rows / batch)))
    worker_device = "/job:worker/task:%d" % ctx["task_index"]
    with tf.compat.v1.device(tf.compat.v1.train.replica_device_setter(
            worker_device=worker_device, cluster=cluster)):
        global_step = tf.compat.v1.train.get_or_create_global_step()
        net = model(ctx)
        labels = tf.compat.v1.placeholder(tf.float32, (None, 1), name="labels")
        weights = tf.compat.v1.placeholder(tf.float32, (None, 1), name="weights")
        loss = tf.compat.v1.losses.log_loss(labels, net.outputs[0], weights=weights)
        train_op = optimizer_for(ctx).minimize(loss, global_step=global_step)
    hooks = [tf.compat.v1.train.StopAtStepHook(last_step=last_step)]
    epoch = 0
    with tf.compat.v1.train.MonitoredTrainingSession(
            master=server.target, is_chief=ctx["is_chief"], hooks=hooks,
            checkpoint_dir=ctx["tmp_model_path"] if ctx["is_chief"] else None,
            save_checkpoint_steps=max(1, last_step // 4), log_step_count_steps=0,
            config=tf.compat.v1.ConfigProto(device_filters=["/job:ps", worker_device])) as sess:
        while not sess.should_stop() and len(x):
            start = time.time()
            order = np.random.permutation(len(x))
            train_loss = 0.0
            for b in range(0, len(x), batch):
                if sess.should_stop():
                    break
                idx = order[b:b + batch]
                _, train_loss = sess.run([train_op, loss], {net.inputs[0]: x[idx],
                                                            labels: y[idx], weights: w[idx]})
            epoch += 1
            elapsed = time.time() - start
            valid_start = time.time()
            valid_loss = float("nan")
            if len(vx) and not sess.should_stop():
                valid_loss = sess.run(loss, {net.inputs[0]: vx, labels: vy, weights: vw})
            progress.sendall(("worker_index:%d,time:%.3f,current_epoch:%d,training_loss:%.6f,"
                              "valid_loss:%.6f,valid_time:%.3f\n" % (
                                  ctx["task_index"], elapsed, epoch, train_loss, valid_loss,
                                  time.time() - valid_start)).encode("utf-8"))
    logging.info("worker %d done after %d passes over its data", ctx["task_index"], epoch)
    if ctx["is_chief"]:
        export(ctx)
    progress.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
