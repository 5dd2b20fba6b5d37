"""GeneticSearch: a generational genetic algorithm over a finite `SearchSpace`.

Generation 0 is `population_size` random genomes. When every trial of a generation has
finished, the whole population so far is ranked by the metric and the next generation
is bred from it:

    elites    the top `keep_top_ratio` of the ranked population, carried over unchanged
              (their score is known, so they are not run again);
    parents   drawn uniformly from the top `selection_bound` of the ranking (truncation
              selection; at least two);
    children  with probability `crossover_bound` a uniform crossover of two parents
              (each gene from either parent), else a copy of one parent; then every gene
              mutates with probability `mutation_rate`: a Gaussian step of about a tenth
              of its range along a `ContinuousSpace`, any other value of a `DiscreteSpace`. A child equal to a genome
              already tried is mutated again, so no configuration is run twice while
              untried ones remain.

The generation size shrinks by `population_decay` each time (never below 2), and the
search stops after `max_generation` generations. Because all sizes are fixed up front,
the number of trials is known when the experiment starts (`total_trials`).

Trials that error or never report the metric rank last. A trial stopped early by a
scheduler (AsyncHyperBand in the documented example) is ranked by its last result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ray.tune.automl.search_space import ParameterSpace, SearchSpace
from ray.tune.error import TuneError
from ray.tune.suggest.search import resolve_metric
from ray.tune.suggest.suggestion import SuggestionAlgorithm

Genome = tuple[int, ...]


class GeneticSearch(SuggestionAlgorithm):
    """See the module docstring.

    `GeneticSearch(space, reward_attr="neg_mean_loss", max_generation=10, population_size=50)`
    is the Ray 0.7 spelling; `metric=..., mode="min"|"max"` is today's.
    """

    def __init__(
        self,
        search_space: SearchSpace | Iterable[ParameterSpace],
        reward_attr: str | None = None,
        max_generation: int = 2,
        population_size: int = 10,
        population_decay: float = 0.95,
        keep_top_ratio: float = 0.2,
        selection_bound: float = 0.4,
        crossover_bound: float = 0.4,
        *,
        metric: str | None = None,
        mode: str = "max",
        mutation_rate: float | None = None,
        seed: int | None = None,
        max_concurrent: int | None = None,
    ):
        super().__init__(max_concurrent=max_concurrent)
        self.space = search_space if isinstance(search_space, SearchSpace) else SearchSpace(search_space)
        _check_int("max_generation", max_generation, 1)
        _check_int("population_size", population_size, 2)
        for name, value in (("population_decay", population_decay), ("keep_top_ratio", keep_top_ratio),
                            ("selection_bound", selection_bound), ("crossover_bound", crossover_bound)):
            _check_fraction(name, value)
        if population_decay == 0:
            raise TuneError("GeneticSearch: population_decay must be > 0 (1 keeps the size fixed)")
        if mutation_rate is None:
            mutation_rate = 1.0 / len(self.space.params)
        _check_fraction("mutation_rate", mutation_rate)
        self.metric, self.mode = resolve_metric(metric, mode, reward_attr)
        self.keep_top_ratio, self.selection_bound = keep_top_ratio, selection_bound
        self.crossover_bound, self.mutation_rate = crossover_bound, mutation_rate
        self._rng = np.random.default_rng(seed)
        self.generation_sizes = _generation_sizes(population_size, population_decay, max_generation)
        self._elite_counts = [0] + [
            min(int(keep_top_ratio * prev), size - 1)
            for prev, size in zip(self.generation_sizes, self.generation_sizes[1:])
        ]
        self.total_trials = sum(s - e for s, e in zip(self.generation_sizes, self._elite_counts))
        self.generation = 0
        self._pending: list[Genome] = self._unique_random_genomes(self.generation_sizes[0])
        self._running: dict[str, Genome] = {}
        self._last_results: dict[str, dict] = {}
        # Every genome tried so far -> its score (higher is better, whatever the mode).
        self.scores: dict[Genome, float] = {}
        self.history: list[dict] = []  # one entry per finished trial: generation, config, score
        self._experiment_added = False

    # --- SuggestionAlgorithm hooks -------------------------------------------------

    def _generate_trials(self, experiment_spec: dict, experiment_name: str):
        if self._experiment_added:
            raise TuneError("GeneticSearch runs one experiment; create a new GeneticSearch for another")
        if experiment_spec.get("num_samples", 1) != 1:
            raise TuneError(
                f"GeneticSearch decides the number of trials ({self.total_trials} here, from "
                "population_size, population_decay and max_generation); leave num_samples at 1"
            )
        self._experiment_added = True
        spec = dict(experiment_spec, num_samples=self.total_trials)
        return super()._generate_trials(spec, experiment_name)

    def _suggest(self, trial_id: str) -> dict | None:
        if not self._pending and not self._running and self.generation + 1 < len(self.generation_sizes):
            self._breed_next_generation()
        if not self._pending:
            return None  # the generation's last trials are still running
        genome = self._pending.pop(0)
        self._running[trial_id] = genome
        return self.space.decode(genome)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if trial_id in self._running:
            self._last_results[trial_id] = result

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        genome = self._running.pop(trial_id, None)
        last = self._last_results.pop(trial_id, None)
        if genome is None:
            return
        result = result if result and self.metric in result else last
        score = -math.inf
        if not error and result and self.metric in result:
            value = float(result[self.metric])
            score = value if self.mode == "max" else -value
        self.scores[genome] = score
        self.history.append({"generation": self.generation, "config": self.space.decode(genome),
                             "score": score if self.mode == "max" else -score})

    # --- results -------------------------------------------------------------------

    def best_config(self) -> dict | None:
        """The best configuration found so far (None before any trial finished)."""
        if not self.scores:
            return None
        return self.space.decode(max(self.scores, key=self.scores.__getitem__))

    # --- breeding ------------------------------------------------------------------

    def _breed_next_generation(self) -> None:
        self.generation += 1
        ranked = sorted(self.scores, key=self.scores.__getitem__, reverse=True)
        size, n_elite = self.generation_sizes[self.generation], self._elite_counts[self.generation]
        parents = ranked[: max(2, math.ceil(self.selection_bound * len(ranked)))]
        children: list[Genome] = []
        for _ in range(size - n_elite):
            child = self._mutate(self._offspring(parents))
            for _attempt in range(20):  # re-mutate duplicates while the space has room
                if child not in self.scores and child not in children:
                    break
                child = self._mutate(child, force=True)
            children.append(child)
        self._pending = children

    def _offspring(self, parents: list[Genome]) -> Genome:
        if len(parents) < 2:  # a one-point space: nothing to cross
            return parents[0]
        first, second = (parents[i] for i in self._rng.choice(len(parents), size=2, replace=False))
        if self._rng.random() >= self.crossover_bound:
            return first
        take_first = self._rng.random(len(first)) < 0.5
        return tuple(a if keep else b for a, b, keep in zip(first, second, take_first))

    def _mutate(self, genome: Genome, force: bool = False) -> Genome:
        genes = list(genome)
        mutable = [i for i, size in enumerate(self.space.sizes) if size > 1]
        if not mutable:
            return genome
        flips = [i for i in mutable if self._rng.random() < self.mutation_rate]
        if force and not flips:
            flips = [mutable[int(self._rng.integers(len(mutable)))]]
        for i in flips:
            genes[i] = self._mutated_gene(i, genes[i])
        return tuple(genes)

    def _mutated_gene(self, i: int, gene: int) -> int:
        """A different value than the parent's: a small step along an ordered (continuous)
        parameter, so good regions are refined; any other value of a discrete one."""
        size = self.space.sizes[i]
        if self.space.params[i].ordered:
            scale = max(1.0, size / 10)
            step = int(round(self._rng.normal(0.0, scale))) or int(self._rng.choice([-1, 1]))
            moved = min(size - 1, max(0, gene + step))
            return moved if moved != gene else gene - step // abs(step)
        return (gene + 1 + int(self._rng.integers(size - 1))) % size

    def _unique_random_genomes(self, count: int) -> list[Genome]:
        genomes: list[Genome] = []
        room = math.prod(self.space.sizes)
        while len(genomes) < count:
            genome = self.space.random_genome(self._rng)
            if genome not in genomes or len(genomes) >= room:
                genomes.append(genome)
        return genomes


def _generation_sizes(population_size: int, decay: float, generations: int) -> list[int]:
    sizes = [population_size]
    for _ in range(generations - 1):
        sizes.append(max(2, round(sizes[-1] * decay)))
    return sizes


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TuneError(f"GeneticSearch: {name} must be an int >= {minimum}, got {value!r}")


def _check_fraction(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise TuneError(f"GeneticSearch: {name} must be a number in [0, 1], got {value!r}")
