"""Off-policy estimation: how would the *current* policy do on logged episodes?

Each estimator takes one episode (a SampleBatch with ``rewards``, ``actions``
and the behaviour policy's ``action_prob`` -- or ``action_logp``) and returns
an :class:`OffPolicyEstimate` with ``V_prev`` (the discounted return actually
logged), the estimate for the current policy and ``V_gain_est`` (their ratio:
above 1 means the new policy is estimated to do better). Estimates reach the
training result under ``off_policy_estimator/<name>/<metric>_mean``.
"""

from __future__ import annotations

import abc
import logging
from typing import NamedTuple

import numpy as np
import torch

from ray.rllib.policy.sample_batch import SampleBatch

logger = logging.getLogger(__name__)


class OffPolicyEstimate(NamedTuple):
    estimator_name: str
    metrics: dict


class OffPolicyEstimator(abc.ABC):
    name = "off_policy"

    def __init__(self, policy, gamma: float):
        self.policy = policy
        self.gamma = gamma
        self.new_estimates: list[OffPolicyEstimate] = []

    @classmethod
    def create(cls, ioctx):
        """An estimator for the worker's default policy (the ``input_evaluation`` setting)."""
        return cls(ioctx.worker.get_policy(), ioctx.worker.policy_config.get("gamma", 0.99))

    @abc.abstractmethod
    def estimate(self, episode: SampleBatch) -> OffPolicyEstimate:
        """The estimate for one complete or partial episode."""

    def process(self, batch) -> None:
        """Estimate every episode in ``batch`` and keep the results for ``get_metrics()``."""
        for episode in batch.split_by_episode():
            self.new_estimates.append(self.estimate(episode))

    def get_metrics(self) -> list[OffPolicyEstimate]:
        out, self.new_estimates = self.new_estimates, []
        return out

    def behaviour_probs(self, batch: SampleBatch) -> np.ndarray:
        if SampleBatch.ACTION_PROB in batch:
            return np.asarray(batch[SampleBatch.ACTION_PROB], dtype=np.float64)
        if SampleBatch.ACTION_LOGP in batch:
            return np.exp(np.asarray(batch[SampleBatch.ACTION_LOGP], dtype=np.float64))
        raise ValueError(
            "off-policy estimation needs the behaviour policy's action probabilities: add an "
            "'action_prob' (or 'action_logp') column to the input, or set input_evaluation=[]"
        )

    def target_probs(self, batch: SampleBatch) -> np.ndarray:
        """pi_new(a_t | s_t) of the logged actions under the current policy."""
        if hasattr(self.policy, "compute_log_likelihoods") and \
                not hasattr(self.policy, "dist_class"):
            logp = self.policy.compute_log_likelihoods(batch[SampleBatch.ACTIONS],
                                                       batch[SampleBatch.CUR_OBS])
            return np.exp(np.asarray(logp, dtype=np.float64))
        return np.exp(action_log_likelihoods(self.policy, batch))


def action_log_likelihoods(policy, batch: SampleBatch) -> np.ndarray:
    """log pi(a|s) of ``batch``'s actions under a TorchPolicy (no gradients)."""
    if policy.get_initial_state():
        raise ValueError("off-policy estimation of recurrent policies is not supported: "
                         "set input_evaluation=[]")
    with policy.lock, torch.no_grad():
        obs = torch.as_tensor(np.asarray(batch[SampleBatch.CUR_OBS]), dtype=torch.float32)
        logits, _ = policy.model(policy._input_dict(obs, None, None), [], None)
        dist = policy.dist_class(logits, policy.model)
        actions = torch.as_tensor(np.asarray(batch[SampleBatch.ACTIONS]))
        return dist.logp(actions).double().numpy()


class ImportanceSamplingEstimator(OffPolicyEstimator):
    """Step-wise importance sampling: ``V = sum_t gamma^t p_t r_t``, p_t = prod ratios."""

    name = "is"

    def estimate(self, episode: SampleBatch) -> OffPolicyEstimate:
        rewards = np.asarray(episode[SampleBatch.REWARDS], dtype=np.float64)
        ratios = self.target_probs(episode) / self.behaviour_probs(episode)
        p = np.cumprod(ratios)
        discounts = self.gamma ** np.arange(len(rewards))
        v_prev = float(np.sum(discounts * rewards))
        v_is = float(np.sum(discounts * p * rewards))
        return OffPolicyEstimate(self.name, {
            "V_prev": v_prev, "V_step_IS": v_is, "V_gain_est": v_is / max(1e-8, v_prev)})


class WeightedImportanceSamplingEstimator(OffPolicyEstimator):
    """Step-wise weighted IS: p_t is divided by its running mean w_t over the episodes seen
    so far at step t, ``V = sum_t gamma^t (p_t / w_t) r_t``."""

    name = "wis"

    def __init__(self, policy, gamma: float):
        super().__init__(policy, gamma)
        self.filter_values: list[float] = []
        self.filter_counts: list[float] = []

    def estimate(self, episode: SampleBatch) -> OffPolicyEstimate:
        rewards = np.asarray(episode[SampleBatch.REWARDS], dtype=np.float64)
        ratios = self.target_probs(episode) / self.behaviour_probs(episode)
        p = np.cumprod(ratios)
        for t, value in enumerate(p):
            if t >= len(self.filter_values):
                self.filter_values.append(float(value))
                self.filter_counts.append(1.0)
            else:
                self.filter_values[t] += float(value)
                self.filter_counts[t] += 1.0
        w = np.asarray(self.filter_values[: len(p)]) / np.asarray(self.filter_counts[: len(p)])
        discounts = self.gamma ** np.arange(len(rewards))
        v_prev = float(np.sum(discounts * rewards))
        v_wis = float(np.sum(discounts * p / np.maximum(w, 1e-12) * rewards))
        return OffPolicyEstimate(self.name, {
            "V_prev": v_prev, "V_step_WIS": v_wis, "V_gain_est": v_wis / max(1e-8, v_prev)})


ESTIMATORS = {"is": ImportanceSamplingEstimator, "wis": WeightedImportanceSamplingEstimator}

__all__ = ["ESTIMATORS", "ImportanceSamplingEstimator", "OffPolicyEstimate",
           "OffPolicyEstimator", "WeightedImportanceSamplingEstimator",
           "action_log_likelihoods"]
