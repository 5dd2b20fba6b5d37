"""Adaptive hyperparameter search with ``ray.wait`` (FEATURES EX-010): trials train in
segments; when a segment finishes the driver continues it only if it beats the median
of finished segments at that depth, otherwise starts a fresh random trial. Weights
travel between segments as object refs, never through the driver.

    python examples/hyperopt/hyperopt_adaptive.py --num-starting-segments=5 \
        --num-segments=10 --steps-per-segment=20                            # as documented
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import numpy as np
import objective

import ray

cloudpickle.register_pickle_by_value(objective)


@ray.remote(num_returns=2)
def train_segment(weights, params: dict, steps: int, seed: int):
    weights = objective.train_steps(weights, params, steps, seed=seed)
    return weights, objective.accuracy(weights)


def search(num_starting_segments: int, num_segments: int, steps_per_segment: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    # accuracy ref -> (params, weights ref, depth)
    running: dict = {}
    accuracies_at_depth: dict[int, list[float]] = {}
    best = (None, -1.0)
    launched = 0

    def launch(params, weights, depth):
        nonlocal launched
        weights_ref, accuracy_ref = train_segment.remote(weights, params, steps_per_segment, launched)
        running[accuracy_ref] = (params, weights_ref, depth)
        launched += 1

    for _ in range(num_starting_segments):
        launch(objective.generate_hyperparameters(rng), objective.init_weights(), 1)
    while running:
        [ready], _ = ray.wait(list(running), num_returns=1)
        params, weights_ref, depth = running.pop(ready)
        accuracy = ray.get(ready)
        seen = accuracies_at_depth.setdefault(depth, [])
        seen.append(accuracy)
        if accuracy > best[1]:
            best = (params, accuracy)
        print(f"depth {depth}: accuracy {accuracy:.3f} with {params}")
        if launched >= num_segments:
            continue
        if accuracy >= np.median(seen):
            launch(params, weights_ref, depth + 1)  # promising: keep training it
        else:
            launch(objective.generate_hyperparameters(rng), objective.init_weights(), 1)
    print(f"best accuracy after {launched} segments: {best[1]:.3f} with {best[0]}")
    return best, accuracies_at_depth


def main(argv=None):
    parser = argparse.ArgumentParser(description="Adaptive hyperparameter search.")
    parser.add_argument("--num-starting-segments", default=5, type=int)
    parser.add_argument("--num-segments", default=10, type=int)
    parser.add_argument("--steps-per-segment", default=20, type=int)
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    return search(args.num_starting_segments, args.num_segments, args.steps_per_segment)


if __name__ == "__main__":
    main()
