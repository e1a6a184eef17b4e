"""tarn serve with TLS and bearer tokens, checked with real clients: curl and Python requests,
each verifying the server against a CA made here with the openssl command. A valid token gets
200, a wrong or missing one 401 (counted in /metrics), a rewritten token file takes effect
without a restart, plain HTTP to the TLS port is refused while others are served, client
certificates are required when a client CA is set, health stays open by the setting, and bad
files are clear errors at start."""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

from conftest import python_with, run
from test_serving import Server, eval_records, exported  # noqa: F401 (a fixture)

GOOD = "tok-3b9f1c2e"
PREDICT = "/v1/models/income:predict"

pytestmark = pytest.mark.skipif(not shutil.which("openssl") or not shutil.which("curl"),
                                reason="the openssl and curl commands are needed "
                                       "(scripts/install-deps installs them)")


def openssl(*args, cwd):
    r = subprocess.run(["openssl", *map(str, args)], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """ca.pem; server.pem/server.key for 127.0.0.1 and client.pem/client.key, signed by it."""
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=tarn test CA", cwd=d)
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    (d / "client.ext").write_text("basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        openssl("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN=tarn test {name}", cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out",
                f"{name}.pem", cwd=d)
    return d


@pytest.fixture(scope="module")
def requests_python():
    """A Python with requests: this one, or a venv under build/ made on first use."""
    return python_with(["requests"], ["requests"], "requests-venv")


def body():
    return json.dumps({"instances": eval_records()[:3]})


def curl(server, path, *args, scheme="https"):
    """(exit code, HTTP status or None, headers text, body) of one curl request."""
    r = subprocess.run(["curl", "-sS", "--max-time", "20", "-D", "-", *args,
                        f"{scheme}://127.0.0.1:{server.port}{path}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return r.returncode, None, r.stderr, ""
    head, _, payload = r.stdout.partition("\n\n")  # text mode: CRLF reads as \n
    while head.startswith("HTTP/1.1 100"):  # curl's Expect: 100-continue for larger bodies
        head, _, payload = payload.partition("\n\n")
    return 0, int(head.split()[1]), head, payload


def post(server, pki, token=None):
    args = ["--cacert", str(pki / "ca.pem"), "-H", "Content-Type: application/json",
            "--data-binary", body()]
    if token is not None:
        args += ["-H", f"Authorization: Bearer {token}"]
    return curl(server, PREDICT, *args)


REQUESTS_SCRIPT = r"""
import json, sys, requests
port, ca, cert, key, calls = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
out = []
for method, path, token, body, with_cert in calls:
    headers = {"Authorization": "Bearer " + token} if token else {}
    try:
        r = requests.request(method, f"https://127.0.0.1:{port}{path}", headers=headers,
                             data=body, verify=ca, cert=(cert, key) if with_cert else None,
                             timeout=20)
        out.append([r.status_code, r.headers.get("WWW-Authenticate"), r.text])
    except requests.exceptions.RequestException as e:
        out.append(["error", type(e).__name__, str(e)])
print(json.dumps(out))
"""


def with_requests(python, server, pki, calls, tmp_path):
    """Each call (method, path, token or None, body or None, with client cert) through
    requests with verify= the CA file: [status, WWW-Authenticate, text] or ["error", ...]."""
    script = tmp_path / "requests_calls.py"
    script.write_text(REQUESTS_SCRIPT)
    r = subprocess.run([python, str(script), str(server.port), str(pki / "ca.pem"),
                        str(pki / "client.pem"), str(pki / "client.key"), json.dumps(calls)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def metric(server, pki, name):
    code, status, _, text = curl(server, "/metrics", "--cacert", str(pki / "ca.pem"),
                                 "-H", f"Authorization: Bearer {GOOD}")
    assert code == 0 and status == 200, text
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


class ServerLog:
    """The stderr lines of a running Server, read on a thread as they come."""

    def __init__(self, server):
        self.server, self.lines, self.seen = server, [], 0
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.server.proc.stderr:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()

    def wait_for(self, text, poke=None, timeout=30):
        """The next line (after those matched before) that holds `text`; poke() is called
        every 0.2 s meanwhile (a request, for what happens on a request's path)."""
        deadline = time.time() + timeout
        while True:
            with self.cond:
                for i in range(self.seen, len(self.lines)):
                    if text in self.lines[i]:
                        self.seen = i + 1
                        return self.lines[i]
                left = deadline - time.time()
                assert left > 0, f"no log line with {text!r} in {self.lines[-10:]}"
                self.cond.wait(min(left, 0.2))
            if poke:
                poke()

    def stop(self):
        self.server.proc.send_signal(signal.SIGTERM)
        code = self.server.proc.wait(timeout=30)
        self.thread.join(timeout=30)
        return code


def replace(path, text):
    """Writes `path` as an operator should: a new file renamed over the old one, so that the
    server never reads half of it."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    tmp.chmod(0o600)
    os.replace(tmp, path)


def tls_server(exported, pki, tokens, *extra):  # noqa: F811
    return Server("--model-base", exported[1], "--name", "income",
                  f"-Dtarn.serving.tls.cert={pki / 'server.pem'}",
                  f"-Dtarn.serving.tls.key={pki / 'server.key'}",
                  f"-Dtarn.serving.auth.token-file={tokens}", *extra)


def test_tokens_over_tls_with_curl_and_requests(exported, pki, requests_python,  # noqa: F811
                                                tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# serving clients\n{GOOD}\n\nother-client-token\n")
    tokens.chmod(0o600)
    server = tls_server(exported, pki, tokens)
    log = ServerLog(server)
    try:
        # curl: valid token 200 with scores; missing and wrong ones 401 with the challenge.
        code, status, _, payload = post(server, pki, GOOD)
        assert (code, status) == (0, 200), payload
        scores = json.loads(payload)["predictions"]
        assert len(scores) == 3 and len({round(s[0], 6) for s in scores}) > 1
        code, status, head, payload = post(server, pki)
        assert status == 401 and "WWW-Authenticate: Bearer" in head, head
        assert "Authorization: Bearer" in json.loads(payload)["error"]
        code, status, head, _ = post(server, pki, "not-" + GOOD)
        assert status == 401 and 'error="invalid_token"' in head, head
        # Without the CA file curl does not trust the server: the certificate is checked.
        r = subprocess.run(["curl", "-sS", "--max-time", "20",
                            f"https://127.0.0.1:{server.port}/v2/health/live"],
                           capture_output=True, text=True)
        assert r.returncode == 60, (r.returncode, r.stderr)

        # Python requests with verify= the CA file.
        got = with_requests(requests_python, server, pki, [
            ["POST", PREDICT, GOOD, body(), False],
            ["POST", PREDICT, None, body(), False],
            ["POST", PREDICT, "wrong", body(), False],
            ["GET", "/v1/models/income", None, None, False],
            ["GET", "/v2/health/ready", None, None, False],   # open by default
            ["GET", "/v2/health/live", None, None, False],
            ["GET", "/v2/models/income/ready", None, None, False],
        ], tmp_path)
        assert got[0][0] == 200 and json.loads(got[0][2])["predictions"] == scores
        assert [g[0] for g in got[1:]] == [401, 401, 401, 200, 200, 200], got
        assert got[1][1] == 'Bearer realm="tarn"'
        # Refused: 1 missing and 1 wrong from curl, 2 missing and 1 wrong from requests.
        assert metric(server, pki, 'tarn_serving_auth_refused_total{reason="missing_token"}') == 3
        assert metric(server, pki, 'tarn_serving_auth_refused_total{reason="invalid_token"}') == 2
        assert metric(server, pki,
                      'tarn_serving_requests_total{endpoint="other",code="401"}') == 5

        # A rewritten token file takes effect without a restart: requests look at it at most
        # once a second.
        replace(tokens, "rotated-token-1\n")
        log.wait_for("read 1 token from", poke=lambda: post(server, pki, GOOD))
        assert post(server, pki, GOOD)[1] == 401
        assert post(server, pki, "rotated-token-1")[1] == 200
        # A file that cannot be parsed keeps the tokens in force, and says why.
        replace(tokens, "rotated-token-2\nhas a space\n")
        line = log.wait_for("cannot reload the token file",
                            poke=lambda: post(server, pki, "rotated-token-1"))
        assert f"{tokens}:2:" in line and "has a space" not in line, line
        assert post(server, pki, "rotated-token-1")[1] == 200
        assert post(server, pki, "rotated-token-2")[1] == 401
        # SIGHUP rereads it at once.
        replace(tokens, "rotated-token-3\n")
        server.proc.send_signal(signal.SIGHUP)
        log.wait_for("SIGHUP")
        log.wait_for("read 1 token from")
        assert post(server, pki, "rotated-token-3")[1] == 200
        assert post(server, pki, "rotated-token-1")[1] == 401
    finally:
        code = log.stop()
    assert code == 0, log.lines[-20:]


def test_plain_http_to_the_tls_port_is_refused(exported, pki, tmp_path):  # noqa: F811
    tokens = tmp_path / "tokens"
    tokens.write_text(GOOD + "\n")
    server = tls_server(exported, pki, tokens)
    try:
        before = metric(server, pki, "tarn_serving_tls_handshake_failures_total")
        for _ in range(3):
            code, status, err, _ = curl(server, PREDICT, "-H", f"Authorization: Bearer {GOOD}",
                                        "--data-binary", body(), scheme="http")
            assert code != 0 and status is None, err  # no HTTP answer at all
        # A client that connects and sends plain text is closed, not left hanging.
        import socket
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as s:
            s.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
            assert b"HTTP/1.1" not in data
        # The server goes on serving TLS clients.
        assert post(server, pki, GOOD)[1] == 200
        assert metric(server, pki, "tarn_serving_tls_handshake_failures_total") == before + 4
    finally:
        code, err = server.stop()
    assert code == 0, err


def test_client_certificates_are_required_with_a_client_ca(exported, pki, requests_python,  # noqa: F811
                                                           tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(GOOD + "\n")
    server = tls_server(exported, pki, tokens, f"-Dtarn.serving.tls.client-ca={pki / 'ca.pem'}")
    try:
        ca = ["--cacert", str(pki / "ca.pem"), "-H", f"Authorization: Bearer {GOOD}"]
        code, status, err, _ = curl(server, "/v2/health/ready", *ca)
        assert code != 0 and status is None, err
        code, status, _, payload = curl(server, "/v2/health/ready", *ca,
                                        "--cert", str(pki / "client.pem"),
                                        "--key", str(pki / "client.key"))
        assert (code, status) == (0, 200), payload
        got = with_requests(requests_python, server, pki, [
            ["POST", PREDICT, GOOD, body(), False],
            ["POST", PREDICT, GOOD, body(), True],
        ], tmp_path)
        assert got[0][0] == "error", got[0]
        assert got[1][0] == 200 and len(json.loads(got[1][2])["predictions"]) == 3
    finally:
        code, err = server.stop()
    assert code == 0, err


def test_health_closed_by_the_setting_and_bad_files_fail_at_start(exported, pki,  # noqa: F811
                                                                  tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(GOOD + "\n")
    server = tls_server(exported, pki, tokens, "-Dtarn.serving.auth.open-health=false")
    try:
        ca = ["--cacert", str(pki / "ca.pem")]
        assert curl(server, "/v2/health/ready", *ca)[1] == 401
        assert curl(server, "/v2/health/ready", *ca, "-H", f"Authorization: Bearer {GOOD}")[1] \
            == 200
    finally:
        code, err = server.stop()
    assert code == 0, err

    def start_fails(*settings):
        r = run("serve", "--model-base", exported[1], "--port", "0", *settings, check=False)
        assert r.returncode != 0
        return r.stderr

    cert, key = f"-Dtarn.serving.tls.cert={pki / 'server.pem'}", \
        f"-Dtarn.serving.tls.key={pki / 'server.key'}"
    missing = tmp_path / "missing.pem"
    err = start_fails(f"-Dtarn.serving.tls.cert={missing}", key)
    assert str(missing) in err and "No such file" in err, err
    err = start_fails(cert, f"-Dtarn.serving.tls.key={pki / 'client.key'}")
    assert "does not match the certificate" in err and str(pki / "client.key") in err, err
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not PEM\n")
    err = start_fails(cert, key, f"-Dtarn.serving.tls.client-ca={garbage}")
    assert str(garbage) in err, err
    err = start_fails(cert)
    assert "tarn.serving.tls.key" in err, err
    err = start_fails(f"-Dtarn.serving.auth.token-file={tmp_path / 'no-tokens'}")
    assert str(tmp_path / "no-tokens") in err, err
