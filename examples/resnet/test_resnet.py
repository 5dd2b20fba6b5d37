"""Weight-averaged ResNet replicas learn the digits (a GPU variant runs where CUDA is)."""

import importlib.util
import os

import pytest

import ray

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("resnet_example", os.path.join(HERE, "resnet_main.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_resnet_replicas_with_weight_averaging_learn():
    ray.init(num_cpus=2)
    try:
        history = _load().main(["--num-cpu-replicas=2", "--rounds=3", "--steps-per-round=10"])
    finally:
        ray.shutdown()
    assert len(history) == 3
    assert history[-1]["test_accuracy"] > 0.3  # chance is 0.1


@pytest.mark.gpu
def test_resnet_trains_on_a_gpu_actor():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    ray.init(num_cpus=2, num_gpus=1)
    try:
        history = _load().main(["--num-gpus=1", "--rounds=3", "--steps-per-round=20"])
    finally:
        ray.shutdown()
    assert history[-1]["test_accuracy"] > 0.3
