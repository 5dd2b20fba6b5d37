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


ALGORITHMS = {"PPO": _import_ppo, "PG": _import_pg, "A2C": _import_a2c, "A3C": _import_a3c}
CONTRIBUTED_ALGORITHMS: dict = {}


def get_agent_class(alg: str) -> type:
    """The Trainer class registered under ``alg``."""
    if alg in ALGORITHMS:
        return ALGORITHMS[alg]()
    if alg.startswith("contrib/") and alg[len("contrib/"):] in CONTRIBUTED_ALGORITHMS:
        return CONTRIBUTED_ALGORITHMS[alg[len("contrib/"):]]()
    import difflib

    close = difflib.get_close_matches(alg, list(ALGORITHMS), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"Unknown algorithm {alg!r}.{hint} Available: {sorted(ALGORITHMS)}")


get_trainer_class = get_agent_class


def register_with_tune() -> None:
    """Make ``tune.run("PPO")`` etc. work (lazily: nothing heavy is imported here)."""
    from ray.tune import registry

    for name, loader in ALGORITHMS.items():
        if not registry.contains(registry.TRAINABLE_CLASS, name):
            registry.register_lazy(registry.TRAINABLE_CLASS, name, loader)
