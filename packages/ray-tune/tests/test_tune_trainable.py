"""The class and function APIs, in-process: results, checkpoints, reset, stopping."""

import os
import threading

import pytest

from ray import tune
from ray.tune import result as R
from ray.tune.error import TuneError
from ray.tune.function_runner import wrap_function


class Counter(tune.Trainable):
    def _setup(self, config):
        self.value = config.get("start", 0)

    def _train(self):
        self.value += 1
        return {"value": self.value, "timesteps_this_iter": 10, "episodes_this_iter": 2}

    def _save(self, checkpoint_dir):
        return {"value": self.value}

    def _restore(self, state):
        self.value = state["value"]

    def _export_model(self, export_formats, export_dir):
        path = os.path.join(export_dir, "model.txt")
        with open(path, "w") as f:
            f.write(str(self.value))
        return {fmt: path for fmt in export_formats}


class FileCounter(Counter):
    def _save(self, checkpoint_dir):
        path = os.path.join(checkpoint_dir, "value.txt")
        with open(path, "w") as f:
            f.write(str(self.value))
        return path

    def _restore(self, path):
        with open(path) as f:
            self.value = int(f.read())


def test_train_fills_in_the_documented_fields():
    trainable = Counter({"start": 5})
    first = trainable.train()
    second = trainable.train()
    for key in (R.DONE, R.HOSTNAME, R.NODE_IP, R.PID, R.TIME_THIS_ITER_S, R.TIME_TOTAL_S,
                R.EXPERIMENT_ID, R.DATE, R.TIMESTAMP, R.CONFIG):
        assert key in second
    assert (first[R.TRAINING_ITERATION], second[R.TRAINING_ITERATION]) == (1, 2)
    assert second[R.TIMESTEPS_TOTAL] == 20 and second[R.EPISODES_TOTAL] == 4
    assert second["value"] == 7 and second[R.DONE] is False
    assert second[R.PID] == os.getpid()
    trainable.stop()


@pytest.mark.parametrize("cls", [Counter, FileCounter])
def test_save_and_restore_continue_counters_and_state(tmp_path, cls):
    trainable = cls()
    trainable.train()
    trainable.train()
    path = trainable.save(str(tmp_path))
    experiment_id = trainable.train()[R.EXPERIMENT_ID]
    fresh = cls()
    fresh.restore(path)
    result = fresh.train()
    assert result["value"] == 3 and result[R.TRAINING_ITERATION] == 3
    assert result[R.EXPERIMENT_ID] == experiment_id  # kept across checkpoint/restore
    assert result[R.ITERATIONS_SINCE_RESTORE] == 1
    trainable.delete_checkpoint(path)
    assert not os.path.exists(os.path.dirname(path))
    trainable.stop()
    fresh.stop()


def test_save_to_object_moves_state_between_instances():
    source = FileCounter({"start": 40})
    source.train()
    blob = source.save_to_object()
    assert isinstance(blob, bytes)
    target = FileCounter()
    target.restore_from_object(blob)
    assert target.train()["value"] == 42
    source.stop()
    target.stop()


def test_export_model_returns_paths_per_format(tmp_path):
    trainable = Counter({"start": 1})
    paths = trainable.export_model(["txt"], export_dir=str(tmp_path))
    assert open(paths["txt"]).read() == "1"
    trainable.stop()


def test_default_reset_config_refuses_so_actors_are_not_reused():
    trainable = Counter()
    assert trainable.reset_trial({"start": 3}, "/tmp/unused") is False
    trainable.stop()


def test_function_api_runs_at_most_one_report_ahead_and_merges_done():
    seen = []

    def train_fn(config, reporter):
        for i in range(3):
            seen.append(i)
            reporter(mean_accuracy=i * config["scale"], timesteps_this_iter=5)

    trainable = wrap_function(train_fn)({"scale": 2})
    first = trainable.train()
    assert first["mean_accuracy"] == 0 and len(seen) <= 2
    second = trainable.train()
    assert second["mean_accuracy"] == 2 and not second[R.DONE]
    third = trainable.train()
    # The function returned right after its last report: that report is the final one.
    assert third["mean_accuracy"] == 4 and third[R.DONE] is True
    assert third[R.TIMESTEPS_TOTAL] == 15 and third[R.TRAINING_ITERATION] == 3
    trainable.stop()


def test_function_returning_late_gets_a_final_done_result():
    import time

    def slow_end(config, reporter):
        reporter(x=1, timesteps_this_iter=5)
        time.sleep(0.2)

    trainable = wrap_function(slow_end)({})
    assert trainable.train()[R.DONE] is False
    final = trainable.train()
    assert final[R.DONE] is True and final["x"] == 1 and final[R.TIMESTEPS_TOTAL] == 5
    trainable.stop()


def test_function_api_stop_ends_the_blocked_reporter_with_stop_iteration():
    stopped = threading.Event()

    def forever(config, reporter):
        try:
            while True:
                reporter(x=1)
        except StopIteration:
            stopped.set()
            raise

    trainable = wrap_function(forever)({})
    trainable.train()
    trainable.stop()
    assert stopped.wait(5)


def test_function_error_surfaces_from_train_with_traceback():
    def broken(config, reporter):
        reporter(x=1)
        raise ValueError("bad config")

    trainable = wrap_function(broken)({})
    trainable.train()
    with pytest.raises(TuneError, match="bad config"):
        trainable.train()
    trainable.stop()


def test_single_argument_function_reports_with_tune_report_and_track_log():
    def fn(config):
        tune.report(loss=1.0)
        tune.track.log(loss=0.5)
        return {"loss": 0.1}

    trainable = wrap_function(fn)({})
    assert trainable.train()["loss"] == 1.0
    assert trainable.train()["loss"] == 0.5
    final = trainable.train()  # the returned dict is the final result
    assert final["loss"] == 0.1 and final[R.DONE]
    trainable.stop()


def test_function_trainable_resets_for_a_new_trial():
    def fn(config, reporter):
        reporter(v=config["v"])

    trainable = wrap_function(fn)({"v": 1})
    assert trainable.train()["v"] == 1
    assert trainable.reset_trial({"v": 2}, trainable.logdir)
    result = trainable.train()
    assert result["v"] == 2 and result[R.TRAINING_ITERATION] == 1
    trainable.stop()


def test_report_outside_a_trial_explains_itself():
    import ray.tune.function_runner as fr

    saved, fr._current_reporter = fr._current_reporter, None
    try:
        with pytest.raises(TuneError, match="outside a Tune trial"):
            tune.report(x=1)
    finally:
        fr._current_reporter = saved


def test_a_trial_actor_unpickles_its_trainable_without_the_driver_side_of_tune(tmp_path):
    # What a trial's actor receives (a function trainable and the logdir creator), unpickled
    # in a fresh interpreter: Tune's driver loop, schedulers and searchers stay unimported.
    import subprocess
    import sys

    import cloudpickle

    from ray.tune.function_runner import wrap_function
    from ray.tune.logger import TrialLogdirCreator

    def objective(config):
        return {"x": 1}

    payload = tmp_path / "payload.pkl"
    payload.write_bytes(cloudpickle.dumps((wrap_function(objective), TrialLogdirCreator(str(tmp_path)))))
    code = (
        "import pickle, sys; pickle.load(open(sys.argv[1], 'rb')); "
        "print(sorted(m for m in sys.modules if m.startswith('ray.tune')))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(payload)], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    loaded = eval(out)  # noqa: S307 - our own subprocess's list of module names
    assert "ray.tune.function_runner" in loaded
    heavy = {"ray.tune.tune", "ray.tune.controller", "ray.tune.ray_executor", "ray.tune.schedulers",
             "ray.tune.suggest", "ray.tune.progress_reporter", "ray.tune.tuner"}
    assert not heavy & set(loaded), loaded
