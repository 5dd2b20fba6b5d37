"""Every Tune example from the seeds runs as a test, at small scale, on ray.init(num_cpus=2)."""

import importlib.util
import os

import pytest

from ray.tune.trial import Trial

HERE = os.path.dirname(__file__)


def _load(name):
    spec = importlib.util.spec_from_file_location(f"tune_example_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def _all_terminated(trials):
    assert trials and all(t.status == Trial.TERMINATED for t in trials), [
        (str(t), t.status, t.error_msg) for t in trials
    ]


def test_quick_start(ray_cluster, tmp_path):
    trials = _load("quick_start").main(smoke_test=True, local_dir=str(tmp_path))
    _all_terminated(trials)
    assert all(t.last_result["mean_accuracy"] >= 99 for t in trials)


def test_ai_blog_example(ray_cluster, tmp_path):
    trials = _load("ai_blog_example").main(smoke_test=True, local_dir=str(tmp_path))
    assert len(trials) == 6
    _all_terminated(trials)


def test_async_hyperband_example(ray_cluster, tmp_path):
    trials = _load("async_hyperband_example").main(smoke_test=True, local_dir=str(tmp_path))
    assert len(trials) == 8
    _all_terminated(trials)


def test_hyperband_example(ray_cluster, tmp_path):
    trials = _load("hyperband_example").main(smoke_test=True, local_dir=str(tmp_path))
    _all_terminated(trials)
    assert max(t.last_result["training_iteration"] for t in trials) == 9


def test_hyperopt_example(ray_cluster, tmp_path):
    pytest.importorskip("hyperopt")
    trials = _load("hyperopt_example").main(smoke_test=True, local_dir=str(tmp_path))
    assert len(trials) == 6
    _all_terminated(trials)
    # The two warm-start points run first, with hp.choice given by index.
    assert [t.config["activation"] for t in trials[:2]] == ["relu", "tanh"]


def test_pbt_example(ray_cluster, tmp_path):
    trials = _load("pbt_example").main(smoke_test=True, local_dir=str(tmp_path))
    assert len(trials) == 4
    _all_terminated(trials)
    assert any("@perturbed" in t.experiment_tag for t in trials)


def test_logging_example_uses_custom_logger_and_names(ray_cluster, tmp_path, capsys):
    trials = _load("logging_example").main(smoke_test=True, local_dir=str(tmp_path))
    _all_terminated(trials)
    assert all(str(t).endswith("_123") for t in trials)
    assert "TestLogger 1" in capsys.readouterr().out


@pytest.mark.parametrize("name,module", [("bayesopt_example", "bayes_opt"),
                                         ("skopt_example", "skopt"),
                                         ("nevergrad_example", "nevergrad")])
def test_search_algorithm_examples(ray_cluster, tmp_path, name, module):
    pytest.importorskip(module)
    trials = _load(name).main(smoke_test=True, local_dir=str(tmp_path))
    assert len(trials) == 6
    _all_terminated(trials)
