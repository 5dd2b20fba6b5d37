"""Trial schedulers: decide to continue, pause or stop trials as results arrive."""

from ray.tune.schedulers.async_hyperband import ASHAScheduler, AsyncHyperBandScheduler
from ray.tune.schedulers.hb_bohb import HyperBandForBOHB
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
    "HyperBandForBOHB",
    "PB2",
]


def __getattr__(name: str):
    if name == "PB2":  # imports scikit-learn: only when asked for
        from ray.tune.schedulers.pb2 import PB2

        return PB2
    raise AttributeError(f"module 'ray.tune.schedulers' has no attribute {name!r}")
