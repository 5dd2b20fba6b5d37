"""`ray.tune.search.optuna` (Ray 2.x path) = `ray.tune.suggest.optuna`."""

from ray.tune.suggest.optuna import OptunaSearch

__all__ = ["OptunaSearch"]
