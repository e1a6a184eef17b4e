"""Reading `tarn assembly status --json` in the assembly tests (local and YARN backends)."""
import json
import time


def wait_until(read_status, name, done, what, limit_s, poll_s):
    """Polls read_status() until done(status) (bounded: a hung service fails the test)."""
    deadline = time.monotonic() + limit_s
    s = None
    while time.monotonic() < deadline:
        s = read_status()
        if done(s):
            return s
        time.sleep(poll_s)
    raise AssertionError(f"{name}: {what} did not happen; status:\n{json.dumps(s, indent=1)}")


def final(s):
    return s["state"] in ("SUCCEEDED", "FAILED", "STOPPED")


def component(s, name):
    return next(c for c in s["components"] if c["name"] == name)


def instance(s, name):
    return next(i for c in s["components"] for i in c["containers"]
                if i["component_instance_name"] == name)
