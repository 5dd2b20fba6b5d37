"""Tune benchmarks (issue 8 targets); prints one JSON object.

    python benchmarks/bench_tune.py            # quick set (about a minute)
    python benchmarks/bench_tune.py --full     # adds 100 x sleep(1) trials (about a minute more)

The trivial and sleep(1) runs use the default progress reporter (verbose=2: the status
table every 5 s and a line per result), its output sent to /dev/null.
Targets: 100 trivial trials end to end <= 3 s; 100 sleep(1) trials on 2 CPUs <= 57 s;
>= 1,000 results/s with default logging; ASHA within 5% of the exhaustive best with
<= 1/3 of the iterations; PBT beats the best fixed learning rate on the toy problem.
Uses only the public API (`ray`, `ray.tune`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import sys
import tempfile
import time


def trivial(config, reporter):
    reporter(loss=(config["x"] - 0.3) ** 2)


def sleepy(config, reporter):
    time.sleep(1)
    reporter(loss=config["x"])


def chatty(config, reporter):
    for i in range(config["n"]):
        reporter(loss=1.0 / (i + 1), timesteps_this_iter=1)


@contextlib.contextmanager
def _quiet_stdout():
    """The reporter still renders and writes its tables; they go to /dev/null."""
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        yield


def bench_trivial(tune, local_dir, n=100):
    start = time.perf_counter()
    with _quiet_stdout():
        trials = tune.run(trivial, name="trivial", config={"x": tune.uniform(0, 1)},
                          num_samples=n, local_dir=local_dir)
    elapsed = time.perf_counter() - start
    assert all(t.status == "TERMINATED" for t in trials)
    return elapsed


def bench_sleep(tune, local_dir, n=100):
    start = time.perf_counter()
    with _quiet_stdout():
        trials = tune.run(sleepy, name="sleepy", config={"x": tune.uniform(0, 1)}, num_samples=n,
                          local_dir=local_dir)
    assert all(t.status == "TERMINATED" for t in trials)
    return time.perf_counter() - start


def bench_results_per_s(tune, local_dir, n=3000):
    start = time.perf_counter()
    trials = tune.run(chatty, name="chatty", config={"n": n}, num_samples=2, local_dir=local_dir,
                      verbose=0)
    elapsed = time.perf_counter() - start
    results = sum(t.results_count for t in trials)
    return results / elapsed, results


def bench_asha(tune, local_dir):
    from ray.tune.local_executor import LocalTrialExecutor
    from ray.tune.schedulers import AsyncHyperBandScheduler

    class Curve(tune.Trainable):
        def _setup(self, config):
            self.t = 0

        def _train(self):
            self.t += 1
            c = self.config["cfg"]
            return {"episode_reward_mean": c["ceiling"] * (1 - math.exp(-c["rate"] * self.t))}

        def reset_config(self, new_config):
            self.t = 0
            return True

    rng = random.Random(0)
    configs = [{"rate": rng.uniform(0.01, 0.5), "ceiling": rng.uniform(1, 10)} for _ in range(27)]
    max_t = 81
    best = max(c["ceiling"] * (1 - math.exp(-c["rate"] * max_t)) for c in configs)
    trials = tune.run(
        Curve, name="asha", config={"cfg": tune.grid_search(configs)},
        stop={"training_iteration": max_t}, local_dir=local_dir, verbose=0, loggers=[],
        scheduler=AsyncHyperBandScheduler(max_t=max_t, grace_period=1, reduction_factor=3, seed=0),
        trial_executor=LocalTrialExecutor({"CPU": 2}),
    )
    used = sum(t.last_result["training_iteration"] for t in trials)
    found = max(t.last_result["episode_reward_mean"] for t in trials)
    return {"best_found_over_exhaustive": found / best, "iterations_fraction": used / (27 * max_t)}


def bench_pbt(tune, local_dir, seeds=4, iterations=500):
    """The toy learning-rate problem of the seeds' pbt_example: PBT vs the same four lrs fixed."""
    import numpy as np

    from ray.tune.local_executor import LocalTrialExecutor
    from ray.tune.schedulers import FIFOScheduler, PopulationBasedTraining

    class PBTBenchmarkExample(tune.Trainable):
        def _setup(self, config):
            self.lr = config["lr"]
            self.accuracy = 0.0

        def _train(self):
            midpoint, q_tolerance, noise_level = 100, 3, 2
            if self.accuracy < midpoint:
                optimal_lr = 0.01 * self.accuracy / midpoint
            else:
                optimal_lr = 0.01 - 0.01 * (self.accuracy - midpoint) / midpoint
            optimal_lr = min(0.01, max(0.001, optimal_lr))
            q_err = max(self.lr, optimal_lr) / min(self.lr, optimal_lr)
            if q_err < q_tolerance:
                self.accuracy += (1.0 / q_err) * random.random()
            elif self.lr > optimal_lr:
                self.accuracy -= (q_err - q_tolerance) * random.random()
            self.accuracy += noise_level * np.random.normal()
            self.accuracy = max(0, self.accuracy)
            return {"mean_accuracy": self.accuracy, "done": self.accuracy > midpoint * 2}

        def _save(self, checkpoint_dir):
            return {"accuracy": self.accuracy, "lr": self.lr}

        def _restore(self, checkpoint):
            self.accuracy = checkpoint["accuracy"]

        def reset_config(self, new_config):
            self.lr = new_config["lr"]
            self.config = new_config
            return True

    def population(name, scheduler, seed):
        random.seed(seed)
        np.random.seed(seed)
        trials = tune.run(
            PBTBenchmarkExample, name=name,
            config={"lr": tune.grid_search([0.0001, 0.001, 0.003, 0.01])},
            stop={"training_iteration": iterations}, scheduler=scheduler, local_dir=local_dir,
            verbose=0, loggers=[], trial_executor=LocalTrialExecutor({"CPU": 4}),
        )
        return max(t.last_result["mean_accuracy"] for t in trials)

    fixed, pbt = [], []
    for seed in range(seeds):
        fixed.append(population("fixed", FIFOScheduler(), seed))
        pbt.append(population("pbt", PopulationBasedTraining(
            time_attr="training_iteration", metric="mean_accuracy", mode="max",
            perturbation_interval=20, seed=seed,
            hyperparam_mutations={"lr": lambda: random.uniform(0.0001, 0.02)},
        ), seed))
    return {
        "iterations": iterations,
        "best_fixed_lr_member_accuracy_mean": sum(fixed) / seeds,
        "pbt_best_member_accuracy_mean": sum(pbt) / seeds,
        "pbt_wins": sum(p > f for p, f in zip(pbt, fixed)),
        "seeds": seeds,
    }


def bench_optuna_overhead(tune, local_dir, n=40):
    """Per-trial time of Optuna alone (study.optimize) and of Tune + OptunaSearch on the same
    objective, sampler and seed, one trial at a time; the difference is Tune's overhead."""
    try:
        import optuna
    except ImportError:
        return {"skipped": "optuna is not installed"}
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.optuna import OptunaSearch

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def f(x, y):
        return (x - 2) ** 2 + (y + 1) ** 2

    start = time.perf_counter()
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
    study.optimize(lambda t: f(t.suggest_float("x", -10, 10), t.suggest_float("y", -10, 10)),
                   n_trials=n)
    alone = (time.perf_counter() - start) / n

    def objective(config):
        tune.report(loss=f(config["x"], config["y"]))

    searcher = OptunaSearch(metric="loss", mode="min", sampler=optuna.samplers.TPESampler(seed=0))
    start = time.perf_counter()
    trials = tune.run(objective, name="optuna", config={"x": tune.uniform(-10, 10),
                                                         "y": tune.uniform(-10, 10)},
                      search_alg=ConcurrencyLimiter(searcher, 1), num_samples=n,
                      local_dir=local_dir, verbose=0)
    with_tune = (time.perf_counter() - start) / n
    best = min(t.last_result["loss"] for t in trials)
    return {"trials": n, "optuna_alone_s_per_trial": alone, "tune_optuna_s_per_trial": with_tune,
            "overhead_s_per_trial": with_tune - alone, "same_best": best == study.best_value}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true", help="also run 100 x sleep(1) trials")
    parser.add_argument("--num-cpus", type=int, default=2)
    args = parser.parse_args()

    t0 = time.perf_counter()
    import ray
    from ray import tune

    ray.init(num_cpus=args.num_cpus)
    init_s = time.perf_counter() - t0
    report: dict = {"benchmark": "tune", "num_cpus": args.num_cpus, "ray_init_s": init_s,
                    "loadavg_1min_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as local_dir:
        report["trivial_100_first_run_s"] = bench_trivial(tune, local_dir)
        report["trivial_100_s"] = bench_trivial(tune, local_dir)
        report["trivial_100_target_s"] = 3.0
        rate, count = bench_results_per_s(tune, local_dir)
        report["results_per_s"] = rate
        report["results_counted"] = count
        report["results_per_s_target"] = 1000
        if args.full:
            report["sleep1_100_s"] = bench_sleep(tune, local_dir)
            report["sleep1_100_target_s"] = 57.0
        report["optuna"] = bench_optuna_overhead(tune, local_dir)
        report["asha"] = bench_asha(tune, local_dir)
        report["pbt"] = bench_pbt(tune, local_dir)
    ray.shutdown()
    report["total_s"] = time.perf_counter() - t0
    report["loadavg_1min_end"] = os.getloadavg()[0]
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
