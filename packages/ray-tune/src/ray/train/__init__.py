"""`ray.train` as Ray 2.x Tune code uses it: report, checkpoints, configs, context.

    from ray import train
    train.report({"score": s}, checkpoint=train.Checkpoint.from_directory(d))
    checkpoint = train.get_checkpoint()          # None unless restored (PBT, resume)
    train.get_context().get_trial_dir()
    tune.Tuner(..., run_config=train.RunConfig(name="exp", storage_path="/tmp/x"))

Shipped by ray-tune (it needs only ray-core and ray-tune); the objects are the same
ones `ray.tune` exports. Distributed data-parallel training lives in `ray.sgd`.
"""

from ray.tune.checkpoint import Checkpoint
from ray.tune.config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig, SyncConfig
from ray.tune.result_grid import Result
from ray.tune.session import TrainContext, get_checkpoint, get_context, report

__all__ = [
    "Checkpoint",
    "CheckpointConfig",
    "FailureConfig",
    "Result",
    "RunConfig",
    "SyncConfig",
    "ScalingConfig",
    "TrainContext",
    "get_checkpoint",
    "get_context",
    "report",
]
