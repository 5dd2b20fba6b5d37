"""``PyTorchTrainer``: data-parallel PyTorch training on a group of Ray actors.

The driver-side shell: it starts one ``PyTorchRunner`` actor per replica, lets
rank 0 host the ``torch.distributed`` rendezvous, fans calls out to every
replica and merges their results. Failures: a replica that dies or stalls makes
its peers' collectives fail within ``timeout_s``; the trainer then kills the
whole group and raises ``TrainingFailedError``, or, with ``train(max_retries=N)``,
starts a fresh group from the checkpoint taken before the call and runs the
call again (the data position is in the checkpoint, so the retried call sees
the same samples an uninterrupted run would).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import torch

import ray
from ray.exceptions import RayActorError
from ray.sgd.errors import TrainingFailedError
from ray.sgd.pytorch.recovery import GiveUp, RetryBudget
from ray.sgd.pytorch.runner import PyTorchRunner
from ray.sgd.pytorch.stats import merge_train_stats, merge_validation_stats
from ray.sgd.pytorch.utils import (
    ReplicaSpec,
    choose_backend,
    sgd_mse_optimizer,
    split_batch_size,
)
from ray.sgd.resources import Resources

__all__ = ["PyTorchTrainer"]

logger = logging.getLogger(__name__)


class PyTorchTrainer:
    """Train a PyTorch model with distributed PyTorch on ``num_replicas`` actors.

    Args:
        model_creator: ``config -> torch.nn.Module``.
        data_creator: ``config -> (train Dataset, validation Dataset)``; each
            item is a ``(features, target)`` pair.
        optimizer_creator: ``(model, config) -> (loss, optimizer)``, or
            ``-> optimizer`` when ``loss_creator`` is given.
        config: passed to every creator.
        num_replicas: number of replica actors.
        resources_per_replica: ``Resources`` of each actor (default 1 CPU, or
            1 CPU + 1 GPU with ``use_gpu``); ``num_cpus`` is also the replica's
            torch thread count.
        batch_size: the global batch of one update, split evenly over the
            replicas (so 2 replicas with 16 take 8 samples each per step).
        backend: "auto" (nccl on GPU, gloo on CPU), "gloo" or "nccl".
        loss_creator: a loss class (``torch.nn.MSELoss``) or ``config -> loss``.
        use_gpu: give each replica a GPU and train on it.
        timeout_s: how long replicas wait for each other, at the rendezvous and
            in every collective, before reporting a lost peer.
    """

    def __init__(
        self,
        model_creator: Callable,
        data_creator: Callable,
        optimizer_creator: Callable = sgd_mse_optimizer,
        config: dict | None = None,
        num_replicas: int = 1,
        resources_per_replica: Resources | None = None,
        batch_size: int = 16,
        backend: str = "auto",
        *,
        loss_creator: Callable | None = None,
        use_gpu: bool = False,
        timeout_s: float = 30.0,
    ):
        if resources_per_replica is None:
            resources_per_replica = Resources(num_cpus=1, num_gpus=1 if use_gpu else 0)
        use_gpu = use_gpu or resources_per_replica.num_gpus > 0
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.model_creator = model_creator
        self.config = dict(config or {})
        self.num_replicas = num_replicas
        self._resources = resources_per_replica
        self._spec = ReplicaSpec(
            model_creator=model_creator,
            data_creator=data_creator,
            optimizer_creator=optimizer_creator,
            loss_creator=loss_creator,
            config=self.config,
            batch_size_per_replica=split_batch_size(batch_size, num_replicas),
            backend=choose_backend(backend, use_gpu),
            use_gpu=use_gpu,
            timeout_s=timeout_s,
            num_threads=max(1, int(resources_per_replica.num_cpus)),
        )
        self._actor_class = ray.remote(**resources_per_replica.actor_options())(PyTorchRunner)
        _warn_if_cluster_too_small(resources_per_replica, num_replicas)
        self.workers: list = []
        self._start_group()

    # -- the replica group --------------------------------------------------

    def _start_group(self, state=None) -> None:
        world = self.num_replicas
        self.workers = [self._actor_class.remote(self._spec, rank, world) for rank in range(world)]
        try:
            address = self._gather([self.workers[0].open_rendezvous.remote()], "rendezvous")[0]
            self.pids = self._gather([w.setup.remote(address) for w in self.workers], "setup")
            if state is not None:
                state_ref = ray.put(state)
                self._gather([w.set_state.remote(state_ref) for w in self.workers], "restore")
        except TrainingFailedError:
            self._kill_group()
            raise

    def _kill_group(self) -> None:
        for worker in self.workers:
            try:
                ray.kill(worker)
            except Exception:  # noqa: BLE001 - already dead is fine
                pass
        self.workers = []

    def _require_group(self) -> None:
        if not self.workers:
            raise TrainingFailedError(
                "this trainer has no replicas: a previous call failed or shutdown() was "
                "called. Create a new PyTorchTrainer (and restore() a checkpoint), or "
                "pass max_retries to train() so it recovers by itself"
            )

    def _gather(self, refs: list, what: str) -> list:
        """Results of one call per replica; on the first failure the group is
        killed (so no survivor waits out its timeout) and the error raised."""
        pending = {ref: rank for rank, ref in enumerate(refs)}
        results: list = [None] * len(refs)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            rank = pending.pop(ready[0])
            try:
                results[rank] = ray.get(ready[0])
            except Exception as err:  # noqa: BLE001 - actor death or a replica's error
                self._kill_group()
                raise _as_training_error(err, rank, what, len(refs)) from None
        return results

    # -- public API ---------------------------------------------------------

    def train(
        self, num_steps: int | None = None, *, max_retries: int = 0, checkpoint="auto"
    ) -> dict:
        """Run one epoch (or ``num_steps`` updates) on every replica.

        Returns ``train_loss`` (mean over the samples of all replicas),
        ``num_samples``, ``batch_count``, ``epoch`` and ``time_s``. With
        ``max_retries > 0`` a failed call restarts the group from
        ``checkpoint``: "auto" (the state before this call, which the driver
        keeps in memory) or a path written by ``save()``.
        """
        budget = RetryBudget(max_retries)
        state = self._retry_state(checkpoint) if max_retries else None
        restart = False
        while True:
            try:
                if restart:  # a failed restart counts as one more failure
                    self._start_group(state=state)
                self._require_group()
                refs = [w.train.remote(num_steps) for w in self.workers]
                return merge_train_stats(self._gather(refs, "train"))
            except TrainingFailedError as err:
                decision = budget.failed()
                if isinstance(decision, GiveUp):
                    raise
                logger.warning(
                    "training failed (%s); restarting %d replicas from the checkpoint "
                    "(retry %d of %d)",
                    err,
                    self.num_replicas,
                    decision.attempt,
                    max_retries,
                )
                self._kill_group()
                restart = True

    def _retry_state(self, checkpoint):
        if checkpoint == "auto":
            self._require_group()
            return self._gather([self.workers[0].get_state.remote()], "checkpoint")[0]
        if not checkpoint:
            raise ValueError("max_retries needs a checkpoint: 'auto' or a path from save()")
        return torch.load(checkpoint, weights_only=True)

    def validate(self) -> dict:
        """``validation_loss`` (and ``validation_accuracy`` for class targets)."""
        self._require_group()
        refs = [w.validate.remote() for w in self.workers]
        return merge_validation_stats(self._gather(refs, "validate"))

    def save(self, checkpoint: str) -> str:
        """Write model, optimizer and data position to ``checkpoint``."""
        self._require_group()
        state = self._gather([self.workers[0].get_state.remote()], "save")[0]
        torch.save(state, checkpoint)
        return checkpoint

    def restore(self, checkpoint: str) -> None:
        """Load ``save()``'s file into every replica."""
        self._require_group()
        if not os.path.exists(checkpoint):
            raise FileNotFoundError(f"no checkpoint at {checkpoint!r}; pass a path save() wrote")
        state_ref = ray.put(torch.load(checkpoint, weights_only=True))
        self._gather([w.set_state.remote(state_ref) for w in self.workers], "restore")

    def get_model(self) -> torch.nn.Module:
        """A fresh ``model_creator`` model holding the trained weights (on CPU)."""
        self._require_group()
        state = self._gather([self.workers[0].get_state.remote()], "get_model")[0]
        model = self.model_creator(self.config)
        model.load_state_dict(state["model"])
        return model

    def foreach_model(self, fn: Callable) -> list:
        """``[fn(model) for each replica's model]``, in rank order."""
        self._require_group()
        return self._gather([w.apply.remote(fn) for w in self.workers], "foreach_model")

    def shutdown(self) -> None:
        """Leave the process group and stop the replica actors."""
        if not self.workers:
            return
        try:
            ray.get([w.shutdown.remote() for w in self.workers], timeout=self._spec.timeout_s)
        except Exception:  # noqa: BLE001 - the actors are killed next anyway
            logger.debug("replica shutdown failed", exc_info=True)
        self._kill_group()


def _warn_if_cluster_too_small(resources: Resources, num_replicas: int) -> None:
    """Replicas that do not fit wait for resources forever; say so up front."""
    total = ray.cluster_resources()
    for name, per_replica in (("CPU", resources.num_cpus), ("GPU", resources.num_gpus)):
        if per_replica and total.get(name, 0) < per_replica * num_replicas:
            logger.warning(
                "%d replicas need %s %s but the cluster has %s: the trainer will wait "
                "until enough join. Lower num_replicas or resources_per_replica.",
                num_replicas,
                per_replica * num_replicas,
                name,
                total.get(name, 0),
            )


def _as_training_error(err: Exception, rank: int, what: str, world: int) -> TrainingFailedError:
    # ray re-raises a replica's exception wrapped in a RayTaskError; the
    # replica's own TrainingFailedError (with its ranks) is the wrapper's cause.
    cause = getattr(err, "cause", None)
    if isinstance(cause, TrainingFailedError):
        return cause
    if isinstance(err, RayActorError):
        return TrainingFailedError(
            f"replica {rank} of {world} died during {what}: {err} Pass max_retries to "
            f"train() to restart the group from the last checkpoint",
            failed_ranks=(rank,),
            cause=repr(err),
        )
    return TrainingFailedError(
        f"replica {rank} of {world} failed during {what}: {err}",
        failed_ranks=(rank,),
        cause=repr(err),
    )
