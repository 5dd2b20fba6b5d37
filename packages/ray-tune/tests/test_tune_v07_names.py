"""Ray 0.7 behaviours kept beside the 2.x ones: track sessions, the 0.7 actor-reuse rule,
tune.run's ExperimentAnalysis API, Trial.local_dir, global_checkpoint_period."""

import json
import math
import os

import pytest

from ray import tune
from ray.tune import track
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.result import EXPR_PARAM_FILE, EXPR_RESULT_FILE
from ray.tune.schedulers import FIFOScheduler, TrialScheduler


def test_track_session_logs_outside_tune(tmp_path):
    assert track._session is None
    track.init(trial_name="solo", experiment_dir=str(tmp_path), trial_config={"lr": 0.1})
    try:
        session = track.get_session()
        assert session.logdir == track.trial_dir() and session.logdir.startswith(str(tmp_path))
        for i in range(3):
            track.log(test=i)
        rows = [json.loads(line) for line in open(os.path.join(session.logdir, EXPR_RESULT_FILE))]
        assert [r["test"] for r in rows] == [0, 1, 2]  # flushed: readable while open
        assert [r["training_iteration"] for r in rows] == [0, 1, 2]
        assert rows[0]["trial_id"].startswith("solo_")
        assert session.trial_config == {"lr": 0.1, "trial_id": session.trial_id}
    finally:
        track.shutdown()
    assert track._session is None
    params = json.load(open(os.path.join(session.logdir, EXPR_PARAM_FILE)))
    assert params["trial_completed"] is True
    with pytest.raises(ValueError, match="track.init"):
        track.get_session()


class _Pauses(FIFOScheduler):
    def on_trial_result(self, trial_runner, trial, result):
        return TrialScheduler.PAUSE


class _Resettable07(tune.Trainable):
    """0.7 style: reset_config keeps `iter` (only a restore sets it)."""

    def _setup(self, config):
        self.num_resets = 0
        self.iter = 0

    def _train(self):
        self.iter += 1
        return {"num_resets": self.num_resets, "done": self.iter > 1}

    def _save(self, d):
        return {"iter": self.iter}

    def _restore(self, state):
        self.iter = state["iter"]

    def reset_config(self, new_config):
        self.num_resets += 1
        return True


def test_07_classes_reuse_actors_only_to_restore(tmp_path):
    import ray

    ray.init(num_cpus=1)
    try:
        trials = tune.run_experiments({"foo": {"run": _Resettable07, "num_samples": 4,
                                               "local_dir": str(tmp_path)}},
                                      reuse_actors=True, scheduler=_Pauses(), verbose=0)
    finally:
        ray.shutdown()
    # Fresh trials got fresh actors; each resumed trial reused the one cached actor.
    assert [t.last_result["num_resets"] for t in trials] == [1, 2, 3, 4]
    assert all(t.last_result["training_iteration"] == 2 for t in trials)


def test_run_result_has_the_analysis_api_and_local_dir_is_the_experiment(tmp_path):
    def f(config):
        tune.report(score=config["x"])

    results = tune.run(f, name="exp", config={"x": tune.grid_search([1, 2, 3])},
                       local_dir=str(tmp_path), verbose=0, global_checkpoint_period=0,
                       trial_executor=LocalTrialExecutor({"CPU": 1}))
    assert results.dataframe().shape[0] == 3
    assert results.stats()["num_trials"] == 3 and results.runner_data()["searcher_state"]
    assert len(results._checkpoints) == 3 and len(results.trial_dataframes) == 3
    assert results.get_best_config("score") == {"x": 3}
    assert results.get_best_logdir("score", mode="min") != results.get_best_logdir("score")
    assert all(t.local_dir == str(tmp_path / "exp") for t in results.trials)
    assert all(os.path.dirname(t.logdir) == t.local_dir for t in results.trials)
    with pytest.raises(tune.TuneError, match="global_checkpoint_period"):
        tune.run(f, global_checkpoint_period=-1, local_dir=str(tmp_path), verbose=0,
                 trial_executor=LocalTrialExecutor({"CPU": 1}))


def test_rllib_registers_the_0_7_mock_trainers_and_the_examples_package_imports(tmp_path):
    pytest.importorskip("ray.rllib")
    from ray.tune.examples.async_hyperband_example import MyTrainableClass

    # __fake fails in its second iteration unless restored; max_failures=1 and a
    # checkpoint every iteration: one retry from the checkpoint, then it finishes.
    trials = tune.run("__fake", name="fake", stop={"training_iteration": 3}, checkpoint_freq=1,
                      max_failures=1, config={"mock_error": True}, local_dir=str(tmp_path),
                      verbose=0, trial_executor=LocalTrialExecutor({"CPU": 1}))
    assert trials[0].status == "TERMINATED" and trials[0].num_failures == 1
    curve = tune.run("__sigmoid_fake_data", name="sig", stop={"training_iteration": 3},
                     config={"width": 10, "height": 5}, local_dir=str(tmp_path), verbose=0,
                     trial_executor=LocalTrialExecutor({"CPU": 1}))
    # The third call sees iteration 2 (the count before it), as in Ray 0.7.
    assert curve[0].last_result["episode_reward_mean"] == pytest.approx(5 * math.tanh(0.2))
    ranked = tune.run("__parameter_tuning", name="pt", stop={"training_iteration": 2},
                      config={"reward_amt": tune.grid_search([1, 3])}, local_dir=str(tmp_path),
                      verbose=0, trial_executor=LocalTrialExecutor({"CPU": 1}))
    assert sorted(t.last_result["episode_reward_mean"] for t in ranked) == [1, 3]
    analysis = tune.run(MyTrainableClass, name="sigmoid", stop={"training_iteration": 1},
                        num_samples=3, config={"width": 10, "height": 20}, local_dir=str(tmp_path),
                        verbose=0, trial_executor=LocalTrialExecutor({"CPU": 1}))
    assert analysis.dataframe().shape[0] == 3
