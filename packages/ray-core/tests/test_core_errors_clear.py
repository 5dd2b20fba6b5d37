"""Bad input gets an error that names the problem and the fix: values that cannot be
serialized, functions and classes that cannot be pickled, arguments larger than the
object store. (A cluster YAML full of mistakes: ray-autoscaler's test_autoscaler_config.)"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ray
from ray.exceptions import ObjectStoreFullError, RayTaskError

STORE_BYTES = 64 * 1024**2


@pytest.fixture(scope="module")
def small_store():
    ray.init(num_cpus=1, object_store_memory=STORE_BYTES)
    yield
    ray.shutdown()


class Holder:
    def __init__(self):
        self.lock = threading.Lock()


@ray.remote
def identity(x):
    return x


def test_put_of_an_unserializable_value_names_the_culprit_and_the_fix(small_store):
    with pytest.raises(TypeError) as info:
        ray.put({"model": Holder()})
    message = str(info.value)
    # Ray's text and inspect_serializability's report, with the attribute path and fix.
    assert message.startswith("Could not serialize the put value {'model': <")
    assert "Checking Serializability of" in message
    assert "value['model'].lock" in message
    assert "ray.util.register_serializer" in message


def test_unserializable_task_argument_fails_at_submission(small_store):
    with pytest.raises(TypeError, match=r"(?s)Could not serialize the argument <.*Holder object"
                                        r" .* for a task or actor .*identity:.*cannot pickle"
                                        r".*register_serializer"):
        identity.remote(Holder())


def test_unserializable_return_value_is_a_task_error_naming_the_fix(small_store):
    @ray.remote
    def make():
        return Holder()

    with pytest.raises(RayTaskError, match="register_serializer"):
        ray.get(make.remote(), timeout=60)


def test_function_that_cannot_be_pickled_says_what_to_move(small_store):
    lock = threading.Lock()

    @ray.remote
    def uses_lock():
        return lock.locked()

    with pytest.raises(TypeError, match=r"(?s)Could not serialize the function .*uses_lock:\n"
                                        r".*FailTuple\(lock .*create it inside the function"):
        uses_lock.remote()


def test_actor_class_that_cannot_be_pickled_says_what_to_move(small_store):
    lock = threading.Lock()

    @ray.remote
    class UsesLock:
        def locked(self):
            return lock.locked()

    with pytest.raises(TypeError, match=r"(?s)Could not serialize the actor class "
                                        r".*UsesLock.__init__:\n.*FailTuple\(lock "):
        UsesLock.remote()


def test_argument_larger_than_the_store_names_sizes_and_the_setting(small_store):
    huge = np.zeros(STORE_BYTES + 16 * 1024**2, dtype=np.uint8)
    with pytest.raises(ObjectStoreFullError, match="object store is full") as info:
        identity.remote(huge)
    message = str(info.value)
    assert "capacity" in message and "object_store_memory" in message
    del huge
    # The store is still usable afterwards.
    assert ray.get(identity.remote(np.ones(1000)), timeout=60).sum() == 1000
