"""BOHB: the KDE model as pure code, TuneBOHB's argument forms, and a run with
HyperBandForBOHB through the in-process executor."""

import math

import ConfigSpace as CS
import numpy as np
import pytest

from ray import tune
from ray.tune.error import TuneError
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.schedulers import HyperBandForBOHB
from ray.tune.search.bohb import TuneBOHB
from ray.tune.suggest.bohb import BOHBModel
from ray.tune.trial import Trial


def space(seed=0):
    cs = CS.ConfigurationSpace(seed=seed)
    cs.add(CS.UniformFloatHyperparameter("x", lower=0, upper=1))
    cs.add(CS.CategoricalHyperparameter("act", choices=["relu", "tanh", "elu"]))
    return cs


def loss(config):
    return (config["x"] - 0.2) ** 2 + (0 if config["act"] == "tanh" else 0.3)


def test_model_samples_randomly_until_a_budget_has_enough_points_then_exploits():
    model = BOHBModel(space(), seed=0)  # a third of the suggestions stay random
    assert model.min_points_in_model == 3  # hyperparameters + 1
    for _ in range(60):
        config = model.get_config()
        model.new_result(config, budget=1, loss=loss(config))
    assert 1 in model.models
    model.random_fraction = 0.0
    picks = [model.get_config() for _ in range(20)]
    assert all(set(p) == {"x", "act"} and isinstance(p["x"], float) for p in picks)
    assert sum(p["act"] == "tanh" for p in picks) >= 15
    assert float(np.median([abs(p["x"] - 0.2) for p in picks])) < 0.15


def test_model_uses_the_largest_budget_and_ignores_smaller_ones_after():
    model = BOHBModel(space(), random_fraction=0.0, seed=1)
    for budget in (1, 3):
        for _ in range(12):
            config = model.get_config()
            model.new_result(config, budget=budget, loss=loss(config) if budget == 3 else -loss(config))
    assert set(model.models) == {1, 3}
    before = len(model.losses[1])
    model.new_result({"x": 0.5, "act": "relu"}, budget=1, loss=0.0)
    assert len(model.losses[1]) == before  # a model of budget 3 exists: budget 1 is frozen
    model.new_result({"x": 0.5, "act": "relu"}, budget=3, loss=math.nan)  # failed: +inf loss
    assert model.losses[3][-1] == math.inf


def test_tune_bohb_takes_tune_domains_and_both_argument_orders():
    converted = TuneBOHB.convert_search_space(
        {"lr": tune.loguniform(1e-4, 1e-1), "n": tune.randint(1, 5), "nested": {"a": tune.choice([1, 2])},
         "fixed": 3})
    names = {hp.name: hp for hp in converted.values()}
    assert set(names) == {"lr", "n", "nested/a"}
    assert names["lr"].log and names["n"].upper == 4  # Tune's upper bound is exclusive
    searcher = TuneBOHB({"nested": {"a": tune.choice([1, 2])}, "x": tune.uniform(0, 1)},
                        metric="m", mode="min", seed=0)
    config = searcher.suggest("t1")
    assert config["nested"]["a"] in (1, 2) and 0 <= config["x"] <= 1
    old = TuneBOHB(space(), None, 4, "episode_reward_mean", "max")  # Ray 0.7's order
    assert (old._max_concurrent_running, old.metric, old.mode) == (4, "episode_reward_mean", "max")
    with pytest.raises(TuneError, match="grid_search"):
        TuneBOHB({"x": tune.grid_search([1, 2])})
    with pytest.raises(TuneError, match="unknown keys"):
        TuneBOHB(space(), bohb_config={"num_sample": 3})
    with pytest.raises(TuneError, match="search space"):
        TuneBOHB(metric="m", mode="max").suggest("t")


def test_tune_bohb_counts_only_running_trials_against_max_concurrent():
    searcher = TuneBOHB(space(), metric="m", mode="max", max_concurrent=2, seed=0)
    assert searcher.suggest("a") is not None and searcher.suggest("b") is not None
    assert searcher.suggest("c") is None
    searcher.on_pause("a")
    assert searcher.suggest("c") is not None
    searcher.on_unpause("a")  # a, b and c run: over the limit until two finish
    searcher.on_trial_complete("b")
    assert searcher.suggest("d") is None
    searcher.on_trial_complete("c")
    assert searcher.suggest("d") is not None


class Sigmoid(tune.Trainable):
    """Ray's BOHB example trainable: a learning curve set by width and height."""

    def setup(self, config):
        self.timestep = 0

    def step(self):
        self.timestep += 1
        v = np.tanh(float(self.timestep) / self.config.get("width", 1)) * self.config.get("height", 1)
        return {"episode_reward_mean": v}

    def save_checkpoint(self, checkpoint_dir):
        return {"timestep": self.timestep}

    def load_checkpoint(self, state):
        self.timestep = state["timestep"]

    def reset_config(self, new_config):
        self.timestep = 0
        return True


def test_bohb_runs_with_hyperband_for_bohb_and_learns_from_milestone_budgets(tmp_path):
    cs = CS.ConfigurationSpace(seed=0)
    cs.add(CS.UniformFloatHyperparameter("height", lower=10, upper=100))
    cs.add(CS.UniformFloatHyperparameter("width", lower=1, upper=100))
    searcher = TuneBOHB(cs, metric="episode_reward_mean", mode="max", max_concurrent=4, seed=0)
    scheduler = HyperBandForBOHB(time_attr="training_iteration", metric="episode_reward_mean",
                                 mode="max", max_t=27, reduction_factor=3)
    trials = tune.run(Sigmoid, name="bohb", scheduler=scheduler, search_alg=searcher,
                      num_samples=24, stop={"training_iteration": 27}, local_dir=str(tmp_path),
                      verbose=0, trial_executor=LocalTrialExecutor({"CPU": 2}), loggers=[])
    assert len(trials) == 24 and all(t.status == Trial.TERMINATED for t in trials)
    iterations = sorted(t.last_result["training_iteration"] for t in trials)
    assert iterations[-1] == 27 and iterations[0] < 27  # brackets stopped the weak ones early
    assert searcher.bohber.losses and sum(map(len, searcher.bohber.losses.values())) >= 24
    assert searcher.running == set() and searcher.paused == set()
    assert "budget" in trials[0].last_result["hyperband_info"]
