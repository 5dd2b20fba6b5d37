"""The trial controller as a pure state machine: events in, actions out, no processes."""

import pytest

from ray.tune import controller as C
from ray.tune.resources import Resources
from ray.tune.schedulers import FIFOScheduler, TrialScheduler
from ray.tune.suggest.search import SearchAlgorithm
from ray.tune.trial import Checkpoint, Trial


class ListSearch(SearchAlgorithm):
    """Hands out a fixed list of trials and records every event."""

    def __init__(self, trials):
        self._trials = list(trials)
        self.completed = []
        self.results = []

    def add_configurations(self, experiments):
        pass

    def next_trials(self):
        trials, self._trials = self._trials, []
        return trials

    def on_trial_result(self, trial_id, result):
        self.results.append(trial_id)

    def on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        self.completed.append((trial_id, error, early_terminated))

    def is_finished(self):
        return not self._trials


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def make_trial(i, tmp_path, **kwargs):
    kwargs.setdefault("stopping_criterion", {"training_iteration": 3})
    return Trial("t", config={"i": i}, trial_id=f"trial{i}", local_dir=str(tmp_path), **kwargs)


def make_controller(trials, cpus=2, scheduler=None):
    search = ListSearch(trials)
    ctrl = C.TrialController(
        search_alg=search,
        scheduler=scheduler or FIFOScheduler(),
        resources=C.ResourcePool(cpu=cpus),
        clock=FakeClock(),
    )
    return ctrl, search


def kinds(actions):
    return [(type(a).__name__, a.trial.trial_id) for a in actions]


def result(it, **extra):
    return {"training_iteration": it, "time_total_s": float(it), **extra}


def test_step_starts_only_as_many_trials_as_fit(tmp_path):
    trials = [make_trial(i, tmp_path) for i in range(3)]
    ctrl, _ = make_controller(trials)
    actions = ctrl.step()
    assert kinds(actions) == [
        ("StartTrial", "trial0"), ("ContinueTrial", "trial0"),
        ("StartTrial", "trial1"), ("ContinueTrial", "trial1"),
    ]
    assert [t.status for t in trials] == ["RUNNING", "RUNNING", "PENDING"]
    assert ctrl.resources.used_cpu == 2


def test_stopping_criterion_terminates_and_frees_resources_for_the_next_trial(tmp_path):
    trials = [make_trial(i, tmp_path) for i in range(3)]
    ctrl, search = make_controller(trials)
    ctrl.step()
    assert kinds(ctrl.on_result(trials[0], result(1))) == [("ContinueTrial", "trial0")]
    actions = ctrl.on_result(trials[0], result(3))
    assert kinds(actions) == [("StopTrial", "trial0")]
    assert trials[0].status == Trial.TERMINATED
    assert search.completed == [("trial0", False, False)]
    assert kinds(ctrl.step()) == [("StartTrial", "trial2"), ("ContinueTrial", "trial2")]
    assert trials[0].last_result["trial_id"] == "trial0"


def test_done_result_and_callable_stop_both_stop_a_trial(tmp_path):
    t0 = make_trial(0, tmp_path, stopping_criterion={})
    t1 = make_trial(1, tmp_path, stopping_criterion=lambda trial_id, r: r["loss"] < 0.5)
    ctrl, _ = make_controller([t0, t1])
    ctrl.step()
    ctrl.on_result(t0, result(1, done=True))
    assert t0.status == Trial.TERMINATED
    assert kinds(ctrl.on_result(t1, result(1, loss=0.9))) == [("ContinueTrial", "trial1")]
    ctrl.on_result(t1, result(2, loss=0.1))
    assert t1.status == Trial.TERMINATED
    assert ctrl.is_finished()


def test_missing_stopping_field_errors_the_trial_with_a_fix(tmp_path):
    t0 = make_trial(0, tmp_path, stopping_criterion={"mean_accuracy": 0.9})
    ctrl, search = make_controller([t0])
    ctrl.step()
    ctrl.on_result(t0, result(1))
    assert t0.status == Trial.ERROR
    assert "mean_accuracy" in t0.error_msg and "stop=" in t0.error_msg
    assert search.completed == [("trial0", True, False)]


def test_failed_trial_restarts_from_checkpoint_until_max_failures(tmp_path):
    t0 = make_trial(0, tmp_path, checkpoint_freq=1, max_failures=2,
                    stopping_criterion={"training_iteration": 100})
    ctrl, _ = make_controller([t0])
    ctrl.step()
    actions = ctrl.on_result(t0, result(1))
    assert kinds(actions) == [("SaveTrial", "trial0"), ("ContinueTrial", "trial0")]
    checkpoint = Checkpoint(Checkpoint.DISK, "/ckpt/1", result(1))
    ctrl.on_checkpoint(t0, checkpoint)

    assert kinds(ctrl.on_error(t0, "actor died")) == [("StopTrial", "trial0")]
    assert t0.status == Trial.PENDING and ctrl.resources.used_cpu == 0
    restart = ctrl.step()
    assert isinstance(restart[0], C.StartTrial) and restart[0].checkpoint == checkpoint

    ctrl.on_error(t0, "actor died again")
    ctrl.step()
    ctrl.on_error(t0, "and again")
    assert t0.status == Trial.ERROR and t0.num_failures == 3
    assert ctrl.is_finished()


def test_max_failures_n_retries_n_times_and_the_next_failure_is_final(tmp_path):
    # Ray 0.7 (testFailureRecoveryMaxFailures) and 2.x (`num_failures <= max_failures`).
    for max_failures in (0, 1, 3):
        t0 = make_trial(0, tmp_path, checkpoint_freq=1, max_failures=max_failures)
        ctrl, search = make_controller([t0])
        ctrl.step()
        for failure in range(1, max_failures + 1):
            ctrl.on_error(t0, f"failure {failure}")
            assert t0.status == Trial.PENDING and t0.num_failures == failure
            assert isinstance(ctrl.step()[0], C.StartTrial)
        ctrl.on_error(t0, "final")
        assert t0.status == Trial.ERROR and t0.num_failures == max_failures + 1
        assert search.completed == [("trial0", True, False)]


def test_max_failures_minus_one_retries_forever(tmp_path):
    t0 = make_trial(0, tmp_path, max_failures=-1, restart_without_checkpoint=True)
    ctrl, _ = make_controller([t0])
    ctrl.step()
    for _ in range(50):
        ctrl.on_error(t0, "flaky")
        assert t0.status == Trial.PENDING
        assert kinds(ctrl.step()) == [("StartTrial", "trial0"), ("ContinueTrial", "trial0")]
    assert t0.num_failures == 50


def test_a_trial_without_checkpoint_restarts_from_scratch_only_when_asked(tmp_path):
    # Ray 2.x (FailureConfig / an explicit max_failures) restarts from the beginning;
    # Ray 0.7's default only retried trials that checkpoint.
    fresh = make_trial(0, tmp_path, max_failures=1, restart_without_checkpoint=True)
    ctrl, _ = make_controller([fresh])
    ctrl.step()
    ctrl.on_error(fresh, "boom")
    restart = ctrl.step()
    assert isinstance(restart[0], C.StartTrial) and restart[0].checkpoint is None
    old_style = make_trial(1, tmp_path, max_failures=3)
    ctrl, _ = make_controller([old_style])
    ctrl.step()
    ctrl.on_error(old_style, "boom")
    assert old_style.status == Trial.ERROR


def test_tune_run_max_failures_reaches_the_trial(tmp_path):
    from ray.tune.error import TuneError
    from ray.tune.experiment import Experiment
    from ray.tune.suggest.search import create_trial_from_spec

    def trainable(config, reporter):
        reporter(x=1)

    default = create_trial_from_spec(Experiment("e", trainable, local_dir=str(tmp_path)).spec, "e")
    assert (default.max_failures, default.restart_without_checkpoint) == (3, False)
    given = create_trial_from_spec(
        Experiment("e", trainable, local_dir=str(tmp_path), max_failures=0).spec, "e")
    assert (given.max_failures, given.restart_without_checkpoint) == (0, True)
    assert Trial.from_json(given.to_json()).restart_without_checkpoint is True
    with pytest.raises(TuneError, match="max_failures"):
        Experiment("e", trainable, max_failures=-2)


def test_failure_without_checkpointing_is_final(tmp_path):
    t0 = make_trial(0, tmp_path)
    ctrl, search = make_controller([t0])
    ctrl.step()
    ctrl.on_error(t0, "boom")
    assert t0.status == Trial.ERROR and t0.error_msg == "boom"
    assert search.completed == [("trial0", True, False)]


def test_keep_checkpoints_num_deletes_the_worst_scored_checkpoints(tmp_path):
    t0 = make_trial(0, tmp_path, keep_checkpoints_num=2, checkpoint_score_attr="acc")
    ctrl, _ = make_controller([t0])
    deleted = []
    for it, acc in enumerate([0.5, 0.9, 0.1, 0.7], start=1):
        ckpt = Checkpoint(Checkpoint.DISK, f"/ckpt/{it}", {"acc": acc})
        deleted += [a.checkpoint.value for a in ctrl.on_checkpoint(t0, ckpt)]
    # The newest checkpoint is always kept (a restart restores it), so 0.1 survives one round.
    assert deleted == ["/ckpt/1", "/ckpt/3"]
    assert [c.value for c in t0.disk_checkpoints] == ["/ckpt/2", "/ckpt/4"]
    assert t0.checkpoint.value == "/ckpt/4"


def test_trial_needing_more_than_the_cluster_errors_with_advice(tmp_path):
    big = make_trial(0, tmp_path, resources=Resources(cpu=8))
    ok = make_trial(1, tmp_path)
    ctrl, _ = make_controller([big, ok])
    actions = ctrl.step()
    assert big.status == Trial.ERROR and "insufficient cluster resources" in big.error_msg
    assert kinds(actions) == [("StartTrial", "trial1"), ("ContinueTrial", "trial1")]


class PauseFirstResult(FIFOScheduler):
    def on_trial_result(self, trial_runner, trial, result):
        return TrialScheduler.PAUSE if result["training_iteration"] == 1 else TrialScheduler.CONTINUE


def test_pause_saves_in_memory_and_resumes_from_that_checkpoint(tmp_path):
    t0 = make_trial(0, tmp_path)
    ctrl, _ = make_controller([t0], cpus=1, scheduler=PauseFirstResult())
    ctrl.step()
    actions = ctrl.on_result(t0, result(1))
    assert [type(a).__name__ for a in actions] == ["SaveTrial", "StopTrial"]
    assert actions[0].storage == Checkpoint.MEMORY and t0.status == Trial.PAUSED
    memory = Checkpoint(Checkpoint.MEMORY, b"state", result(1))
    ctrl.on_checkpoint(t0, memory)
    resumed = ctrl.step()
    assert isinstance(resumed[0], C.StartTrial) and resumed[0].checkpoint is memory


def test_stop_request_for_running_trial_applies_at_its_next_result(tmp_path):
    t0 = make_trial(0, tmp_path, stopping_criterion={})
    t1 = make_trial(1, tmp_path, stopping_criterion={})
    ctrl, search = make_controller([t0, t1], cpus=1)
    ctrl.step()
    assert ctrl.request_stop("trial0") == []
    assert kinds(ctrl.on_result(t0, result(1))) == [("StopTrial", "trial0")]
    ctrl.request_stop("trial1")  # still pending: stopped at once
    assert t1.status == Trial.TERMINATED
    assert ("trial1", False, True) in search.completed


def test_schedulers_get_read_only_views(tmp_path):
    seen = []

    class Peek(FIFOScheduler):
        def on_trial_result(self, trial_runner, trial, result):
            seen.append(trial)
            with pytest.raises(AttributeError, match="read-only"):
                trial.status = "TERMINATED"
            return TrialScheduler.CONTINUE

    t0 = make_trial(0, tmp_path)
    ctrl, _ = make_controller([t0], scheduler=Peek())
    ctrl.step()
    ctrl.on_result(t0, result(1))
    assert seen[0].trial_id == "trial0" and seen[0] == t0 and t0.status == Trial.RUNNING


def test_status_changes_bump_the_version_used_to_persist_state(tmp_path):
    t0 = make_trial(0, tmp_path)
    ctrl, _ = make_controller([t0])
    before = ctrl.version
    ctrl.step()
    assert ctrl.version > before


def test_queue_trials_keeps_oversized_trials_pending_for_an_autoscaler(tmp_path):
    big = make_trial(0, tmp_path, resources=Resources(cpu=8))
    search = ListSearch([big])
    ctrl = C.TrialController(search_alg=search, resources=C.ResourcePool(cpu=2),
                             clock=FakeClock(), queue_trials=True)
    assert ctrl.step() == [] and big.status == Trial.PENDING
    ctrl.resources = C.ResourcePool(cpu=8)  # the cluster grew
    assert kinds(ctrl.step()) == [("StartTrial", "trial0"), ("ContinueTrial", "trial0")]
