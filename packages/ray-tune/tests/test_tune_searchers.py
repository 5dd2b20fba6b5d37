"""Search algorithms: one shared suite every searcher passes, plus each one's specifics.

The optional libraries that install quickly here (hyperopt, scikit-optimize,
bayesian-optimization) are exercised for real; the others are skipped when missing.
"""

import importlib.util

import pytest

from ray import tune
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.schedulers import FIFOScheduler
from ray.tune.suggest import BasicVariantGenerator, ConcurrencyLimiter, SuggestionAlgorithm
from ray.tune.trial import Trial

NUM_SAMPLES = 12


def quadratic(config, reporter):
    # Maximum 0 at x = 0.3.
    reporter(score=-((config["x"] - 0.3) ** 2))


class RecordConcurrency(FIFOScheduler):
    def __init__(self):
        self.max_running = 0

    def on_trial_result(self, trial_runner, trial, result):
        running = sum(1 for t in trial_runner.get_trials() if t.status == "RUNNING")
        self.max_running = max(self.max_running, running)
        return super().on_trial_result(trial_runner, trial, result)


def _hyperopt():
    from hyperopt import hp

    from ray.tune.suggest.hyperopt import HyperOptSearch

    return HyperOptSearch({"x": hp.uniform("x", 0, 1)}, max_concurrent=2, metric="score",
                          mode="max", random_state_seed=0)


def _skopt():
    from skopt import Optimizer

    from ray.tune.suggest.skopt import SkOptSearch

    return SkOptSearch(Optimizer([(0.0, 1.0)], random_state=0, n_initial_points=5), ["x"],
                       max_concurrent=2, metric="score", mode="max")


def _bayesopt():
    from ray.tune.suggest.bayesopt import BayesOptSearch

    return BayesOptSearch({"x": (0.0, 1.0)}, max_concurrent=2, metric="score", mode="max",
                          utility_kwargs={"kind": "ucb", "kappa": 2.5, "xi": 0.0})


def _nevergrad():
    import nevergrad as ng

    from ray.tune.suggest.nevergrad import NevergradSearch

    # OnePlusOne, not NGOpt: NGOpt leaves a thread that hangs interpreter exit here.
    optimizer = ng.optimizers.OnePlusOne(parametrization=ng.p.Instrumentation(x=ng.p.Scalar(lower=0, upper=1)))
    return NevergradSearch(optimizer, None, max_concurrent=2, metric="score", mode="max")


class FakeSigOpt:
    """An in-memory stand-in for the SigOpt service (the real one needs network + key)."""

    class _Obj:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    def __init__(self):
        self.observations_made = []
        self._n = 0

    def experiments(self, experiment_id=None):
        conn = self

        class _Experiments:
            def create(self, name, parameters, parallel_bandwidth):
                conn.parameters = parameters
                return FakeSigOpt._Obj(id="exp1")

            def suggestions(self):
                class _S:
                    def create(self):
                        conn._n += 1
                        return FakeSigOpt._Obj(id=conn._n, assignments={"x": (conn._n % 10) / 10})

                return _S()

            def observations(self):
                class _O:
                    def create(self, **kw):
                        conn.observations_made.append(kw)

                return _O()

        return _Experiments()


def _sigopt():
    from ray.tune.suggest.sigopt import SigOptSearch

    space = [{"name": "x", "type": "double", "bounds": {"min": 0.0, "max": 1.0}}]
    return SigOptSearch(space, max_concurrent=2, metric="score", mode="max", connection=FakeSigOpt())


def _limited_hyperopt():
    searcher = _hyperopt()
    searcher._max_concurrent = None
    return ConcurrencyLimiter(searcher, max_concurrent=2)


SEARCHERS = {
    "hyperopt": ("hyperopt", _hyperopt),
    "skopt": ("skopt", _skopt),
    "bayesopt": ("bayes_opt", _bayesopt),
    "nevergrad": ("nevergrad", _nevergrad),
    "sigopt": (None, _sigopt),
    "limiter": ("hyperopt", _limited_hyperopt),
}


@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_every_searcher_runs_num_samples_trials_within_its_concurrency_limit(tmp_path, name):
    module, factory = SEARCHERS[name]
    if module is not None and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    searcher = factory()
    scheduler = RecordConcurrency()
    trials = tune.run(
        quadratic, name=name, num_samples=NUM_SAMPLES, search_alg=searcher, scheduler=scheduler,
        local_dir=str(tmp_path), verbose=0, loggers=[], trial_executor=LocalTrialExecutor({"CPU": 4}),
    )
    assert len(trials) == NUM_SAMPLES
    assert all(t.status == Trial.TERMINATED for t in trials)
    assert all(0.0 <= t.config["x"] <= 1.0 for t in trials)
    assert scheduler.max_running <= 2
    assert searcher.is_finished()
    assert max(t.last_result["score"] for t in trials) > -0.05


def test_sigopt_reports_observations_with_the_metric_sign():
    searcher = _sigopt()
    searcher._suggest("t1")
    searcher.on_trial_complete("t1", result={"score": -0.5})
    searcher._suggest("t2")
    searcher.on_trial_complete("t2", error=True)
    made = searcher.conn.observations_made
    assert made[0]["value"] == -0.5 and made[1]["failed"] is True


def test_hyperopt_points_to_evaluate_run_first():
    pytest.importorskip("hyperopt")
    from hyperopt import hp

    from ray.tune.suggest.hyperopt import HyperOptSearch

    searcher = HyperOptSearch(
        {"x": hp.uniform("x", 0, 1), "act": hp.choice("act", ["relu", "tanh"])},
        metric="score", mode="max", points_to_evaluate=[{"x": 0.25, "act": 1}],
    )
    assert searcher._suggest("a") == {"x": 0.25, "act": "tanh"}


def test_skopt_evaluated_rewards_are_told_not_rerun():
    pytest.importorskip("skopt")
    from skopt import Optimizer

    from ray.tune.suggest.skopt import SkOptSearch

    optimizer = Optimizer([(0.0, 1.0)], random_state=0)
    searcher = SkOptSearch(optimizer, ["x"], metric="score", mode="max",
                           points_to_evaluate=[[0.1], [0.9]], evaluated_rewards=[1.0, 2.0])
    assert optimizer.yi == [-1.0, -2.0]  # skopt minimises
    assert not searcher._initial_points


def test_missing_optional_library_names_the_pip_package(monkeypatch):
    import sys

    # A None entry in sys.modules makes `import ax` raise ImportError, installed or not.
    monkeypatch.setitem(sys.modules, "ax", None)
    from ray.tune.suggest.ax import AxSearch

    with pytest.raises(ImportError, match="pip install ax-platform"):
        AxSearch(ax_client=object())


def test_suggestion_returning_none_waits_instead_of_creating_trials(tmp_path):
    class OneAtATime(SuggestionAlgorithm):
        def __init__(self):
            super().__init__(max_concurrent=None)
            self.live = 0
            self.n = 0

        def _suggest(self, trial_id):
            if self.live:
                return None
            self.live += 1
            self.n += 1
            return {"x": self.n / 10}

        def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
            self.live -= 1

    searcher = OneAtATime()
    tune.register_trainable("quadratic", quadratic)
    exp = tune.Experiment("one", "quadratic", num_samples=3, local_dir=str(tmp_path))
    searcher.add_configurations([exp])
    first = searcher.next_trials()
    assert len(first) == 1 and searcher.next_trials() == []
    searcher.on_trial_complete(first[0].trial_id, result={"score": 0})
    assert len(searcher.next_trials()) == 1


def test_basic_variant_generator_shuffle_keeps_the_same_trials(tmp_path):
    tune.register_trainable("quadratic", quadratic)
    exp = tune.Experiment("g", "quadratic", config={"x": tune.grid_search([0.1, 0.2, 0.3])},
                          local_dir=str(tmp_path))
    gen = BasicVariantGenerator(shuffle=True)
    gen.add_configurations([exp])
    assert sorted(t.config["x"] for t in gen.next_trials()) == [0.1, 0.2, 0.3]


class Interruptible(tune.Trainable):
    """Raises KeyboardInterrupt (as Ctrl-C would) in the driver on the 5th trial."""

    started = 0
    interrupt = True

    def _setup(self, config):
        Interruptible.started += 1

    def _train(self):
        if Interruptible.interrupt and Interruptible.started == 5:
            Interruptible.interrupt = False
            raise KeyboardInterrupt
        return {"score": -((self.config["x"] - 0.3) ** 2), "done": True}


def test_resume_restores_the_searcher_and_only_runs_the_missing_samples(tmp_path):
    pytest.importorskip("hyperopt")

    def run(resume):
        searcher = _hyperopt()
        searcher._max_concurrent = 1
        trials = tune.run(Interruptible, name="resumed", num_samples=6, search_alg=searcher,
                          local_dir=str(tmp_path), verbose=0, loggers=[], resume=resume,
                          trial_executor=LocalTrialExecutor({"CPU": 1}, reuse_actors=False))
        return searcher, trials

    with pytest.raises(KeyboardInterrupt):
        run(resume=False)
    searcher, trials = run(resume=True)
    assert len(trials) == 6 and all(t.status == Trial.TERMINATED for t in trials)
    # TPE kept the 4 results from before the interrupt (restored state) and saw 2 more.
    done = [t for t in searcher._hpopt_trials.trials if t["result"].get("status") == "ok"]
    assert len(done) == 6
