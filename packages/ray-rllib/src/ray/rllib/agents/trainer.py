"""Trainer: the base of every algorithm, and a Tune ``Trainable``.

A subclass sets ``_name``, ``_default_config`` and ``_policy`` and implements
``training_step()`` (one round of sampling and learning, returning learner
stats). The base class builds the workers, runs steps until the iteration's
minimum time/steps are met, and fills in the documented result dict.
"""

from __future__ import annotations

import collections
import copy
import logging
import os
import tempfile
import time

import numpy as np
import torch

import ray
from ray.rllib.agents import checkpoint
from ray.rllib.agents.config import COMMON_CONFIG, FREE_FORM_SUBKEYS, check_config
from ray.rllib.env.env_context import EnvContext
from ray.rllib.env.gym_compat import make_gym_env
from ray.rllib.evaluation.episode import RolloutMetrics
from ray.rllib.evaluation.metrics import collect_episodes, summarize_episodes
from ray.rllib.evaluation.worker_set import WorkerSet
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID
from ray.rllib.utils.filter_manager import FilterManager
from ray.rllib.utils.merge import deep_update, merge_dicts
from ray.rllib.utils.timer import TimerStat, timer_report
from ray.tune.registry import ENV_CREATOR
from ray.tune.registry import contains as _registry_contains
from ray.tune.registry import get as _registry_get
from ray.tune.resources import Resources
from ray.tune.trainable import Trainable

logger = logging.getLogger(__name__)


class _ClassNameOfInstance:
    """``instance.__name__``: the name of the instance's class (no setter on purpose)."""

    def __get__(self, obj, objtype=None):
        return (objtype if obj is None else type(obj)).__name__


class Trainer(Trainable):
    _name = "Trainer"
    _default_config = COMMON_CONFIG
    _policy = None

    def __init__(self, config=None, env=None, logger_creator=None):
        config = dict(config or {})
        if env is not None:
            config["env"] = env
        self._env_id = config.get("env")
        if logger_creator is None:
            logger_creator = _ResultsDirCreator(self._name, self._env_id)
        super().__init__(config, logger_creator)

    @classmethod
    def default_resource_request(cls, config):
        cf = merge_dicts(cls._default_config, config)
        return Resources(
            cpu=cf["num_cpus_for_driver"],
            gpu=cf["num_gpus"],
            extra_cpu=cf["num_cpus_per_worker"] * cf["num_workers"],
            extra_gpu=cf["num_gpus_per_worker"] * cf["num_workers"],
        )

    # --- setup ------------------------------------------------------------------------------

    def _setup(self, config):
        self.config = self.merge_trainer_configs(self._default_config, config)
        check_config(self.config)
        self.config["callbacks"] = _unwrap_callbacks(self.config["callbacks"])
        if self.config.get("log_level"):
            logging.getLogger("ray.rllib").setLevel(self.config["log_level"])
        _check_input(self.config["input"])
        # The driver asked for num_cpus_for_driver CPUs: more intra-op threads than
        # that only contend with the workers (and, for small MLPs, with each other).
        torch.set_num_threads(max(1, int(self.config["num_cpus_for_driver"])))
        if self.config["seed"] is not None:
            torch.manual_seed(self.config["seed"])
            np.random.seed(self.config["seed"])
        self.env_creator = _env_creator(self._env_id)
        self._episode_history = collections.deque(
            maxlen=self.config["metrics_smoothing_episodes"]
        )
        self.steps_sampled = 0
        self.steps_trained = 0
        self.evaluation_workers = None
        # Phase timers of training_step (``sample``, ``learn``, ``synch_weights``):
        # reported as ``<name>_time_ms`` in result["timers"] and result["info"].
        self._timers: dict = collections.defaultdict(TimerStat)
        self._init(self.config, self.env_creator)
        torch.set_num_threads(self._learner_threads())
        if self.config["evaluation_interval"]:
            eval_config = merge_dicts(self.config, self.config["evaluation_config"])
            eval_config["batch_mode"] = "complete_episodes"
            # Evaluation simulates the env even when training reads offline data.
            if "input" not in self.config["evaluation_config"]:
                eval_config["input"] = "sampler"
            eval_config["output"] = self.config["evaluation_config"].get("output")
            self.evaluation_workers = self._make_workers(
                self.env_creator, self._policy, eval_config, num_workers=0
            )

    @classmethod
    def merge_trainer_configs(cls, defaults: dict, config: dict) -> dict:
        """``defaults`` updated with ``config``; unknown keys raise with a suggestion."""
        merged = copy.deepcopy(defaults)
        deep_update(merged, config, new_keys_allowed=False, whitelist=FREE_FORM_SUBKEYS)
        return merged

    def _init(self, config, env_creator) -> None:
        """Build workers (and anything else the algorithm needs)."""
        self.workers = self._make_workers(env_creator, self._policy, config,
                                          config["num_workers"])

    # True where remote workers keep sampling while the driver learns (asynchronous
    # algorithms, or ``sample_async``); False where each iteration samples, then learns.
    _workers_sample_while_learning = False

    def _learner_threads(self) -> int:
        """Intra-op threads for the driver's learning: its own ``num_cpus_for_driver``,
        plus, when sampling and learning take turns, the CPUs reserved for this trainer's
        remote workers on this node (idle while the driver learns). More would only
        contend with the workers, and with other trials on the machine."""
        threads = float(self.config["num_cpus_for_driver"])
        remote = [] if self._workers_sample_while_learning or self.config["sample_async"] \
            or self.workers is None else self.workers.remote_workers()
        if remote:
            here = ray.get_runtime_context().get_node_id()
            nodes = ray.get([w.apply.remote(_node_id) for w in remote])
            threads += self.config["num_cpus_per_worker"] * nodes.count(here)
        return max(1, min(int(threads), os.cpu_count() or 1))

    def _make_workers(self, env_creator, policy, config, num_workers) -> WorkerSet:
        return WorkerSet(env_creator, policy, config, num_workers, logdir=self.logdir)

    # --- training ---------------------------------------------------------------------------

    def training_step(self) -> dict:
        """One round of sampling and learning; returns ``{policy_id: learner stats}``."""
        raise NotImplementedError

    def _train(self) -> dict:
        start = time.time()
        steps_before = self.steps_sampled
        learner = {}
        while True:
            learner = self.training_step()
            elapsed = time.time() - start
            done_steps = self.steps_sampled - steps_before
            if (elapsed >= self.config["min_iter_time_s"]
                    and done_steps >= self.config["timesteps_per_iteration"]):
                break
        if self.config["synchronize_filters"] and self.workers.remote_workers():
            FilterManager.synchronize(self.workers.local_worker().filters,
                                      self.workers.remote_workers())
        result = self._collect_metrics()
        timers = dict(self._timers)
        optimizer = getattr(self, "optimizer", None)
        timers.update(getattr(optimizer, "timers", None) or {})
        timer_stats = timer_report(timers)
        timer_stats["training_iteration_time_ms"] = round(1000 * (time.time() - start), 3)
        result.update(
            timesteps_this_iter=self.steps_sampled - steps_before,
            timesteps_total=self.steps_sampled,
            num_healthy_workers=len(self.workers.remote_workers()),
            timers=timer_stats,
            info=dict(learner, learner=learner, num_steps_sampled=self.steps_sampled,
                      num_steps_trained=self.steps_trained, **timer_report(timers)),
        )
        # Ray 2.x reports episode metrics under "env_runners" (and calls rewards returns).
        result["env_runners"] = {
            "episode_return_mean": result["episode_reward_mean"],
            "episode_return_min": result["episode_reward_min"],
            "episode_return_max": result["episode_reward_max"],
            "episode_reward_mean": result["episode_reward_mean"],
            "episode_len_mean": result["episode_len_mean"],
            "num_episodes": result["episodes_this_iter"],
        }
        if self.evaluation_workers is not None and \
                (self._iteration + 1) % self.config["evaluation_interval"] == 0:
            result["evaluation"] = self._evaluate()
        if self.config["callbacks"].get("on_train_result"):
            self.config["callbacks"]["on_train_result"]({"trainer": self, "result": result})
        return result

    def _collect_metrics(self) -> dict:
        new = collect_episodes(self.workers.local_worker(), self.workers.remote_workers(),
                               self.config["collect_metrics_timeout"])
        self._episode_history.extend(e for e in new if isinstance(e, RolloutMetrics))
        return summarize_episodes(list(self._episode_history), new)

    def set_global_vars(self) -> None:
        global_vars = {"timestep": self.steps_sampled}
        self.workers.local_worker().set_global_vars(global_vars)
        for worker in self.workers.remote_workers():
            worker.set_global_vars.remote(global_vars)

    def _evaluate(self) -> dict:
        """Run ``evaluation_num_episodes`` episodes with the current weights."""
        worker = self.evaluation_workers.local_worker()
        worker.set_weights(self.workers.local_worker().get_weights())
        worker.sync_filters(self.workers.local_worker().get_filters())
        episodes = []
        while len(episodes) < self.config["evaluation_num_episodes"]:
            worker.sample()
            episodes.extend(worker.get_metrics())
        return summarize_episodes(episodes[: self.config["evaluation_num_episodes"]])

    # --- acting -----------------------------------------------------------------------------

    def compute_action(self, observation, state=None, prev_action=None, prev_reward=None,
                       info=None, policy_id=DEFAULT_POLICY_ID, full_fetch=False, explore=None):
        """The action of ``policy_id`` for one raw observation."""
        worker = self.workers.local_worker()
        preprocessed = worker.preprocessors[policy_id].transform(observation)
        filtered = worker.filters[policy_id](preprocessed, update=False)
        action, state_out, extra = self.get_policy(policy_id).compute_single_action(
            filtered, state, prev_action, prev_reward, info,
            clip_actions=self.config["clip_actions"], explore=explore,
        )
        if state or full_fetch:
            return action, state_out, extra
        return action

    def compute_single_action(self, observation, *args, **kwargs):
        return self.compute_action(observation, *args, **kwargs)

    def get_policy(self, policy_id=DEFAULT_POLICY_ID):
        return self.workers.local_worker().get_policy(policy_id)

    def get_weights(self, policies=None) -> dict:
        return self.workers.local_worker().get_weights(policies)

    def set_weights(self, weights: dict) -> None:
        self.workers.local_worker().set_weights(weights)
        self.workers.sync_weights()

    # --- checkpoints ------------------------------------------------------------------------

    def _save(self, checkpoint_dir):
        path = os.path.join(checkpoint_dir, f"checkpoint-{self.iteration}")
        checkpoint.write_checkpoint(
            path, self._name, self.config, self.workers.local_worker().get_state(),
            {"steps_sampled": self.steps_sampled, "steps_trained": self.steps_trained},
        )
        return path

    def _restore(self, checkpoint_path):
        data = checkpoint.load_checkpoint(checkpoint_path)
        if data["algorithm"] != self._name:
            raise checkpoint.CheckpointError(
                f"this checkpoint was written by {data['algorithm']}, not {self._name}: restore "
                f"it with --run {data['algorithm']}"
            )
        self.workers.local_worker().set_state(data["worker"])
        self.workers.sync_weights()
        if self.workers.remote_workers():
            filters = ray.put(self.workers.local_worker().get_filters())
            ray.get([w.sync_filters.remote(filters) for w in self.workers.remote_workers()])
        self.steps_sampled = data["trainer_state"]["steps_sampled"]
        self.steps_trained = data["trainer_state"]["steps_trained"]

    def export_policy_model(self, export_dir, policy_id=DEFAULT_POLICY_ID) -> None:
        self.get_policy(policy_id).export_model(export_dir)

    def export_policy_checkpoint(self, export_dir, filename_prefix="model",
                                 policy_id=DEFAULT_POLICY_ID) -> None:
        self.get_policy(policy_id).export_checkpoint(export_dir)

    def _export_model(self, export_formats, export_dir):
        exported = {}
        for fmt in export_formats:
            path = os.path.join(export_dir, fmt)
            if fmt == "model":
                self.export_policy_model(path)
            elif fmt == "checkpoint":
                self.export_policy_checkpoint(path)
            else:
                raise ValueError(f"unknown export format {fmt!r}: use 'model' or 'checkpoint'")
            exported[fmt] = path
        return exported

    def _stop(self):
        if hasattr(self, "workers"):
            self.workers.stop()
        if self.evaluation_workers is not None:
            self.evaluation_workers.stop()

    def __repr__(self):
        return self._name

    # 0.7 callbacks print ``info["trainer"].__name__``: the class's name. A non-data
    # descriptor, so the actor class built on a trainer can still set its own.
    __name__ = _ClassNameOfInstance()  # type: ignore[assignment]


class _ResultsDirCreator:
    """Standalone trainers (not under Tune) keep checkpoints in a directory of their own,
    ``~/ray_results/<Algo>_<env>_<date>`` (``$TUNE_RESULT_DIR`` moves the root), as in 0.7."""

    def __init__(self, name, env):
        env_name = env if isinstance(env, str) else getattr(env, "__name__", "env")
        root = os.path.expanduser(os.environ.get("TUNE_RESULT_DIR", "~/ray_results"))
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
        os.makedirs(root, exist_ok=True)
        self.logdir = tempfile.mkdtemp(prefix=f"{name}_{env_name}_{stamp}", dir=root)

    def __call__(self, config):
        return self

    def on_result(self, result):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def _node_id(_worker) -> str:
    return ray.get_runtime_context().get_node_id()


def _check_input(source) -> None:
    """Fail early, with the accepted forms, on an ``input`` setting that cannot work."""
    if source == "sampler" or callable(source):
        return
    if isinstance(source, str | list | tuple):
        from ray.rllib.offline.json_io import _expand

        _expand(source if isinstance(source, str) else list(source))
        return
    if isinstance(source, dict):
        probs = list(source.values())
        if not probs or any(p < 0 for p in probs) or abs(sum(probs) - 1.0) > 1e-6:
            raise ValueError(f"input probabilities must be >= 0 and sum to 1, got {source}")
        for key in source:
            if key != "sampler":
                _check_input(key)
        return
    raise ValueError(
        f"input={source!r}: use 'sampler', a directory or glob of JSON experience files, a "
        "list of files, a dict {source: probability}, or a function ioctx -> InputReader"
    )


def _unwrap_callbacks(callbacks: dict) -> dict:
    """Accept ``tune.function(f)`` wrappers and plain functions alike."""
    return {k: getattr(v, "func", v) for k, v in callbacks.items() if v is not None}


def _env_creator(env):
    if env is None:
        raise ValueError("no environment: pass env=... or config['env']")
    if isinstance(env, str):
        if _registry_contains(ENV_CREATOR, env):
            return _registry_get(ENV_CREATOR, env)
        from ray.rllib.env.gym_compat import resolve_env_id

        resolve_env_id(env)  # fail early, with suggestions, on unknown names
        return lambda env_context: make_gym_env(env)
    if isinstance(env, type):
        return lambda env_context: env(env_context)
    if callable(env):
        return env
    raise TypeError(f"env must be a registered name, a gym id or an env class, not {env!r}")


__all__ = ["COMMON_CONFIG", "EnvContext", "Trainer"]
