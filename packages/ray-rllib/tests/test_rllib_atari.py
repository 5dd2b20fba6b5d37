"""Atari from pixels: the DeepMind wrappers, preprocessor_pref, the model options, conv
defaults, and the learning check (``learning and slow``)."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ale_py")

from ray.rllib.agents.ppo import PPOTrainer  # noqa: E402
from ray.rllib.env.atari_wrappers import (  # noqa: E402
    EpisodicLifeEnv,
    FireResetEnv,
    FrameResizer,
    MaxAndSkipEnv,
    MonitorEnv,
    NoopResetEnv,
    area_resize_matrix,
    get_wrapper_by_cls,
    is_atari,
    wrap_deepmind,
)
from ray.rllib.env.gym_compat import make_gym_env, resolve_env_id  # noqa: E402
from ray.rllib.models.preprocessors import GenericPixelPreprocessor  # noqa: E402

TINY_PPO = {"num_workers": 0, "train_batch_size": 64, "sample_batch_size": 32,
            "sgd_minibatch_size": 32, "num_sgd_iter": 1, "seed": 0}


def test_ale_envs_are_found_by_id():
    assert resolve_env_id("PongNoFrameskip-v4") == "PongNoFrameskip-v4"
    assert resolve_env_id("ALE/Breakout-v5") == "ALE/Breakout-v5"
    assert is_atari(make_gym_env("PongNoFrameskip-v4"))
    assert not is_atari(gym.make("CartPole-v1"))
    assert not is_atari(make_gym_env("ALE/Pong-v5", obs_type="ram"))


def test_area_resize_matches_block_means_and_keeps_mass():
    weights = area_resize_matrix(210, 84)
    assert weights.shape == (84, 210)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-6)
    # Output pixel 0 covers input [0, 2.5): pixels 0 and 1 fully, half of pixel 2.
    np.testing.assert_allclose(weights[0, :3], np.array([1, 1, 0.5]) / 2.5, rtol=1e-6)
    frame = np.arange(8 * 8, dtype=np.float32).reshape(8, 8)
    halved = FrameResizer(8, 8, 4)(frame)
    expected = frame.reshape(4, 2, 4, 2).mean(axis=(1, 3))
    np.testing.assert_allclose(halved, expected, rtol=1e-5)
    colour = np.stack([frame, 2 * frame, 3 * frame], axis=2)
    np.testing.assert_allclose(FrameResizer(8, 8, 4)(colour)[:, :, 2], 3 * expected, rtol=1e-5)


def test_wrap_deepmind_chain_and_shapes():
    env = wrap_deepmind(make_gym_env("PongNoFrameskip-v4"), dim=84, framestack=True)
    for cls in (MonitorEnv, NoopResetEnv, MaxAndSkipEnv, EpisodicLifeEnv, FireResetEnv):
        assert get_wrapper_by_cls(env, cls) is not None, cls
    obs, _ = env.reset(seed=0)
    assert obs.shape == (84, 84, 4) and obs.dtype == np.uint8
    assert env.observation_space.shape == (84, 84, 4)
    obs, reward, terminated, truncated, _ = env.step(0)
    assert obs.shape == (84, 84, 4) and 0 < obs.max() <= 255
    # The stack shifts: the newest frame is the last channel.
    obs2, *_ = env.step(0)
    np.testing.assert_array_equal(obs2[:, :, :3], obs[:, :, 1:])
    env.close()
    small = wrap_deepmind(make_gym_env("PongNoFrameskip-v4"), dim=42, framestack=False)
    assert small.reset(seed=0)[0].shape == (42, 42, 1)
    small.close()


def test_monitor_env_reports_whole_games():
    env = MonitorEnv(make_gym_env("PongNoFrameskip-v4", max_episode_steps=50))
    env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        _obs, reward, terminated, truncated, _ = env.step(0)
        total += reward
        done = terminated or truncated
    assert list(env.next_episode_results()) == [(total, 50)]
    assert list(env.next_episode_results()) == []


def test_ppo_on_pong_deepmind_default():
    trainer = PPOTrainer(env="PongNoFrameskip-v4", config=TINY_PPO)
    try:
        worker = trainer.workers.local_worker()
        policy = trainer.get_policy()
        assert policy.observation_space.shape == (84, 84, 4)
        assert policy.observation_space.dtype == np.uint8
        convs = [m for m in policy.model.convs if hasattr(m, "kernel_size")]
        assert [(c.out_channels, c.kernel_size, c.stride) for c in convs] == [
            (16, (8, 8), (4, 4)), (32, (4, 4), (2, 2)), (256, (11, 11), (1, 1))]
        batch = worker.sample()
        assert batch["obs"].dtype == np.uint8  # frames travel as bytes
        assert set(np.unique(batch["rewards"])) <= {-1.0, 0.0, 1.0}  # clipped for Atari
        result = trainer.train()
        assert result["timesteps_total"] >= 64
        assert {"sample_time_ms", "learn_time_ms"} <= set(result["timers"])
        # compute_action takes observations of the wrapped env, as the policy saw them.
        action = trainer.compute_action(worker.env.reset(seed=0)[0])
        assert 0 <= int(action) < 6
    finally:
        trainer.stop()


def test_dim_and_framestack_are_honoured():
    config = dict(TINY_PPO, model={"dim": 42, "framestack": False})
    trainer = PPOTrainer(env="PongNoFrameskip-v4", config=config)
    try:
        policy = trainer.get_policy()
        assert policy.observation_space.shape == (42, 42, 1)
        convs = [m for m in policy.model.convs if hasattr(m, "kernel_size")]
        assert [c.kernel_size for c in convs] == [(4, 4), (4, 4), (11, 11)]
        trainer.train()
    finally:
        trainer.stop()


def test_rllib_preprocessor_pref_grayscale_zero_mean():
    space = gym.spaces.Box(0, 255, (210, 160, 3), np.uint8)
    frame = np.full((210, 160, 3), 255, np.uint8)
    gray = GenericPixelPreprocessor(space, {"dim": 42, "grayscale": True, "zero_mean": True})
    assert gray.shape == (42, 42, 1)
    np.testing.assert_allclose(gray.transform(frame), (255 - 128) / 128, rtol=1e-5)
    colour = GenericPixelPreprocessor(space, {"dim": 84, "grayscale": False, "zero_mean": False})
    assert colour.shape == (84, 84, 3)
    np.testing.assert_allclose(colour.transform(frame), 1.0, rtol=1e-5)
    config = dict(TINY_PPO, preprocessor_pref="rllib", model={"dim": 42, "grayscale": True})
    trainer = PPOTrainer(env="PongNoFrameskip-v4", config=config)
    try:
        worker = trainer.workers.local_worker()
        assert type(worker.preprocessors["default_policy"]) is GenericPixelPreprocessor
        batch = worker.sample()
        assert batch["obs"].shape[1:] == (42, 42, 1) and batch["obs"].dtype == np.float32
        assert batch["obs"].min() >= -1.0 and batch["obs"].max() <= 1.0
        # Not clipped on the rllib path unless asked (as in RLlib).
        assert trainer.config["clip_rewards"] is None
    finally:
        trainer.stop()


def test_bad_preprocessor_pref_is_rejected():
    with pytest.raises(ValueError, match="preprocessor_pref"):
        PPOTrainer(env="PongNoFrameskip-v4", config=dict(TINY_PPO, preprocessor_pref="opencv"))


def test_images_without_default_filters_say_what_to_set():
    class Odd(gym.Env):
        observation_space = gym.spaces.Box(0, 1, (30, 30, 3), np.float32)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, _config=None):
            pass

        def reset(self, *, seed=None, options=None):
            return np.zeros((30, 30, 3), np.float32), {}

        def step(self, action):
            return np.zeros((30, 30, 3), np.float32), 0.0, True, False, {}

    with pytest.raises(ValueError, match="conv_filters"):
        PPOTrainer(env=Odd, config=TINY_PPO)


@pytest.mark.learning
@pytest.mark.slow
@pytest.mark.timeout(4 * 3600 + 60)  # the global 300 s limit would end the run at once
def test_pong_learning_check():
    """PPO on Pong from pixels gains 5 points (benchmarks/bench_rllib_pong.py; about an
    hour on a quiet 2-core machine)."""
    bench = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks",
                         "bench_rllib_pong.py")
    proc = subprocess.run([sys.executable, bench, "--max-hours", "3"], capture_output=True,
                          text=True, timeout=4 * 3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
