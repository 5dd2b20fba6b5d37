"""``ray.util.check_serialize``: find what stops an object from pickling (Ray's module
name; the code lives in ``ray.cloudpickle._inspect``)."""

from ray.cloudpickle._inspect import FailureTuple, inspect_serializability

__all__ = ["FailureTuple", "inspect_serializability"]
