"""tarn's ApplicationMaster on a YARN whose RPC servers demand SASL integrity or privacy
(hadoop.rpc.protection, issue 14 part 4).

Each level starts its own mini cluster (tests/yarn/cluster start --rpc-protection LEVEL): the
ResourceManager's scheduler and the NodeManagers then offer only auth-int or auth-conf, and
tarn's AM, reading the level from the core-site.xml its submitter shipped, must wrap every
frame to register, start and stop containers through a NodeManager, and unregister. The
shared cluster of the other YARN tests stays at authentication. (A client whose
hadoop.rpc.protection the server cannot meet is refused naming the setting: the unit tests
show that against a fake server, tests/unit/cluster/yarn/ipc_test.cpp.)
"""
import pytest

from conftest import run
from test_yarn_am import am_stdout, container_logs, report
from yarn_cluster import skip_reason, start_cluster, stop_cluster


@pytest.fixture(scope="module", params=["privacy", "integrity"])
def protected_cluster(request, tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    cluster = start_cluster(tmp_path_factory.mktemp(f"yarn-{request.param}"),
                            "--rpc-protection", request.param)
    yield request.param, cluster
    stop_cluster(cluster)


def test_am_selftest_passes_with_the_cluster_rpc_protection(protected_cluster):
    level, cluster = protected_cluster
    core_site = (cluster.conf_dir / "core-site.xml").read_text()
    assert "hadoop.rpc.protection" in core_site and level in core_site, core_site
    proc = run("yarn", "submit", "--name", f"am-selftest-{level}", "--max-attempts", "1",
               "--memory", "256", "--wait", "--timeout", "240",
               "--", "tarn", "yarn", "am-selftest", env=cluster.env, check=False)
    lines = proc.stdout.splitlines()
    assert lines and lines[0].startswith("application_"), f"{proc.stdout}\n{proc.stderr}"
    app_id = lines[0]
    app, why = report(cluster, app_id, proc)
    assert proc.returncode == 0, why
    assert app["state"] == "FINISHED" and app["finalStatus"] == "SUCCEEDED", why
    assert app["diagnostics"] == "am-selftest: all checks passed", why
    logs = container_logs(cluster, app_id)
    am = am_stdout(logs)
    assert "child exited 0" in am and "KILLED_BY_APPMASTER" in am, why

