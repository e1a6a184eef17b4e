"""tarn on a Kerberized HDFS + YARN (tests/yarn/cluster start --kerberos: a KDC in the harness,
Kerberos RPC, SPNEGO on every web port), with HDFS as an HA nameservice whose first NameNode is
the standby (--ha) and delegation tokens that expire 15 s after their last renewal
(--token-renew-interval-s): the steps read HDFS by SPNEGO, a job runs on delegation tokens only
for longer than that (the ResourceManager renews them), and a missing or expired ticket, or a
forged, cancelled or expired token, is a clear error."""
import base64
import json
import os
import re
import shutil
import struct
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import EXAMPLE, edit_config, make_income_model_set, run, tarn_bin
from test_yarn_train import CATEGORICAL, PARAMS, YARN, processes, wait_for_line
from yarn_cluster import kerberized_cluster, stop_cluster

# Enough that the job outlives RENEW_S (its tokens must be renewed; 16 epochs took 23 s on a
# 2-core machine) and that worker 0 is still training when the test kills it after epoch 2.
EPOCHS = 24
# dfs.namenode.delegation.token.renew-interval of the module's cluster: a token nobody renews
# is refused after it, a job's tokens are renewed by the ResourceManager.
RENEW_S = 15


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    """One Kerberized HA cluster for the module, with the user's ticket in its own cache."""
    # Aggregated logs as gz TFiles (the plain harness's are uncompressed).
    cluster = kerberized_cluster(tmp_path_factory.mktemp("krb-cluster"), "--ha",
                                 "--token-renew-interval-s", str(RENEW_S),
                                 "-Dyarn.nodemanager.log-aggregation.compression-type=gz")
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture(scope="module")
def model_set(tmp_path_factory, secure):
    """The Adult table in HDFS; init, stats and norm read it there through SPNEGO."""
    base = tmp_path_factory.mktemp("krb-train")
    ms = make_income_model_set(base, "income")
    hdfs = f"/user/{secure.user}/adult"
    secure.put_tree(EXAMPLE / "DataSet1", hdfs + "/DataSet1")
    secure.put_bytes(("\n".join(CATEGORICAL) + "\n").encode(), hdfs + "/categorical.names")
    edit_config(ms, **{
        "dataSet.dataPath": secure.uri(hdfs + "/DataSet1"),
        "dataSet.headerPath": secure.uri(hdfs + "/DataSet1/.pig_header"),
        "dataSet.categoricalColumnNameFile": secure.uri(hdfs + "/categorical.names"),
        "train.algorithm": "TensorFlow", "train.params": PARAMS, "train.numTrainEpochs": EPOCHS,
        "basic.runMode": "DIST"})
    for step in (["init"], ["stats"], ["norm", "-shuffle", "-Dshifu.norm.shuffle.size=2"]):
        run(*step, cwd=ms, env=secure.env)
    columns = json.loads((ms / "ColumnConfig.json").read_text())
    assert {c["columnName"]: c["columnType"] for c in columns}["Education"] == "C"
    assert any(c.get("columnStats", {}).get("ks") for c in columns)
    return ms


def no_ticket(secure, tmp_path):
    """The cluster's environment with an empty ticket cache (kdestroy'd)."""
    return dict(secure.env, KRB5CCNAME=f"FILE:{tmp_path}/no-ticket-cache")


# Hadoop's Writable encodings, for a credentials file the test writes itself.
def read_vint(data, pos):
    first = struct.unpack("b", data[pos:pos + 1])[0]
    if first >= -112:
        return first, pos + 1
    n = (-119 - first) if first < -120 else (-111 - first)
    value = int.from_bytes(data[pos + 1:pos + 1 + n], "big")
    return (~value if first < -120 else value), pos + 1 + n


def write_vint(v):
    if -112 <= v <= 127:
        return struct.pack("b", v)
    raw = v.to_bytes((v.bit_length() + 7) // 8, "big")
    return struct.pack("b", -112 - len(raw)) + raw


def decode_token(url_string):
    data = base64.urlsafe_b64decode(url_string + "=" * (-len(url_string) % 4))
    fields, pos = [], 0
    for _ in range(4):  # identifier, password, kind, service
        n, pos = read_vint(data, pos)
        fields.append(data[pos:pos + n])
        pos += n
    return fields


def credentials_file(path, tokens):
    """An HDTS version 0 file of (alias, [identifier, password, kind, service]) tokens."""
    out = b"HDTS\x00" + write_vint(len(tokens))
    for alias, fields in tokens:
        for f in [alias.encode(), *fields]:
            out += write_vint(len(f)) + f
    path.write_bytes(out + write_vint(0))
    return path


def delegation_token(secure):
    """A token for fs.defaultFS that the user may renew (the ResourceManager never does)."""
    answer = json.loads(secure._request("GET", secure._url(
        "/", "GETDELEGATIONTOKEN", renewer=secure.kerberos["principal"],
        kind="HDFS_DELEGATION_TOKEN", service=secure.token_service())))
    return answer["Token"]["urlString"]


def token_file(path, token):
    """A credentials file holding `token` aliased by its service, as a container gets it."""
    fields = decode_token(token)
    return str(credentials_file(path, [(fields[3].decode(), fields)]))


def test_steps_read_hdfs_by_spnego_and_fail_clearly_without_a_ticket(model_set, secure,
                                                                      tmp_path):
    ms = tmp_path / "income"
    shutil.copytree(model_set, ms)
    proc = run("stats", cwd=ms, env=no_ticket(secure, tmp_path), check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    err = proc.stderr
    assert "no valid Kerberos ticket" in err, err
    assert "kinit" in err and "tarn.kerberos.keytab" in err, err
    assert "GSS major" in err, err
    # The keytab settings log in without any ticket cache.
    proc = run("yarn", "list", f"-Dtarn.kerberos.principal={secure.kerberos['principal']}",
               f"-Dtarn.kerberos.keytab={secure.kerberos['keytab']}",
               env=no_ticket(secure, tmp_path))
    assert "APPLICATION" in proc.stdout
    # A keytab without the principal it holds is refused before any request.
    bad = run("yarn", "list", f"-Dtarn.kerberos.keytab={secure.kerberos['keytab']}",
              env=no_ticket(secure, tmp_path), check=False)
    assert bad.returncode != 0 and "tarn.kerberos.principal" in bad.stderr, bad.stderr
    # Simple authentication (user.name) is refused by the secured NameNode.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://{secure.namenode_http}/webhdfs/v1/?op=LISTSTATUS"
                               f"&user.name={secure.user}", timeout=30)
    assert refused.value.code == 401


def test_a_delegation_token_alone_reaches_hdfs_and_a_forged_cancelled_or_expired_one_is_refused(
        model_set, secure, tmp_path):
    """What a container sees: no Kerberos ticket, only $HADOOP_TOKEN_FILE_LOCATION, on the HA
    nameservice whose standby is tried first."""
    ms = tmp_path / "income"
    shutil.copytree(model_set, ms)
    to_expire = delegation_token(secure)  # left unrenewed while the checks below run
    issued = time.monotonic()
    token = delegation_token(secure)
    identifier, password, kind, service = decode_token(token)
    assert kind == b"HDFS_DELEGATION_TOKEN" and service == b"ha-hdfs:minidfs-ns", service
    env = dict(no_ticket(secure, tmp_path),
               HADOOP_TOKEN_FILE_LOCATION=token_file(tmp_path / "good.tokens", token))
    # Every WebHDFS call by delegation=, no SPNEGO; the standby nn1 cannot check the token and
    # tarn moves on to nn2.
    proc = run("stats", cwd=ms, env=env)
    standby, active = (n["http"] for n in secure.ha["namenodes"])
    assert f"NameNode {standby} of hdfs://minidfs-ns is in standby; trying {active}" in \
        proc.stderr, proc.stderr

    forged = bytes(b ^ 0x5A for b in password)
    env["HADOOP_TOKEN_FILE_LOCATION"] = str(credentials_file(
        tmp_path / "forged.tokens", [(service.decode(), [identifier, forged, kind, service])]))
    proc = run("stats", cwd=ms, env=env, check=False)
    assert proc.returncode == 1
    assert "HDFS refused the delegation token" in proc.stderr, proc.stderr
    assert "InvalidToken" in proc.stderr or "token" in proc.stderr.lower()

    secure._request("PUT", secure._url("/", "CANCELDELEGATIONTOKEN", token=token))
    env["HADOOP_TOKEN_FILE_LOCATION"] = str(tmp_path / "good.tokens")
    proc = run("stats", cwd=ms, env=env, check=False)
    assert proc.returncode == 1
    assert "HDFS refused the delegation token" in proc.stderr, proc.stderr

    # Past its renew interval, unrenewed: the NameNode says it expired.
    time.sleep(max(0.0, RENEW_S + 2 - (time.monotonic() - issued)))
    env["HADOOP_TOKEN_FILE_LOCATION"] = token_file(tmp_path / "expired.tokens", to_expire)
    proc = run("stats", cwd=ms, env=env, check=False)
    assert proc.returncode == 1
    assert "HDFS refused the delegation token" in proc.stderr, proc.stderr
    assert "has expired" in proc.stderr, proc.stderr


def test_an_expired_ticket_is_a_clear_error_naming_the_principal(secure, tmp_path):
    cache = f"FILE:{tmp_path}/short-lived"
    env = dict(secure.env, KRB5CCNAME=cache)
    principal = secure.kerberos["principal"]
    # The harness KDC refuses lifetimes of a few seconds ("too short"); 8 s it gives.
    subprocess.run(["kinit", "-l", "8s", "-kt", secure.kerberos["keytab"], principal],
                   env=dict(os.environ, **env), check=True, timeout=60)
    time.sleep(9)
    proc = run("yarn", "list", env=env, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"no valid Kerberos ticket for {principal}" in proc.stderr, proc.stderr
    assert "expired" in proc.stderr, proc.stderr
    assert f"run `kinit {principal}`" in proc.stderr, proc.stderr


def test_train_on_the_secured_cluster_survives_a_killed_worker(model_set, secure, tmp_path):
    ms = tmp_path / "income"
    shutil.copytree(model_set, ms)
    # One more file system for the job's tokens: nn2 by its own RPC address (the active one).
    active_rpc_port = secure.ha["namenodes"][1]["rpc"].rsplit(":", 1)[1]
    extra = f"-Dtarn.yarn.hdfs-servers=hdfs://localhost:{active_rpc_port}"
    # Every message to the parameter server 3 ms late: the job then trains for longer than the
    # renew interval however fast the machine is (24 epochs of about 130 pushes a worker).
    slow = "-Dtarn.net.test-delay-ms=3"
    proc = subprocess.Popen([tarn_bin(), "train", *YARN, extra, slow], cwd=ms,
                            env=dict(os.environ, **secure.env),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = []
    wait_for_line(proc, r"^Epoch #2 ", lines, timeout=300)
    victims = processes("node", "--role", "worker", "--index", "0")
    assert victims, "no worker container:\n" + "".join(lines)
    for pid in victims:
        os.kill(pid, 9)
    out, _ = proc.communicate(timeout=400)
    out = "".join(lines) + out
    assert proc.returncode == 0, out
    assert re.search(rf"^Epoch #{EPOCHS} ", out, re.M), out  # trained on to the end
    assert re.search(r"YARN application application_\d+_\d+: FINISHED SUCCEEDED", out), out
    # Fetched at submission, one per file system: the HA nameservice (staging folder and
    # data) and the NameNode named by tarn.yarn.hdfs-servers.
    assert "HDFS delegation token for ha-hdfs:minidfs-ns" in out, out
    assert f"HDFS delegation token for 127.0.0.1:{active_rpc_port}" in out, out
    app_id = re.search(r"submitted YARN application (application_\d+_\d+)", out).group(1)
    # It ran past its tokens' renew interval: the ResourceManager renewed them.
    elapsed_s = secure.app(app_id)["elapsedTime"] / 1000
    print(f"the secured job ran {elapsed_s:.1f} s; its tokens' renew interval is {RENEW_S} s")
    assert elapsed_s > RENEW_S, f"the job took {elapsed_s} s, not longer than {RENEW_S} s"
    # The model is in HDFS (written by a container with the delegation token only) and back.
    root = f"/user/{secure.user}/.tarn/staging/modelsets"
    home = [d for d in secure.list(root) if d.startswith("income-")]
    assert home and secure.list(f"{root}/{home[0]}/models") == ["model0.tarn"]
    assert (ms / "models" / "model0.tarn").stat().st_size > 0
    # The application runs as the Kerberos principal's short name.
    assert secure.app(app_id)["user"] == secure.user
    status = run("yarn", "status", app_id, env=secure.env).stdout
    assert "SUCCEEDED" in status, status
    # Finished: its NodeManagers uploaded the containers' logs to HDFS (log aggregation, gz
    # TFiles here), where tarn reads them by SPNEGO: the AM's stdout and stderr, then a worker's.
    logs = run("yarn", "logs", app_id, env=secure.env).stdout
    am = app_id.replace("application", "container") + "_01_000001"
    assert f"Container: {am} on localhost:" in logs, logs[:3000]
    assert "LogAggregationType: AGGREGATED" in logs, logs[:3000]
    assert "LogType:stdout\n" in logs and "LogType:stderr\n" in logs, logs[:3000]
    assert re.search(r"LogType:stderr\nLogLastModifiedTime:.*\nLogLength:[1-9]", logs), logs[:3000]
    nodes = json.loads((ms / "tmp" / "cluster.json").read_text())["nodes"]
    worker = next(n["where"] for n in nodes if n["role"] == "worker")
    logs = run("yarn", "logs", app_id, "--container", worker, "--file", "all",
               env=secure.env).stdout
    assert f"Container: {worker} on localhost:" in logs, logs[:3000]
    assert "LogType:launch_container.sh" in logs and "LogType:stderr" in logs, logs[:3000]
    denied = run("yarn", "logs", app_id, env=no_ticket(secure, tmp_path), check=False)
    assert denied.returncode == 1 and "no valid Kerberos ticket" in denied.stderr, denied.stderr
    # Without a ticket the RM refuses to say anything, and tarn says why.
    denied = run("yarn", "status", app_id, env=no_ticket(secure, tmp_path), check=False)
    assert denied.returncode == 1 and "no valid Kerberos ticket" in denied.stderr, denied.stderr


def test_yarn_kill_on_the_secured_cluster(secure):
    out = run("yarn", "submit", "--name", "krb-sleeper", "--memory", "256", "--", "sleep",
              "600", env=secure.env).stdout
    app_id = re.search(r"application_\d+_\d+", out).group(0)
    # A started AM container means the NodeManager localized the staged binary with the
    # delegation token (the state stays ACCEPTED: `sleep` never registers as an AM).
    secure.wait_for_am_container(app_id, timeout=120)
    killed = run("yarn", "kill", app_id, env=secure.env).stdout
    assert "KILLED" in killed, killed
    assert secure.app(app_id)["state"] == "KILLED"
