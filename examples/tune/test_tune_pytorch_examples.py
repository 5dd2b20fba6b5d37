"""The PyTorch Tune examples (function and class API) train the digits CNN under Tune; the
TuneClient example lists, adds and stops trials of a running experiment."""

import importlib.util
import os

import numpy as np

from ray.tune.trial import Trial

HERE = os.path.dirname(__file__)


def _load(name):
    spec = importlib.util.spec_from_file_location(f"tune_example_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def _trials(analysis):
    return getattr(analysis, "trials", analysis)


def test_mnist_pytorch_function_api(ray_cluster, tmp_path):
    trials = _trials(_load("mnist_pytorch").main(smoke_test=True, local_dir=str(tmp_path)))
    assert len(trials) == 1 and all(t.status == Trial.TERMINATED for t in trials), [t.error_msg for t in trials]
    assert max(t.last_result["mean_accuracy"] for t in trials) > 0.5


def test_mnist_pytorch_trainable_with_pbt_checkpoints(ray_cluster, tmp_path):
    trials = _trials(_load("mnist_pytorch_trainable").main(smoke_test=True, local_dir=str(tmp_path)))
    assert len(trials) == 2 and all(t.status == Trial.TERMINATED for t in trials), [t.error_msg for t in trials]
    assert all(t.last_result["training_iteration"] == 2 for t in trials)
    assert max(t.last_result["mean_accuracy"] for t in trials) > 0.5


def test_tune_client_lists_adds_and_stops_trials(ray_cluster, tmp_path):
    analysis, log = _load("tune_client_example").main(smoke_test=True, local_dir=str(tmp_path))
    events = {entry[0]: entry[1:] for entry in log}
    assert "error" not in events, log
    assert len(events["listed"][0]) == 2
    trials = _trials(analysis)
    assert len(trials) == 3  # two from the grid, one added by the client
    stopped = events["stopped"][0]
    by_id = {t.trial_id: t for t in trials}
    assert by_id[stopped].last_result["training_iteration"] < 8


# --- the PyTorch renderings of the TF/Keras examples (issue 14) -----------------------


def _terminated(trials):
    assert trials and all(t.status == Trial.TERMINATED for t in trials), [(str(t), t.error_msg) for t in trials]


def test_tune_mnist_ray_grid_searches_the_activation(ray_cluster, tmp_path):
    trials = _trials(_load("tune_mnist_ray").main(smoke_test=True, local_dir=str(tmp_path)))
    _terminated(trials)
    assert sorted(t.config["activation"] for t in trials) == ["relu", "tanh"]
    assert all(t.last_result["timesteps_total"] == 2 * 1437 for t in trials)  # two epochs of images
    assert max(t.last_result["mean_accuracy"] for t in trials) > 0.5


def test_tune_mnist_async_hyperband_samples_configs_and_counts_images(ray_cluster, tmp_path):
    trials = _trials(_load("tune_mnist_async_hyperband").main(smoke_test=True, local_dir=str(tmp_path)))
    assert len(trials) == 4
    _terminated(trials)
    assert len({t.config["lr"] for t in trials}) == 4
    # ASHA's rungs are in images seen: every trial passed the grace period of one epoch.
    assert all(t.last_result["timesteps_total"] >= 1437 for t in trials)


def test_tune_mnist_ray_hyperband_runs_the_checkpointing_trainable(ray_cluster, tmp_path):
    trials = _trials(_load("tune_mnist_ray_hyperband").main(smoke_test=True, local_dir=str(tmp_path)))
    assert len(trials) == 3
    _terminated(trials)
    assert max(t.last_result["training_iteration"] for t in trials) == 3
    assert max(t.last_result["mean_accuracy"] for t in trials) > 0.5


def test_tune_mnist_keras_callback_reports_every_epoch(ray_cluster, tmp_path):
    trials = _trials(_load("tune_mnist_keras").main(smoke_test=True, local_dir=str(tmp_path)))
    assert len(trials) == 2
    _terminated(trials)
    assert all(t.last_result["epochs_done"] == 2 and t.last_result["mean_loss"] > 0 for t in trials)


def test_cifar_like_data_is_deterministic_balanced_and_cifar_shaped():
    module = _load("pbt_tune_cifar10")
    x, y = module.make_cifar_like(40, seed=0)
    x2, y2 = module.make_cifar_like(40, seed=0)
    assert x.shape == (40, 3, 32, 32) and x.dtype == np.float32
    assert (x == x2).all() and (y == y2).all()
    assert np.bincount(y).tolist() == [4] * 10


def test_pbt_tune_cifar10_perturbs_lr_momentum_and_dropout(ray_cluster, tmp_path):
    trials = _trials(_load("pbt_tune_cifar10").main(smoke_test=True, local_dir=str(tmp_path)))
    assert len(trials) == 2
    _terminated(trials)
    assert all(t.last_result["training_iteration"] == 6 for t in trials)
    # With perturbation_interval=1 the worse member copies the better one at least once.
    assert any("@perturbed" in t.experiment_tag for t in trials)
    # Chance is 0.1; six epochs on 300 images learn the colour scheme (0.2), not yet the patterns.
    assert max(t.last_result["mean_accuracy"] for t in trials) > 0.15
