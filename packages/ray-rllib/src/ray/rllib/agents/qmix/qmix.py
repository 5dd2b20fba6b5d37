"""QMIX (Rashid et al. 2018, arXiv:1803.11485) and VDN: cooperative multi-agent Q-learning.

The agents of one *group* (``env.with_agent_groups``; Tuple obs and action
spaces) share one Q network, fed each agent's observation plus its index. A
mixer turns the chosen per-agent values into the team's:

    "qmix": Q_tot = hypernet(s) mixing, monotone in every Q_a (|weights|, ELU)
    "vdn":  Q_tot = sum_a Q_a
    None:   independent Q-learning (each Q_a regresses on the team reward)

with the global state ``s`` the concatenation of the agents' observations.
Loss: ``(Q_tot(s, a) - (r + gamma (1 - done) Q_tot^target(s', a'*)))^2``, where
``a'*`` is each agent's greedy action under the online network (double Q) or
the target network; transitions come from a replay buffer. Agent networks
here are feed-forward MLPs (``model.fcnet_hiddens``; Ray 0.7 used a GRU).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from ray.rllib.agents.config import algorithm_defaults, typed_view, with_common_config
from ray.rllib.agents.marwil.marwil import ReplayRows
from ray.rllib.agents.trainer import Trainer
from ray.rllib.optimizers.rollout_ops import collect_samples, policy_batches
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import TorchPolicy


@dataclass(frozen=True)
class QMixConfig:
    """QMIX settings (Ray 0.7 defaults), on top of COMMON_CONFIG."""

    mixer: str | None = "qmix"  # "qmix", "vdn" or None (independent Q-learning)
    mixing_embed_dim: int = 32
    double_q: bool = True
    batch_mode: str = "complete_episodes"
    schedule_max_timesteps: int = 100000  # exploration is annealed over a fraction of this
    timesteps_per_iteration: int = 1000
    exploration_fraction: float = 0.1
    exploration_final_eps: float = 0.02
    target_network_update_freq: int = 500  # env steps between target syncs
    buffer_size: int = 10000  # replay capacity in transitions
    lr: float = 0.0005
    optim_alpha: float = 0.99  # RMSprop alpha
    optim_eps: float = 0.00001  # RMSprop epsilon
    grad_norm_clipping: float | None = 10
    learning_starts: int = 1000  # transitions sampled before learning
    sample_batch_size: int = 4
    train_batch_size: int = 32
    num_workers: int = 0
    per_worker_exploration: bool = False  # accepted, unused
    worker_side_prioritization: bool = False  # accepted, unused
    min_iter_time_s: float = 1
    model: dict = field(default_factory=lambda: {"fcnet_hiddens": [64], "max_seq_len": 999999})


DEFAULT_CONFIG = with_common_config(algorithm_defaults(QMixConfig))


def _group_spaces(obs_space, action_space):
    """(n_agents, obs size per agent, actions per agent) of a grouped agent's spaces."""
    if not isinstance(action_space, gym.spaces.Tuple) or not all(
            isinstance(s, gym.spaces.Discrete) for s in action_space.spaces):
        raise ValueError(
            "QMIX trains agent groups: group the env's agents with env.with_agent_groups(...) "
            f"so actions are a Tuple of Discrete spaces (got {action_space})")
    sizes = {int(s.n) for s in action_space.spaces}
    if len(sizes) != 1:
        raise ValueError("all agents of a QMIX group need the same number of actions")
    n_agents = len(action_space.spaces)
    flat = int(np.prod(obs_space.shape))
    if flat % n_agents:
        raise ValueError("all agents of a QMIX group need observations of the same size")
    return n_agents, flat // n_agents, sizes.pop()


class AgentQNetwork(nn.Module):
    """Q_a(o_a, a) for every agent at once: input = own observation + one-hot agent index."""

    def __init__(self, obs_dim: int, n_agents: int, n_actions: int, hiddens):
        super().__init__()
        layers, last = [], obs_dim + n_agents
        for size in hiddens:
            layers += [nn.Linear(last, size), nn.ReLU()]
            last = size
        layers.append(nn.Linear(last, n_actions))
        self.net = nn.Sequential(*layers)
        self.register_buffer("agent_ids", torch.eye(n_agents))

    def forward(self, agent_obs: torch.Tensor) -> torch.Tensor:  # [B, n, obs] -> [B, n, A]
        ids = self.agent_ids.expand(agent_obs.shape[0], -1, -1)
        return self.net(torch.cat([agent_obs, ids], dim=-1))


class QMixer(nn.Module):
    """Monotonic mixing: hypernetworks of the state give non-negative mixing weights."""

    def __init__(self, n_agents: int, state_dim: int, embed_dim: int):
        super().__init__()
        self.n_agents, self.embed_dim = n_agents, embed_dim
        self.hyper_w1 = nn.Linear(state_dim, embed_dim * n_agents)
        self.hyper_b1 = nn.Linear(state_dim, embed_dim)
        self.hyper_w2 = nn.Linear(state_dim, embed_dim)
        self.value = nn.Sequential(nn.Linear(state_dim, embed_dim), nn.ReLU(),
                                   nn.Linear(embed_dim, 1))

    def forward(self, agent_qs: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        w1 = torch.abs(self.hyper_w1(state)).view(-1, self.n_agents, self.embed_dim)
        hidden = torch.nn.functional.elu(
            torch.bmm(agent_qs.unsqueeze(1), w1).squeeze(1) + self.hyper_b1(state))
        w2 = torch.abs(self.hyper_w2(state))
        return (hidden * w2).sum(dim=1) + self.value(state).squeeze(-1)


class VDNMixer(nn.Module):
    def forward(self, agent_qs: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return agent_qs.sum(dim=1)


class QMixModel(nn.Module):
    def __init__(self, obs_space, action_space, config):
        super().__init__()
        self.n_agents, self.obs_dim, self.n_actions = _group_spaces(obs_space, action_space)
        hiddens = config["model"].get("fcnet_hiddens", [64])
        self.agent = AgentQNetwork(self.obs_dim, self.n_agents, self.n_actions, hiddens)
        mixer = config["mixer"]
        if mixer == "qmix":
            self.mixer = QMixer(self.n_agents, self.obs_dim * self.n_agents,
                                config["mixing_embed_dim"])
        elif mixer == "vdn":
            self.mixer = VDNMixer()
        elif mixer is None:
            self.mixer = None
        else:
            raise ValueError(f"mixer must be 'qmix', 'vdn' or None, not {mixer!r}")

    def agent_qs(self, obs: torch.Tensor) -> torch.Tensor:
        return self.agent(obs.view(obs.shape[0], self.n_agents, self.obs_dim))

    def mix(self, chosen_qs: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        return chosen_qs if self.mixer is None else self.mixer(chosen_qs, obs)


class QMixTorchPolicy(TorchPolicy):
    """Epsilon-greedy joint actions for a group; learns from replayed transitions."""

    def __init__(self, observation_space, action_space, config):
        from ray.rllib.utils.merge import merge_dicts

        config = merge_dicts(DEFAULT_CONFIG, config)
        self.config = config
        model = QMixModel(observation_space, action_space, config)
        super().__init__(observation_space, action_space, model, None, None, config)
        self.target_model = QMixModel(observation_space, action_space, config)
        self.target_model.load_state_dict(model.state_dict())
        self.epsilon = 1.0
        anneal = config["exploration_fraction"] * config["schedule_max_timesteps"]
        self._anneal_steps = max(1.0, anneal)
        self._rng = np.random.default_rng(config.get("seed"))

    def optimizer(self):
        return torch.optim.RMSprop(self.model.parameters(), lr=self.config["lr"],
                                   alpha=self.config["optim_alpha"], eps=self.config["optim_eps"])

    def on_global_var_update(self, global_vars):
        super().on_global_var_update(global_vars)
        frac = min(1.0, global_vars["timestep"] / self._anneal_steps)
        self.epsilon = 1.0 + frac * (self.config["exploration_final_eps"] - 1.0)

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        **kwargs):
        explore = self.config.get("explore", True) if explore is None else explore
        with self.lock, torch.no_grad():
            obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32)
            greedy = self.model.agent_qs(obs).argmax(dim=-1).numpy()
        if explore:
            random = self._rng.integers(0, self.model.n_actions, greedy.shape)
            pick = self._rng.random(greedy.shape) < self.epsilon
            greedy = np.where(pick, random, greedy)
        return greedy, [], {}

    def learn_on_batch(self, samples) -> dict:
        t = {k: torch.as_tensor(np.asarray(samples[k])) for k in
             (SampleBatch.CUR_OBS, SampleBatch.NEXT_OBS, SampleBatch.ACTIONS,
              SampleBatch.REWARDS, SampleBatch.DONES)}
        obs, new_obs = t["obs"].float(), t["new_obs"].float()
        actions = t["actions"].long().view(obs.shape[0], self.model.n_agents)
        rewards, dones = t["rewards"].float(), t["dones"].float()
        with self.lock:
            chosen = self.model.agent_qs(obs).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
            q_tot = self.model.mix(chosen, obs)
            with torch.no_grad():
                target_qs = self.target_model.agent_qs(new_obs)
                if self.config["double_q"]:
                    best = self.model.agent_qs(new_obs).argmax(dim=-1, keepdim=True)
                else:
                    best = target_qs.argmax(dim=-1, keepdim=True)
                next_q = self.target_model.mix(target_qs.gather(-1, best).squeeze(-1), new_obs)
                if self.model.mixer is None:
                    rewards_, dones_ = rewards.unsqueeze(-1), dones.unsqueeze(-1)
                else:
                    rewards_, dones_ = rewards, dones
                targets = rewards_ + self.config["gamma"] * (1.0 - dones_) * next_q
            td_error = q_tot - targets
            loss = (td_error ** 2).mean()
            self._optimizer.zero_grad()
            loss.backward()
            stats = {}
            if self.config["grad_norm_clipping"]:
                stats["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(
                    self.model.parameters(), self.config["grad_norm_clipping"]))
            self._optimizer.step()
        stats.update(loss=loss.item(), td_error_abs=float(td_error.detach().abs().mean()),
                     q_taken_mean=float(q_tot.detach().mean()), target_mean=float(targets.mean()),
                     cur_epsilon=self.epsilon)
        return {"learner_stats": stats}

    def update_target(self) -> None:
        with self.lock:
            self.target_model.load_state_dict(self.model.state_dict())

    def get_state(self) -> dict:
        return dict(super().get_state(), target=self.target_model.state_dict(),
                    epsilon=self.epsilon)

    def set_state(self, state) -> None:
        super().set_state(state)
        if "target" in state:
            self.target_model.load_state_dict(state["target"])
        self.epsilon = state.get("epsilon", self.epsilon)


class QMixTrainer(Trainer):
    _name = "QMIX"
    _default_config = DEFAULT_CONFIG
    _policy = QMixTorchPolicy

    def _init(self, config, env_creator):
        self.qmix_config = typed_view(QMixConfig, config)
        super()._init(config, env_creator)
        self.rng = np.random.default_rng(config["seed"])
        self.buffers: dict = {}
        self.last_target_update = 0
        self.num_target_updates = 0

    def training_step(self) -> dict:
        cfg = self.qmix_config
        self.set_global_vars()  # epsilon follows the sampled steps
        batch = collect_samples(self.workers, cfg.sample_batch_size)
        self.steps_sampled += batch.count
        local = self.workers.local_worker()
        stats = {}
        for policy_id, policy_batch in policy_batches(batch).items():
            if policy_id not in local.policies_to_train:
                continue
            buffer = self.buffers.setdefault(policy_id, ReplayRows(cfg.buffer_size, self.rng))
            buffer.add(policy_batch)
            if self.steps_sampled < cfg.learning_starts:
                continue
            stats[policy_id] = local.get_policy(policy_id).learn_on_batch(
                buffer.sample(cfg.train_batch_size))["learner_stats"]
            self.steps_trained += cfg.train_batch_size
        if self.steps_sampled - self.last_target_update >= cfg.target_network_update_freq:
            local.foreach_trainable_policy(lambda policy, _pid: policy.update_target())
            self.last_target_update = self.steps_sampled
            self.num_target_updates += 1
        self.workers.sync_weights()
        return stats


class VDNTrainer(QMixTrainer):
    """QMIX with the additive (VDN) mixer: ``--run VDN``."""

    _name = "VDN"
    _default_config = dict(DEFAULT_CONFIG, mixer="vdn")


__all__ = ["DEFAULT_CONFIG", "QMixConfig", "QMixTorchPolicy", "QMixTrainer", "VDNTrainer"]
