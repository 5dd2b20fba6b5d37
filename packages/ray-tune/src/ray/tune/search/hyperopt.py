"""`ray.tune.search.hyperopt` (Ray 2.x path) = `ray.tune.suggest.hyperopt`."""

from ray.tune.suggest.hyperopt import HyperOptSearch

__all__ = ["HyperOptSearch"]
