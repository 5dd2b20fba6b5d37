"""`ray.air` (Ray 2.x): the integrations Tune users import (`ray.air.integrations.*`).

Only what Tune needs lives here: `RunConfig`, `CheckpointConfig`, `FailureConfig`,
`ScalingConfig` re-exported from `ray.tune`, and the MLflow and W&B logger callbacks.
"""

from ray.tune.config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig

__all__ = ["CheckpointConfig", "FailureConfig", "RunConfig", "ScalingConfig"]
