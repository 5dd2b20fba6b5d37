"""Tune: scalable hyperparameter search on Ray.

    from ray import tune
    tune.run(train_fn, config={"lr": tune.grid_search([0.1, 0.01])}, stop={"mean_accuracy": 0.99})

Layers: `tune.run` (tune.py, the I/O shell) drives the pure `TrialController`
(controller.py) and the `RayTrialExecutor` (one actor per trial). Schedulers
(`ray.tune.schedulers`) and search algorithms (`ray.tune.suggest`) are plug-ins that
see read-only trial views and return decisions.
"""

from ray.tune import _require_core  # noqa: F401, I001
from ray.tune import track
from ray.tune.analysis import Analysis, ExperimentAnalysis
from ray.tune.error import TuneError
from ray.tune.experiment import Experiment
from ray.tune.function_runner import report
from ray.tune.registry import register_env, register_trainable
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
from ray.tune.trainable import Trainable
from ray.tune.tune import run, run_experiments

__all__ = [
    "Trainable",
    "TuneError",
    "grid_search",
    "register_env",
    "register_trainable",
    "run",
    "run_experiments",
    "Experiment",
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
]
