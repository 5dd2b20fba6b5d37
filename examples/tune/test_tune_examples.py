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


def test_bohb_example(ray_cluster, tmp_path):
    pytest.importorskip("ConfigSpace")
    trials = _load("bohb_example").main(smoke_test=True, local_dir=str(tmp_path))
    assert len(trials) == 10
    _all_terminated(trials)
    assert all(10 <= t.config["height"] <= 100 for t in trials)
    iterations = sorted(t.last_result["training_iteration"] for t in trials)
    assert iterations[0] < iterations[-1] == 10  # the bracket cut the weaker ones early


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


def test_genetic_example_breeds_generations_under_async_hyperband(ray_cluster, tmp_path):
    trials, algo = _load("genetic_example").main(smoke_test=True, local_dir=str(tmp_path))
    assert len(trials) == algo.total_trials == 10 + 8  # generation 1 keeps the 2 best of 10
    _all_terminated(trials)
    assert {e["generation"] for e in algo.history} == {0, 1}
    best = algo.best_config()
    assert set(best) == {"x1", "x2", "x3", "x4", "x5"}
    assert max(t.last_result["neg_mean_loss"] for t in trials) == pytest.approx(
        max(e["score"] for e in algo.history))


def test_pbt_ppo_explore_keeps_perturbed_configs_trainable():
    explore = _load("pbt_ppo_example").explore
    fixed = explore({"train_batch_size": 100, "sgd_minibatch_size": 128, "num_sgd_iter": 0})
    assert fixed == {"train_batch_size": 256, "sgd_minibatch_size": 128, "num_sgd_iter": 1}
    fine = {"train_batch_size": 1000, "sgd_minibatch_size": 128, "num_sgd_iter": 5}
    assert explore(dict(fine)) == fine


@pytest.mark.slow  # ~10-15 s: every exploit restarts a PPO actor (RLlib trainers have no reset_config)
def test_pbt_ppo_example_trains_a_ppo_population(ray_cluster, tmp_path):
    trials = _load("pbt_ppo_example").main(smoke_test=True, local_dir=str(tmp_path))
    assert len(trials) == 2
    _all_terminated(trials)
    assert all(t.last_result["training_iteration"] == 3 for t in trials)
    assert all(t.last_result["timesteps_total"] >= 3 * 256 for t in trials)


def test_ax_example_runs_ax_suggestions(ray_cluster, tmp_path):
    pytest.importorskip("ax")
    analysis, client = _load("ax_example").main(smoke_test=True, local_dir=str(tmp_path))
    trials = getattr(analysis, "trials", analysis)
    assert len(trials) == 6
    _all_terminated(trials)
    completed = [t for t in client.experiment.trials.values() if t.status.is_completed]
    assert len(completed) == 6  # every trial's result went back to Ax


def test_hartmann6_has_its_known_minimum():
    module = _load("ax_example")
    x_star = [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]
    assert module.hartmann6(__import__("numpy").array(x_star)) == pytest.approx(-3.32237, abs=1e-4)


@pytest.mark.parametrize("has_library,key,expected", [
    (False, "", "pip install sigopt"),
    (True, "", "SIGOPT_KEY environment variable"),
])
def test_sigopt_example_says_what_is_missing(monkeypatch, has_library, key, expected):
    module = _load("sigopt_example")
    monkeypatch.setenv("SIGOPT_KEY", key)
    monkeypatch.setattr(module.importlib.util, "find_spec",
                        lambda name: object() if has_library and name == "sigopt" else None)
    with pytest.raises(SystemExit, match=expected):
        module.main(smoke_test=True)


def test_sigopt_example_script_exits_with_the_message_without_a_key():
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "SIGOPT_KEY"}
    proc = subprocess.run([sys.executable, os.path.join(HERE, "sigopt_example.py"), "--smoke-test"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert "sigopt_example needs" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.extended
def test_nevergrad_in_a_venv_of_its_own(scratch_venv):
    """nevergrad pins bayesian-optimization==1.4.0 (the main venv has 3.x), so it gets a
    scratch venv: Tune's searcher tests for it and the example's smoke run go there."""
    scratch_venv.install("nevergrad", "pytest", "pytest-timeout", packages=("ray-plasma", "ray-core", "ray-tune"))
    searchers = scratch_venv.run("-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 "packages/ray-tune/tests/test_tune_searchers.py", "-k", "nevergrad")
    assert searchers.returncode == 0 and " passed" in searchers.stdout, searchers.stdout + searchers.stderr
    assert "skipped" not in searchers.stdout, searchers.stdout
    example = scratch_venv.run("-c", (
        "import importlib.util, tempfile, ray\n"
        "spec = importlib.util.spec_from_file_location('ng_example', 'examples/tune/nevergrad_example.py')\n"
        "example = importlib.util.module_from_spec(spec); spec.loader.exec_module(example)\n"
        "ray.init(num_cpus=2)\n"
        "with tempfile.TemporaryDirectory() as d:\n"
        "    print('statuses', sorted(t.status for t in example.main(True, local_dir=d)))\n"
        "ray.shutdown()\n"))
    assert example.returncode == 0, example.stdout + example.stderr[-3000:]
    assert "statuses " + str(["TERMINATED"] * 6) in example.stdout, example.stdout + example.stderr[-3000:]
