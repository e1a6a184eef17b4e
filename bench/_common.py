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
# The benchmarks' own outputs: writing them does not make the tree the code ran from dirty.
RESULTS_DIR = "bench/results/"
MIN_ROUNDS = 5  # BENCHMARKING.md: at least 5 measured rounds after a warm-up


def git_info():
    """The commit HEAD names and whether tracked files differ from it (bench/results/ aside)."""
    def g(*a):
        r = subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None
    status = g("status", "--porcelain", "--untracked-files=no")  # lines "XY path"
    changed = None
    if status is not None:
        changed = [line[3:] for line in status.splitlines() if line and not line[3:].startswith(RESULTS_DIR)]
    commit = g("rev-parse", "HEAD")
    return {"commit": commit.strip() if commit else None, "dirty": bool(changed) if changed is not None else None,
            "changed_files": changed}


def add_method_args(ap):
    """The options every benchmark shares (see check_tree)."""
    ap.add_argument("--allow-dirty", action="store_true",
                    help="run from a tree with uncommitted changes; the results say 'dirty tree'")


def check_tree(name, args):
    """Results come from a clean tree at a named commit: exits when tracked files differ from
    HEAD, unless --allow-dirty, which marks the results 'dirty tree'. Returns git_info()."""
    info = git_info()
    if info["commit"] is None:
        info["dirty"] = True  # no commit names the code: as good as dirty
    if info["dirty"] and not getattr(args, "allow_dirty", False):
        print(f"{name}: error: uncommitted changes in {', '.join(info['changed_files'] or ['(not a git tree)'])}: "
              "commit them (results name the commit they ran) or pass --allow-dirty (marked 'dirty tree')",
              file=sys.stderr, flush=True)
        sys.exit(1)
    if info["dirty"]:
        print(f"{name}: WARNING: dirty tree: the results are marked as such", flush=True)
    return info


def check_rounds(name, args):
    """At least MIN_ROUNDS measured rounds; fewer only in a development run (--allow-dirty),
    whose results say 'fewer than 5 rounds' (write_results)."""
    if args.rounds < MIN_ROUNDS and not getattr(args, "allow_dirty", False):
        print(f"{name}: error: --rounds must be at least {MIN_ROUNDS} (BENCHMARKING.md); fewer only with "
              "--allow-dirty (a development run, marked)", file=sys.stderr, flush=True)
        sys.exit(1)
    return args.rounds


# The 1-minute load average before and after every command run_timed runs, in order.
LOAD_SAMPLES = []


def sample_load(when):
    LOAD_SAMPLES.append({"when": when, "time": time.time(), "load": list(os.getloadavg())})
    return LOAD_SAMPLES[-1]["load"]


def load_state():
    """The load averages this process saw and whether the machine was loaded: the 1-minute load
    average above the number of cores before some command, i.e. other jobs were waiting for a
    core while the benchmark started a command (its own commands use at most every core)."""
    cores = len(os.sched_getaffinity(0))
    before = [s["load"][0] for s in LOAD_SAMPLES if s["when"] == "before"]
    after = [s["load"][0] for s in LOAD_SAMPLES if s["when"] == "after"]
    allv = before + after
    return {"cores": cores, "loaded_above": cores,
            "loaded": bool(before) and max(before) > cores,
            "load1_before_min": min(before) if before else None,
            "load1_before_max": max(before) if before else None,
            "load1_before_median": statistics.median(before) if before else None,
            "load1_min": min(allv) if allv else None, "load1_max": max(allv) if allv else None,
            "commands": len(before)}


def ratios_per_round(num, den):
    """num[i] / den[i] for each measured round, and their median (BENCHMARKING.md: the median
    of the per-round ratios, not the ratio of the medians)."""
    if len(num) != len(den) or not num:
        raise ValueError(f"ratios_per_round: {len(num)} and {len(den)} rounds")
    r = [a / b for a, b in zip(num, den)]
    return r, statistics.median(r)


_PEAK = {}


def peak_flops(threads=2, seconds=1.5):
    """The machine's fp32 peak, measured by bench/peak_flops.cpp (built here into
    build/bench-bin/ with the system C++ compiler when missing or older than its source):
    {isa, gflops_1_thread, gflops_all_threads, ...}, per second of CPU time, which a loaded
    machine does not lower; None (with a message) when it cannot be built."""
    if threads in _PEAK:
        return _PEAK[threads]
    src = os.path.join(ROOT, "bench", "peak_flops.cpp")
    exe = os.path.join(ROOT, "build", "bench-bin", "peak_flops")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        cxx = os.environ.get("CXX", "c++")
        r = subprocess.run([cxx, "-O2", "-std=c++20", "-pthread", "-o", exe + ".tmp", src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"peak_flops: cannot build {src} with {cxx}: {r.stderr[-2000:]}", file=sys.stderr)
            return None
        os.replace(exe + ".tmp", exe)
    r = subprocess.run([exe, "--threads", str(threads), "--seconds", str(seconds)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"peak_flops: {exe} failed: {r.stderr.strip()}", file=sys.stderr)
        return None
    _PEAK[threads] = json.loads(r.stdout)
    return _PEAK[threads]


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
    load_before = sample_load("before")
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v", "-o", time_file] + cmd, cwd=cwd, env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    load_after = sample_load("after")
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
        return {"returncode": r.returncode}
    res = parse_time_v(time_file)
    res.update(wall_s=wall, stdout=r.stdout, stderr=r.stderr, returncode=0,
               load_before=load_before, load_after=load_after)
    return res


def write_results(path, res, lines):
    """The one writer of bench/results: res, with the summary lines, the commit, the load
    averages (load_state) and the marks 'loaded' / 'dirty tree' (also appended to the summary
    lines, the output a reader sees), to path as JSON, atomically (a temporary file renamed
    over it)."""
    res.setdefault("git", git_info())
    res["load_average_end"] = os.getloadavg()
    sample_load("end")
    load = load_state()
    res["load"] = load
    res["load_samples"] = LOAD_SAMPLES
    marks = []
    if load["loaded"]:
        marks.append(f"loaded: 1-min load average {load['load1_before_min']:.1f}-"
                     f"{load['load1_before_max']:.1f} (median {load['load1_before_median']:.1f}) "
                     f"before the commands on {load['cores']} cores")
    if res["git"].get("dirty"):
        marks.append("dirty tree")
    if isinstance(res.get("rounds"), int) and res["rounds"] < MIN_ROUNDS:
        marks.append(f"fewer than {MIN_ROUNDS} rounds ({res['rounds']})")
    res["marks"] = marks
    if marks:
        name = res.get("benchmark") or res.get("name") or os.path.basename(path).split(".")[0]
        lines.append(f"{name} MARKED: " + "; ".join(marks) +
                     f" (commit {(res['git'].get('commit') or 'none')[:12]})")
    res["summary_lines"] = lines
    os.makedirs(os.path.dirname(path), exist_ok=True)
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
