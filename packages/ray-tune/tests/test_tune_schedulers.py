"""Schedulers: a shared suite every scheduler passes, then each one's own behaviour.

Runs use the in-process LocalTrialExecutor (no Ray processes): the same controller and
run loop as with Ray, deterministic and fast.
"""

import math
import random

import pytest

from ray import tune
from ray.tune.error import TuneError
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.schedulers import (
    AsyncHyperBandScheduler,
    FIFOScheduler,
    HyperBandForBOHB,
    HyperBandScheduler,
    MedianStoppingRule,
    PopulationBasedTraining,
)
from ray.tune.schedulers.async_hyperband import _Bracket
from ray.tune.schedulers.pb2 import PB2, _improvements
from ray.tune.schedulers.pbt import explore
from ray.tune.trial import Trial


class Curve(tune.Trainable):
    """A synthetic learning curve: reward(t) = ceiling * (1 - exp(-rate * t))."""

    def _setup(self, config):
        self.t = 0

    def _train(self):
        self.t += 1
        c = self.config["cfg"]  # grid values are whole dicts: {"rate", "ceiling"[, "fail_at"]}
        if c.get("fail_at") == self.t:
            raise RuntimeError("synthetic failure")
        return {"episode_reward_mean": c["ceiling"] * (1 - math.exp(-c["rate"] * self.t))}

    def _save(self, checkpoint_dir):
        return {"t": self.t}

    def _restore(self, state):
        self.t = state["t"]

    def reset_config(self, new_config):
        self.config = new_config
        self.t = 0
        return True


def flat(configs):
    return [{"rate": r, "ceiling": c} for r, c in configs]


def _run(tmp_path, scheduler, configs, **kwargs):
    return tune.run(
        Curve,
        name="curves",
        config={"cfg": tune.grid_search(configs)},
        stop={"training_iteration": kwargs.pop("max_t", 27)},
        scheduler=scheduler,
        local_dir=str(tmp_path),
        verbose=0,
        trial_executor=LocalTrialExecutor({"CPU": kwargs.pop("cpus", 2)}),
        raise_on_failed_trial=False,
        loggers=[],
        **kwargs,
    )


SCHEDULERS = {
    "fifo": lambda: FIFOScheduler(),
    "asha": lambda: AsyncHyperBandScheduler(max_t=27, grace_period=1, reduction_factor=3, seed=0),
    "asha_brackets": lambda: AsyncHyperBandScheduler(max_t=27, grace_period=1, brackets=3, seed=0),
    "hyperband": lambda: HyperBandScheduler(max_t=27),
    "hyperband_rf2_keep_last": lambda: HyperBandScheduler(max_t=27, reduction_factor=2,
                                                          stop_last_trials=False),
    "hyperband_for_bohb": lambda: HyperBandForBOHB(max_t=27),
    "median": lambda: MedianStoppingRule(time_attr="training_iteration", grace_period=2, min_samples_required=2),
    "median_soft": lambda: MedianStoppingRule(
        time_attr="training_iteration", grace_period=2, min_samples_required=2, hard_stop=False
    ),
    "pbt": lambda: PopulationBasedTraining(
        time_attr="training_iteration", perturbation_interval=3,
        hyperparam_mutations={"cfg": {"rate": [0.05, 0.1, 0.2, 0.4]}}, seed=0,
    ),
    "pb2_synch_nested_bounds": lambda: PB2(
        time_attr="training_iteration", metric="episode_reward_mean", mode="max",
        perturbation_interval=9, hyperparam_bounds={"cfg": {"rate": [0.05, 0.4]}}, synch=True,
        seed=0,
    ),
    "pbt_synch": lambda: PopulationBasedTraining(
        time_attr="training_iteration", perturbation_interval=3,
        hyperparam_mutations={"cfg": {"rate": [0.05, 0.1, 0.2, 0.4]}}, seed=0, synch=True,
    ),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_every_scheduler_finishes_every_trial_within_resources(tmp_path, name):
    rng = random.Random(1)
    configs = flat((rng.choice([0.05, 0.1, 0.2, 0.4]), rng.uniform(1, 10)) for _ in range(9))
    configs[4]["fail_at"] = 1
    scheduler = SCHEDULERS[name]()
    trials = _run(tmp_path, scheduler, configs)
    statuses = sorted(t.status for t in trials)
    assert statuses.count(Trial.ERROR) == 1, [(str(t), t.status, t.error_msg) for t in trials]
    assert statuses.count(Trial.TERMINATED) == 8
    assert all(t.last_result["training_iteration"] <= 27 for t in trials if t.last_result)
    assert scheduler.debug_string()


def test_asha_brackets_stop_below_cutoff():
    bracket = _Bracket(min_t=1, max_t=9, reduction_factor=3, s=0)
    assert [m for m, _ in bracket.rungs] == [9, 3, 1]
    assert bracket.on_result("a", 1, 10.0) == "CONTINUE"
    assert bracket.on_result("b", 1, 5.0) == "STOP"  # below the top third of {10}
    assert bracket.on_result("c", 1, 20.0) == "CONTINUE"


def test_asha_reaches_near_exhaustive_best_with_a_third_of_the_iterations(tmp_path):
    rng = random.Random(0)
    configs = flat((rng.uniform(0.01, 0.5), rng.uniform(1, 10)) for _ in range(27))
    max_t = 81
    best_exhaustive = max(c["ceiling"] * (1 - math.exp(-c["rate"] * max_t)) for c in configs)
    scheduler = AsyncHyperBandScheduler(max_t=max_t, grace_period=1, reduction_factor=3, seed=0)
    trials = _run(tmp_path, scheduler, configs, max_t=max_t)
    used = sum(t.last_result["training_iteration"] for t in trials)
    best_found = max(t.last_result["episode_reward_mean"] for t in trials)
    assert used <= len(configs) * max_t / 3, used
    assert best_found >= 0.95 * best_exhaustive, (best_found, best_exhaustive)


def test_hyperband_fills_brackets_with_the_documented_sizes():
    hb = HyperBandScheduler(max_t=81)
    assert [hb._n0(s) for s in range(5)] == [5, 8, 15, 34, 81]  # ceil(5 / (s + 1) * 3**s)
    assert [hb._r0(s) for s in range(5)] == [81, 27, 9, 3, 1]


def test_hyperband_pauses_at_milestones_and_stops_the_bottom_trials(tmp_path):
    configs = flat((0.1, c) for c in [1, 2, 3, 4, 5, 6, 7, 8, 9])
    scheduler = HyperBandScheduler(max_t=9)
    trials = _run(tmp_path, scheduler, configs, max_t=9)
    iters = {t.config["cfg"]["ceiling"]: t.last_result["training_iteration"] for t in trials}
    assert iters[9] == 9  # the best runs to max_t
    assert min(iters.values()) < 9  # some were cut early
    assert "Bracket(" in scheduler.debug_string()


def test_median_stopping_rule_stops_trials_below_the_median():
    class View:
        def __init__(self, trial_id):
            self.trial_id = trial_id
            self.status = "RUNNING"

    rule = MedianStoppingRule(time_attr="t", metric="m", grace_period=0, min_samples_required=2)
    for tid, value in [("a", 10.0), ("b", 8.0)]:
        rule.on_trial_result(None, View(tid), {"t": 1, "m": value})
        rule.on_trial_complete(None, View(tid), {"t": 2, "m": value})
    assert rule.on_trial_result(None, View("c"), {"t": 1, "m": 1.0}) == "STOP"
    assert rule.on_trial_result(None, View("d"), {"t": 1, "m": 50.0}) == "CONTINUE"


def test_pbt_explore_perturbs_lists_to_neighbours_and_scales_numbers():
    rng = random.Random(0)
    for _ in range(50):
        new = explore({"lr": 1.0, "bs": 32, "opt": "b"}, {"lr": lambda: 5.0, "opt": ["a", "b", "c"]},
                      resample_probability=0.0, custom_explore_fn=None, rng=rng)
        assert new["lr"] in (pytest.approx(1.2), pytest.approx(0.8))
        assert new["opt"] in ("a", "c") and new["bs"] == 32
    resampled = explore({"lr": 1.0}, {"lr": lambda: 5.0}, 1.0, lambda c: {**c, "x": 1}, rng)
    assert resampled == {"lr": 5.0, "x": 1}


def test_pbt_requires_mutations_or_explore_fn():
    with pytest.raises(TuneError, match="hyperparam_mutations"):
        PopulationBasedTraining()


class Walker(tune.Trainable):
    """Toy learning-rate problem: theta walks towards a target in steps of `lr`.

    A large lr arrives fast then oscillates around the target; a small one is slow;
    a schedule that shrinks lr over time (what PBT discovers) gets closest.
    """

    TARGET = 10.37

    def _setup(self, config):
        self.theta = 0.0

    def _train(self):
        step = self.config["lr"]
        self.theta += step if self.theta < self.TARGET else -step
        return {"score": -abs(self.TARGET - self.theta)}

    def _save(self, checkpoint_dir):
        return {"theta": self.theta}

    def _restore(self, state):
        self.theta = state["theta"]

    def reset_config(self, new_config):
        self.config = new_config
        return True


def _walk(tmp_path, name, scheduler):
    return tune.run(
        Walker,
        name=name,
        config={"lr": tune.grid_search([0.05, 0.2, 1.0, 2.0])},
        stop={"training_iteration": 30},
        scheduler=scheduler,
        local_dir=str(tmp_path),
        verbose=0,
        trial_executor=LocalTrialExecutor({"CPU": 4}),
        loggers=[],
    )


def test_pbt_beats_the_best_fixed_learning_rate_on_the_toy_problem(tmp_path):
    fixed = _walk(tmp_path, "fixed", FIFOScheduler())
    best_fixed = max(t.last_result["score"] for t in fixed)
    pbt = PopulationBasedTraining(
        time_attr="training_iteration", metric="score", mode="max", perturbation_interval=2,
        hyperparam_mutations={"lr": lambda: random.uniform(0.01, 2.0)}, resample_probability=0.0,
        seed=3,
    )
    trials = _walk(tmp_path, "pbt", pbt)
    best_pbt = max(t.last_result["score"] for t in trials)
    assert best_pbt > best_fixed, (best_pbt, best_fixed)
    assert pbt._num_perturbations > 0
    assert any("@perturbed" in t.experiment_tag for t in trials)


class SynchWalker(Walker):
    """Walker that logs (trial, iteration, theta before the step, lr) for the synch tests;
    `fail_at` maps an lr to the iteration at which a trial with it raises."""

    log: list = []

    def _train(self):
        start = self.theta
        result = super()._train()
        if self.config["fail_at"].get(self.config["lr"]) == self.iteration + 1:
            raise RuntimeError("synthetic failure")
        SynchWalker.log.append((self.trial_id, self.iteration + 1, start, self.config["lr"]))
        return result


def _synch_run(tmp_path, lrs, cpus, interval=3, iterations=9, fail=None):
    SynchWalker.log = []
    pbt = PopulationBasedTraining(
        time_attr="training_iteration", metric="score", mode="max", perturbation_interval=interval,
        hyperparam_mutations={"lr": [0.05, 0.2, 1.0, 2.0]}, quantile_fraction=0.25, seed=1,
        synch=True,
    )
    trials = tune.run(
        SynchWalker, name="synch", config={"lr": tune.grid_search(lrs), "fail_at": fail or {}},
        stop={"training_iteration": iterations}, scheduler=pbt, local_dir=str(tmp_path),
        verbose=0, trial_executor=LocalTrialExecutor({"CPU": cpus}), loggers=[],
        raise_on_failed_trial=False,
    )
    return pbt, trials, list(SynchWalker.log)


def test_pbt_synch_holds_every_trial_at_the_perturbation_point_until_all_reach_it(tmp_path):
    # 4 trials on 2 CPUs: PBT time-multiplexes them, yet no trial passes a sync point
    # (iterations 3, 6) before every trial has reached it.
    pbt, trials, log = _synch_run(tmp_path, [0.05, 0.2, 1.0, 2.0], cpus=2)
    assert all(t.status == Trial.TERMINATED for t in trials)
    assert all(t.last_result["training_iteration"] == 9 for t in trials)
    for point in (3, 6):
        reached = [i for i, (_, it, _, _) in enumerate(log) if it == point]
        passed = [i for i, (_, it, _, _) in enumerate(log) if it > point]
        assert len(reached) == 4 and max(reached) < min(passed), (point, log)
    assert pbt._num_perturbations >= 2  # one bottom trial of 4 cloned at each sync point


def test_pbt_synch_bottom_trials_continue_from_a_top_trials_state(tmp_path):
    pbt, trials, log = _synch_run(tmp_path, [0.05, 0.2, 1.0, 2.0], cpus=4)
    after_first_sync = {tid: theta for tid, it, theta, _ in log if it == 4}
    at_first_sync = {tid: theta for tid, it, theta, _ in log if it == 3}
    ended_at_3 = {}
    for tid, it, theta, lr in log:
        if it == 3:
            ended_at_3[tid] = theta + lr  # Walker below the target only moves up by lr
    cloned = [tid for tid in after_first_sync if after_first_sync[tid] != ended_at_3[tid]]
    assert len(cloned) == 1, (at_first_sync, after_first_sync)
    # The clone starts from a state some top trial had at the sync point.
    assert after_first_sync[cloned[0]] in {v for k, v in ended_at_3.items() if k != cloned[0]}
    assert any("@perturbed" in t.experiment_tag for t in trials)


def test_pbt_synch_does_not_wait_for_a_trial_that_failed(tmp_path):
    pbt, trials, log = _synch_run(tmp_path, [0.05, 0.2, 1.0], cpus=2, fail={0.05: 2})
    statuses = sorted(t.status for t in trials)
    assert statuses == [Trial.ERROR, Trial.TERMINATED, Trial.TERMINATED]
    assert sum(1 for t in trials if t.last_result.get("training_iteration") == 9) == 2


def test_pb2_finds_a_better_learning_rate_schedule_than_the_best_fixed_one(tmp_path):
    fixed = _walk(tmp_path, "fixed", FIFOScheduler())
    best_fixed = max(t.last_result["score"] for t in fixed)
    pb2 = PB2(time_attr="training_iteration", metric="score", mode="max", perturbation_interval=2,
              hyperparam_bounds={"lr": [0.01, 2.0]}, seed=1)
    trials = _walk(tmp_path, "pb2", pb2)
    assert max(t.last_result["score"] for t in trials) > best_fixed
    assert pb2._num_perturbations > 0
    assert all(0.01 <= t.config["lr"] <= 2.0 for t in trials)


def test_pb2_measures_improvement_rates_per_trial_and_config():
    data = [("a", 1, (0.1,), 1.0), ("b", 1, (0.5,), 2.0), ("a", 3, (0.1,), 2.0),
            ("b", 2, (0.5,), 5.0), ("b", 4, (0.2,), 5.0), ("b", 6, (0.2,), 4.0)]
    rows = _improvements(data)
    # (trial, t, score before, h, rate, score): a new config starts a new series.
    assert rows == [("b", 2, 2.0, (0.5,), 3.0, 5.0), ("a", 3, 1.0, (0.1,), 0.5, 2.0),
                    ("b", 6, 5.0, (0.2,), -0.5, 4.0)]


def test_pb2_gp_ucb_prefers_the_hyperparameters_that_improved_fastest():
    import numpy as np

    from ray.tune.schedulers.pb2_gp import select_config

    rng = np.random.default_rng(0)
    rows, rates = [], []
    for t in range(1, 8):  # well covered: little uncertainty left, the mean decides
        for lr in np.linspace(0, 1, 11):
            rows.append([t, rng.uniform(0, 5), lr])
            rates.append(-((lr - 0.3) ** 2) + 0.01 * rng.normal())
    X, y, bounds = np.array(rows), np.array(rates), np.array([[0.0], [1.0]])
    first = select_config(X, y, None, np.array([7, 2.5]), bounds, rng=rng)[0]
    assert abs(first - 0.3) < 0.15, first
    # With that point already taken this round, the next pick moves away from it.
    second = select_config(X, y, np.array([[first]]), np.array([7, 2.5]), bounds, rng=rng)[0]
    assert second != pytest.approx(first, abs=1e-3)


def test_pb2_fills_missing_hyperparameters_from_their_bounds_and_checks_them(tmp_path):
    from ray.tune import controller as C
    from ray.tune.suggest.search import SearchAlgorithm

    class One(SearchAlgorithm):
        def next_trials(self):
            return []

        def is_finished(self):
            return True

    pb2 = PB2(metric="m", hyperparam_bounds={"lr": [0.1, 0.2], "opt": {"beta": [0, 1]}}, seed=0)
    ctrl = C.TrialController(search_alg=One(), scheduler=pb2, resources=C.ResourcePool(cpu=1))
    trial = Trial("t", config={"lr": 0.15, "other": 1}, local_dir=str(tmp_path))
    ctrl.add_trial(trial)
    assert trial.config["lr"] == 0.15 and trial.config["other"] == 1
    assert 0 <= trial.config["opt"]["beta"] <= 1
    for bad in ({"lr": [0.2, 0.1]}, {"lr": 0.1}, {}):
        with pytest.raises(TuneError, match="hyperparam_bounds"):
            PB2(metric="m", hyperparam_bounds=bad)
