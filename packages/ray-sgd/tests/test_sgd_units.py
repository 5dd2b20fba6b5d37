"""Pure parts of ray.sgd: no cluster, no processes."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ray.sgd import RendezvousTimeoutError, Resources, TrainingFailedError, weights
from ray.sgd.distributed.sharding import average_shards, plan_shards
from ray.sgd.pytorch.recovery import GiveUp, RetryBudget, RetryFromCheckpoint
from ray.sgd.pytorch.runner import StepStats
from ray.sgd.pytorch.stats import merge_train_stats, merge_validation_stats
from ray.sgd.pytorch.utils import (
    choose_backend,
    resolve_loss_and_optimizer,
    sgd_mse_optimizer,
    split_batch_size,
)


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.BatchNorm1d(5), torch.nn.ReLU(), torch.nn.Linear(5, 2)
    )


# -- weights ------------------------------------------------------------------


def test_flat_weights_round_trip_into_another_model():
    source, target = _net(0), _net(1)
    flat = weights.get_flat(source)
    assert flat.shape == (weights.get_flat_size(source),) and flat.dtype == np.float32
    weights.set_flat(target, flat)
    for a, b in zip(source.parameters(), target.parameters()):
        assert torch.equal(a, b)


def test_flat_weights_survive_pickling_read_only_arrays():
    model, flat = _net(0), weights.get_flat(_net(1))
    frozen = pickle.loads(pickle.dumps(flat))
    frozen.setflags(write=False)  # ray.get returns read-only arrays
    weights.set_flat(model, frozen)
    np.testing.assert_array_equal(weights.get_flat(model), flat)


def test_flat_grad_has_the_weights_layout_so_one_sgd_step_is_vector_math():
    model = _net(0)
    model(torch.randn(4, 3)).sum().backward()
    before, grad = weights.get_flat(model), weights.get_flat_grad(model)
    weights.set_flat(model, before - 0.1 * grad)
    expected = _net(0)
    expected(torch.randn(4, 3))  # batch-norm statistics do not matter for parameters
    optimizer = torch.optim.SGD(expected.parameters(), lr=0.1)
    for p, g in zip(expected.parameters(), model.parameters()):
        p.grad = g.grad.clone()
    optimizer.step()
    np.testing.assert_allclose(weights.get_flat(model), weights.get_flat(expected), atol=1e-7)


def test_set_flat_grad_creates_missing_gradients():
    model = _net(0)
    grad = np.arange(weights.get_flat_size(model), dtype=np.float32)
    weights.set_flat_grad(model, grad)
    np.testing.assert_array_equal(weights.get_flat_grad(model), grad)


def test_set_flat_rejects_a_vector_of_the_wrong_size_with_a_hint():
    with pytest.raises(ValueError, match="get_flat"):
        weights.set_flat(_net(0), np.zeros(3, dtype=np.float32))


def test_weight_dict_includes_buffers_and_round_trips():
    source, target = _net(0), _net(1)
    source.train()
    source(torch.randn(8, 3))  # moves the batch-norm running statistics
    state = weights.get_weights(source)
    assert "1.running_mean" in state
    weights.set_weights(target, state)
    for name, tensor in source.state_dict().items():
        assert torch.equal(tensor, target.state_dict()[name]), name


def test_weight_dict_with_unknown_names_raises_key_error():
    state = weights.get_weights(_net(0))
    state["extra"] = np.zeros(1)
    with pytest.raises(KeyError, match="unknown \\['extra'\\]"):
        weights.set_weights(_net(1), state)


def test_torch_variables_has_the_tensorflow_variables_interface():
    variables = weights.TorchVariables(_net(0))
    flat = variables.get_flat()
    variables.set_flat(np.zeros_like(flat))
    assert variables.get_flat_size() == flat.size
    assert not variables.get_flat().any()
    assert set(variables.variables) == {n for n, _ in _net(0).named_parameters()}
    variables.set_weights(variables.get_weights())


# -- sharding -------------------------------------------------------------------


@given(
    num_elements=st.integers(0, 5000),
    itemsize=st.sampled_from([2, 4, 8]),
    shard_bytes=st.integers(1, 4096),
    servers=st.integers(1, 5),
)
def test_shards_cover_the_vector_in_order_within_the_byte_limit(
    num_elements, itemsize, shard_bytes, servers
):
    plan = plan_shards(num_elements, itemsize, shard_bytes, servers)
    position = 0
    for start, stop in plan.bounds:
        assert start == position and stop > start
        assert (stop - start) * itemsize <= shard_bytes or stop - start == 1
        position = stop
    assert position == num_elements
    assert sorted(s for server in range(servers) for s in plan.shards_of(server)) == list(
        range(plan.num_shards)
    )
    flat = np.arange(num_elements, dtype=np.float32)
    np.testing.assert_array_equal(plan.join(plan.split(flat)), flat)


def test_shard_plan_rejects_non_positive_shard_size():
    with pytest.raises(ValueError, match="grad_shard_bytes"):
        plan_shards(10, 4, 0)


def test_average_shards_is_the_mean_and_leaves_inputs_alone():
    a, b = np.array([1.0, 2.0], np.float32), np.array([3.0, 6.0], np.float32)
    np.testing.assert_array_equal(average_shards([a, b]), [2.0, 4.0])
    np.testing.assert_array_equal(a, [1.0, 2.0])


# -- trainer decisions ------------------------------------------------------------


def test_retry_budget_allows_max_retries_then_gives_up():
    budget = RetryBudget(max_retries=2)
    assert budget.failed() == RetryFromCheckpoint(attempt=1)
    assert budget.failed() == RetryFromCheckpoint(attempt=2)
    assert budget.failed() == GiveUp(failures=3)
    assert RetryBudget(0).failed() == GiveUp(failures=1)
    with pytest.raises(ValueError):
        RetryBudget(-1)


def test_global_batch_is_split_evenly_and_a_bad_split_suggests_a_fix():
    assert split_batch_size(16, 2) == 8
    with pytest.raises(ValueError, match="try batch_size=15"):
        split_batch_size(16, 3)


def test_backend_auto_is_gloo_on_cpu_and_nccl_on_gpu():
    assert choose_backend("auto", use_gpu=False) == "gloo"
    assert choose_backend("auto", use_gpu=True) == "nccl"
    with pytest.raises(ValueError, match="use_gpu"):
        choose_backend("nccl", use_gpu=False)
    with pytest.raises(ValueError, match="backend"):
        choose_backend("tcp", use_gpu=False)


def test_both_creator_styles_give_a_loss_and_an_optimizer():
    model = torch.nn.Linear(2, 1)
    loss, optimizer = resolve_loss_and_optimizer(model, {"lr": 0.5}, sgd_mse_optimizer, None)
    assert isinstance(loss, torch.nn.MSELoss) and optimizer.defaults["lr"] == 0.5

    def adam(model, config):
        return torch.optim.Adam(model.parameters())

    loss, optimizer = resolve_loss_and_optimizer(model, {}, adam, torch.nn.L1Loss)
    assert isinstance(loss, torch.nn.L1Loss) and isinstance(optimizer, torch.optim.Adam)
    loss, _ = resolve_loss_and_optimizer(model, {}, adam, lambda config: torch.nn.MSELoss())
    assert isinstance(loss, torch.nn.MSELoss)
    with pytest.raises(TypeError, match="loss_creator"):
        resolve_loss_and_optimizer(model, {}, adam, None)


def test_merged_train_loss_is_the_sample_weighted_mean():
    stats = [
        StepStats(rank=0, epoch=2, num_steps=3, num_samples=10, loss_sum=5.0, elapsed_s=1.0),
        StepStats(rank=1, epoch=2, num_steps=3, num_samples=30, loss_sum=3.0, elapsed_s=2.0),
    ]
    merged = merge_train_stats(stats)
    assert merged["train_loss"] == pytest.approx(8.0 / 40)
    assert (merged["epoch"], merged["batch_count"], merged["num_samples"]) == (2, 3, 40)
    assert merged["time_s"] == 2.0


def test_validation_accuracy_only_for_class_targets():
    plain = StepStats(rank=0, epoch=0, num_steps=1, num_samples=4, loss_sum=2.0)
    assert "validation_accuracy" not in merge_validation_stats([plain])
    classes = StepStats(
        rank=0, epoch=0, num_steps=1, num_samples=4, loss_sum=2.0, correct=3, has_accuracy=True
    )
    assert merge_validation_stats([classes])["validation_accuracy"] == 0.75


def test_resources_are_frozen_and_become_actor_options():
    resources = Resources(num_cpus=2, num_gpus=1, resources={"tpu": 1})
    assert resources.actor_options() == {"num_cpus": 2, "num_gpus": 1, "resources": {"tpu": 1}}
    assert pickle.loads(pickle.dumps(resources)) == resources
    with pytest.raises(ValueError):
        Resources(num_cpus=-1)


def test_errors_pickle_with_their_ranks():
    error = pickle.loads(pickle.dumps(RendezvousTimeoutError("lost", (1, 2), "cause")))
    assert isinstance(error, TrainingFailedError)
    assert (str(error), error.failed_ranks, error.cause) == ("lost", (1, 2), "cause")
