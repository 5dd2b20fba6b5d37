"""Tune: scalable hyperparameter search on Ray.

    from ray import tune
    tune.run(train_fn, config={"lr": tune.grid_search([0.1, 0.01])}, stop={"mean_accuracy": 0.99})
    tune.Tuner(train_fn, param_space={...}, tune_config=tune.TuneConfig(...)).fit()   # Ray 2.x

Layers: `tune.run` (tune.py, the I/O shell) drives the pure `TrialController`
(controller.py) and the `RayTrialExecutor` (one actor per trial). Schedulers
(`ray.tune.schedulers`) and search algorithms (`ray.tune.suggest`) are plug-ins that
see read-only trial views and return decisions.
"""

from ray.tune import _require_core  # noqa: F401, I001
from ray.tune import track
from ray.tune.analysis import Analysis, ExperimentAnalysis
from ray.tune.callback import Callback
from ray.tune.checkpoint import Checkpoint
from ray.tune.config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig, TuneConfig
from ray.tune.error import TuneError
from ray.tune.execution.placement_groups import PlacementGroupFactory
from ray.tune.experiment import Experiment
from ray.tune.function_runner import report
from ray.tune.registry import register_env, register_trainable
from ray.tune.result_grid import Result, ResultGrid
from ray.tune.sample import (
    choice,
    function,
    grid_search,
    loguniform,
    randint,
    randn,
    sample_from,
    uniform,
)
from ray.tune.schedulers import TrialScheduler
from ray.tune.suggest import SearchAlgorithm
from ray.tune.session import get_checkpoint, get_context
from ray.tune.trainable import Trainable
from ray.tune.tune import run, run_experiments
from ray.tune.tuner import Tuner, with_parameters, with_resources

__all__ = [
    "Trainable",
    "TuneError",
    "grid_search",
    "register_env",
    "register_trainable",
    "run",
    "run_experiments",
    "Experiment",
    "PlacementGroupFactory",
    "function",
    "sample_from",
    "track",
    "uniform",
    "loguniform",
    "choice",
    "randint",
    "randn",
    "report",
    "ExperimentAnalysis",
    "Analysis",
    "TrialScheduler",
    "SearchAlgorithm",
    # Ray 2.x
    "Callback",
    "Tuner",
    "TuneConfig",
    "RunConfig",
    "CheckpointConfig",
    "FailureConfig",
    "ScalingConfig",
    "ResultGrid",
    "Result",
    "Checkpoint",
    "with_parameters",
    "with_resources",
    "get_checkpoint",
    "get_context",
]
