"""hdfs:// data paths on a real HDFS (the mini cluster of tests/yarn): init, stats and norm read
the shipped Adult table from HDFS through WebHDFS and write what a local run writes."""
import gzip
import json

import pytest

from conftest import EXAMPLE, edit_config, run
from yarn_cluster import yarn_cluster  # noqa: F401  (the session fixture)


def model_set(tmp_path, name, data_path, header_path):
    run("new", name, cwd=tmp_path)
    ms = tmp_path / name
    edit_config(ms, **{
        "dataSet.dataPath": data_path,
        "dataSet.headerPath": header_path,
        "dataSet.targetColumnName": "Target",
        "dataSet.posTags": [">50K"],
        "dataSet.negTags": ["<=50K"],
    })
    return ms


def init_stats_norm(ms, env, *flags):
    for step in ("init", "stats", "norm"):
        run(step, "-q", *flags, cwd=ms, env=env)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The reference: the same steps on the local copy of the data."""
    tmp = tmp_path_factory.mktemp("local")
    ms = model_set(tmp, "local", str(EXAMPLE / "DataSet1"), str(EXAMPLE / "DataSet1" / ".pig_header"))
    init_stats_norm(ms, {})
    return ms


def assert_same_outputs(ms, reference):
    assert (ms / "ColumnConfig.json").read_text() == (reference / "ColumnConfig.json").read_text()
    shards = sorted(p.name for p in (reference / "tmp" / "NormalizedData").iterdir())
    assert shards and shards == sorted(p.name for p in (ms / "tmp" / "NormalizedData").iterdir())
    for name in shards:
        assert (ms / "tmp" / "NormalizedData" / name).read_bytes() == \
            (reference / "tmp" / "NormalizedData" / name).read_bytes(), name


def test_gzip_data_set_in_hdfs_gives_the_local_results(yarn_cluster, local_run, tmp_path):
    yarn_cluster.put_tree(EXAMPLE / "DataSet1", "/user/tests/gz/DataSet1")
    # hdfs:///path: the authority of fs.defaultFS from HADOOP_CONF_DIR.
    ms = model_set(tmp_path, "hdfs", "hdfs:///user/tests/gz/DataSet1",
                   "hdfs:///user/tests/gz/DataSet1/.pig_header")
    init_stats_norm(ms, yarn_cluster.env)
    assert_same_outputs(ms, local_run)


def test_plain_text_over_several_blocks_with_hadoop_keys_from_D(yarn_cluster, local_run, tmp_path):
    # The same rows as plain text: about 3.8 MB, so 4 HDFS blocks (1 MB in the mini cluster) and
    # 4 WebHDFS reads of tarn.hdfs.read-block-mb=1, with chunk cuts across both.
    text = gzip.decompress((EXAMPLE / "DataSet1" / "part-00000.gz").read_bytes())
    assert len(text) > 3 << 20
    yarn_cluster.put_bytes(text, "/user/tests/plain/part-00000")
    yarn_cluster.put_file(EXAMPLE / "DataSet1" / ".pig_header", "/user/tests/plain/.pig_header")
    assert yarn_cluster.list("/user/tests/plain") == [".pig_header", "part-00000"]
    # No HADOOP_CONF_DIR: the NameNode comes from -D keys, as Hadoop's tools take them.
    ms = model_set(tmp_path, "plain", yarn_cluster.uri("/user/tests/plain"),
                   yarn_cluster.uri("/user/tests/plain/.pig_header"))
    flags = ["-Dfs.defaultFS=" + yarn_cluster.default_fs,
             "-Ddfs.namenode.http-address=" + yarn_cluster.namenode_http,
             "-Dtarn.hdfs.read-block-mb=1", "-Dtarn.hadoop.conf-dir=/nonexistent-is-not-read"]
    env = {"HADOOP_CONF_DIR": "", "HADOOP_HOME": ""}
    # The conf dir setting wins over the environment: a missing folder is an error naming it.
    bad = run("init", *flags, cwd=ms, env=env, check=False)
    assert bad.returncode != 0 and "/nonexistent-is-not-read" in bad.stderr
    flags[-1] = "-Dtarn.hadoop.conf-dir="
    init_stats_norm(ms, env, *flags)
    assert_same_outputs(ms, local_run)


def test_missing_hdfs_data_fails_naming_the_path(yarn_cluster, tmp_path):
    ms = model_set(tmp_path, "missing", "hdfs:///user/tests/nothing-here", "")
    proc = run("init", cwd=ms, env=yarn_cluster.env, check=False)
    assert proc.returncode != 0
    assert "hdfs:///user/tests/nothing-here" in proc.stderr and "does not exist" in proc.stderr


def test_unreachable_namenode_fails_with_the_address(tmp_path):
    # No cluster needed: a NameNode address where nothing listens.
    ms = model_set(tmp_path, "nowhere", "hdfs://127.0.0.1:1/data", "")
    proc = run("init", "-Ddfs.namenode.http-address=127.0.0.1:1", cwd=ms,
               env={"HADOOP_CONF_DIR": ""}, check=False)
    assert proc.returncode != 0
    assert "WebHDFS GETFILESTATUS hdfs://127.0.0.1:1/data" in proc.stderr
    assert "127.0.0.1:1" in proc.stderr
    assert json.loads((ms / "ModelConfig.json").read_text())  # untouched
