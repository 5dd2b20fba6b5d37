import numpy as np
import pytest

from ray.rllib.evaluation.postprocessing import Postprocessing, compute_advantages, discount
from ray.rllib.evaluation.sample_batch_builder import SampleBatchBuilder
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch


def test_sample_batch_rejects_columns_of_different_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        SampleBatch(obs=[1, 2, 3], rewards=[1.0])


def test_concat_samples_joins_rows_in_order():
    a = SampleBatch(obs=np.arange(3), rewards=np.ones(3))
    b = SampleBatch(obs=np.arange(3, 5), rewards=np.zeros(2))
    joined = SampleBatch.concat_samples([a, b])
    assert joined.count == 5
    assert joined["obs"].tolist() == [0, 1, 2, 3, 4]


def test_split_by_episode_cuts_at_eps_id_changes():
    batch = SampleBatch(eps_id=[7, 7, 8, 8, 8, 7], t=[0, 1, 0, 1, 2, 0])
    parts = batch.split_by_episode()
    assert [p.count for p in parts] == [2, 3, 1]


def test_multi_agent_batch_concat_counts_env_steps_not_rows():
    a = MultiAgentBatch({"p1": SampleBatch(x=[1, 2]), "p2": SampleBatch(x=[3])}, count=2)
    b = MultiAgentBatch({"p1": SampleBatch(x=[4])}, count=1)
    joined = MultiAgentBatch.concat_samples([a, b])
    assert joined.count == 3
    assert joined.policy_batches["p1"]["x"].tolist() == [1, 2, 4]
    assert joined.total() == 4


def test_wrap_as_needed_unwraps_single_default_policy():
    batch = SampleBatch(x=[1])
    assert MultiAgentBatch.wrap_as_needed({DEFAULT_POLICY_ID: batch}, 1) is batch


def test_builder_stacks_arrays_and_keeps_infos_as_objects():
    builder = SampleBatchBuilder()
    builder.add_values(obs=np.zeros(2), infos={"a": 1})
    builder.add_values(obs=np.ones(2), infos={})
    batch = builder.build_and_reset()
    assert batch["obs"].shape == (2, 2)
    assert batch["infos"][0] == {"a": 1}
    assert builder.count == 0


def test_discount_is_reverse_cumulative_sum():
    assert discount(np.array([1.0, 1.0, 1.0]), 0.5).tolist() == [1.75, 1.5, 1.0]


def test_compute_advantages_without_gae_gives_discounted_returns():
    batch = SampleBatch(rewards=[1.0, 1.0, 1.0])
    compute_advantages(batch, last_r=2.0, gamma=0.5, use_gae=False)
    # 1 + .5 * (1 + .5 * (1 + .5 * 2))
    assert batch[Postprocessing.ADVANTAGES].tolist() == pytest.approx([2.0, 2.0, 2.0])


def test_gae_matches_hand_computation():
    rewards, values, gamma, lam, last_r = [1.0, 0.0, 2.0], [0.5, 1.0, 1.5], 0.9, 0.8, 3.0
    batch = SampleBatch(rewards=rewards, vf_preds=values)
    compute_advantages(batch, last_r, gamma, lam, use_gae=True)
    next_values = values[1:] + [last_r]
    deltas = [r + gamma * nv - v for r, nv, v in zip(rewards, next_values, values)]
    expected = [0.0, 0.0, 0.0]
    running = 0.0
    for t in (2, 1, 0):
        running = deltas[t] + gamma * lam * running
        expected[t] = running
    assert batch[Postprocessing.ADVANTAGES].tolist() == pytest.approx(expected, rel=1e-5)
    assert batch[Postprocessing.VALUE_TARGETS].tolist() == pytest.approx(
        [a + v for a, v in zip(expected, values)], rel=1e-5
    )


def test_gae_with_lambda_one_equals_returns_minus_values():
    rewards, values = np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    batch = SampleBatch(rewards=rewards, vf_preds=values)
    compute_advantages(batch, 0.0, 0.99, 1.0, use_gae=True)
    returns = discount(rewards, 0.99)
    assert batch[Postprocessing.ADVANTAGES] == pytest.approx(returns - values, rel=1e-5)
