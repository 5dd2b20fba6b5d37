"""The experimental signal and asyncio APIs (FEATURES EX-023, EX-024).

A task sends a user signal the driver receives; a failing task produces an
``ErrorSignal``; two actors send signals a third collects; and the asyncio API
turns object refs into futures for ``asyncio.gather``.

    python examples/core/signals_and_async.py
"""

from __future__ import annotations

import asyncio
import time

import ray
import ray.experimental.async_api as async_api
import ray.experimental.signal as signal


class UserSignal(signal.Signal):
    def __init__(self, value):
        self.value = value

    def get_value(self):
        return self.value


@ray.remote
def send_signal(value):
    signal.send(UserSignal(value))


@ray.remote
def task_that_fails():
    raise ValueError("this task fails on purpose")


@ray.remote
class ActorSendSignals:
    def send(self, value, count):
        for i in range(count):
            signal.send(UserSignal(f"{value}{i}"))


@ray.remote
class ActorGetAllSignals:
    def __init__(self, num_expected, *sources):
        self.sources = sources
        self.num_expected = num_expected

    def get_signals(self, timeout_s: float = 10.0):
        received = []
        deadline = time.monotonic() + timeout_s
        while len(received) < self.num_expected and time.monotonic() < deadline:
            received.extend(signal.receive(self.sources, timeout=1))
        return [sig.get_value() for _, sig in received]


def example_user_signal() -> str:
    object_ref = send_signal.remote("simple signal")
    result_list = signal.receive([object_ref], timeout=10)
    return result_list[0][1].get_value()


def example_error_signal() -> type:
    object_ref = task_that_fails.remote()
    result_list = signal.receive([object_ref], timeout=10)
    return type(result_list[0][1])


def example_actor_signals(count: int = 5) -> list:
    a1, a2 = ActorSendSignals.remote(), ActorSendSignals.remote()
    ray.get([a1.send.remote("a", count), a2.send.remote("b", count)])
    b = ActorGetAllSignals.remote(2 * count, a1, a2)
    values = ray.get(b.get_signals.remote())
    for actor in (a1, a2, b):
        ray.kill(actor)
    return values


@ray.remote
def slow_square(x):
    time.sleep(0.1)
    return x * x


def example_async_gather(n: int = 5) -> list:
    async_api.init()
    try:

        async def gather():
            refs = [slow_square.remote(i) for i in range(n)]
            return await asyncio.gather(*[async_api.as_future(r) for r in refs])

        return asyncio.run(gather())
    finally:
        async_api.shutdown()


def main(argv=None) -> dict:
    if not ray.is_initialized():
        ray.init()
    out = {
        "user_signal": example_user_signal(),
        "error_signal": example_error_signal().__name__,
        "actor_signals": sorted(example_actor_signals()),
        "async_gather": example_async_gather(),
    }
    print(out)
    return out


if __name__ == "__main__":
    main()
