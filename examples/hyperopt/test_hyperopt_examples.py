"""The ray.wait hyperparameter searches run and find a configuration far above chance."""

import importlib.util
import os

HERE = os.path.dirname(__file__)


def _load(name):
    spec = importlib.util.spec_from_file_location(f"hyperopt_example_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def test_hyperopt_simple_documented_command(ray_cluster):
    best_params, best_accuracy, finished = _load("hyperopt_simple").main(["--trials=5", "--steps=50"])
    assert len(finished) == 5
    assert best_accuracy == max(acc for _, acc in finished) > 0.3  # chance is 0.1


def test_hyperopt_adaptive_continues_promising_segments(ray_cluster):
    (params, accuracy), by_depth = _load("hyperopt_adaptive").main(
        ["--num-starting-segments=3", "--num-segments=8", "--steps-per-segment=20"]
    )
    assert sum(len(v) for v in by_depth.values()) == 8
    assert max(by_depth) >= 2  # at least one trial was continued
    assert accuracy > 0.3
