"""`TuneBOHB`: the Bayesian-optimization half of BOHB (Falkner et al., 2018), as in Ray.

Use it with `HyperBandForBOHB`, which reports each trial's result at a bracket
milestone with `hyperband_info = {"budget": b}`. The model is HpBandSter's BOHB
config generator, written here on numpy/scipy over a ConfigSpace search space:

* results are kept per budget; once a budget has more than `min_points_in_model`
  (default: number of hyperparameters + 1) results, two kernel density estimates are
  fitted in the space's unit-cube encoding: l(x) over the best `top_n_percent` of the
  configs and g(x) over the rest (Gaussian kernels for numbers, Aitchison-Aitken for
  categories, normal-reference bandwidths floored at `min_bandwidth`);
* a suggestion comes from the model of the largest budget that has one: `num_samples`
  candidates are drawn around good configs (bandwidths widened by `bandwidth_factor`)
  and the one with the smallest g(x)/l(x) is taken; a `random_fraction` of suggestions
  (and every one before a model exists) is sampled from the space instead.

The space is a `ConfigSpace.ConfigurationSpace`, or Tune domains (`tune.uniform`,
`loguniform`, `randint`, `choice`, ... in a nested dict) converted to one, from
`space=` or from the Tuner's `param_space`.
"""

from __future__ import annotations

import copy
import logging
import math
from typing import Any

import numpy as np

from ray.tune.error import TuneError
from ray.tune.search.searcher import Searcher

logger = logging.getLogger(__name__)

_BOHB_CONFIG_KEYS = ("min_points_in_model", "top_n_percent", "num_samples", "random_fraction",
                     "bandwidth_factor", "min_bandwidth")


def _config_space():
    try:
        import ConfigSpace
    except ImportError as exc:
        raise TuneError(
            "TuneBOHB needs ConfigSpace: pip install ConfigSpace (or 'ray-tune[search]')"
        ) from exc
    return ConfigSpace


class _KDE:
    """A product-kernel density over unit-cube vectors (statsmodels' KDEMultivariate with
    `bw="normal_reference"`, which HpBandSter's BOHB uses)."""

    def __init__(self, data: np.ndarray, num_choices: np.ndarray, min_bandwidth: float):
        self.data = data
        self.num_choices = num_choices  # 0: continuous; k: a category among k
        n, d = data.shape
        bandwidth = 1.06 * np.std(data, axis=0) * n ** (-1.0 / (4 + d))
        # A category's bandwidth is the probability of "some other category": beyond
        # (k-1)/k the kernel would favour the other categories (or turn negative).
        ceiling = np.where(num_choices > 0, (num_choices - 1) / np.maximum(num_choices, 1), np.inf)
        self.bandwidth = np.minimum(np.clip(bandwidth, min_bandwidth, None), ceiling)

    def pdf(self, x: np.ndarray) -> float:
        per_dim = np.empty_like(self.data)
        for j, k in enumerate(self.num_choices):
            bw = self.bandwidth[j]
            if k == 0:
                z = (x[j] - self.data[:, j]) / bw
                per_dim[:, j] = np.exp(-0.5 * z * z) / (math.sqrt(2 * math.pi) * bw)
            else:  # Aitchison-Aitken: 1 - bw on the same category, bw / (k - 1) elsewhere
                same = np.isclose(self.data[:, j], x[j])
                per_dim[:, j] = np.where(same, 1 - bw, bw / max(k - 1, 1))
        return float(np.mean(np.prod(per_dim, axis=1)))


class BOHBModel:
    """HpBandSter's BOHB config generator: results in, configurations out (see the module
    docstring). Pure: its randomness comes from `seed`."""

    def __init__(
        self,
        space,
        *,
        min_points_in_model: int | None = None,
        top_n_percent: int = 15,
        num_samples: int = 64,
        random_fraction: float = 1 / 3,
        bandwidth_factor: float = 3,
        min_bandwidth: float = 1e-3,
        seed: int | None = None,
    ):
        self.space = space
        self.hyperparameters = list(space.values())
        dims = len(self.hyperparameters)
        self.min_points_in_model = max(min_points_in_model or 0, dims + 1)
        self.top_n_percent = top_n_percent
        self.num_samples = num_samples
        self.random_fraction = random_fraction
        self.bandwidth_factor = bandwidth_factor
        self.min_bandwidth = min_bandwidth
        self.num_choices = np.array(
            [len(hp.choices) if hasattr(hp, "choices") else 0 for hp in self.hyperparameters]
        )
        for hp in self.hyperparameters:
            if hasattr(hp, "sequence"):
                raise TuneError(
                    f"TuneBOHB does not support ordinal hyperparameters ({hp.name}): encode it "
                    "as an integer hyperparameter"
                )
        self.rng = np.random.default_rng(seed)
        self.vectors: dict[float, list[np.ndarray]] = {}
        self.losses: dict[float, list[float]] = {}
        self.models: dict[float, tuple[_KDE, _KDE]] = {}

    # -- results -------------------------------------------------------------------
    def new_result(self, config: dict, budget: float, loss: float) -> None:
        """Records the loss (lower is better) of `config` at `budget`; refits that budget."""
        if not np.isfinite(loss):
            loss = np.inf  # a failed or non-numeric result counts as a bad configuration
        self.vectors.setdefault(budget, [])
        self.losses.setdefault(budget, [])
        if self.models and max(self.models) > budget:
            return  # a larger budget already has a model: this one is never used again
        Configuration = _config_space().Configuration
        self.vectors[budget].append(Configuration(self.space, values=config).get_array())
        self.losses[budget].append(loss)
        self._fit(budget)

    def _fit(self, budget: float) -> None:
        vectors, losses = np.array(self.vectors[budget]), np.array(self.losses[budget])
        if len(losses) <= self.min_points_in_model - 1:
            return
        n_good = max(self.min_points_in_model, (self.top_n_percent * len(losses)) // 100)
        n_bad = max(self.min_points_in_model, ((100 - self.top_n_percent) * len(losses)) // 100)
        order = np.argsort(losses, kind="stable")
        good = self._impute(vectors[order[:n_good]])
        bad = self._impute(vectors[order[n_good:n_good + n_bad]])
        if good.shape[0] <= good.shape[1] or bad.shape[0] <= bad.shape[1]:
            return  # too few points for a density in this many dimensions
        self.models[budget] = (
            _KDE(good, self.num_choices, self.min_bandwidth),
            _KDE(bad, self.num_choices, self.min_bandwidth),
        )

    def _impute(self, vectors: np.ndarray) -> np.ndarray:
        """Inactive (conditional) values are NaN in the encoding: fill them randomly."""
        vectors = vectors.copy()
        for j, k in enumerate(self.num_choices):
            missing = ~np.isfinite(vectors[:, j])
            if missing.any():
                fill = self.rng.integers(k, size=missing.sum()) if k else self.rng.random(missing.sum())
                vectors[missing, j] = fill
        return vectors

    # -- suggestions -----------------------------------------------------------------
    def get_config(self) -> dict:
        if not self.models or self.rng.random() < self.random_fraction:
            return self._sample_space()
        good, bad = self.models[max(self.models)]
        best, best_vector = math.inf, None
        for _ in range(self.num_samples):
            datum = good.data[self.rng.integers(len(good.data))]
            vector = self._perturb(datum, good.bandwidth)
            ratio = max(1e-32, bad.pdf(vector)) / max(good.pdf(vector), 1e-32)
            if ratio < best:
                best, best_vector = ratio, vector
        if best_vector is None:
            return self._sample_space()
        return self._decode(best_vector)

    def _perturb(self, datum: np.ndarray, bandwidths: np.ndarray) -> np.ndarray:
        from scipy.stats import truncnorm

        vector = np.empty_like(datum)
        for j, (m, k) in enumerate(zip(datum, self.num_choices)):
            bw = max(bandwidths[j], self.min_bandwidth)
            if k == 0:
                bw *= self.bandwidth_factor
                vector[j] = truncnorm.rvs(-m / bw, (1 - m) / bw, loc=m, scale=bw,
                                          random_state=self.rng)
            elif self.rng.random() < 1 - bw:
                vector[j] = m
            else:
                vector[j] = self.rng.integers(k)
        return vector

    def _sample_space(self) -> dict:
        self.space.seed(int(self.rng.integers(2**31 - 1)))
        return _native(dict(self.space.sample_configuration()))

    def _decode(self, vector: np.ndarray) -> dict:
        cs = _config_space()
        vector = vector.copy()
        categorical = self.num_choices > 0
        vector[categorical] = np.rint(vector[categorical])
        config = cs.Configuration(self.space, vector=vector)
        try:
            config = cs.util.deactivate_inactive_hyperparameters(dict(config), self.space)
        except Exception:  # noqa: BLE001 - an invalid combination: fall back to a sample
            logger.debug("BOHB: the model's pick %s is not a valid configuration", vector)
            return self._sample_space()
        return _native(dict(config))


def _native(config: dict) -> dict:
    """ConfigSpace hands out numpy scalars; trial configs hold plain Python values."""
    return {k: v.item() if isinstance(v, np.generic) else v for k, v in config.items()}


class TuneBOHB(Searcher):
    """BOHB's searcher; pair it with `HyperBandForBOHB`.

    Ray 2.x: `TuneBOHB(space=None, bohb_config=None, metric=None, mode=None,
    points_to_evaluate=None, seed=None, max_concurrent=0)`. Ray 0.7:
    `TuneBOHB(space, bohb_config=None, max_concurrent=10, metric="neg_mean_loss",
    mode="max")` (an int third argument is read as 0.7's `max_concurrent`).
    `bohb_config` takes HpBandSter's BOHB options: min_points_in_model, top_n_percent,
    num_samples, random_fraction, bandwidth_factor, min_bandwidth. `max_concurrent`
    (<= 0: no limit) counts running trials only: paused trials leave room for new ones.
    """

    def __init__(
        self,
        space: Any = None,
        bohb_config: dict | None = None,
        metric: str | None = None,
        mode: str | None = None,
        points_to_evaluate: list[dict] | None = None,
        seed: int | None = None,
        max_concurrent: int = 0,
    ):
        if isinstance(metric, int) and not isinstance(metric, bool):  # the 0.7 argument order
            max_concurrent, metric, mode, points_to_evaluate = metric, mode, points_to_evaluate, None
        if mode not in (None, "max", "min"):
            raise TuneError(f"TuneBOHB(mode={mode!r}): mode must be 'max' or 'min'")
        unknown = sorted(set(bohb_config or {}) - set(_BOHB_CONFIG_KEYS))
        if unknown:
            raise TuneError(f"TuneBOHB(bohb_config=...) got unknown keys {unknown}; known: "
                            f"{list(_BOHB_CONFIG_KEYS)}")
        super().__init__(metric=metric, mode=mode)
        self._bohb_config = dict(bohb_config or {})
        self._seed = seed
        self._max_concurrent_running = max_concurrent
        self._points_to_evaluate = [dict(p) for p in points_to_evaluate or []]
        self.trial_to_params: dict[str, dict] = {}
        self.running: set[str] = set()
        self.paused: set[str] = set()
        self._space = None
        self.bohber: BOHBModel | None = None
        if space is not None:
            self._setup(space)

    def _setup(self, space: Any) -> None:
        cs = _config_space()
        if isinstance(space, dict):
            space = convert_search_space(space)
        elif not isinstance(space, cs.ConfigurationSpace):
            raise TuneError(
                f"TuneBOHB(space=...) takes a ConfigSpace.ConfigurationSpace or a dict of Tune "
                f"domains, got {type(space).__name__}"
            )
        self._space = space
        self.bohber = BOHBModel(space, seed=self._seed, **self._bohb_config)

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        self._max_concurrent_running = max_concurrent
        return True

    def set_search_properties(self, metric, mode, config=None, **spec) -> bool:
        super().set_search_properties(metric, mode)
        if self._space is None and config:
            self._setup(config)
        return True

    def suggest(self, trial_id: str) -> dict | None:
        if self.bohber is None:
            raise TuneError(
                "TuneBOHB has no search space: pass TuneBOHB(space=ConfigurationSpace or a dict of "
                "Tune domains) or Tuner(param_space={...: tune.uniform(...)})"
            )
        limit = self._max_concurrent_running
        if limit > 0 and len(self.running) >= limit:
            return None
        if self._points_to_evaluate:
            config = self._points_to_evaluate.pop(0)
        else:
            config = self.bohber.get_config()
        self.trial_to_params[trial_id] = copy.deepcopy(config)
        self.running.add(trial_id)
        return _unflatten(config)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if trial_id not in self.paused:
            self.running.add(trial_id)
        budget = (result.get("hyperband_info") or {}).get("budget")
        if "hyperband_info" not in result:
            logger.warning("TuneBOHB: no hyperband_info in the result; use HyperBandForBOHB as "
                           "the scheduler")
        if budget is None or trial_id not in self.trial_to_params:
            return
        metric, sign = self._objective()
        if metric not in result:
            raise TuneError(f"TuneBOHB: metric {metric!r} is not in the result of trial {trial_id} "
                            f"(fields: {sorted(result)}); report it or fix metric=")
        self.bohber.new_result(self.trial_to_params[trial_id], budget, sign * float(result[metric]))

    def _objective(self) -> tuple[str, float]:
        """The metric and the sign that turns it into BOHB's loss (0.7 defaults if unset)."""
        metric = self._metric or "neg_mean_loss"
        return metric, -1.0 if (self._mode or "max") == "max" else 1.0

    def on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        self._live_trial_ids.discard(trial_id)
        self.trial_to_params.pop(trial_id, None)
        self.paused.discard(trial_id)
        self.running.discard(trial_id)

    def on_pause(self, trial_id: str) -> None:
        self.paused.add(trial_id)
        self.running.discard(trial_id)

    def on_unpause(self, trial_id: str) -> None:
        self.paused.discard(trial_id)
        self.running.add(trial_id)

    @staticmethod
    def convert_search_space(spec: dict):
        return convert_search_space(spec)


def _unflatten(config: dict) -> dict:
    """`{"a/b": 1}` (names of converted nested domains) -> `{"a": {"b": 1}}`."""
    out: dict = {}
    for key, value in config.items():
        node = out
        parts = key.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def convert_search_space(spec: dict, prefix: str = ""):
    """Tune domains in a (nested) dict as a ConfigurationSpace; constants are left out."""
    cs = _config_space()
    space = cs.ConfigurationSpace()
    for _name, hp in _hyperparameters(spec, prefix, cs):
        space.add(hp)
    return space


def _hyperparameters(spec: dict, prefix: str, cs):
    from ray.tune.sample import Domain, sample_from

    for key, value in spec.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and "grid_search" in value:
            raise TuneError(f"param_space[{name!r}] is a grid_search: TuneBOHB cannot search a "
                            "grid; use tune.choice([...])")
        if isinstance(value, dict):
            yield from _hyperparameters(value, f"{name}/", cs)
            continue
        if not isinstance(value, Domain):
            if isinstance(value, sample_from):
                raise TuneError(f"param_space[{name!r}] is a sample_from function: TuneBOHB needs "
                                "a domain it can model (tune.uniform, loguniform, randint, choice)")
            continue
        p = value.params
        if p.get("q") is not None:
            logger.warning("TuneBOHB does not support quantization: dropped it for %r", name)
        if value.kind in ("uniform", "loguniform"):
            yield name, cs.UniformFloatHyperparameter(
                name, lower=p["lower"], upper=p["upper"], log=value.kind == "loguniform")
        elif value.kind in ("randint", "lograndint"):  # Tune's upper bound is exclusive
            yield name, cs.UniformIntegerHyperparameter(
                name, lower=p["lower"], upper=p["upper"] - 1, log=value.kind == "lograndint")
        elif value.kind == "choice":
            yield name, cs.CategoricalHyperparameter(name, choices=list(p["categories"]))
        else:
            raise TuneError(f"param_space[{name!r}] = {value!r}: TuneBOHB has no bounded "
                            "equivalent; use tune.uniform/loguniform/randint/choice")
