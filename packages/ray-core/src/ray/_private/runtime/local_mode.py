"""``ray.init(local_mode=True)``: run every task and actor call serially in the driver.

Same public API, another runtime behind the same interface: values live in a dict,
tasks run at submission, errors surface at ``ray.get`` exactly as in cluster mode.
Used for debugging (breakpoints and prints work inside remote functions). What
needs a cluster (the GCS, placement groups) raises ``LocalModeUnsupported``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import inspect
import itertools
import os
import traceback
from typing import Any

import cloudpickle

from ray._private import ids as ids_mod
from ray._private.actor_methods import method_table
from ray._private.config import RayConfig as Config
from ray._private.messages import OwnerAddress, item_id
from ray._private.object_ref import ObjectRef
from ray._private.options import DYNAMIC
from ray._private.ref_generators import DynamicObjectRefGenerator, ObjectRefGenerator
from ray._private.runtime import actor_worker
from ray._private.runtime.interface import ActorInfo, Identity, LocalModeUnsupported, Runtime
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


class _ExitActor(BaseException):
    """exit_actor() inside a local-mode actor method: the actor is dead afterwards."""


class LocalRuntime(Runtime):
    def __init__(self, kwargs: dict, config: Config):
        self.config = config
        self.job_id = ids_mod.JobID.from_int(1)
        self.ids = ids_mod.IdGenerator(self.job_id, kwargs.get("object_id_seed"))
        self.base_task_id = self.ids.next_task_id()
        self.values: dict[bytes, object] = {}
        self.actors: dict[bytes, object] = {}
        self.actor_names: dict[tuple, bytes] = {}
        self.dead_actors: set[bytes] = set()
        self.namespace = kwargs.get("namespace") or "default"
        num_cpus = kwargs.get("num_cpus") or os.cpu_count() or 1
        self.resources = {"CPU": num_cpus, **(kwargs.get("resources") or {})}
        if kwargs.get("num_gpus"):
            self.resources["GPU"] = kwargs["num_gpus"]
        self.address_info = {"node_ip_address": "127.0.0.1", "redis_address": None,
                             "webui_url": None, "local_mode": True}
        self.runtime_env: dict = {}  # reported, not applied: there are no workers
        self.worker_id = os.urandom(20)
        self._running_actor: bytes | None = None  # the actor whose method runs now
        self._streams: dict[bytes, list[ObjectRef]] = {}  # streaming tasks' values

    # -- references (no owner bookkeeping: the dict holds every value) ----------------
    def add_local_ref(self, object_id: bytes, owner: OwnerAddress | None) -> None:
        pass  # the dict keeps every value until shutdown

    def remove_local_ref(self, object_id: bytes) -> None:
        pass  # see add_local_ref

    def owner_address(self) -> OwnerAddress | None:
        return None

    # -- objects -------------------------------------------------------------------------
    def put(self, value: Any) -> ObjectRef:
        if isinstance(value, ObjectRef):
            raise TypeError("Calling ray.put on an ObjectRef is not allowed.")
        object_id = self.ids.next_put_id(self.base_task_id)
        # Copy through pickle so later mutation by the caller does not leak in.
        self.values[object_id] = cloudpickle.loads(cloudpickle.dumps(value))
        return ObjectRef(object_id)

    def _value(self, object_id: bytes) -> Any:
        if object_id not in self.values:
            raise GetTimeoutError(f"object {object_id.hex()} does not exist in local mode")
        value = self.values[object_id]
        if isinstance(value, _Failed):
            raise value.error
        return value

    def get(self, refs: list[ObjectRef], timeout_s: float | None) -> list:
        return [self._value(r.binary()) for r in refs]

    def wait(self, refs: list[ObjectRef], num_returns: int, timeout_s: float | None,
             fetch_local: bool = True) -> tuple[list[ObjectRef], list[ObjectRef]]:
        ready = [r for r in refs if r.binary() in self.values][:num_returns]
        return ready, [r for r in refs if r not in ready]

    def as_future(self, ref: ObjectRef) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        try:
            fut.set_result(self._value(ref.binary()))
        except BaseException as exc:  # noqa: BLE001 - handed to the future's reader
            fut.set_exception(exc)
        return fut

    # -- tasks -----------------------------------------------------------------------------
    def export_function(self, fn: Any) -> Any:
        return fn  # the "id" is the function itself

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, ObjectRef):
            return self._value(value.binary())
        return copy.deepcopy(value) if isinstance(value, list | dict) else value

    def _run(self, fn, name: str, args, kwargs, num_returns: int | str) -> list:
        task_id = self.ids.next_task_id()
        if isinstance(num_returns, str):  # streaming or dynamic
            return self._run_generator(fn, name, args, kwargs, num_returns, task_id)
        refs = [ObjectRef(task_id + i.to_bytes(4, "little")) for i in range(1, num_returns + 1)]
        try:
            args = [self._resolve(a) for a in args]
            kwargs = {k: self._resolve(v) for k, v in kwargs.items()}
            result = fn(*args, **kwargs)
            if inspect.isgenerator(result):
                result = list(itertools.islice(result, num_returns))
                values = result if num_returns != 1 else result[:1]
            else:
                values = [result] if num_returns == 1 else list(result) if num_returns else []
            if len(values) != num_returns:
                raise ValueError(f"{name} returned {len(values)} values, expected {num_returns}")
        except RayTaskError as exc:
            values = [_Failed(exc)] * num_returns
        except Exception as exc:  # noqa: BLE001 - user code: its error is the task's result
            values = [_Failed(self._task_error(name, exc))] * num_returns
        for ref, value in zip(refs, values):
            self.values[ref.binary()] = value
        return refs

    @staticmethod
    def _task_error(name: str, exc: BaseException) -> BaseException:
        tb = "".join(traceback.format_exception(exc))
        return RayTaskError(name, tb, exc).as_instanceof_cause()

    def _run_generator(self, fn, name: str, args, kwargs, num_returns: str,
                       task_id: bytes) -> list:
        """A generator task run to its end now; its values wait in ``_streams``."""
        main = ObjectRef(task_id + (1).to_bytes(4, "little"))
        items: list[ObjectRef] = []

        def add(value) -> None:
            ref = ObjectRef(item_id(task_id, len(items)))
            self.values[ref.binary()] = value
            items.append(ref)

        try:
            values = fn(*[self._resolve(a) for a in args],
                        **{k: self._resolve(v) for k, v in kwargs.items()})
            for value in values:
                add(value)
        except RayTaskError as exc:
            add(_Failed(exc))
        except Exception as exc:  # noqa: BLE001 - user code: its error follows its values
            add(_Failed(self._task_error(name, exc)))
        if num_returns == DYNAMIC:
            self.values[main.binary()] = DynamicObjectRefGenerator(items)
            return [main]
        self.values[main.binary()] = None
        self._streams[task_id] = items
        return [ObjectRefGenerator(main, self)]

    # -- generators ------------------------------------------------------------------------
    def next_generator_item(self, generator_id: bytes, index: int,
                            timeout_s: float | None) -> ObjectRef:
        items = self._streams.get(generator_id, [])
        if index >= len(items):
            raise StopIteration
        return items[index]

    def generator_item_ready(self, generator_id: bytes, index: int) -> bool:
        return True  # the task ran to its end when it was submitted

    def generator_exhausted(self, generator_id: bytes, index: int) -> bool:
        return index >= len(self._streams.get(generator_id, []))

    def release_generator(self, generator_id: bytes) -> None:
        self._streams.pop(generator_id, None)

    def submit_task(self, function_id: Any, name: str, args: tuple, kwargs: dict,
                    opts: Any) -> list[ObjectRef]:
        return self._run(function_id, name, args, kwargs, opts.num_returns)

    # -- actors ----------------------------------------------------------------------------
    def create_actor(self, class_id: Any, cls: type, methods: dict, args: tuple,
                     kwargs: dict, opts: Any) -> bytes:
        actor_id = self.ids.next_task_id()
        resolved = [self._resolve(a) for a in args]
        kwargs = {k: self._resolve(v) for k, v in kwargs.items()}
        self.actors[actor_id] = class_id(*resolved, **kwargs)
        if opts.name:
            self.actor_names[(opts.namespace or self.namespace, opts.name)] = actor_id
        return actor_id

    def submit_actor_task(self, actor_id: bytes, method: str, args: tuple, kwargs: dict,
                          num_returns: int | str, enable_task_events: bool = True, *,
                          name: str | None = None, concurrency_group: str | None = None,
                          retry_exceptions: bool | tuple = False,
                          max_task_retries: int | None = None) -> list[ObjectRef]:
        # enable_task_events: local mode records no task events at all (no cluster state).
        # name, concurrency_group: every call runs at once, in the driver, in order.
        # retry_exceptions, max_task_retries: as for tasks, local mode runs a call once.
        if actor_id in self.dead_actors or actor_id not in self.actors:
            task_id = self.ids.next_task_id()
            count = 1 if isinstance(num_returns, str) else num_returns
            refs = [ObjectRef(task_id + i.to_bytes(4, "little")) for i in range(1, count + 1)]
            for ref in refs:
                self.values[ref.binary()] = _Failed(RayActorError("The actor is dead."))
            return refs
        instance = self.actors[actor_id]
        if method == "__ray_terminate__":
            self.dead_actors.add(actor_id)
            return self._run(lambda: None, method, (), {}, num_returns)
        bound = actor_worker.bind_method(instance, method)
        if inspect.isasyncgenfunction(bound):
            agen_fn = bound

            def bound(*a, **k):  # its values, collected on an event loop of its own
                async def collect():
                    return [v async for v in agen_fn(*a, **k)]

                return iter(asyncio.run(collect()))
        elif inspect.iscoroutinefunction(bound):
            coro_fn = bound

            def bound(*a, **k):
                return asyncio.run(coro_fn(*a, **k))

        def call(*a, **k):
            self._running_actor = actor_id
            try:
                return bound(*a, **k)
            except _ExitActor:
                self.dead_actors.add(actor_id)
                return None
            finally:
                self._running_actor = None

        return self._run(call, method, args, kwargs, num_returns)

    def actor_handle_created(self, actor_id: bytes) -> None:
        pass  # local actors live until shutdown (or ray.kill)

    def actor_handle_pickled(self, actor_id: bytes) -> None:
        pass  # see actor_handle_created

    def actor_handle_deleted(self, actor_id: bytes) -> None:
        pass  # see actor_handle_created

    def kill_actor(self, actor_id: bytes, no_restart: bool) -> None:
        self.dead_actors.add(actor_id)

    def named_actor(self, name: str, namespace: str | None) -> ActorInfo:
        actor_id = self.actor_names.get((namespace or self.namespace, name))
        if actor_id is None:
            raise ValueError(f"Failed to look up actor {name!r}: no actor has that name")
        cls = type(self.actors[actor_id])
        return ActorInfo(actor_id, cls.__name__, method_table(cls))

    def actor_info(self, actor_id: bytes) -> ActorInfo:
        if actor_id not in self.actors:
            raise ValueError(f"No actor {actor_id.hex()} exists in this local-mode driver.")
        cls = type(self.actors[actor_id])
        return ActorInfo(actor_id, cls.__name__, method_table(cls))

    def exit_actor(self) -> None:
        if self._running_actor is None:
            raise TypeError("exit_actor API is called on a non-actor worker: call "
                            "ray.actor.exit_actor() inside an actor's method.")
        raise _ExitActor()

    def cancel(self, ref: ObjectRef, force: bool, recursive: bool) -> None:
        pass  # every task already finished when .remote() returned: nothing to stop

    # -- who and where -------------------------------------------------------------------------
    def identity(self) -> Identity:
        return Identity(job_id=self.job_id.hex(), node_id="local",
                        worker_id=self.worker_id.hex(), namespace=self.namespace,
                        task_id=None, actor_id=None if self._running_actor is None
                        else self._running_actor.hex())

    def resource_ids_now(self) -> dict:
        return {}

    def nodes(self) -> list[dict]:
        return [{"NodeID": "local", "Alive": True, "alive": True,
                 "NodeManagerAddress": "127.0.0.1", "Resources": dict(self.resources)}]

    def cluster_resources(self) -> dict:
        return dict(self.resources)

    def available_resources(self) -> dict:
        return dict(self.resources)

    # -- cluster services ----------------------------------------------------------------------
    def gcs_client(self) -> Any:
        raise LocalModeUnsupported(
            "local_mode has no GCS (no cluster): call ray.init() without local_mode=True "
            "for cluster state, the key-value store and named actors across processes.")

    def placement_groups(self) -> Any:
        raise LocalModeUnsupported(
            "Placement groups need a cluster: they are not available in local_mode; call "
            "ray.init() without local_mode=True.")

    def timeline_events(self) -> list[dict]:
        return []  # local mode runs tasks inside the driver and records no timeline

    def profile_span(self, event_type: str, name: str, extra: dict | None = None):
        return contextlib.nullcontext()

    def reference_table(self) -> list[dict]:
        return []  # values live in one dict; nothing is reference counted

    def pushed_errors(self) -> list[dict]:
        return []  # errors surface at ray.get; nothing is pushed

    def shutdown(self) -> None:
        self.values.clear()
        self.actors.clear()


__all__ = ["LocalRuntime"]
