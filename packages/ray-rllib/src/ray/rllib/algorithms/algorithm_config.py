"""The Ray 2.x builder API over the 0.7 Trainers.

    from ray.rllib.algorithms.ppo import PPOConfig
    algo = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
            .training(lr=1e-3, train_batch_size=512).debugging(seed=0).build())
    algo.train()

Each method maps the 2.x argument names onto the documented 0.7 config keys
(``num_env_runners`` -> ``num_workers``, ``lambda_`` -> ``lambda``, ...), so the
Trainer still validates every key and suggests fixes for typos.
"""

from __future__ import annotations

import copy

# 2.x argument name -> 0.7 config key (names not listed are the same in both).
_RENAMES = {
    "num_env_runners": "num_workers",
    "num_rollout_workers": "num_workers",
    "num_envs_per_env_runner": "num_envs_per_worker",
    "rollout_fragment_length": "sample_batch_size",
    "num_cpus_per_env_runner": "num_cpus_per_worker",
    "num_cpus_per_worker": "num_cpus_per_worker",
    "lambda_": "lambda",
    "num_epochs": "num_sgd_iter",
    "minibatch_size": "sgd_minibatch_size",
    "evaluation_duration": "evaluation_num_episodes",
}


class AlgorithmConfig:
    """A fluent, copyable config; ``build()`` makes the Trainer."""

    algo_class = None

    def __init__(self, algo_class=None):
        self.algo_class = algo_class or self.algo_class
        self._config: dict = {}
        self._env = None

    def _set(self, **kwargs) -> AlgorithmConfig:
        for key, value in kwargs.items():
            if value is None:
                continue
            self._config[_RENAMES.get(key, key)] = value
        return self

    def environment(self, env=None, *, env_config=None, clip_rewards=None,
                    clip_actions=None, **kwargs) -> AlgorithmConfig:
        if env is not None:
            self._env = env
        return self._set(env_config=env_config, clip_rewards=clip_rewards,
                         clip_actions=clip_actions, **kwargs)

    def env_runners(self, **kwargs) -> AlgorithmConfig:
        return self._set(**kwargs)

    rollouts = env_runners

    def training(self, **kwargs) -> AlgorithmConfig:
        return self._set(**kwargs)

    def resources(self, **kwargs) -> AlgorithmConfig:
        return self._set(**kwargs)

    def evaluation(self, **kwargs) -> AlgorithmConfig:
        kwargs.pop("evaluation_duration_unit", None)
        return self._set(**kwargs)

    def debugging(self, *, seed=None, log_level=None, **kwargs) -> AlgorithmConfig:
        return self._set(seed=seed, log_level=log_level, **kwargs)

    def multi_agent(self, *, policies=None, policy_mapping_fn=None,
                    policies_to_train=None) -> AlgorithmConfig:
        multiagent = self._config.setdefault("multiagent", {})
        if policies is not None:
            if isinstance(policies, list | set | tuple):
                policies = {pid: (None, None, None, {}) for pid in policies}
            multiagent["policies"] = policies
        if policy_mapping_fn is not None:
            multiagent["policy_mapping_fn"] = policy_mapping_fn
        if policies_to_train is not None:
            multiagent["policies_to_train"] = list(policies_to_train)
        return self

    def framework(self, framework="torch", *, eager_tracing=None, **kwargs) -> AlgorithmConfig:
        if framework != "torch":
            raise ValueError(f"framework {framework!r} is not supported: this RLlib is "
                             "PyTorch only (use .framework('torch'))")
        # The Trainer checks these (eager_tracing is a TF2 switch, accepted as in Ray 2.x).
        return self._set(framework=framework, eager_tracing=eager_tracing, **kwargs)

    def api_stack(self, **_kwargs) -> AlgorithmConfig:
        return self  # there is one API stack here

    def copy(self) -> AlgorithmConfig:
        return copy.deepcopy(self)

    def to_dict(self) -> dict:
        out = copy.deepcopy(self._config)
        if self._env is not None:
            out["env"] = self._env
        return out

    def build(self, env=None, logger_creator=None):
        return self.algo_class(config=self.to_dict(), env=env or self._env,
                               logger_creator=logger_creator)

    build_algo = build
