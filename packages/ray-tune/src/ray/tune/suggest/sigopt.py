"""SigOptSearch: the SigOpt service (`pip install sigopt`, and the SIGOPT_KEY env var)."""

from __future__ import annotations

import copy
import os

from ray.tune.error import TuneError
from ray.tune.suggest._optional import require
from ray.tune.suggest.search import resolve_metric
from ray.tune.suggest.suggestion import SuggestionAlgorithm


class SigOptSearch(SuggestionAlgorithm):
    """Suggestions from a SigOpt experiment created over `space` (SigOpt's parameter list).

    `max_concurrent` becomes the experiment's parallel bandwidth (limited by the plan).
    `connection` may be given (an object with SigOpt's `experiments()` API) instead of
    building one from SIGOPT_KEY.
    """

    def __init__(
        self,
        space: list[dict],
        name: str = "Default Tune Experiment",
        max_concurrent: int = 1,
        reward_attr: str | None = None,
        metric: str | None = "episode_reward_mean",
        mode: str = "max",
        connection=None,
        **kwargs,
    ):
        if connection is None:
            sgo = require("sigopt", "sigopt", "SigOptSearch")
            key = os.environ.get("SIGOPT_KEY")
            if not key:
                raise TuneError("SigOptSearch needs the SIGOPT_KEY environment variable")
            connection = sgo.Connection(client_token=key)
        self._metric, mode = resolve_metric(metric, mode, reward_attr)
        self._metric_op = 1.0 if mode == "max" else -1.0
        self.conn = connection
        self.experiment = self.conn.experiments().create(
            name=name, parameters=space, parallel_bandwidth=max_concurrent
        )
        self._live_trial_mapping: dict = {}
        super().__init__(max_concurrent=max_concurrent, **kwargs)

    def _suggest(self, trial_id: str) -> dict:
        suggestion = self.conn.experiments(self.experiment.id).suggestions().create()
        self._live_trial_mapping[trial_id] = suggestion
        return copy.deepcopy(dict(suggestion.assignments))

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        suggestion = self._live_trial_mapping.pop(trial_id, None)
        if suggestion is None:
            return
        observations = self.conn.experiments(self.experiment.id).observations()
        if error or not result or self._metric not in result:
            observations.create(failed=True, suggestion=suggestion.id)
        else:
            observations.create(suggestion=suggestion.id, value=self._metric_op * result[self._metric])
