"""SkOptSearch: scikit-optimize's ask/tell `Optimizer` (`pip install scikit-optimize`)."""

from __future__ import annotations

from ray.tune.error import TuneError
from ray.tune.suggest._optional import require, to_builtin
from ray.tune.suggest.search import resolve_metric
from ray.tune.suggest.suggestion import SuggestionAlgorithm


class SkOptSearch(SuggestionAlgorithm):
    """Asks `optimizer` (a `skopt.Optimizer`) for points named by `parameter_names`.

    `points_to_evaluate` are tried first; with `evaluated_rewards` they are only told
    to the optimizer (already known results, not re-run).
    """

    def __init__(
        self,
        optimizer,
        parameter_names: list[str],
        max_concurrent: int | None = 10,
        reward_attr: str | None = None,
        metric: str | None = "episode_reward_mean",
        mode: str = "max",
        points_to_evaluate: list | None = None,
        evaluated_rewards: list | None = None,
        **kwargs,
    ):
        require("skopt", "scikit-optimize", "SkOptSearch")
        self._metric, mode = resolve_metric(metric, mode, reward_attr)
        self._metric_op = 1.0 if mode == "max" else -1.0
        self._skopt_opt = optimizer
        self._parameters = list(parameter_names)
        points = list(points_to_evaluate or [])
        if points and not isinstance(points[0], (list, tuple)):
            points = [points]
        for point in points:
            if len(point) != len(self._parameters):
                raise TuneError(
                    f"point {point} has {len(point)} values for {len(self._parameters)} parameters"
                )
        self._initial_points: list = []
        if evaluated_rewards:
            if len(evaluated_rewards) != len(points):
                raise TuneError("evaluated_rewards needs one reward per point in points_to_evaluate")
            # skopt minimises.
            self._skopt_opt.tell(points, [-self._metric_op * r for r in evaluated_rewards])
        else:
            self._initial_points = points
        self._live_trial_mapping: dict[str, list] = {}
        super().__init__(max_concurrent=max_concurrent, **kwargs)

    def _suggest(self, trial_id: str) -> dict:
        if self._initial_points:
            point = list(self._initial_points.pop(0))
        else:
            point = [to_builtin(v) for v in self._skopt_opt.ask()]
        self._live_trial_mapping[trial_id] = point
        return dict(zip(self._parameters, point))

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        point = self._live_trial_mapping.pop(trial_id, None)
        if point is None or error or not result or self._metric not in result:
            return
        self._skopt_opt.tell(point, -self._metric_op * result[self._metric])
