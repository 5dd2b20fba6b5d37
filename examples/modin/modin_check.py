"""Modin's Ray engine on our ``ray``: an API-compatibility check (FEATURES MISC-001).

Runs a few DataFrame operations with ``MODIN_ENGINE=ray`` on ``ray.init(num_cpus=2)``
and compares each result with plain pandas. It needs a SEPARATE virtual environment
(Modin 0.37 wants pandas < 2.4; ``modin[ray]`` would pull PyPI's ray): see README.md.

    python examples/modin/modin_check.py                 # what breaks, as is
    python examples/modin/modin_check.py --alias-missing # alias the two missing modules
                                                         # in this process to go further

``--alias-missing`` is a diagnostic, not a fix: it maps ``ray._private.services`` to
``ray.services`` and puts a ``ray.data`` module whose only function raises, in the
driver and (through a ``sitecustomize.py`` on the workers' inherited PYTHONPATH) in
every worker, which import modin's task code and so ``ray._private.services``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import time
import traceback
import types

import numpy as np
import pandas


def alias_missing_modules() -> None:
    import ray.services

    sys.modules.setdefault("ray._private.services", ray.services)
    data = types.ModuleType("ray.data")

    def from_pandas_refs(*args, **kwargs):
        raise RuntimeError("this ray has no ray.data (diagnostic alias)")

    data.from_pandas_refs = from_pandas_refs
    data.Dataset = type("Dataset", (), {})
    sys.modules.setdefault("ray.data", data)


def alias_in_workers(directory: str) -> None:
    """Workers inherit the driver's environment: a sitecustomize there aliases for them."""
    with open(os.path.join(directory, "sitecustomize.py"), "w") as f:
        f.write(textwrap.dedent(f"""\
            import sys
            sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
            from modin_check import alias_missing_modules
            alias_missing_modules()
            """))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [directory, os.environ.get("PYTHONPATH")]))


def run_checks() -> dict[str, tuple[str, float, str]]:
    import modin.pandas as mpd

    rng = np.random.default_rng(0)
    source = {"a": np.arange(10_000), "b": rng.random(10_000), "k": np.arange(10_000) % 7}
    expected = pandas.DataFrame(source)
    results = {}

    def check(name, modin_fn, pandas_fn):
        start = time.perf_counter()
        try:
            got = modin_fn()
            got = got._to_pandas() if hasattr(got, "_to_pandas") else got
            want = pandas_fn()
            if isinstance(want, (pandas.DataFrame, pandas.Series)):
                pandas.testing.assert_frame_equal(pandas.DataFrame(got), pandas.DataFrame(want))
            else:
                assert got == want, (got, want)
            results[name] = ("ok", time.perf_counter() - start, "")
        except Exception as e:  # report every failure, keep checking the rest
            results[name] = ("FAIL", time.perf_counter() - start, f"{type(e).__name__}: {e}"[:300])
            traceback.print_exc()

    df = None

    def construct():
        nonlocal df
        df = mpd.DataFrame(source)
        return df.shape

    check("construct", construct, lambda: expected.shape)
    if df is None:
        return results
    check("sum", lambda: round(float(df["b"].sum()), 6), lambda: round(float(expected["b"].sum()), 6))
    check("groupby mean", lambda: df.groupby("k")["b"].mean(), lambda: expected.groupby("k")["b"].mean())
    check("apply", lambda: df["a"].apply(lambda x: x * 2), lambda: expected["a"].apply(lambda x: x * 2))
    lookup = pandas.DataFrame({"k": range(7), "z": range(7)})
    check("merge", lambda: df.merge(mpd.DataFrame(lookup), on="k"), lambda: expected.merge(lookup, on="k"))
    check("describe", lambda: df.describe(), lambda: expected.describe())
    check("sort_values", lambda: df.sort_values("b"), lambda: expected.sort_values("b"))

    def csv_roundtrip(lib, frame):
        path = f"/tmp/modin_check_{os.getpid()}_{lib.__name__}.csv"
        frame.to_csv(path, index=False)
        try:
            return lib.read_csv(path)
        finally:
            os.unlink(path)

    check("csv roundtrip", lambda: csv_roundtrip(mpd, df), lambda: csv_roundtrip(pandas, expected))
    return results


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description="Modin on our ray: what works, what breaks.")
    parser.add_argument("--alias-missing", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("MODIN_ENGINE", "ray")
    import ray

    with tempfile.TemporaryDirectory() as alias_dir:
        if args.alias_missing:
            alias_in_workers(alias_dir)
            alias_missing_modules()
        ray.init(num_cpus=2)
        try:
            results = run_checks()
        finally:
            ray.shutdown()
    for name, (status, seconds, error) in results.items():
        print(f"{name:14s} {status:4s} {seconds:6.2f} s {error}")
    return results


if __name__ == "__main__":
    main()
