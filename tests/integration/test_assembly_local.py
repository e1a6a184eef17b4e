"""tarn assembly on the local backend: YARN service files run by a detached supervisor.

The TensorFlow test runs examples/assembly (a Keras program on ParameterServerStrategy: one
parameter server, two workers and a backup, a chief) and kills a worker while it trains; the
others use sleep and python -c, so that only one TensorFlow job runs (its imports are slow).
"""
import json
import os
import signal
import zipfile
from pathlib import Path

import pytest

from assembly_status import component, final, wait_until
from conftest import ROOT, python_with, run, tarn_bin

EXAMPLE = ROOT / "examples" / "assembly"


@pytest.fixture
def home(tmp_path):
    """$TARN_HOME for the commands (services under <home>/assembly); every supervisor still
    running at the end is stopped."""
    yield tmp_path
    for supervisor in (tmp_path / "assembly").glob("*/supervisor.json"):
        try:
            os.kill(json.loads(supervisor.read_text())["pid"], signal.SIGTERM)
        except (OSError, ValueError, KeyError):
            pass


def tarn(home, *args, check=True, env=None):
    return run("assembly", *args, check=check, env={"TARN_HOME": str(home), **(env or {})})


def status(home, name):
    return json.loads(tarn(home, "status", name, "--json").stdout)


def wait_status(home, name, done, what, limit_s=600):
    return wait_until(lambda: status(home, name), name, done, what, limit_s, poll_s=0.3)


def settled(s):
    """Final, and every instance's exit seen (the end kills the rest, which takes a moment)."""
    return final(s) and all(i["state"] not in ("READY", "RUNNING_BUT_UNREADY")
                            for c in s["components"] for i in c["containers"])


def write_service(tmp_path, name, components, **extra):
    spec = {"name": name, "version": "1", "resource": {"cpus": 1, "memory": "256"},
            "components": components, **extra}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec, indent=1))
    return path


def test_keras_parameter_server_job_survives_a_killed_worker(home, tmp_path):
    python = python_with(["keras", "tensorflow"], ["tensorflow-cpu"], "keras-venv")  # shared with test_keras
    env = {"PYTHON": python, "TF_PROGRAM_DIR": str(EXAMPLE), "TRAIN_STEPS": "1500",
           "REJOIN_S": "300"}  # the chief trains on with the backup once it answers
    out = tarn(home, "launch", EXAMPLE / "tf-keras.json", env=env)
    assert "Service keras-pss started" in out.stdout
    s = status(home, "keras-pss")
    workers = component(s, "worker")["containers"]
    assert [w["component_instance_name"] for w in workers] == ["worker-0", "worker-1", "worker-2"]
    assert [w["backup"] for w in workers] == [False, False, True]
    # Addresses were reserved before any task started, one per task, and TF_CONFIG says so.
    addresses = {c["name"]: [i["tf_task"]["address"] for i in c["containers"] if not i["backup"]]
                 for c in s["components"]}
    assert len(set(sum(addresses.values(), []))) == 4
    address0 = addresses["worker"][0]

    # Kill worker-0 once the chief reports training steps.
    chief_log = Path(component(s, "chief")["containers"][0]["log"])
    wait_status(home, "keras-pss",
                lambda s: final(s) or (chief_log.exists() and "step 100 " in chief_log.read_text()),
                "the chief's first training steps")
    s = status(home, "keras-pss")
    assert s["state"] in ("STARTED", "STABLE"), s
    victim = component(s, "worker")["containers"][0]
    assert victim["state"] == "READY"
    os.killpg(int(victim["where"].split()[1]), signal.SIGKILL)

    s = wait_status(home, "keras-pss", settled, "the job's end")
    assert s["state"] == "SUCCEEDED", s
    assert s["exit_code"] == 0
    workers = {w["component_instance_name"]: w for w in component(s, "worker")["containers"]}
    assert workers["worker-0"]["state"] == "FAILED"
    assert workers["worker-0"]["replaced_by"] == "worker-2"
    backup = workers["worker-2"]
    assert backup["replaced"] == "worker-0" and not backup["backup"]
    assert backup["tf_task"] == {"type": "worker", "index": 0, "address": address0}
    # The backup ran the program as task worker:0 at the dead task's address.
    backup_log = Path(backup["log"]).read_text()
    assert "task worker:0" in backup_log, backup_log[-2000:]
    assert address0 in backup_log
    assert "worker-3" in workers and workers["worker-3"]["backup"]  # the pool was refilled
    # The ps and the other workers were killed when the chief ended.
    assert component(s, "ps")["containers"][0]["state"] == "STOPPED"
    assert workers["worker-1"]["state"] == "STOPPED"
    chief = component(s, "chief")["containers"][0]
    assert chief["state"] == "SUCCEEDED" and chief["exit_code"] == 0
    chief_log = Path(chief["log"]).read_text()
    assert f"every worker answers: {addresses['worker']}" in chief_log
    assert "step 1600 " in chief_log
    model = Path(chief["dir"]) / "model.keras"
    with zipfile.ZipFile(model) as z:
        assert "model.weights.h5" in z.namelist()
        config = json.loads(z.read("config.json"))
    layers = [layer["config"]["name"] for layer in config["config"]["layers"]]
    assert layers[-2:] == ["hidden", "score"]


def test_flex_stop_start_destroy(home, tmp_path):
    spec = write_service(tmp_path, "flexy", [
        {"name": "sleeper", "number_of_containers": 1, "launch_command": "exec sleep 300"},
        {"name": "oneshot", "number_of_containers": 1, "restart_policy": "NEVER",
         "launch_command": "exec sleep 300"}])
    tarn(home, "launch", spec)
    wait_status(home, "flexy", lambda s: s["state"] == "STABLE", "STABLE")

    out = tarn(home, "flex", "flexy", "--component", "sleeper", "+2")
    assert "flexed to 3 instances" in out.stdout
    s = wait_status(home, "flexy", lambda s: [i["state"] for i in component(s, "sleeper")
                                              ["containers"]] == ["READY"] * 3, "3 READY sleepers")
    assert [i["component_instance_name"] for i in component(s, "sleeper")["containers"]] == \
        ["sleeper-0", "sleeper-1", "sleeper-2"]
    pids = [int(i["where"].split()[1]) for i in component(s, "sleeper")["containers"]]
    tarn(home, "flex", "flexy", "--component", "sleeper", "-1")
    s = wait_status(home, "flexy", lambda s: len(component(s, "sleeper")["containers"]) == 2,
                    "a flex down")
    assert [i["component_instance_name"] for i in component(s, "sleeper")["containers"]] == \
        ["sleeper-0", "sleeper-1"]  # the newest went
    with pytest.raises(ProcessLookupError):
        os.kill(pids[2], 0)
    saved = json.loads((home / "assembly" / "flexy" / "spec.json").read_text())
    assert saved["components"][0]["number_of_containers"] == 2

    refused = tarn(home, "flex", "flexy", "--component", "oneshot", "3", check=False)
    assert refused.returncode == 1
    assert "restart_policy=ON_FAILURE/NEVER" in refused.stderr
    unknown = tarn(home, "flex", "flexy", "--component", "nope", "3", check=False)
    assert unknown.returncode == 44 and "nope does not exist !" in unknown.stderr

    busy = tarn(home, "destroy", "flexy", check=False)
    assert busy.returncode == 1 and "because it is still running" in busy.stderr
    assert "Stopped service flexy" in tarn(home, "stop", "flexy").stdout
    assert status(home, "flexy")["state"] == "STOPPED"
    for pid in pids[:2]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert tarn(home, "stop", "flexy", check=False).returncode == 40
    listed = tarn(home, "list").stdout
    assert "flexy" in listed and "STOPPED" in listed

    # start runs the saved spec again, with the flexed count.
    tarn(home, "start", "flexy")
    s = wait_status(home, "flexy", lambda s: s["state"] == "STABLE", "STABLE again")
    assert len(component(s, "sleeper")["containers"]) == 2
    tarn(home, "stop", "flexy")
    tarn(home, "start", "flexy")  # again: the last run's folders move aside once more
    wait_status(home, "flexy", lambda s: s["state"] == "STABLE", "STABLE a third time")
    assert (home / "assembly" / "flexy" / "logs.previous" / "sleeper-0.log").exists()
    tarn(home, "stop", "flexy")
    assert "Successfully destroyed" in tarn(home, "destroy", "flexy").stdout
    assert tarn(home, "status", "flexy", check=False).returncode == 44


FAILS_ONCE = "if [ -e ran-once ]; then exit 0; fi; touch ran-once; exit 1"


@pytest.mark.parametrize("policy,end,restarts", [("ON_FAILURE", "SUCCEEDED", 1),
                                                 ("NEVER", "FAILED", 0)])
def test_restart_policy_of_a_command_that_fails_once(home, tmp_path, policy, end, restarts):
    name = "once-" + policy.lower().replace("_", "")
    spec = write_service(tmp_path, name, [
        {"name": "job", "number_of_containers": 1, "restart_policy": policy,
         "launch_command": FAILS_ONCE}])
    tarn(home, "launch", spec)
    s = wait_status(home, name, final, "the end")
    assert s["state"] == end
    job = component(s, "job")["containers"][0]
    assert job["restarts"] == restarts
    assert job["exit_code"] == (0 if end == "SUCCEEDED" else 1)
    assert job["state"] == end


def test_instances_find_the_supervisors_tarn_in_tarn_bin(home, tmp_path):
    """Components that run tarn's own roles call "$TARN_BIN" (docs/ASSEMBLY.md): the
    supervisor's executable, whatever TARN_BIN the launching shell had."""
    spec = write_service(tmp_path, "tarn-bin", [
        {"name": "job", "number_of_containers": 1, "restart_policy": "NEVER",
         "launch_command": 'test "$TARN_BIN" -ef "$EXPECTED" && exec "$TARN_BIN" --version'}])
    tarn(home, "launch", spec, env={"TARN_BIN": "/nonexistent/tarn", "EXPECTED": tarn_bin()})
    s = wait_status(home, "tarn-bin", final, "the end")
    job = component(s, "job")["containers"][0]
    assert s["state"] == "SUCCEEDED", s
    assert "tarn " in Path(job["log"]).read_text()


def test_dependencies_wait_for_the_port_check_and_status_fields(home, tmp_path):
    server = ("sleep 2; exec python3 -c 'import socket, time; s = socket.socket(); "
              "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
              "s.bind((\"127.0.0.1\", int(\"${PORT}\"))); s.listen(); print(\"listening\", "
              "flush=True); time.sleep(300)'")
    with_port = __import__("socket").socket()
    with_port.bind(("127.0.0.1", 0))
    port = with_port.getsockname()[1]
    with_port.close()
    spec = write_service(tmp_path, "ordered", [
        {"name": "server", "number_of_containers": 1, "launch_command": server,
         "configuration": {"env": {"PORT": str(port)}},
         "readiness_check": {"type": "PORT", "properties": {"port": str(port)}}},
        {"name": "client", "number_of_containers": 1, "restart_policy": "NEVER",
         "dependencies": ["server"],
         "launch_command": "python3 -c 'import socket; socket.create_connection("
                           f"(\"127.0.0.1\", {port}), 2)' && echo connected to ${{SERVER-0_HOST}}"}])
    tarn(home, "launch", spec)
    s = wait_status(home, "ordered", lambda s: component(s, "client")["containers"][0]["state"]
                    in ("SUCCEEDED", "FAILED"), "the client's end")
    client = component(s, "client")["containers"][0]
    assert client["state"] == "SUCCEEDED", Path(client["log"]).read_text()
    assert "connected to 127.0.0.1" in Path(client["log"]).read_text()
    server = component(s, "server")["containers"][0]
    assert server["state"] == "READY"
    assert client["launch_time"] > server["launch_time"]
    assert s["state"] == "STABLE"  # the ALWAYS server keeps it running
    for field in ("component_instance_name", "state", "host", "ports", "restarts", "exit_code",
                  "log", "runtime", "dir", "where", "launch_time"):
        assert field in server, field
    assert server["ports"] == [port]
    assert server["runtime"] == "native"
    assert "listening" in Path(server["log"]).read_text()
    text = tarn(home, "status", "ordered").stdout
    assert "server-0" in text and "READY" in text and "native" in text
    tarn(home, "stop", "ordered")


def test_a_docker_component_is_refused_without_docker(home, tmp_path):
    spec = write_service(tmp_path, "web", [
        {"name": "nginx", "number_of_containers": 1,
         "artifact": {"id": "nginx:latest", "type": "DOCKER"}}])
    out = tarn(home, "launch", spec, "-Dtarn.assembly.docker=/nonexistent/docker", check=False)
    assert out.returncode == 1
    assert "component nginx has a DOCKER artifact (nginx:latest)" in out.stderr
    assert not (home / "assembly" / "web").exists()


def test_a_tarball_artifact_is_unpacked_into_lib(home, tmp_path):
    packed = tmp_path / "packed"
    (packed / "bin").mkdir(parents=True)
    (packed / "bin" / "hello.sh").write_text("echo hello from the tarball in $PWD\n")
    archive = tmp_path / "env.tar.gz"
    run_tar = __import__("subprocess").run
    run_tar(["tar", "-czf", str(archive), "-C", str(packed), "."], check=True)
    spec = write_service(tmp_path, "packed", [
        {"name": "job", "number_of_containers": 1, "restart_policy": "NEVER",
         "artifact": {"id": str(archive), "type": "TARBALL"},
         "launch_command": "bash lib/bin/hello.sh"}])
    tarn(home, "launch", spec)
    s = wait_status(home, "packed", settled, "the end")
    job = component(s, "job")["containers"][0]
    assert s["state"] == "SUCCEEDED", Path(job["log"]).read_text()
    assert job["runtime"] == "native"
    assert f"hello from the tarball in {job['dir']}" in Path(job["log"]).read_text()


@pytest.mark.parametrize("edit,field,message", [
    (lambda s: s.pop("version"), "version", "Version of service bad is either empty"),
    (lambda s: s["components"][0].update(artifact={"id": "x", "type": "RPM"}),
     "components[0].artifact.type", "RPM"),
    (lambda s: (s["components"][0].update(dependencies=["b"]),
                s["components"][1].update(dependencies=["a"])),
     "components[0].dependencies", "a cycle may exist"),
    (lambda s: s["components"][1].update(
        configuration={"properties": {"tarn.backups": "many"}}),
     "components[1].configuration.properties.tarn.backups", "needs a count"),
])
def test_bad_files_are_refused_with_the_fields_path(home, tmp_path, edit, field, message):
    spec = {"name": "bad", "version": "1", "resource": {"cpus": 1, "memory": "256"},
            "components": [{"name": "a", "number_of_containers": 1, "launch_command": "sleep 1"},
                           {"name": "b", "number_of_containers": 1, "launch_command": "sleep 1"}]}
    edit(spec)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    out = tarn(home, "launch", path, check=False)
    assert out.returncode == 2, out.stderr
    assert f"bad.json: {field}" in out.stderr and message in out.stderr, out.stderr
    assert not (home / "assembly" / "bad").exists()
