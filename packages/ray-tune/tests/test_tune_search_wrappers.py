"""ConcurrencyLimiter and Repeater as pure searchers: trials out, completions in, no processes."""

import math

import pytest

from ray.tune.error import TuneError
from ray.tune.experiment import Experiment
from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter, Repeater, Searcher
from ray.tune.search.repeater import TRIAL_INDEX


def trainable(config, reporter):
    reporter(score=1)


class Counting(Searcher):
    """Suggests x = 0, 1, 2, ...; records every completion; FINISHED after `limit`."""

    def __init__(self, limit=None, own_limit=False):
        super().__init__(metric="score", mode="max")
        self.limit = limit
        self.own_limit = own_limit
        self.next_x = 0
        self.completed = []
        self.paused = []

    def suggest(self, trial_id):
        if self.limit is not None and self.next_x >= self.limit:
            return Searcher.FINISHED
        self.next_x += 1
        return {"x": self.next_x - 1}

    def on_trial_complete(self, trial_id, result=None, error=False):
        self.completed.append((trial_id, result, error))

    def set_max_concurrency(self, max_concurrent):
        return self.own_limit

    def on_pause(self, trial_id):
        self.paused.append(trial_id)


def searched(search_alg, num_samples, tmp_path):
    search_alg.add_configurations(
        [Experiment("exp", trainable, num_samples=num_samples, local_dir=str(tmp_path))]
    )
    return search_alg


def test_concurrency_limiter_holds_suggestions_while_max_concurrent_are_live(tmp_path):
    inner = Counting()
    limiter = searched(ConcurrencyLimiter(inner, max_concurrent=2), 5, tmp_path)
    first = limiter.next_trials()
    assert [t.config["x"] for t in first] == [0, 1]
    assert limiter.next_trials() == []
    limiter.on_trial_complete(first[0].trial_id, result={"score": 3})
    assert inner.completed == [(first[0].trial_id, {"score": 3}, False)]
    assert [t.config["x"] for t in limiter.next_trials()] == [2]
    assert limiter.next_trials() == []


def test_concurrency_limiter_batch_tells_the_searcher_only_after_the_whole_batch(tmp_path):
    inner = Counting()
    limiter = searched(ConcurrencyLimiter(inner, max_concurrent=3, batch=True), 6, tmp_path)
    batch = limiter.next_trials()
    assert len(batch) == 3
    limiter.on_trial_complete(batch[0].trial_id, result={"score": 1})
    limiter.on_trial_complete(batch[1].trial_id, error=True)
    assert inner.completed == [] and limiter.next_trials() == []
    limiter.on_trial_complete(batch[2].trial_id, result={"score": 2})
    assert [c[0] for c in inner.completed] == [t.trial_id for t in batch]
    assert inner.completed[1] == (batch[1].trial_id, None, True)
    assert [t.config["x"] for t in limiter.next_trials()] == [3, 4, 5]


def test_concurrency_limiter_leaves_the_limit_to_a_searcher_that_applies_its_own(tmp_path):
    inner = Counting(own_limit=True)
    limiter = searched(ConcurrencyLimiter(inner, max_concurrent=1), 3, tmp_path)
    assert len(limiter.next_trials()) == 3  # the searcher itself would have to say "not now"
    limiter.on_pause("t")
    assert inner.paused == ["t"]


def test_concurrency_limiter_finishes_when_its_searcher_does(tmp_path):
    limiter = searched(ConcurrencyLimiter(Counting(limit=2), max_concurrent=5), 10, tmp_path)
    assert len(limiter.next_trials()) == 2
    assert limiter.is_finished()


def test_concurrency_limiter_rejects_bad_arguments():
    with pytest.raises(TuneError, match="max_concurrent"):
        ConcurrencyLimiter(Counting(), max_concurrent=0)
    with pytest.raises(TuneError, match="max_concurrent"):
        ConcurrencyLimiter(Counting(), max_concurrent=1.5)
    with pytest.raises(TuneError, match="max_concurrent_trials"):
        ConcurrencyLimiter(BasicVariantGenerator(), max_concurrent=2)


def test_concurrency_limiter_state_round_trips_with_its_searcher(tmp_path):
    inner = Counting()
    limiter = searched(ConcurrencyLimiter(inner, max_concurrent=2), 4, tmp_path)
    live = limiter.next_trials()
    state = limiter.save_state()
    fresh_inner = Counting()
    fresh = ConcurrencyLimiter(fresh_inner, max_concurrent=2)
    fresh.restore_state(state)
    assert fresh_inner.next_x == 2 and fresh.searcher is fresh_inner
    fresh.on_trial_complete(live[0].trial_id, result={"score": 1})
    assert fresh_inner.completed == [(live[0].trial_id, {"score": 1}, False)]


def test_repeater_repeats_each_suggestion_with_its_index(tmp_path):
    inner = Counting()
    repeater = searched(Repeater(inner, repeat=3), 6, tmp_path)
    trials = repeater.next_trials()
    assert [(t.config["x"], t.config[TRIAL_INDEX]) for t in trials] == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert inner.next_x == 2  # the searcher made two suggestions
    unindexed = searched(Repeater(Counting(), repeat=2, set_index=False), 2, tmp_path)
    assert [TRIAL_INDEX in t.config for t in unindexed.next_trials()] == [False, False]


def test_repeater_tells_the_searcher_the_mean_once_every_repeat_completed(tmp_path):
    inner = Counting()
    repeater = searched(Repeater(inner, repeat=3), 6, tmp_path)
    trials = repeater.next_trials()
    repeater.on_trial_complete(trials[1].trial_id, result={"score": 1.0})
    repeater.on_trial_complete(trials[0].trial_id, result={"score": 2.0})
    assert inner.completed == []
    repeater.on_trial_complete(trials[2].trial_id, error=True)  # NaN: left out of the mean
    assert inner.completed == [(trials[0].trial_id, {"score": 1.5}, False)]
    for t in trials[3:]:
        repeater.on_trial_complete(t.trial_id, error=True)
    assert inner.completed[1] == (trials[3].trial_id, None, True)  # every repeat failed


def test_repeater_finishes_after_the_last_group_when_its_searcher_does(tmp_path):
    inner = Counting(limit=1)
    repeater = searched(Repeater(inner, repeat=2), 8, tmp_path)
    trials = repeater.next_trials()
    assert [t.config["x"] for t in trials] == [0, 0]
    assert repeater.is_finished()


def test_repeater_rejects_bad_arguments():
    with pytest.raises(TuneError, match="repeat"):
        Repeater(Counting(), repeat=0)
    with pytest.raises(TuneError, match="Searcher"):
        Repeater(BasicVariantGenerator(), repeat=2)


def test_repeater_inside_a_concurrency_limiter_counts_repeats_as_trials(tmp_path):
    inner = Counting()
    search = searched(ConcurrencyLimiter(Repeater(inner, repeat=2), max_concurrent=3), 6, tmp_path)
    trials = search.next_trials()
    assert [(t.config["x"], t.config[TRIAL_INDEX]) for t in trials] == [(0, 0), (0, 1), (1, 0)]
    for t in trials[:2]:
        search.on_trial_complete(t.trial_id, result={"score": 4.0})
    assert inner.completed == [(trials[0].trial_id, {"score": 4.0}, False)]
    assert math.isclose(inner.completed[0][1]["score"], 4.0)
