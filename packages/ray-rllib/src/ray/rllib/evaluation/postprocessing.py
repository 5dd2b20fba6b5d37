"""Advantage estimation for a single trajectory (one agent, one episode fragment)."""

from __future__ import annotations

import numpy as np

from ray.rllib.policy.sample_batch import SampleBatch


class Postprocessing:
    """Column names added by :func:`compute_advantages`."""

    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"


def discount(x: np.ndarray, gamma: float) -> np.ndarray:
    """``y[t] = x[t] + gamma * y[t+1]`` (a reverse discounted cumulative sum)."""
    out = np.zeros(len(x), dtype=np.float64)
    running = 0.0
    for t in range(len(x) - 1, -1, -1):
        running = x[t] + gamma * running
        out[t] = running
    return out


def compute_advantages(
    rollout: SampleBatch,
    last_r: float,
    gamma: float = 0.9,
    lambda_: float = 1.0,
    use_gae: bool = True,
) -> SampleBatch:
    """Add ``advantages`` and ``value_targets`` columns to a trajectory.

    With GAE (Schulman et al. 2016):
        delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)
        A_t     = sum_k (gamma * lambda)^k * delta_{t+k}
        target  = A_t + V(s_t)
    ``last_r`` is V(s_T) of the state after the last row (0 if the episode
    terminated there). Without GAE the advantage is the discounted return.
    """
    rewards = np.asarray(rollout[SampleBatch.REWARDS], dtype=np.float64)
    if use_gae:
        vpred = np.asarray(rollout[SampleBatch.VF_PREDS], dtype=np.float64)
        vpred_t = np.concatenate([vpred, [last_r]])
        delta_t = rewards + gamma * vpred_t[1:] - vpred_t[:-1]
        advantages = discount(delta_t, gamma * lambda_)
        value_targets = advantages + vpred
    else:
        returns = discount(np.concatenate([rewards, [last_r]]), gamma)[:-1]
        advantages = returns
        value_targets = returns
    rollout[Postprocessing.ADVANTAGES] = advantages.astype(np.float32)
    rollout[Postprocessing.VALUE_TARGETS] = value_targets.astype(np.float32)
    return rollout
