"""PB2's model: a time-varying Gaussian process and a batch GP-UCB step (Parker-Holder et
al., 2020, "Provably Efficient Online Hyperparameter Optimization with Population-Based
Bandits"). Pure numpy/scipy/scikit-learn: data in, a hyperparameter vector out.

The GP predicts the *improvement rate* of a trial, dR/dt over the last perturbation
interval, from x = (t, R_before, hyperparameters). Its kernel multiplies a squared
exponential over (R_before, hyperparameters) by (1 - epsilon)^(|t - t'| / 2), so older
observations count less (TV-GP-UCB, Bogunovic et al., 2016). To choose a config for a
trial that has just cloned another one, t and R_before are fixed to the clone's values
and the hyperparameters maximise

    UCB(h) = mu(h) + sqrt(beta_t) * sigma(h),   beta_t = 0.2 + log(0.4 * n)

with mu from the GP on the data and sigma from a GP that also holds the configs already
chosen in this round (with dummy labels: the variance does not depend on labels), so a
batch of trials spreads out instead of all taking the same point (Desautels et al., 2014).
Ray's implementation adds kappa * sigma**2; this one uses sigma, as the paper does.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

_MIN_POINTS_FOR_LENGTH_SEARCH = 200


class TimeVaryingSquaredExp(Kernel):
    """k(x, x') = variance * exp(-|s - s'|^2 / lengthscale) * (1 - epsilon)^(|t - t'| / 2),
    with t = x[0] and s = x[1:]."""

    def __init__(self, variance=1.0, lengthscale=1.0, epsilon=0.1,
                 variance_bounds=(1e-5, 1e5), lengthscale_bounds=(1e-5, 1e5),
                 epsilon_bounds=(1e-5, 0.5)):
        self.variance = variance
        self.lengthscale = lengthscale
        self.epsilon = epsilon
        self.variance_bounds = variance_bounds
        self.lengthscale_bounds = lengthscale_bounds
        self.epsilon_bounds = epsilon_bounds

    @property
    def hyperparameter_variance(self):
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    @property
    def hyperparameter_lengthscale(self):
        return Hyperparameter("lengthscale", "numeric", self.lengthscale_bounds)

    @property
    def hyperparameter_epsilon(self):
        return Hyperparameter("epsilon", "numeric", self.epsilon_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        X = np.atleast_2d(X)
        Y = X if Y is None else np.atleast_2d(Y)
        epsilon = float(np.clip(self.epsilon, 1e-5, 0.5))
        time_gap = np.abs(X[:, :1] - Y[:, :1].T)
        decay = (1 - epsilon) ** (0.5 * time_gap)
        diff = X[:, None, 1:] - Y[None, :, 1:]
        sq_dist = np.einsum("ijk,ijk->ij", diff, diff)
        rbf = self.variance * np.exp(-sq_dist / self.lengthscale)
        K = rbf * decay
        if not eval_gradient:
            return K
        # Gradients with respect to log(variance), log(lengthscale), log(epsilon).
        d_variance = K
        d_lengthscale = K * sq_dist / self.lengthscale
        d_epsilon = -K * (time_gap / 2) * epsilon / (1 - epsilon)
        return K, np.dstack([d_variance, d_lengthscale, d_epsilon])

    def diag(self, X):
        return np.full(np.atleast_2d(X).shape[0], self.variance, dtype=np.float64)

    def is_stationary(self):
        return False

    @property
    def theta(self):
        return np.log([self.variance, self.lengthscale, self.epsilon])

    @theta.setter
    def theta(self, theta):
        self.variance, self.lengthscale, self.epsilon = np.exp(theta)

    @property
    def bounds(self):
        return np.log([list(self.variance_bounds), list(self.lengthscale_bounds),
                       list(self.epsilon_bounds)])


def normalize(data: np.ndarray, wrt: np.ndarray) -> np.ndarray:
    """Scales columns to [0, 1] by the column-wise min and max of `wrt`."""
    low, high = np.min(wrt, axis=0), np.max(wrt, axis=0)
    return (data - low) / (high - low + 1e-8)


def standardize(data: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance, clipped to [-2, 2] (outlying rewards do not dominate)."""
    return np.clip((data - np.mean(data, axis=0)) / (np.std(data, axis=0) + 1e-8), -2, 2)


def _fit_gp(X: np.ndarray, y: np.ndarray, seed: int) -> GaussianProcessRegressor:
    for alpha in (1e-10, 1e-6, 1e-3):  # more jitter if the kernel matrix is singular
        gp = GaussianProcessRegressor(kernel=TimeVaryingSquaredExp(), optimizer="fmin_l_bfgs_b",
                                      alpha=alpha, random_state=seed)
        try:
            with warnings.catch_warnings():
                # Noisy rewards often put a kernel parameter at its bound; the fit is still
                # the best within the bounds, which is all the acquisition needs.
                warnings.simplefilter("ignore", ConvergenceWarning)
                return gp.fit(X, y)
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("PB2: the GP's kernel matrix stays singular")


def _select_length(X: np.ndarray, y: np.ndarray, limits: np.ndarray, num_fixed: int, seed: int) -> int:
    """How many of the newest points to fit: all below 200, else the window (in steps of
    10 from 200) whose GP has the best log marginal likelihood."""
    if X.shape[0] < _MIN_POINTS_FOR_LENGTH_SEARCH:
        return X.shape[0]
    scores = []
    lengths = list(range(_MIN_POINTS_FOR_LENGTH_SEARCH, X.shape[0] + 1, 10))
    for length in lengths:
        Xl, yl = X[-length:], y[-length:]
        bounds = np.concatenate([_time_reward_limits(Xl[:, :num_fixed]), limits], axis=1)
        gp = _fit_gp(normalize(Xl, bounds), standardize(yl).reshape(-1, 1), seed)
        scores.append(gp.log_marginal_likelihood_value_)
    return lengths[int(np.argmax(scores))]


def _time_reward_limits(fixed_columns: np.ndarray) -> np.ndarray:
    return np.stack([np.max(fixed_columns, axis=0), np.min(fixed_columns, axis=0)])


def select_config(
    X: np.ndarray,
    y: np.ndarray,
    current: np.ndarray | None,
    newpoint: np.ndarray,
    bounds: np.ndarray,
    *,
    num_fixed: int = 2,
    rng: np.random.Generator,
    restarts: int = 2,
    candidates_per_dim: int = 500,
) -> np.ndarray:
    """The next hyperparameters (in their own units) by GP-UCB (see the module docstring).

    X: rows (t, R_before, h_1..h_d) in raw units; y: their improvement rates; current:
    hyperparameter rows already chosen this round (or None); newpoint: (t, R_before) of
    the trial to continue from; bounds: a (2, d) array of [low, high] per hyperparameter.
    """
    seed = int(rng.integers(2**31 - 1))
    length = _select_length(X, y, bounds, num_fixed, seed)
    X, y = X[-length:], y[-length:]
    fixed_raw = X[:, :num_fixed]
    limits = np.concatenate([_time_reward_limits(fixed_raw), bounds], axis=1)
    Xn = normalize(X, limits)
    yn = standardize(y).reshape(-1, 1)
    fixed = normalize(np.asarray(newpoint, dtype=float), fixed_raw)
    mean_gp = _fit_gp(Xn, yn, seed)
    var_gp = mean_gp
    if current is not None and len(current):
        pending = np.hstack([np.tile(fixed, (len(current), 1)), normalize(current, bounds)])
        var_gp = _fit_gp(np.vstack([Xn, pending]), np.vstack([yn, np.zeros((len(current), 1))]), seed)
    kappa = np.sqrt(0.2 + max(0.0, np.log(0.4 * Xn.shape[0])))

    def ucb(h: np.ndarray) -> np.ndarray:
        x = np.hstack([np.tile(fixed, (len(h), 1)), h])
        _, std = var_gp.predict(x, return_std=True)
        return np.ravel(mean_gp.predict(x)) + kappa * np.ravel(std)

    # A dense random sweep of the unit cube (one batched prediction), then L-BFGS-B
    # from the best few points of it.
    dims = bounds.shape[1]
    candidates = rng.uniform(0, 1, (candidates_per_dim * dims, dims))
    values = ucb(candidates)
    best_h, best_value = candidates[int(np.argmax(values))], float(np.max(values))
    for start in candidates[np.argsort(values)[-restarts:]]:
        found = minimize(lambda h: -float(ucb(h.reshape(1, -1))[0]), start, bounds=[(0, 1)] * dims,
                         method="L-BFGS-B", options={"maxiter": 30, "maxfun": 60})
        value = -float(found.fun)
        if value > best_value:
            best_value, best_h = value, found.x
    best_h = np.clip(best_h, 0, 1)
    low, high = np.min(bounds, axis=0), np.max(bounds, axis=0)
    return best_h * (high - low) + low
