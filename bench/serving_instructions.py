#!/usr/bin/env python3
"""Instructions tarn serve executes per single-row predict request, counted by callgrind.

Usage:  bench/serving_instructions.py TARN [--requests N] [--top N] [--keep-work]

Wall time on a shared, loaded machine is noise; the number of instructions the server runs for
one request is not. This runs `tarn serve --threads 1` with the income model (the 2-epoch
model of bench/_serving.py, trained once under build/bench-work/serving-instructions and
reused) under `valgrind --tool=callgrind`, and for each request kind:
  - v2: KServe v2 `POST /v2/models/income/infer`, one row, one tensor per raw column (BYTES
    for categorical columns, FP64 for numeric ones), as bench/serving_vs_peers.py sends it;
  - v1: TF Serving `POST /v1/models/income:predict`, {"instances": [one raw record]} (every
    value a string, as in the data file), as bench/serving_vs_ceiling.py sends it;
sends a warm-up, zeroes callgrind's counters (callgrind_control -z), sends N requests over one
keep-alive connection, dumps the counters (callgrind_control -d) and prints the server's
instructions per request, and the part of them outside Servable::Score (the network's dense
layers and activations, which this path does not touch): every thread of the server process in user space (HTTP parsing,
routing, decoding, scoring, encoding, metrics; not the kernel's TCP). The top functions of each
dump are printed too (callgrind_annotate), to say where the instructions go.

Valgrind cannot run AVX-512 code: give it a tarn built without -march=native, e.g.
  cmake -S . -B build-cg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTARN_NATIVE=OFF
  cmake --build build-cg -j2 --target tarn
Without -mfma that build calls libm's fmaf and ldexpf in the activations, so Servable::Score
costs far more instructions there than in the native build; compare the figures outside it.
A tarn that valgrind cannot run (the native build), or no valgrind, prints SKIP.
Results: bench/results/serving_instructions.json (the load average is recorded as everywhere,
but instruction counts do not depend on it).
"""
import argparse
import glob
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

import _common
import _serving

NAME = "serving_instructions"
WORK = os.path.join(_common.ROOT, "build", "bench-work", "serving-instructions")
MODEL = "income"


def v2_body(record, inputs):
    tensors = []
    for col, dtype in inputs.items():
        value = record.get(col)
        if dtype == "FP64":
            value = float(value)
        tensors.append({"name": col, "shape": [1], "datatype": dtype, "data": [value]})
    return json.dumps({"inputs": tensors}, separators=(",", ":")).encode()


def total_instructions(path):
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit(f"{NAME}: no totals in {path}")


def annotate(path, inclusive):
    """[(instructions, function)] from callgrind_annotate, most first."""
    r = subprocess.run(["callgrind_annotate", f"--inclusive={inclusive}", "--threshold=100",
                        path], capture_output=True, text=True)
    rows = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(\S.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            rows.append((int(m.group(1).replace(",", "")), m.group(3)))
    return rows


# The thread's entry frames, which callgrind charges the whole dump to.
WRAPPERS = re.compile(r"clone\.S|start_thread|_M_run\(\)|\?\?\?:0x")


def scoring_instructions(path):
    """Instructions inside Servable::Score (the network: normalized rows -> scores)."""
    for ir, fn in annotate(path, "yes"):
        if "tarn::serving::Servable::Score(" in fn:
            return ir
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tarn")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--top", type=int, default=15, help="functions to list per request kind")
    ap.add_argument("--keep-work", action="store_true", help="keep the callgrind dumps")
    _common.add_method_args(ap)
    # bench/run-all passes every benchmark the same options (--rounds, --seconds): a count of
    # instructions has no rounds, so those are accepted and ignored.
    args, _ = ap.parse_known_args()
    tarn = os.path.abspath(args.tarn)
    for tool in ("valgrind", "callgrind_control", "callgrind_annotate"):
        if not shutil.which(tool):
            print(f"SKIP {NAME}: {tool} is not installed (Debian's valgrind package)")
            return 0
    probe = subprocess.run(["valgrind", "--tool=none", "-q", tarn, "--help"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP {NAME}: valgrind cannot run {args.tarn} (built with -march=native? "
              "build one with -DTARN_NATIVE=OFF, see this script's help)")
        return 0
    _common.check_tree(NAME, args)
    base = os.path.join(WORK, "base")
    if not os.path.isdir(base):
        _serving.make_model(NAME, tarn, WORK)
    dumps = os.path.join(WORK, "callgrind")
    shutil.rmtree(dumps, ignore_errors=True)
    os.makedirs(dumps)
    server = _serving.Server(NAME, tarn, ["--model-base", base, "--name", MODEL], 1,
                             pin=["valgrind", "--tool=callgrind", "-q",
                                  f"--callgrind-out-file={dumps}/cg.out"])
    pid = server.proc.pid
    try:
        with urllib.request.urlopen(server.url + f"/v2/models/{MODEL}", timeout=120) as r:
            meta = json.loads(r.read())
        inputs = {i["name"]: i["datatype"] for i in meta["inputs"]}
        record = _serving.raw_records(1)[0]
        kinds = [("v2", f"/v2/models/{MODEL}/infer", v2_body(record, inputs)),
                 ("v1", f"/v1/models/{MODEL}:predict",
                  json.dumps({"instances": [record]}).encode())]
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        headers = {"Content-Type": "application/json"}

        def post(path, body):
            conn.request("POST", path, body, headers)
            resp = conn.getresponse()
            answer = resp.read()
            if resp.status != 200:
                raise SystemExit(f"{NAME}: {path}: {resp.status} {answer[:300]!r}")
            return answer

        results = {}
        for i, (kind, path, body) in enumerate(kinds):
            for _ in range(50):
                post(path, body)
            subprocess.run(["callgrind_control", "-z", str(pid)], check=True,
                           capture_output=True)
            for _ in range(args.requests):
                post(path, body)
            subprocess.run(["callgrind_control", "-d", str(pid)], check=True,
                           capture_output=True)
            dump = None
            for _ in range(100):  # the dump is written asynchronously
                found = sorted(glob.glob(f"{dumps}/cg.out.{i + 1}"))
                if found:
                    dump = found[0]
                    break
                time.sleep(0.1)
            if not dump:
                raise SystemExit(f"{NAME}: callgrind wrote no dump for {kind}")
            time.sleep(0.5)
            total = total_instructions(dump)
            scoring = scoring_instructions(dump)
            results[kind] = {"body_bytes": len(body), "instructions": total,
                             "per_request": total / args.requests,
                             "scoring_per_request": scoring / args.requests,
                             "outside_scoring_per_request": (total - scoring) / args.requests,
                             "dump": dump}
        conn.close()
    finally:
        server.stop()
    lines = [f"{NAME}: tarn serve --threads 1 under callgrind, {args.requests} one-row "
             f"requests per kind"]
    for kind, r in results.items():
        lines.append(f"  {kind}: {r['per_request']:.0f} instructions per request (body "
                     f"{r['body_bytes']} bytes): {r['scoring_per_request']:.0f} in "
                     f"Servable::Score, {r['outside_scoring_per_request']:.0f} outside it "
                     f"(HTTP, decode, normalize, encode)")
    res = {"benchmark": NAME, "requests": args.requests,
           "binary": tarn, "binary_sha256": _common.sha256(tarn),
           "results": {k: {key: v[key] for key in ("body_bytes", "instructions", "per_request",
                                                    "scoring_per_request",
                                                    "outside_scoring_per_request")}
                       for k, v in results.items()}}
    _common.write_results(os.path.join(_common.ROOT, "bench", "results", NAME + ".json"), res,
                          lines)
    print("\n".join(lines))
    for kind, r in results.items():
        print(f"  {kind}: top functions, instructions per request (self)")
        rows = [(ir, fn) for ir, fn in annotate(r["dump"], "no") if not WRAPPERS.search(fn)]
        for ir, fn in rows[:args.top]:
            print(f"    {ir / args.requests:9.0f}  {fn[:110]}")
    if not args.keep_work:
        shutil.rmtree(dumps, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
