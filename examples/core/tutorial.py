"""The tutorial snippets of the documents, runnable (FEATURES EX-001 to EX-008, EX-025).

Each ``example_*`` function is one snippet from the walkthroughs: parallel sleeps,
a dataflow of ``zeros`` feeding ``multiply``, a tree reduction, nested tasks,
counter actors, the 1 GB ``ray.put`` timing, an environment held by an actor (gymnasium's CartPole, or Pong
with ``--env ALE/Pong-v5``), a timeline of a small three-round job and the
Kubernetes-page smoke test. Run all of them with::

    python examples/core/tutorial.py            # full size (1 s sleeps, 1000 tasks)
    python examples/core/tutorial.py --smoke    # seconds
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time

import numpy as np

import ray

# --- EX-001: serial vs parallel ---------------------------------------------


@ray.remote
def sleepy(duration_s: float) -> int:
    time.sleep(duration_s)
    return 1


def example_parallel_sleeps(num_tasks: int = 4, duration_s: float = 1.0) -> float:
    """``num_tasks`` one-second sleeps run at once: wall time is about one sleep."""
    start = time.perf_counter()
    results = ray.get([sleepy.remote(duration_s) for _ in range(num_tasks)])
    assert results == [1] * num_tasks
    return time.perf_counter() - start


# --- EX-002: how fast ray.put writes a large array ----------------------------


def example_put_throughput(num_bytes: int = 10**9) -> float:
    """``x = np.ones(10 ** 9, dtype=np.uint8); ray.put(x)``: returns GB/s."""
    x = np.ones(num_bytes, dtype=np.uint8)
    start = time.perf_counter()
    x_id = ray.put(x)
    elapsed = time.perf_counter() - start
    assert ray.get(x_id)[-1] == 1
    del x_id
    return num_bytes / elapsed / 1e9


# --- EX-004: a small dataflow graph ------------------------------------------


@ray.remote
def zeros(shape):
    return np.zeros(shape)


@ray.remote
def multiply(a, b):
    return np.dot(a, b)


def example_dataflow(size: int = 100) -> np.ndarray:
    """Two ``zeros`` tasks feed ``multiply``: object refs passed as arguments."""
    id1 = zeros.remote([size, size])
    id2 = zeros.remote([size, size])
    return ray.get(multiply.remote(id1, id2))


# --- EX-005: tree reduce ------------------------------------------------------


@ray.remote
def generate_data(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=1000)


@ray.remote
def aggregate_data(x, y):
    return x + y


def example_tree_reduce(num_blocks: int = 100) -> np.ndarray:
    """Pairwise aggregation: log2(n) levels of tasks instead of a serial chain."""
    data = [generate_data.remote(i) for i in range(num_blocks)]
    while len(data) > 1:
        data.append(aggregate_data.remote(data.pop(0), data.pop(0)))
    return ray.get(data[0])


# --- EX-006: nested tasks -----------------------------------------------------


@ray.remote
def sub_experiment(i: int, j: int) -> int:
    return i + j


@ray.remote
def run_experiment(i: int) -> int:
    # A task may submit tasks and wait for them.
    return sum(ray.get([sub_experiment.remote(i, j) for j in range(10)]))


def example_nested_tasks() -> list[int]:
    """Ten sub-experiments per experiment: ``[45, 55, 65, 75, 85]``."""
    return ray.get([run_experiment.remote(i) for i in range(5)])


# --- EX-007: counter actors ---------------------------------------------------


@ray.remote
class Counter:
    def __init__(self):
        self.value = 0

    def increment(self) -> int:
        self.value += 1
        return self.value


def example_counters(num_counters: int = 10) -> tuple[list[int], list[int]]:
    """Each actor has its own state; calls on one actor run in order."""
    counters = [Counter.remote() for _ in range(num_counters)]
    first = ray.get([c.increment.remote() for c in counters])
    then = ray.get([counters[0].increment.remote() for _ in range(5)])
    for counter in counters:
        ray.kill(counter)
    return first, then


# --- EX-008: an environment inside an actor -----------------------------------


@ray.remote
class GymEnvironment:
    def __init__(self, name: str):
        import gymnasium as gym

        if name.startswith("ALE/"):
            import ale_py

            gym.register_envs(ale_py)
        self.env = gym.make(name)
        self.env.reset(seed=0)

    def step(self, action):
        observation, reward, terminated, truncated, _ = self.env.step(action)
        if terminated or truncated:
            self.env.reset()
        return observation.shape, float(reward)


def example_gym_actor(env_name: str = "CartPole-v1", steps: int = 10) -> list:
    env = GymEnvironment.remote(env_name)
    out = ray.get([env.step.remote(0) for _ in range(steps)])
    ray.kill(env)
    return out


# --- EX-003: timeline of a three-round job ------------------------------------


@ray.remote
def f_round(x):
    time.sleep(0.05)
    return x + 1


@ray.remote
def g_reduce(*ys):
    return sum(ys)


def example_timeline(filename: str, rounds: int = 3, width: int = 8) -> int:
    """Rounds of ``width`` tasks reduced by one task; dump a chrome://tracing file."""
    x = 0
    for _ in range(rounds):
        ys = [f_round.remote(x) for _ in range(width)]
        x = g_reduce.remote(*ys)
    value = ray.get(x)
    ray.timeline(filename=filename)
    return value


# --- EX-025: the Kubernetes page's smoke test ---------------------------------


@ray.remote
def where_am_i(_):
    time.sleep(0.001)
    return os.uname().nodename


def example_cluster_smoke(num_tasks: int = 1000) -> collections.Counter:
    """Nested tasks across every node; count results per host name."""
    return collections.Counter(
        ray.get([where_am_i.remote(where_am_i.remote(())) for _ in range(num_tasks)])
    )


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small sizes, seconds")
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    parser.add_argument("--env", default="CartPole-v1", help="gymnasium env for EX-008")
    parser.add_argument("--timeline", default="/tmp/timeline.json")
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    sleep_s = 0.2 if args.smoke else 1.0
    out = {
        "parallel_sleeps_s": example_parallel_sleeps(4, sleep_s),
        "put_gb_per_s": example_put_throughput(10**7 if args.smoke else 10**9),
        "dataflow_sum": float(example_dataflow(10 if args.smoke else 100).sum()),
        "tree_reduce_len": len(example_tree_reduce(16 if args.smoke else 100)),
        "nested": example_nested_tasks(),
        "counters": example_counters(10),
        "gym_actor": example_gym_actor(args.env, 5 if args.smoke else 100)[-1],
        "timeline_value": example_timeline(args.timeline),
        "cluster_smoke": dict(example_cluster_smoke(50 if args.smoke else 1000)),
    }
    print(json.dumps(out, indent=1, default=str))
    return out


if __name__ == "__main__":
    main()
