"""Submission through the ResourceManager's REST API on a real YARN (the mini cluster of
tests/yarn): `tarn yarn submit` stages the tarn binary with its libraries in HDFS and runs a
command as the ApplicationMaster; `tarn yarn status|kill|logs|list` follow it."""
import re

from conftest import run
from yarn_cluster import yarn_cluster  # noqa: F401  (the session fixture)

APP_ID = re.compile(r"^application_\d+_\d+$")


def submit(cluster, *args, check=False):
    proc = run("yarn", "submit", *args, env=cluster.env, check=check)
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    assert APP_ID.match(first), f"no application id:\n{proc.stdout}\n{proc.stderr}"
    return first, proc


def test_native_command_runs_in_the_am_container_with_staged_files_and_secret(yarn_cluster, tmp_path):
    job_file = tmp_path / "job.txt"
    job_file.write_text("job file contents\n")
    script = ("./tarn --version; cat ./job.txt; echo \"odd=$ODD\"; "
              "grep -c s3cr3t-value \"$HADOOP_TOKEN_FILE_LOCATION\"; "
              "echo \"staging=$TARN_YARN_STAGING_DIR\"; echo \"pwd=$PWD\"; "
              "ldd ./tarn | grep libcurl; exit 3")
    app_id, proc = submit(yarn_cluster, "--name", "native-probe", "--max-attempts", "1",
                          "--memory", "256", "--file", f"{job_file}#job.txt",
                          "--env", "ODD=a \"quoted\" $HOME `x` {{PWD}}",
                          "--secret", "tarn.test.secret=s3cr3t-value",
                          "--wait", "--timeout", "180", "--", "bash", "-c", script)
    # A command that never registers as an AM fails the application; --wait says so.
    assert proc.returncode == 1, proc.stderr
    assert f"{app_id} FAILED FAILED" in proc.stdout
    assert "exitCode: 3" in proc.stderr

    status = run("yarn", "status", app_id, env=yarn_cluster.env)
    assert "state         FAILED" in status.stdout
    assert "name          native-probe (type TARN" in status.stdout
    assert re.search(r"attempt 1 +container_\S+_01_000001 on localhost:\d+", status.stdout)

    # Finished: its NodeManager uploaded the logs to HDFS (log aggregation), tarn reads them there.
    logs = run("yarn", "logs", app_id, "--file", "stdout", env=yarn_cluster.env).stdout
    assert re.match(rf"Container: {app_id.replace('application', 'container')}_01_000001 on "
                    r"localhost:\d+\nLogAggregationType: AGGREGATED\n=+\nLogType:stdout\n", logs), logs
    lines = logs.split("LogContents:\n", 1)[1].split("End of LogType:stdout", 1)[0].splitlines()
    # The staged binary ran with its staged libraries; the job file and the secret arrived.
    assert lines[0].startswith("tarn ")
    assert lines[1] == "job file contents"
    assert lines[2] == "odd=a \"quoted\" $HOME `x` {{PWD}}"
    assert lines[3] == "1"  # the secret is in the container's credentials file
    # Self-contained: the loader takes the staged libraries from the container's folder.
    pwd = lines[5].removeprefix("pwd=")
    assert re.match(r"^\s*libcurl\.so\.4 => " + re.escape(pwd) + r"/libcurl\.so\.4 ", lines[6]), lines[6]
    staging = lines[4].removeprefix("staging=")
    assert staging == yarn_cluster.uri(f"/user/{yarn_cluster.user}/.tarn/staging/{app_id}")
    staged = yarn_cluster.list(staging.removeprefix(yarn_cluster.default_fs))
    assert staged == ["core-site.xml", "hdfs-site.xml", "job.txt", "yarn-site.xml"]
    # The binary and its libraries went to the shared cache, reused by the next job.
    cache = yarn_cluster.list(f"/user/{yarn_cluster.user}/.tarn/staging/cache")
    assert any(name.startswith("tarn.") for name in cache)
    assert any(name.startswith("libcurl.so") for name in cache)
    assert not any(name.startswith("libc.so") for name in cache)


def test_application_master_that_registers_ends_succeeded(yarn_cluster):
    # tarn's own minimal AM (Hadoop IPC + SASL, one child container, one killed container).
    app_id, proc = submit(yarn_cluster, "--name", "am-selftest", "--wait", "--timeout", "240",
                          "--", "tarn", "yarn", "am-selftest")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{app_id} FINISHED SUCCEEDED" in proc.stdout
    app = yarn_cluster.app(app_id)
    assert app["finalStatus"] == "SUCCEEDED" and app["applicationType"] == "TARN"
    logs = run("yarn", "logs", app_id, env=yarn_cluster.env).stdout
    assert "LogType:stdout\n" in logs and "LogType:stderr\n" in logs, logs
    # Every container of the application, each with its node, from the aggregated logs: the AM's
    # and its child's (the killed one may not have started).
    listed = run("yarn", "logs", app_id, "--list", env=yarn_cluster.env).stdout
    containers = re.findall(r"^Container: (container_\S+) on (localhost:\d+) \(aggregated, "
                            r"hdfs://\S+/tmp/logs/\S+/bucket-logs-tfile/\d{4}/" + app_id + r"/localhost_\d+\)$",
                            listed, re.M)
    assert len(containers) >= 2, listed
    assert "  launch_container.sh (" in listed, listed
    every = run("yarn", "logs", app_id, "--container", "all", env=yarn_cluster.env).stdout
    # Each container's stdout and stderr (a container killed before its command ran, as the
    # killed one may be on a loaded machine, has only the NodeManager's launch files).
    blocks = re.split(r"^(?=Container: )", listed, flags=re.M)
    with_output = [(c, node) for c, node in containers
                   if any(b.startswith(f"Container: {c} ") and "  stdout (" in b for b in blocks)]
    assert len(with_output) >= 2, listed
    assert all(f"Container: {c} on {node}\n" in every for c, node in with_output), every
    child = [c for c, _ in with_output if not c.endswith("_000001")][0]
    one = run("yarn", "logs", app_id, "--container", child, "--file", "all",
              env=yarn_cluster.env).stdout
    assert f"Container: {child} on " in one and "LogType:launch_container.sh" in one, one
    assert "Container: " + containers[0][0] not in one or containers[0][0] == child
    missing = run("yarn", "logs", app_id, "--container", child[:-1] + "9", env=yarn_cluster.env,
                  check=False)
    assert missing.returncode == 1 and "hold no container" in missing.stderr, missing.stderr
    no_file = run("yarn", "logs", app_id, "--file", "nosuch.log", env=yarn_cluster.env, check=False)
    assert no_file.returncode == 1 and "hold no file 'nosuch.log'" in no_file.stderr, no_file.stderr
    listed = run("yarn", "list", env=yarn_cluster.env).stdout
    assert re.search(app_id + r" +FINISHED +SUCCEEDED", listed)


def test_kill_a_running_application(yarn_cluster):
    app_id, proc = submit(yarn_cluster, "--name", "sleeper", "--max-attempts", "1",
                          "--", "sleep", "600", check=True)
    # An AM that never registers stays ACCEPTED (RUNNING comes with registration) while its
    # container runs.
    yarn_cluster.wait_for_am_container(app_id)
    status = run("yarn", "status", app_id, env=yarn_cluster.env)
    assert "state         ACCEPTED" in status.stdout
    assert "final status  UNDEFINED" in status.stdout
    assert re.search(r"attempt 1 +container_\S+_01_000001", status.stdout)

    killed = run("yarn", "kill", app_id, env=yarn_cluster.env)
    assert f"{app_id}: KILLED (final status KILLED)" in killed.stdout
    assert yarn_cluster.app(app_id)["state"] == "KILLED"
    again = run("yarn", "kill", app_id, env=yarn_cluster.env)  # already done: not an error
    assert "KILLED" in again.stdout


def test_yarn_commands_report_bad_input_clearly(yarn_cluster):
    unknown = run("yarn", "status", "application_1_99999", env=yarn_cluster.env, check=False)
    assert unknown.returncode == 1 and "application_1_99999" in unknown.stderr
    assert "not found" in unknown.stderr
    bad_id = run("yarn", "kill", "job_1", env=yarn_cluster.env, check=False)
    assert bad_id.returncode == 2 and "not an application id" in bad_id.stderr
    no_command = run("yarn", "submit", "--wait", env=yarn_cluster.env, check=False)
    assert no_command.returncode == 2 and "after --" in no_command.stderr
    nowhere = run("yarn", "list", "-Dyarn.resourcemanager.webapp.address=127.0.0.1:1",
                  env=yarn_cluster.env, check=False)
    assert nowhere.returncode == 1 and "127.0.0.1:1" in nowhere.stderr


def test_train_asking_more_than_the_cluster_holds_fails_in_seconds(yarn_cluster, tmp_path):
    """tarn's default containers (a 4g AM, a 4g parameter server, 2g workers) do not fit on two
    4 GB NodeManagers at once: train says so before submitting, instead of waiting for nodes
    that never come."""
    from conftest import edit_config, good_rows, small_model_set
    ms = small_model_set(tmp_path, good_rows(300))
    edit_config(ms, **{"train.numTrainEpochs": 1, "basic.runMode": "DIST"})
    for step in (["init"], ["stats"], ["norm", "-Dtarn.norm.shards=2"], ["varsel"]):
        run(*step, cwd=ms)
    def app_ids():
        return {line.split()[0] for line in run("yarn", "list", env=yarn_cluster.env).stdout
                .splitlines()[1:] if line.strip()}
    before = app_ids()
    yarn = ("-Dtarn.cluster.backend=yarn", "-Dtarn.cluster.host=127.0.0.1")
    proc = run("train", *yarn, cwd=ms, env=yarn_cluster.env, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    err = proc.stderr
    assert "YARN cannot run the job: its containers do not fit" in err, err
    # What was asked, what the cluster has, what to lower.
    assert "1 ApplicationMaster (coordinator) of 4096 MB, 1 vcores" in err, err
    assert "1 parameter server of 4096 MB, 2 vcores" in err, err
    assert "3 workers of 2048 MB, 2 vcores" in err, err
    assert "2 running nodes (2 of 4096 MB, 8 vcores)" in err, err
    assert "at most 4096 MB, 8 vcores per container" in err, err
    assert "shifu.worker.memory" in err and "shifu.ps.memory" in err and "shifu.am.memory" in err
    assert "submitted YARN application" not in proc.stdout
    assert app_ids() == before  # nothing was submitted
    # One container larger than the largest the cluster gives: its setting is named.
    proc = run("train", *yarn, "-Dshifu.ps.memory=6g", "-Dshifu.am.memory=256m",
               "-Dshifu.worker.memory=256m", cwd=ms, env=yarn_cluster.env, check=False)
    assert proc.returncode == 1
    assert ("each parameter server asks 6144 MB, more than the 4096 MB of the largest container: "
            "lower shifu.ps.memory") in proc.stderr, proc.stderr
