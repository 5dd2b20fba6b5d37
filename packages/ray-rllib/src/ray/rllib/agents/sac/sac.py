"""Soft Actor-Critic (Haarnoja et al. 2018, arXiv:1812.05905), continuous actions.

A tanh-squashed Gaussian policy and two critics learn from replay:

    y          = r + gamma^n (1 - done) * (min_i Q'_i(s', a') - alpha * log pi(a'|s')),
                 a' ~ pi(.|s')
    critic     = E[w * sum_i (Q_i(s, a) - y)^2 / 2]
    actor      = E[alpha * log pi(a~|s) - min_i Q_i(s, a~)],  a~ ~ pi(.|s) (reparameterised)
    alpha loss = -E[log alpha * (log pi(a~|s) + target_entropy)]

``target_entropy="auto"`` is ``-dim(A)``. Actions are learned in [-1, 1] and
scaled to the action bounds (``normalize_actions``). Targets follow with Polyak
averaging (``tau``).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from ray.rllib.agents.config import algorithm_defaults, typed_view, with_common_config
from ray.rllib.agents.ddpg.ddpg import DDPGTrainer, polyak_update
from ray.rllib.agents.dqn.dqn import TargetNetworkMixin, adjust_nstep, bootstrap_discount
from ray.rllib.models.torch_models import _mlp
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import TorchPolicy
from ray.rllib.utils.merge import merge_dicts

_LOG_STD_MIN, _LOG_STD_MAX = -20.0, 2.0


def _net_defaults():
    return {"fcnet_activation": "relu", "fcnet_hiddens": [256, 256]}


@dataclass(frozen=True)
class SACConfig:
    """SAC's settings (Ray 0.8 / 2.x defaults), on top of COMMON_CONFIG."""

    twin_q: bool = True  # two critics, targets use their minimum
    Q_model: dict = field(default_factory=_net_defaults)  # critic MLP
    policy_model: dict = field(default_factory=_net_defaults)  # actor MLP
    tau: float = 5e-3  # Polyak averaging coefficient of the target critics
    initial_alpha: float = 1.0  # initial entropy temperature
    target_entropy: float | str = "auto"  # "auto": -dim(action space)
    n_step: int = 1
    buffer_size: int = 1000000
    prioritized_replay: bool = False
    prioritized_replay_alpha: float = 0.6
    prioritized_replay_beta: float = 0.4
    beta_annealing_fraction: float = 0.2
    final_prioritized_replay_beta: float = 0.4
    prioritized_replay_eps: float = 1e-6
    schedule_max_timesteps: int = 100000
    optimization: dict = field(default_factory=lambda: {
        "actor_learning_rate": 3e-4, "critic_learning_rate": 3e-4,
        "entropy_learning_rate": 3e-4})
    grad_clip: float | None = None
    learning_starts: int = 1500  # env steps sampled before learning starts
    sample_batch_size: int = 1
    train_batch_size: int = 256
    target_network_update_freq: int = 0  # 0: Polyak update after every SGD step
    timesteps_per_iteration: int = 100
    num_workers: int = 0
    per_worker_exploration: bool = False
    worker_side_prioritization: bool = False
    min_iter_time_s: float = 1
    normalize_actions: bool = True  # learn in [-1, 1], act in the env's bounds


DEFAULT_CONFIG = with_common_config(algorithm_defaults(SACConfig))


class SquashedGaussianActorCritic(nn.Module):
    def __init__(self, obs_space, action_space, cfg: SACConfig):
        super().__init__()
        obs_size = int(np.prod(obs_space.shape))
        self.act_size = int(np.prod(action_space.shape))
        pm, qm = cfg.policy_model, cfg.Q_model
        self.actor = _mlp(obs_size, pm.get("fcnet_hiddens", [256, 256]),
                          pm.get("fcnet_activation", "relu"), 2 * self.act_size, 0.01)
        self.q1 = _mlp(obs_size + self.act_size, qm.get("fcnet_hiddens", [256, 256]),
                       qm.get("fcnet_activation", "relu"), 1, 1.0)
        self.q2 = _mlp(obs_size + self.act_size, qm.get("fcnet_hiddens", [256, 256]),
                       qm.get("fcnet_activation", "relu"), 1, 1.0) if cfg.twin_q else None
        self.log_alpha = nn.Parameter(torch.tensor(math.log(cfg.initial_alpha)))

    def sample(self, obs, deterministic: bool = False):
        """``(action in [-1, 1], log pi(action|obs))`` with the tanh change of variables."""
        mean, log_std = self.actor(obs.reshape(obs.shape[0], -1).float()).chunk(2, dim=-1)
        log_std = log_std.clamp(_LOG_STD_MIN, _LOG_STD_MAX)
        pre_tanh = mean if deterministic else mean + log_std.exp() * torch.randn_like(mean)
        action = torch.tanh(pre_tanh)
        normal_logp = (-0.5 * ((pre_tanh - mean) / log_std.exp()) ** 2 - log_std
                       - 0.5 * math.log(2 * math.pi)).sum(-1)
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), numerically stable.
        correction = (2 * (math.log(2) - pre_tanh - nn.functional.softplus(-2 * pre_tanh))).sum(-1)
        return action, normal_logp - correction

    def q(self, obs, action, head: int = 1):
        net = self.q1 if head == 1 else self.q2
        x = torch.cat([obs.reshape(obs.shape[0], -1).float(), action.float()], dim=-1)
        return net(x).squeeze(-1)

    def min_q(self, obs, action):
        q = self.q(obs, action, 1)
        return torch.min(q, self.q(obs, action, 2)) if self.q2 is not None else q

    def min_q_frozen(self, obs, action):
        """``min_q`` with the critics' weights detached: gradients flow to ``action`` only."""
        x = torch.cat([obs.reshape(obs.shape[0], -1).float(), action.float()], dim=-1)
        qs = [_frozen(net, x) for net in (self.q1, self.q2) if net is not None]
        return torch.min(qs[0], qs[1]) if len(qs) == 2 else qs[0]

    def critic_parameters(self):
        params = list(self.q1.parameters())
        return params + (list(self.q2.parameters()) if self.q2 is not None else [])


def _frozen(net: nn.Module, x):
    params = {name: p.detach() for name, p in net.named_parameters()}
    return torch.func.functional_call(net, params, (x,)).squeeze(-1)


def sac_losses(model, target_model, batch: dict, cfg: SACConfig, discount, target_entropy):
    """``(critic_loss, actor_loss, alpha_loss, td_error, stats)`` for one batch. Pure."""
    obs, next_obs = batch[SampleBatch.CUR_OBS], batch[SampleBatch.NEXT_OBS]
    actions = batch["normalized_actions"].float()
    rewards = batch[SampleBatch.REWARDS].float()
    not_done = 1.0 - batch[SampleBatch.DONES].float()
    weights = batch["weights"].float() if "weights" in batch else torch.ones_like(rewards)
    alpha = model.log_alpha.exp().detach()
    with torch.no_grad():
        next_action, next_logp = model.sample(next_obs)
        q_next = target_model.min_q(next_obs, next_action) - alpha * next_logp
        target = rewards + discount * not_done * q_next
    q1 = model.q(obs, actions, 1)
    td_error = q1 - target
    critic_loss = (weights * 0.5 * td_error ** 2).mean()
    if cfg.twin_q:
        critic_loss = critic_loss + (weights * 0.5 * (model.q(obs, actions, 2) - target) ** 2
                                     ).mean()
    new_action, logp = model.sample(obs)
    actor_loss = (alpha * logp - model.min_q_frozen(obs, new_action)).mean()
    alpha_loss = -(model.log_alpha * (logp.detach() + target_entropy)).mean()
    stats = {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(),
             "alpha_loss": alpha_loss.detach(), "alpha_value": alpha,
             "mean_q": q1.detach().mean(), "max_q": q1.detach().max(),
             "min_q": q1.detach().min(), "log_pi": logp.detach().mean()}
    return critic_loss, actor_loss, alpha_loss, td_error.detach(), stats


class SACTorchPolicy(TargetNetworkMixin, TorchPolicy):
    extra_optimizers = ("actor_optimizer", "alpha_optimizer")

    def __init__(self, observation_space, action_space, config):
        config = merge_dicts(DEFAULT_CONFIG, config)
        if not isinstance(action_space, spaces.Box):
            raise ValueError(f"SAC here needs a continuous (Box) action space, got "
                             f"{action_space}: use DQN for Discrete actions")
        cfg = typed_view(SACConfig, config)
        self.config, self.sac_config = config, cfg
        model = SquashedGaussianActorCritic(observation_space, action_space, cfg)
        self.target_model = copy.deepcopy(model)
        self.target_model.requires_grad_(False)
        super().__init__(observation_space, action_space, model, None, None, config)
        opt = cfg.optimization
        self.actor_optimizer = torch.optim.Adam(model.actor.parameters(),
                                                lr=opt["actor_learning_rate"], foreach=True)
        self.alpha_optimizer = torch.optim.Adam([model.log_alpha],
                                                lr=opt["entropy_learning_rate"])
        self.target_entropy = -float(model.act_size) if cfg.target_entropy == "auto" \
            else float(cfg.target_entropy)
        self.low = action_space.low.astype(np.float32)
        self.high = action_space.high.astype(np.float32)

    def optimizer(self):
        return torch.optim.Adam(self.model.critic_parameters(),
                                lr=self.sac_config.optimization["critic_learning_rate"],
                                foreach=True)

    def _to_env(self, unit_actions: np.ndarray) -> np.ndarray:
        if not self.sac_config.normalize_actions:
            return unit_actions
        return self.low + (unit_actions + 1.0) * 0.5 * (self.high - self.low)

    def _to_unit(self, env_actions: np.ndarray) -> np.ndarray:
        if not self.sac_config.normalize_actions:
            return np.clip(env_actions, -1.0, 1.0)
        return np.clip(2.0 * (env_actions - self.low) / (self.high - self.low) - 1.0, -1.0, 1.0)

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        **kwargs):
        explore = self.config.get("explore", True) if explore is None else explore
        with self.lock, torch.no_grad():
            obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32)
            unit, _ = self.model.sample(obs, deterministic=not explore)
        return self._to_env(unit.numpy()).astype(np.float32), [], {}

    def postprocess_trajectory(self, sample_batch, other_agent_batches=None, episode=None):
        sample_batch["normalized_actions"] = self._to_unit(
            np.asarray(sample_batch[SampleBatch.ACTIONS], np.float32)).astype(np.float32)
        if self.sac_config.n_step > 1:
            adjust_nstep(sample_batch, self.sac_config.n_step, self.config["gamma"])
        if self.sac_config.worker_side_prioritization and sample_batch.count:
            with self.lock, torch.no_grad():
                tensors = self.to_tensors(sample_batch)
                td = sac_losses(self.model, self.target_model, tensors, self.sac_config,
                                self._discount(tensors), self.target_entropy)[3]
            sample_batch["weights"] = (td.abs().numpy() +
                                       self.sac_config.prioritized_replay_eps).astype(np.float32)
        return sample_batch

    def _discount(self, tensors):
        return bootstrap_discount(tensors, self.config["gamma"], self.sac_config.n_step)

    def learn_on_tensors(self, tensors: dict) -> dict:
        cfg = self.sac_config
        with self.lock:
            critic_loss, actor_loss, alpha_loss, td_error, stats = sac_losses(
                self.model, self.target_model, tensors, cfg, self._discount(tensors),
                self.target_entropy)
            for optimizer in (self._optimizer, self.actor_optimizer, self.alpha_optimizer):
                optimizer.zero_grad(set_to_none=True)
            # One backward pass for all three losses: each touches only its own parameters
            # (the actor sees the critics through detached weights, the targets and alpha
            # are detached), so the sum's gradients are each loss's own.
            (critic_loss + actor_loss + alpha_loss).backward()
            if cfg.grad_clip:
                for params in (self.model.critic_parameters(), list(self.model.actor.parameters())):
                    torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            self._optimizer.step()
            self.actor_optimizer.step()
            self.alpha_optimizer.step()
            if cfg.target_network_update_freq == 0:
                polyak_update(self.target_model, self.model, cfg.tau)
            return {"learner_stats": {k: float(v) for k, v in stats.items()},
                    "td_error": td_error.numpy()}

    def compute_gradients(self, postprocessed_batch):
        raise TypeError("SAC learns with learn_on_batch (three optimizers); gradient exchange "
                        "(A3C-style) is not supported for it")


class SACTrainer(DDPGTrainer):
    """SAC on the SyncReplayOptimizer (the DQN/DDPG loop)."""

    _name = "SAC"
    _default_config = DEFAULT_CONFIG
    _policy = SACTorchPolicy


__all__ = ["DEFAULT_CONFIG", "SACConfig", "SACTorchPolicy", "SACTrainer", "sac_losses"]
