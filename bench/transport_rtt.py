#!/usr/bin/env python3
"""Round trips over loopback: gRPC (C++, HTTP/2) versus tarn's framed TCP transport (src/net).

Usage:  bench/transport_rtt.py TARN [--rounds N] [--seconds S] [--sizes 64,4096,...]
                               [--clients 1,2] [--build-dir DIR] [--tls]

What is measured: a unary call that carries SIZE bytes to the server and the same SIZE bytes
back (a gradient push answered with parameters), made back to back by 1 and 2 concurrent
clients, each its own thread with its own TCP connection, for --seconds per run. Server and
client are separate processes on 127.0.0.1:
  grpc  bench/transport/grpc_echo.cpp: gRPC C++ callback server, one channel per client,
        blocking stub calls with a deadline; Debian's libgrpc++ (installed here with apt when
        missing, as root; otherwise SKIP with the command to run).
  tarn  bench/transport/tarn_echo.cpp: net::RpcServer replying with the payload, one
        authenticated net::Dial connection per client, net::RpcClient::Call with a deadline;
        linked against libtarn_net.a and libtarn_common.a of the tarn build folder (the folder
        above TARN's bin/, or --build-dir), which this script brings up to date first.
Both programs are built by bench/transport/CMakeLists.txt into BUILD/transport.
With --tls the two sides are tarn's transport without and with TLS (tarn.cluster.tls: TLS keyed
by the job's secret, the same tarn_echo with TARN_BENCH_TLS=1), and the ratios are TLS over
plain; results go to transport_rtt_tls.json.

Following ../shared/docs/BENCHMARKING.md: the two sides run in the same script, alternating
(grpc tarn, then tarn grpc in the next round), one warm-up round and then --rounds measured
rounds; the summary gives the median of each side and the median of the per-round ratios.
Each client run prints round trips/s (all clients together) and the 50th / 99th percentile
latency of a call; the script adds the CPU time per call of client and server together
(getrusage of the client process, /proc of the server). Every client first compares some
echoed payloads byte for byte; a mismatch fails the benchmark.

Printed: one line per (size, clients) and a table; results in bench/results/transport_rtt.json
(a run with fewer than 5 rounds or other sizes / client counts writes BUILD/transport/ instead).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _common
from _common import add_method_args, check_tree, machine_info, med, write_results

ROOT = Path(__file__).resolve().parent.parent

NAME = "transport_rtt"
SIZES = [64, 4096, 65536, 1 << 20]
CLIENTS = [1, 2]
APT_PACKAGES = ["libgrpc++-dev", "protobuf-compiler-grpc", "protobuf-compiler", "pkg-config"]
TICKS = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"{NAME}: {msg}", flush=True)


def have_grpc():
    if not (shutil.which("protoc") and shutil.which("grpc_cpp_plugin") and
            shutil.which("pkg-config")):
        return False
    return subprocess.run(["pkg-config", "--exists", "grpc++", "protobuf"]).returncode == 0


def ensure_grpc():
    """gRPC's C++ library and code generator, from Debian; returns a reason when absent."""
    if have_grpc():
        return None
    cmd = ["apt-get", "install", "-y", "--no-install-recommends"] + APT_PACKAGES
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "gRPC C++ is not installed; run: sudo " + " ".join(cmd)
    log("installing " + " ".join(APT_PACKAGES) + " with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:  # a stale package list: refresh it once
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0 or not have_grpc():
        return "apt-get install " + " ".join(APT_PACKAGES) + " failed: " + r.stderr[-400:]
    return None


def build(build_dir):
    """Builds tarn's transport libraries and the two echo programs; returns their paths."""
    if (build_dir / "build.ninja").exists() or (build_dir / "Makefile").exists():
        r = subprocess.run(["cmake", "--build", str(build_dir), "--target", "tarn_net",
                            "tarn_common"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
            raise SystemExit(f"{NAME}: building tarn_net in {build_dir} failed")
    out = build_dir / "transport"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    r = subprocess.run(["cmake", "-S", str(ROOT / "bench" / "transport"), "-B", str(out), *gen,
                        "-DCMAKE_BUILD_TYPE=Release", f"-DTARN_BUILD_DIR={build_dir}"],
                       capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run(["cmake", "--build", str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
        raise SystemExit(f"{NAME}: building bench/transport failed")
    return {name: out / f"{name}_echo" for name in ("grpc", "tarn")
            if (out / f"{name}_echo").exists()}


class Server:
    def __init__(self, name, binary, env, extra=()):
        self.name = name
        self.proc = subprocess.Popen([str(binary), "server", *extra], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise SystemExit(f"{NAME}: {name} server did not start: {line}"
                             f"{self.proc.stderr.read()[-2000:]}")
        self.port = int(line.split()[1])

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def client_run(binary, server, size, clients, seconds, env):
    """One client process; its JSON line plus the CPU time per call of both processes."""
    cpu0 = server.cpu_seconds()
    p = subprocess.Popen([str(binary), "client", "--port", str(server.port), "--size", str(size),
                          "--clients", str(clients), "--seconds", str(seconds)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    server_cpu = server.cpu_seconds() - cpu0
    if p.returncode != 0:
        raise SystemExit(f"{NAME}: {server.name} client (size {size}, {clients} clients) "
                         f"failed: {err.decode()[-2000:]}")
    res = json.loads(out.decode())
    res["client_cpu_s"] = usage.ru_utime + usage.ru_stime
    res["server_cpu_s"] = server_cpu
    # The client's CPU includes its connection set-up and check calls; both are small next to
    # a second of calls.
    res["cpu_us_per_call"] = (res["client_cpu_s"] + server_cpu) / res["calls"] * 1e6
    return res


def dpkg_version(package):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                       text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def human_size(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tarn", nargs="?", help="the tarn binary (e.g. build/bin/tarn)")
    ap.add_argument("--rounds", type=int, default=5, help="measured rounds after one warm-up (>= 5)")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds of calls per client run")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="payload bytes, comma-separated")
    ap.add_argument("--clients", default=",".join(map(str, CLIENTS)), help="concurrent clients")
    ap.add_argument("--grpc-api", choices=["callback", "sync"], default="callback",
                    help="gRPC server API (both measured alike here; callback is gRPC's advice)")
    ap.add_argument("--build-dir", default=None, help="tarn build folder (default: TARN's ../)")
    ap.add_argument("--tls", action="store_true",
                    help="compare tarn's transport with TLS on against off (no gRPC)")
    ap.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)  # run-all's
    add_method_args(ap)
    a = ap.parse_args()
    git = check_tree(NAME, a)
    if a.build_dir:
        build_dir = Path(a.build_dir).resolve()
    elif a.tarn:
        build_dir = Path(a.tarn).resolve().parent.parent
    else:
        ap.error("give the tarn binary or --build-dir")
    sizes = [int(s) for s in a.sizes.split(",")]
    client_counts = [int(c) for c in a.clients.split(",")]

    name = NAME + ("_tls" if a.tls else "")
    skipped = {}
    why = None if a.tls else ensure_grpc()
    if why:
        skipped["grpc"] = why
    binaries = build(build_dir)
    if a.tls:
        binaries.pop("grpc", None)
        if "tarn" in binaries:
            binaries["tarn+tls"] = binaries["tarn"]
    if "grpc" not in binaries and "grpc" not in skipped and not a.tls:
        skipped["grpc"] = "grpc_echo was not built (see the cmake warning)"
    if "tarn" not in binaries:
        skipped["tarn"] = (f"tarn_echo was not built: src/net/rpc.h or libtarn_net.a in "
                           f"{build_dir} is missing")
    for side, reason in skipped.items():
        print(f"SKIP {NAME} {side}: {reason}")
    sides = [s for s in ("grpc", "tarn", "tarn+tls") if s in binaries]
    if not sides:
        return 0

    env = dict(os.environ, TARN_BENCH_SECRET=os.urandom(16).hex())
    envs = {side: dict(env, TARN_BENCH_TLS="1" if side == "tarn+tls" else "0") for side in sides}
    load_before = list(os.getloadavg())
    servers = {}
    try:
        for side in sides:
            extra = ["--api", a.grpc_api] if side == "grpc" else []
            servers[side] = Server(side, binaries[side], envs[side], extra)
        configs = [(s, c) for s in sizes for c in client_counts]
        runs = {(side, s, c): [] for side in sides for s, c in configs}
        for rnd in range(a.rounds + 1):  # round 0 is the warm-up
            _common.sample_load("before")
            order = sides if rnd % 2 == 0 else list(reversed(sides))
            for s, c in configs:
                for side in order:
                    r = client_run(binaries[side], servers[side], s, c, a.seconds, envs[side])
                    if rnd > 0:
                        runs[(side, s, c)].append(r)
            log(f"round {rnd}{' (warm-up)' if rnd == 0 else ''} done")
    finally:
        for srv in servers.values():
            srv.stop()

    results = []
    for s, c in configs:
        entry = {"size": s, "clients": c}
        for side in sides:
            rs = runs[(side, s, c)]
            entry[side] = {
                "rounds": rs,
                "rtt_per_s": med([r["rtt_per_s"] for r in rs]),
                "p50_us": med([r["p50_us"] for r in rs]),
                "p99_us": med([r["p99_us"] for r in rs]),
                "cpu_us_per_call": med([r["cpu_us_per_call"] for r in rs]),
            }
        def ratio(key, num, den):  # the median of per-round ratios
            return med([n[key] / d[key] for n, d in zip(num, den)])

        if a.tls and len(sides) == 2:
            p, t = runs[("tarn", s, c)], runs[("tarn+tls", s, c)]
            entry["tls_over_plain_rtt_per_s"] = ratio("rtt_per_s", t, p)
            entry["tls_over_plain_p50"] = ratio("p50_us", t, p)
            entry["tls_over_plain_p99"] = ratio("p99_us", t, p)
            entry["tls_over_plain_cpu_per_call"] = ratio("cpu_us_per_call", t, p)
        elif len(sides) == 2:
            g, t = runs[("grpc", s, c)], runs[("tarn", s, c)]
            entry["tarn_over_grpc_rtt_per_s"] = ratio("rtt_per_s", t, g)
            entry["grpc_over_tarn_p50"] = ratio("p50_us", g, t)
            entry["grpc_over_tarn_p99"] = ratio("p99_us", g, t)
            entry["grpc_over_tarn_cpu_per_call"] = ratio("cpu_us_per_call", g, t)
        results.append(entry)

    def side_text(e, side):
        if side not in e:
            return "n/a"
        x = e[side]
        return (f"{side} {x['rtt_per_s']:.0f} rt/s p50 {x['p50_us']:.0f} us "
                f"p99 {x['p99_us']:.0f} us cpu {x['cpu_us_per_call']:.1f} us/call")

    for e in results:
        line = f"{NAME} {human_size(e['size'])} x{e['clients']}: " + " | ".join(
            side_text(e, side) for side in sides)
        if "tarn_over_grpc_rtt_per_s" in e:
            line += (f" | tarn/grpc {e['tarn_over_grpc_rtt_per_s']:.2f}x rt/s, grpc/tarn "
                     f"{e['grpc_over_tarn_p50']:.2f}x p50, {e['grpc_over_tarn_p99']:.2f}x p99, "
                     f"{e['grpc_over_tarn_cpu_per_call']:.2f}x cpu")
        if "tls_over_plain_rtt_per_s" in e:
            line += (f" | tls/plain {e['tls_over_plain_rtt_per_s']:.2f}x rt/s, "
                     f"{e['tls_over_plain_p50']:.2f}x p50, {e['tls_over_plain_p99']:.2f}x p99, "
                     f"{e['tls_over_plain_cpu_per_call']:.2f}x cpu")
        print(line)

    # The side-by-side table (medians over the measured rounds).
    head = f"{'payload':>8} {'cl':>2} |"
    for side in sides:
        head += f" {side + ' rt/s':>10} {'p50 us':>8} {'p99 us':>8} {'cpu us':>7} |"
    if a.tls and len(sides) == 2:
        head += f" {'rt/s s/p':>8} {'p50 s/p':>7} {'p99 s/p':>7} {'cpu s/p':>7}"
    elif len(sides) == 2:
        head += f" {'rt/s t/g':>8} {'p50 g/t':>7} {'p99 g/t':>7} {'cpu g/t':>7}"
    print(head)
    print("-" * len(head))
    for e in results:
        row = f"{human_size(e['size']):>8} {e['clients']:>2} |"
        for side in sides:
            x = e[side]
            row += (f" {x['rtt_per_s']:>10.0f} {x['p50_us']:>8.1f} {x['p99_us']:>8.1f}"
                    f" {x['cpu_us_per_call']:>7.1f} |")
        if a.tls and len(sides) == 2:
            row += (f" {e['tls_over_plain_rtt_per_s']:>7.2f}x {e['tls_over_plain_p50']:>6.2f}x"
                    f" {e['tls_over_plain_p99']:>6.2f}x {e['tls_over_plain_cpu_per_call']:>6.2f}x")
        elif len(sides) == 2:
            row += (f" {e['tarn_over_grpc_rtt_per_s']:>7.2f}x {e['grpc_over_tarn_p50']:>6.2f}x"
                    f" {e['grpc_over_tarn_p99']:>6.2f}x {e['grpc_over_tarn_cpu_per_call']:>6.2f}x")
        print(row)

    doc = {
        "benchmark": name,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git": git,
        "machine": machine_info(),
        "loadavg_before_after": [load_before, list(os.getloadavg())],
        "settings": {"rounds": a.rounds, "seconds": a.seconds, "sizes": sizes,
                     "grpc_server_api": a.grpc_api, "tls": a.tls,
                     "clients": client_counts, "build_dir": str(build_dir)},
        "versions": {"libgrpc++": dpkg_version("libgrpc++-dev"),
                     "libprotobuf": dpkg_version("libprotobuf-dev")},
        "skipped": skipped,
        "results": results,
    }
    # A short or partial run (fewer rounds, other sizes) does not replace the published results.
    full = a.rounds >= 5 and sizes == SIZES and client_counts == CLIENTS
    res_dir = ROOT / "bench" / "results" if full else build_dir / "transport"
    res_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    write_results(str(res_dir / f"{name}.json"), doc, lines)
    for line in lines:  # the marks ('loaded', 'dirty tree'), if any
        print(line)
    log(f"results in {res_dir / (name + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
