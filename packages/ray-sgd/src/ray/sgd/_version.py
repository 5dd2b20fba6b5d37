"""The ray-sgd version: its one source (pyproject reads it; ci/bump_version.py sets it)."""

__version__ = "0.7.0"
