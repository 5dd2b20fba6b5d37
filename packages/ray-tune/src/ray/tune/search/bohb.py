"""`ray.tune.search.bohb` (Ray 2.x path) = `ray.tune.suggest.bohb`."""

from ray.tune.suggest.bohb import TuneBOHB

__all__ = ["TuneBOHB"]
