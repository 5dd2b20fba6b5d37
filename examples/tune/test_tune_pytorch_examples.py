"""The PyTorch Tune examples (function and class API) train the digits CNN under Tune; the
TuneClient example lists, adds and stops trials of a running experiment."""

import importlib.util
import os

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
