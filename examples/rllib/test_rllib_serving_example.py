"""The CartPole policy server and client, run as two processes."""

import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)


@pytest.mark.timeout(240)
def test_cartpole_server_trains_on_a_client_in_another_process(tmp_path):
    env = dict(os.environ, TUNE_RESULT_DIR=str(tmp_path / "ray_results"))
    server = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "cartpole_server.py"), "--port", "0",
         "--run", "PG", "--iterations", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    client = None
    try:
        port = None
        for line in server.stdout:
            match = re.search(r"listening on localhost:(\d+)", line)
            if match:
                port = match.group(1)
                break
        assert port, "the server never reported its port"
        client = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "cartpole_client.py"),
             "--address", f"localhost:{port}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        results = [json.loads(line) for line in server.stdout if line.startswith("{")]
        assert server.wait(timeout=120) == 0
        client_out, _ = client.communicate(timeout=60)
    finally:
        for proc in (server, client):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [r["training_iteration"] for r in results] == [1, 2]
    assert results[-1]["timesteps_total"] >= 2000
    assert results[-1]["episodes_total"] > 0
    played = re.findall(r"episode (\d+) return ([\d.]+)", client_out)
    assert len(played) >= results[-1]["episodes_total"]
    assert "stopping:" in client_out  # the client noticed the server leave


@pytest.mark.timeout(180)
def test_twostep_game_example_runs_qmix_under_tune(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("twostep_game_example",
                                                  os.path.join(HERE, "twostep_game.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import ray

    try:
        analysis = module.main("QMIX", stop_timesteps=200, local_dir=str(tmp_path),
                               config={"learning_starts": 50})
    finally:
        ray.shutdown()  # tune.run started Ray
    trials = getattr(analysis, "trials", analysis)
    assert trials[0].last_result["timesteps_total"] >= 200
    assert trials[0].last_result["episodes_total"] >= 100  # two steps per episode
