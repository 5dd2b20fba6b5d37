"""Contributed algorithms: name -> loader of the Trainer class (``contrib/<name>``)."""


def _import_random_agent():
    from ray.rllib.contrib.random_agent.random_agent import RandomAgent

    return RandomAgent


CONTRIBUTED_ALGORITHMS = {"contrib/RandomAgent": _import_random_agent}
