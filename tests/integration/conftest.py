"""Shared fixtures for tarn's end-to-end tests: they run the real binary on real files."""
import gzip
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
EXAMPLE = ROOT / "examples" / "income-estimation" / "DataStore"


# tarn train's epoch line (LOCAL and DIST): Shifu's Training / Validation Error, then
# tarn's own losses, the throughput and time, and the bag when there are several.
EPOCH_LINE = re.compile(r"^Epoch #(\d+) Training Error:(\S+) Validation Error:(\S+)\s+"
                        r"\(loss (\S+) valid (\S+), ([\d.]+) samples/s, [^)]*\)(?: bag (\d+))?$",
                        re.M)


def epoch_lines(stdout):
    """Every epoch line of `stdout` as a dict; N/A figures are None."""
    def number(text):
        return None if text == "N/A" else float(text)
    return [{"epoch": int(m.group(1)), "train_error": number(m.group(2)),
             "valid_error": number(m.group(3)), "train_loss": number(m.group(4)),
             "valid_loss": number(m.group(5)), "samples_per_s": float(m.group(6)),
             "bag": int(m.group(7) or 0)} for m in EPOCH_LINE.finditer(stdout)]


def tarn_bin():
    return os.environ.get("TARN_BIN", str(ROOT / "build" / "bin" / "tarn"))


def run(*args, cwd=None, check=True, env=None):
    """Runs tarn; returns the CompletedProcess (stdout/stderr as text)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([tarn_bin(), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env=full_env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"tarn {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def shared_or_skip(relative):
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"../shared is absent: {path} not found")
    return path


def edit_config(model_set, **changes):
    """Applies {"dataSet.dataPath": value, ...} to ModelConfig.json."""
    path = Path(model_set) / "ModelConfig.json"
    mc = json.loads(path.read_text())
    for key, value in changes.items():
        node = mc
        parts = key.split(".")
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[parts[-1]] = value
    path.write_text(json.dumps(mc, indent=2))
    return mc


# The income example's eval set, as ModelConfig.json keys for edit_config.
INCOME_EVAL_SET = {
    "evals.0.dataSet.dataPath": str(EXAMPLE / "EvalSet1"),
    "evals.0.dataSet.headerPath": str(EXAMPLE / "EvalSet1" / ".pig_header"),
    "evals.0.dataSet.targetColumnName": "Target",
    "evals.0.dataSet.posTags": [">50K"], "evals.0.dataSet.negTags": ["<=50K"]}


def make_income_model_set(tmp_path, name="income"):
    run("new", name, cwd=tmp_path)
    ms = tmp_path / name
    edit_config(ms, **{
        "dataSet.dataPath": str(EXAMPLE / "DataSet1"),
        "dataSet.headerPath": str(EXAMPLE / "DataSet1" / ".pig_header"),
        "dataSet.targetColumnName": "Target",
        "dataSet.posTags": [">50K"],
        "dataSet.negTags": ["<=50K"],
    })
    return ms


def income_with_hashed_column(tmp_path, name, norm_type, column, buckets, **config):
    """The income model set through init and stats, `column` hashed into `buckets` ids (its
    ColumnConfig.json hashSeed, set after init as a user would; 0 leaves it unhashed), with
    normalize.normType `norm_type` and the ModelConfig.json changes `config`."""
    ms = make_income_model_set(tmp_path, name)
    edit_config(ms, **{"normalize.normType": norm_type, **config})
    run("init", cwd=ms)
    cols = columns(ms)
    for c in cols:
        if c["columnName"] == column:
            c["hashSeed"] = buckets
    (ms / "ColumnConfig.json").write_text(json.dumps(cols, indent=2))
    run("stats", cwd=ms)
    return ms


HEADER = "id|color|size|label\n"


def small_model_set(tmp_path, rows, header=HEADER, name="bad", gz=False):
    data = tmp_path / f"{name}-data"
    data.mkdir()
    (data / ".pig_header").write_text(header)
    text = "".join(rows)
    if gz:
        with gzip.open(data / "part-00000.gz", "wt") as f:
            f.write(text)
    else:
        (data / "part-00000").write_text(text)
    run("new", name, cwd=tmp_path)
    ms = tmp_path / name
    edit_config(ms, **{"dataSet.dataPath": str(data), "dataSet.headerPath": str(data / ".pig_header"),
                       "dataSet.targetColumnName": "label", "dataSet.posTags": ["1"],
                       "dataSet.negTags": ["0"]})
    return ms


def good_rows(n, start=0):
    colors = ["red", "blue", "green"]
    return [f"{i}|{colors[i % 3]}|{(i * 7) % 100}|{int((i * 7) % 100 > 50)}\n"
            for i in range(start, start + n)]


@pytest.fixture
def income(tmp_path):
    return make_income_model_set(tmp_path)


def columns(model_set):
    return json.loads((Path(model_set) / "ColumnConfig.json").read_text())


def _shard_parts(path):
    """A tarn shard (src/data/shard.h): header dict, float rows, id rows (empty below version 3)."""
    data = Path(path).read_bytes()
    assert data[:8] == b"TARNSHRD"
    version, json_len, rows, fpr, _crc, _hcrc, ids_per_row = struct.unpack_from("<IIQIIII", data, 8)
    assert version in (1, 2, 3)  # 2: some feature marks category indices; 3: id columns
    header = json.loads(data[40:40 + json_len])
    offset = (40 + json_len + 63) // 64 * 64
    float_end = offset + rows * fpr * 4
    floats = struct.unpack_from(f"<{rows * fpr}f", data, offset)
    float_rows = [list(floats[i * fpr:(i + 1) * fpr]) for i in range(rows)]
    if version < 3:
        assert len(data) == float_end
        return header, float_rows, []
    assert ids_per_row == len(header["idColumns"])
    id_offset = (float_end + 63) // 64 * 64
    assert len(data) == id_offset + rows * ids_per_row * 4 + 4  # ids, then their CRC-32C
    ids = struct.unpack_from(f"<{rows * ids_per_row}I", data, id_offset)
    return header, float_rows, [list(ids[i * ids_per_row:(i + 1) * ids_per_row])
                                for i in range(rows)]


def read_shard(path):
    """Parses a tarn shard: (header dict, rows as lists of floats)."""
    header, rows, _ids = _shard_parts(path)
    return header, rows


def read_shard_ids(path):
    """The id columns of a tarn shard: (header dict, rows as lists of integer ids)."""
    header, _rows, ids = _shard_parts(path)
    return header, ids


def model_file_header(path):
    """The JSON header of a tarn model file (src/model/model_file.h)."""
    data = Path(path).read_bytes()
    assert data[:8] == b"TARNMODL"
    _version, json_len = struct.unpack_from("<II", data, 8)
    return json.loads(data[24:24 + json_len])


def model_file_params(path):
    """The float32 parameters of a tarn model file (src/model/model_file.h), as bytes."""
    data = Path(path).read_bytes()
    _version, json_len, count = struct.unpack_from("<IIQ", data, 8)
    return data[24 + json_len:24 + json_len + 4 * count]


def read_gzip_lines(path):
    with gzip.open(path, "rt") as f:
        return f.read().splitlines()


def _can_import(python, modules):
    try:
        probe = subprocess.run([str(python), "-c", "import " + ", ".join(modules)],
                               capture_output=True, timeout=120)
    except (subprocess.SubprocessError, OSError):
        return False
    return probe.returncode == 0


def python_with(modules, packages, venv_name):
    """A Python that imports `modules`: this one, or build/<venv_name> made on first use and
    filled by pip with `packages` (from PyPI). Skips the test, saying why, when that fails."""
    if _can_import(sys.executable, modules):
        return sys.executable
    venv = ROOT / "build" / venv_name
    python = venv / "bin" / "python"
    if not _can_import(python, modules):
        try:
            if not python.exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                               capture_output=True, text=True, timeout=300)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "--retries", "2",
                            "--timeout", "30", *packages],
                           check=True, capture_output=True, text=True, timeout=900)
        except (subprocess.SubprocessError, OSError) as e:
            detail = getattr(e, "stderr", "") or ""
            pytest.skip(f"{' and '.join(packages)} not available (pip install into {venv} "
                        f"failed: {e}{' ' + detail[-300:] if detail else ''})")
        if not _can_import(python, modules):
            pytest.skip(f"{', '.join(modules)} not importable from {python}")
    return str(python)
