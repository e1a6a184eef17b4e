"""Helpers shared by the training benchmarks (train_vs_pytorch_keras, train_graph_vs_pytorch_keras):
the peers' virtual environment, tarn's shards and epoch lines. Not a benchmark: run-all skips it.
The orchestrator side uses only the standard library; read_shards, torch_blas, start_peer and
keras_epoch_timer run in the peers' venv."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import _common
from _common import ROOT, sha256

VENV = os.path.join(ROOT, "build", "train-bench-venv")
PEERS = ("pytorch", "keras")
# PyTorch's OpenMP workers sleep instead of spinning while they wait: on a shared 2-core machine
# a spinning worker that lost its core stalls every op. With a compile job beside it (load ~2),
# torch with 2 threads and the default (spinning) policy ran 16k-90k samples/s on letter_p2,
# with PASSIVE 290k-390k, the same as 1 thread (~320k).
PEER_OMP_WAIT_POLICY = "PASSIVE"


def log(msg):
    print(msg, flush=True)


class Runner:
    """A benchmark's commands: a failure ends the benchmark, naming it and the command."""

    def __init__(self, name, work):
        self.name, self.work = name, work

    def die(self, msg):
        print(f"{self.name}: error: {msg}", file=sys.stderr, flush=True)
        sys.exit(1)

    def run(self, cmd, cwd, label, env=None):
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
            self.die(f"{label} failed (exit {r.returncode}): {' '.join(cmd)}")
        return r.stdout + r.stderr

    def run_timed(self, cmd, cwd, env=None, label=""):
        """cmd under /usr/bin/time -v (_common.run_timed): its figures, stdout and stderr."""
        res = _common.run_timed(cmd, cwd, os.path.join(self.work, "time-v.txt"), env)
        if res["returncode"] != 0:
            self.die(f"{label} failed (exit {res['returncode']}): {' '.join(cmd)}")
        res.pop("returncode")
        return res


def read_shards(folder, with_ids=False):
    """tarn's tmp/NormalizedData: (header of the first shard, rows x floats_per_row float32)
    and, with_ids, a third item: rows x ids_per_row uint32 (the id columns of version-3
    shards, src/data/shard.h; None when the shards have none)."""
    import numpy as np

    shards = sorted(p for p in os.listdir(folder) if p.endswith(".tshard"))
    mats, id_mats, header = [], [], None
    for p in shards:
        path = os.path.join(folder, p)
        with open(path, "rb") as f:
            head = f.read(40)
            if head[:8] != b"TARNSHRD":
                raise SystemExit(f"{path}: not a tarn shard")
            version = int.from_bytes(head[8:12], "little")
            hbytes = int.from_bytes(head[12:16], "little")
            rows = int.from_bytes(head[16:24], "little")
            fpr = int.from_bytes(head[24:28], "little")
            ids_per_row = int.from_bytes(head[36:40], "little") if version >= 3 else 0
            h = json.loads(f.read(hbytes))
        header = header or h
        start = (40 + hbytes + 63) // 64 * 64
        mats.append(np.fromfile(path, dtype="<f4", offset=start, count=rows * fpr).reshape(rows, fpr))
        if with_ids and ids_per_row:
            id_start = (start + rows * fpr * 4 + 63) // 64 * 64
            id_mats.append(np.fromfile(path, dtype="<u4", offset=id_start,
                                       count=rows * ids_per_row).reshape(rows, ids_per_row))
    floats = np.concatenate(mats) if len(mats) > 1 else mats[0]
    if not with_ids:
        return header, floats
    ids = (np.concatenate(id_mats) if len(id_mats) > 1 else id_mats[0]) if id_mats else None
    return header, floats, ids


def torch_blas(torch):
    try:
        cfg = torch.__config__.show()
    except Exception:  # noqa: BLE001 - informational only
        return None
    m = re.search(r"BLAS_INFO=(\w+)", cfg)
    blas = m.group(1) if m else None
    # Debian's torch links the system libblas.so.3 (an update-alternatives choice).
    try:
        blas = f"{blas} -> {os.path.realpath('/usr/lib/x86_64-linux-gnu/libblas.so.3')}"
    except OSError:
        pass
    return blas


def start_peer(kind, threads, seed):
    """In a peer process: sets PyTorch's or TensorFlow's threads (TensorFlow: intra-op
    `threads`, inter-op 1) and Keras' seed; returns the versions that run."""
    import numpy as np

    if kind == "pytorch":
        import torch

        torch.set_num_threads(threads)
        return {"torch": torch.__version__, "numpy": np.__version__, "torch_blas": torch_blas(torch)}
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras

    keras.utils.set_random_seed(seed)
    return {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__}


def keras_epoch_timer(epoch_s):
    """A Keras callback that appends each epoch's seconds to epoch_s."""
    import keras

    class EpochTimes(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            epoch_s.append(time.perf_counter() - self.t)

    return EpochTimes()


def venv_python():
    return os.path.join(VENV, "bin", "python")


PROBE = {
    "pytorch": "import numpy, torch; numpy.ones(1); torch.from_numpy(numpy.ones(2, 'float32')).sum(); "
               "print(torch.__version__)",
    "keras": "import numpy, sklearn, tensorflow as tf, keras; print(tf.__version__)",
}


def probe(kind):
    py = venv_python()
    if not os.path.exists(py):
        return None
    r = subprocess.run([py, "-c", PROBE[kind]], capture_output=True, text=True, env=peer_env())
    return r.stdout.strip() if r.returncode == 0 else None


def system_blas():
    try:
        return os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    except OSError:
        return None


def ensure_peers(name):
    """build/train-bench-venv (Debian's python3-torch visible, TensorFlow from PyPI); returns
    {peer: why it cannot run} for the peers that cannot. `name` prefixes the messages."""
    missing = {}
    apt_ok = os.geteuid() == 0 and shutil.which("apt-get")
    sys_py = "/usr/bin/python3"
    if not os.access(sys_py, os.X_OK):
        return {p: "/usr/bin/python3 is missing" for p in PEERS}
    # PyTorch: Debian's python3-torch, with OpenBLAS as the system BLAS (Debian's torch calls
    # libblas.so.3, which is the slow reference BLAS unless OpenBLAS provides it).
    need = []
    if subprocess.run([sys_py, "-c", "import torch"], capture_output=True).returncode != 0:
        need.append("python3-torch")
    if "openblas" not in (system_blas() or ""):
        need.append("libopenblas0-openmp")
    if need:
        if apt_ok:
            log(f"{name}: apt-get install {' '.join(need)}")
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            r = subprocess.run(["apt-get", "install", "-y", "-q"] + need, env=env,
                               stdout=subprocess.DEVNULL)
            if r.returncode != 0:
                subprocess.run(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL)
                subprocess.run(["apt-get", "install", "-y", "-q"] + need, env=env,
                               stdout=subprocess.DEVNULL)
        else:
            log(f"{name}: {' '.join(need)} not installed and not root: "
                f"apt-get install {' '.join(need)}")
    if probe("pytorch") and probe("keras"):
        return missing
    py = venv_python()
    log(f"{name}: making {os.path.relpath(VENV, ROOT)} (tensorflow-cpu, scikit-learn, numpy<2 "
        "from PyPI; Debian's python3-torch via --system-site-packages)")
    if not os.path.exists(py):
        r = subprocess.run([sys_py, "-m", "venv", "--system-site-packages", VENV])
        if r.returncode != 0:
            return {p: "cannot make the venv (Debian package python3-venv?)" for p in PEERS}
    r = subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "tensorflow-cpu", "scikit-learn", "numpy<2"])
    if r.returncode != 0:
        log(f"{name}: pip install tensorflow-cpu scikit-learn numpy<2 failed (is PyPI reachable?)")
    if not probe("pytorch"):
        missing["pytorch"] = "Debian's python3-torch cannot be imported with numpy in the venv"
    if not probe("keras"):
        missing["keras"] = "tensorflow-cpu / scikit-learn cannot be imported from the venv"
    return missing


def peer_env():
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)  # BENCHMARKING.md: the peer runs without these
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["OMP_WAIT_POLICY"] = PEER_OMP_WAIT_POLICY
    return env


def peer_versions(tarn, with_peers=True):
    """tarn's --version and, with_peers, from the venv: python, numpy, torch, tensorflow,
    keras, scikit-learn, and the system BLAS."""
    versions = {"tarn": subprocess.run([tarn, "--version"], capture_output=True, text=True).stdout.strip()}
    if not with_peers:
        return versions
    r = subprocess.run([venv_python(), "-c",
                        "import json, platform, numpy\nv={'python': platform.python_version(), 'numpy': numpy.__version__}\n"
                        "try:\n import torch; v['torch']=torch.__version__\nexcept Exception: pass\n"
                        "try:\n import tensorflow as tf, keras, sklearn; v['tensorflow']=tf.__version__; "
                        "v['keras']=keras.__version__; v['scikit-learn']=sklearn.__version__\nexcept Exception: pass\n"
                        "print(json.dumps(v))"], capture_output=True, text=True, env=peer_env())
    if r.returncode == 0:
        versions.update(json.loads(r.stdout.strip().splitlines()[-1]))
    versions["system_blas"] = system_blas()
    return versions


def private_copy(tarn, work, name="tarn-under-test"):
    """A copy of the tarn binary as work/name (a rebuild during the run cannot change what
    runs); returns (its path, its sha256)."""
    dst = os.path.join(work, name)
    shutil.copy2(tarn, dst + ".tmp")
    os.replace(dst + ".tmp", dst)
    return dst, sha256(dst)


# Shifu's errors, then tarn's losses (train_error: tarn's training loss, as the peers report).
EPOCH_RE = re.compile(r"^Epoch #(\d+) Training Error:(\S+) Validation Error:(\S+)\s+"
                      r"\(loss (\S+) valid (\S+), ([\d.]+) samples/s", re.M)


def tarn_epochs(stdout):
    return [{"epoch": int(m.group(1)), "train_error": float(m.group(4)),
             "samples_per_s": float(m.group(6))} for m in EPOCH_RE.finditer(stdout)]


def fmt_rate(x):
    return f"{x / 1e6:.3f} M" if x >= 1e5 else f"{x / 1e3:.1f} k"
