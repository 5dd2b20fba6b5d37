"""`ray.tune.search.ax` (Ray 2.x path) = `ray.tune.suggest.ax`."""

from ray.tune.suggest.ax import AxSearch

__all__ = ["AxSearch"]
