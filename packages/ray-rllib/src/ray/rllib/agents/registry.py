"""Algorithm names (``--run``, ``tune.run("PPO")``) -> Trainer classes, imported lazily."""

from __future__ import annotations


def _import_ppo():
    from ray.rllib.agents.ppo import PPOTrainer

    return PPOTrainer


def _import_pg():
    from ray.rllib.agents.pg import PGTrainer

    return PGTrainer


def _import_a2c():
    from ray.rllib.agents.a3c import A2CTrainer

    return A2CTrainer


def _import_a3c():
    from ray.rllib.agents.a3c import A3CTrainer

    return A3CTrainer


def _import_dqn():
    from ray.rllib.agents.dqn import DQNTrainer

    return DQNTrainer


ALGORITHMS = {"PPO": _import_ppo, "PG": _import_pg, "A2C": _import_a2c, "A3C": _import_a3c}
def _lazy_simple_q():
    from ray.rllib.agents.dqn import SimpleQTrainer

    return SimpleQTrainer


def _import_ddpg():
    from ray.rllib.agents.ddpg import DDPGTrainer

    return DDPGTrainer


def _import_td3():
    from ray.rllib.agents.ddpg import TD3Trainer

    return TD3Trainer


def _import_sac():
    from ray.rllib.agents.sac import SACTrainer

    return SACTrainer


def _import_apex():
    from ray.rllib.agents.dqn import ApexTrainer

    return ApexTrainer


def _import_apex_ddpg():
    from ray.rllib.agents.ddpg import ApexDDPGTrainer

    return ApexDDPGTrainer


ALGORITHMS["DQN"] = _import_dqn
ALGORITHMS["SimpleQ"] = _lazy_simple_q
ALGORITHMS["APEX"] = _import_apex
ALGORITHMS["APEX_DDPG"] = _import_apex_ddpg
ALGORITHMS["DDPG"] = _import_ddpg
ALGORITHMS["TD3"] = _import_td3
ALGORITHMS["SAC"] = _import_sac


def _lazy(module: str, cls: str):
    def load():
        import importlib

        return getattr(importlib.import_module(module), cls)

    return load


# Distributed, derivative-free, multi-agent and offline algorithms.
ALGORITHMS.update({
    "IMPALA": _lazy("ray.rllib.agents.impala", "ImpalaTrainer"),
    "APPO": _lazy("ray.rllib.agents.ppo.appo", "APPOTrainer"),
    "ES": _lazy("ray.rllib.agents.es", "ESTrainer"),
    "ARS": _lazy("ray.rllib.agents.ars", "ARSTrainer"),
    "MARWIL": _lazy("ray.rllib.agents.marwil", "MARWILTrainer"),
    "QMIX": _lazy("ray.rllib.agents.qmix", "QMixTrainer"),
    "VDN": _lazy("ray.rllib.agents.qmix", "VDNTrainer"),
})


def _grouped_twostep(env_config):
    from ray.rllib.env.twostep_game import TwoStepGame

    return TwoStepGame.grouped(env_config)


def _register_bundled_envs() -> None:
    """The QMIX two-step game by name (``--env grouped_twostep``), in every process."""
    from ray.tune import registry

    registry.register_lazy(registry.ENV_CREATOR, "grouped_twostep", lambda: _grouped_twostep)


_register_bundled_envs()


def _all_algorithms() -> dict:
    from ray.rllib.agents.mock import MOCK_ALGORITHMS  # Ray 0.7's __fake etc. (Tune tests)
    from ray.rllib.contrib.registry import CONTRIBUTED_ALGORITHMS

    return {**ALGORITHMS, **CONTRIBUTED_ALGORITHMS, **MOCK_ALGORITHMS}


def get_agent_class(alg: str) -> type:
    """The Trainer class registered under ``alg`` (``contrib/<Name>`` for contributed ones)."""
    algorithms = _all_algorithms()
    if alg in algorithms:
        return algorithms[alg]()
    import difflib

    close = difflib.get_close_matches(alg, list(algorithms), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"Unknown algorithm {alg!r}.{hint} Available: {sorted(algorithms)}")


get_trainer_class = get_agent_class


def register_with_tune() -> None:
    """Make ``tune.run("PPO")`` etc. work (lazily: nothing heavy is imported here)."""
    from ray.tune import registry

    for name, loader in _all_algorithms().items():
        if not registry.contains(registry.TRAINABLE_CLASS, name):
            registry.register_lazy(registry.TRAINABLE_CLASS, name, loader)
