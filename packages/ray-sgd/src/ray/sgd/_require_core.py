"""Fail early, and clearly, when ray-core is not installed."""

import ray

if not hasattr(ray, "init"):
    raise ImportError(
        "ray.sgd needs ray-core, which is not installed: "
        "pip install packages/ray-core (or the ray-core distribution)"
    )
