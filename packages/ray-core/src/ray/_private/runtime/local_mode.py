"""``ray.init(local_mode=True)``: run every task and actor call serially in the driver.

Same public API, another runtime behind it: values live in a dict, tasks run
at submission, errors surface at ``ray.get`` exactly as in cluster mode. Used
for debugging (breakpoints and prints work inside remote functions).
"""

from __future__ import annotations

import concurrent.futures
import copy
import os
import traceback

import cloudpickle

from ray._private import ids as ids_mod
from ray._private.object_ref import ObjectRef
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


class LocalRuntime:
    def __init__(self, kwargs: dict, config):
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
        self.actor_id = None
        self.worker_id = os.urandom(20)

    # -- references (no owner bookkeeping: the dict holds every value) ----------------
    def add_local_ref(self, object_id, owner):
        pass

    def remove_local_ref(self, object_id):
        pass

    def owner_address(self):
        return None

    # -- objects -------------------------------------------------------------------------
    def put(self, value) -> ObjectRef:
        if isinstance(value, ObjectRef):
            raise TypeError("Calling ray.put on an ObjectRef is not allowed.")
        object_id = self.ids.next_put_id(self.base_task_id)
        # Copy through pickle so later mutation by the caller does not leak in.
        self.values[object_id] = cloudpickle.loads(cloudpickle.dumps(value))
        return ObjectRef(object_id)

    def _value(self, object_id):
        if object_id not in self.values:
            raise GetTimeoutError(f"object {object_id.hex()} does not exist in local mode")
        value = self.values[object_id]
        if isinstance(value, _Failed):
            raise value.error
        return value

    def get(self, refs, timeout_s):
        return [self._value(r.binary()) for r in refs]

    def wait(self, refs, num_returns, timeout_s, fetch_local=True):
        ready = [r for r in refs if r.binary() in self.values][:num_returns]
        return ready, [r for r in refs if r not in ready]

    def as_future(self, ref):
        fut = concurrent.futures.Future()
        try:
            fut.set_result(self._value(ref.binary()))
        except BaseException as exc:  # noqa: BLE001
            fut.set_exception(exc)
        return fut

    # -- tasks -----------------------------------------------------------------------------
    def export_function(self, fn):
        return fn  # the "id" is the function itself

    def _resolve(self, value):
        if isinstance(value, ObjectRef):
            return self._value(value.binary())
        return copy.deepcopy(value) if isinstance(value, list | dict) else value

    def _run(self, fn, name, args, kwargs, num_returns):
        task_id = self.ids.next_task_id()
        refs = [ObjectRef(task_id + i.to_bytes(4, "little")) for i in range(1, num_returns + 1)]
        try:
            args = [self._resolve(a) for a in args]
            kwargs = {k: self._resolve(v) for k, v in kwargs.items()}
            result = fn(*args, **kwargs)
            values = [result] if num_returns == 1 else list(result) if num_returns else []
            if len(values) != num_returns:
                raise ValueError(f"{name} returned {len(values)} values, expected {num_returns}")
        except RayTaskError as exc:
            values = [_Failed(exc)] * num_returns
        except Exception as exc:
            err = RayTaskError(name, traceback.format_exc(), exc).as_instanceof_cause()
            values = [_Failed(err)] * num_returns
        for ref, value in zip(refs, values):
            self.values[ref.binary()] = value
        return refs

    def submit_task(self, function, name, args, kwargs, opts):
        return self._run(function, name, args, kwargs, opts.num_returns)

    # -- actors ----------------------------------------------------------------------------
    def create_actor(self, cls, _cls, methods, args, kwargs, opts):
        actor_id = self.ids.next_task_id()
        args = [self._resolve(a) for a in args]
        kwargs = {k: self._resolve(v) for k, v in kwargs.items()}
        self.actors[actor_id] = cls(*args, **kwargs)
        if opts.name:
            self.actor_names[(opts.namespace or self.namespace, opts.name)] = actor_id
        return actor_id

    def submit_actor_task(self, actor_id, method, args, kwargs, num_returns):
        if actor_id in self.dead_actors or actor_id not in self.actors:
            task_id = self.ids.next_task_id()
            refs = [ObjectRef(task_id + i.to_bytes(4, "little"))
                    for i in range(1, num_returns + 1)]
            for ref in refs:
                self.values[ref.binary()] = _Failed(RayActorError("The actor is dead."))
            return refs
        fn = getattr(self.actors[actor_id], method)
        if hasattr(fn, "__await__") or _is_coroutine(fn):
            import asyncio

            coro_fn = fn

            def fn(*a, **k):
                return asyncio.run(coro_fn(*a, **k))

        return self._run(fn, method, args, kwargs, num_returns)

    def actor_handle_created(self, actor_id):
        pass

    def actor_handle_deleted(self, actor_id):
        pass

    def kill_actor(self, actor_id, no_restart):
        self.dead_actors.add(actor_id)

    def get_named_actor(self, name, namespace):
        actor_id = self.actor_names.get((namespace or self.namespace, name))
        if actor_id is None:
            raise ValueError(f"Failed to look up actor {name!r}: no actor has that name")
        from ray.actor import ActorHandle, _method_table

        return ActorHandle(actor_id, type(self.actors[actor_id]).__name__,
                           _method_table(type(self.actors[actor_id])))

    def exit_actor(self):
        raise SystemExit(0)

    def cancel(self, ref, force):
        pass

    # -- cluster info -------------------------------------------------------------------------
    def resource_ids_now(self):
        return {}

    def nodes(self):
        return [{"NodeID": "local", "Alive": True, "alive": True,
                 "NodeManagerAddress": "127.0.0.1", "Resources": dict(self.resources)}]

    def cluster_resources(self):
        return dict(self.resources)

    def available_resources(self):
        return dict(self.resources)

    def shutdown(self):
        self.values.clear()
        self.actors.clear()


def _is_coroutine(fn):
    import inspect

    return inspect.iscoroutinefunction(fn)
