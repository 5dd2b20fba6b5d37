"""The learner's and sampler's fast paths compute exactly what the plain ones do.

``minibatch_sgd`` gathers each column once per epoch and slices minibatches out of it,
and runs all but the last epoch through ``TorchPolicy.sgd_step`` (no stats);
``FusedAdam`` calls the fused kernel directly. These tests run the plain computation
(one gather per minibatch, ``learn_on_tensors`` every time, ``torch.optim.Adam``) next
to the fast one from the same state and require bit-identical weights and stats.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ray.rllib.agents.pg import PGTrainer
from ray.rllib.agents.ppo import PPOTrainer
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.optimizers.rollout_ops import mean_stats, minibatch_sgd, standardized
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.utils.torch_ops import FusedAdam, make_adam


def _reference_sgd(policy, batch, num_sgd_iter, minibatch_size, rng):
    """Minibatch SGD as written before the fast path: every minibatch gathered by
    indexing, every step through learn_on_tensors (stats included)."""
    tensors = policy.to_tensors(batch)
    recurrent = "seq_lens" in tensors
    units = len(tensors["seq_lens"]) if recurrent else batch.count
    seq_len = len(tensors["seq_mask"]) // units if recurrent else 1
    size = max(1, minibatch_size // seq_len)
    stats = []
    for _ in range(num_sgd_iter):
        stats = []
        order = rng.permutation(units)
        for start in range(0, units, size):
            idx = order[start:start + size]
            if len(idx) < size // 2 and start > 0:
                continue
            rows = torch.as_tensor((idx[:, None] * seq_len + np.arange(seq_len)).ravel())
            seqs = torch.as_tensor(idx)
            minibatch = {k: v[seqs] if recurrent and (k == "seq_lens" or k.startswith("state_in_"))
                         else v[rows] for k, v in tensors.items()}
            stats.append(policy.learn_on_tensors(minibatch)["learner_stats"])
    return mean_stats(stats)


def _two_policies(trainer_cls, config):
    first = trainer_cls(env="CartPole-v1", config=dict(config, num_workers=0, seed=0))
    second = trainer_cls(env="CartPole-v1", config=dict(config, num_workers=0, seed=0))
    a = first.workers.local_worker().get_policy()
    b = second.workers.local_worker().get_policy()
    b.set_state(copy.deepcopy(a.get_state()))
    worker = first.workers.local_worker()
    batches, steps = [], 0
    while steps < 600:
        batch = worker.sample()
        batches.append(batch)
        steps += batch.count
    batch = SampleBatch.concat_samples(batches)
    if Postprocessing.ADVANTAGES in batch:
        batch[Postprocessing.ADVANTAGES] = standardized(batch[Postprocessing.ADVANTAGES])
    return (first, second), a, b, batch


def _assert_same(a, b, stats_a, stats_b):
    wa, wb = a.get_weights(), b.get_weights()
    assert wa.keys() == wb.keys()
    for key in wa:
        assert np.array_equal(wa[key], wb[key]), key
    assert stats_a == stats_b


@pytest.mark.parametrize("model", [{}, {"use_lstm": True, "lstm_cell_size": 8,
                                        "max_seq_len": 10}])
def test_ppo_minibatch_sgd_matches_the_plain_loop(model):
    trainers, a, b, batch = _two_policies(
        PPOTrainer, {"train_batch_size": 600, "sample_batch_size": 200, "model": model})
    assert isinstance(a._optimizer, FusedAdam)
    stats_a = _reference_sgd(a, batch, 4, 128, np.random.default_rng(3))
    stats_b = minibatch_sgd(b, batch, 4, 128, np.random.default_rng(3))
    _assert_same(a, b, stats_a, stats_b)
    assert stats_b["kl"] > 0 and "vf_explained_var" in stats_b and "entropy" in stats_b
    for trainer in trainers:
        trainer.stop()


def test_entropy_term_counts_when_its_coefficient_is_set():
    trainers, a, b, batch = _two_policies(
        PPOTrainer, {"train_batch_size": 600, "sample_batch_size": 200, "entropy_coeff": 0.05,
                     "kl_coeff": 0.0})
    stats_a = _reference_sgd(a, batch, 3, 100, np.random.default_rng(1))
    stats_b = minibatch_sgd(b, batch, 3, 100, np.random.default_rng(1))
    _assert_same(a, b, stats_a, stats_b)
    for trainer in trainers:
        trainer.stop()


def test_policies_that_override_learn_on_tensors_get_every_minibatch():
    trainers, _a, b, batch = _two_policies(PGTrainer, {"sample_batch_size": 200})
    calls = []
    original = type(b).learn_on_tensors

    class Counting(type(b)):
        def learn_on_tensors(self, tensors):
            calls.append(len(tensors["obs"]))
            return original(self, tensors)

    b.__class__ = Counting
    minibatch_sgd(b, batch, 3, 128, np.random.default_rng(0))
    per_epoch = len(range(0, batch.count, 128)) - (batch.count % 128 < 64 and
                                                   batch.count % 128 != 0)
    assert len(calls) == 3 * per_epoch
    for trainer in trainers:
        trainer.stop()


def test_fused_adam_is_torch_adam_bit_for_bit():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
    twin = copy.deepcopy(net)
    plain = torch.optim.Adam(net.parameters(), lr=3e-4, eps=1e-5, fused=True)
    fast = make_adam(twin.parameters(), lr=3e-4, eps=1e-5)
    assert isinstance(fast, FusedAdam)
    x = torch.randn(64, 4)
    for step in range(60):
        if step == 30:  # a learning-rate schedule changes the group's lr
            for group in plain.param_groups + fast.param_groups:
                group["lr"] = 1e-4
        for model, optimizer in ((net, plain), (twin, fast)):
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
    for p, q in zip(net.parameters(), twin.parameters()):
        assert torch.equal(p, q)
    state_p, state_q = plain.state_dict()["state"], fast.state_dict()["state"]
    for key in state_p:
        for name in state_p[key]:
            assert torch.equal(state_p[key][name], state_q[key][name])


def test_fused_adam_takes_the_general_path_when_a_gradient_is_missing():
    net = torch.nn.Linear(3, 2)
    extra = torch.nn.Parameter(torch.zeros(2))
    optimizer = make_adam(list(net.parameters()) + [extra], lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        net(torch.ones(1, 3)).sum().backward()  # ``extra`` gets no gradient
        optimizer.step()
    assert float(optimizer.state[net.bias]["step"]) == 2
    assert extra not in optimizer.state or not optimizer.state[extra]
    assert torch.equal(extra, torch.zeros(2))


def test_closure_steps_go_through_adam():
    net = torch.nn.Linear(2, 1)
    optimizer = make_adam(net.parameters(), lr=0.1)

    def closure():
        optimizer.zero_grad()
        loss = net(torch.ones(1, 2)).sum()
        loss.backward()
        return loss

    assert optimizer.step(closure) is not None
