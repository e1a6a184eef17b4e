"""Helpers shared by the training benchmarks (train_vs_pytorch_keras, train_graph_vs_pytorch_keras):
the peers' virtual environment, tarn's shards and epoch lines. Not a benchmark: run-all skips it.
The orchestrator side uses only the standard library; read_shards, torch_blas, threadpool_kernels,
start_peer and keras_epoch_timer run in the peers' venvs."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import _common
from _common import ROOT, sha256

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


def threadpool_kernels():
    """threadpoolctl's view of the BLAS / OpenMP libraries loaded in this peer process: for
    each, the API, version, threads and (OpenBLAS) the kernel it picked ("architecture")."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return [{k: lib.get(k) for k in ("internal_api", "prefix", "version", "num_threads",
                                      "threading_layer", "architecture")} for lib in threadpool_info()]


def torch_blas(torch):
    """PyTorch's build-time BLAS (BLAS_INFO of torch.__config__.show(): PyPI's x86 wheels link
    MKL statically, which threadpoolctl cannot see) and whether oneDNN is available."""
    try:
        cfg = torch.__config__.show()
    except Exception:  # noqa: BLE001 - informational only
        return None
    m = re.search(r"BLAS_INFO=(\w+)", cfg)
    return {"blas_info": m.group(1) if m else None, "mkldnn": torch.backends.mkldnn.is_available(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def jax_thread_flags(threads):
    """XLA_FLAGS for a JAX process on `threads` threads (set before jax is imported): XLA's CPU
    backend runs its Eigen pool on every core unless told to run single-threaded; it has no
    flag for another count, so any count above 1 means every core (2 here)."""
    if threads == 1:
        return "--xla_cpu_multi_thread_eigen=false"
    if threads < len(os.sched_getaffinity(0)):
        raise SystemExit(f"JAX runs on 1 thread or on every core, not on {threads}")
    return ""


def start_peer(kind, threads, seed):
    """In a peer process: sets PyTorch's, JAX's or TensorFlow's threads (TensorFlow: intra-op
    `threads`, inter-op 1) and Keras' seed; returns the versions and kernels that run."""
    import numpy as np

    if kind == "pytorch":
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        return {"torch": torch.__version__, "numpy": np.__version__, "torch_blas": torch_blas(torch),
                "threadpool": threadpool_kernels()}
    if kind == "jax":
        # XLA_FLAGS was set by the orchestrator (jax_thread_flags) before this process started.
        import jax
        import optax

        return {"jax": jax.__version__, "jaxlib": jax.lib.__version__ if hasattr(jax, "lib") else None,
                "optax": optax.__version__, "numpy": np.__version__,
                "devices": [str(d) for d in jax.devices()], "xla_flags": os.environ.get("XLA_FLAGS"),
                "threadpool": threadpool_kernels()}
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras

    keras.utils.set_random_seed(seed)
    return {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__,
            "threadpool": threadpool_kernels()}


def keras_epoch_timer(epoch_s):
    """A Keras callback that appends each epoch's seconds to epoch_s."""
    import keras

    class EpochTimes(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            epoch_s.append(time.perf_counter() - self.t)

    return EpochTimes()


def steady_rate(rows, epoch_s):
    """Steady-state samples/s: rows x (epochs - 1) over the seconds of epochs 2..N (epoch 1,
    with tracing, compiling and every allocator's warm-up, left out); None with one epoch."""
    return rows * (len(epoch_s) - 1) / sum(epoch_s[1:]) if len(epoch_s) > 1 else None


# The peers' virtual environments under build/, made by ensure_peers from PyPI.
#   build/train-peers-venv: PyTorch 2.x and JAX + optax (PyPI's torch wheel brings its CUDA
#     packages, a few GB: `import torch` loads them even on CPU);
#   build/train-bench-venv: TensorFlow (tensorflow-cpu) and Keras 3.
VENVS = {
    "train-peers-venv": {"peers": ("pytorch", "jax"),
                         "packages": ["torch", "jax", "optax", "scikit-learn", "threadpoolctl", "numpy"]},
    "train-bench-venv": {"peers": ("keras",),
                         "packages": ["tensorflow-cpu", "scikit-learn", "threadpoolctl"]},
}
PEER_VENV = {p: v for v, spec in VENVS.items() for p in spec["peers"]}
PEERS = ("pytorch", "jax", "keras")


def venv_python(kind="pytorch"):
    """The python of the venv that runs peer `kind` (pytorch and jax share one)."""
    return os.path.join(ROOT, "build", PEER_VENV[kind], "bin", "python")


PROBE = {
    "pytorch": "import numpy, sklearn, threadpoolctl, torch; torch.from_numpy(numpy.ones(2, 'float32')).sum(); "
               "print(torch.__version__)",
    "jax": "import numpy, sklearn, jax, optax; jax.numpy.ones(2).sum(); print(jax.__version__)",
    "keras": "import numpy, sklearn, threadpoolctl, tensorflow as tf, keras; print(tf.__version__)",
}


def probe(kind):
    py = venv_python(kind)
    if not os.path.exists(py):
        return None
    r = subprocess.run([py, "-c", PROBE[kind]], capture_output=True, text=True, env=peer_env())
    return r.stdout.strip() if r.returncode == 0 else None


def _pip(py, args):
    return subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + args).returncode


def ensure_peers(name, wanted=PEERS):
    """The peers' venvs (VENVS), made here from PyPI when missing or incomplete; returns
    {peer: why it cannot run} for the peers of `wanted` that cannot. `name` prefixes messages."""
    missing = {}
    for venv, spec in VENVS.items():
        peers = [p for p in spec["peers"] if p in wanted]
        if not peers or all(probe(p) for p in peers):
            continue
        path = os.path.join(ROOT, "build", venv)
        py = os.path.join(path, "bin", "python")
        if os.path.islink(path):
            # A venv shared from another tree (read-mostly): never upgraded in place.
            for p in peers:
                if not probe(p):
                    missing[p] = f"{os.path.relpath(path, ROOT)} (a link to {os.path.realpath(path)}) cannot run it"
            continue
        log(f"{name}: making {os.path.relpath(path, ROOT)} ({', '.join(spec['packages'])} "
            "from PyPI)")
        if not os.path.exists(py):
            r = subprocess.run([sys.executable, "-m", "venv", path])
            if r.returncode != 0:
                for p in peers:
                    missing[p] = "cannot make the venv (Debian package python3-venv?)"
                continue
        if _pip(py, spec["packages"]) != 0:
            log(f"{name}: pip install {' '.join(spec['packages'])} failed (is PyPI reachable?)")
        for p in peers:
            if not probe(p):
                missing[p] = f"{os.path.relpath(path, ROOT)} cannot import it (see pip's messages above)"
    return {p: why for p, why in missing.items() if p in wanted}


def peer_env(kind=None, threads=None):
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)  # BENCHMARKING.md: the peer runs without these
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["OMP_WAIT_POLICY"] = PEER_OMP_WAIT_POLICY
    if kind == "jax" and threads:
        env["XLA_FLAGS"] = jax_thread_flags(threads)
    return env


def peer_versions(tarn, peers=()):
    """tarn's --version and, from each peer's venv, python and its packages' versions; also
    OPENBLAS_CORETYPE as the orchestrator found it (the peers run with it unset)."""
    versions = {"tarn": subprocess.run([tarn, "--version"], capture_output=True, text=True).stdout.strip(),
                "OPENBLAS_CORETYPE_outside": os.environ.get("OPENBLAS_CORETYPE")}
    script = ("import json, platform, importlib.metadata as m\nv={'python': platform.python_version()}\n"
              "for p in ('numpy', 'torch', 'jax', 'jaxlib', 'optax', 'tensorflow-cpu', 'keras', 'scikit-learn', "
              "'threadpoolctl'):\n try:\n  v[p]=m.version(p)\n except Exception: pass\nprint(json.dumps(v))")
    for p in peers:
        r = subprocess.run([venv_python(p), "-c", script], capture_output=True, text=True, env=peer_env())
        if r.returncode == 0:
            versions[PEER_VENV[p]] = json.loads(r.stdout.strip().splitlines()[-1])
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
