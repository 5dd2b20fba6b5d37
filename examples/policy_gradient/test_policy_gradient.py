"""PPO and A3C from RLlib train on Pong's RAM observations through Tune."""

import importlib.util
import json
import os

import pytest

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("pg_example_pong_ram", os.path.join(HERE, "pong_ram.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def _trials(analysis):
    return getattr(analysis, "trials", analysis)


def test_pong_ram_env_gives_scaled_ram_observations():
    env = _load().make_pong_ram({"max_episode_steps": 10})
    obs, _ = env.reset(seed=0)
    assert obs.shape == (128,) and 0.0 <= obs.min() and obs.max() <= 1.0
    env.close()


@pytest.mark.parametrize("run, config", [
    ("PPO", {"num_workers": 0, "train_batch_size": 200, "sgd_minibatch_size": 64, "num_sgd_iter": 1}),
    # A3C on Pong-ram costs ~20 s more; examples/a3c and RLlib's own tests cover A3C.
])
def test_one_iteration_on_pong_ram(ray_cluster, tmp_path, run, config):
    config = {**config, "env_config": {"max_episode_steps": 100}}
    analysis = _load().main([f"--run={run}", "--env=Pong-ram-v4", f"--config={json.dumps(config)}",
                             '--stop={"training_iteration": 1}', f"--local-dir={tmp_path}"])
    [trial] = _trials(analysis)
    assert trial.last_result["training_iteration"] == 1, trial.error_msg
    assert trial.last_result["timesteps_total"] > 0
