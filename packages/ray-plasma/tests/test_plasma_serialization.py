"""Serialization: pickle 5 out-of-band buffers, zero-copy numpy, hooks, errors."""

import pickle
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plasma import serialization
from plasma.errors import SerializationError
from plasma.serialization import SerializationContext, deserialize, serialize


def roundtrip(value, **kwargs):
    serialized = serialize(value, **kwargs)
    return deserialize(serialized.to_bytes(), serialized.metadata)


def _source_at(data: bytes, misalign: int) -> memoryview:
    """``data`` in memory that starts ``misalign`` bytes past a 64-byte boundary."""
    raw = np.empty(len(data) + 128, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + misalign
    raw[start : start + len(data)] = np.frombuffer(data, np.uint8)
    return memoryview(raw[start : start + len(data)]).toreadonly()


def test_numpy_buffers_are_aligned_and_come_back_readonly_without_copy():
    array = np.arange(1000, dtype=np.float64)
    serialized = serialize({"a": array, "b": 1})
    source = _source_at(serialized.to_bytes(), 0)  # as the store's objects are
    value = deserialize(source, serialized.metadata)
    assert value["b"] == 1
    np.testing.assert_array_equal(value["a"], array)
    assert not value["a"].flags.writeable
    base = np.frombuffer(source, np.uint8)
    address = value["a"].ctypes.data
    assert base.ctypes.data <= address < base.ctypes.data + len(source)
    assert (address - base.ctypes.data) % 64 == 0


@pytest.mark.parametrize("misalign", [8, 16, 32, 48])
def test_buffers_read_from_unaligned_memory_come_back_aligned(misalign):
    # A small value held in a bytes object (inline) starts wherever malloc put it.
    array = np.arange(1000, dtype=np.float64)
    serialized = serialize([array, array[:10], "x"])
    value = deserialize(_source_at(serialized.to_bytes(), misalign), serialized.metadata)
    for got, want in zip(value[:2], (array, array[:10])):
        np.testing.assert_array_equal(got, want)
        assert got.ctypes.data % 64 == 0
        assert not got.flags.writeable
    assert value[2] == "x"


def test_self_referencing_and_shared_objects_round_trip():
    shared = [1, 2]
    cyclic: list = [shared, shared]
    cyclic.append(cyclic)
    value = roundtrip(cyclic)
    assert value[0] is value[1] and value[2] is value
    array = np.ones(10)
    pair = roundtrip((array, array))
    assert pair[0] is pair[1]


def test_closures_and_lambdas_round_trip_through_cloudpickle():
    offset = 5
    assert roundtrip(lambda x: x + offset)(1) == 6


def test_registered_serializer_travels_with_the_data():
    class Point:
        def __init__(self, x):
            self.x = x

    context = SerializationContext()
    context.register_serializer(Point, serializer=lambda p: p.x * 10, deserializer=lambda v: v + 1)
    serialized = context.serialize(Point(4))
    assert deserialize(serialized.to_bytes(), serialized.metadata) == 41


def test_register_pickle_reducer_overrides_pickling():
    class Handle:
        pass

    context = SerializationContext()
    context.register_pickle_reducer(Handle, lambda obj: (str, ("handle",)))
    serialized = context.serialize([Handle()])
    assert deserialize(serialized.to_bytes(), serialized.metadata) == ["handle"]


def test_on_object_hook_sees_each_nested_instance_once():
    class Ref:
        def __init__(self, name):
            self.name = name

    first, second = Ref("a"), Ref("b")
    seen = []
    value = roundtrip(
        {"x": [first, first], "y": (second,)}, on_object=seen.append, on_object_types=(Ref,)
    )
    assert seen == [first, second]
    assert value["x"][0] is value["x"][1] and value["y"][0].name == "b"


def test_unserializable_value_names_type_and_attribute_path():
    class Model:
        def __init__(self):
            self.lock = threading.Lock()

    class Holder:
        def __init__(self):
            self.model = Model()

    with pytest.raises(SerializationError) as info:
        serialize(Holder())
    message = str(info.value)
    assert "Holder" in message and "value.model.lock" in message and "lock" in message
    assert isinstance(pickle.loads(pickle.dumps(info.value)), SerializationError)


def test_deserialize_rejects_unknown_formats():
    with pytest.raises(SerializationError, match="unknown serialization format"):
        deserialize(b"xxxx", b"other")


def test_large_buffers_copy_correctly_with_two_threads(monkeypatch):
    monkeypatch.setattr(serialization, "_PARALLEL_COPY_BYTES", 1024)
    array = np.random.default_rng(0).integers(0, 255, 100_003, dtype=np.uint8)
    np.testing.assert_array_equal(roundtrip(array), array)


def test_non_contiguous_arrays_round_trip_in_band():
    array = np.arange(100).reshape(10, 10)[:, ::2]
    np.testing.assert_array_equal(roundtrip(array), array)


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda children: (
        st.lists(children) | st.dictionaries(st.text(), children) | st.tuples(children)
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(json_like)
def test_plain_values_round_trip(value):
    assert roundtrip(value) == value


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(["u1", "i4", "f8", "c16", "?"]),
    st.lists(st.integers(0, 6), min_size=0, max_size=3),
)
def test_numpy_arrays_of_any_dtype_and_shape_round_trip(dtype, shape):
    array = np.arange(int(np.prod(shape)) if shape else 1).astype(dtype).reshape(shape)
    value = roundtrip([array, array])
    np.testing.assert_array_equal(value[0], array)
    assert value[0].dtype == array.dtype and value[0] is value[1]


class Node:
    def __init__(self, label):
        self.label = label
        self.edges = []


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 8).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=20),
        )
    )
)
def test_object_graphs_with_cycles_and_sharing_keep_their_shape(graph):
    count, edges = graph
    nodes = [Node(index) for index in range(count)]
    for source, target in edges:
        nodes[source].edges.append(nodes[target])  # self-loops, cycles, shared targets
    copy = roundtrip(nodes)
    position = {id(node): index for index, node in enumerate(copy)}
    assert len(position) == count
    for original, copied in zip(nodes, copy):
        assert copied.label == original.label
        assert [position[id(target)] for target in copied.edges] == [
            t.label for t in original.edges
        ]
