"""`ray.tune.search.skopt` (Ray 2.x path) = `ray.tune.suggest.skopt`."""

from ray.tune.suggest.skopt import SkOptSearch

__all__ = ["SkOptSearch"]
