"""IMPALA/APPO (V-trace, learner thread), ES/ARS, QMIX/VDN and MARWIL.

Short learning checks run in CI (marker ``learning``); the full bars of issue 10
are ``learning and slow`` (and benchmarks/bench_rllib_<alg>.py print figures).
"""

import json
import os
import shutil
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from ray.rllib.agents.impala import vtrace
from ray.rllib.agents.registry import get_agent_class
from ray.rllib.env.twostep_game import TwoStepGame
from ray.rllib.evaluation.sample_batch_builder import SampleBatchBuilder
from ray.rllib.offline import JsonWriter
from ray.tune import register_env


def _evaluate(trainer, env_id="CartPole-v1", episodes=5):
    env = gym.make(env_id)
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=1000 + i)
        total, done = 0.0, False
        while not done:
            obs, reward, term, trunc, _ = env.step(trainer.compute_action(obs, explore=False))
            total += reward
            done = term or trunc
        returns.append(total)
    return float(np.mean(returns))


def _greedy_twostep_return(trainer):
    env = TwoStepGame.grouped()
    obs, total, done = env.reset(), 0.0, False
    while not done:
        action = trainer.compute_action(obs["group_1"], explore=False)
        obs, rewards, dones, _ = env.step({"group_1": action})
        total += rewards["group_1"]
        done = dones["__all__"]
    return total


def _expert_cartpole_data(path, episodes=20, seed=0):
    """A good hand-written controller, 20% random actions, written as documented."""
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(seed)
    writer, builder = JsonWriter(str(path)), SampleBatchBuilder()
    for eps_id in range(episodes):
        obs, _ = env.reset(seed=seed * 1000 + eps_id)
        done, t = False, 0
        while not done:
            greedy = int(obs[2] + 0.5 * obs[3] > 0)
            action = greedy if rng.random() > 0.2 else int(rng.integers(2))
            new_obs, reward, term, trunc, _ = env.step(action)
            done = term or trunc
            builder.add_values(t=t, eps_id=eps_id, agent_index=0, obs=obs, actions=action,
                               action_prob=0.9 if action == greedy else 0.1, rewards=reward,
                               dones=term, new_obs=new_obs)
            obs, t = new_obs, t + 1
        writer.write(builder.build_and_reset())
    writer.close()


# --- V-trace ----------------------------------------------------------------------------------


def _vtrace_by_definition(log_rhos, discounts, rewards, values, bootstrap, clip_rho, clip_pg):
    """Eq. (1) of the IMPALA paper, summed term by term for one trajectory."""
    n = len(rewards)
    rhos = np.exp(log_rhos)
    values_next = np.append(values[1:], bootstrap)
    vs = np.zeros(n)
    for s in range(n):
        total = values[s]
        for t in range(s, n):
            weight = np.prod(discounts[s:t]) * np.prod(np.minimum(1.0, rhos[s:t]))
            delta = min(clip_rho, rhos[t]) * (rewards[t] + discounts[t] * values_next[t]
                                              - values[t])
            total += weight * delta
        vs[s] = total
    vs_next = np.append(vs[1:], bootstrap)
    pg = np.minimum(clip_pg, rhos) * (rewards + discounts * vs_next - values)
    return vs, pg


def test_vtrace_matches_the_paper_definition_on_two_fragments():
    rng = np.random.default_rng(0)
    lengths, clip_rho, clip_pg = [5, 3], 1.0, 1.2
    parts = [dict(log_rhos=rng.normal(0, 0.5, n), discounts=np.full(n, 0.9),
                  rewards=rng.normal(size=n), values=rng.normal(size=n),
                  bootstrap=float(rng.normal())) for n in lengths]
    parts[1]["discounts"][-1] = 0.0  # the second fragment's episode terminates
    flat = {k: np.concatenate([p[k] for p in parts])
            for k in ("log_rhos", "discounts", "rewards", "values")}
    next_values = np.concatenate([np.append(p["values"][1:], p["bootstrap"]) for p in parts])
    ends = np.zeros(sum(lengths), dtype=bool)
    ends[[4, 7]] = True
    out = vtrace.from_importance_weights(flat["log_rhos"], flat["discounts"], flat["rewards"],
                                         flat["values"], next_values, ends, clip_rho, clip_pg)
    expected = [_vtrace_by_definition(p["log_rhos"], p["discounts"], p["rewards"],
                                      p["values"], p["bootstrap"], clip_rho, clip_pg)
                for p in parts]
    np.testing.assert_allclose(out.vs, np.concatenate([e[0] for e in expected]))
    np.testing.assert_allclose(out.pg_advantages, np.concatenate([e[1] for e in expected]))


def test_segment_ends_split_on_episode_agent_and_time_gaps():
    batch = {"rewards": np.zeros(6), "eps_id": np.array([1, 1, 2, 2, 2, 2]),
             "t": np.array([0, 1, 0, 1, 5, 6]), "agent_index": np.zeros(6)}
    assert vtrace.segment_ends(batch).tolist() == [False, True, False, True, False, True]


# --- the distributed data flow ----------------------------------------------------------------


@pytest.mark.timeout(180)
def test_impala_learns_in_a_thread_on_batches_from_remote_workers(ray_start_2_cpus):
    trainer = get_agent_class("IMPALA")(env="CartPole-v1", config={
        "num_workers": 2, "min_iter_time_s": 3, "train_batch_size": 200,
        "sample_batch_size": 50, "seed": 0})
    try:
        result = trainer.train()
        result = trainer.train()
        info = result["info"]
        assert info["num_steps_trained"] > 0 and info["num_steps_sampled"] > 0
        assert info["num_weight_syncs"] > 0  # workers got the learner's new weights
        assert trainer.optimizer.learner.is_alive()
        stats = info["learner"]["default_policy"]
        assert np.isfinite(stats["vf_loss"]) and stats["entropy"] > 0
    finally:
        trainer.stop()
    assert not trainer.optimizer.learner.is_alive()


@pytest.mark.timeout(180)
def test_async_optimizers_drive_an_a2c_policy(ray_start_2_cpus):
    from ray.rllib.agents.a3c import A2CTrainer
    from ray.rllib.optimizers import AsyncGradientsOptimizer, SyncSamplesOptimizer

    trainer = A2CTrainer(env="CartPole-v1", config={"num_workers": 1, "sample_batch_size": 20,
                                                     "min_iter_time_s": 0})
    try:
        sync = SyncSamplesOptimizer(trainer.workers, train_batch_size=100)
        stats = sync.step()
        assert sync.num_steps_sampled >= 100 and "default_policy" in stats
        grads = AsyncGradientsOptimizer(trainer.workers, grads_per_step=4)
        stats = grads.step()
        assert grads.num_steps_trained == 4 * 20  # 20 steps per gradient
        assert "policy_loss" in stats["default_policy"]
    finally:
        trainer.stop()


def test_impala_replay_needs_slots():
    with pytest.raises(ValueError, match="replay_buffer_num_slots"):
        get_agent_class("IMPALA")(env="CartPole-v1", config={
            "num_workers": 0, "replay_proportion": 0.5})


# --- every algorithm through tune.run and `rllib train` ------------------------------------


def _small_config(alg, tmp_path):
    if alg in ("IMPALA", "APPO"):
        return "CartPole-v1", {"num_workers": 1, "min_iter_time_s": 1, "train_batch_size": 100}
    if alg in ("ES", "ARS"):
        extra = {"episodes_per_batch": 4, "train_batch_size": 100} if alg == "ES" else \
            {"num_rollouts": 4, "rollouts_used": 2}
        return "CartPole-v1", dict(extra, num_workers=1, noise_size=100_000,
                                   model={"fcnet_hiddens": [8]})
    if alg == "MARWIL":
        data = tmp_path / "data"
        if not data.exists():
            _expert_cartpole_data(data, episodes=2)
        return "CartPole-v1", {"input": str(data), "train_batch_size": 64}
    return "grouped_twostep", {"learning_starts": 10, "timesteps_per_iteration": 20,
                               "min_iter_time_s": 0}


def _run_under_tune(algorithms, tmp_path):
    from ray import tune

    for alg in algorithms:
        env, config = _small_config(alg, tmp_path)
        analysis = tune.run(alg, stop={"training_iteration": 1}, config=dict(config, env=env),
                            local_dir=str(tmp_path / "results"), verbose=0)
        trials = getattr(analysis, "trials", analysis)
        assert trials[0].last_result["training_iteration"] == 1, alg
        assert trials[0].last_result["timesteps_total"] > 0, alg


@pytest.mark.timeout(300)
def test_one_algorithm_per_family_runs_under_tune(ray_start_2_cpus, tmp_path):
    _run_under_tune(["IMPALA", "ES", "QMIX", "MARWIL"], tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_other_algorithms_run_under_tune(ray_start_2_cpus, tmp_path):
    _run_under_tune(["APPO", "ARS", "VDN"], tmp_path)


@pytest.mark.parametrize("alg", [
    "ARS", *(pytest.param(a, marks=pytest.mark.slow)
             for a in ("MARWIL", "IMPALA", "APPO", "ES", "QMIX", "VDN"))])
@pytest.mark.timeout(300)
def test_rllib_train_cli(alg, tmp_path):
    env, config = _small_config(alg, tmp_path)
    rllib = shutil.which("rllib") or os.path.join(os.path.dirname(sys.executable), "rllib")
    out = subprocess.run(
        [rllib, "train", "--run", alg, "--env", env, "--ray-num-cpus", "2",
         "--stop", json.dumps({"training_iteration": 1}), "--config", json.dumps(config),
         "--local-dir", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
        env=dict(os.environ, HOME=str(tmp_path)))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert any("result.json" in files for _r, _d, files in os.walk(tmp_path / "results"))


def test_old_class_names_import():
    from ray.rllib.agents.ars import ARSTrainer
    from ray.rllib.agents.es import ESTrainer
    from ray.rllib.agents.impala import ImpalaTrainer
    from ray.rllib.agents.marwil import MARWILTrainer
    from ray.rllib.agents.ppo import APPOTrainer
    from ray.rllib.agents.qmix import QMixTrainer

    assert [get_agent_class(a) for a in ("IMPALA", "APPO", "ES", "ARS", "QMIX", "MARWIL")] == [
        ImpalaTrainer, APPOTrainer, ESTrainer, ARSTrainer, QMixTrainer, MARWILTrainer]


def test_es_checkpoint_round_trip(ray_start_2_cpus, tmp_path):
    trainer = get_agent_class("ARS")(env="CartPole-v1", config={
        "num_workers": 1, "num_rollouts": 4, "rollouts_used": 2, "noise_size": 100_000})
    try:
        trainer.train()
        path = trainer.save(str(tmp_path))
        obs = np.array([0.01, 0.2, -0.03, 0.1])
        action = trainer.compute_action(obs)
        weights = trainer.get_weights()["default_policy"].copy()
        trainer.train()
        trainer.restore(path)
        np.testing.assert_array_equal(trainer.get_weights()["default_policy"], weights)
        assert trainer.compute_action(obs) == action
    finally:
        trainer.stop()


def test_qmix_rejects_ungrouped_agents():
    register_env("ungrouped_twostep", lambda cfg: TwoStepGame(cfg))
    with pytest.raises(ValueError, match="with_agent_groups"):
        get_agent_class("QMIX")(env="ungrouped_twostep", config={
            "multiagent": {"policies": {"default_policy": (
                None, TwoStepGame.observation_space, TwoStepGame.action_space, {})}}})


# --- short learning checks (CI) -------------------------------------------------------------


@pytest.mark.learning
@pytest.mark.timeout(300)
@pytest.mark.parametrize("alg", ["IMPALA", "APPO"])
def test_impala_appo_cartpole_short(alg):
    trainer = get_agent_class(alg)(env="CartPole-v1", config={
        "num_workers": 0, "num_envs_per_worker": 5, "min_iter_time_s": 0, "seed": 0})
    try:
        result = {}
        while not result or result["timesteps_total"] < 30_000:
            result = trainer.train()
        assert result["episode_reward_mean"] >= 60  # random play: ~22
    finally:
        trainer.stop()


@pytest.mark.learning
@pytest.mark.timeout(300)
def test_ars_and_es_cartpole_short(ray_start_2_cpus):
    ars = get_agent_class("ARS")(env="CartPole-v1", config={
        "num_workers": 1, "num_rollouts": 16, "rollouts_used": 8, "noise_size": 1_000_000,
        "seed": 0})
    try:
        while ars.train()["timesteps_total"] < 40_000:
            pass
        assert _evaluate(ars) >= 150
    finally:
        ars.stop()
    es = get_agent_class("ES")(env="CartPole-v1", config={
        "num_workers": 1, "episodes_per_batch": 50, "train_batch_size": 2000,
        "stepsize": 0.02, "noise_size": 1_000_000, "model": {"fcnet_hiddens": [32, 32]},
        "seed": 0})
    try:
        start = es.train()["noisy_return_mean"]
        while (result := es.train())["timesteps_total"] < 30_000:
            pass
        assert result["noisy_return_mean"] >= max(60, 2 * start)
    finally:
        es.stop()


@pytest.mark.learning
@pytest.mark.timeout(300)
def test_qmix_finds_the_two_step_optimum_short():
    trainer = get_agent_class("QMIX")(env="grouped_twostep", config={
        "learning_starts": 300, "schedule_max_timesteps": 10_000,
        "target_network_update_freq": 200, "timesteps_per_iteration": 500,
        "min_iter_time_s": 0, "seed": 0})
    try:
        while trainer.train()["timesteps_total"] < 3000:
            pass
        assert _greedy_twostep_return(trainer) == 8.0
    finally:
        trainer.stop()


@pytest.mark.learning
@pytest.mark.timeout(300)
def test_marwil_imitates_logged_expert_short(tmp_path):
    _expert_cartpole_data(tmp_path / "expert")
    trainer = get_agent_class("MARWIL")(env="CartPole-v1", config={
        "input": str(tmp_path / "expert"), "lr": 1e-3, "train_batch_size": 500,
        "timesteps_per_iteration": 5000, "seed": 0})
    try:
        for _ in range(10):
            result = trainer.train()
            if _evaluate(trainer) >= 150:
                break
        assert _evaluate(trainer) >= 150
        assert {"is", "wis"} <= set(result["off_policy_estimator"])
    finally:
        trainer.stop()


# --- the full bars of issue 10 (`learning and slow`) -----------------------------------------


def _tuned(name):
    import yaml

    import ray.rllib

    path = os.path.join(os.path.dirname(ray.rllib.__file__), "tuned_examples", f"{name}.yaml")
    with open(path) as f:
        return yaml.safe_load(f)[name]


@pytest.mark.slow
@pytest.mark.learning
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", ["cartpole-impala", "cartpole-appo", "cartpole-es",
                                  "cartpole-ars"])
def test_cartpole_bar(name, ray_start_2_cpus):
    """IMPALA/APPO: mean >= 150 within 500k steps; ES/ARS: mean >= 150."""
    spec = _tuned(name)
    trainer = get_agent_class(spec["run"])(env=spec["env"], config=dict(spec["config"], seed=0))
    try:
        result = {}
        while not result or result["timesteps_total"] < spec["stop"]["timesteps_total"]:
            result = trainer.train()
            if result["episode_reward_mean"] >= 150:
                break
        assert result["episode_reward_mean"] >= 150
    finally:
        trainer.stop()


@pytest.mark.slow
@pytest.mark.learning
@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_qmix_solves_the_two_step_game(seed):
    trainer = get_agent_class("QMIX")(env="grouped_twostep", config={
        "learning_starts": 500, "schedule_max_timesteps": 20_000,
        "target_network_update_freq": 200, "timesteps_per_iteration": 1000,
        "min_iter_time_s": 0, "seed": seed})
    try:
        while trainer.train()["timesteps_total"] < 20_000:
            if _greedy_twostep_return(trainer) == 8.0:
                break
        assert _greedy_twostep_return(trainer) == 8.0
    finally:
        trainer.stop()


@pytest.mark.slow
@pytest.mark.learning
@pytest.mark.timeout(1800)
def test_marwil_on_ppo_generated_data_bar(tmp_path):
    """PPO writes its samples (40k steps, early poor ones included); MARWIL learns >= 150."""
    from ray.rllib.agents.ppo import PPOTrainer

    ppo_spec = _tuned("cartpole-ppo")
    ppo = PPOTrainer(env="CartPole-v1", config=dict(
        ppo_spec["config"], seed=0, output=str(tmp_path / "ppo")))
    try:
        while ppo.train()["timesteps_total"] < 40_000:
            pass
    finally:
        ppo.stop()
    trainer = get_agent_class("MARWIL")(env="CartPole-v1", config={
        "input": str(tmp_path / "ppo"), "lr": 1e-3, "train_batch_size": 500,
        "timesteps_per_iteration": 10_000, "seed": 0})
    try:
        for _ in range(100):
            trainer.train()
            if _evaluate(trainer, episodes=3) >= 150:
                break
        assert _evaluate(trainer, episodes=10) >= 150
    finally:
        trainer.stop()
