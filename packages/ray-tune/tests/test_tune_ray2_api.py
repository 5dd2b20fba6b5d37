"""Ray 2.x Tune code, written as today's docs write it, on a real cluster (ray.init(num_cpus=2))."""

import os
import tempfile

import pytest

import ray
from ray import train, tune
from ray.train import Checkpoint
from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining
from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2)
    yield
    ray.shutdown()


# -- class trainables with today's method names -----------------------------------
class StepCounter(tune.Trainable):
    def setup(self, config):
        self.count = 0
        self.rate = config["rate"]

    def step(self):
        self.count += 1
        return {"score": self.rate * self.count}

    def save_checkpoint(self, checkpoint_dir):
        with open(os.path.join(checkpoint_dir, "count"), "w") as f:
            f.write(str(self.count))
        return checkpoint_dir

    def load_checkpoint(self, checkpoint_dir):
        with open(os.path.join(checkpoint_dir, "count")) as f:
            self.count = int(f.read())


class OldNames(tune.Trainable):
    """0.7 names, and state in `self.step`: the attribute must not hide the method lookup."""

    def _setup(self, config):
        self.step = 0

    def _train(self):
        self.step += 1
        return {"score": self.step}

    def _save(self, checkpoint_dir):
        return {"step": self.step}

    def _restore(self, state):
        self.step = state["step"]


def test_trainable_new_and_old_method_names_save_and_restore_in_process():
    new = StepCounter({"rate": 2.0})
    new.train()
    new.train()
    path = new.save()
    assert os.path.isdir(path) and os.path.exists(os.path.join(path, "count"))
    restored = StepCounter({"rate": 2.0})
    restored.restore_from_object(new.save_to_object())
    assert restored.train()["score"] == 6.0 and restored.iteration == 3
    new.stop(), restored.stop()
    old = OldNames()
    old.train()
    blob = old.save_to_object()
    again = OldNames()
    again.restore_from_object(blob)
    assert again.train()["score"] == 2
    old.stop(), again.stop()


# -- Tuner with a function trainable, ResultGrid accessors ------------------------
def objective(config):
    for i in range(10):
        train.report({"score": config["x"] * i, "y": config["y"]})


def test_tuner_function_trainable_asha_and_result_grid(ray_cluster, tmp_path):
    tuner = tune.Tuner(
        objective,
        # decreasing x: later trials are worse, so ASHA surely stops some (with random x
        # every trial could beat the ones before it at each rung and run to max_t)
        param_space={"x": tune.grid_search([0.9, 0.7, 0.5, 0.3, 0.2, 0.1]),
                     "y": tune.choice([1, 2])},
        tune_config=tune.TuneConfig(
            metric="score", mode="max", num_samples=1,
            scheduler=ASHAScheduler(max_t=8, grace_period=2, reduction_factor=2),
            max_concurrent_trials=2,
        ),
        run_config=train.RunConfig(name="exp", storage_path=str(tmp_path), verbose=0),
    )
    results = tuner.fit()
    assert len(results) == 6 and not results.errors and results.num_terminated == 6
    assert results.experiment_path == str(tmp_path / "exp")
    iterations = [r.metrics["training_iteration"] for r in results]
    assert max(iterations) <= 8 and min(iterations) < 8  # max_t, and ASHA stopped some early
    best = results.get_best_result()
    assert best.config["x"] == max(r.config["x"] for r in results if r.metrics["training_iteration"]
                                   == max(iterations))
    assert best.metrics["score"] == max(r.metrics["score"] for r in results)
    assert best.path.startswith(str(tmp_path / "exp")) and best.checkpoint is None
    assert best.error is None and best.metrics_dataframe["score"].iloc[-1] == best.metrics["score"]
    worst = results.get_best_result(metric="score", mode="min")
    assert worst.metrics["score"] == min(r.metrics["score"] for r in results)
    df = results.get_dataframe()
    assert len(df) == 6 and {"score", "config/x", "config/y", "logdir"} <= set(df.columns)
    assert set(df["config/y"]) <= {1, 2}
    assert results[0] in list(results)
    # tune.report with a dict is the same call in 2.x
    assert tune.Tuner.can_restore(results.experiment_path)


def test_tuner_class_trainable_checkpoints_and_failures_land_in_errors(ray_cluster, tmp_path):
    results = tune.Tuner(
        StepCounter,
        param_space={"rate": tune.grid_search([1.0, 3.0])},
        tune_config=tune.TuneConfig(metric="score", mode="max"),
        run_config=tune.RunConfig(
            name="cls", storage_path=str(tmp_path), stop={"training_iteration": 4}, verbose=0,
            checkpoint_config=train.CheckpointConfig(checkpoint_frequency=2, num_to_keep=1),
        ),
    ).fit()
    best = results.get_best_result()
    assert best.config == {"rate": 3.0} and best.metrics["score"] == 12.0
    with best.checkpoint.as_directory() as d:
        assert open(os.path.join(d, "count")).read() == "4"
    kept = [n for n in os.listdir(best.path) if n.startswith("checkpoint_")]
    assert kept == [os.path.basename(best.checkpoint.path)]  # num_to_keep=1

    def broken(config):
        train.report({"score": 1})
        raise ValueError("bad config " + str(config["v"]))

    results = tune.Tuner(
        broken, param_space={"v": tune.grid_search([1, 2])},
        run_config=train.RunConfig(name="broken", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert len(results.errors) == 2 and results.num_terminated == 0
    assert "bad config" in str(results.errors[0]) and results[0].metrics["score"] == 1
    with pytest.raises(tune.TuneError, match="needs a metric and a mode"):
        results.get_best_result()


def pbt_objective(config):
    step, value = 0, 0.0
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            with open(os.path.join(d, "state")) as f:
                step, value = (float(x) for x in f.read().split())
            step = int(step)
    while step < 12:
        step += 1
        value += config["lr"]
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "state"), "w") as f:
                f.write(f"{step} {value}")
            train.report({"value": value, "step": step, "lr": config["lr"],
                          "restored": checkpoint is not None},
                         checkpoint=Checkpoint.from_directory(d))


def test_pbt_function_trainable_exploits_through_reported_checkpoints(ray_cluster, tmp_path):
    pbt = PopulationBasedTraining(
        time_attr="training_iteration", perturbation_interval=3,
        hyperparam_mutations={"lr": tune.uniform(0.0, 1.0)}, quantile_fraction=0.5, seed=1,
    )
    results = tune.Tuner(
        pbt_objective,
        param_space={"lr": tune.grid_search([0.01, 0.02, 1.0, 2.0])},
        tune_config=tune.TuneConfig(metric="value", mode="max", scheduler=pbt),
        run_config=tune.RunConfig(name="pbt", storage_path=str(tmp_path), verbose=0,
                                  stop={"training_iteration": 12}),
    ).fit()
    assert not results.errors
    assert pbt._num_perturbations > 0
    # A trial that exploited another continued from its checkpoint (the value carried over),
    # so even the slow starters end far above 12 * 0.02.
    restored = [r for r in results if r.metrics["restored"]]
    assert restored and min(r.metrics["value"] for r in restored) > 12 * 0.02
    for r in results:
        assert r.metrics["step"] == 12 and r.checkpoint is not None
        with open(os.path.join(r.checkpoint.path, "state")) as f:
            assert int(f.read().split()[0]) == 12


class GridWalker(tune.search.Searcher):
    """A 2.x custom searcher: proposes x = 0, 1, 2, ... and records what finished."""

    def __init__(self, metric=None, mode=None):
        super().__init__(metric=metric, mode=mode)
        self.next_x = 0
        self.completed = {}

    def suggest(self, trial_id):
        self.next_x += 1
        return {"x": self.next_x - 1}

    def on_trial_complete(self, trial_id, result=None, error=False):
        self.completed[trial_id] = result[self.metric]


def concurrency_objective(config, data=None, offset=0):
    marker = os.path.join(config["dir"], str(config["x"]))
    open(marker, "w").close()
    live = len(os.listdir(config["dir"]))
    train.report({"score": config["x"] + len(data) + offset, "live": live,
                  "trial_id": train.get_context().get_trial_id()})
    os.remove(marker)


def test_custom_searcher_concurrency_limiter_with_parameters_and_resources(ray_cluster, tmp_path):
    live_dir = tmp_path / "live"
    live_dir.mkdir()
    searcher = GridWalker()
    trainable = tune.with_resources(
        tune.with_parameters(concurrency_objective, data=list(range(100)), offset=1000),
        {"cpu": 2},
    )
    results = tune.Tuner(
        trainable,
        param_space={"dir": str(live_dir)},
        tune_config=tune.TuneConfig(
            metric="score", mode="max", num_samples=4,
            search_alg=ConcurrencyLimiter(searcher, max_concurrent=2),
        ),
        run_config=tune.RunConfig(name="search", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert sorted(r.config["x"] for r in results) == [0, 1, 2, 3]
    assert searcher.metric == "score" and sorted(searcher.completed.values()) == [1100, 1101, 1102, 1103]
    assert all(r.metrics["live"] == 1 for r in results)  # 2 CPUs per trial: one at a time
    assert results.get_best_result().config["x"] == 3
    assert {r.metrics["trial_id"] for r in results} == {os.path.basename(r.path)[-8:] for r in results}
    # The 2.x BasicVariantGenerator import path runs too.
    grid = tune.Tuner(
        lambda_free_objective, param_space={"v": tune.grid_search([1, 2, 3])},
        tune_config=tune.TuneConfig(search_alg=BasicVariantGenerator()),
        run_config=tune.RunConfig(name="grid", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert sorted(r.metrics["v2"] for r in grid) == [1, 4, 9]


def lambda_free_objective(config):
    return {"v2": config["v"] ** 2}


def test_hyperopt_search_takes_its_space_and_metric_from_the_tuner(ray_cluster, tmp_path):
    pytest.importorskip("hyperopt")
    from ray.tune.search.hyperopt import HyperOptSearch

    def quadratic(config):
        train.report({"loss": (config["x"] - 0.3) ** 2 + config["nested"]["c"]})

    searcher = HyperOptSearch(random_state_seed=0, n_initial_points=4)
    results = tune.Tuner(
        quadratic,
        param_space={"x": tune.uniform(-1, 1), "nested": {"c": tune.choice([0, 1])}, "const": 5},
        tune_config=tune.TuneConfig(
            metric="loss", mode="min", num_samples=12,
            search_alg=ConcurrencyLimiter(searcher, max_concurrent=2),
        ),
        run_config=tune.RunConfig(name="hyperopt", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert len(results) == 12 and not results.errors
    assert all(-1 <= r.config["x"] <= 1 and r.config["nested"]["c"] in (0, 1) for r in results)
    assert all(r.config["const"] == 5 for r in results)
    assert len({r.config["x"] for r in results}) == 12  # sampled by TPE, not one fixed value
    assert searcher._metric == "loss" and searcher._metric_op == 1.0  # minimised
    assert results.get_best_result().metrics["loss"] < 0.2
    with pytest.raises(tune.TuneError, match="cannot search a grid"):
        HyperOptSearch().set_search_properties("loss", "min", config={"x": tune.grid_search([1])})


def forever(config):
    import time

    i = 0
    while True:
        i += 1
        time.sleep(0.02)
        train.report({"i": i})


def test_time_budget_stops_every_trial_and_pbt_takes_2x_arguments(ray_cluster, tmp_path):
    import time

    start = time.monotonic()
    results = tune.Tuner(
        forever, param_space={"k": tune.grid_search([1, 2])},
        tune_config=tune.TuneConfig(time_budget_s=1.0),
        run_config=tune.RunConfig(name="budget", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert time.monotonic() - start < 10 and not results.errors
    assert all(1 <= r.metrics["i"] < 100 for r in results), [r.metrics["i"] for r in results]
    pbt = PopulationBasedTraining(
        time_attr="training_iteration", metric="i", mode="max", perturbation_interval=2,
        burn_in_period=4, hyperparam_mutations={"k": [1, 2]}, perturbation_factors=(1.5, 0.5),
        require_attrs=True,
    )
    with pytest.raises(tune.TuneError, match=r"needs \['i'\] in every result"):
        pbt.on_trial_result(None, "trial", {"training_iteration": 1})
    assert pbt.on_trial_result(None, "trial", {"training_iteration": 3, "i": 1}) == "CONTINUE"


def test_checkpoint_object_round_trips():
    data = Checkpoint.from_dict({"w": [1, 2]})
    assert data.to_dict() == {"w": [1, 2]}
    data.set_metadata({"epoch": 3})
    data.update_metadata({"loss": 0.5})
    assert data.get_metadata() == {"epoch": 3, "loss": 0.5}
    with tempfile.TemporaryDirectory() as target:
        copied = Checkpoint.from_directory(data.to_directory(target))
        assert copied.to_dict() == {"w": [1, 2]} and copied != data
        with copied.as_directory() as d:
            assert d == copied.path
    fresh = data.to_directory()
    assert Checkpoint(fresh).get_metadata()["epoch"] == 3
    import shutil

    shutil.rmtree(fresh), shutil.rmtree(data.path)
    with pytest.raises(tune.TuneError, match="not a directory"):
        Checkpoint.from_directory(fresh)
    with pytest.raises(tune.TuneError, match="outside a Tune trial"):
        train.report({"x": 1})
    with pytest.raises(tune.TuneError, match="outside a Tune trial"):
        train.get_checkpoint()


class WithData(tune.Trainable):
    def setup(self, config, data=None):
        self.total = sum(data)

    def step(self):
        return {"total": self.total * self.config["scale"], "trial": self.trial_name}


def test_with_parameters_and_scaling_config_resources_on_a_class_trainable(ray_cluster, tmp_path):
    scaling = train.ScalingConfig(num_workers=2, resources_per_worker={"CPU": 0.5})
    assert scaling.as_resources() == {"cpu": 1.0, "gpu": 0}
    trainable = tune.with_resources(tune.with_parameters(WithData, data=[1, 2, 3]), scaling)
    results = tune.Tuner(
        trainable, param_space={"scale": tune.grid_search([1, 10])},
        run_config=tune.RunConfig(name="cls_params", storage_path=str(tmp_path), verbose=0,
                                  stop={"training_iteration": 2}),
    ).fit()
    assert sorted(r.metrics["total"] for r in results) == [6, 60]
    assert all(r.metrics["trial"] in os.path.basename(r.path) for r in results)
    with pytest.raises(tune.TuneError, match="takes a dict"):
        tune.with_resources(WithData, 2)



class Recorder(tune.Callback):
    def __init__(self):
        self.events = []

    def setup(self, **info):
        self.events.append(("setup", info["num_samples"]))

    def on_trial_start(self, iteration, trials, trial, **info):
        self.events.append(("start", trial.config["v"]))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.events.append(("result", trial.config["v"], result["n"]))

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        self.events.append(("checkpoint", trial.config["v"], os.path.basename(checkpoint.path)))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.events.append(("complete", trial.config["v"]))

    def on_trial_error(self, iteration, trials, trial, **info):
        self.events.append(("error", trial.config["v"]))

    def on_experiment_end(self, trials, **info):
        self.events.append(("end", len(trials)))


def reports_then_maybe_fails(config):
    for n in (1, 2):
        with tempfile.TemporaryDirectory() as d:
            train.report({"n": n}, checkpoint=Checkpoint.from_directory(d) if n == 2 else None)
    if config["v"] == "bad":
        raise ValueError("bad")


def test_run_config_callbacks_see_every_trial_event(ray_cluster, tmp_path):
    recorder = Recorder()
    results = tune.Tuner(
        reports_then_maybe_fails, param_space={"v": tune.grid_search(["ok", "bad"])},
        run_config=tune.RunConfig(name="callbacks", storage_path=str(tmp_path), verbose=0,
                                  callbacks=[recorder]),
    ).fit()
    assert len(results.errors) == 1
    events = recorder.events
    assert events[0] == ("setup", 1) and events[-1] == ("end", 2)
    for v in ("ok", "bad"):
        mine = [e for e in events if len(e) > 1 and e[1] == v]
        assert mine[0] == ("start", v) and ("result", v, 2) in mine
        assert ("checkpoint", v, "checkpoint_000002") in mine
    assert ("complete", "ok") in events and ("error", "bad") in events
    with pytest.raises(TypeError, match="tune.Callback"):
        tune.run(reports_then_maybe_fails, callbacks=[object()], verbose=0,
                 local_dir=str(tmp_path))


class InterruptOnce:
    """A stopper that interrupts the driver (as Ctrl-C would) the first time a trial hits 3."""

    def __init__(self, marker):
        self.marker = marker

    def __call__(self, trial_id, result):
        if result["training_iteration"] == 3 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise KeyboardInterrupt
        return False


def resumable(config):
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with open(os.path.join(checkpoint.path, "i")) as f:
            start = int(f.read())
    fail_marker = os.path.join(config["dir"], "failed_once")
    if config["a"] == 3 and not os.path.exists(fail_marker):
        open(fail_marker, "w").close()
        raise RuntimeError("first attempt of a=3 fails")
    for i in range(start, 6):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "i"), "w") as f:
                f.write(str(i + 1))
            train.report({"i": i + 1, "start": start}, checkpoint=Checkpoint.from_directory(d))


# Last in the module: after a run interrupted in the driver, ray-core was seen to keep
# one CPU of the killed trials' actors reserved, which would starve later tests.
def test_tuner_restore_continues_an_interrupted_run_then_resumes_errored(ray_cluster, tmp_path):
    path = str(tmp_path / "resume")
    assert not tune.Tuner.can_restore(path)
    tuner = tune.Tuner(
        resumable,
        param_space={"a": tune.grid_search([1, 2, 3]), "dir": str(tmp_path)},
        tune_config=tune.TuneConfig(metric="i", mode="max"),
        run_config=train.RunConfig(name="resume", storage_path=str(tmp_path), verbose=0,
                                   stop=InterruptOnce(str(tmp_path / "interrupted"))),
    )
    with pytest.raises(KeyboardInterrupt):
        tuner.fit()
    assert tune.Tuner.can_restore(path)
    results = tune.Tuner.restore(path, trainable=resumable).fit()
    by_a = {r.config["a"]: r for r in results}
    assert by_a[1].metrics["i"] == 6 and by_a[2].metrics["i"] == 6
    # The trial that was interrupted at 3 went on from its checkpoint, not from scratch.
    assert max(by_a[1].metrics["start"], by_a[2].metrics["start"]) >= 3
    assert len(results.errors) == 1 and "first attempt of a=3" in str(by_a[3].error)
    results = tune.Tuner.restore(path, trainable=resumable, resume_errored=True).fit()
    assert not results.errors and sorted(r.metrics["i"] for r in results) == [6, 6, 6]
    best = results.get_best_result()
    assert best.checkpoint.path.endswith("checkpoint_000006")
    assert [c.path for c, _ in best.best_checkpoints][-1] == best.checkpoint.path
    stored = tune.Tuner.restore(path, trainable=resumable).get_results()  # read from disk
    assert sorted(r.metrics["i"] for r in stored) == [6, 6, 6] and not stored.errors
    with pytest.raises(tune.TuneError, match="no Tuner experiment there"):
        tune.Tuner.restore(str(tmp_path / "nothing"), trainable=resumable)

