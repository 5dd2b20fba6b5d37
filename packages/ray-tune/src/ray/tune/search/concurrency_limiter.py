"""`ray.tune.search.concurrency_limiter` (Ray 2.x path) = `ray.tune.suggest.concurrency_limiter`."""

from ray.tune.suggest.concurrency_limiter import ConcurrencyLimiter

__all__ = ["ConcurrencyLimiter"]
