"""OptunaSearch against Optuna itself: same sampler, same seed, same budget -> same best."""

import math

import pytest

optuna = pytest.importorskip("optuna")

from ray import tune  # noqa: E402
from ray.tune.local_executor import LocalTrialExecutor  # noqa: E402
from ray.tune.search import ConcurrencyLimiter  # noqa: E402
from ray.tune.search.optuna import OptunaSearch  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
BUDGET = 30


def branin(x, y):
    """Branin's function: minimum 0.397887 at three points of [-5, 10] x [0, 15]."""
    a, b, c, r, s, t = 1, 5.1 / (4 * math.pi**2), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    return a * (y - b * x**2 + c * x - r) ** 2 + s * (1 - t) * math.cos(x) + s


def objective(config):
    tune.report(loss=branin(config["p"]["x"], config["y"]))


def _run(searcher, tmp_path, num_samples=BUDGET, concurrency=1, **kwargs):
    return tune.run(
        objective, config=kwargs.pop("config", {"p": {"x": tune.uniform(-5, 10)},
                                                "y": tune.uniform(0, 15)}),
        search_alg=ConcurrencyLimiter(searcher, concurrency), num_samples=num_samples,
        local_dir=str(tmp_path), verbose=0, trial_executor=LocalTrialExecutor({"CPU": 2}),
        **kwargs,
    )


def _optuna_alone(sampler, n):
    study = optuna.create_study(sampler=sampler, direction="minimize")
    study.optimize(lambda t: branin(t.suggest_float("p/x", -5, 10), t.suggest_float("y", 0, 15)),
                   n_trials=n)
    return study


@pytest.mark.parametrize("make_sampler", [
    lambda: optuna.samplers.TPESampler(seed=0),
    lambda: optuna.samplers.CmaEsSampler(seed=0),
    lambda: optuna.samplers.RandomSampler(seed=0),
], ids=["tpe", "cmaes", "random"])
def test_same_best_value_as_optuna_alone(tmp_path, make_sampler):
    reference = _optuna_alone(make_sampler(), BUDGET)
    trials = _run(OptunaSearch(metric="loss", mode="min", sampler=make_sampler()), tmp_path)
    assert len(trials) == BUDGET and all(t.status == "TERMINATED" for t in trials)
    best = min(t.last_result["loss"] for t in trials)
    # One trial at a time, each told before the next ask: the same sequence as Optuna's.
    assert best == pytest.approx(reference.best_value, rel=1e-9)
    assert best < 3.0  # and it did optimise (random search over 30 points stays near 1-3)


def test_points_to_evaluate_come_first_and_space_from_param_space(tmp_path):
    points = [{"p": {"x": math.pi}, "y": 2.275}, {"p": {"x": 9.42478}, "y": 2.475}]
    trials = _run(OptunaSearch(metric="loss", mode="min", points_to_evaluate=points, seed=1),
                  tmp_path, num_samples=4)
    first = [t.config for t in trials[:2]]
    assert first[0]["p"]["x"] == pytest.approx(math.pi) and first[0]["y"] == pytest.approx(2.275)
    assert first[1]["p"]["x"] == pytest.approx(9.42478)
    assert trials[0].last_result["loss"] == pytest.approx(0.397887, abs=1e-3)


def test_evaluated_rewards_are_known_before_the_first_trial(tmp_path):
    searcher = OptunaSearch(space={"p": {"x": tune.uniform(-5, 10)}, "y": tune.uniform(0, 15)},
                            metric="loss", mode="min", seed=0,
                            points_to_evaluate=[{"p": {"x": math.pi}, "y": 2.275}],
                            evaluated_rewards=[0.397887])
    assert len(searcher._study.trials) == 1
    trials = _run(searcher, tmp_path, num_samples=3)
    assert len(searcher._study.trials) == 4 and len(trials) == 3


def test_multi_objective_gives_a_pareto_front(tmp_path):
    def two(config):
        x = config["x"]
        tune.report(a=x**2, b=(x - 2) ** 2)

    searcher = OptunaSearch(space={"x": tune.uniform(-1, 3)}, metric=["a", "b"], mode=["min", "min"],
                            sampler=optuna.samplers.NSGAIISampler(seed=0))
    tune.run(two, search_alg=searcher, num_samples=12, local_dir=str(tmp_path), verbose=0,
             trial_executor=LocalTrialExecutor({"CPU": 2}))
    study = searcher._study
    assert len(study.directions) == 2 and len(study.trials) == 12
    assert study.best_trials  # a Pareto front
    for t in study.best_trials:
        assert t.values[0] == pytest.approx(t.params["x"] ** 2)


def test_define_by_run_space_and_choices(tmp_path):
    def space(trial):
        kind = trial.suggest_categorical("kind", ["a", "b"])
        if kind == "a":
            trial.suggest_int("n", 1, 4)
        return {"constant": 7}

    def f(config):
        tune.report(score=config.get("n", 0) + config["constant"])

    searcher = OptunaSearch(space=space, metric="score", mode="max", seed=0)
    trials = tune.run(f, search_alg=searcher, num_samples=6, local_dir=str(tmp_path), verbose=0,
                      trial_executor=LocalTrialExecutor({"CPU": 1}))
    assert all(t.config["constant"] == 7 and t.config["kind"] in ("a", "b") for t in trials)
    assert all(("n" in t.config) == (t.config["kind"] == "a") for t in trials)


def test_failed_trials_are_told_as_failures(tmp_path):
    def flaky(config):
        if config["x"] > 0.5:
            raise ValueError("boom")
        tune.report(loss=config["x"])

    searcher = OptunaSearch(space={"x": tune.uniform(0, 1)}, metric="loss", mode="min", seed=3)
    tune.run(flaky, search_alg=searcher, num_samples=8, local_dir=str(tmp_path), verbose=0,
             raise_on_failed_trial=False, max_failures=0,
             trial_executor=LocalTrialExecutor({"CPU": 1}))
    states = {t.state.name for t in searcher._study.trials}
    failed = [t for t in searcher._study.trials if t.state.name == "FAIL"]
    assert "COMPLETE" in states and all(t.params["x"] > 0.5 for t in failed)


def test_bad_arguments_name_the_fix():
    with pytest.raises(tune.TuneError, match="grid_search"):
        OptunaSearch(space={"x": tune.grid_search([1, 2])}, metric="m", mode="min")
    with pytest.raises(tune.TuneError, match="sampler= or seed="):
        OptunaSearch(sampler=optuna.samplers.RandomSampler(), seed=1)
    with pytest.raises(tune.TuneError, match="Optuna has no normal"):
        OptunaSearch(space={"x": tune.randn()}, metric="m", mode="min")
    with pytest.raises(tune.TuneError, match="same length"):
        OptunaSearch(metric=["a", "b"], mode=["min"])
