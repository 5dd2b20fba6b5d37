"""DDPG (Lillicrap et al. 2016) and TD3 (Fujimoto et al. 2018, arXiv:1802.09477).

A deterministic actor ``mu(s)`` (tanh, scaled to the action bounds) and a
critic ``Q(s, a)`` learn off-policy from replay:

    y           = r + gamma^n (1 - done) * min_i Q'_i(s', clip(mu'(s') + eps, low, high))
    critic loss = E[w * (Q_i(s, a) - y)^2 / 2]  (Huber with ``use_huber``), i = 1 (2 with twin_q)
    actor loss  = -E[Q_1(s, mu(s))]

plus ``l2_reg`` on the weights. ``eps`` is clipped Gaussian noise only with
``smooth_target_policy``. The TD3 tricks are off by default (DDPG) and on in
``TD3Trainer``: ``twin_q`` (the min over two critics), ``policy_delay`` (the
actor and the target networks move every ``policy_delay`` critic steps) and
``smooth_target_policy``. Target networks follow with ``tau`` (Polyak
averaging). Exploration: uniform random actions for ``pure_exploration_steps``,
then Ornstein-Uhlenbeck or Gaussian noise on the actor's action; or, with
``parameter_noise``, no action noise but a layer-normalised actor whose weights are
perturbed per episode (Plappert et al. 2018; ``agents/param_noise.py``), with sigma
adapted so the RMS action change matches the RMS of the action noise it replaces.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from gymnasium import spaces
from torch import nn
from torch.nn import functional as F

from ray.rllib.agents.config import algorithm_defaults, typed_view, with_common_config
from ray.rllib.agents.dqn.dqn import (
    DQNTrainer,
    TargetNetworkMixin,
    adjust_nstep,
    bootstrap_discount,
    polyak_update,
)
from ray.rllib.agents.param_noise import ParameterNoise, ParameterNoiseMixin, rms_distance
from ray.rllib.models.torch_models import _mlp
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import TorchPolicy
from ray.rllib.utils.merge import merge_dicts
from ray.rllib.utils.schedules import PiecewiseSchedule


@dataclass(frozen=True)
class DDPGConfig:
    """DDPG's own settings (Ray 0.7 defaults), on top of COMMON_CONFIG."""

    # === TD3 tricks (off for DDPG) ===
    twin_q: bool = False  # two critics, the target uses their minimum
    policy_delay: int = 1  # critic steps per actor (and target) step
    smooth_target_policy: bool = False  # clipped Gaussian noise on the target action
    target_noise: float = 0.2  # std of that noise
    target_noise_clip: float = 0.5  # its clip
    # === Model ===
    use_state_preprocessor: bool = False  # an MLP (model.fcnet_hiddens) before actor and critic
    actor_hiddens: list = field(default_factory=lambda: [400, 300])
    actor_hidden_activation: str = "relu"
    critic_hiddens: list = field(default_factory=lambda: [400, 300])
    critic_hidden_activation: str = "relu"
    n_step: int = 1  # n-step returns
    # === Exploration ===
    exploration_should_anneal: bool = False  # anneal the noise scale to exploration_final_scale
    schedule_max_timesteps: int = 100000  # horizon of the noise and beta schedules
    timesteps_per_iteration: int = 1000  # minimum env steps per train() call
    exploration_fraction: float = 0.1  # fraction of the schedule spent annealing the noise
    exploration_final_scale: float = 0.02  # noise scale after annealing
    exploration_noise_type: str = "ou"  # "ou" or "gaussian"
    exploration_ou_noise_scale: float = 0.1  # OU noise is this * state * (high - low)
    exploration_ou_theta: float = 0.15
    exploration_ou_sigma: float = 0.2
    exploration_gaussian_sigma: float = 0.1  # std of Gaussian noise, in action units
    parameter_noise: bool = False  # explore by perturbing the actor's weights (no action noise)
    parameter_noise_initial_stddev: float = 0.1  # its sigma before adaptation
    pure_exploration_steps: int = 1000  # uniform random actions for this many steps
    # === Replay ===
    buffer_size: int = 50000
    prioritized_replay: bool = True
    prioritized_replay_alpha: float = 0.6
    prioritized_replay_beta: float = 0.4
    beta_annealing_fraction: float = 0.2
    final_prioritized_replay_beta: float = 0.4
    prioritized_replay_eps: float = 1e-6
    compress_observations: bool = False  # accepted; replay stores plain numpy columns
    # === Optimization ===
    critic_lr: float = 1e-3
    actor_lr: float = 1e-3
    target_network_update_freq: int = 0  # 0: Polyak update every actor step; N: every N steps
    tau: float = 0.002  # Polyak averaging coefficient of the target networks
    use_huber: bool = False  # Huber instead of squared critic loss
    huber_threshold: float = 1.0
    l2_reg: float = 1e-6  # weight decay of actor and critic
    grad_norm_clipping: float | None = None
    learning_starts: int = 1500  # env steps sampled before learning starts
    sample_batch_size: int = 1  # steps per env per worker per optimizer step
    train_batch_size: int = 256  # replayed rows per SGD step
    # === Parallelism ===
    num_workers: int = 0
    per_worker_exploration: bool = False  # Ape-X style: worker i scales its noise down
    worker_side_prioritization: bool = False
    min_iter_time_s: float = 1


DEFAULT_CONFIG = with_common_config(algorithm_defaults(DDPGConfig))

TD3_DEFAULT_CONFIG = merge_dicts(DEFAULT_CONFIG, {
    "twin_q": True,
    "policy_delay": 2,
    "smooth_target_policy": True,
    "target_noise": 0.2,
    "target_noise_clip": 0.5,
    "exploration_should_anneal": False,
    "exploration_noise_type": "gaussian",
    "exploration_gaussian_sigma": 0.1,
    "pure_exploration_steps": 10000,
    "learning_starts": 10000,
    "n_step": 1,
    "actor_lr": 1e-3,
    "critic_lr": 1e-3,
    "l2_reg": 0.0,
    "tau": 5e-3,
    "train_batch_size": 100,
    "use_huber": False,
    "target_network_update_freq": 0,
    "buffer_size": 1000000,
    "prioritized_replay": False,
})


class ActorCritic(nn.Module):
    """``actor(obs) -> action in [low, high]``; ``q1/q2(obs, action) -> [B]``."""

    def __init__(self, obs_space, action_space, model_config: dict, cfg: DDPGConfig):
        super().__init__()
        obs_size = int(np.prod(obs_space.shape))
        act_size = int(np.prod(action_space.shape))
        if cfg.use_state_preprocessor:
            hiddens = list(model_config.get("fcnet_hiddens", [256, 256]))
            activation = model_config.get("fcnet_activation", "tanh")
            self.preprocessor = _mlp(obs_size, hiddens, activation, None, 1.0)
            obs_size = hiddens[-1] if hiddens else obs_size
        else:
            self.preprocessor = nn.Identity()
        # Parameter noise wants layer-normalised hidden layers (one sigma suits them all).
        self.actor = _mlp(obs_size, cfg.actor_hiddens, cfg.actor_hidden_activation, act_size,
                          0.01, layer_norm=cfg.parameter_noise)
        self.q1 = _mlp(obs_size + act_size, cfg.critic_hiddens, cfg.critic_hidden_activation, 1,
                       1.0)
        self.q2 = _mlp(obs_size + act_size, cfg.critic_hiddens, cfg.critic_hidden_activation, 1,
                       1.0) if cfg.twin_q else None
        self.register_buffer("low", torch.as_tensor(action_space.low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(action_space.high, dtype=torch.float32))

    def features(self, obs):
        return self.preprocessor(obs.reshape(obs.shape[0], -1).float())

    def action(self, features, actor: nn.Module | None = None):
        """``mu(s)`` scaled to the bounds (``actor``: another actor net, e.g. a perturbed one)."""
        squashed = torch.tanh((self.actor if actor is None else actor)(features))
        return self.low + (squashed + 1.0) * 0.5 * (self.high - self.low)

    def q(self, features, action, head: int = 1):
        net = self.q1 if head == 1 else self.q2
        return net(torch.cat([features, action.float()], dim=-1)).squeeze(-1)

    def actor_parameters(self):
        return list(self.actor.parameters()) + list(self.preprocessor.parameters())

    def critic_parameters(self):
        params = list(self.q1.parameters())
        return params + (list(self.q2.parameters()) if self.q2 is not None else [])


def ddpg_critic_loss(model, target_model, batch: dict, cfg: DDPGConfig, discount):
    """Critic loss, td_error and stats for one replayed batch. Pure (no optimizer steps)."""
    obs, next_obs = batch[SampleBatch.CUR_OBS], batch[SampleBatch.NEXT_OBS]
    actions = batch[SampleBatch.ACTIONS].float().reshape(obs.shape[0], -1)
    rewards = batch[SampleBatch.REWARDS].float()
    not_done = 1.0 - batch[SampleBatch.DONES].float()
    weights = batch["weights"].float() if "weights" in batch else torch.ones_like(rewards)
    with torch.no_grad():
        next_features = target_model.features(next_obs)
        next_action = target_model.action(next_features)
        if cfg.smooth_target_policy:
            noise = (torch.randn_like(next_action) * cfg.target_noise).clamp(
                -cfg.target_noise_clip, cfg.target_noise_clip)
            next_action = torch.max(torch.min(next_action + noise, target_model.high),
                                    target_model.low)
        q_next = target_model.q(next_features, next_action, 1)
        if cfg.twin_q:
            q_next = torch.min(q_next, target_model.q(next_features, next_action, 2))
        target = rewards + discount * not_done * q_next
    features = model.features(obs)
    q1 = model.q(features, actions, 1)
    td_error = q1 - target
    loss = (weights * _error(td_error, cfg)).mean()
    if cfg.twin_q:
        loss = loss + (weights * _error(model.q(features, actions, 2) - target, cfg)).mean()
    if cfg.l2_reg:
        critics = [model.q1] + ([model.q2] if cfg.twin_q else [])
        loss = loss + cfg.l2_reg * sum((p ** 2).sum() for net in critics
                                       for n, p in net.named_parameters() if "weight" in n)
    stats = {"critic_loss": loss.detach(), "mean_q": q1.detach().mean(),
             "max_q": q1.detach().max(), "min_q": q1.detach().min(),
             "mean_td_error": td_error.detach().mean()}
    return loss, td_error.detach(), stats


def ddpg_actor_loss(model, batch: dict, cfg: DDPGConfig):
    """``-E[Q_1(s, mu(s))]`` (+ l2_reg)."""
    features = model.features(batch[SampleBatch.CUR_OBS])
    x = torch.cat([features, model.action(features)], dim=-1)
    # The critic's weights are detached: only the actor (and preprocessor) get gradients.
    q1_params = {name: p.detach() for name, p in model.q1.named_parameters()}
    loss = -torch.func.functional_call(model.q1, q1_params, (x,)).mean()
    if cfg.l2_reg:
        loss = loss + cfg.l2_reg * sum((p ** 2).sum() for n, p in model.actor.named_parameters()
                                       if "weight" in n)
    return loss


def _error(td_error, cfg: DDPGConfig):
    if cfg.use_huber:
        return F.huber_loss(td_error, torch.zeros_like(td_error), reduction="none",
                            delta=cfg.huber_threshold)
    return 0.5 * td_error ** 2


def param_noise_target_rms(cfg: DDPGConfig, action_space) -> float:
    """RMS (over action dims) of the action noise that parameter noise stands in for.

    Gaussian: ``exploration_gaussian_sigma``. OU: the stationary std of
    ``x <- x - theta x + sigma N(0, 1)``, i.e. ``sigma / sqrt(1 - (1 - theta)^2)``, times
    ``exploration_ou_noise_scale * (high - low)`` as ``compute_actions`` scales it.
    """
    if cfg.exploration_noise_type == "gaussian":
        return float(cfg.exploration_gaussian_sigma)
    theta = cfg.exploration_ou_theta
    ou_std = cfg.exploration_ou_sigma / math.sqrt(1.0 - (1.0 - theta) ** 2)
    span = np.asarray(action_space.high, np.float64) - np.asarray(action_space.low, np.float64)
    return float(np.sqrt(np.mean((cfg.exploration_ou_noise_scale * ou_std * span) ** 2)))


class DDPGTorchPolicy(ParameterNoiseMixin, TargetNetworkMixin, TorchPolicy):
    """Deterministic actor with exploration noise (on actions or, with ``parameter_noise``,
    on the actor's weights); separate actor and critic optimizers."""

    extra_optimizers = ("actor_optimizer",)

    default_config = DEFAULT_CONFIG

    def __init__(self, observation_space, action_space, config):
        config = merge_dicts(self.default_config, config)
        if not isinstance(action_space, spaces.Box):
            raise ValueError(f"DDPG/TD3 need a continuous (Box) action space, got "
                             f"{action_space}: use DQN for Discrete actions")
        cfg = typed_view(DDPGConfig, config)
        if cfg.exploration_noise_type not in ("ou", "gaussian"):
            raise ValueError(f"exploration_noise_type must be 'ou' or 'gaussian', not "
                             f"{cfg.exploration_noise_type!r}")
        self.config, self.ddpg_config = config, cfg
        model = ActorCritic(observation_space, action_space, config["model"], cfg)
        self.target_model = copy.deepcopy(model)
        self.target_model.requires_grad_(False)
        super().__init__(observation_space, action_space, model, None, None, config)
        self.param_noise = ParameterNoise(model.actor, cfg.parameter_noise_initial_stddev) \
            if cfg.parameter_noise else None
        self.param_noise_target = param_noise_target_rms(cfg, action_space)
        self.actor_optimizer = torch.optim.Adam(model.actor_parameters(), lr=cfg.actor_lr,
                                                foreach=True)
        steps = max(1, int(cfg.exploration_fraction * cfg.schedule_max_timesteps))
        self.noise_schedule = PiecewiseSchedule([[0, 1.0], [steps, cfg.exploration_final_scale]])
        self.noise_scale = 1.0
        self.fixed_noise_scale = None
        self.ou_state = np.zeros(action_space.shape, dtype=np.float32)
        self.num_critic_updates = 0
        self._td_error = None

    def optimizer(self):
        return torch.optim.Adam(self.model.critic_parameters(),
                                lr=self.ddpg_config.critic_lr, foreach=True)

    # --- acting -----------------------------------------------------------------------------

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        **kwargs):
        explore = self.config.get("explore", True) if explore is None else explore
        cfg = self.ddpg_config
        perturbed = explore and self.param_noise is not None
        with self.lock, torch.no_grad():
            obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32)
            actor = None
            if perturbed:
                self.param_noise.resample_on_new_episodes(episodes)
                actor = self.param_noise.network()
            actions = self.model.action(self.model.features(obs), actor).numpy()
        low, high = self.action_space.low, self.action_space.high
        if explore:
            if self.global_timestep < cfg.pure_exploration_steps:
                actions = np.random.uniform(low, high, size=actions.shape).astype(np.float32)
            elif perturbed:
                pass  # the perturbed actor is the exploration
            elif cfg.exploration_noise_type == "gaussian":
                actions = actions + self.noise_scale * np.random.normal(
                    0.0, cfg.exploration_gaussian_sigma, size=actions.shape)
            else:
                self.ou_state += cfg.exploration_ou_theta * -self.ou_state + \
                    cfg.exploration_ou_sigma * np.random.standard_normal(self.ou_state.shape)
                actions = actions + self.noise_scale * cfg.exploration_ou_noise_scale * \
                    self.ou_state * (high - low)
            actions = np.clip(actions, low, high).astype(np.float32)
        return actions, [], {}

    def on_global_var_update(self, global_vars):
        super().on_global_var_update(global_vars)
        if self.fixed_noise_scale is not None:
            self.noise_scale = self.fixed_noise_scale
        elif self.ddpg_config.exploration_should_anneal:
            self.noise_scale = self.noise_schedule.value(global_vars["timestep"])

    def set_epsilon(self, epsilon: float) -> None:
        """Ape-X per-worker exploration: scale this worker's noise by ``epsilon``."""
        self.fixed_noise_scale = self.noise_scale = epsilon

    def postprocess_trajectory(self, sample_batch, other_agent_batches=None, episode=None):
        if self.param_noise is not None and sample_batch.count:
            self._adapt_param_noise(sample_batch[SampleBatch.CUR_OBS])
        if self.ddpg_config.n_step > 1:
            adjust_nstep(sample_batch, self.ddpg_config.n_step, self.config["gamma"])
        if self.ddpg_config.worker_side_prioritization and sample_batch.count:
            td_error = self.compute_td_error(sample_batch)
            sample_batch["weights"] = (np.abs(td_error) +
                                       self.ddpg_config.prioritized_replay_eps).astype(np.float32)
        return sample_batch

    def _adapt_param_noise(self, obs) -> None:
        """Move sigma so the RMS action change on the recent states (``obs`` and the ones
        before) tracks the replaced noise's RMS (scaled like that noise by
        ``noise_scale``: annealing, Ape-X per-worker scales)."""
        with self.lock, torch.no_grad():
            states = self.param_noise.measurement_states(obs)
            features = self.model.features(torch.as_tensor(states))
            clean = self.model.action(features)
            noisy = self.model.action(features, self.param_noise.network())
            self.param_noise.adapt(rms_distance(clean, noisy),
                                   self.noise_scale * self.param_noise_target)

    # --- learning ---------------------------------------------------------------------------

    def _discount(self, tensors):
        return bootstrap_discount(tensors, self.config["gamma"], self.ddpg_config.n_step)

    def compute_td_error(self, batch) -> np.ndarray:
        with self.lock, torch.no_grad():
            tensors = self.to_tensors(batch)
            _, td_error, _ = ddpg_critic_loss(self.model, self.target_model, tensors,
                                              self.ddpg_config, self._discount(tensors))
            return td_error.numpy()

    def learn_on_tensors(self, tensors: dict) -> dict:
        cfg = self.ddpg_config
        with self.lock:
            critic_loss, td_error, stats = ddpg_critic_loss(
                self.model, self.target_model, tensors, cfg, self._discount(tensors))
            self._step(self._optimizer, critic_loss, self.model.critic_parameters())
            self.num_critic_updates += 1
            if self.num_critic_updates % cfg.policy_delay == 0:
                actor_loss = ddpg_actor_loss(self.model, tensors, cfg)
                self._step(self.actor_optimizer, actor_loss, self.model.actor_parameters())
                stats["actor_loss"] = actor_loss.detach()
                if cfg.target_network_update_freq == 0:
                    self.update_target(cfg.tau)
            stats = {k: float(v) for k, v in stats.items()}
            return {"learner_stats": stats, "td_error": td_error.numpy()}

    def _step(self, optimizer, loss, params) -> None:
        self.actor_optimizer.zero_grad(set_to_none=True)
        self._optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.ddpg_config.grad_norm_clipping:
            torch.nn.utils.clip_grad_norm_(params, self.ddpg_config.grad_norm_clipping)
        optimizer.step()

    def compute_gradients(self, postprocessed_batch):
        raise TypeError("DDPG/TD3 learn with learn_on_batch (two optimizers); gradient "
                        "exchange (A3C-style) is not supported for them")



class TD3TorchPolicy(DDPGTorchPolicy):
    default_config = TD3_DEFAULT_CONFIG


class DDPGTrainer(DQNTrainer):
    """DDPG on the SyncReplayOptimizer (the DQN trainer's loop, a different policy).

    With ``target_network_update_freq > 0`` the targets are moved (by ``tau``) every that
    many sampled steps instead of after every actor step (the policy's own updates).
    """

    _name = "DDPG"
    _default_config = DEFAULT_CONFIG
    _policy = DDPGTorchPolicy

    def _maybe_update_target(self) -> None:
        if self.config["target_network_update_freq"] > 0:  # 0: the policy does it itself
            super()._maybe_update_target()


class TD3Trainer(DDPGTrainer):
    _name = "TD3"
    _default_config = TD3_DEFAULT_CONFIG
    _policy = TD3TorchPolicy


__all__ = ["DEFAULT_CONFIG", "DDPGConfig", "DDPGTorchPolicy", "DDPGTrainer",
           "TD3_DEFAULT_CONFIG", "TD3TorchPolicy", "TD3Trainer", "ddpg_actor_loss",
           "ddpg_critic_loss", "polyak_update"]
