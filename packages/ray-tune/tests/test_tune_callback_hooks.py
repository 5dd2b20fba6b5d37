"""`tune.Callback` hooks where Ray 2.x calls them, in small real runs: `on_step_end`
closing every `on_step_begin`, `on_checkpoint` then `on_trial_save` for each checkpoint
(class `checkpoint_freq` and function `train.report(checkpoint=)`, after the result),
`on_trial_restore` when a trial continues from a checkpoint (a retry after a failure,
PBT's exploit, `Tuner.restore`), and `get_state`/`set_state` carried over by
`Tuner.restore`."""

import json
import os
import tempfile

import pytest

import ray
from ray import train, tune
from ray.train import Checkpoint
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.schedulers import PopulationBasedTraining


class Events(tune.Callback):
    """Records every hook as a tuple; with `path`, also appends them to a JSON-lines file
    (the Tuner pickles its callbacks, so the restored run records into the same file)."""

    def __init__(self, path=None, by_id=False):
        self.path = path
        self.by_id = by_id  # name trials by id, not by config["x"] (which PBT mutates)
        self.events = []
        self.results_seen = 0

    def _of(self, trial):
        return trial.trial_id if self.by_id else trial.config["x"]

    def _add(self, *event):
        self.events.append(event)
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(event) + "\n")

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info):
        self._add("setup")

    def on_step_begin(self, iteration, trials, **info):
        self._add("step_begin", iteration)

    def on_step_end(self, iteration, trials, **info):
        self._add("step_end", iteration)

    def on_trial_start(self, iteration, trials, trial, **info):
        self._add("start", self._of(trial))

    def on_trial_restore(self, iteration, trials, trial, **info):
        self._add("restore", self._of(trial))

    def on_trial_save(self, iteration, trials, trial, **info):
        self._add("save", self._of(trial))

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        with open(os.path.join(checkpoint.path, "i")) as f:
            self._add("checkpoint", self._of(trial), int(f.read()))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.results_seen += 1
        self._add("result", self._of(trial), result["i"])

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._add("recover", self._of(trial))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._add("complete", self._of(trial))

    def on_experiment_end(self, trials, **info):
        self._add("end")

    def get_state(self):
        return {"results_seen": self.results_seen}

    def set_state(self, state):
        self._add("set_state", state)
        self.results_seen = state["results_seen"]


def of_trial(events, x):
    return [e[0] if e[0] in ("start", "restore", "save", "recover", "complete") else e[:1] + e[2:]
            for e in events if len(e) > 1 and e[0] not in ("step_begin", "step_end") and e[1] == x]


class _Counting(tune.Trainable):
    """Keeps its iteration count ``i`` in its checkpoints."""

    def setup(self, config):
        self.i = 0

    def save_checkpoint(self, checkpoint_dir):
        with open(os.path.join(checkpoint_dir, "i"), "w") as f:
            f.write(str(self.i))
        return checkpoint_dir

    def load_checkpoint(self, checkpoint_dir):
        with open(os.path.join(checkpoint_dir, "i")) as f:
            self.i = int(f.read())


class Counter(_Counting):
    """Counts iterations; the first attempt of x=2 fails at iteration 3 (a marker file)."""

    def step(self):
        self.i += 1
        marker = os.path.join(self.config["dir"], "failed")
        if self.config["x"] == 2 and self.i == 3 and not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("first attempt fails at 3")
        return {"i": self.i}


def run_local(tmp_path, trainable, events, cpus=1, **kwargs):
    return tune.run(trainable, name="hooks", local_dir=str(tmp_path), verbose=0,
                    callbacks=[events], trial_executor=LocalTrialExecutor({"CPU": cpus}), **kwargs)


def test_step_end_closes_every_step_and_trial_hooks_run_inside_steps(tmp_path):
    events = Events()
    run_local(tmp_path, Counter, events, config={"x": tune.grid_search([1, 3]), "dir": str(tmp_path)},
              stop={"training_iteration": 2})
    names = [e[0] for e in events.events]
    assert names[0] == "setup" and names[-1] == "end"
    steps = [e for e in events.events if e[0] in ("step_begin", "step_end")]
    assert [e[0] for e in steps] == ["step_begin", "step_end"] * (len(steps) // 2)
    assert all(b[1] == e[1] for b, e in zip(steps[::2], steps[1::2]))
    assert [b[1] for b in steps[::2]] == list(range(1, len(steps) // 2 + 1))
    inside = False
    for name in names[1:-1]:
        inside = {"step_begin": True, "step_end": False}.get(name, inside)
        assert inside or name in ("step_begin", "step_end"), f"{name} outside a step: {names}"
    assert names.index("end") > max(i for i, n in enumerate(names) if n == "step_end")


def test_checkpoint_freq_calls_on_checkpoint_then_on_trial_save_after_each_result(tmp_path):
    events = Events()
    run_local(tmp_path, Counter, events, config={"x": 1, "dir": str(tmp_path)},
              stop={"training_iteration": 3}, checkpoint_freq=1)
    assert of_trial(events.events, 1) == [
        "start",
        ("result", 1), ("checkpoint", 1), "save",
        ("result", 2), ("checkpoint", 2), "save",
        ("result", 3), ("checkpoint", 3), "save",
        "complete",
    ]


def reports_checkpoints(config):
    start = 0
    if train.get_checkpoint():
        with open(os.path.join(train.get_checkpoint().path, "i")) as f:
            start = int(f.read())
    for i in range(start + 1, 5):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "i"), "w") as f:
                f.write(str(i))
            train.report({"i": i}, checkpoint=Checkpoint.from_directory(d) if i % 2 == 0 else None)


def test_function_reported_checkpoints_call_on_checkpoint_and_on_trial_save_after_the_result(tmp_path):
    events = Events()
    run_local(tmp_path, reports_checkpoints, events, config={"x": 1})
    assert of_trial(events.events, 1) == [
        "start",
        ("result", 1),
        ("result", 2), ("checkpoint", 2), "save",
        ("result", 3),
        ("result", 4), ("checkpoint", 4), "save",
        "complete",
    ]


def test_a_retried_trial_is_restored_from_its_checkpoint_after_on_trial_start(tmp_path):
    events = Events()
    run_local(tmp_path, Counter, events, config={"x": 2, "dir": str(tmp_path)},
              stop={"training_iteration": 4}, checkpoint_freq=1, max_failures=1)
    assert of_trial(events.events, 2) == [
        "start",
        ("result", 1), ("checkpoint", 1), "save",
        ("result", 2), ("checkpoint", 2), "save",
        "recover",
        "start", "restore",  # continues from the checkpoint of iteration 2
        ("result", 3), ("checkpoint", 3), "save",
        ("result", 4), ("checkpoint", 4), "save",
        "complete",
    ]


class Scored(_Counting):
    def step(self):
        self.i += 1
        return {"i": self.i, "score": self.config["x"] * self.i}


    def reset_config(self, new_config):
        self.i = 0  # a reused actor starts the new trial afresh (or from its checkpoint)
        return True


def test_pbt_exploit_calls_on_trial_restore_for_the_exploiting_trial(tmp_path):
    events = Events(by_id=True)
    pbt = PopulationBasedTraining(time_attr="training_iteration", perturbation_interval=2,
                                  hyperparam_mutations={"x": [1.0, 10.0]}, quantile_fraction=0.5,
                                  resample_probability=0.0)
    trials = run_local(tmp_path, Scored, events, cpus=2, config={"x": tune.grid_search([1.0, 10.0])},
                       metric="score", mode="max", scheduler=pbt, stop={"training_iteration": 6})
    low, high = sorted(trials, key=lambda t: t.experiment_tag)  # started as x=1 and x=10
    assert "perturbed" in low.experiment_tag and "perturbed" not in high.experiment_tag
    assert [e for e in events.events if e[0] == "restore"] == [("restore", low.trial_id)] * 2
    mine = of_trial(events.events, low.trial_id)
    first = mine.index("restore")
    # At its iteration 4 the low trial took the leader's checkpoint of iteration 2 (saved
    # after the leader's result 2), so it went on from i=3: the restore really happened.
    assert mine[first - 1] == ("result", 4) and mine[first + 1] == ("result", 3)
    assert [t.last_result["i"] for t in (low, high)] == [6, 6]


# -- Tuner.restore: callback state and on_trial_restore ---------------------------
class InterruptOnce:
    """A stopper that interrupts the driver (as Ctrl-C would) the first time x=1 reports 3."""

    def __init__(self, marker):
        self.marker = marker

    def __call__(self, trial_id, result):
        if result["i"] == 3 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise KeyboardInterrupt
        return False


@pytest.fixture
def ray_cluster():
    ray.init(num_cpus=2)
    yield
    ray.shutdown()


def test_tuner_restore_gives_callbacks_their_saved_state_and_restores_trials(ray_cluster, tmp_path):
    log = str(tmp_path / "events.jsonl")
    tuner = tune.Tuner(
        reports_checkpoints, param_space={"x": tune.grid_search([1, 2])},
        run_config=tune.RunConfig(name="cbstate", storage_path=str(tmp_path), verbose=0,
                                  callbacks=[Events(log)],
                                  stop=InterruptOnce(str(tmp_path / "interrupted"))),
        tune_config=tune.TuneConfig(max_concurrent_trials=1),
    )
    with pytest.raises(KeyboardInterrupt):
        tuner.fit()
    first = [tuple(e) for e in map(json.loads, open(log))]
    # One trial at a time: x=1 reported 1 and 2 (a checkpoint), then its 3 stopped the driver.
    assert of_trial(first, 1) == ["start", ("result", 1), ("result", 2), ("checkpoint", 2), "save"]
    assert of_trial(first, 2) == [] and first[-1] == ("end",)

    results = tune.Tuner.restore(str(tmp_path / "cbstate"), trainable=reports_checkpoints).fit()
    assert not results.errors and sorted(r.metrics["i"] for r in results) == [4, 4]
    after = [tuple(e) for e in map(json.loads, open(log))][len(first):]
    # The callback came back (unpickled from the Tuner's settings) and got the state it
    # had when the driver stopped, before the resumed run's first hook.
    assert after[:2] == [("set_state", {"results_seen": 2}), ("setup",)]
    # x=1 starts again from its iteration-2 checkpoint; x=2 from scratch.
    assert of_trial(after, 1) == ["start", "restore", ("result", 3),
                                  ("result", 4), ("checkpoint", 4), "save", "complete"]
    assert of_trial(after, 2) == ["start", ("result", 1), ("result", 2), ("checkpoint", 2), "save",
                                  ("result", 3), ("result", 4), ("checkpoint", 4), "save", "complete"]
    assert after[-1] == ("end",)
    # The state saved at the end counts every result of both runs once.
    from ray.tune import experiment_state as ES

    state = ES.load_callback_state(ES.load_state(str(tmp_path / "cbstate")))
    assert state["0"] == {"results_seen": 2 + 6}
