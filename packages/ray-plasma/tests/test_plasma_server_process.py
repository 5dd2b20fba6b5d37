"""The `plasma_store` executable, and clients in other processes (crashes included)."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import pytest

import plasma

CAPACITY = 16 * 2**20


@pytest.fixture
def store_process():
    directory = tempfile.mkdtemp(prefix="plasma-")
    socket_path = os.path.join(directory, "store.sock")
    process = subprocess.Popen(
        [sys.executable, "-m", "plasma.server", "-m", str(CAPACITY), "-s", socket_path],
        stdout=subprocess.PIPE,
        text=True,
    )
    yield process, socket_path
    if process.poll() is None:
        process.terminate()
    process.wait(10)
    process.stdout.close()
    os.rmdir(directory)


def run_client_script(socket_path, body):
    script = textwrap.dedent(
        f"""
        import os, sys, numpy as np, plasma
        client = plasma.connect({socket_path!r})
        """
    ) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_store_serves_other_processes_and_exits_cleanly_on_signal(store_process, signum):
    process, socket_path = store_process
    client = plasma.connect(socket_path)
    object_id = client.put(np.arange(1000))
    result = run_client_script(
        socket_path,
        f"""
        value = client.get(plasma.ObjectID.from_hex({object_id.hex()!r}))
        print(int(value.sum()))
        """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(sum(range(1000)))
    assert "serving" in process.stdout.readline()
    client.disconnect()
    process.send_signal(signum)
    assert process.wait(10) == 0
    assert not os.path.exists(socket_path)


def test_crashed_client_releases_pins_and_aborts_unsealed(store_process):
    _process, socket_path = store_process
    client = plasma.connect(socket_path)
    object_id = client.put(np.ones(1000))
    result = run_client_script(
        socket_path,
        f"""
        held = client.get_buffers([plasma.ObjectID.from_hex({object_id.hex()!r})])
        client.create(plasma.ObjectID.from_random(), 4096)
        client.flush()
        assert client.list()[plasma.ObjectID.from_hex({object_id.hex()!r})]["ref_count"] == 1
        os.kill(os.getpid(), 9)
        """,
    )
    assert result.returncode == -9, result.stderr
    deadline = time.monotonic() + 10
    while len(client.list()) > 1 or client.list()[object_id]["ref_count"]:
        assert time.monotonic() < deadline, client.list()
        time.sleep(0.01)
    client.disconnect()
