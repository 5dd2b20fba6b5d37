"""V-trace off-policy value targets (Espeholt et al. 2018, arXiv:1802.01561, section 4.1).

Batches here are *flat*: rows of many trajectory fragments one after another.
``segment_end[t]`` marks the last row of a fragment (the end of a worker's
unroll, an episode boundary or a batch seam); the recursion restarts there and
bootstraps from ``next_values`` (V of the row's ``new_obs``, which ``discounts``
zeroes when the episode terminated). With ``rho_t = pi(a_t|x_t) / mu(a_t|x_t)``:

    delta_t = min(rho_bar, rho_t) * (r_t + gamma_t V(x_{t+1}) - V(x_t))
    v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1})),   c_s = min(1, rho_s)
    pg_advantage_t = min(rho_bar_pg, rho_t) * (r_t + gamma_t v_{t+1} - V(x_t))
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ray.rllib.policy.sample_batch import SampleBatch


class VTraceReturns(NamedTuple):
    vs: np.ndarray  # value targets
    pg_advantages: np.ndarray  # advantages for the policy gradient


def segment_ends(batch) -> np.ndarray:
    """True at the last row of each contiguous trajectory fragment in ``batch``."""
    n = len(batch[SampleBatch.REWARDS])
    ends = np.ones(n, dtype=bool)
    if n > 1 and SampleBatch.EPS_ID in batch and SampleBatch.T in batch:
        eps, t = np.asarray(batch[SampleBatch.EPS_ID]), np.asarray(batch[SampleBatch.T])
        same = (eps[1:] == eps[:-1]) & (t[1:] == t[:-1] + 1)
        if SampleBatch.AGENT_INDEX in batch:
            agent = np.asarray(batch[SampleBatch.AGENT_INDEX])
            same &= agent[1:] == agent[:-1]
        ends[:-1] = ~same
    return ends


def from_importance_weights(log_rhos, discounts, rewards, values, next_values, segment_end,
                            clip_rho_threshold: float | None = 1.0,
                            clip_pg_rho_threshold: float | None = 1.0) -> VTraceReturns:
    """V-trace targets for flat 1-D arrays (numpy, float64; no gradients flow through)."""
    rhos = np.exp(np.asarray(log_rhos, dtype=np.float64))
    clipped_rhos = rhos if clip_rho_threshold is None else np.minimum(clip_rho_threshold, rhos)
    cs = np.minimum(1.0, rhos)
    discounts = np.asarray(discounts, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    next_values = np.asarray(next_values, dtype=np.float64)
    deltas = clipped_rhos * (rewards + discounts * next_values - values)
    decay = discounts * cs
    vs_minus_v = np.empty_like(deltas)
    acc = 0.0
    for t in range(len(deltas) - 1, -1, -1):
        if segment_end[t]:
            acc = 0.0
        acc = deltas[t] + decay[t] * acc
        vs_minus_v[t] = acc
    vs = vs_minus_v + values
    vs_next = np.where(segment_end, next_values, np.roll(vs, -1))
    pg_rhos = rhos if clip_pg_rho_threshold is None else np.minimum(clip_pg_rho_threshold, rhos)
    pg_advantages = pg_rhos * (rewards + discounts * vs_next - values)
    return VTraceReturns(vs, pg_advantages)


__all__ = ["VTraceReturns", "from_importance_weights", "segment_ends"]
