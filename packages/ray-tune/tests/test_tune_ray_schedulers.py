"""PBT synch, PB2, BOHB, Repeater, ConcurrencyLimiter(batch) and Tuner result handling,
written as Ray 2.x's docs write them, on a real cluster (ray.init(num_cpus=2))."""

import pytest

import ray
from ray import train, tune
from ray.tune.schedulers import HyperBandForBOHB, PopulationBasedTraining
from ray.tune.schedulers.pb2 import PB2
from ray.tune.search import ConcurrencyLimiter, Repeater, Searcher
from ray.tune.search.bohb import TuneBOHB
from ray.tune.search.repeater import TRIAL_INDEX


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2)
    yield
    ray.shutdown()


class Walker(tune.Trainable):
    """theta walks towards 10.37 in steps of lr; every step is logged to a shared file."""

    def setup(self, config):
        self.theta = 0.0

    def step(self):
        lr = self.config["lr"]
        self.theta += lr if self.theta < 10.37 else -lr
        with open(self.config["log"], "a") as f:
            f.write(f"{self.trial_id} {self.iteration + 1}\n")
        return {"score": -abs(10.37 - self.theta)}

    def save_checkpoint(self, checkpoint_dir):
        return {"theta": self.theta}

    def load_checkpoint(self, state):
        self.theta = state["theta"]

    def reset_config(self, new_config):
        return True


def _tuner(tmp_path, name, scheduler, lrs, iterations):
    log = tmp_path / f"{name}.log"
    results = tune.Tuner(
        Walker,
        param_space={"lr": tune.grid_search(lrs), "log": str(log)},
        tune_config=tune.TuneConfig(scheduler=scheduler, metric="score", mode="max"),
        run_config=tune.RunConfig(name=name, storage_path=str(tmp_path), verbose=0,
                                  stop={"training_iteration": iterations}),
    ).fit()
    steps = [line.split() for line in log.read_text().splitlines()]
    return results, [(tid, int(it)) for tid, it in steps]


def test_pbt_synch_on_ray_waits_for_the_whole_population_at_each_interval(ray_cluster, tmp_path):
    pbt = PopulationBasedTraining(time_attr="training_iteration", perturbation_interval=2,
                                  hyperparam_mutations={"lr": [0.05, 0.2, 1.0, 2.0]}, synch=True)
    results, steps = _tuner(tmp_path, "pbt_synch", pbt, [0.05, 0.2, 1.0, 2.0], iterations=6)
    assert results.num_errors == 0 and len(results) == 4
    assert all(r.metrics["training_iteration"] == 6 for r in results)
    for point in (2, 4):  # nobody passes a sync point before all four reached it
        reached = [i for i, (_, it) in enumerate(steps) if it == point]
        passed = [i for i, (_, it) in enumerate(steps) if it > point]
        assert len(reached) == 4 and max(reached) < min(passed), steps
    assert pbt._num_perturbations >= 2  # the bottom trial cloned a top one at 2 and at 4


def test_pb2_on_ray_explores_within_the_bounds(ray_cluster, tmp_path):
    pb2 = PB2(time_attr="training_iteration", perturbation_interval=2,
              hyperparam_bounds={"lr": [0.01, 2.0]}, seed=0)
    results, _ = _tuner(tmp_path, "pb2", pb2, [0.05, 0.2, 1.0, 2.0], iterations=8)
    assert results.num_errors == 0
    assert pb2._num_perturbations > 0
    assert all(0.01 <= r.config["lr"] <= 2.0 for r in results)


class Sigmoid(tune.Trainable):
    """Ray's BOHB example: a learning curve whose slope and ceiling are the config."""

    def setup(self, config):
        self.timestep = 0

    def step(self):
        import math

        self.timestep += 1
        return {"reward": self.config["height"] * math.tanh(self.timestep / self.config["width"])}

    def save_checkpoint(self, checkpoint_dir):
        return {"timestep": self.timestep}

    def load_checkpoint(self, state):
        self.timestep = state["timestep"]


def test_bohb_on_ray_with_a_tuner_param_space(ray_cluster, tmp_path):
    searcher = TuneBOHB(seed=0)
    scheduler = HyperBandForBOHB(time_attr="training_iteration", max_t=9, reduction_factor=3)
    results = tune.Tuner(
        Sigmoid,
        param_space={"height": tune.uniform(10, 100), "width": tune.uniform(1, 20)},
        tune_config=tune.TuneConfig(metric="reward", mode="max", num_samples=9,
                                    search_alg=ConcurrencyLimiter(searcher, max_concurrent=2),
                                    scheduler=scheduler),
        run_config=tune.RunConfig(name="bohb", storage_path=str(tmp_path), verbose=0,
                                  stop={"training_iteration": 9}),
    ).fit()
    assert results.num_errors == 0 and len(results) == 9
    assert all(10 <= r.config["height"] <= 100 for r in results)
    assert searcher.metric == "reward" and sum(map(len, searcher.bohber.losses.values())) >= 9
    iterations = [r.metrics["training_iteration"] for r in results]
    assert max(iterations) == 9 and min(iterations) < 9


class Counting(Searcher):
    """Suggests x = 0, 1, 2, ...; records completions and the order of events."""

    def __init__(self):
        super().__init__()
        self.next_x = 0
        self.events = []

    def suggest(self, trial_id):
        self.events.append("suggest")
        self.next_x += 1
        return {"x": self.next_x - 1}

    def on_trial_complete(self, trial_id, result=None, error=False):
        self.events.append(("complete", result[self.metric] if result else None))


def noisy(config):
    train.report({"score": config["x"] * 10 + config[TRIAL_INDEX]})


def test_repeater_on_ray_reports_the_mean_of_each_group(ray_cluster, tmp_path):
    inner = Counting()
    results = tune.Tuner(
        noisy,
        tune_config=tune.TuneConfig(metric="score", mode="max", num_samples=6,
                                    search_alg=Repeater(inner, repeat=3)),
        run_config=tune.RunConfig(name="repeat", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert sorted((r.config["x"], r.config[TRIAL_INDEX]) for r in results) == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    completed = sorted(e[1] for e in inner.events if e != "suggest")
    assert completed == [1.0, 11.0]  # mean of x*10 + {0, 1, 2}


def test_concurrency_limiter_batch_on_ray_starts_a_batch_after_the_last_one(ray_cluster, tmp_path):
    inner = Counting()
    tune.Tuner(
        noisy,
        param_space={TRIAL_INDEX: 0},
        tune_config=tune.TuneConfig(metric="score", mode="max", num_samples=6,
                                    search_alg=ConcurrencyLimiter(inner, max_concurrent=3,
                                                                  batch=True)),
        run_config=tune.RunConfig(name="batch", storage_path=str(tmp_path), verbose=0),
    ).fit()
    kinds = ["s" if e == "suggest" else "c" for e in inner.events]
    assert "".join(kinds) == "ssscccsssccc"


def nested(config):
    train.report({"score": config["model"]["width"] * config["opt"]["lr"],
                  "step_score": 0.0})
    train.report({"score": config["model"]["width"] * config["opt"]["lr"] / 2,
                  "step_score": 1.0})


def test_tuner_grid_search_inside_nested_dicts_and_result_dataframes(ray_cluster, tmp_path):
    results = tune.Tuner(
        nested,
        param_space={"model": {"width": tune.grid_search([1, 2, 3]), "depth": 4},
                     "opt": {"lr": tune.grid_search([0.1, 1.0]), "name": "sgd"}},
        tune_config=tune.TuneConfig(metric="score", mode="max"),
        run_config=tune.RunConfig(name="nested", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert len(results) == 6 and results.num_errors == 0
    grid = sorted((r.config["model"]["width"], r.config["opt"]["lr"]) for r in results)
    assert grid == [(w, lr) for w in (1, 2, 3) for lr in (0.1, 1.0)]
    assert all(r.config["model"]["depth"] == 4 and r.config["opt"]["name"] == "sgd" for r in results)
    assert results.get_best_result(scope="all").config == {
        "model": {"width": 3, "depth": 4}, "opt": {"lr": 1.0, "name": "sgd"}}

    last = results.get_dataframe()
    assert len(last) == 6 and set(last["step_score"]) == {1.0}  # each trial's last result
    assert {"config/model/width", "config/opt/lr", "logdir"} <= set(last.columns)
    best = results.get_dataframe(filter_metric="score", filter_mode="max")
    assert set(best["step_score"]) == {0.0}  # the row where score was highest
    row = best[(best["config/model/width"] == 3) & (best["config/opt/lr"] == 1.0)]
    assert row["score"].tolist() == [3.0]
    worst = results.get_dataframe(filter_metric="score", filter_mode="min")
    assert set(worst["step_score"]) == {1.0}
    with pytest.raises(tune.TuneError, match="filter_mode"):
        results.get_dataframe(filter_metric="score")
