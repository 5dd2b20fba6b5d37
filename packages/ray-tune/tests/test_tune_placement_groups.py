"""Tune trials with PlacementGroupFactory resources on a real 3-CPU cluster: the trainable
runs in bundle 0 of its own group and starts helpers in the other bundles; Tune counts
the sum of the bundles; the groups are removed when trials end."""

import pytest

import ray
from ray import train, tune
from ray.tune.error import TuneError
from ray.tune.execution.placement_groups import PlacementGroupFactory
from ray.tune.resources import resources_from_spec
from ray.util.placement_group import get_current_placement_group, placement_group_table


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=3)
    yield
    ray.shutdown()


@ray.remote(num_cpus=1)
class Helper:
    def group(self):
        pg = get_current_placement_group()
        return pg.id.hex() if pg else None


def objective(config):
    pg = get_current_placement_group()
    helper = Helper.remote()  # captured: lands in the trial's group (bundle 1)
    factory = train.get_context().get_trial_resources()
    train.report({"same_group": ray.get(helper.group.remote()) == pg.id.hex(),
                  "bundles": len(factory.bundles), "head_cpu": factory.bundles[0]["CPU"]})


def test_factory_resources_count_every_bundle():
    r = resources_from_spec(PlacementGroupFactory([{"CPU": 1}, {"CPU": 2, "GPU": 1}]))
    assert (r.cpu, r.extra_cpu, r.gpu, r.extra_gpu) == (1, 2, 0, 1)
    assert r.cpu_total() == 3 and r.bundles == ({"CPU": 1}, {"CPU": 2, "GPU": 1})
    assert type(r).from_json(r.to_json()) == r
    with pytest.raises(TuneError, match="non-empty list"):
        PlacementGroupFactory([])
    with pytest.raises(TuneError, match="unknown arguments"):
        PlacementGroupFactory([{"CPU": 1}], nme="x")
    with pytest.raises(TuneError, match="unknown strategy"):
        PlacementGroupFactory([{"CPU": 1}], strategy="CLOSE")


def test_trials_run_in_their_own_group_with_helpers_in_the_other_bundles(ray_cluster, tmp_path):
    trainable = tune.with_resources(objective, PlacementGroupFactory([{"CPU": 1}, {"CPU": 1}]))
    results = tune.Tuner(
        trainable, param_space={"x": tune.grid_search([1, 2])},
        run_config=train.RunConfig(storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert len(results) == 2 and not results.errors
    for result in results:
        assert result.metrics["same_group"] and result.metrics["bundles"] == 2
        assert result.metrics["head_cpu"] == 1
    # every trial's group is gone once the trials ended
    states = {e["state"] for e in placement_group_table().values()}
    assert states == {"REMOVED"}
