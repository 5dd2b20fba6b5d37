"""GeneticSearch and its finite search spaces (ray.tune.automl): the spaces' points and
errors, breeding as a pure state machine, and whole searches run in-process."""

import math
import pickle

import numpy as np
import pytest

from ray import tune
from ray.tune.automl import ContinuousSpace, DiscreteSpace, GeneticSearch, SearchSpace
from ray.tune.error import TuneError
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.trial import Trial


def _space():
    return SearchSpace([ContinuousSpace("x", -1.0, 1.0, 21), DiscreteSpace("k", [0, 1, 2, 3])])


def peak(config, reporter):
    # Best 0.0 at x = 0.3, k = 2; every other grid point is worse.
    reporter(score=-((config["x"] - 0.3) ** 2) - abs(config["k"] - 2))


# --- search spaces ---------------------------------------------------------------


def test_continuous_space_spans_start_to_end_inclusive():
    assert ContinuousSpace("x", 0, 4, 5).choices == (0, 1.0, 2.0, 3.0, 4)
    log = ContinuousSpace("lr", 1e-4, 1e-1, 4, distribution="log").choices
    assert log[0] == 1e-4 and log[-1] == 1e-1
    assert np.allclose(np.diff(np.log10(log)), 1.0)


@pytest.mark.parametrize("args,match", [
    (("x", 1.0, 0.0, 5), "start"),
    (("x", 0.0, 1.0, 1), "num must be an int >= 2"),
    (("x", 0.0, 1.0, 5, "cubic"), "'linear' or 'log'"),
    (("x", 0.0, 1.0, 5, "log"), "start > 0"),
    (("", 0.0, 1.0, 5), "non-empty string name"),
])
def test_continuous_space_rejects_bad_arguments_with_the_fix(args, match):
    with pytest.raises(TuneError, match=match):
        ContinuousSpace(*args)


def test_search_space_rejects_empty_duplicates_and_foreign_objects():
    with pytest.raises(TuneError, match="has no values"):
        DiscreteSpace("a", [])
    with pytest.raises(TuneError, match="repeated: \\['a'\\]"):
        SearchSpace([DiscreteSpace("a", [1]), DiscreteSpace("a", [2])])
    with pytest.raises(TuneError, match="DiscreteSpace/ContinuousSpace"):
        SearchSpace([{"a": [1, 2]}])


def test_genome_decodes_to_a_config_with_dotted_names_nested():
    space = SearchSpace([DiscreteSpace("opt.lr", [0.1, 0.01]), DiscreteSpace("act", ["relu", "tanh"])])
    assert space.sizes == (2, 2)  # ordered by name: act, opt.lr
    assert space.decode((1, 0)) == {"act": "tanh", "opt": {"lr": 0.1}}


# --- breeding, driven by hand ----------------------------------------------------


def test_generation_sizes_decay_and_fix_the_number_of_trials():
    search = GeneticSearch(_space(), reward_attr="score", max_generation=3, population_size=10,
                           population_decay=0.5, keep_top_ratio=0.2)
    assert search.generation_sizes == [10, 5, 2]
    # Elites (top 20% of the previous generation) are carried over, not run again.
    assert search._elite_counts == [0, 2, 1]
    assert search.total_trials == 10 + 3 + 1


def test_next_generation_waits_for_every_trial_of_the_current_one():
    search = GeneticSearch(_space(), metric="score", mode="max", max_generation=2, population_size=3,
                           population_decay=1.0, keep_top_ratio=0.0, seed=0)
    configs = [search._suggest(f"t{i}") for i in range(3)]
    assert all(configs) and search._suggest("t3") is None  # generation 0 handed out
    search.on_trial_complete("t0", result={"score": 1.0})
    search.on_trial_complete("t1", result={"score": 2.0})
    assert search._suggest("t3") is None  # t2 still running
    search.on_trial_complete("t2", error=True)
    assert search._suggest("t3") is not None and search.generation == 1
    assert search.scores[min(search.scores, key=search.scores.get)] == -math.inf  # the error ranks last


def test_children_are_new_configurations_bred_from_the_best():
    search = GeneticSearch(_space(), metric="score", mode="min", max_generation=2, population_size=8,
                           population_decay=1.0, keep_top_ratio=0.25, selection_bound=0.25,
                           crossover_bound=1.0, mutation_rate=0.0, seed=1)
    first = {f"t{i}": search._suggest(f"t{i}") for i in range(8)}
    for trial_id, config in first.items():  # mode="min": lower is better
        search.on_trial_complete(trial_id, result={"score": abs(config["x"]) + config["k"]})
    children = [search._suggest(f"c{i}") for i in range(6)]
    assert search._suggest("c6") is None  # 8 - 2 elites
    seen = {(c["k"], c["x"]) for c in first.values()}
    assert all((c["k"], c["x"]) not in seen for c in children)
    best_two = sorted(first.values(), key=lambda c: abs(c["x"]) + c["k"])[:2]
    # Crossover of the two best only (mutation only where a child would repeat a tried genome).
    parent_ks = {c["k"] for c in best_two}
    assert sum(c["k"] in parent_ks for c in children) >= 3


@pytest.mark.parametrize("kwargs,match", [
    ({"population_size": 1}, "population_size must be an int >= 2"),
    ({"max_generation": 0}, "max_generation must be an int >= 1"),
    ({"crossover_bound": 1.5}, "crossover_bound must be a number in \\[0, 1\\]"),
    ({"mode": "up"}, "mode must be 'min' or 'max'"),
])
def test_bad_arguments_raise_tune_errors(kwargs, match):
    with pytest.raises(TuneError, match=match):
        GeneticSearch(_space(), metric="score", **kwargs)


def test_state_pickles_and_restores_mid_generation():
    search = GeneticSearch(_space(), reward_attr="score", population_size=4, seed=3)
    search._suggest("a")
    search.on_trial_complete("a", result={"score": 0.5})
    restored = GeneticSearch(_space(), reward_attr="score", population_size=4, seed=9)
    restored.restore_state(pickle.loads(pickle.dumps(search.save_state())))
    assert restored.scores == search.scores and restored._pending == search._pending


# --- whole searches ---------------------------------------------------------------


def _bowl_score(config):
    # Best 0.0 at x = 0.3, y = -0.5, k = "b", on a 101 x 101 x 3 grid of 30,603 points.
    penalty = 0.0 if config["k"] == "b" else 0.5
    return -((config["x"] - 0.3) ** 2) - (config["y"] + 0.5) ** 2 - penalty


def bowl(config, reporter):
    reporter(score=_bowl_score(config))


def _bowl_search(seed):
    space = SearchSpace([ContinuousSpace("x", -1.0, 1.0, 101), ContinuousSpace("y", -1.0, 1.0, 101),
                         DiscreteSpace("k", ["a", "b", "c"])])
    return GeneticSearch(space, reward_attr="score", max_generation=6, population_size=10,
                         population_decay=1.0, seed=seed)


def test_search_under_tune_runs_every_generation_once_per_configuration(tmp_path):
    search = _bowl_search(seed=0)
    trials = tune.run(bowl, name="genetic", search_alg=search, local_dir=str(tmp_path), verbose=0,
                      loggers=[], trial_executor=LocalTrialExecutor({"CPU": 4}))
    assert len(trials) == search.total_trials == 10 + 5 * 8 and search.is_finished()
    assert all(t.status == Trial.TERMINATED for t in trials)
    configs = [(t.config["x"], t.config["y"], t.config["k"]) for t in trials]
    assert len(set(configs)) == len(configs)  # nothing evaluated twice
    by_generation = {}
    for entry in search.history:
        by_generation.setdefault(entry["generation"], []).append(entry["score"])
    assert sorted(by_generation) == list(range(6))
    assert np.mean(by_generation[5]) > np.mean(by_generation[0])  # breeding beats random
    assert search.best_config() == max((t.config for t in trials), key=_bowl_score)


def test_search_beats_random_sampling_with_the_same_budget():
    rng = np.random.default_rng(0)
    genetic_best, random_best = [], []
    for seed in range(20):
        search = _bowl_search(seed)
        for n in range(search.total_trials):
            config = search._suggest(str(n))
            search.on_trial_complete(str(n), result={"score": _bowl_score(config)})
        genetic_best.append(max(search.scores.values()))
        random_best.append(max(_bowl_score(search.space.decode(search.space.random_genome(rng)))
                               for _ in range(search.total_trials)))
    # Over 20 seeded runs of 50 trials the genetic search's median best is more than
    # twice as close to the optimum (about -0.02 against -0.05).
    assert np.median(genetic_best) > 0.5 * np.median(random_best)


def test_num_samples_is_decided_by_the_generations(tmp_path):
    with pytest.raises(TuneError, match="leave num_samples at 1"):
        tune.run(peak, search_alg=GeneticSearch(_space(), reward_attr="score"), num_samples=5,
                 local_dir=str(tmp_path), verbose=0, trial_executor=LocalTrialExecutor({"CPU": 4}))


def test_genetic_search_is_importable_from_suggest_too():
    from ray.tune.suggest import GeneticSearch as FromSuggest

    assert FromSuggest is GeneticSearch
