"""The ray.sgd examples run end to end and learn."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(__file__)


def _load(name):
    spec = importlib.util.spec_from_file_location(
        f"sgd_example_{name}", os.path.join(HERE, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_documented_linear_example_learns_the_line():
    history = _load("pytorch_linear").main(num_replicas=2, epochs=3)
    assert len(history) == 3
    assert history[-1]["validation_loss"] < history[0]["validation_loss"]


@pytest.mark.slow
def test_resnet_example_trains_and_reports_accuracy():
    history = _load("resnet_synthetic").main(num_replicas=2, epochs=2, num_images=256)
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert history[-1]["validation_accuracy"] > 0.3  # chance is 0.1
    assert history[-1]["images_per_s"] > 0


@pytest.mark.slow
def test_distributed_sgd_classifier_example_monitors_accuracy():
    history = _load("distributed_sgd_classifier").main(strategy="ps", steps=40)
    assert history[-1]["test_accuracy"] > max(0.5, history[0]["test_accuracy"])
