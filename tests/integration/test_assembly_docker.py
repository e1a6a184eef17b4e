"""DOCKER components on the local backend, against a live Docker daemon.

The module starts a private dockerd (its own socket, data and exec roots under /tmp, no bridge,
no iptables rules; overlay2, else vfs) and imports a test image from the machine's static
busybox and bash (Debian's busybox-static and bash-static): no registry is reached. tarn finds
the daemon through DOCKER_HOST. Without dockerd, root, or those binaries the tests skip and say
which is missing.
"""
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from assembly_status import component, final, instance, wait_until
from conftest import run

IMAGE = "tarn-test/busybox:1"
STATIC_BASH = "/bin/bash-static"


def docker(env, *args, check=True):
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, env=env,
                          timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def start_dockerd(root, driver):
    """A private dockerd on root/docker.sock; the process and its environment for clients, or
    None and the reason when it did not answer."""
    sock = root / "docker.sock"
    log = open(root / f"dockerd-{driver}.log", "w")
    proc = subprocess.Popen(
        ["dockerd", "--host", f"unix://{sock}", "--data-root", str(root / "data"),
         "--exec-root", str(root / "exec"), "--pidfile", str(root / "dockerd.pid"),
         "--bridge", "none", "--iptables=false", "--ip6tables=false",
         "--storage-driver", driver],
        stdout=log, stderr=subprocess.STDOUT)
    env = {**os.environ, "DOCKER_HOST": f"unix://{sock}"}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if sock.exists() and docker(env, "info", check=False).returncode == 0:
            return proc, env, ""
        time.sleep(0.3)
    stop_dockerd(proc)
    tail = (root / f"dockerd-{driver}.log").read_text().strip().splitlines()[-3:]
    return None, None, f"dockerd --storage-driver {driver} did not answer: " + " / ".join(tail)


def stop_dockerd(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def unmount_under(root):
    """What dockerd left mounted under root (its network namespace, a storage mount)."""
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    for point in sorted((p for p in points if p.startswith(f"{root}/")), reverse=True):
        subprocess.run(["umount", point], capture_output=True)


def import_image(env, root):
    """IMAGE: busybox with its applets linked in /bin, and a static bash (tarn runs a launch
    command under bash, as YARN's Docker runtime does)."""
    rootfs = root / "rootfs.tar"
    with tarfile.open(rootfs, "w") as tar:
        tar.add(shutil.which("busybox"), "bin/busybox")
        tar.add(STATIC_BASH, "bin/bash")
        for applet in ("sh", "cat", "echo", "httpd", "id", "mkdir", "seq", "sleep", "touch",
                       "wget"):
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        tmp = tarfile.TarInfo("tmp")
        tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(tmp)
    docker(env, "import", str(rootfs), IMAGE)


@pytest.fixture(scope="module")
def docker_env():
    """The environment that points docker clients (and tarn) at the private daemon."""
    missing = [what for what, found in (("dockerd", shutil.which("dockerd")),
                                        ("the docker client", shutil.which("docker")),
                                        ("busybox", shutil.which("busybox")),
                                        (STATIC_BASH, os.path.exists(STATIC_BASH))) if not found]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (docker.io, busybox-static, "
                    "bash-static: scripts/install-deps)")
    if os.geteuid() != 0:
        pytest.skip("a private dockerd needs root; these tests run as uid "
                    f"{os.geteuid()}")
    # Short: unix socket paths are limited to 108 bytes, containerd's are under exec-root.
    root = Path(tempfile.mkdtemp(prefix="tarn-dockerd-", dir="/tmp"))
    reasons = []
    for driver in ("overlay2", "vfs"):
        proc, env, why = start_dockerd(root, driver)
        if proc:
            break
        reasons.append(why)
    else:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip("; ".join(reasons))
    try:
        import_image(env, root)
        yield env
    finally:
        docker(env, "rm", "-f", *docker(env, "ps", "-aq").stdout.split(), check=False)
        stop_dockerd(proc)
        unmount_under(root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def home(tmp_path):
    yield tmp_path
    for supervisor in (tmp_path / "assembly").glob("*/supervisor.json"):
        try:
            os.kill(json.loads(supervisor.read_text())["pid"], 15)
        except (OSError, ValueError, KeyError):
            pass


def tarn(home, env, *args, check=True):
    return run("assembly", *args, check=check,
               env={"TARN_HOME": str(home), "DOCKER_HOST": env["DOCKER_HOST"]})


def status(home, env, name):
    return json.loads(tarn(home, env, "status", name, "--json").stdout)


def wait_status(home, env, name, done, what):
    return wait_until(lambda: status(home, env, name), name, done, what, 120, poll_s=0.3)


def containers(env):
    """Every container the daemon has, running or not: {name: state}."""
    out = docker(env, "ps", "-a", "--format", "{{.Names}} {{.State}}").stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_service(tmp_path, name, components):
    spec = {"name": name, "version": "1", "resource": {"cpus": 1, "memory": "256"},
            "artifact": {"id": IMAGE, "type": "DOCKER"}, "components": components}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec, indent=1))
    return path


WEB = ("mkdir -p www && cat /etc/boxed/greeting.properties conf/site.properties > www/index.html"
       " && echo \"uid $(id -u) in $PWD, GREETING=$GREETING, WORK_DIR=$WORK_DIR\" >> www/index.html"
       " && exec httpd -f -p 127.0.0.1:$PORT -h www")
FAILS_ONCE = "if [ -e ran-once ]; then exit 0; fi; touch ran-once; exit 3"


def test_docker_components_serve_restart_flex_and_leave_no_container(docker_env, home, tmp_path):
    port = free_port()
    spec = write_service(tmp_path, "boxed", [
        {"name": "web", "number_of_containers": 1, "launch_command": WEB,
         "configuration": {
             "env": {"PORT": str(port), "GREETING": "hello from ${COMPONENT_INSTANCE_NAME}"},
             "files": [{"type": "PROPERTIES", "dest_file": "/etc/boxed/greeting.properties",
                        "properties": {"mounted": "read-only"}},
                       {"type": "PROPERTIES", "dest_file": "site.properties",
                        "properties": {"site": "${SERVICE_NAME}"}}]},
         "readiness_check": {"type": "HTTP",
                             "properties": {"url": f"http://${{THIS_HOST}}:{port}/index.html"}}},
        {"name": "flaky", "number_of_containers": 1, "restart_policy": "ON_FAILURE",
         "dependencies": ["web"], "launch_command": FAILS_ONCE},
        {"name": "sleeper", "number_of_containers": 2, "dependencies": ["web"],
         "launch_command": "exec sleep 300"}])
    tarn(home, docker_env, "launch", spec)
    s = wait_status(home, docker_env, "boxed",
                    lambda s: final(s) or (s["state"] == "STABLE" and component(s, "flaky")
                                           ["containers"][0]["state"] == "SUCCEEDED"),
                    "web and both sleepers READY, flaky SUCCEEDED")
    assert s["state"] == "STABLE", s

    # The web server runs in the image, in its instance folder with the component's env and
    # both config files (the absolute one mounted), on the host network.
    web = instance(s, "web-0")
    assert web["runtime"] == "container" and web["image"] == IMAGE
    assert web["container_name"].startswith("tarn-boxed-web-0-")
    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10).read()
    page = page.decode()
    assert "mounted=read-only" in page and "site=boxed" in page, page
    assert (f"uid {os.getuid()} in {web['dir']}, GREETING=hello from web-0, "
            f"WORK_DIR={web['dir']}") in page, page
    names = {i["component_instance_name"]: i["container_name"]
             for c in s["components"] for i in c["containers"]}
    # A sleeper is READY once its `docker run` started; its container appears a moment later.
    expected = {names["web-0"]: "running", names["sleeper-0"]: "running",
                names["sleeper-1"]: "running"}
    wait_until(lambda: containers(docker_env), "boxed", lambda c: c == expected,
               f"the containers {expected}", 60, poll_s=0.3)

    # The failed run's exit code reached tarn, and ON_FAILURE ran the container again.
    flaky = instance(s, "flaky-0")
    assert flaky["restarts"] == 1 and flaky["exit_code"] == 0, flaky
    assert (Path(flaky["dir"]) / "ran-once").stat().st_uid == os.getuid()
    supervisor_log = (home / "assembly" / "boxed" / "supervisor.log").read_text()
    assert "(flaky 0) exited with code 3" in supervisor_log, supervisor_log[-3000:]

    text = tarn(home, docker_env, "status", "boxed").stdout
    assert f"in a Docker container: image {IMAGE}, container {names['web-0']}" in text, text

    # A flex down kills the newest sleeper and removes its container.
    tarn(home, docker_env, "flex", "boxed", "--component", "sleeper", "-1")
    s = wait_status(home, docker_env, "boxed",
                    lambda s: len(component(s, "sleeper")["containers"]) == 1, "a flex down")
    assert names["sleeper-1"] not in containers(docker_env)
    assert names["sleeper-0"] in containers(docker_env)

    # Stop leaves no container behind.
    assert "Stopped service boxed" in tarn(home, docker_env, "stop", "boxed").stdout
    s = status(home, docker_env, "boxed")
    assert s["state"] == "STOPPED"
    assert instance(s, "web-0")["state"] == "STOPPED"
    assert containers(docker_env) == {}


TF_PS = "echo ps > index.html && exec httpd -f -p $PS_HOSTS -h ."
TF_WORKER = ("echo \"$TF_CONFIG\" > tf_config.json; "
             "for i in $(seq 100); do wget -q -O /dev/null http://$PS_HOSTS/ && exit 7; "
             "sleep 0.1; done; exit 1")


def test_tf_tasks_in_containers_reach_their_reserved_ports(docker_env, home, tmp_path):
    """The ps serves on the address tarn reserved for it, the worker (the chief) reaches it and
    ends the job with its exit code; no container is left."""
    spec = write_service(tmp_path, "tfbox", [
        {"name": "ps", "number_of_containers": 1, "launch_command": TF_PS},
        {"name": "worker", "number_of_containers": 1, "restart_policy": "NEVER",
         "launch_command": TF_WORKER}])
    tarn(home, docker_env, "launch", spec)
    s = wait_status(home, docker_env, "tfbox",
                    lambda s: final(s) and all(i["state"] not in ("READY", "RUNNING_BUT_UNREADY")
                                               for c in s["components"] for i in c["containers"]),
                    "the job's end")
    worker = instance(s, "worker-0")
    assert s["state"] == "FAILED" and s["exit_code"] == 7, s
    assert worker["exit_code"] == 7 and worker["runtime"] == "container"
    ps = instance(s, "ps-0")
    tf_config = json.loads((Path(worker["dir"]) / "tf_config.json").read_text())
    assert tf_config == {"cluster": {"ps": [ps["tf_task"]["address"]],
                                     "worker": [worker["tf_task"]["address"]]},
                         "task": {"type": "worker", "index": 0}}
    assert ps["state"] == "STOPPED"
    assert containers(docker_env) == {}
