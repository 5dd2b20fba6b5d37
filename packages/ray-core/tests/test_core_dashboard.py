"""The web dashboard: its process lifecycle, its JSON API, and the page in headless Chromium.

The browser test drives ``chromium --headless`` over the DevTools protocol
(websocket-client): the page must load without console errors, show the node
and a running actor, and draw the timeline; its screenshot is saved under
``test-artifacts/`` (git-ignored) and the path printed.
"""

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import psutil
import pytest
import requests

import ray
from ray.job_submission import JobStatus, JobSubmissionClient

ARTIFACTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "test-artifacts")
SMALL_STORE = 256 * 1024**2


def _get(url, path, **kwargs):
    response = requests.get(url + path, timeout=15, **kwargs)
    response.raise_for_status()
    return response.json()


def _wait_for(fn, timeout_s=15.0):
    deadline = time.time() + timeout_s
    while True:
        value = fn()
        if value or time.time() > deadline:
            return value
        time.sleep(0.2)


# -- lifecycle (own clusters; they run before the module-scoped one below, whose
# shutdown the repository's leak check covers: the dashboard is a child process) -----------------


def test_bad_dashboard_port_is_rejected_before_anything_starts():
    with pytest.raises(ValueError, match="dashboard_port"):
        ray.init(num_cpus=1, include_dashboard=True, dashboard_port=70000)
    assert not ray.is_initialized()


def test_driver_joining_a_cluster_starts_a_dashboard_on_the_next_free_port_and_stops_it():
    from ray.cluster_utils import Cluster

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    cluster = Cluster()
    try:
        cluster.add_node(num_cpus=1)
        ctx = ray.init(address=cluster.address, include_webui=True, dashboard_port=port)
        url = ray.get_webui_url()
        used = int(url.rsplit(":", 1)[1])
        assert port < used < port + 50
        assert ctx.dashboard_url == f"127.0.0.1:{used}" and ctx["webui_url"] == url
        assert _get(url, "/api/nodes")[0]["alive"]
        pid = ray._private.runtime.current().dashboard_process.pid
        ray.shutdown()
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    finally:
        ray.shutdown()
        cluster.shutdown()
        taken.close()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_start_include_webui_serves_the_cluster_until_ray_stop(tmp_path):
    ray_cli = [sys.executable, "-m", "ray.scripts.cli"]
    temp_dir = str(tmp_path / "ray")
    start = subprocess.run(
        ray_cli + ["start", "--head", "--port", str(_free_port()), "--num-cpus", "1",
                   "--temp-dir", temp_dir, "--include-webui", "--dashboard-port",
                   str(_free_port()), "--node-ip-address", "127.0.0.1"],
        capture_output=True, text=True, timeout=120,
    )
    try:
        assert start.returncode == 0, start.stderr
        url = next(line.split()[-1] for line in start.stdout.splitlines()
                   if line.startswith("Dashboard:"))
        nodes = _get(url, "/api/nodes")
        assert len(nodes) == 1 and nodes[0]["is_head"] and nodes[0]["resources_total"]["CPU"] == 1
    finally:
        stop = subprocess.run(ray_cli + ["stop", "--temp-dir", temp_dir],
                              capture_output=True, text=True, timeout=60)
    assert "Stopped 3 ray processes" in stop.stdout  # redis, raylet and the dashboard
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)


# -- one cluster with a dashboard for the API and browser tests -----------------------------------


@pytest.fixture(scope="module")
def dashboard():
    ray.init(num_cpus=2, object_store_memory=SMALL_STORE, include_dashboard=True)
    yield ray.get_webui_url()
    ray.shutdown()


@ray.remote
class Sleeper:
    def nap(self, seconds):
        print("napping", seconds)
        time.sleep(seconds)
        return seconds


@ray.remote
def square(x):
    return x * x


@ray.remote
def add(*xs):
    return sum(xs)


def test_api_serves_nodes_actors_tasks_errors_logs_and_timeline(dashboard):
    url = dashboard
    sleeper = Sleeper.remote()
    napping = sleeper.nap.remote(2.0)

    @ray.remote
    def broken():
        raise ValueError("dashboard shows this")

    assert ray.get(add.remote(*[square.remote(i) for i in range(4)])) == 14
    with pytest.raises(ray.exceptions.RayTaskError):
        ray.get(broken.remote())

    (node,) = _get(url, "/api/nodes")
    assert node["alive"] and node["node_ip"] == "127.0.0.1"
    assert node["resources_total"]["CPU"] == 2
    actors = _get(url, "/api/actors")
    assert any(a["class_name"] == "Sleeper" and a["state"] == "ALIVE" for a in actors)
    running = _wait_for(lambda: _get(url, "/api/tasks")["running"])
    assert any(t["name"] == "Sleeper" for t in running)
    finished = _wait_for(lambda: [t for t in _get(url, "/api/tasks")["finished"]  # owner and
                                  if t["FunctionName"].endswith("add")     # worker flush apart
                                  and t["SubmitTime"] is not None])
    assert finished and finished[0]["SubmitTime"] <= finished[0]["StartTime"]
    errors = _wait_for(lambda: _get(url, "/api/errors"))
    assert any("dashboard shows this" in e["message"] for e in errors)
    logs = _wait_for(lambda: [w for w in _get(url, "/api/logs")
                              if any("napping" in line for _, _, line in w["lines"])])
    assert logs
    trace = _get(url, "/api/timeline")
    assert any(e["ph"] == "f" and e["cat"] == "dependency" for e in trace)
    few = _get(url, "/api/timeline", params={"limit": 3})
    assert len([e for e in few if e["ph"] == "X"]) <= 3
    assert requests.get(f"{url}/api/timeline", params={"limit": "x"}, timeout=10).status_code == 400
    assert any(w["mode"] == "driver" for w in _get(url, "/api/workers"))
    files = [f["name"] for f in _get(url, "/api/logs/files")]
    assert "dashboard.out" in files
    text = requests.get(f"{url}/api/logs/file", params={"name": "dashboard.out"}, timeout=10)
    assert "dashboard at" in text.text
    assert requests.get(f"{url}/api/logs/file", params={"name": "../x"}, timeout=10).status_code == 400
    assert requests.get(f"{url}/api/logs/file", params={"name": "nope"}, timeout=10).status_code == 404
    assert "Ray dashboard" in requests.get(url, timeout=10).text
    assert ray.get(napping) == 2.0
    ray.kill(sleeper)


# -- the page in headless Chromium ------------------------------------------------------------


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which(
        "google-chrome")


class DevTools:
    """The smallest DevTools-protocol client: commands in order, events collected."""

    def __init__(self, ws_url):
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=30)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            self.events.append(msg)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def console_errors(self):
        errors = []
        for e in self.events:
            params = e.get("params", {})
            if e.get("method") == "Runtime.exceptionThrown":
                errors.append(params["exceptionDetails"].get("text", "exception"))
            elif e.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error":
                errors.append(" ".join(str(a.get("value")) for a in params.get("args", [])))
            elif e.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
                errors.append(params["entry"]["text"])
        return errors

    def close(self):
        self.ws.close()


@pytest.fixture
def browser():
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed: run ci/system_deps.sh")
    profile = tempfile.mkdtemp(prefix="ray-chromium-")
    proc = subprocess.Popen(
        [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-extensions", "--no-first-run", "--remote-debugging-port=0",
         "--disable-background-networking", "--disable-quic", "--disable-component-update",
         "--disable-sync",
         f"--user-data-dir={profile}", "--window-size=1280,1800", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    tools = None
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        assert _wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(),
                         30), "chromium did not open its DevTools port"
        port = int(open(port_file).read().split()[0])
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(p for p in pages if p["type"] == "page")
        tools = DevTools(page["webSocketDebuggerUrl"])
        for domain in ("Runtime", "Log", "Page"):
            tools.call(f"{domain}.enable")
        yield tools
    finally:
        if tools is not None:
            tools.close()
        family = [proc] + psutil.Process(proc.pid).children(recursive=True)
        os.killpg(proc.pid, signal.SIGTERM)
        _, alive = psutil.wait_procs(family, timeout=10)
        for p in alive:
            p.kill()
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


PAGES = ("overview", "jobs", "nodes", "actors", "tasks", "metrics", "logs")
NUM_TASKS = 10_000


def _screenshot(browser, name):
    shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    png = base64.b64decode(shot["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.abspath(os.path.join(ARTIFACTS, f"dashboard-{name}.png"))
    with open(path, "wb") as f:
        f.write(png)
    print(f"dashboard screenshot: {path}")
    return path


def _open(browser, url, page, query=""):
    """Navigate to a page (a fresh load) and wait for its first render; returns the time
    from the navigation's start to its rendered data (ms, measured by the page) and the
    wall time seen here."""
    started = time.monotonic()
    browser.call("Page.navigate", url=f"{url}/?refresh_ms=60000&n={time.monotonic()}#/{page}{query}")
    loaded = _wait_for(lambda: browser.evaluate(
        f"document.body && document.body.dataset.page === '{page}' && "
        "document.body.dataset.loaded === '1' && performance.timing.loadEventEnd > 0"), 30)
    wall_ms = (time.monotonic() - started) * 1000
    assert loaded, browser.evaluate("document.body.innerText")[:2000]
    return float(browser.evaluate("document.body.dataset.navMs")), wall_ms


def _text(browser, element_id):
    return browser.evaluate(f"document.getElementById('{element_id}').innerText")


def test_every_page_loads_fast_with_right_counts_after_10k_tasks(dashboard, browser):
    from ray.util import state

    sleeper = Sleeper.remote()
    napping = sleeper.nap.remote(60.0)  # running while the pages load
    ray.get([square.remote(i) for i in range(NUM_TASKS)])
    refs = [add.remote(*[square.remote(i) for i in range(4)]) for _ in range(3)]
    assert ray.get(refs) == [14, 14, 14]

    @ray.remote
    def broken():
        raise ValueError("the dashboard lists this one as FAILED")

    with pytest.raises(ray.exceptions.RayTaskError):
        ray.get(broken.remote())
    finished_wanted = NUM_TASKS + 15
    assert _wait_for(lambda: len(state.list_tasks(filters=[("state", "=", "FINISHED")],
                                                 limit=10_000, raise_on_missing_output=False))
                     >= 10_000, 30)
    summary = _wait_for(lambda: (lambda s: s if sum(
        v["state_counts"].get("FINISHED", 0) for v in s["summary"].values()) >= finished_wanted
        else None)(state.summarize_tasks()["cluster"]), 30)
    assert summary, state.summarize_tasks()
    counts = {}
    for entry in summary["summary"].values():
        for st, n in entry["state_counts"].items():
            counts[st] = counts.get(st, 0) + n
    assert counts["FAILED"] >= 1 and counts.get("RUNNING", 0) >= 1  # the nap

    jobs = JobSubmissionClient(dashboard)
    submitted = jobs.submit_job(entrypoint="python -c \"print('a submitted job')\"")
    assert _wait_for(lambda: jobs.get_job_status(submitted) == JobStatus.SUCCEEDED, 60)

    timings = {}
    for page in PAGES:  # every load is timed: one fresh navigation per page
        timings[page], wall_ms = _open(browser, dashboard, page)
        print(f"page {page}: {timings[page]:.0f} ms from navigation start to rendered "
              f"data ({wall_ms:.0f} ms wall, incl. the DevTools round trips)")
        if page == "overview":
            assert int(browser.evaluate(
                "document.getElementById('timeline-canvas').dataset.drawnSpans || 0")) > 0
            assert "Sleeper" in _text(browser, "running-table")
            assert "dashboard lists this one" in _text(browser, "errors-list")
        elif page == "jobs":
            listed = _text(browser, "jobs-table")
            assert submitted in listed and "SUCCEEDED" in listed
            assert ray.get_runtime_context().get_job_id() in listed
        elif page == "nodes":
            text = _text(browser, "nodes-table")
            assert "127.0.0.1" in text and "ALIVE" in text and "Object store" in text
        elif page == "actors":
            assert "Sleeper" in _text(browser, "actors-table")
        elif page == "tasks":
            shown = {st: int(browser.evaluate(
                f"document.querySelector('#task-counts [data-state={st}]').dataset.count"))
                for st in ("FINISHED", "FAILED", "RUNNING")}
            assert shown["FINISHED"] == counts["FINISHED"] and shown["FAILED"] == counts["FAILED"]
            assert shown["RUNNING"] == counts.get("RUNNING", 0)
            rows = browser.evaluate("document.querySelectorAll('#tasks-table tr').length")
            assert rows == 201  # header + the newest 200
        elif page == "metrics":
            assert int(browser.evaluate(
                "document.getElementById('histogram-canvas').dataset.total")) >= finished_wanted
            assert int(browser.evaluate(
                "document.getElementById('heatmap-canvas').dataset.rows")) == 1
            assert int(browser.evaluate(
                "document.getElementById('heatmap-canvas').dataset.cells")) > 0
            points = browser.evaluate(
                "[...document.querySelectorAll('canvas.series')].map(c => +c.dataset.points)")
            assert len(points) == 3 and min(points) > 0
        elif page == "logs":
            assert "raylet" in _text(browser, "log-files")
            assert _wait_for(lambda: "napping" in _text(browser, "logs-list"), 15)
        assert browser.console_errors() == [], browser.console_errors()
        _screenshot(browser, page)
    slow = {page: ms for page, ms in timings.items() if ms >= 1000}
    assert not slow, f"page loads slower than 1 s from navigation start: {slow} (all: {timings})"

    # UI-004: look a task up by id, and by the id of an object it returned.
    (failed,) = [t for t in state.list_tasks(filters=[("state", "=", "FAILED")], detail=True)
                 if "the dashboard lists this one" in (t.error_message or "")]
    _open(browser, dashboard, "tasks", f"?q={failed.task_id}")
    card = _text(browser, "task-detail")
    assert failed.task_id in card and "APPLICATION_ERROR" in card and "FAILED" in card
    ref = refs[0]
    _open(browser, dashboard, "tasks", f"?q={ref.hex()}")
    card = _text(browser, "task-detail")
    assert ref.hex() in card and "add" in card and "FINISHED" in card
    _screenshot(browser, "task-lookup")
    _open(browser, dashboard, "tasks", "?state=FAILED")
    assert browser.evaluate("document.querySelectorAll('#tasks-table tr').length") == \
        1 + counts["FAILED"]
    assert browser.console_errors() == []
    ray.kill(sleeper)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(napping)
