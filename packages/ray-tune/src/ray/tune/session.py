"""The Ray 2.x session functions used inside a function trainable.

    from ray import train
    def objective(config):
        start = 0
        if (checkpoint := train.get_checkpoint()) is not None:   # PBT, pause, Tuner.restore
            with checkpoint.as_directory() as d:
                start = int(open(os.path.join(d, "step")).read())
        for step in range(start, 10):
            ...
            train.report({"score": score}, checkpoint=Checkpoint.from_directory(d))

`train.report`, `tune.report` and the 0.7 `reporter(...)` all feed the same queue
(function_runner.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ray.tune import function_runner
from ray.tune.checkpoint import Checkpoint
from ray.tune.error import TuneError


def report(metrics: dict | None = None, *, checkpoint: Checkpoint | None = None, **kwargs: Any):
    """`train.report({"score": 1.0}, checkpoint=...)`; keyword metrics also work."""
    metrics = dict(metrics or {})
    metrics.update(kwargs)
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        raise TuneError(
            f"report(checkpoint=...) needs a ray.train.Checkpoint, got {type(checkpoint).__name__}; "
            "use Checkpoint.from_directory(path)"
        )
    if checkpoint is None:
        function_runner.report(metrics)
    else:
        function_runner.report(metrics, checkpoint=checkpoint)


def _runner():
    runner = function_runner.current_runner()
    if runner is None:
        raise TuneError(
            "train.get_checkpoint()/get_context() was called outside a Tune trial; call it "
            "from the function passed to tune.Tuner() or tune.run()"
        )
    return runner


def get_checkpoint() -> Checkpoint | None:
    """The checkpoint this trial was restored from (None when it starts fresh)."""
    return _runner()._restored_checkpoint


@dataclass(frozen=True)
class TrainContext:
    """What `train.get_context()` returns inside a trial (one worker per trial)."""

    trial_id: str
    trial_name: str
    trial_dir: str

    def get_trial_id(self) -> str:
        return self.trial_id

    def get_trial_name(self) -> str:
        return self.trial_name

    def get_trial_dir(self) -> str:
        return self.trial_dir

    def get_experiment_name(self) -> str:
        return os.path.basename(os.path.dirname(self.trial_dir.rstrip(os.sep)))

    def get_world_size(self) -> int:
        return 1

    def get_world_rank(self) -> int:
        return 0

    def get_local_rank(self) -> int:
        return 0

    def get_local_world_size(self) -> int:
        return 1

    def get_node_rank(self) -> int:
        return 0

    def get_trial_resources(self):
        """The trial's PlacementGroupFactory (the bundles of the group it runs in), or
        None when the trial was not given one."""
        from ray.util.placement_group import get_current_placement_group, placement_group_table

        pg = get_current_placement_group()
        if pg is None:
            return None
        from ray.tune.execution.placement_groups import PlacementGroupFactory

        strategy = placement_group_table(pg).get("strategy", "PACK")
        return PlacementGroupFactory(pg.bundle_specs, strategy=strategy)


def get_context() -> TrainContext:
    runner = _runner()
    return TrainContext(
        trial_id=runner.trial_id,
        trial_name=runner.trial_name,
        trial_dir=runner.trial_dir,
    )
