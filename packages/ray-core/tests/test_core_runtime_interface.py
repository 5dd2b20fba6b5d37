"""The runtime interface both runtimes implement, and the typed wire messages."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ray
from ray._private import messages
from ray._private.runtime.core_worker import CoreWorker
from ray._private.runtime.interface import LocalModeUnsupported, Runtime
from ray._private.runtime.local_mode import LocalRuntime

IMPLEMENTATIONS = [CoreWorker, LocalRuntime]


def _interface_methods() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in vars(Runtime).items()
            if getattr(fn, "__isabstractmethod__", False)}


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda c: c.__name__)
def test_each_runtime_implements_every_method_of_the_interface(impl):
    assert issubclass(impl, Runtime)
    assert not inspect.isabstract(impl), sorted(getattr(impl, "__abstractmethods__", ()))
    for name, expected in _interface_methods().items():
        got = inspect.signature(getattr(impl, name))
        assert list(got.parameters) == list(expected.parameters), (impl.__name__, name)


def test_the_interface_declares_what_the_public_api_calls():
    # Everything `import ray` asks of a runtime is on the interface, so no caller has
    # to ask which runtime it has.
    methods = set(_interface_methods())
    assert {"put", "get", "wait", "submit_task", "create_actor", "submit_actor_task",
            "named_actor", "identity", "gcs_client", "placement_groups", "timeline_events",
            "profile_span", "reference_table", "pushed_errors", "shutdown"} <= methods


def test_local_mode_names_what_to_use_for_cluster_only_features():
    ray.init(local_mode=True)
    try:
        rt = ray._private.runtime.current()
        for call in (rt.gcs_client, rt.placement_groups):
            with pytest.raises(LocalModeUnsupported, match="local_mode=True"):
                call()
        with pytest.raises(LocalModeUnsupported, match="Placement groups need a cluster"):
            ray.util.placement_group([{"CPU": 1}])
        assert ray.timeline() == []
        assert ray.errors() == []
        with ray.profile("nothing recorded"):
            pass
        ctx = ray.get_runtime_context()
        assert ctx.get_node_id() == "local" and ctx.get_task_id() is None
    finally:
        ray.shutdown()


def test_local_mode_actor_can_exit_and_is_dead_afterwards():
    ray.init(local_mode=True)
    try:
        @ray.remote
        class Quitter:
            def who(self):
                return ray.get_runtime_context().get_actor_id()

            def quit(self):
                ray.actor.exit_actor()

        q = Quitter.remote()
        assert ray.get(q.who.remote()) == q._actor_id.hex()
        ray.get(q.quit.remote())
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(q.who.remote())
        with pytest.raises(TypeError, match="non-actor worker"):
            ray.actor.exit_actor()
    finally:
        ray.shutdown()


# -- wire messages ----------------------------------------------------------------------------
owners = st.builds(messages.OwnerAddress, st.text(max_size=15), st.integers(0, 65535),
                   st.text(max_size=40), st.binary(min_size=20, max_size=20))
inline_args = st.builds(messages.InlineArg, st.binary(max_size=8), st.binary(max_size=64),
                        st.none() | st.binary(min_size=20, max_size=20))
ref_args = st.builds(messages.RefArg, st.binary(min_size=20, max_size=20), owners)
specs = st.builds(
    messages.TaskSpec,
    task_id=st.binary(min_size=16, max_size=16), job_id=st.text(max_size=8),
    function_id=st.binary(max_size=20), name=st.text(max_size=20),
    args=st.lists(inline_args | ref_args, max_size=4), kwarg_names=st.lists(st.text(max_size=5),
                                                                             max_size=2),
    num_returns=st.integers(0, 5), owner=owners,
    kind=st.sampled_from([messages.TaskKind.NORMAL, messages.TaskKind.ACTOR_CREATION,
                          messages.TaskKind.ACTOR_METHOD]),
    resource_ids=st.none() | st.just({"CPU": [[0, 1.0]]}),
    actor_id=st.none() | st.binary(min_size=16, max_size=16),
    method=st.none() | st.text(max_size=10), seq=st.integers(0, 2**31),
    submitted_at=st.none() | st.floats(0, 2e9), max_calls=st.integers(0, 10),
    placement_group=st.none() | st.builds(messages.PlacementGroupCapture, st.text(max_size=8),
                                          st.integers(-1, 4), st.booleans()),
    actor_creation=st.none() | st.builds(messages.ActorCreation,
                                         st.binary(min_size=16, max_size=16),
                                         st.text(max_size=8), st.integers(1, 100),
                                         st.booleans(), st.integers(0, 3), st.booleans()),
    enable_task_events=st.booleans(),
)


@given(specs)
def test_task_spec_round_trips_through_msgpack(spec):
    import msgpack

    wire = msgpack.unpackb(msgpack.packb(spec.to_wire(), use_bin_type=True), raw=False)
    back = messages.TaskSpec.from_wire(wire)
    assert back.to_wire() == spec.to_wire()
    assert back.return_ids() == spec.return_ids()


@pytest.mark.parametrize("wire", [None, [], [b"x"] * 3, "spec", [b"\x00" * 15] + [None] * 16])
def test_malformed_task_specs_are_refused_with_a_named_error(wire):
    with pytest.raises(messages.MalformedMessage):
        messages.TaskSpec.from_wire(wire)


def test_lease_request_accepts_the_short_form_and_rejects_unknown_strategies():
    req = messages.LeaseRequest.from_wire([{"CPU": 1}, b"\x01\x00\x00\x00", False, False, None])
    assert req.shape == {"CPU": 1} and req.strategy is None and req.runtime_env is None
    with pytest.raises(messages.MalformedMessage, match="strategy"):
        messages.LeaseRequest.from_wire([{"CPU": 1}, b"", False, False, None, False, "PACK"])
    with pytest.raises(messages.MalformedMessage, match="mapping"):
        messages.LeaseRequest.from_wire([["CPU"], b"", False, False, None])


def test_lease_replies_round_trip():
    owner = messages.OwnerAddress("10.0.0.1", 1234, "/tmp/s", b"w" * 20)
    for reply in (messages.LeaseGranted(b"w" * 20, owner, {"GPU": [[1, 1.0]]}, "ab" * 8),
                  messages.LeaseSpillback(messages.RayletAddress("cd" * 8, "10.0.0.2", 99)),
                  messages.LeaseFailed(messages.LeaseFailed.RUNTIME_ENV_SETUP, "no zip")):
        back = messages.lease_reply_from_wire(reply.to_wire())
        assert type(back) is type(reply) and back.to_wire() == reply.to_wire()
    with pytest.raises(messages.MalformedMessage):
        messages.lease_reply_from_wire([7, "what"])


def test_tasks_and_actors_fail_a_lease_the_same_way():
    # One LeaseClient serves both paths: a hard affinity to a node that does not exist
    # fails the task with TaskUnschedulableError and kills the actor with the same cause.
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray.init(num_cpus=1)
    try:
        gone = NodeAffinitySchedulingStrategy("ff" * 20, soft=False)

        @ray.remote
        def where():
            return ray.get_runtime_context().get_node_id()

        @ray.remote
        class Where:
            def node(self):
                return ray.get_runtime_context().get_node_id()

        with pytest.raises(ray.exceptions.TaskUnschedulableError, match="unknown"):
            ray.get(where.options(scheduling_strategy=gone).remote(), timeout=30)
        actor = Where.options(scheduling_strategy=gone).remote()
        with pytest.raises(ray.exceptions.RayActorError, match="NodeAffinitySchedulingStrategy"):
            ray.get(actor.node.remote(), timeout=30)
        here = Where.remote()
        assert ray.get(here.node.remote(), timeout=30) == ray.get_runtime_context().get_node_id()
    finally:
        ray.shutdown()


def test_fetching_ready_arguments_keeps_the_tasks_cpu():
    # A task whose argument is ready at its owner does not lend its CPU while fetching it
    # (Ray does not release a task's CPU for its arguments), so the next task of the same
    # shape waits for this worker instead of starting another on the lent CPU.
    import os

    ray.init(num_cpus=1)
    try:
        @ray.remote
        def big():
            return [1] * (1024 * 1024)  # stored in the object store, fetched by reference

        @ray.remote
        def first(*args, **kwargs):
            assert args[0] == ray.get(kwargs["o"][0])  # already here: no wait, no lending
            return os.getpid()

        @ray.remote
        def second(*args):
            return os.getpid()

        ref = big.remote()
        ray.wait([ref], timeout=30)
        pids = ray.get([first.remote(ref, o=[ref]), second.remote(ref)], timeout=60)
        assert pids[0] == pids[1]
    finally:
        ray.shutdown()
