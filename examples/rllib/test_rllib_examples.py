"""Each documented RLlib example runs end to end (a couple of iterations)."""

import importlib.util
import math
import os

import pytest

HERE = os.path.dirname(__file__)


def _load(name):
    spec = importlib.util.spec_from_file_location(f"rllib_example_{name}",
                                                  os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quickstart_ppo_python_api():
    result = _load("quickstart_ppo").main(iterations=2)
    assert result["training_iteration"] == 2
    assert result["episode_reward_mean"] > 0


def test_custom_torch_model_with_a2c():
    result = _load("custom_torch_model").main(iterations=1)
    assert not math.isnan(result["episode_reward_mean"])


def test_multiagent_cartpole_reports_per_policy_rewards():
    result = _load("multiagent_cartpole").main(num_agents=4, num_policies=2, iterations=1)
    assert set(result["policy_reward_mean"]) <= {"policy_0", "policy_1"}
    assert result["policy_reward_mean"]


@pytest.mark.timeout(240)
def test_custom_metrics_and_callbacks_under_tune():
    analysis = _load("custom_metrics_and_callbacks").main(iterations=2)
    trials = getattr(analysis, "trials", analysis)
    result = trials[0].last_result
    assert "pole_angle_mean" in result["custom_metrics"]


@pytest.mark.timeout(240)
def test_custom_loss_imitation_example():
    analysis = _load("custom_loss").main(iters=2)
    trials = getattr(analysis, "trials", analysis)
    stats = trials[0].last_result["info"]["learner"]["default_policy"]["model"]
    assert stats["imitation_loss"] > 0
    assert "policy_loss" in stats
