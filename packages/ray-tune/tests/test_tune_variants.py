"""Variant generation: grids, sampled values, conditional samples, num_samples."""

import random

import pytest

from ray import tune
from ray.tune.error import TuneError
from ray.tune.experiment import Experiment
from ray.tune.suggest.basic_variant import BasicVariantGenerator
from ray.tune.suggest.variant_generator import format_vars, generate_variants


def _noop(config, reporter):
    reporter(done=True)


def test_nested_grids_multiply():
    spec = {"config": {"a": tune.grid_search([1, 2]), "b": {"c": tune.grid_search(["x", "y", "z"])}}}
    variants = list(generate_variants(spec))
    assert len(variants) == 6
    configs = [v[1]["config"] for v in variants]
    assert {(c["a"], c["b"]["c"]) for c in configs} == {(a, c) for a in (1, 2) for c in "xyz"}


def test_grid_inside_list_and_conditional_sample_reads_resolved_value():
    spec = {
        "config": {
            "alpha": tune.sample_from(lambda spec: random.uniform(1, 2)),
            "beta": tune.sample_from(lambda spec: spec.config.alpha * 10),
            "nn_layers": [tune.grid_search([16, 64, 256]), tune.grid_search([16, 64, 256])],
        }
    }
    variants = list(generate_variants(spec))
    assert len(variants) == 9
    for _resolved_vars, resolved in variants:
        config = resolved["config"]
        assert config["beta"] == pytest.approx(config["alpha"] * 10)
        assert all(isinstance(n, int) for n in config["nn_layers"])


def test_circular_sample_dependency_raises_tune_error():
    spec = {
        "config": {
            "a": tune.sample_from(lambda spec: spec.config.b),
            "b": tune.sample_from(lambda spec: spec.config.a),
        }
    }
    with pytest.raises(TuneError, match="circular"):
        list(generate_variants(spec))


def test_function_values_are_left_alone():
    fn = tune.function(lambda x: x + 1)
    [(resolved_vars, resolved)] = list(generate_variants({"config": {"f": fn}}))
    assert resolved["config"]["f"] is fn
    assert resolved_vars == {}


def test_format_vars_uses_last_key_and_short_floats():
    text = format_vars({("config", "lr"): 0.123456789, ("config", "opt", "momentum"): 1})
    assert text == "lr=0.12346,momentum=1"


def test_basic_variant_generator_repeats_grid_num_samples_times(tmp_path):
    tune.register_trainable("noop_variants", _noop)
    exp = Experiment(
        "exp",
        "noop_variants",
        config={"a": tune.grid_search([1, 2, 3]), "r": tune.uniform(0, 1)},
        num_samples=4,
        local_dir=str(tmp_path),
    )
    gen = BasicVariantGenerator()
    gen.add_configurations([exp])
    trials = gen.next_trials()
    assert len(trials) == 12 and gen.is_finished()
    assert [t.experiment_tag.split("_")[0] for t in trials] == [str(i) for i in range(12)]
    assert all(0 <= t.config["r"] <= 1 for t in trials)
    assert trials[0].evaluated_params["config/a"] == 1
    assert len({t.trial_id for t in trials}) == 12


def test_domains_sample_in_range():
    rng = random.Random(0)
    for _ in range(100):
        assert 1e-4 <= tune.loguniform(1e-4, 1e-1).sample(rng) <= 1e-1
        assert tune.randint(0, 3).sample(rng) in (0, 1, 2)
        assert tune.choice(["a", "b"]).sample(rng) in ("a", "b")


def test_experiment_rejects_unknown_spec_key_with_suggestion():
    with pytest.raises(TuneError, match="did you mean 'checkpoint_freq'"):
        Experiment.from_json("x", {"run": _noop, "checkpoint_frq": 3})


def test_lambda_trainable_needs_registration():
    with pytest.raises(TuneError, match="register_trainable"):
        Experiment("x", lambda config, reporter: None)


def test_bare_lambdas_are_sampled_like_ray_07():
    spec = {"config": {"a": lambda spec: 3, "b": tune.sample_from(lambda spec: spec.config.a + 1)}}
    [(resolved_vars, resolved)] = list(generate_variants(spec))
    assert resolved["config"] == {"a": 3, "b": 4}
    named = {"config": {"callback": _noop}}  # a named function is a value, not a sampler
    [(_, kept)] = list(generate_variants(named))
    assert kept["config"]["callback"] is _noop
