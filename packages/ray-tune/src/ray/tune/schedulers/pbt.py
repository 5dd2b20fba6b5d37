"""Population Based Training (Jaderberg et al., 2017).

Every `perturbation_interval` time units a trial is ranked against the population:
if it is in the top `quantile_fraction`, its state is checkpointed (in memory); if it
is in the bottom one, it *exploits* a random top trial (restores its checkpoint) and
*explores* (mutates that trial's config). With more trials than resources, trials
are time-multiplexed: a trial that has just been ranked yields to waiting ones.

`synch=True` is the synchronous variant (the paper's Appendix A.1, as Ray 2.x): a trial
reaching the perturbation point pauses until every live trial has reached it; then the
whole population is ranked at once (top trials checkpointed first, then the bottom ones
cloned) and every trial continues to the next point, `perturbation_interval` later.
A trial that finishes or fails early no longer holds the others back.
"""

from __future__ import annotations

import copy
import logging
import math
import random
from collections.abc import Callable

from ray.tune.error import TuneError
from ray.tune.sample import sample_from
from ray.tune.schedulers.trial_scheduler import FIFOScheduler, TrialScheduler, init_metric
from ray.tune.suggest.variant_generator import format_vars

logger = logging.getLogger(__name__)


class _PBTTrialState:
    def __init__(self, trial):
        self.orig_tag = trial.experiment_tag
        self.last_score: float | None = None
        self.has_checkpoint = False
        self.last_perturbation_time = 0.0
        self.last_train_time = 0.0  # time_attr of the last ranked result (synch mode)


def explore(
    config: dict,
    mutations: dict,
    resample_probability: float,
    custom_explore_fn: Callable[[dict], dict] | None,
    rng: random.Random | None = None,
    factors: tuple[float, float] = (1.2, 0.8),
) -> dict:
    """Returns a mutated copy of `config` (the paper's *explore* step)."""
    rng = rng or random
    new_config = copy.deepcopy(config)
    for key, distribution in mutations.items():
        if isinstance(distribution, dict):
            new_config[key] = explore(
                config[key], distribution, resample_probability, None, rng, factors
            )
        elif isinstance(distribution, list):
            if rng.random() < resample_probability or config[key] not in distribution:
                new_config[key] = rng.choice(distribution)
            elif rng.random() > 0.5:
                new_config[key] = distribution[max(0, distribution.index(config[key]) - 1)]
            else:
                index = min(len(distribution) - 1, distribution.index(config[key]) + 1)
                new_config[key] = distribution[index]
        else:
            if rng.random() < resample_probability:
                new_config[key] = _sample(distribution)
            elif rng.random() > 0.5:
                new_config[key] = config[key] * factors[0]
            else:
                new_config[key] = config[key] * factors[1]
            if type(config[key]) is int:
                new_config[key] = int(new_config[key])
    if custom_explore_fn is not None:
        new_config = custom_explore_fn(new_config)
        if not isinstance(new_config, dict):
            raise TuneError("custom_explore_fn must return the new config dict")
    return new_config


def _sample(distribution):
    if isinstance(distribution, sample_from):
        return distribution.sample() if hasattr(distribution, "sample") else distribution.func(None)
    if callable(distribution):
        return distribution()
    raise TuneError(
        f"hyperparam_mutations values must be lists, dicts or callables, got {distribution!r}"
    )


def make_experiment_tag(orig_tag: str, config: dict, mutations: dict) -> str:
    resolved = {}
    for key in mutations:
        if key in config and not isinstance(config[key], dict):
            resolved[(key,)] = config[key]
    return f"{orig_tag}@perturbed[{format_vars(resolved)}]"


class PopulationBasedTraining(FIFOScheduler):
    """See the module docstring."""

    def __init__(
        self,
        time_attr: str = "time_total_s",
        reward_attr: str | None = None,
        metric: str | None = None,
        mode: str = "max",
        perturbation_interval: float = 60.0,
        hyperparam_mutations: dict | None = None,
        quantile_fraction: float = 0.25,
        resample_probability: float = 0.25,
        custom_explore_fn: Callable[[dict], dict] | None = None,
        log_config: bool = True,
        seed: int | None = None,
        burn_in_period: float = 0.0,
        perturbation_factors: tuple[float, float] = (1.2, 0.8),
        require_attrs: bool = False,  # 2.x defaults to True; False keeps 0.7 behaviour
        synch: bool = False,
    ):
        if not hyperparam_mutations and not custom_explore_fn:
            raise TuneError(
                "PopulationBasedTraining needs hyperparam_mutations or custom_explore_fn "
                "(or both)"
            )
        if not 0 <= quantile_fraction <= 0.5:
            raise TuneError(f"quantile_fraction must be in [0, 0.5], got {quantile_fraction}")
        if perturbation_interval <= 0:
            raise TuneError(
                f"perturbation_interval must be > 0 ({time_attr} units), got {perturbation_interval}"
            )
        init_metric(self, metric, mode, reward_attr)
        self._time_attr = time_attr
        self._perturbation_interval = perturbation_interval
        self._burn_in_period = burn_in_period  # Ray 2.x: no perturbation before this time
        self._perturbation_factors = tuple(perturbation_factors)
        self._require_attrs = require_attrs
        self._hyperparam_mutations = hyperparam_mutations or {}
        self._quantile_fraction = quantile_fraction
        self._resample_probability = resample_probability
        self._custom_explore_fn = custom_explore_fn
        self._log_config = log_config
        self._synch = synch
        # Synch mode: the time every live trial must reach before the population is ranked.
        self._next_perturbation_sync = max(perturbation_interval, burn_in_period)
        self._rng = random.Random(seed)
        self._trial_state: dict[str, _PBTTrialState] = {}
        self._trials: dict[str, object] = {}
        self._num_checkpoints = 0
        self._num_perturbations = 0
        self.config_history: dict[str, list[tuple[float, dict]]] = {}

    def on_trial_add(self, trial_runner, trial):
        self._trial_state[trial.trial_id] = _PBTTrialState(trial)
        self._trials[trial.trial_id] = trial

    def on_trial_result(self, trial_runner, trial, result):
        if self._time_attr not in result or self._metric not in result:
            if self._require_attrs and not result.get("done"):
                missing = [k for k in (self._time_attr, self._metric) if k not in result]
                raise TuneError(
                    f"PopulationBasedTraining needs {missing} in every result of {trial} "
                    f"(it reported {sorted(result)}); report them or pass require_attrs=False"
                )
            return TrialScheduler.CONTINUE
        now = result[self._time_attr]
        if now < self._burn_in_period:
            return TrialScheduler.CONTINUE
        state = self._trial_state[trial.trial_id]
        if now - state.last_perturbation_time < self._perturbation_interval:
            return TrialScheduler.CONTINUE  # avoid the checkpoint overhead
        state.last_score = self._metric_op * result[self._metric]
        state.last_train_time = now
        self._record(trial, result)
        if self._synch:
            return self._on_synch_point(trial_runner, trial, now)
        state.last_perturbation_time = now
        lower, upper = self._quantiles()
        self._checkpoint_or_exploit(trial_runner, trial, lower, upper)
        for other in trial_runner.get_trials():
            if other.status in ("PENDING", "PAUSED"):
                return TrialScheduler.PAUSE  # yield time to the waiting trials
        return TrialScheduler.CONTINUE

    def _record(self, trial, result: dict) -> None:
        """A ranked result (PB2 keeps them as its GP's data)."""

    def _checkpoint_or_exploit(self, trial_runner, trial, lower: list, upper: list) -> None:
        state = self._trial_state[trial.trial_id]
        if trial.trial_id in upper:
            if trial.status == "RUNNING":
                trial_runner.checkpoint_trial(trial)
                state.has_checkpoint = True
            else:  # paused at the sync point: its pause checkpoint is its current state
                state.has_checkpoint = trial.checkpoint is not None
            self._num_checkpoints += 1
        else:
            state.has_checkpoint = False
        if trial.trial_id in lower:
            source_id = self._rng.choice(upper)
            self._exploit(trial_runner, trial, self._trials[source_id])

    # -- synchronous PBT ---------------------------------------------------------
    def _on_synch_point(self, trial_runner, trial, now: float) -> str:
        """`trial` reached the sync point: wait for the others, or rank everyone."""
        others = [t for t in trial_runner.get_trials() if not t.is_finished() and t != trial]
        if all(self._reached_sync(t) for t in others):
            self._perturb_population(trial_runner, [trial, *others], now)
        return TrialScheduler.PAUSE  # every trial pauses at the sync point

    def _reached_sync(self, trial) -> bool:
        return self._trial_state[trial.trial_id].last_train_time >= self._next_perturbation_sync

    def _perturb_population(self, trial_runner, live: list, now: float) -> None:
        lower, upper = self._quantiles(only={t.trial_id for t in live})
        ranked = set(lower) | set(upper)
        middle = [t.trial_id for t in live if t.trial_id not in ranked]
        # The top trials are checkpointed before the bottom ones clone them.
        for trial_id in upper + middle + lower:
            self._trial_state[trial_id].last_perturbation_time = now
            self._checkpoint_or_exploit(trial_runner, self._trials[trial_id], lower, upper)
        latest = max(self._trial_state[t.trial_id].last_train_time for t in live)
        self._next_perturbation_sync = max(
            self._next_perturbation_sync + self._perturbation_interval, latest
        )

    def _release_synch_point(self, trial_runner, gone) -> None:
        """A trial left the population: the rest may all be waiting at the sync point."""
        if not self._synch:
            return
        live = [t for t in trial_runner.get_trials() if not t.is_finished() and t != gone]
        if live and all(self._reached_sync(t) and t.status != "RUNNING" for t in live):
            now = max(self._trial_state[t.trial_id].last_train_time for t in live)
            self._perturb_population(trial_runner, live, now)

    def on_trial_complete(self, trial_runner, trial, result):
        self._release_synch_point(trial_runner, trial)

    def on_trial_error(self, trial_runner, trial):
        self._release_synch_point(trial_runner, trial)

    def on_trial_remove(self, trial_runner, trial):
        self._release_synch_point(trial_runner, trial)

    def _exploit(self, trial_runner, trial, source) -> None:
        trial_state = self._trial_state[trial.trial_id]
        source_state = self._trial_state[source.trial_id]
        if not source_state.has_checkpoint:
            logger.debug("[pbt] no checkpoint for %s yet: skipping the exploit of %s", source, trial)
            return
        new_config = self._new_config(trial, source)
        new_tag = make_experiment_tag(trial_state.orig_tag, new_config, self._hyperparam_mutations)
        if not trial_runner.exploit_trial(trial, source, new_config, new_tag):
            return
        logger.debug("[exploit] %s clones %s with config %s", trial, source, new_config)
        if self._log_config:
            self.config_history.setdefault(trial.trial_id, []).append(
                (source_state.last_perturbation_time, new_config)
            )
        self._num_perturbations += 1
        trial_state.last_perturbation_time = source_state.last_perturbation_time
        trial_state.last_train_time = source_state.last_train_time

    def _new_config(self, trial, source) -> dict:
        """The *explore* step: a mutation of `source`'s config (PB2 overrides it)."""
        return explore(
            source.config, self._hyperparam_mutations, self._resample_probability,
            self._custom_explore_fn, self._rng, self._perturbation_factors,
        )

    def _quantiles(self, only: set[str] | None = None) -> tuple[list[str], list[str]]:
        """(bottom, top) trial ids by last score; `only` limits the ranking to those ids
        (a trial that is leaving is not finished yet while the scheduler hears of it)."""
        ranked = [
            tid
            for tid, state in self._trial_state.items()
            if state.last_score is not None and not self._trials[tid].is_finished()
            and (only is None or tid in only)
        ]
        ranked.sort(key=lambda tid: self._trial_state[tid].last_score)
        if len(ranked) <= 1:
            return [], []
        count = int(math.ceil(len(ranked) * self._quantile_fraction))
        count = min(count, len(ranked) // 2)
        if count == 0:
            return [], []
        return ranked[:count], ranked[-count:]

    def choose_trial_to_run(self, trial_runner):
        candidates = [
            t
            for t in trial_runner.get_trials()
            if t.status in ("PENDING", "PAUSED") and trial_runner.has_resources(t.resources)
            and not (self._synch and self._reached_sync(t))  # waits for the population
        ]
        key = "last_train_time" if self._synch else "last_perturbation_time"
        candidates.sort(key=lambda t: getattr(self._trial_state[t.trial_id], key))
        return candidates[0] if candidates else None

    def debug_string(self) -> str:
        return (
            f"{type(self).__name__}: {self._num_checkpoints} checkpoints, "
            f"{self._num_perturbations} perturbs"
        )
