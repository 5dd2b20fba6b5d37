"""The local worker plus ``num_workers`` RolloutWorker actors."""

from __future__ import annotations

import copy
import logging

import ray
from ray.exceptions import RayError
from ray.rllib.evaluation.rollout_worker import RolloutWorker

logger = logging.getLogger(__name__)


class WorkerSet:
    def __init__(self, env_creator, policy, trainer_config=None, num_workers=0, logdir=None,
                 _setup=True):
        self._env_creator = env_creator
        self._policy = policy
        self._config = trainer_config or {}
        self._logdir = logdir
        self._local_worker = None
        self._remote_workers: list = []
        if _setup:
            self._local_worker = self._make_worker(RolloutWorker, env_creator, policy, 0)
            self.add_workers(num_workers)

    def local_worker(self) -> RolloutWorker:
        return self._local_worker

    def remote_workers(self) -> list:
        return self._remote_workers

    def add_workers(self, num_workers: int) -> None:
        if num_workers <= 0:
            return
        create = self._remote_creator()
        start = len(self._remote_workers) + 1
        self._remote_workers.extend(
            self._make_worker(create, self._env_creator, self._policy, i)
            for i in range(start, start + num_workers)
        )

    def _remote_creator(self):
        config = self._config
        remote_cls = ray.remote(
            num_cpus=config.get("num_cpus_per_worker", 1),
            num_gpus=config.get("num_gpus_per_worker", 0),
            resources=config.get("custom_resources_per_worker") or None,
        )(_remote_worker_class())
        from ray.rllib.models.catalog import ModelCatalog

        # Custom models registered in the driver must exist in the workers too.
        catalog = ModelCatalog.export_registry()

        def create(*args, **kwargs):
            return remote_cls.remote(catalog, *args, **kwargs)

        return create

    def _recreate_worker(self, worker_index: int):
        """A new remote worker in place of one that died, with the current weights."""
        worker = self._make_worker(self._remote_creator(), self._env_creator, self._policy,
                                   worker_index)
        worker.set_weights.remote(ray.put(self._local_worker.get_weights()))
        return worker

    def gather(self, refs: list) -> list:
        """``ray.get`` one result per remote worker; with ``ignore_worker_failures``, workers
        that died are dropped (and their results skipped) instead of failing the step, or
        replaced by new ones with ``recreate_failed_workers``."""
        config = self._config  # recreating implies tolerating, as in Ray
        if not (config.get("ignore_worker_failures") or config.get("recreate_failed_workers")):
            return ray.get(refs)
        results, alive = [], []
        for index, (worker, ref) in enumerate(zip(self._remote_workers, refs), start=1):
            try:
                results.append(ray.get(ref))
                alive.append(worker)
            except RayError as error:  # the actor died, or its env/policy raised (as 0.7)
                replacement = self._replace_failed(worker, index, error)
                if replacement is not None:
                    alive.append(replacement)
        self._remote_workers = alive
        if not alive:
            raise RuntimeError("every rollout worker has failed")
        return results

    def tolerates_failures(self) -> bool:
        return bool(self._config.get("ignore_worker_failures")
                    or self._config.get("recreate_failed_workers"))

    def _replace_failed(self, worker, index: int, error):
        """Stop a failed worker; its replacement with ``recreate_failed_workers``, else None."""
        try:
            ray.kill(worker)
        except Exception:  # noqa: BLE001 - a dead actor is already gone
            pass
        if self._config.get("recreate_failed_workers"):
            logger.warning("rollout worker %d failed (%s); recreating it "
                           "(recreate_failed_workers=True)", index, type(error).__name__)
            return self._recreate_worker(index)
        logger.warning("rollout worker %d failed (%s); continuing without it "
                       "(ignore_worker_failures=True)", index, type(error).__name__)
        return None

    def handle_failure(self, worker, error):
        """A call on remote ``worker`` raised ``error``: re-raise unless failures are
        tolerated; else drop (or replace) the worker and return its replacement (or None).
        Raises when no worker is left."""
        if not self.tolerates_failures():
            raise error
        index = self._remote_workers.index(worker) + 1
        replacement = self._replace_failed(worker, index, error)
        if replacement is None:
            self._remote_workers.remove(worker)
        else:
            self._remote_workers[index - 1] = replacement
        if not self._remote_workers:
            raise RuntimeError("every rollout worker has failed") from error
        return replacement

    def sync_weights(self) -> None:
        """Broadcast the local worker's weights to every remote worker."""
        if self._remote_workers:
            weights = ray.put(self._local_worker.get_weights())
            ray.get([w.set_weights.remote(weights) for w in self._remote_workers])

    def foreach_worker(self, func) -> list:
        local = [func(self._local_worker)]
        return local + ray.get([w.apply.remote(func) for w in self._remote_workers])

    def foreach_worker_with_index(self, func) -> list:
        local = [func(self._local_worker, 0)]
        return local + ray.get(
            [w.apply.remote(func, i + 1) for i, w in enumerate(self._remote_workers)]
        )

    def stop(self) -> None:
        self._local_worker.stop()
        for worker in self._remote_workers:
            try:
                worker.stop.remote()
                ray.kill(worker)
            except Exception:  # noqa: BLE001 - a dead actor is already stopped
                pass
        self._remote_workers = []

    def _make_worker(self, cls, env_creator, policy, worker_index):
        config = self._config
        ma = config.get("multiagent", {}) or {}
        policies = ma.get("policies") or policy
        if isinstance(policies, dict):
            policies = {
                pid: (spec[0] or policy, spec[1], spec[2], spec[3] if len(spec) > 3 else {})
                for pid, spec in policies.items()
            }
        seed = config.get("seed")
        return cls(
            env_creator,
            policies,
            policy_mapping_fn=ma.get("policy_mapping_fn"),
            policies_to_train=ma.get("policies_to_train"),
            batch_steps=config.get("sample_batch_size", 200),
            batch_mode=config.get("batch_mode", "truncate_episodes"),
            episode_horizon=config.get("horizon"),
            preprocessor_pref=config.get("preprocessor_pref", "deepmind"),
            sample_async=config.get("sample_async", False),
            num_envs=config.get("num_envs_per_worker", 1),
            observation_filter=config.get("observation_filter", "NoFilter"),
            clip_rewards=config.get("clip_rewards"),
            clip_actions=config.get("clip_actions", True),
            env_config=copy.deepcopy(config.get("env_config", {})),
            model_config=config.get("model"),
            policy_config=config,
            worker_index=worker_index,
            log_dir=self._logdir,
            monitor_path=self._logdir if config.get("monitor") else None,
            remote_worker_envs=config.get("remote_worker_envs", False),
            compress_observations=config.get("compress_observations", False),
            _fake_sampler=config.get("_fake_sampler", False),
            log_level=config.get("log_level"),
            callbacks=config.get("callbacks"),
            soft_horizon=config.get("soft_horizon", False),
            seed=seed,
            output_creator=_output_creator(config, self._logdir, worker_index),
            input_creator=_input_creator(config),
            input_evaluation=config.get("input_evaluation") or (),
        )


def _input_creator(config: dict):
    """What the ``input`` key asks for: None (the sampler), files, a mix, or a function."""
    source = config.get("input", "sampler")
    if source in (None, "sampler"):
        return None
    shuffle = config.get("shuffle_buffer_size", 0)
    seed = config.get("seed")

    def create(ioctx):
        from ray.rllib.offline.json_io import JsonReader
        from ray.rllib.offline.mixed_input import MixedInput
        from ray.rllib.offline.shuffled_input import ShuffledInput

        if callable(source):
            return source(ioctx)
        if isinstance(source, dict):
            reader = MixedInput(source, ioctx, seed=seed)
        else:
            reader = JsonReader(source, ioctx, seed=None if seed is None
                                else seed + ioctx.worker_index)
        return ShuffledInput(reader, shuffle, seed=seed) if shuffle else reader

    return create


def _output_creator(config: dict, logdir, worker_index: int):
    """What the ``output`` key asks for: None, "logdir", a directory, or a function."""
    output = config.get("output")
    if output is None:
        return None
    if callable(output):
        return output
    path = logdir if output == "logdir" else output
    max_size = config.get("output_max_file_size", 64 * 1024 * 1024)
    columns = tuple(config.get("output_compress_columns", ["obs", "new_obs"]))

    def create(_io_context=None):
        from ray.rllib.offline.json_io import JsonWriter

        return JsonWriter(path, max_file_size=max_size, compress_columns=columns,
                          worker_index=worker_index)

    return create


_WORKER_METHODS = (
    "sample", "sample_with_count", "get_metrics", "learn_on_batch", "compute_gradients",
    "apply_gradients", "get_weights", "set_weights", "get_filters", "sync_filters", "save",
    "restore", "get_state", "set_state", "set_global_vars", "get_policy", "for_policy",
    "foreach_policy", "foreach_trainable_policy", "foreach_env", "get_host", "stop",
)


def _remote_worker_class():
    """The actor class for remote RolloutWorkers.

    A proxy defined in a closure (so it travels by value) that re-registers the
    driver's custom models before building the RolloutWorker. Importing
    RolloutWorker (and torch) inside ``__init__`` also sidestepped a ray-core hang,
    since fixed, when an actor class's own module imported torch.
    """

    class RolloutWorkerActor:
        def __init__(self, catalog, *args, **kwargs):
            from ray.rllib.evaluation.rollout_worker import RolloutWorker
            from ray.rllib.models.catalog import ModelCatalog

            ModelCatalog.import_registry(catalog)
            self.worker = RolloutWorker(*args, **kwargs)

        def apply(self, func, *args):
            return func(self.worker, *args)

    def forward(name):
        def method(self, *args, **kwargs):
            return getattr(self.worker, name)(*args, **kwargs)

        method.__name__ = name
        return method

    for name in _WORKER_METHODS:
        setattr(RolloutWorkerActor, name, forward(name))
    return RolloutWorkerActor
