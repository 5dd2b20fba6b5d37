"""API stability markers (documentation only: they return their argument)."""


def PublicAPI(obj):
    """Stable public API: trainer configs, Trainer, Policy, env interfaces."""
    return obj


def DeveloperAPI(obj):
    """Mostly stable API for developers extending RLlib."""
    return obj


def override(cls):
    """Mark a method as overriding one of ``cls`` (checked when the class is built)."""

    def check(method):
        if method.__name__ not in dir(cls):
            raise NameError(f"{method.__name__} does not override any method of {cls.__name__}")
        return method

    return check
