"""``build_trainer``: a Trainer class from a policy and a few hooks (Ray 0.7 API)."""

from __future__ import annotations

from ray.rllib.agents.config import COMMON_CONFIG
from ray.rllib.agents.trainer import Trainer
from ray.rllib.optimizers.rollout_ops import collect_samples


def build_trainer(name, default_policy, default_config=None, validate_config=None,
                  get_policy_class=None, before_init=None, make_workers=None,
                  make_policy_optimizer=None, after_init=None, before_train_step=None,
                  after_optimizer_step=None, after_train_result=None, training_step=None,
                  mixins=None):
    """Build a Trainer subclass.

    Without ``training_step`` (``fn(trainer) -> {policy_id: stats}``) the trainer
    samples ``train_batch_size`` steps and calls ``learn_on_batch`` once.
    """

    def _init(self, config, env_creator):
        if validate_config:
            validate_config(config)
        if get_policy_class:
            self._policy = get_policy_class(config)
        if before_init:
            before_init(self)
        if make_workers:
            self.workers = make_workers(self, env_creator, self._policy, config)
        else:
            self.workers = self._make_workers(env_creator, self._policy, config,
                                              config["num_workers"])
        self.optimizer = make_policy_optimizer(self.workers, config) \
            if make_policy_optimizer else None
        if after_init:
            after_init(self)

    def _training_step(self):
        if before_train_step:
            before_train_step(self)
        if training_step:
            stats = training_step(self)
        elif self.optimizer is not None:
            before = self.optimizer.num_steps_sampled
            stats = self.optimizer.step() or {}
            self.steps_sampled += self.optimizer.num_steps_sampled - before
        else:
            batch = collect_samples(self.workers, self.config["train_batch_size"])
            self.steps_sampled += batch.count
            raw = self.workers.local_worker().learn_on_batch(batch)
            self.steps_trained += batch.count
            stats = {"default_policy": raw["learner_stats"]} if "learner_stats" in raw else \
                {pid: s["learner_stats"] for pid, s in raw.items()}
            self.workers.sync_weights()
        if after_optimizer_step:
            after_optimizer_step(self, stats)
        return stats

    def _train(self):
        result = Trainer._train(self)
        if after_train_result:
            after_train_result(self, result)
        return result

    namespace = {
        "_name": name,
        "_default_config": default_config or COMMON_CONFIG,
        "_policy": default_policy,
        "_init": _init,
        "training_step": _training_step,
        "_train": _train,
    }
    cls = type(name, tuple(mixins or ()) + (Trainer,), namespace)
    return cls
