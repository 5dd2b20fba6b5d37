"""The profiling walkthrough (FEATURES EX-022, H-25, H-26): four loops, three profilers.

``ex1`` gets each result before submitting the next task (serial), ``ex2``
submits all five and gets them once (parallel), ``ex3`` interleaves a local
0.3 s function (Amdahl's law), ``ex4`` runs five calls on one actor (serial by
design) and ``ex4_five_actors`` spreads them over five actors. Each is timed with
a ``time_this`` wrapper, then profiled with cProfile and, when ``line_profiler``
is installed, line by line (the ``kernprof -l`` equivalent, from inside Python).

    python examples/core/profiling.py             # 0.5 s tasks, as in the document
    python examples/core/profiling.py --smoke     # 0.1 s tasks
    kernprof -l examples/core/profiling.py && python -m line_profiler profiling.py.lprof
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import pstats
import time

import ray

SLEEP_S = 0.5  # the remote function's work; main(--smoke) lowers it


@ray.remote
def func(sleep_s: float):
    time.sleep(sleep_s)


@ray.remote
class Sleeper:
    def actor_func(self, sleep_s: float):
        time.sleep(sleep_s)


def other_func():
    """Local work on the driver between submissions (0.6 x the remote work)."""
    time.sleep(SLEEP_S * 0.6)


TIMINGS: dict[str, float] = {}


def time_this(f):
    @functools.wraps(f)
    def timed_wrapper(*args, **kwargs):
        start = time.perf_counter()
        result = f(*args, **kwargs)
        TIMINGS[f.__name__] = elapsed = time.perf_counter() - start
        print(f"| func:{f.__name__!r} took: {elapsed:2.4f} seconds |")
        return result

    return timed_wrapper


@time_this
def ex1():
    """Anti-pattern: ``ray.get`` inside the loop serialises the five tasks."""
    list1 = []
    for _ in range(5):
        list1.append(ray.get(func.remote(SLEEP_S)))
    return list1


@time_this
def ex2():
    """Submit everything, then get once: the tasks run in parallel."""
    list2 = []
    for _ in range(5):
        list2.append(func.remote(SLEEP_S))
    return ray.get(list2)


@time_this
def ex3():
    """Serial local work between submissions bounds the speedup (Amdahl)."""
    list3 = []
    for _ in range(5):
        other_func()
        list3.append(func.remote(SLEEP_S))
    return ray.get(list3)


@time_this
def ex4():
    """Five calls on one actor run one after another (an actor is serial)."""
    actor_example = Sleeper.remote()
    five_results = [actor_example.actor_func.remote(SLEEP_S) for _ in range(5)]
    out = ray.get(five_results)
    ray.kill(actor_example)
    return out


@time_this
def ex4_five_actors():
    """One call on each of five actors: they run in parallel."""
    actors = [Sleeper.remote() for _ in range(5)]
    out = ray.get([a.actor_func.remote(SLEEP_S) for a in actors])
    for actor in actors:
        ray.kill(actor)
    return out


LOOPS = (ex1, ex2, ex3, ex4, ex4_five_actors)


def cprofile_report(loop, top: int = 8) -> str:
    """cProfile one loop; the report lists ray.get and .remote among the calls."""
    profiler = cProfile.Profile()
    profiler.runcall(loop)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def line_profile_report(loop) -> str:
    """line_profiler on one loop (what ``kernprof -l`` + ``@profile`` do)."""
    from line_profiler import LineProfiler

    profiler = LineProfiler()
    profiler.add_function(loop.__wrapped__)
    profiler.runcall(loop.__wrapped__)
    out = io.StringIO()
    profiler.print_stats(stream=out)
    return out.getvalue()


def main(argv=None) -> dict[str, float]:
    global SLEEP_S
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="0.1 s tasks instead of 0.5 s")
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    parser.add_argument("--no-profilers", action="store_true", help="only time the loops")
    args = parser.parse_args(argv)
    SLEEP_S = 0.1 if args.smoke else 0.5
    if not ray.is_initialized():
        ray.init(address=args.address, num_cpus=None if args.address else 5)
    # Warm the workers so the first loop does not pay for process start-up.
    ray.get([func.remote(0) for _ in range(5)])
    for loop in LOOPS:
        loop()
    if not args.no_profilers:
        print(cprofile_report(ex1))
        try:
            print(line_profile_report(ex2))
        except ImportError:
            print("line_profiler is not installed: pip install line_profiler")
    return dict(TIMINGS)


if __name__ == "__main__":
    main()
