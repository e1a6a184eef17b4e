#!/usr/bin/env python3
"""tarn serve against the same HTTP stack answering a constant (the ceiling), on loopback.

Usage:  bench/serving_vs_ceiling.py TARN [--rounds N] [--seconds S] [--threads N]
                                    [--connections N]

Two servers run side by side for the whole benchmark: `tarn serve --model-base BASE` with a
trained income model (14 raw columns -> 50 tanh -> 1, the 2-epoch model of the example data),
and `tarn serve --constant-response`: the same binary, HTTP server, thread count and
keep-alive, answering every request with a fixed body without parsing or scoring it. Both get
the same POST bodies (raw records from examples/income-estimation EvalSet1).

Per round (alternating tarn, ceiling, tarn, ...; one warm-up round, then --rounds):
  - maximum rate: wrk (Debian's /usr/bin/wrk, closed loop, --connections keep-alive
    connections, one wrk thread) for S seconds on 1-row requests to tarn and to the ceiling,
    and on 32-row requests to tarn. Requests/s and predictions/s.
Then, at a fixed rate of half the median maximum 1-row rate of tarn:
  - single-row latency: bench/serving_loadgen.cpp (built here with g++), open loop over 8
    keep-alive connections; each request's latency runs from when it was due, so a stalled
    server is charged for the requests it delayed. p50/p90/p99/p99.9 per round, for tarn and
    (at the same rate) the ceiling.

TLS on against TLS off (unless --no-tls): a third server, the same model and threads with
`tarn.serving.tls.cert/key` (a self-signed P-256 certificate made here with the openssl
command) and a bearer token file, measured in the same rounds: wrk over https (keep-alive, so
each connection's handshake happens once, at its start) for the 1-row maximum rate, then the
load generator with --tls (handshakes before the clock starts) at half of TLS's own median
maximum, and the plain server at that same rate. Ratios TLS / plain are printed; the TLS side
also checks a bearer token per request, and wrk's TLS costs the shared cores too.

Goals printed beside the figures: tarn's 1-row requests/s >= 50% of the ceiling's, and its p99
at half its maximum rate < 2 ms. The client runs on the same 2 cores as the server.
Results: bench/results/serving_vs_ceiling.json.
"""

import argparse
import json
import os
import secrets
import shutil
import sys
import time

import _common
import _serving
from _common import add_method_args, check_tree, machine_info, med, sha256, write_results
from _serving import Server, handler_histogram, histogram_quantile, loadgen

NAME = "serving_vs_ceiling"
ROOT = _common.ROOT
WORK = os.path.join(ROOT, "build", "bench-work", "serving")


def run(cmd, cwd=None):
    return _serving.run(NAME, cmd, cwd)


def request_bodies():
    records = _serving.raw_records(32)
    one = os.path.join(WORK, "one.json")
    many = os.path.join(WORK, "thirty_two.json")
    json.dump({"instances": records[:1]}, open(one, "w"))
    json.dump({"instances": records}, open(many, "w"))
    return one, many


def wrk(url, body_file, seconds, connections, token=None):
    return _serving.wrk(NAME, WORK, url, body_file, seconds, connections, token)


def make_tls_files():
    """A self-signed certificate for 127.0.0.1 (its own CA for the clients), its key and a
    token file, under WORK/tls: (settings for tarn serve, CA file, token)."""
    d = os.path.join(WORK, "tls")
    os.makedirs(d, exist_ok=True)
    cert, key, tokens = (os.path.join(d, n) for n in ("cert.pem", "key.pem", "tokens"))
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"])
    token = secrets.token_hex(16)
    with open(tokens, "w") as f:
        f.write(token + "\n")
    os.chmod(tokens, 0o600)
    return ([f"-Dtarn.serving.tls.cert={cert}", f"-Dtarn.serving.tls.key={key}",
             f"-Dtarn.serving.auth.token-file={tokens}"], cert, token)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tarn")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--no-tls", action="store_true", help="skip the TLS on/off comparison")
    add_method_args(ap)
    args = ap.parse_args()
    tarn = os.path.abspath(args.tarn)
    if not shutil.which("wrk"):
        print(f"SKIP {NAME}: wrk is not installed (scripts/install-deps installs it)")
        return 0
    if not shutil.which("g++"):
        print(f"SKIP {NAME}: g++ is not installed")
        return 0

    with_tls = not args.no_tls and shutil.which("openssl") is not None
    if not args.no_tls and not with_tls:
        print(f"{NAME}: the openssl command is missing: no TLS comparison")
    git = check_tree(NAME, args)
    ms, base = _serving.make_model(NAME, tarn, WORK)
    one, many = request_bodies()
    binary = _serving.build_loadgen(NAME, WORK)

    tarn_server = Server(NAME, tarn, ["--model-base", base, "--name", "income"], args.threads)
    ceiling = Server(NAME, tarn, ["--constant-response", "--name", "income"], args.threads)
    tls_server, tls = None, None
    if with_tls:
        tls_settings, ca_file, token = make_tls_files()
        tls = (ca_file, token)
        tls_server = Server(NAME, tarn, ["--model-base", base, "--name", "income", *tls_settings],
                            args.threads, scheme="https")
    predict = "/v1/models/income:predict"
    secs = args.seconds
    rounds = []
    try:
        # Agreement: the real server answers with scores, the ceiling with its constant.
        import urllib.request
        req = urllib.request.Request(tarn_server.url + predict, data=open(many, "rb").read(),
                                     headers={"Content-Type": "application/json"})
        answer = json.loads(urllib.request.urlopen(req).read())
        assert len(answer["predictions"]) == 32, answer
        for r in range(args.rounds + 1):
            _common.sample_load("before")
            one_tarn = wrk(tarn_server.url + predict, one, secs, args.connections)
            one_ceiling = wrk(ceiling.url + predict, one, secs, args.connections)
            many_tarn = wrk(tarn_server.url + predict, many, secs, args.connections)
            row = {"round": r, "warmup": r == 0, "one_row_tarn": one_tarn,
                   "one_row_ceiling": one_ceiling, "thirty_two_rows_tarn": many_tarn,
                   "ratio": one_tarn["requests_per_s"] / one_ceiling["requests_per_s"]}
            if tls_server:
                one_tls = wrk(tls_server.url + predict, one, secs, args.connections, tls[1])
                row["one_row_tls"] = one_tls
                row["tls_ratio"] = one_tls["requests_per_s"] / one_tarn["requests_per_s"]
                print(f"  round {r}: TLS + token 1 row {one_tls['requests_per_s']:.0f}/s = "
                      f"{row['tls_ratio'] * 100:.0f}% of plain HTTP", flush=True)
            rounds.append(row)
            _common.sample_load("after")
            print(f"  round {r}{' (warm-up)' if r == 0 else ''}: 1 row {one_tarn['requests_per_s']:.0f}/s"
                  f" (ceiling {one_ceiling['requests_per_s']:.0f}/s, {row['ratio'] * 100:.0f}%),"
                  f" 32 rows {many_tarn['requests_per_s']:.0f}/s "
                  f"= {many_tarn['requests_per_s'] * 32:.0f} predictions/s", flush=True)
        measured = [r for r in rounds if not r["warmup"]]
        max_one = med([r["one_row_tarn"]["requests_per_s"] for r in measured])
        rate = round(max_one / 2)
        latency = []
        for r in range(args.rounds):
            before = handler_histogram(tarn_server.url)
            t = loadgen(binary, tarn_server.port, predict, one, rate, secs, args.connections)
            after = handler_histogram(tarn_server.url)
            # Time inside the server's handler (parse, normalize, batch, score, encode), to
            # tell the server's share of the latency from the network's and the scheduler's.
            t["handler_p50_le_s"] = histogram_quantile(before, after, 0.5)
            t["handler_p99_le_s"] = histogram_quantile(before, after, 0.99)
            c = loadgen(binary, ceiling.port, predict, one, rate, secs, args.connections)
            latency.append({"tarn": t, "ceiling": c})
            print(f"  latency round {r + 1} at {rate}/s: tarn p50 {t['p50_us']:.0f} us, p99 "
                  f"{t['p99_us']:.0f} us, p99.9 {t['p999_us']:.0f} us (handler p50 <= "
                  f"{t['handler_p50_le_s'] * 1e6:.0f} us, p99 <= {t['handler_p99_le_s'] * 1e6:.0f}"
                  f" us; achieved "
                  f"{t['achieved_per_s']:.0f}/s, errors {t['errors']}) | ceiling p50 "
                  f"{c['p50_us']:.0f} us, p99 {c['p99_us']:.0f} us", flush=True)
        # TLS against plain HTTP at half of TLS's own maximum (half plain's would overload it).
        tls_rate = round(med([r["one_row_tls"]["requests_per_s"] for r in measured]) / 2) \
            if tls_server else 0
        for r in range(args.rounds if tls_server else 0):
            s = loadgen(binary, tls_server.port, predict, one, tls_rate, secs, args.connections,
                        tls)
            p = loadgen(binary, tarn_server.port, predict, one, tls_rate, secs, args.connections)
            latency[r]["tls"], latency[r]["plain_at_tls_rate"] = s, p
            print(f"  TLS latency round {r + 1} at {tls_rate}/s: TLS + token p50 {s['p50_us']:.0f}"
                  f" us, p99 {s['p99_us']:.0f} us, p99.9 {s['p999_us']:.0f} us (errors "
                  f"{s['errors']}) | plain p50 {p['p50_us']:.0f} us, p99 {p['p99_us']:.0f} us",
                  flush=True)
    finally:
        code_tarn = tarn_server.stop()
        code_ceiling = ceiling.stop()
        code_tls = tls_server.stop() if tls_server else 0

    summary = {
        "one_row_requests_per_s": max_one,
        "one_row_ceiling_requests_per_s": med(
            [r["one_row_ceiling"]["requests_per_s"] for r in measured]),
        "ratio_to_ceiling": med([r["ratio"] for r in measured]),
        "thirty_two_rows_requests_per_s": med(
            [r["thirty_two_rows_tarn"]["requests_per_s"] for r in measured]),
        "fixed_rate_per_s": rate,
        "p50_us": med([x["tarn"]["p50_us"] for x in latency]),
        "p90_us": med([x["tarn"]["p90_us"] for x in latency]),
        "p99_us": med([x["tarn"]["p99_us"] for x in latency]),
        "p999_us": med([x["tarn"]["p999_us"] for x in latency]),
        "handler_p99_le_us": med([x["tarn"]["handler_p99_le_s"] for x in latency]) * 1e6,
        "ceiling_p50_us": med([x["ceiling"]["p50_us"] for x in latency]),
        "ceiling_p99_us": med([x["ceiling"]["p99_us"] for x in latency]),
        "errors": sum(x["tarn"]["errors"] for x in latency) +
                  sum(r["one_row_tarn"]["non_2xx"] + r["thirty_two_rows_tarn"]["non_2xx"]
                      for r in rounds),
    }
    summary["thirty_two_rows_predictions_per_s"] = summary["thirty_two_rows_requests_per_s"] * 32
    if tls_server:
        summary["tls"] = {
            "one_row_requests_per_s": med([r["one_row_tls"]["requests_per_s"] for r in measured]),
            "ratio_to_plain": med([r["tls_ratio"] for r in measured]),
            "fixed_rate_per_s": tls_rate,
            "p50_us": med([x["tls"]["p50_us"] for x in latency]),
            "p99_us": med([x["tls"]["p99_us"] for x in latency]),
            "p999_us": med([x["tls"]["p999_us"] for x in latency]),
            "plain_p50_us": med([x["plain_at_tls_rate"]["p50_us"] for x in latency]),
            "plain_p99_us": med([x["plain_at_tls_rate"]["p99_us"] for x in latency]),
            "errors": sum(x["tls"]["errors"] + x["plain_at_tls_rate"]["errors"]
                          for x in latency) +
                      sum(r["one_row_tls"]["non_2xx"] for r in rounds),
        }
        t = summary["tls"]
        t["p50_ratio_to_plain"] = t["p50_us"] / t["plain_p50_us"]
        t["p99_ratio_to_plain"] = t["p99_us"] / t["plain_p99_us"]
        summary["errors"] += t["errors"]
    ok_ratio = summary["ratio_to_ceiling"] >= 0.5
    ok_p99 = summary["p99_us"] < 2000
    print(f"{NAME}: 1 row {summary['one_row_requests_per_s']:.0f} req/s = "
          f"{summary['ratio_to_ceiling'] * 100:.0f}% of the ceiling's "
          f"{summary['one_row_ceiling_requests_per_s']:.0f} "
          f"[{'OK' if ok_ratio else 'MISSED'} >= 50%] | 32 rows "
          f"{summary['thirty_two_rows_requests_per_s']:.0f} req/s = "
          f"{summary['thirty_two_rows_predictions_per_s']:.0f} predictions/s | at "
          f"{rate}/s (half max): p50 {summary['p50_us']:.0f} us, p99 {summary['p99_us']:.0f} us, "
          f"p99.9 {summary['p999_us']:.0f} us [{'OK' if ok_p99 else 'MISSED'} p99 < 2 ms] "
          f"(in the handler: p99 <= {summary['handler_p99_le_us']:.0f} us) "
          f"(ceiling at the same rate: p50 {summary['ceiling_p50_us']:.0f} us, p99 "
          f"{summary['ceiling_p99_us']:.0f} us) | errors {summary['errors']}")
    if tls_server:
        t = summary["tls"]
        print(f"{NAME}: TLS + bearer token: 1 row {t['one_row_requests_per_s']:.0f} req/s = "
              f"{t['ratio_to_plain'] * 100:.0f}% of plain HTTP's | at {tls_rate}/s (half TLS's "
              f"max): p50 {t['p50_us']:.0f} us ({t['p50_ratio_to_plain']:.2f}x plain's "
              f"{t['plain_p50_us']:.0f} us), p99 {t['p99_us']:.0f} us "
              f"({t['p99_ratio_to_plain']:.2f}x plain's {t['plain_p99_us']:.0f} us), p99.9 "
              f"{t['p999_us']:.0f} us | keep-alive: one handshake per connection")
    result = {
        "benchmark": NAME, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git": git,
        "machine": machine_info(), "tarn_sha256": sha256(tarn),
        "threads": args.threads, "connections": args.connections, "seconds": secs,
        "rounds": rounds, "latency": latency, "summary": summary,
        "goals": {"ratio_to_ceiling_min": 0.5, "p99_us_max": 2000,
                  "ratio_met": ok_ratio, "p99_met": ok_p99},
        "wrk": _serving.wrk_version(),
    }
    lines = []
    write_results(os.path.join(ROOT, "bench", "results", NAME + ".json"), result, lines)
    for line in lines:  # the marks ('loaded', 'dirty tree'), if any
        print(line)
    if code_tarn != 0 or code_ceiling != 0 or code_tls != 0 or summary["errors"] > 0:
        print(f"{NAME}: a server failed (exit {code_tarn}, {code_ceiling}, {code_tls}) or "
              f"requests failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
