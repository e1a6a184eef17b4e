"""tarn's ApplicationMaster protocol clients on a real YARN (the Hadoop 3.5.0 mini cluster of
tests/yarn, started once per session by yarn_cluster.py).

`tarn yarn submit` stages tarn in HDFS and runs `tarn yarn am-selftest` as the application's
ApplicationMaster. The AM authenticates to the ResourceManager's scheduler with the AMRMToken
from its container credentials (Hadoop IPC + SASL DIGEST-MD5), registers, runs a container to
completion through a NodeManager (NMToken), kills another, and unregisters with a final status
and diagnostics. With --previous, the first attempt crashes leaving a container running, and the
second attempt (keep-containers-across-application-attempts) adopts and kills it.
"""
from pathlib import Path

from conftest import run
from yarn_cluster import yarn_cluster  # noqa: F401  (the session fixture)


def submit(cluster, *am_args, max_attempts=1):
    proc = run("yarn", "submit", "--name", "am-selftest", "--max-attempts", str(max_attempts),
               "--memory", "256", "--wait", "--timeout", "240",
               "--", "tarn", "yarn", "am-selftest", *am_args, env=cluster.env, check=False)
    lines = proc.stdout.splitlines()
    assert lines and lines[0].startswith("application_"), f"{proc.stdout}\n{proc.stderr}"
    return lines[0], proc


def container_logs(cluster, app_id):
    """{container id: {file name: text}} from the NodeManagers' log folders."""
    logs = {}
    for nm in cluster.ready["nodemanagers"]:
        for log_dir in nm["log_dirs"].split(","):
            for container in (Path(log_dir) / app_id).glob("container_*"):
                logs[container.name] = {f.name: f.read_text(errors="replace")
                                        for f in container.iterdir() if f.is_file()}
    return logs


def report(cluster, app_id, proc):
    app = cluster.app(app_id)
    text = [f"{app_id}: {app['state']} {app['finalStatus']}: {app.get('diagnostics', '')}",
            f"--- tarn yarn submit ({proc.returncode})\n{proc.stdout}\n{proc.stderr}"]
    for container, files in sorted(container_logs(cluster, app_id).items()):
        for name in ("stdout", "stderr"):
            text.append(f"--- {container}/{name}\n{files.get(name, '')}")
    return app, "\n".join(text)


def am_stdout(logs, attempt=1):
    return next(f.get("stdout", "") for n, f in logs.items() if n.endswith(f"_{attempt:02d}_000001"))


def test_am_registers_runs_and_kills_containers_and_unregisters(yarn_cluster):
    app_id, proc = submit(yarn_cluster)
    app, why = report(yarn_cluster, app_id, proc)
    assert proc.returncode == 0, why
    assert app["state"] == "FINISHED" and app["finalStatus"] == "SUCCEEDED", why
    assert app["diagnostics"] == "am-selftest: all checks passed", why

    logs = container_logs(yarn_cluster, app_id)
    assert len(logs) == 3, why  # the AM, the child and the killed sleeper
    am = am_stdout(logs)
    assert f"registered appattempt_{app_id[len('application_'):]}_000001" in am, why
    assert "child exited 0" in am, why
    # The sleeper's process was running (SIGTERM: 143) when the AM stopped its container.
    assert "KILLED_BY_APPMASTER" in am and "exit code 143" in am, why
    # The child ran the staged ./tarn (its libraries found through LD_LIBRARY_PATH={{PWD}})
    # with its arguments and environment intact through the NodeManager's launch script.
    child = [f["stdout"] for f in logs.values() if "arg=" in f.get("stdout", "")]
    assert len(child) == 1, why
    lines = child[0].splitlines()
    assert lines[:3] == ["arg=two words", "arg=it's", "arg=$HOME"], why
    assert lines[3] == "value=a \"quoted\" $HOME `x` it's \\ {{PWD}} done", why


def test_am_failure_unregisters_failed_with_diagnostics(yarn_cluster):
    # A container larger than the cluster's largest: the AM refuses it and unregisters FAILED.
    app_id, proc = submit(yarn_cluster, "--memory", "1000000")
    app, why = report(yarn_cluster, app_id, proc)
    assert proc.returncode != 0, why
    assert app["state"] == "FINISHED" and app["finalStatus"] == "FAILED", why
    assert "yarn.scheduler.maximum-allocation-mb" in app["diagnostics"], why


def test_second_attempt_adopts_the_containers_of_the_first(yarn_cluster):
    app_id, proc = submit(yarn_cluster, "--previous", max_attempts=2)
    app, why = report(yarn_cluster, app_id, proc)
    assert proc.returncode == 0, why
    assert app["finalStatus"] == "SUCCEEDED", why
    logs = container_logs(yarn_cluster, app_id)
    first, second = am_stdout(logs, 1), am_stdout(logs, 2)
    assert "leaving container_" in first and "crashing" in first, why
    assert "1 containers from earlier attempts" in second, why
    assert "adopted container_" in second and "KILLED_BY_APPMASTER" in second, why
