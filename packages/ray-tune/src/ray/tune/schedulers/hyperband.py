"""Synchronous HyperBand (Li et al., 2016) with Tune's bracket details.

`max_t` caps the time units a trial may run (not the paper's `R`); `eta` is
`reduction_factor` (3), a band has `s_max + 1 = round(log_eta(max_t)) + 1` brackets
(5 for max_t=81) and bracket `s` takes `n_0 = ceil((s_max + 1) / (s + 1) * eta**s)`
trials, each first run for `r_0 = max_t * eta**-s`. Trials fill the smaller brackets
first. A trial that reaches its bracket's milestone is paused (its resources freed);
when every live trial of the bracket reached it, the bottom trials are stopped and the
top `1/eta` continue. Trials are chosen from the least-complete bracket first. Needs
checkpointable trainables (pausing). `stop_last_trials=False` (Ray 2.x) lets the last
bracket's survivors run on past `max_t` (until the experiment's own stop criteria).
"""

from __future__ import annotations

import collections
import math

from ray.tune.error import TuneError
from ray.tune.schedulers.trial_scheduler import FIFOScheduler, TrialScheduler, init_metric


class HyperBandScheduler(FIFOScheduler):
    """See the module docstring."""

    def __init__(
        self,
        time_attr: str = "training_iteration",
        reward_attr: str | None = None,
        metric: str | None = None,
        mode: str = "max",
        max_t: int = 81,
        reduction_factor: float = 3,
        stop_last_trials: bool = True,
    ):
        if max_t <= 0:
            raise TuneError(f"{type(self).__name__}(max_t={max_t}): max_t must be > 0")
        if reduction_factor <= 1:
            raise TuneError(
                f"{type(self).__name__}(reduction_factor={reduction_factor}): must be > 1"
            )
        init_metric(self, metric, mode, reward_attr)
        self._eta = reduction_factor
        self._s_max_1 = int(round(math.log(max_t) / math.log(reduction_factor))) + 1
        self._stop_last_trials = stop_last_trials
        self._max_t_attr = max_t
        self._time_attr = time_attr
        self._hyperbands: list[list[Bracket]] = [[]]
        self._trial_info: dict[str, tuple[Bracket, int]] = {}
        self._state: dict = {"bracket": None, "band_idx": 0}
        self._num_stopped = 0

    def _n0(self, s: int) -> int:
        return int(math.ceil(self._s_max_1 / (s + 1) * self._eta**s))

    def _r0(self, s: int) -> int:
        return int(self._max_t_attr * self._eta ** (-s))

    def _next_s(self, band: list) -> int:
        """The `s` of the next bracket of a band: smallest brackets first."""
        return len(band)

    def on_trial_add(self, trial_runner, trial):
        cur_bracket = self._state["bracket"]
        cur_band = self._hyperbands[self._state["band_idx"]]
        if cur_bracket is None or cur_bracket.filled():
            while True:
                if len(cur_band) == self._s_max_1:  # the band is full: start the next one
                    cur_band = []
                    self._hyperbands.append(cur_band)
                    self._state["band_idx"] += 1
                s = self._next_s(cur_band)
                if self._r0(s) == 0:  # too small for max_t: this bracket gets nothing
                    cur_band.append(None)
                    continue
                cur_bracket = Bracket(
                    self._time_attr, self._n0(s), self._r0(s), self._max_t_attr, self._eta, s,
                    stop_last_trials=self._stop_last_trials,
                )
                cur_band.append(cur_bracket)
                self._state["bracket"] = cur_bracket
                break
        self._state["bracket"].add_trial(trial)
        self._trial_info[trial.trial_id] = (self._state["bracket"], self._state["band_idx"])

    def on_trial_result(self, trial_runner, trial, result):
        bracket, _ = self._trial_info[trial.trial_id]
        bracket.update_trial_stats(trial, result)
        if bracket.continue_trial(trial):
            return TrialScheduler.CONTINUE
        return self._process_bracket(trial_runner, bracket, trial)

    def _process_bracket(self, trial_runner, bracket, trial) -> str:
        action = TrialScheduler.PAUSE
        if bracket.cur_iter_done():
            if bracket.finished():
                bracket.cleanup_full(trial_runner)
                return TrialScheduler.STOP
            good, bad = bracket.successive_halving(self._metric, self._metric_op)
            self._num_stopped += len(bad)
            for t in bad:
                if t.status == "PAUSED":
                    trial_runner.stop_trial(t)
                    bracket.cleanup_trial(t)
                elif t is trial or t == trial:
                    bracket.cleanup_trial(t)
                    action = TrialScheduler.STOP
                else:  # running elsewhere: it is stopped when its next result arrives
                    bracket.cleanup_trial(t)
                    trial_runner.stop_trial(t)
            for t in good:
                if bracket.continue_trial(t):
                    if t.status == "PAUSED":
                        trial_runner.unpause_trial(t)
                    elif t == trial:
                        action = TrialScheduler.CONTINUE
        return action

    def on_trial_remove(self, trial_runner, trial):
        info = self._trial_info.get(trial.trial_id)
        if info is None:
            return
        bracket, _ = info
        if bracket.has_trial(trial):
            bracket.cleanup_trial(trial)
        if not bracket.finished() and bracket.current_trials():
            self._process_bracket(trial_runner, bracket, trial)

    def on_trial_complete(self, trial_runner, trial, result):
        self.on_trial_remove(trial_runner, trial)

    def on_trial_error(self, trial_runner, trial):
        self.on_trial_remove(trial_runner, trial)

    def choose_trial_to_run(self, trial_runner):
        for band in self._hyperbands:
            brackets = [b for b in band if b is not None]
            for bracket in sorted(brackets, key=lambda b: b.completion_percentage()):
                for trial in bracket.current_trials():
                    if trial.status == "PENDING" and trial_runner.has_resources(trial.resources):
                        return trial
                for trial in bracket.current_trials():
                    if (
                        trial.status == "PAUSED"
                        and bracket.continue_trial(trial)
                        and trial_runner.has_resources(trial.resources)
                    ):
                        return trial
        return None

    def debug_string(self) -> str:
        out = f"Using HyperBand: num_stopped={self._num_stopped} total_brackets="
        out += str(sum(len(band) for band in self._hyperbands))
        for i, band in enumerate(self._hyperbands):
            out += f"\nRound #{i}:"
            for bracket in band:
                out += f"\n  {bracket}"
        return out


class Bracket:
    """Trials of one bracket and its successive-halving state."""

    def __init__(self, time_attr, max_trials, init_t_attr, max_t_attr, eta, s, stop_last_trials=True):
        self._live_trials: dict = {}  # trial view -> last result
        self._all_trials: list = []
        self._time_attr = time_attr
        self._n = self._n0 = max_trials
        self._r = self._r0 = init_t_attr
        self._max_t_attr = max_t_attr
        self._cumul_r = self._r0
        self._eta = eta
        self._halves = s
        self._total_work = self._calculate_total_work(self._n0, self._r0, s)
        self._completed_progress = 0.0
        self.stop_last_trials = stop_last_trials

    def add_trial(self, trial) -> None:
        if self.filled():
            raise RuntimeError("cannot add a trial to a filled bracket")
        self._live_trials[trial] = None
        self._all_trials.append(trial)

    def has_trial(self, trial) -> bool:
        return trial in self._live_trials

    def cur_iter_done(self) -> bool:
        return all(self._time(r) >= self._cumul_r for r in self._live_trials.values())

    def finished(self) -> bool:
        if not self.stop_last_trials:
            return False  # the survivors run on: only the experiment's stop ends them
        return self._halves == 0 and self.cur_iter_done()

    def current_trials(self) -> list:
        return list(self._live_trials)

    def continue_trial(self, trial) -> bool:
        if self._halves == 0 and not self.stop_last_trials:
            return True
        return self._time(self._live_trials[trial]) < self._cumul_r

    def filled(self) -> bool:
        return len(self._all_trials) >= self._n0

    def successive_halving(self, metric: str, metric_op: float):
        if self._halves == 0:  # stop_last_trials=False: every survivor continues
            return list(self._live_trials), []
        self._halves -= 1
        self._n = int(math.ceil(self._n / self._eta))
        self._r *= self._eta
        self._r = int(min(self._r, self._max_t_attr - self._cumul_r))
        self._cumul_r += self._r
        ranked = sorted(
            self._live_trials,
            key=lambda t: metric_op * (self._live_trials[t] or {}).get(metric, -math.inf),
        )
        return ranked[-self._n :], ranked[: -self._n]

    def update_trial_stats(self, trial, result: dict) -> None:
        delta = self._time(result) - self._time(self._live_trials[trial])
        self._completed_progress += max(delta, 0)
        self._live_trials[trial] = result

    def cleanup_trial(self, trial) -> None:
        self._live_trials.pop(trial, None)

    def cleanup_full(self, trial_runner) -> None:
        for trial in self.current_trials():
            if trial.status == "PAUSED":
                trial_runner.stop_trial(trial)

    def completion_percentage(self) -> float:
        if self._total_work == 0:
            return 0.0
        return self._completed_progress / self._total_work

    def _time(self, result) -> float:
        if result is None:
            return 0
        return result.get(self._time_attr, 0)

    def _calculate_total_work(self, n, r, s) -> int:
        work = 0
        cumulative_r = r
        for _ in range(s + 1):
            work += int(n) * int(r)
            n = int(math.ceil(n / self._eta))
            r *= self._eta
            r = int(min(r, self._max_t_attr - cumulative_r))
            cumulative_r += r
        return work

    def __repr__(self) -> str:
        status = (
            f"Max Size (n)={self._n}, Milestone (r)={self._cumul_r}, "
            f"completed={self.completion_percentage():.1%}"
        )
        counts = collections.Counter(t.status for t in self._all_trials)
        statuses = ", ".join(sorted(f"{k}: {v}" for k, v in counts.items()))
        return f"Bracket({status}): {{{statuses}}}"
