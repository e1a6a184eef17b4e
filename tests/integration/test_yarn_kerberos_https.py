"""The HTTPS-only variant of the Kerberized cluster (tests/yarn/cluster start --kerberos --https:
dfs.http.policy and yarn.http.policy HTTPS_ONLY): tarn reads HDFS and the RM over https with
SPNEGO, trusting the cluster's CA from tarn.tls.ca-file, refuses an unverified server, and
trains on YARN, its containers verifying HDFS with the CA file shipped with the job."""
import json
import re

import pytest

from conftest import EXAMPLE, make_income_model_set, edit_config, run
from test_yarn_train import PARAMS, YARN
from yarn_cluster import kerberized_cluster, stop_cluster


@pytest.fixture(scope="module")
def https_cluster(tmp_path_factory):
    cluster = kerberized_cluster(tmp_path_factory.mktemp("krb-https-cluster"), "--https")
    try:
        assert cluster.scheme == "https", cluster.ready
        yield cluster
    finally:
        stop_cluster(cluster)


def test_steps_and_yarn_commands_over_https_only(https_cluster, tmp_path):
    c = https_cluster
    ms = make_income_model_set(tmp_path, "income")
    hdfs = f"/user/{c.user}/adult"
    c.put_tree(EXAMPLE / "DataSet1", hdfs + "/DataSet1")
    edit_config(ms, **{"dataSet.dataPath": c.uri(hdfs + "/DataSet1"),
                       "dataSet.headerPath": c.uri(hdfs + "/DataSet1/.pig_header")})
    ca = f"-Dtarn.tls.ca-file={c.ca_file}"
    run("init", ca, cwd=ms, env=c.env)
    run("stats", ca, cwd=ms, env=c.env)
    columns = json.loads((ms / "ColumnConfig.json").read_text())
    assert any(col.get("columnStats", {}).get("ks") for col in columns)
    # The RM's REST API over https with SPNEGO.
    listed = run("yarn", "list", ca, env=c.env).stdout
    assert "APPLICATION" in listed

    # Without the cluster's CA the server is not trusted, and nothing is sent in clear.
    untrusted = run("stats", cwd=ms, env=c.env, check=False)
    assert untrusted.returncode == 1
    assert "certificate" in untrusted.stderr.lower(), untrusted.stderr
    assert "https://" in untrusted.stderr, untrusted.stderr

    # tarn train --yarn: every container reads and writes HDFS over https, trusting the CA
    # that the submission localized beside the binary (the nodes' system CAs do not know it).
    edit_config(ms, **{"train.algorithm": "TensorFlow", "train.params": PARAMS,
                       "train.numTrainEpochs": 2, "basic.runMode": "DIST"})
    run("norm", "-shuffle", "-Dshifu.norm.shuffle.size=2", ca, cwd=ms, env=c.env)
    out = run("train", *YARN, ca, cwd=ms, env=c.env)
    text = out.stdout + out.stderr
    assert re.search(r"YARN application application_\d+_\d+: FINISHED SUCCEEDED", text), text
    assert "HDFS delegation token for 127.0.0.1:" in text, text  # a NameNode's ip:port
    root = f"/user/{c.user}/.tarn/staging/modelsets"
    home = [d for d in c.list(root) if d.startswith("income-")]
    assert home and c.list(f"{root}/{home[0]}/models") == ["model0.tarn"]
    assert (ms / "models" / "model0.tarn").stat().st_size > 0
