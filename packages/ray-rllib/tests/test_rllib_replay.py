"""Replay buffers and the pure pieces of the off-policy algorithms (no processes)."""

import numpy as np
import pytest
import torch

from ray.rllib.agents.ddpg.ddpg import DDPGConfig, ddpg_critic_loss
from ray.rllib.agents.dqn.dqn import (
    DQNConfig,
    NoisyLinear,
    adjust_nstep,
    dqn_loss,
    per_worker_epsilon,
    polyak_update,
    project_distribution,
)
from ray.rllib.optimizers import PrioritizedReplayBuffer, ReplayBuffer
from ray.rllib.policy.sample_batch import SampleBatch


def _batch(n, start=0):
    return SampleBatch({
        "obs": np.arange(start, start + n, dtype=np.float32)[:, None].repeat(2, 1),
        "actions": np.arange(start, start + n) % 2,
        "rewards": np.ones(n, np.float32),
        "new_obs": np.arange(start + 1, start + n + 1, dtype=np.float32)[:, None].repeat(2, 1),
        "dones": np.zeros(n, bool),
        "infos": [{}] * n,
    })


def test_replay_buffer_is_a_ring_of_the_latest_rows():
    buffer = ReplayBuffer(5, seed=0)
    buffer.add_batch(_batch(4))
    buffer.add_batch(_batch(3, start=4))
    assert len(buffer) == 5
    sample = buffer.sample(200)
    assert set(sample["obs"][:, 0].astype(int)) == {2, 3, 4, 5, 6}
    assert "infos" not in sample  # non-numeric columns are not stored
    assert np.array_equal(sample["new_obs"][:, 0], sample["obs"][:, 0] + 1)


def test_sampling_an_empty_buffer_says_what_to_do():
    with pytest.raises(ValueError, match="learning_starts"):
        ReplayBuffer(10).sample(4)


def test_prioritized_replay_draws_rows_in_proportion_to_priority():
    buffer = PrioritizedReplayBuffer(8, alpha=1.0, seed=1)
    idx = buffer.add_batch(_batch(4))
    buffer.update_priorities(idx, [1.0, 1.0, 1.0, 7.0])
    sample = buffer.sample(10_000, beta=1.0)
    freq = np.bincount(sample["batch_indexes"], minlength=4) / 10_000
    assert freq == pytest.approx([0.1, 0.1, 0.1, 0.7], abs=0.02)
    # w_i = (N P(i))^-beta / max w: the rarest rows weigh 1, the common one 1/7.
    weights = dict(zip(sample["batch_indexes"], sample["weights"]))
    assert weights[0] == pytest.approx(1.0) and weights[3] == pytest.approx(1 / 7, rel=1e-5)


def test_prioritized_replay_takes_initial_priorities_from_the_weights_column():
    buffer = PrioritizedReplayBuffer(16, alpha=1.0, seed=0)
    batch = _batch(2)
    batch["weights"] = np.array([0.0001, 5.0], np.float32)
    buffer.add_batch(batch)
    sample = buffer.sample(1000)
    assert np.mean(sample["batch_indexes"] == 1) > 0.99


def test_prioritized_replay_rejects_bad_priorities():
    buffer = PrioritizedReplayBuffer(4)
    buffer.add_batch(_batch(2))
    with pytest.raises(ValueError, match="prioritized_replay_eps"):
        buffer.update_priorities([0], [0.0])
    with pytest.raises(IndexError):
        buffer.update_priorities([3], [1.0])


def test_n_step_returns_shorten_at_the_end_of_a_fragment():
    batch = _batch(4)
    batch["rewards"] = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    batch["dones"] = np.array([False, False, False, True])
    adjust_nstep(batch, 3, 0.5)
    assert batch["rewards"] == pytest.approx([1 + 1 + 0.75, 2 + 1.5 + 1, 3 + 2, 4])
    assert batch["new_obs"][:, 0].tolist() == [3, 4, 4, 4]
    assert batch["dones"].tolist() == [False, True, True, True]
    assert batch["n_step_gamma"] == pytest.approx([0.125, 0.125, 0.25, 0.5])


def test_distribution_projection_keeps_mass_and_shifts_by_the_reward():
    support = torch.linspace(-2, 2, 5)
    probs = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0], [0.2, 0.2, 0.2, 0.2, 0.2]])
    out = project_distribution(probs, torch.tensor([1.0, 0.5]), torch.tensor([1.0, 0.0]),
                               support, -2.0, 2.0)
    assert out.sum(-1) == pytest.approx(torch.ones(2))
    assert out[0].tolist() == pytest.approx([0, 0, 0, 1, 0])  # z=0 moved to z=1
    assert out[1].tolist() == pytest.approx([0, 0, 0.5, 0.5, 0])  # all mass at r=0.5


def test_double_q_values_the_online_argmax_with_the_target_net():
    batch = {"actions": torch.tensor([0]), "rewards": torch.tensor([0.0]),
             "dones": torch.tensor([False])}
    q_t = torch.tensor([[1.0, 0.0]], requires_grad=True)
    q_target = torch.tensor([[10.0, 2.0]])
    q_online = torch.tensor([[0.0, 5.0]])  # online argmax: action 1 -> target value 2
    discount = torch.tensor([1.0])
    for double_q, expected_target in ((True, 2.0), (False, 10.0)):
        cfg = DQNConfig(double_q=double_q)
        _loss, td, _ = dqn_loss(q_t, None, q_target, None, q_online, batch, cfg, discount, None)
        assert float(td[0]) == pytest.approx(1.0 - expected_target)


def test_noisy_layers_are_noisy_only_when_exploring():
    layer = NoisyLinear(3, 2, sigma0=0.5)
    x = torch.ones(1, 3)
    assert not torch.equal(layer(x), layer(x))
    layer.noise_on = False
    assert torch.equal(layer(x), layer(x))


def test_polyak_update_moves_the_target_by_tau():
    source, target = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    before = target.weight.detach().clone()
    polyak_update(target, source, 0.25)
    assert torch.allclose(target.weight, 0.75 * before + 0.25 * source.weight)


def test_td3_target_uses_the_smaller_critic():
    from gymnasium import spaces

    from ray.rllib.agents.ddpg.ddpg import ActorCritic

    cfg = DDPGConfig(twin_q=True, actor_hiddens=[4], critic_hiddens=[4], l2_reg=0.0)
    space = spaces.Box(-1, 1, (1,))
    model = ActorCritic(spaces.Box(-1, 1, (2,)), space, {}, cfg)
    with torch.no_grad():
        model.q1[-1].bias.fill_(5.0)
        model.q2[-1].bias.fill_(-5.0)
    batch = {"obs": torch.zeros(3, 2), "new_obs": torch.zeros(3, 2),
             "actions": torch.zeros(3, 1), "rewards": torch.zeros(3),
             "dones": torch.zeros(3, dtype=torch.bool)}
    _loss, td, _ = ddpg_critic_loss(model, model, batch, cfg, torch.ones(3))
    q1 = model.q(model.features(batch["obs"]), batch["actions"], 1)
    q2_next = model.q(model.features(batch["new_obs"]), model.action(batch["new_obs"]), 2)
    assert torch.allclose(td, q1 - q2_next)


def test_ape_x_epsilons_span_0_4_to_0_4_to_the_8th():
    eps = [per_worker_epsilon(i, 8) for i in range(1, 9)]
    assert eps[0] == pytest.approx(0.4) and eps[-1] == pytest.approx(0.4 ** 8)
    assert eps == sorted(eps, reverse=True)


def test_replay_shard_waits_for_its_share_of_learning_starts_then_replays():
    from ray.rllib.optimizers.async_replay_optimizer import ReplayShard

    shard = ReplayShard(num_shards=2, learning_starts=20, buffer_size=100, train_batch_size=4,
                        prioritized_replay_alpha=1.0, prioritized_replay_beta=0.4,
                        prioritized_replay_eps=1e-6, seed=0)
    shard.add_batch(_batch(5))
    assert shard.replay() is None  # 5 < 20 / 2
    shard.add_batch(_batch(5, start=5))
    batch = shard.replay()
    assert batch.count == 4 and "weights" in batch
    shard.update_priorities({"default_policy": (np.arange(10), np.r_[np.zeros(9), 100.0])})
    assert np.mean(shard.replay()["batch_indexes"] == 9) >= 0.75


def test_replay_shard_batch_mode_replays_whole_batches():
    from ray.rllib.optimizers.async_replay_optimizer import ReplayShard

    shard = ReplayShard(num_shards=1, learning_starts=0, buffer_size=12, train_batch_size=6,
                        prioritized_replay_alpha=0.6, prioritized_replay_beta=0.4,
                        prioritized_replay_eps=1e-6, batch_replay=True, seed=0)
    for start in (0, 5, 10):
        shard.add_batch(_batch(5, start=start))
    assert shard.stats()["num_batches"] == {"default_policy": 2}  # the oldest was evicted
    obs = shard.replay()["obs"][:, 0]
    assert len(obs) == 10 and set(obs) <= set(range(5, 15))
    assert all(np.diff(obs[:5]) == 1)  # rows of a stored batch stay in order
