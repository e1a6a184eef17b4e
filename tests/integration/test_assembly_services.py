"""tarn assembly validate, and tarn assembly ... --via services on YARN's own service framework
(the second mini cluster, Hadoop 3.4.2: tests/yarn/cluster --services)."""
import json
import os
import subprocess
import time

import pytest

from conftest import ROOT, run
from yarn_cluster import CLUSTER_SCRIPT, MiniCluster, skip_reason

EXAMPLES = ROOT / "tests" / "unit" / "assembly" / "testdata"


def test_validate_prints_the_start_order_of_hadoops_example():
    proc = run("assembly", "validate", EXAMPLES / "httpd-service-no-dns.json", "--json")
    described = json.loads(proc.stdout)
    assert described["start_order"] == ["httpd", "httpd-proxy"]
    httpd = described["components"][0]
    assert httpd["instances"] == ["httpd-0", "httpd-1"]
    assert httpd["artifact"] == {"type": "DOCKER", "id": "centos/httpd-24-centos7:latest"}
    assert httpd["readiness_check"]["type"] == "HTTP"
    text = run("assembly", "validate", EXAMPLES / "hello-world.json").stdout
    assert "hello: 2 instances (hello-0, hello-1)" in text
    assert "restart_policy: ALWAYS" in text


def test_validate_refuses_a_bad_file_with_the_fields_path(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({
        "name": "job", "version": "1",
        "components": [
            {"name": "ps", "number_of_containers": 1, "launch_command": "x",
             "resource": {"cpus": 1, "memory": "256"}, "dependencies": ["worker"]},
            {"name": "worker", "number_of_containers": 1, "launch_command": "x",
             "resource": {"cpus": 1, "memory": "256"}, "dependencies": ["ps"],
             "artifact": {"id": "img", "type": "FOO"}}]}))
    proc = run("assembly", "validate", bad, check=False)
    assert proc.returncode == 2
    assert "bad.json: components[1].artifact.type: 'FOO' is not one of the values" in proc.stderr
    # The same file goes to no cluster: tarn refuses it before any request.
    proc = run("assembly", "launch", "--via", "services", bad,
               "-Dyarn.resourcemanager.webapp.address=127.0.0.1:9", check=False)
    assert proc.returncode == 2, proc.stderr
    assert "components[1].artifact.type" in proc.stderr


@pytest.fixture(scope="module")
def services_cluster(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    run_dir = tmp_path_factory.mktemp("yarn-services")
    proc = subprocess.run(
        [str(CLUSTER_SCRIPT), "--services", "start", "--dir", str(run_dir), "--nm-memory-mb",
         "4096", "--owner-pid", str(os.getpid())],
        capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        if "Maven could not resolve" in proc.stderr:  # offline, Hadoop 3.4.2's jars not in ~/.m2
            pytest.skip(f"the Hadoop 3.4.2 services harness has no jars: {proc.stderr[-500:]}")
        raise AssertionError(f"tests/yarn/cluster --services start failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    line = [x for x in proc.stdout.splitlines() if x.startswith("export HADOOP_CONF_DIR=")]
    assert line, proc.stdout
    yield MiniCluster(run_dir, line[0].split("=", 1)[1])
    subprocess.run([str(CLUSTER_SCRIPT), "--services", "stop", "--dir", str(run_dir)],
                   capture_output=True, text=True, timeout=120)


def status(cluster, name):
    proc = run("assembly", "status", name, "--via", "services", "--json", env=cluster.env)
    return json.loads(proc.stdout)


def test_launch_flex_and_destroy_a_service(services_cluster, tmp_path):
    spec = tmp_path / "sleeper.json"
    spec.write_text(json.dumps({
        "name": "tarn-sleeper", "version": "1.0",
        "configuration": {"properties": {"yarn.service.default-readiness-check.enabled": "false"}},
        "components": [{"name": "sleeper", "number_of_containers": 1,
                        "launch_command": "sleep 3600", "restart_policy": "ALWAYS",
                        "resource": {"cpus": 1, "memory": "128"}}]}))
    env = services_cluster.env
    launched = run("assembly", "launch", "--via", "services", spec, "--timeout", "300",
                   "-Dtarn.hdfs.timeout-s=120", env=env, check=False)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert "STABLE" in launched.stdout
    s = status(services_cluster, "tarn-sleeper")
    assert s["state"] == "STABLE"
    assert s["id"].startswith("application_")
    [sleeper] = s["components"]
    assert [i["state"] for i in sleeper["instances"]] == ["READY"]
    assert sleeper["instances"][0]["name"] == "sleeper-0"
    # Hadoop's ServiceMaster asked for it: a container of the service's application on one of
    # the NodeManagers.
    assert sleeper["instances"][0]["container_id"].startswith(
        "container_" + s["id"][len("application_"):] + "_"), sleeper
    nm_hosts = {n["address"].rsplit(":", 1)[0] for n in services_cluster.ready["nodemanagers"]}
    assert sleeper["instances"][0]["host"] in nm_hosts, sleeper
    # The RM's own REST API (the harness gives each web app its own Guice pipeline) sees the
    # ServiceMaster running as the service's application.
    app = services_cluster.app(s["id"])
    assert app["state"] == "RUNNING" and app["applicationType"] == "yarn-service", app
    assert app["name"] == "tarn-sleeper"

    run("assembly", "flex", "tarn-sleeper", "--via", "services", "--component", "sleeper", "+1",
        "--timeout", "300", env=env)
    s = status(services_cluster, "tarn-sleeper")
    names = sorted(i["name"] for i in s["components"][0]["instances"])
    assert names == ["sleeper-0", "sleeper-1"]
    assert s["components"][0]["ready"] == 2

    run("assembly", "flex", "tarn-sleeper", "--via", "services", "--component", "sleeper", "1",
        "--timeout", "300", env=env)
    s = status(services_cluster, "tarn-sleeper")
    assert s["components"][0]["number_of_containers"] == 1
    assert [i["name"] for i in s["components"][0]["instances"]] == ["sleeper-0"]

    unknown = run("assembly", "flex", "tarn-sleeper", "--via", "services", "--component", "nope",
                  "2", env=env, check=False)
    assert unknown.returncode == 2
    assert "nope does not exist !" in unknown.stderr

    run("assembly", "stop", "tarn-sleeper", "--via", "services", env=env)
    deadline = time.monotonic() + 120
    while status(services_cluster, "tarn-sleeper")["state"] != "STOPPED":
        assert time.monotonic() < deadline, "the service did not stop"
        time.sleep(1)
    run("assembly", "destroy", "tarn-sleeper", "--via", "services", env=env)
    gone = run("assembly", "status", "tarn-sleeper", "--via", "services", env=env, check=False)
    assert gone.returncode != 0
    assert "404" in gone.stderr
