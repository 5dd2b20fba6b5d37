"""`ray.tune.search.bayesopt` (Ray 2.x path) = `ray.tune.suggest.bayesopt`."""

from ray.tune.suggest.bayesopt import BayesOptSearch

__all__ = ["BayesOptSearch"]
