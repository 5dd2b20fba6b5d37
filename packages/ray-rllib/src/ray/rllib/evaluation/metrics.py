"""Episode metrics gathered from workers and summarized into training results."""

from __future__ import annotations

import collections

import numpy as np

import ray
from ray.rllib.evaluation.episode import RolloutMetrics


def get_learner_stats(grad_info: dict) -> dict:
    if "learner_stats" in grad_info:
        return grad_info["learner_stats"]
    return {k: v["learner_stats"] for k, v in grad_info.items() if "learner_stats" in v}


def collect_episodes(local_worker=None, remote_workers=(), timeout_seconds: float = 180) -> list:
    """All episodes finished since the last call, from every worker."""
    episodes = list(local_worker.get_metrics()) if local_worker is not None else []
    if remote_workers:
        refs = [w.get_metrics.remote() for w in remote_workers]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_seconds)
        for metrics in ray.get(ready):
            episodes.extend(metrics)
    return episodes


def collect_metrics(local_worker=None, remote_workers=(), timeout_seconds: float = 180) -> dict:
    return summarize_episodes(collect_episodes(local_worker, remote_workers, timeout_seconds))


def summarize_episodes(episodes: list[RolloutMetrics], new_episodes=None) -> dict:
    """Result-dict metrics over ``episodes``; ``episodes_this_iter`` counts ``new_episodes``."""
    estimates = [e for e in (episodes if new_episodes is None else new_episodes)
                 if not isinstance(e, RolloutMetrics)]
    episodes = [e for e in episodes if isinstance(e, RolloutMetrics)]
    new_episodes = episodes if new_episodes is None else \
        [e for e in new_episodes if isinstance(e, RolloutMetrics)]
    off_policy = collections.defaultdict(lambda: collections.defaultdict(list))
    for estimate in estimates:
        for key, value in estimate.metrics.items():
            off_policy[estimate.estimator_name][key].append(value)
    rewards = [e.episode_reward for e in episodes]
    lengths = [e.episode_length for e in episodes]
    policy_rewards = collections.defaultdict(list)
    custom = collections.defaultdict(list)
    perf = collections.defaultdict(list)
    for episode in episodes:
        for (_agent_id, policy_id), reward in episode.agent_rewards.items():
            if policy_id != "default_policy":
                policy_rewards[policy_id].append(reward)
        for key, value in episode.custom_metrics.items():
            custom[key].append(value)
        for key, value in episode.perf_stats.items():
            perf[key].append(value)
    custom_metrics = {}
    for key, values in custom.items():
        values = [v for v in values if np.isfinite(v)]
        if values:
            custom_metrics[key + "_mean"] = float(np.mean(values))
            custom_metrics[key + "_min"] = float(np.min(values))
            custom_metrics[key + "_max"] = float(np.max(values))
    nan = float("nan")
    return {
        "episode_reward_max": float(np.max(rewards)) if rewards else nan,
        "episode_reward_min": float(np.min(rewards)) if rewards else nan,
        "episode_reward_mean": float(np.mean(rewards)) if rewards else nan,
        "episode_len_mean": float(np.mean(lengths)) if lengths else nan,
        "episodes_this_iter": len(new_episodes),
        # The smoothing window's episodes, oldest first (Ray's hist_stats).
        "hist_stats": {"episode_reward": [float(r) for r in rewards],
                       "episode_lengths": [int(n) for n in lengths]},
        "policy_reward_mean": {k: float(np.mean(v)) for k, v in policy_rewards.items()},
        "custom_metrics": custom_metrics,
        "sampler_perf": {k: float(np.mean(v)) for k, v in perf.items()},
        "off_policy_estimator": {
            name: {f"{k}_mean": float(np.mean(v)) for k, v in metrics.items()}
            for name, metrics in off_policy.items()
        },
    }
