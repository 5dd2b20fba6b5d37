"""AxSearch with AsyncHyperBand on the Hartmann6 function (FEATURES EX-043 ``ax_example``).

Ax (``pip install ax-platform``; it uses the installed torch through BoTorch) proposes
six-dimensional points under a linear parameter constraint (x1 + x2 <= 2) and an outcome
constraint (the point's L2 norm at most 1.25). Each trial evaluates Hartmann6 step by
step, reporting the running value, and AsyncHyperBand stops unpromising trials.
Without Ax installed the script exits with the pip command to run.

    python examples/tune/ax_example.py                 # full size: 50 trials (Sobol, then BoTorch)
    python examples/tune/ax_example.py --smoke-test    # 6 trials (Sobol only)
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import ray
from ray import tune
from ray.tune.schedulers import AsyncHyperBandScheduler

# Hartmann6 (Dixon & Szego 1978): minimum -3.32237 at
# (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
              [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])


def hartmann6(x: np.ndarray) -> float:
    return float(-np.sum(ALPHA * np.exp(-np.sum(A * (x - P) ** 2, axis=1))))


def easy_objective(config, reporter):
    import time

    x = np.array([config.get(f"x{i + 1}") for i in range(6)])
    for i in range(config["iterations"]):
        # The value approaches hartmann6(x) as i grows, so early rungs already rank trials.
        reporter(timesteps_total=i + 1, hartmann6=hartmann6(x) * (i + 1) / config["iterations"],
                 l2norm=float(np.sqrt((x**2).sum())))
        time.sleep(0.02)


def make_ax_client():
    try:
        from ax.service.ax_client import AxClient, ObjectiveProperties
    except ImportError as exc:
        raise SystemExit(f"ax_example needs Ax, which is not installed ({exc}): pip install ax-platform") from exc

    client = AxClient(enforce_sequential_optimization=False, random_seed=0, verbose_logging=False)
    client.create_experiment(
        name="hartmann_test",
        parameters=[{"name": f"x{i + 1}", "type": "range", "bounds": [0.0, 1.0]} for i in range(6)],
        objectives={"hartmann6": ObjectiveProperties(minimize=True)},
        parameter_constraints=["x1 + x2 <= 2.0"],  # optional
        outcome_constraints=["l2norm <= 1.25"],  # optional
    )
    return client


def main(smoke_test: bool = False, local_dir: str | None = None):
    client = make_ax_client()
    from ray.tune.suggest.ax import AxSearch

    algo = AxSearch(client, max_concurrent=4)
    scheduler = AsyncHyperBandScheduler(time_attr="timesteps_total", metric="hartmann6", mode="min",
                                        max_t=100, grace_period=10)
    return tune.run(
        easy_objective,
        name="ax",
        search_alg=algo,
        scheduler=scheduler,
        num_samples=6 if smoke_test else 50,
        config={"iterations": 20 if smoke_test else 100},
        stop={"timesteps_total": 100},
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    ), client


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    analysis, client = main(args.smoke_test)
    parameters, values = client.get_best_parameters()
    print("Best parameters:", parameters, "predicted:", values, file=sys.stderr)
