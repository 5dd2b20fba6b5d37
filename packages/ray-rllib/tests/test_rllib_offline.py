"""Offline data: output -> input round trips, mixed input, off-policy estimates."""

import json
import math

import numpy as np
import pytest

from ray.rllib.agents.pg import PGTrainer
from ray.rllib.evaluation.sample_batch_builder import SampleBatchBuilder
from ray.rllib.offline import (
    ImportanceSamplingEstimator,
    JsonReader,
    JsonWriter,
    WeightedImportanceSamplingEstimator,
)
from ray.rllib.policy.sample_batch import SampleBatch


@pytest.mark.parametrize("compress", [[], ["obs", "new_obs"]])
def test_output_then_input_round_trip(tmp_path, compress):
    out = tmp_path / "out"
    writer = PGTrainer(env="CartPole-v0", config={
        "num_workers": 0, "train_batch_size": 200, "output": str(out),
        "output_compress_columns": compress, "seed": 0})
    try:
        writer.train()
    finally:
        writer.stop()
    [path] = out.glob("output-*_worker-0_0.json")
    first = json.loads(path.read_text().splitlines()[0])
    assert first["type"] == "SampleBatch"
    if compress:
        assert set(first["obs"]) == {"__compressed__"}
    else:
        assert isinstance(first["obs"][0], list)
    written = JsonReader(str(out)).read_all()
    assert sum(b.count for b in written) >= 200
    # Input from a glob: a trainer learns from the files, not the env.
    reader = PGTrainer(env="CartPole-v0", config={
        "num_workers": 0, "train_batch_size": 200, "input": str(out / "*.json"),
        "input_evaluation": ["is", "wis"], "seed": 0})
    try:
        result = reader.train()
        batch = reader.workers.local_worker().sample()
    finally:
        reader.stop()
    assert result["timesteps_total"] >= 200
    assert math.isnan(result["episode_reward_mean"])  # nothing was simulated
    estimates = result["off_policy_estimator"]
    assert set(estimates) == {"is", "wis"}
    assert estimates["is"]["V_prev_mean"] > 0 and estimates["wis"]["V_step_WIS_mean"] > 0
    np.testing.assert_array_equal(
        batch["obs"], next(b for b in written if b["eps_id"][0] == batch["eps_id"][0]
                           and b.count == batch.count)["obs"])


def test_mixed_sampler_and_offline_input(tmp_path):
    writer = JsonWriter(str(tmp_path), compress_columns=[])
    builder = SampleBatchBuilder()
    for t in range(50):
        builder.add_values(t=t, eps_id=7, agent_index=0, obs=np.full(4, 9.0, np.float32),
                           actions=0, action_prob=0.5, rewards=1.0, prev_actions=0,
                           prev_rewards=0.0, dones=t == 49, infos={},
                           new_obs=np.full(4, 9.0, np.float32))
    writer.write(builder.build_and_reset())
    writer.close()
    trainer = PGTrainer(env="CartPole-v0", config={
        "num_workers": 0, "sample_batch_size": 50, "train_batch_size": 50,
        "input": {"sampler": 0.5, str(tmp_path): 0.5}, "input_evaluation": [], "seed": 3})
    try:
        sources = set()
        for _ in range(20):
            batch = trainer.workers.local_worker().sample()
            sources.add("offline" if np.all(batch["obs"] == 9.0) else "sampler")
    finally:
        trainer.stop()
    assert sources == {"offline", "sampler"}


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no experience files"):
        PGTrainer(env="CartPole-v0", config={"num_workers": 0, "input": str(tmp_path)})
    with pytest.raises(ValueError, match="sum to 1"):
        PGTrainer(env="CartPole-v0", config={
            "num_workers": 0, "input": {"sampler": 0.5, "sampler2": 0.2}})


class _FixedPolicy:
    """pi_new(a|s) known exactly: the estimators' inputs, nothing else."""

    def __init__(self, probs):
        self.probs = np.asarray(probs)

    def compute_log_likelihoods(self, actions, obs):
        return np.log(self.probs[: len(actions)])


def _episode(rewards, behaviour):
    n = len(rewards)
    return SampleBatch(eps_id=[1] * n, obs=np.zeros((n, 2)), actions=[0] * n,
                       rewards=rewards, action_prob=behaviour)


def test_is_and_wis_match_a_hand_computation():
    gamma = 0.9
    rewards, behaviour, target = [1.0, 0.0, 2.0], [0.5, 0.25, 0.8], [0.6, 0.5, 0.4]
    ep = _episode(rewards, behaviour)
    # by hand: ratios 1.2, 2.0, 0.5 -> p = 1.2, 2.4, 1.2
    v_prev = 1.0 + 0.0 + 0.81 * 2.0
    v_is = 1.2 * 1.0 + 0.9 * 2.4 * 0.0 + 0.81 * 1.2 * 2.0
    est = ImportanceSamplingEstimator(_FixedPolicy(target), gamma).estimate(ep)
    assert est.estimator_name == "is"
    assert est.metrics["V_prev"] == pytest.approx(v_prev)
    assert est.metrics["V_step_IS"] == pytest.approx(v_is)
    assert est.metrics["V_gain_est"] == pytest.approx(v_is / v_prev)

    wis = WeightedImportanceSamplingEstimator(_FixedPolicy(target), gamma)
    first = wis.estimate(ep)
    # one episode: w_t = p_t, so every weight is 1 and WIS equals the logged return
    assert first.metrics["V_step_WIS"] == pytest.approx(v_prev)
    ep2 = _episode([3.0, 1.0], [0.6, 0.5])  # ratios 1.0, 1.0 -> p = 1, 1
    second = wis.estimate(ep2)
    w0, w1 = (1.2 + 1.0) / 2, (2.4 + 1.0) / 2
    assert second.metrics["V_step_WIS"] == pytest.approx(1 / w0 * 3.0 + 0.9 * 1 / w1 * 1.0)


def test_estimators_split_batches_by_episode_and_report_metrics():
    est = ImportanceSamplingEstimator(_FixedPolicy([0.5] * 10), 1.0)
    batch = SampleBatch.concat_samples([_episode([1.0, 1.0], [0.5, 0.5]),
                                        SampleBatch(dict(_episode([2.0], [0.5]), eps_id=[2]))])
    est.process(batch)
    metrics = est.get_metrics()
    assert [m.metrics["V_step_IS"] for m in metrics] == [2.0, 2.0]
    assert est.get_metrics() == []


def test_external_experiences_with_sample_batch_builder(tmp_path):
    """The documented recipe: build batches by hand, write them, train from them."""
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    writer = JsonWriter(str(tmp_path / "demo"))
    builder = SampleBatchBuilder()
    rng = np.random.default_rng(0)
    for eps_id in range(5):
        obs, _ = env.reset(seed=eps_id)
        done, t, prev_action, prev_reward = False, 0, 0, 0.0
        while not done:
            action = int(rng.integers(2))
            new_obs, reward, term, trunc, info = env.step(action)
            done = term or trunc
            builder.add_values(t=t, eps_id=eps_id, agent_index=0, obs=obs, actions=action,
                               action_prob=0.5, rewards=reward, prev_actions=prev_action,
                               prev_rewards=prev_reward, dones=done, infos=info,
                               new_obs=new_obs)
            obs, prev_action, prev_reward, t = new_obs, action, reward, t + 1
        writer.write(builder.build_and_reset())
    writer.close()
    trainer = PGTrainer(env="CartPole-v1", config={
        "num_workers": 0, "train_batch_size": 100, "input": str(tmp_path / "demo"),
        "postprocess_inputs": True, "seed": 0})
    try:
        result = trainer.train()
    finally:
        trainer.stop()
    assert result["info"]["num_steps_trained"] >= 100
    assert result["off_policy_estimator"]["is"]["V_prev_mean"] > 0


def test_evaluation_simulates_while_training_reads_offline(tmp_path):
    writer = PGTrainer(env="CartPole-v0", config={
        "num_workers": 0, "train_batch_size": 200, "output": str(tmp_path), "seed": 0})
    try:
        writer.train()
    finally:
        writer.stop()
    trainer = PGTrainer(env="CartPole-v0", config={
        "num_workers": 0, "train_batch_size": 200, "input": str(tmp_path),
        "evaluation_interval": 1, "evaluation_num_episodes": 2, "seed": 0})
    try:
        result = trainer.train()
    finally:
        trainer.stop()
    assert math.isnan(result["episode_reward_mean"])
    assert result["evaluation"]["episode_reward_mean"] > 0
    assert result["evaluation"]["episodes_this_iter"] == 2


def test_simulation_input_evaluation_reports_episodes_of_the_current_policy(tmp_path):
    writer = JsonWriter(str(tmp_path), compress_columns=[])
    builder = SampleBatchBuilder()
    for t in range(20):
        builder.add_values(t=t, eps_id=1, agent_index=0, obs=np.zeros(4, np.float32),
                           actions=t % 2, action_prob=0.5, rewards=1.0, dones=t == 19,
                           new_obs=np.zeros(4, np.float32))
    writer.write(builder.build_and_reset())
    writer.close()
    trainer = PGTrainer(env="CartPole-v0", config={
        "num_workers": 0, "train_batch_size": 100, "input": str(tmp_path),
        "input_evaluation": ["simulation"], "postprocess_inputs": True, "min_iter_time_s": 1,
        "seed": 0})
    try:
        # The background sampler's first episode may land after the first 1 s iteration
        # on a busy machine: give it a few iterations.
        for _ in range(10):
            result = trainer.train()
            if result["episodes_this_iter"] > 0:
                break
    finally:
        trainer.stop()
    assert not trainer.workers.local_worker().sampler.is_alive()
    assert result["episodes_this_iter"] > 0  # simulated in the background, not learned from
    assert result["episode_reward_mean"] > 0
    assert result["info"]["num_steps_trained"] % 20 == 0  # only the offline rows were learned
