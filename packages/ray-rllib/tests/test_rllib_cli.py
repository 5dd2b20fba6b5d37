"""`rllib train` / `rllib rollout` end to end, through the console script."""

import json
import os
import shutil
import subprocess
import sys

import pytest

RLLIB = shutil.which("rllib") or os.path.join(os.path.dirname(sys.executable), "rllib")


def _run(args, tmp_path, timeout=240):
    env = dict(os.environ, HOME=str(tmp_path))
    return subprocess.run([RLLIB, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=tmp_path)


def test_help_lists_commands(tmp_path):
    out = _run(["--help"], tmp_path)
    assert out.returncode == 0
    assert "train" in out.stdout and "rollout" in out.stdout


@pytest.mark.timeout(300)
def test_train_with_checkpoint_then_rollout(tmp_path):
    local_dir = tmp_path / "results"
    train = _run([
        "train", "--run", "PPO", "--env", "CartPole-v0", "--ray-num-cpus", "2",
        "--stop", json.dumps({"training_iteration": 2}),
        "--config", json.dumps({"num_workers": 0, "train_batch_size": 200,
                                "sgd_minibatch_size": 64, "num_sgd_iter": 1}),
        "--checkpoint-freq", "1", "--local-dir", str(local_dir),
    ], tmp_path)
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
    checkpoints = sorted(
        os.path.join(root, name)
        for root, _dirs, files in os.walk(local_dir)
        for name in files
        if name.startswith("checkpoint-") and "." not in name
    )
    assert checkpoints, list(os.walk(local_dir))
    results = [os.path.join(root, "result.json") for root, _d, files in os.walk(local_dir)
               if "result.json" in files]
    assert results

    rollout = _run(["rollout", checkpoints[-1], "--run", "PPO", "--steps", "50", "--no-render",
                    "--out", str(tmp_path / "rollouts.pkl")], tmp_path)
    assert rollout.returncode == 0, rollout.stderr[-3000:]
    assert "Episode reward" in rollout.stdout
    assert (tmp_path / "rollouts.pkl").exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_train_from_yaml_file(tmp_path):
    spec = tmp_path / "exp.yaml"
    spec.write_text(
        "pg-cartpole:\n"
        "    env: CartPole-v0\n"
        "    run: PG\n"
        "    stop: {training_iteration: 1}\n"
        f"    local_dir: {tmp_path / 'results'}\n"
        "    config: {num_workers: 0, train_batch_size: 200}\n"
    )
    out = _run(["train", "-f", str(spec), "--ray-num-cpus", "2"], tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert any("result.json" in files for _r, _d, files in os.walk(tmp_path / "results"))


def test_unknown_algorithm_is_reported(tmp_path):
    out = _run(["rollout", "nowhere", "--run", "PPOO"], tmp_path)
    assert out.returncode != 0
