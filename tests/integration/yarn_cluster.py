"""A real HDFS + YARN for the YARN tests: tests/yarn/cluster (MiniDFSCluster + MiniYARNCluster,
Hadoop 3.5.0) started once per test session, bound to localhost.

Use it from a test module with

    from yarn_cluster import yarn_cluster  # noqa: F401  (the fixture)

    def test_x(yarn_cluster):
        yarn_cluster.put_file(local, "/user/me/data.csv")
        run("stats", cwd=ms, env=yarn_cluster.env)

The tests skip, saying why, when Java 17 or Maven is missing, or when TARN_SKIP_YARN is set.
The first run downloads Hadoop's jars from Maven Central into ~/.m2 (later runs are offline).
"""
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = ROOT / "tests" / "yarn" / "cluster"


def skip_reason():
    """Why the YARN tests cannot run here, or None."""
    if os.environ.get("TARN_SKIP_YARN"):
        return "YARN tests skipped: TARN_SKIP_YARN is set"
    missing = [tool for tool in ("java", "javac", "mvn") if shutil.which(tool) is None]
    if missing:
        return ("YARN tests skipped: " + ", ".join(missing) + " not found (they need a Java 17 "
                "JDK and Maven: apt-get install openjdk-17-jdk-headless maven)")
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
        text = out.stderr + out.stdout
        version = text.split('"')[1] if '"' in text else ""
        major = int(version.split(".")[0]) if version and version[0].isdigit() else 0
        if major < 17:
            return f"YARN tests skipped: Hadoop 3.5 needs Java 17 or later, found '{version}'"
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        return f"YARN tests skipped: cannot run java ({e})"
    return None


class MiniCluster:
    """The running cluster: its addresses, and small WebHDFS / REST helpers for tests."""

    def __init__(self, run_dir, conf_dir):
        self.run_dir = Path(run_dir)
        self.conf_dir = Path(conf_dir)
        self.ready = json.loads((self.conf_dir / "ready.json").read_text())
        self.user = self.ready["user"]
        self.default_fs = self.ready["fs.defaultFS"]
        self.namenode_http = self.ready["dfs.namenode.http-address"]
        self.rm_web = self.ready["yarn.resourcemanager.webapp.address"]
        # For tarn: the cluster's configuration, and nothing else from the caller's Hadoop.
        self.env = {"HADOOP_CONF_DIR": str(self.conf_dir), "HADOOP_USER_NAME": self.user}
        # A Kerberized cluster (start --kerberos): its KDC's krb5.conf, the user's principal and
        # keytab, and a ticket cache of the cluster's own (filled by kinit()).
        self.kerberos = self.ready.get("kerberos")
        if self.kerberos:
            self.ccache = f"FILE:{self.run_dir}/krb5cc"
            self.env.update({"KRB5_CONFIG": self.kerberos["krb5_conf"], "KRB5CCNAME": self.ccache})
        # --ha: HDFS is the nameservice ready.json's "ha" names (nn1 standby, nn2 active);
        # namenode_http is the active one's.
        self.ha = self.ready.get("ha")
        # --https: HTTPS_ONLY web ports, certificates signed by conf/ca.pem.
        self.scheme = "http"
        if self.kerberos and self.kerberos.get("https"):
            self.scheme = "https"
            self.ca_file = self.kerberos["ca_file"]
            self.namenode_http = self.kerberos["dfs.namenode.https-address"]
            self.rm_web = self.kerberos["yarn.resourcemanager.webapp.https.address"]

    def kinit(self):
        """Gets the user's ticket from its keytab into the cluster's ticket cache."""
        subprocess.run(["kinit", "-kt", self.kerberos["keytab"], self.kerberos["principal"]],
                       env=dict(os.environ, **self.env), check=True, timeout=60)

    def uri(self, path):
        """hdfs://host:port/path (hdfs://nameservice/path with --ha)"""
        return self.default_fs.rstrip("/") + path

    def token_service(self):
        """The service of an HDFS delegation token for fs.defaultFS, as Java's client sets it:
        ha-hdfs:<nameservice>, else the NameNode's RPC ip:port."""
        if self.ha:
            return "ha-hdfs:" + self.ha["nameservice"]
        return "127.0.0.1:" + self.default_fs.rsplit(":", 1)[1]

    # WebHDFS ----------------------------------------------------------------------------------

    def _url(self, path, op, **params):
        query = {"op": op, **params}
        if not self.kerberos:
            query["user.name"] = self.user
        return (f"{self.scheme}://{self.namenode_http}/webhdfs/v1{urllib.parse.quote(path)}?"
                + urllib.parse.urlencode(query))

    def _request(self, method, url, data=None):
        if self.kerberos:
            return self._spnego_request(method, url, data)
        req = urllib.request.Request(url, data=data, method=method)
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.read()

    def _spnego_request(self, method, url, data):
        """curl --negotiate with the cluster's ticket cache; raises HTTPError on 4xx/5xx."""
        proc = subprocess.run(
            ["curl", "-sS", "--negotiate", "-u", ":", "-X", method, "-o", "-",
             *(["--cacert", self.ca_file] if self.scheme == "https" else []),
             "-w", "\n%{http_code}", *(["--data-binary", "@-"] if data is not None else []), url],
            input=data if data is not None else b"", capture_output=True,
            env=dict(os.environ, **self.env), timeout=60)
        if proc.returncode != 0:
            raise OSError(f"curl {method} {url}: {proc.stderr.decode()}")
        body, _, code = proc.stdout.rpartition(b"\n")
        if int(code) >= 400:
            raise urllib.error.HTTPError(url, int(code), body.decode(errors="replace"), {}, None)
        return body

    def mkdirs(self, path):
        self._request("PUT", self._url(path, "MKDIRS"))

    def put_bytes(self, data, path):
        answer = json.loads(self._request(
            "PUT", self._url(path, "CREATE", overwrite="true", noredirect="true")))
        self._request("PUT", answer["Location"], data=data)

    def put_file(self, local, path):
        self.put_bytes(Path(local).read_bytes(), path)

    def put_tree(self, local_dir, path):
        """Copies a local folder (hidden files too) into HDFS."""
        self.mkdirs(path)
        for f in sorted(Path(local_dir).iterdir()):
            if f.is_dir():
                self.put_tree(f, f"{path}/{f.name}")
            else:
                self.put_file(f, f"{path}/{f.name}")

    def read(self, path):
        return self._request("GET", self._url(path, "OPEN"))

    def status(self, path):
        """GETFILESTATUS, or None when the path does not exist."""
        try:
            return json.loads(self._request("GET", self._url(path, "GETFILESTATUS")))["FileStatus"]
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def list(self, path):
        answer = json.loads(self._request("GET", self._url(path, "LISTSTATUS")))
        return sorted(s["pathSuffix"] for s in answer["FileStatuses"]["FileStatus"])

    # ResourceManager --------------------------------------------------------------------------

    def _rm_url(self, path):
        return (f"{self.scheme}://{self.rm_web}/ws/v1/cluster/{path}" +
                ("" if self.kerberos else f"?user.name={self.user}"))

    def app(self, app_id):
        url = self._rm_url(f"apps/{app_id}")
        return json.loads(self._request("GET", url))["app"]

    def wait_for_am_container(self, app_id, timeout=120):
        """Waits until the application's AM container has been started."""
        deadline = time.monotonic() + timeout
        url = self._rm_url(f"apps/{app_id}/appattempts")
        while True:
            attempts = json.loads(self._request("GET", url)).get("appAttempts") or {}
            listed = attempts.get("appAttempt") or []
            if isinstance(listed, dict):
                listed = [listed]
            if any(a.get("containerId") for a in listed) and self.app(app_id).get("amContainerLogs"):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{app_id} has no AM container after {timeout} s")
            time.sleep(0.5)

    def wait_for_state(self, app_id, states, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            app = self.app(app_id)
            if app["state"] in states:
                return app
            if time.monotonic() > deadline:
                raise AssertionError(f"{app_id} is {app['state']}, not {states}, after {timeout} s")
            time.sleep(0.5)


def start_cluster(run_dir, *extra_args):
    """Starts a cluster in run_dir (tests/yarn/cluster start with extra_args) and returns it."""
    start = time.monotonic()
    proc = subprocess.run(
        [str(CLUSTER_SCRIPT), "start", "--dir", str(run_dir), "--nodemanagers", "2",
         "--owner-pid", str(os.getpid()), *extra_args],
        capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise AssertionError(f"tests/yarn/cluster start failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    line = [x for x in proc.stdout.splitlines() if x.startswith("export HADOOP_CONF_DIR=")]
    assert line, proc.stdout
    cluster = MiniCluster(run_dir, line[0].split("=", 1)[1])
    print(f"\nmini YARN cluster {' '.join(extra_args)} up in {time.monotonic() - start:.1f} s "
          f"({run_dir})")
    return cluster


def stop_cluster(cluster):
    subprocess.run([str(CLUSTER_SCRIPT), "stop", "--dir", str(cluster.run_dir)],
                   capture_output=True, text=True, timeout=120)


def kerberized_cluster(run_dir, *extra_args):
    """A Kerberized cluster (start --kerberos) with the user's ticket in its own cache, for a
    module fixture to yield and stop; skips when the harness, kinit or curl is missing."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    if shutil.which("kinit") is None or shutil.which("curl") is None:
        pytest.skip("Kerberos tests skipped: kinit or curl not found (apt-get install krb5-user "
                    "curl; scripts/install-deps does it)")
    cluster = start_cluster(run_dir, "--kerberos", *extra_args)
    try:
        assert cluster.kerberos, "ready.json has no kerberos section"
        cluster.kinit()
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


_cluster = None
_users = 0


@pytest.fixture(scope="session")
def yarn_cluster(tmp_path_factory):
    """One cluster for the whole session, shared by every module that imports this fixture."""
    global _cluster, _users
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    if _cluster is None:
        _cluster = start_cluster(tmp_path_factory.mktemp("yarn-cluster"))
    _users += 1
    yield _cluster
    _users -= 1
    if _users == 0 and _cluster is not None:
        stop_cluster(_cluster)
        _cluster = None
