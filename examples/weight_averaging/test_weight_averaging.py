"""Weight averaging and gradient averaging across actors both find w ~ 0.1, b ~ 0.3."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(__file__)



def test_both_averaging_schemes_converge_to_the_true_line(ray_cluster):
    spec = importlib.util.spec_from_file_location("weight_averaging_example", os.path.join(HERE, "weight_averaging.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--num-actors=2", "--iterations=25"])
    for w, b in out.values():
        assert w == pytest.approx(0.1, abs=0.03)
        assert b == pytest.approx(0.3, abs=0.02)
