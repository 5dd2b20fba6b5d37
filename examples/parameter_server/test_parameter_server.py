"""Both parameter servers train the digits CNN well past chance in a few seconds."""

import importlib.util
import os

HERE = os.path.dirname(__file__)


def _load(name):
    spec = importlib.util.spec_from_file_location(f"ps_example_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def test_async_parameter_server_learns_digits(ray_cluster):
    accuracies = _load("async_parameter_server").main(["--num-workers=2", "--steps=40"])
    assert accuracies[-1] > 0.6  # chance is 0.1


def test_sync_parameter_server_learns_digits(ray_cluster):
    accuracies = _load("sync_parameter_server").main(["--num-workers=2", "--iterations=30"])
    assert accuracies[-1] > 0.6
