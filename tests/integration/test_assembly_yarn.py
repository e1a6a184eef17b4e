"""tarn assembly on YARN (tests/yarn/cluster, the mini HDFS + YARN): tarn's ApplicationMaster
runs the assembly runner, each instance in a YARN container of its own whose first process is
tarn's launcher (it registers with the AM, reserves its TF port on its host, waits for the
cluster, then execs the command).

The Keras test runs examples/assembly's program (ps, two workers and a backup, a chief) plus a
small HTTP server as a serving component, and kills a worker's process while it trains. The
containers run on this machine, so the venv of test_assembly_local.py (an absolute path) is
the Python they run. The other test uses sleep and exit: restart policies, flex, a DOCKER
component's runtime variables in the NodeManager's launch_container.sh, stop and destroy.
"""
import json
import os
import re
import signal
import socket
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from assembly_status import component, final, instance, wait_until
from conftest import ROOT, python_with, run
from yarn_cluster import yarn_cluster  # noqa: F401  (the fixture)

EXAMPLE = ROOT / "examples" / "assembly"
# The AM listens on loopback; its containers run on this machine.
OPTIONS = ("-Dtarn.cluster.host=127.0.0.1", "-Dtarn.assembly.am-memory-mb=256")


@pytest.fixture
def home(tmp_path, yarn_cluster):
    """$TARN_HOME for the commands; every service still running at the end is stopped."""
    env = {"TARN_HOME": str(tmp_path), **yarn_cluster.env}
    yield env
    for record in (tmp_path / "assembly").glob("*/yarn.json"):
        app = json.loads(record.read_text())["application_id"]
        if yarn_cluster.app(app)["state"] not in ("FINISHED", "FAILED", "KILLED"):
            run("yarn", "kill", app, check=False, env=env)


def tarn(env, *args, check=True, extra=None):
    return run("assembly", *args, *OPTIONS, check=check, env={**env, **(extra or {})})


def status(env, name):
    return json.loads(tarn(env, "status", name, "--json").stdout)


def wait_status(env, name, done, what, limit_s=240):
    return wait_until(lambda: status(env, name), name, done, what, limit_s, poll_s=1)


def container_id(inst):
    found = re.search(r"container_\d+_\d+_\d+_\d+", inst.get("where", ""))
    assert found, inst
    return found.group(0)


def pids_of_container(cid, word):
    """Pids of this machine's processes in container `cid` whose command line has `word`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            environ = (d / "environ").read_bytes().split(b"\0")
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if f"CONTAINER_ID={cid}".encode() in environ and word.encode() in cmd:
            found.append(int(d.name))
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_keras_job_on_yarn_survives_a_killed_worker(home, tmp_path, yarn_cluster):
    python = python_with(["keras", "tensorflow"], ["tensorflow-cpu"], "keras-venv")
    spec = json.loads((EXAMPLE / "tf-keras.json").read_text())
    spec["resource"] = {"cpus": 1, "memory": "256"}
    model = tmp_path / "model.keras"
    for c in spec["components"]:
        if c["name"] == "chief":  # the model outside the container, which YARN cleans up
            c["launch_command"] = c["launch_command"].replace("--out model.keras",
                                                              f"--out {model}")
    port = free_port()
    spec["components"].append({
        "name": "serving", "number_of_containers": 1,
        "launch_command": f"exec ${{PYTHON}} -m http.server --bind $NM_HOST {port}",
        "readiness_check": {"type": "HTTP",
                            "properties": {"url": f"http://${{THIS_HOST}}:{port}/"}}})
    spec["configuration"]["env"].update({
        "PYTHON": python, "TF_PROGRAM_DIR": str(EXAMPLE), "TRAIN_STEPS": "1500",
        "REJOIN_S": "300"})
    path = tmp_path / "keras.json"
    path.write_text(json.dumps(spec, indent=1))

    out = tarn(home, "launch", path, "--backend", "yarn")
    assert "Service keras-pss submitted: YARN application application_" in out.stdout
    s = status(home, "keras-pss")
    assert s["backend"] == "yarn" and s["application_id"] in out.stdout
    # Every TF task registered an address from its container before any of them started.
    s = wait_status(home, "keras-pss", lambda s: final(s) or all(
        i.get("tf_task", {}).get("address") for c in s["components"] if c.get("tf_role")
        for i in c["containers"] if not i["backup"]), "the TF tasks' registration")
    addresses = {c["name"]: [i["tf_task"]["address"] for i in c["containers"] if not i["backup"]]
                 for c in s["components"] if c.get("tf_role")}
    assert len(set(sum(addresses.values(), []))) == 4, addresses
    address0 = addresses["worker"][0]

    # Kill worker-0's program once the chief reports training steps.
    def chief_log(s):
        log = instance(s, "chief-0").get("log")
        return Path(log).read_text() if log and Path(log).exists() else ""
    s = wait_status(home, "keras-pss", lambda s: final(s) or "step 100 " in chief_log(s),
                    "the chief's first training steps")
    assert s["state"] in ("STARTED", "STABLE"), json.dumps(s, indent=1)
    serving = instance(s, "serving-0")
    assert serving["state"] == "READY" and serving["runtime"] == "native", serving
    victim = instance(s, "worker-0")
    assert victim["state"] == "READY" and victim["host"] and victim["log"], victim
    pids = pids_of_container(container_id(victim), "keras_pss.py")
    assert pids, victim
    for pid in pids:
        os.kill(pid, signal.SIGKILL)

    s = wait_status(home, "keras-pss", lambda s: final(s) and all(
        i["state"] not in ("READY", "RUNNING_BUT_UNREADY")
        for c in s["components"] for i in c["containers"]), "the job's end")
    assert s["state"] == "SUCCEEDED", s
    assert s["exit_code"] == 0
    app = yarn_cluster.wait_for_state(s["application_id"], ("FINISHED",), timeout=60)
    assert app["finalStatus"] == "SUCCEEDED", app
    workers = {w["component_instance_name"]: w for w in component(s, "worker")["containers"]}
    assert workers["worker-0"]["state"] == "FAILED"
    assert workers["worker-0"]["replaced_by"] == "worker-2"
    backup = workers["worker-2"]
    assert backup["replaced"] == "worker-0" and not backup["backup"]
    assert backup["tf_task"] == {"type": "worker", "index": 0, "address": address0}
    backup_log = Path(backup["log"]).read_text()
    assert "task worker:0" in backup_log and address0 in backup_log, backup_log[-2000:]
    assert "worker-3" in workers and workers["worker-3"]["backup"]  # the pool was refilled
    assert instance(s, "ps-0")["state"] == "STOPPED"
    chief = instance(s, "chief-0")
    assert chief["state"] == "SUCCEEDED" and chief["exit_code"] == 0
    assert f"every worker answers: {addresses['worker']}" in chief_log(s)
    with zipfile.ZipFile(model) as z:
        assert "model.weights.h5" in z.namelist()

    out = tarn(home, "destroy", "keras-pss")
    assert "Successfully destroyed service keras-pss" in out.stdout
    assert not (Path(home["TARN_HOME"]) / "assembly" / "keras-pss").exists()


def launch_container_sh(cluster, cid):
    found = list(Path(cluster.run_dir).glob(f"**/{cid}/launch_container.sh"))
    assert found, f"no launch_container.sh of {cid} under {cluster.run_dir}"
    return found[0].read_text()


def test_policies_flex_docker_runtime_stop_destroy(home, tmp_path, yarn_cluster):
    marker = tmp_path / "failed-once"
    # A TARBALL artifact in HDFS, which YARN localizes as the ARCHIVE lib/.
    (tmp_path / "payload").mkdir()
    (tmp_path / "payload" / "hello.txt").write_text("hello from the tarball\n")
    with tarfile.open(tmp_path / "payload.tgz", "w:gz") as t:
        t.add(tmp_path / "payload" / "hello.txt", arcname="hello.txt")
    tarball = f"/user/{yarn_cluster.user}/assembly-payload.tgz"
    yarn_cluster.put_file(tmp_path / "payload.tgz", tarball)
    port = free_port()
    spec = {"name": "policies", "version": "1", "resource": {"cpus": 1, "memory": "128"},
            "configuration": {"properties": {"tarn.assembly.relaunch-delay-ms": "0"}},
            "components": [
                {"name": "sleeper", "number_of_containers": 1, "launch_command": "exec sleep 300"},
                {"name": "never", "number_of_containers": 1, "restart_policy": "NEVER",
                 "launch_command": "exit 3"},
                {"name": "onfailure", "number_of_containers": 1, "restart_policy": "ON_FAILURE",
                 "launch_command": f"if [ -e {marker} ]; then exit 0; fi; touch {marker}; exit 4"},
                {"name": "boxed", "number_of_containers": 1,
                 "artifact": {"type": "DOCKER", "id": "library/busybox:1.36"},
                 "run_privileged_container": True,
                 "configuration": {"env": {
                     "YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS": "/etc/passwd:/etc/passwd:ro"}},
                 "launch_command": "exec sleep 300"},
                # A dependant starts only once the PORT check of what it depends on passed,
                # and finds it at its registered host.
                {"name": "web", "number_of_containers": 1,
                 "launch_command": f"exec {sys.executable} -m http.server --bind $NM_HOST {port}",
                 "readiness_check": {"type": "PORT", "properties": {"port": str(port)}}},
                {"name": "client", "number_of_containers": 1, "restart_policy": "NEVER",
                 "dependencies": ["web"],
                 "launch_command": f"exec {sys.executable} -c 'import urllib.request; "
                                   f"urllib.request.urlopen(\"http://${{WEB-0_HOST}}:{port}/\", "
                                   f"timeout=10)'"},
                {"name": "unpacked", "number_of_containers": 1, "restart_policy": "NEVER",
                 "artifact": {"type": "TARBALL", "id": yarn_cluster.uri(tarball)},
                 "launch_command": 'test "$(cat lib/hello.txt)" = "hello from the tarball"'}]}
    path = tmp_path / "policies.json"
    path.write_text(json.dumps(spec, indent=1))
    tarn(home, "launch", path, "--backend", "yarn")
    s = wait_status(home, "policies", lambda s: final(s) or (
        instance(s, "onfailure-0")["state"] == "SUCCEEDED" and
        instance(s, "never-0")["state"] == "FAILED" and
        instance(s, "sleeper-0")["state"] == "READY" and
        instance(s, "boxed-0")["state"] == "READY" and
        instance(s, "unpacked-0")["state"] in ("SUCCEEDED", "FAILED") and
        instance(s, "client-0")["state"] in ("SUCCEEDED", "FAILED")), "the policies' outcomes")
    assert s["state"] == "STABLE", s  # ALWAYS components keep it running
    never, onfailure = instance(s, "never-0"), instance(s, "onfailure-0")
    assert never["exit_code"] == 3 and never["restarts"] == 0  # NEVER: not relaunched
    assert onfailure["exit_code"] == 0 and onfailure["restarts"] == 1  # ON_FAILURE: once
    assert instance(s, "sleeper-0")["runtime"] == "native"
    web, client = instance(s, "web-0"), instance(s, "client-0")
    assert web["state"] == "READY" and port in web["ports"], web
    assert client["state"] == "SUCCEEDED" and client["exit_code"] == 0, client
    assert client["launch_time"] >= web["launch_time"]
    unpacked = instance(s, "unpacked-0")
    assert unpacked["state"] == "SUCCEEDED" and unpacked["exit_code"] == 0, unpacked

    # The DOCKER component's launch context has YARN's Docker runtime variables (the mini
    # cluster's DefaultContainerExecutor exports them and runs the command natively).
    boxed = instance(s, "boxed-0")
    assert boxed["runtime"] == "container"
    script = launch_container_sh(yarn_cluster, container_id(boxed))
    for line in ('export YARN_CONTAINER_RUNTIME_TYPE="docker"',
                 'export YARN_CONTAINER_RUNTIME_DOCKER_IMAGE="library/busybox:1.36"',
                 'export YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK="host"',
                 'export YARN_CONTAINER_RUNTIME_DOCKER_RUN_PRIVILEGED_CONTAINER="true"',
                 'export YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS="/etc/passwd:/etc/passwd:ro"'):
        assert line in script, script
    assert "YARN_CONTAINER_RUNTIME_TYPE" not in launch_container_sh(
        yarn_cluster, container_id(instance(s, "sleeper-0")))

    # Flex: up by two, then down to one (the newest go).
    out = tarn(home, "flex", "policies", "--component", "sleeper", "+2")
    assert "flexed to 3 instances" in out.stdout
    s = wait_status(home, "policies", lambda s: [i["state"] for i in component(
        s, "sleeper")["containers"]] == ["READY"] * 3, "three sleepers")
    assert len({container_id(i) for i in component(s, "sleeper")["containers"]}) == 3
    tarn(home, "flex", "policies", "--component", "sleeper", "1")
    s = wait_status(home, "policies", lambda s: [i["component_instance_name"] for i in component(
        s, "sleeper")["containers"]] == ["sleeper-0"], "the flex down")
    saved = json.loads((Path(home["TARN_HOME"]) / "assembly/policies/spec.json").read_text())
    assert component(saved, "sleeper")["number_of_containers"] == 1
    refused = tarn(home, "flex", "policies", "--component", "never", "2", check=False)
    assert refused.returncode == 1 and "restart_policy=ON_FAILURE/NEVER" in refused.stderr

    # The AM's control channel wants the service's secret.
    secret = Path(home["TARN_HOME"]) / "assembly/policies/control.secret"
    assert secret.stat().st_mode & 0o777 == 0o600
    good = secret.read_bytes()
    secret.write_bytes(b"not the secret")
    refused = tarn(home, "flex", "policies", "--component", "sleeper", "2", check=False)
    assert refused.returncode == 1 and "job secret" in refused.stderr, refused.stderr
    secret.write_bytes(good)

    refused = tarn(home, "destroy", "policies", check=False)
    assert refused.returncode == 1 and "still running" in refused.stderr
    out = tarn(home, "stop", "policies")
    assert "Stopped service policies" in out.stdout and "KILLED" in out.stdout
    s = status(home, "policies")  # from HDFS, the AM has ended
    assert s["state"] == "STOPPED"
    assert all(i["state"] in ("STOPPED", "SUCCEEDED", "FAILED")
               for c in s["components"] for i in c["containers"]), s
    app = yarn_cluster.app(s["application_id"])
    assert app["finalStatus"] == "KILLED", app
    assert tarn(home, "stop", "policies", check=False).returncode == 40
    listed = tarn(home, "list").stdout
    assert re.search(rf"policies +STOPPED +{s['application_id']} ", listed), listed
    tarn(home, "destroy", "policies")
    assert tarn(home, "status", "policies", check=False).returncode == 44


def am_container(cluster, app_id):
    """The container id of the application's current AM attempt (from the RM)."""
    found = re.search(r"container_[e\d_]+", cluster.app(app_id).get("amContainerLogs") or "")
    assert found, cluster.app(app_id)
    return found.group(0).rstrip("_")


def kill_am(cluster, app_id):
    """SIGKILLs every process of the application's AM container on this machine."""
    cid = am_container(cluster, app_id)
    pids = pids_of_container(cid, "")
    assert pids, f"no process of {cid}"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return cid


def attempts(cluster, app_id):
    url = cluster._rm_url(f"apps/{app_id}/appattempts")
    listed = (json.loads(cluster._request("GET", url)).get("appAttempts") or {}).get(
        "appAttempt") or []
    return [listed] if isinstance(listed, dict) else listed


def test_an_assembly_survives_its_application_masters_death(home, tmp_path, yarn_cluster):
    """The AM is killed: attempt 2 resumes from the runner's state with the containers kept
    (same ids, same processes), answers status and flex, promotes a backup whose launcher
    found it, and the chief's end ends the service. A second service's chief ends while no
    AM runs: its next attempt hears the exit from YARN and ends with the chief's status."""
    done, done2 = tmp_path / "chief-may-end", tmp_path / "chief2-may-end"
    spec = {"name": "amretry", "version": "1", "resource": {"cpus": 1, "memory": "128"},
            "components": [
                {"name": "sleeper", "number_of_containers": 2, "launch_command": "exec sleep 600",
                 "configuration": {"properties": {"tarn.backups": "1"}}},
                {"name": "chief", "number_of_containers": 1, "restart_policy": "NEVER",
                 "launch_command": f"while [ ! -e {done} ]; do sleep 0.2; done; exit 0"}]}
    spec2 = {"name": "chiefends", "version": "1", "resource": {"cpus": 1, "memory": "128"},
             "components": [
                 {"name": "sleeper", "number_of_containers": 1, "launch_command": "exec sleep 600"},
                 {"name": "chief", "number_of_containers": 1, "restart_policy": "NEVER",
                  "launch_command": f"while [ ! -e {done2} ]; do sleep 0.2; done; exit 3"}]}
    for name, body in (("amretry", spec), ("chiefends", spec2)):
        (tmp_path / f"{name}.json").write_text(json.dumps(body))
        tarn(home, "launch", tmp_path / f"{name}.json", "--backend", "yarn")
    # Every instance READY and the service STABLE (a status can show the first before the
    # runner's next step records the second).
    ready = lambda s: final(s) or (s["state"] == "STABLE" and all(  # noqa: E731
        i["state"] == "READY" for c in s["components"] for i in c["containers"]))
    s = wait_status(home, "amretry", ready, "every instance READY, the service STABLE")
    s2 = wait_status(home, "chiefends", ready, "every instance READY, the service STABLE")
    assert s["state"] == "STABLE" and s["am_attempt"] == 1, s
    app, app2 = s["application_id"], s2["application_id"]
    before = {i["component_instance_name"]: container_id(i)
              for c in s["components"] for i in c["containers"]}
    assert instance(s, "sleeper-2")["backup"]
    sleeping = {n: pids_of_container(before[n], "sleep") for n in ("sleeper-0", "sleeper-1")}
    assert all(sleeping.values()), sleeping
    waiting = pids_of_container(before["sleeper-2"], "launcher")  # the backup, in Register
    assert waiting, before

    first_am = kill_am(yarn_cluster, app)
    kill_am(yarn_cluster, app2)
    done2.touch()  # chiefends' chief ends while no AM runs

    s = wait_status(home, "amretry", lambda s: final(s) or (
        s.get("am_attempt") == 2 and s["state"] == "STABLE"), "attempt 2, STABLE")
    assert am_container(yarn_cluster, app) != first_am
    assert len(attempts(yarn_cluster, app)) == 2
    after = {i["component_instance_name"]: container_id(i)
             for c in s["components"] for i in c["containers"]}
    assert after == before, (before, after)  # nothing relaunched, no second copy
    for n, pids in sleeping.items():
        assert pids_of_container(before[n], "sleep") == pids, n
        assert instance(s, n)["restarts"] == 0 and instance(s, n)["state"] == "READY"
    assert pids_of_container(before["sleeper-2"], "launcher") == waiting

    # The commands follow the new attempt's am.json.
    out = tarn(home, "flex", "amretry", "--component", "sleeper", "+1")
    assert "flexed to 3 instances" in out.stdout, out.stdout
    s = wait_status(home, "amretry", lambda s: final(s) or [
        i["state"] for i in component(s, "sleeper")["containers"] if not i["backup"]] == [
        "READY"] * 3, "three sleepers")
    assert container_id(instance(s, "sleeper-3")) not in before.values()
    # The backup's launcher found attempt 2: it takes over a killed sleeper.
    for pid in sleeping["sleeper-0"]:
        os.kill(pid, signal.SIGKILL)
    s = wait_status(home, "amretry", lambda s: final(s) or (
        instance(s, "sleeper-0").get("replaced_by") == "sleeper-2" and
        instance(s, "sleeper-2")["state"] == "READY" and
        pids_of_container(before["sleeper-2"], "sleep")), "the backup's promotion")
    assert "the ApplicationMaster is now at" in Path(instance(s, "sleeper-2")["log"]).read_text()

    done.touch()
    s = wait_status(home, "amretry", final, "the chief's end")
    assert s["state"] == "SUCCEEDED" and s["exit_code"] == 0, s
    assert yarn_cluster.wait_for_state(app, ("FINISHED",), 60)["finalStatus"] == "SUCCEEDED"

    s2 = wait_status(home, "chiefends", final, "the end of chiefends")
    chief = instance(s2, "chief-0")
    assert s2["state"] == "FAILED" and s2["exit_code"] == 3, s2
    assert chief["exit_code"] == 3 and "while no ApplicationMaster ran" in s2["diagnostics"], s2
    assert s2["am_attempt"] == 2
    assert yarn_cluster.wait_for_state(app2, ("FINISHED",), 60)["finalStatus"] == "FAILED"


def test_with_one_attempt_the_application_fails_with_its_am(home, tmp_path, yarn_cluster):
    spec = {"name": "oneshot", "version": "1", "resource": {"cpus": 1, "memory": "128"},
            "configuration": {"properties": {"yarn.service.am-restart.max-attempts": "1"}},
            "components": [{"name": "sleeper", "number_of_containers": 1,
                            "launch_command": "exec sleep 600"}]}
    (tmp_path / "oneshot.json").write_text(json.dumps(spec))
    tarn(home, "launch", tmp_path / "oneshot.json", "--backend", "yarn")
    s = wait_status(home, "oneshot", lambda s: final(s) or s["state"] == "STABLE", "STABLE")
    app_id = s["application_id"]
    kill_am(yarn_cluster, app_id)
    app = yarn_cluster.wait_for_state(app_id, ("FAILED",), 120)
    assert len(attempts(yarn_cluster, app_id)) == 1
    why = app["diagnostics"]
    assert "failed 1 times" in why and "local limit is =1" in why, why
    assert f"AM Container for appattempt_{app_id[len('application_'):]}_000001 exited" in why, why
    s = status(home, "oneshot")
    assert s["state"] == "FAILED" and "ApplicationMaster" in s["diagnostics"], s


def test_bad_input_refused_before_submission(home, tmp_path):
    spec = {"name": "bad", "version": "1", "resource": {"cpus": 1, "memory": "128"},
            "components": [{"name": "worker", "number_of_containers": 1,
                            "launch_command": "true",
                            "configuration": {"properties": {"tarn.backups": "x"}}}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    out = tarn(home, "launch", path, "--backend", "yarn", check=False)
    assert out.returncode != 0
    assert "components[0].configuration.properties.tarn.backups" in out.stderr
    assert not (Path(home["TARN_HOME"]) / "assembly" / "bad").exists()
    out = tarn(home, "launch", path, "--backend", "mesos", check=False)
    assert out.returncode == 2 and "--backend is local or yarn" in out.stderr


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory):
    """A second mini cluster whose NodeManagers declare two yarn.io/gpu each."""
    from yarn_cluster import skip_reason, start_cluster, stop_cluster
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    cluster = start_cluster(tmp_path_factory.mktemp("yarn-gpu-cluster"), "--gpus", "2")
    yield cluster
    stop_cluster(cluster)


def test_gpus_reach_the_container_ask(gpu_cluster, tmp_path):
    env = {"TARN_HOME": str(tmp_path), **gpu_cluster.env}
    spec = {"name": "gpus", "version": "1",
            "components": [{"name": "trainer", "number_of_containers": 1,
                            "launch_command": "exec sleep 300",
                            "resource": {"cpus": 1, "memory": "128",
                                         "additional": {"yarn.io/gpu": {"value": 2}}}}]}
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(spec))
    tarn(env, "launch", path, "--backend", "yarn")
    s = wait_status(env, "gpus", lambda s: final(s) or instance(s, "trainer-0")["state"] == "READY",
                    "the GPU container")
    # Two NodeManagers of two GPUs hold two such containers, not three: the third waits.
    tarn(env, "flex", "gpus", "--component", "trainer", "3")
    s = wait_status(env, "gpus", lambda s: final(s) or [i["state"] for i in component(
        s, "trainer")["containers"]].count("READY") == 2, "two GPU containers")
    time.sleep(5)  # heartbeats enough for a wrong third allocation to show
    s = status(env, "gpus")
    trainers = component(s, "trainer")["containers"]
    assert [i["state"] for i in trainers].count("READY") == 2, trainers
    waiting = [i for i in trainers if i["state"] != "READY"]
    assert len(waiting) == 1 and "pending container" in waiting[0]["where"], trainers
    assert "2 yarn.io/gpu asked" in waiting[0]["where"], waiting
    tarn(env, "stop", "gpus")
    # A component asking more than a NodeManager has is refused with the cluster's limit.
    spec["name"] = "toomany"
    spec["components"][0]["resource"]["additional"]["yarn.io/gpu"]["value"] = 3
    path.write_text(json.dumps(spec))
    tarn(env, "launch", path, "--backend", "yarn")
    s = wait_status(env, "toomany", final, "the refusal", limit_s=90)
    assert s["state"] == "FAILED", s
    assert "asks for 3 yarn.io/gpu; the cluster's largest container has 2" in s["diagnostics"], s
