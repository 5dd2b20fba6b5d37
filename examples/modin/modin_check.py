"""Modin's Ray engine on our ``ray``: an API-compatibility check (FEATURES MISC-001).

Runs DataFrame operations with ``MODIN_ENGINE=ray`` on ``ray.init(num_cpus=2)`` and
compares each result with plain pandas, then converts between Modin and ``ray.data``
both ways. It needs a SEPARATE virtual environment (Modin 0.37 wants pandas < 2.4;
``modin[ray]`` would pull PyPI's ray): see README.md.

    python examples/modin/modin_check.py            # prints one line per check
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import traceback

import numpy as np
import pandas


class Checks:
    """Runs named checks, each comparing a Modin (or ray.data) result with pandas."""

    def __init__(self):
        self.results: dict[str, tuple[str, float, str]] = {}

    def check(self, name, modin_fn, pandas_fn) -> None:
        start = time.perf_counter()
        try:
            got = modin_fn()
            got = got._to_pandas() if hasattr(got, "_to_pandas") else got
            want = pandas_fn()
            if isinstance(want, (pandas.DataFrame, pandas.Series)):
                pandas.testing.assert_frame_equal(pandas.DataFrame(got), pandas.DataFrame(want))
            else:
                assert got == want, (got, want)
            self.results[name] = ("ok", time.perf_counter() - start, "")
        except Exception as e:  # report every failure, keep checking the rest
            self.results[name] = ("FAIL", time.perf_counter() - start, f"{type(e).__name__}: {e}"[:300])
            traceback.print_exc()


def dataframe_checks(checks: Checks, df, expected: pandas.DataFrame, workdir: str) -> None:
    import modin.pandas as mpd

    check = checks.check
    check("sum", lambda: round(float(df["b"].sum()), 6), lambda: round(float(expected["b"].sum()), 6))
    check("groupby mean", lambda: df.groupby("k")["b"].mean(), lambda: expected.groupby("k")["b"].mean())
    aggs = {"a": "sum", "b": ["min", "max", "mean"]}
    check("groupby agg", lambda: df.groupby("k").agg(aggs), lambda: expected.groupby("k").agg(aggs))
    check("apply", lambda: df["a"].apply(lambda x: x * 2), lambda: expected["a"].apply(lambda x: x * 2))
    lookup = pandas.DataFrame({"k": range(7), "z": range(7)})
    check("merge", lambda: df.merge(mpd.DataFrame(lookup), on="k"), lambda: expected.merge(lookup, on="k"))
    check("concat", lambda: mpd.concat([df, df.iloc[:100]]), lambda: pandas.concat([expected, expected.iloc[:100]]))
    check("iloc", lambda: df.iloc[2500:7500:3, [0, 2]], lambda: expected.iloc[2500:7500:3, [0, 2]])
    check("iloc row", lambda: df.iloc[1234], lambda: expected.iloc[1234])
    check("describe", lambda: df.describe(), lambda: expected.describe())
    check("sort_values", lambda: df.sort_values("b"), lambda: expected.sort_values("b"))
    generated = os.path.join(workdir, "generated.csv")
    expected.assign(s=expected["k"].map("key-{}".format)).to_csv(generated, index=False)
    check("read_csv", lambda: mpd.read_csv(generated), lambda: pandas.read_csv(generated))

    def csv_roundtrip(lib, frame):
        path = os.path.join(workdir, f"roundtrip_{lib.__name__}.csv")
        frame.to_csv(path, index=False)
        return lib.read_csv(path)

    check("csv roundtrip", lambda: csv_roundtrip(mpd, df), lambda: csv_roundtrip(pandas, expected))


def ray_data_checks(checks: Checks, df, expected: pandas.DataFrame, workdir: str) -> None:
    """Modin <-> ray.data, through ray's from_modin/to_modin and Modin's to_ray/from_ray."""
    import modin.pandas as mpd
    from modin.pandas.io import from_ray, to_ray

    import ray

    check = checks.check
    check("from_modin", lambda: ray.data.from_modin(df).to_pandas(), lambda: expected)
    check("from_modin sum", lambda: ray.data.from_modin(df).sum("a"), lambda: int(expected["a"].sum()))
    check("modin to_ray", lambda: to_ray(df).count(), lambda: len(expected))
    doubled = expected.assign(b=expected["b"] * 2)

    def modin_via_ray_data():
        ds = ray.data.from_modin(df).map_batches(lambda batch: batch.assign(b=batch["b"] * 2), batch_format="pandas")
        return ds.to_modin()

    check("map_batches to_modin", modin_via_ray_data, lambda: doubled)
    check("modin from_ray", lambda: from_ray(ray.data.from_pandas(expected)), lambda: expected)
    path = os.path.join(workdir, "generated.csv")
    check(
        "ray.data.read_csv to_modin",
        lambda: ray.data.read_csv(path).to_modin().groupby("s")["b"].sum(),
        lambda: pandas.read_csv(path).groupby("s")["b"].sum(),
    )
    check("to_modin type", lambda: type(ray.data.range(10).to_modin()).__name__, lambda: mpd.DataFrame.__name__)


def run_checks() -> dict[str, tuple[str, float, str]]:
    import modin.pandas as mpd

    rng = np.random.default_rng(0)
    source = {"a": np.arange(10_000), "b": rng.random(10_000), "k": np.arange(10_000) % 7}
    expected = pandas.DataFrame(source)
    checks = Checks()
    df = None

    def construct():
        nonlocal df
        df = mpd.DataFrame(source)
        return df.shape

    checks.check("construct", construct, lambda: expected.shape)
    if df is None:
        return checks.results
    with tempfile.TemporaryDirectory() as workdir:
        dataframe_checks(checks, df, expected, workdir)
        ray_data_checks(checks, df, expected, workdir)
    return checks.results


def main(argv=None) -> dict:
    argparse.ArgumentParser(description="Modin on our ray: each check against pandas.").parse_args(argv)
    os.environ.setdefault("MODIN_ENGINE", "ray")
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=2)
    try:
        results = run_checks()
    finally:
        checked = time.perf_counter()
        ray.shutdown()
    for name, (status, seconds, error) in results.items():
        print(f"{name:26s} {status:4s} {seconds:6.2f} s {error}")
    failed = sum(status != "ok" for status, _, _ in results.values())
    print(f"{len(results) - failed}/{len(results)} ok; ray.init + checks {checked - start:.1f} s, "
          f"shutdown {time.perf_counter() - checked:.1f} s")
    return results


if __name__ == "__main__":
    raise SystemExit(1 if any(s != "ok" for s, _, _ in main().values()) else 0)
