"""The operations walkthrough, as a user types it in two shells: start a head, submit a job
with its working directory, follow its logs, look at the cluster (status, tasks, summary),
stop the job, stop the cluster. Every command runs as its own process; each output is
checked."""

import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time

RAY = [sys.executable, "-m", "ray.scripts.cli"]

SCRIPT = textwrap.dedent("""
    import time
    import ray
    import shapes  # next to the script in the working directory

    ray.init()

    @ray.remote
    def area(side):
        return shapes.square(side)

    total = sum(ray.get([area.remote(i) for i in range(20)]))
    print(f"sum of 20 squares: {total}", flush=True)
    while True:  # a long job: the walkthrough stops it
        print("tick", flush=True)
        time.sleep(0.5)
""")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_walkthrough_start_submit_follow_status_list_summary_stop(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / "script.py").write_text(SCRIPT)
    (work / "shapes.py").write_text("def square(x):\n    return x * x\n")
    temp_dir = str(tmp_path / "ray")
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)

    def ray(*args, timeout=120, **kwargs):
        out = subprocess.run(RAY + list(args), capture_output=True, text=True, timeout=timeout,
                             env=env, cwd=str(work), **kwargs)
        return out

    port = _free_port()
    start = ray("start", "--head", "--port", str(port), "--num-cpus", "2", "--temp-dir",
                temp_dir, "--dashboard-port", str(_free_port()), "--node-ip-address", "127.0.0.1")
    assert start.returncode == 0, start.stderr
    assert f"The cluster address is 127.0.0.1:{port}" in start.stdout
    dashboard = re.search(r"Dashboard: (http://\S+)", start.stdout).group(1)
    env["RAY_ADDRESS"] = dashboard  # as `ray job` users do
    gcs = ["--address", f"127.0.0.1:{port}"]
    follow = None
    try:
        submit = ray("job", "submit", "--no-wait", "--working-dir", ".", "--",
                     "python", "script.py")
        assert submit.returncode == 0, submit.stderr
        sid = re.search(r"Job '(raysubmit_\w+)' submitted successfully", submit.stdout).group(1)
        assert f"ray job logs {sid}" in submit.stdout

        follow = subprocess.Popen(RAY + ["job", "logs", "--follow", sid], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        seen: list[str] = []
        reader = threading.Thread(target=lambda: seen.extend(follow.stdout), daemon=True)
        reader.start()
        deadline = time.time() + 90
        while time.time() < deadline and not ("tick\n" in seen and any(
                "sum of 20 squares: 2470" in line for line in seen)):
            time.sleep(0.2)
        assert "tick\n" in seen and "sum of 20 squares: 2470\n" in seen, seen

        # The job's workers hand their CPUs back once idle, and status reads the
        # heartbeats that follow: poll until it settles.
        deadline = time.time() + 60
        while True:
            status = ray("status", *gcs)
            assert status.returncode == 0, status.stderr
            if " 0/2 CPU" in status.stdout or time.time() > deadline:
                break
            time.sleep(0.5)
        assert "(127.0.0.1, head)" in status.stdout and " 0/2 CPU" in status.stdout, \
            status.stdout
        assert "(no resource demands)" in status.stdout

        listed = ray("list", "tasks", "--filter", "state=FINISHED", "--limit", "1000", *gcs)
        assert listed.returncode == 0, listed.stderr
        rows = [line.split() for line in listed.stdout.splitlines()
                if re.match(r"^\d+\s+[0-9a-f]{32}\s", line)]
        names = [r[3] for r in rows]
        assert names.count("area") == 20, listed.stdout
        assert all(r[4] == "FINISHED" for r in rows)

        summary = ray("summary", "tasks", *gcs)
        assert summary.returncode == 0, summary.stderr
        area_line = next(line for line in summary.stdout.splitlines() if " area " in line)
        assert "FINISHED: 20" in area_line and "NORMAL_TASK" in area_line
        assert "total_tasks: 20" in summary.stdout
        assert re.search(r"JobSupervisor\.run\s+RUNNING: 1", summary.stdout), summary.stdout

        stop = ray("job", "stop", sid)
        assert stop.returncode == 0, stop.stderr
        assert f"Job '{sid}' was stopped" in stop.stdout
        assert follow.wait(timeout=60) == 0  # following ends with the job
        status = ray("job", "status", sid)
        assert f"Status for job '{sid}': STOPPED" in status.stdout
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
            follow.wait()
        stopped = ray("stop", "--temp-dir", temp_dir)
    # redis, the raylet, the dashboard (and the job's workers, children of the raylet)
    count = re.search(r"Stopped (\d+) ray processes", stopped.stdout)
    assert stopped.returncode == 0 and count and int(count.group(1)) >= 3, stopped.stdout
