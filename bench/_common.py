"""Helpers shared by the benchmarks under bench/ (not a benchmark itself: run-all skips it)."""
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def git_info():
    def g(*a):
        r = subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    dirty = g("status", "--porcelain", "--untracked-files=no")
    return {"commit": g("rev-parse", "HEAD"), "dirty": bool(dirty) if dirty is not None else None}


def machine_info():
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {"nproc": len(os.sched_getaffinity(0)), "cpu_model": cpu, "mem_total_bytes": mem,
            "kernel": platform.release(), "python": platform.python_version()}


def med(xs):
    return statistics.median(xs)


def parse_time_v(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("Maximum resident set size (kbytes):"):
                out["rss_kb"] = int(line.rsplit(":", 1)[1])
            elif line.startswith("User time (seconds):"):
                out["user_s"] = float(line.rsplit(":", 1)[1])
            elif line.startswith("System time (seconds):"):
                out["sys_s"] = float(line.rsplit(":", 1)[1])
            elif line.startswith("Elapsed (wall clock) time"):
                parts = line.split(": ", 1)[1].strip().split(":")
                secs = 0.0
                for p in parts:
                    secs = secs * 60 + float(p)
                out["time_wall_s"] = secs
    return out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def run_timed(cmd, cwd, time_file, env=None):
    """Runs cmd under /usr/bin/time -v; returns its figures plus wall_s, stdout, stderr and
    returncode (printing the output's tail when it failed)."""
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v", "-o", time_file] + cmd, cwd=cwd, env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
        return {"returncode": r.returncode}
    res = parse_time_v(time_file)
    res.update(wall_s=wall, stdout=r.stdout, stderr=r.stderr, returncode=0)
    return res


def write_results(path, res, lines):
    """Writes res, with the summary lines and the load average at the end, to path as JSON,
    atomically (a temporary file renamed over it)."""
    res["summary_lines"] = lines
    res["load_average_end"] = os.getloadavg()
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def finish(name, results_path, res, lines, binary, binary_sha, ran_a_copy):
    """The benchmarks' closing: a note when `binary` changed during the run (`ran_a_copy`: the
    run used a private copy, so its figures are of the binary as it was at the start), the
    results file (write_results), then every summary line and where the results went."""
    if sha256(binary) != binary_sha:
        lines.append(f"{name} NOTE: {binary} changed during the run; " +
                     ("the figures are of the binary as it was at the start (sha256 in the JSON)"
                      if ran_a_copy else "the figures may mix two builds: rerun for clean ones"))
        res["tarn_binary_changed_during_run"] = True
    write_results(results_path, res, lines)
    print("", flush=True)
    for line in lines:
        print(line, flush=True)
    print(f"{name}: wrote {os.path.relpath(results_path, ROOT)}", flush=True)
