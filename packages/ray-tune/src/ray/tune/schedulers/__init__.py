"""Trial schedulers: decide to continue, pause or stop trials as results arrive."""

from ray.tune.schedulers.async_hyperband import ASHAScheduler, AsyncHyperBandScheduler
from ray.tune.schedulers.hyperband import HyperBandScheduler
from ray.tune.schedulers.median_stopping_rule import MedianStoppingRule
from ray.tune.schedulers.pbt import PopulationBasedTraining
from ray.tune.schedulers.trial_scheduler import FIFOScheduler, TrialScheduler

__all__ = [
    "TrialScheduler",
    "FIFOScheduler",
    "HyperBandScheduler",
    "AsyncHyperBandScheduler",
    "ASHAScheduler",
    "MedianStoppingRule",
    "PopulationBasedTraining",
]
