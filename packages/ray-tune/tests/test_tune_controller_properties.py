"""Property-based checks of the trial controller's invariants (Hypothesis)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ray.tune import controller as C
from ray.tune.resources import Resources
from ray.tune.schedulers import (
    AsyncHyperBandScheduler,
    FIFOScheduler,
    HyperBandForBOHB,
    HyperBandScheduler,
    MedianStoppingRule,
    PopulationBasedTraining,
)
from ray.tune.suggest.search import SearchAlgorithm
from ray.tune.trial import Checkpoint, Trial


class ListSearch(SearchAlgorithm):
    def __init__(self, trials):
        self._trials = list(trials)

    def add_configurations(self, experiments):
        pass

    def next_trials(self):
        trials, self._trials = self._trials, []
        return trials

    def is_finished(self):
        return not self._trials


SCHEDULERS = [
    lambda: FIFOScheduler(),
    lambda: AsyncHyperBandScheduler(metric="m", max_t=6, grace_period=1, reduction_factor=2, seed=0),
    lambda: MedianStoppingRule(metric="m", time_attr="training_iteration", grace_period=1,
                               min_samples_required=1),
    lambda: PopulationBasedTraining(metric="m", time_attr="training_iteration", perturbation_interval=2,
                                    hyperparam_mutations={"lr": [1, 2, 3]}, seed=0),
    lambda: PopulationBasedTraining(metric="m", time_attr="training_iteration", perturbation_interval=2,
                                    hyperparam_mutations={"lr": [1, 2, 3]}, seed=0, synch=True),
    lambda: HyperBandScheduler(metric="m", max_t=6, reduction_factor=2),
    lambda: HyperBandForBOHB(metric="m", max_t=6, reduction_factor=2),
]

trial_specs = st.lists(
    st.tuples(st.sampled_from([0.5, 1, 2]), st.integers(0, 2), st.booleans()), min_size=1, max_size=6
)
events = st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["result", "done", "error"]),
                            st.floats(0, 10)), max_size=40)


def _check(ctrl):
    running = [t for t in ctrl.trials if t.status == Trial.RUNNING]
    used = sum(t.resources.cpu_total() for t in running)
    assert math.isclose(ctrl.resources.used_cpu, used, abs_tol=1e-9)
    assert ctrl.resources.used_cpu <= ctrl.resources.cpu + 1e-9


@settings(max_examples=60, deadline=None)
@given(trial_specs, events, st.integers(0, len(SCHEDULERS) - 1))
def test_resources_match_running_trials_and_every_run_finishes(tmp_path_factory, specs, evs, sched):
    local_dir = str(tmp_path_factory.mktemp("props"))
    trials = [
        Trial("t", config={"lr": 1}, trial_id=f"t{i}", local_dir=local_dir, resources=Resources(cpu=cpu),
              max_failures=failures, checkpoint_freq=1 if ckpt else 0,
              stopping_criterion={"training_iteration": 6})
        for i, (cpu, failures, ckpt) in enumerate(specs)
    ]
    ctrl = C.TrialController(search_alg=ListSearch(trials), scheduler=SCHEDULERS[sched](),
                             resources=C.ResourcePool(cpu=2), clock=lambda: 0.0)
    iterations = {t.trial_id: 0 for t in trials}
    terminated = set()

    def apply(actions):
        for action in actions:
            if isinstance(action, C.SaveTrial):
                apply(ctrl.on_checkpoint(action.trial, Checkpoint(action.storage, "x",
                                                                 dict(action.trial.last_result))))

    def feed(trial, kind, value):
        if kind == "error":
            return ctrl.on_error(trial, "boom")
        iterations[trial.trial_id] += 1
        result = {"training_iteration": iterations[trial.trial_id], "m": value,
                  "done": kind == "done"}
        return ctrl.on_result(trial, result)

    apply(ctrl.step())
    _check(ctrl)
    for index, kind, value in evs:
        running = [t for t in ctrl.trials if t.status == Trial.RUNNING]
        if not running:
            break
        apply(feed(running[index % len(running)], kind, value))
        apply(ctrl.step())
        _check(ctrl)
        for t in ctrl.trials:
            if t.trial_id in terminated:
                assert t.status == Trial.TERMINATED  # finished trials never come back
            if t.status == Trial.TERMINATED:
                terminated.add(t.trial_id)

    for _ in range(500):  # finish: every running trial reports until done
        if ctrl.is_finished():
            break
        running = [t for t in ctrl.trials if t.status == Trial.RUNNING]
        assert running, [(t.trial_id, t.status) for t in ctrl.trials]
        apply(feed(running[0], "result", 1.0))
        apply(ctrl.step())
        _check(ctrl)
    assert ctrl.is_finished()
    assert all(t.status in (Trial.TERMINATED, Trial.ERROR) for t in ctrl.trials)
