"""TensorBoard scalars: Tune's own event writer against tensorboardX; prints one JSON object.

    python benchmarks/bench_tune_tensorboard.py                     # 100 trials x 10 results, 3 rounds
    python benchmarks/bench_tune_tensorboard.py --trials 4 --steps 3 --rounds 1   # a smoke run

Why: the ray-tune README says the hand-written writer (`TBXLoggerCallback`) stays
because tensorboardX costs more, mostly its import (it imports torch when installed).
This measures that claim on the same work.

Each round runs each writer in a fresh Python process, since every Tune driver pays its
imports once. Both processes import `ray.tune` first, untimed (Tune runs either way),
then write the same N trials x M results:

- native: `ray.tune.logger.TBXLoggerCallback`, called as the driver loop calls it
  (`on_trial_result` for each result, `on_trial_complete` at the end);
- tensorboardX: `SummaryWriter` used the way Ray's own TBXLoggerCallback uses it: one
  writer per trial (`flush_secs=30`), one `add_scalar` per numeric field with tag
  `ray/tune/<key>` and step `training_iteration`, a `flush()` after each result, `close()`
  at the end (Ray's end-of-trial hparams summary is left out: the native side has none).

Timed per process: `import_s` (tensorboardX: `import tensorboardX`; native: nothing
beyond `ray.tune.logger`, whose writer module loads lazily inside the first write),
`write_s` (creating the writers, every result, closing), `total_s` = import + write, and
`process_s` (the child's wall time from the parent, interpreter start included). The
parent then reads both sets of event files back and checks they hold the same
(trial, tag, step, value) scalars. The JSON has the median of each over the rounds, and
the ratios tensorboardX / native. Uses only the public API (`ray.tune`, tensorboardX).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time


def make_result(trial_index: int, step: int) -> dict:
    """One result: what a small training loop reports (numeric fields only, one nested)."""
    return {
        "training_iteration": step,
        "loss": 1.0 / (step + trial_index + 1),
        "mean_accuracy": step / (step + 1.0),
        "lr": 0.001 * (trial_index + 1),
        "time_this_iter_s": 0.01 * step,
        "episode_reward_mean": float(step * trial_index),
        "nested": {"grad_norm": 0.5 + step, "steps": step * 100},
    }


def _flatten(result: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in result.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}/"))
        else:
            flat[prefix + key] = value
    return flat


# -- the children ------------------------------------------------------------------
def child_native(out_dir: str, trials: int, steps: int) -> dict:
    from ray.tune.logger import TBXLoggerCallback
    from ray.tune.trial import Trial

    population = []
    for i in range(trials):
        trial = Trial("bench", config={"i": i}, trial_id=f"t{i:05d}")
        trial.logdir = os.path.join(out_dir, trial.trial_id)
        population.append(trial)
    start = time.perf_counter()
    callback = TBXLoggerCallback()
    for step in range(1, steps + 1):
        for i, trial in enumerate(population):
            callback.on_trial_result(iteration=step, trials=population, trial=trial,
                                     result=make_result(i, step))
    for trial in population:
        callback.on_trial_complete(iteration=steps, trials=population, trial=trial)
    return {"import_s": 0.0, "write_s": time.perf_counter() - start, "torch_imported": "torch" in sys.modules}


def child_tensorboardx(out_dir: str, trials: int, steps: int) -> dict:
    start = time.perf_counter()
    from tensorboardX import SummaryWriter

    import_s = time.perf_counter() - start
    start = time.perf_counter()
    writers = {}
    for step in range(1, steps + 1):
        for i in range(trials):
            trial_id = f"t{i:05d}"
            writer = writers.get(trial_id)
            if writer is None:
                writer = writers[trial_id] = SummaryWriter(os.path.join(out_dir, trial_id), flush_secs=30)
            result = make_result(i, step)
            for key, value in _flatten(result).items():
                if key != "training_iteration":
                    writer.add_scalar("ray/tune/" + key, value, global_step=result["training_iteration"])
            writer.flush()
    for writer in writers.values():
        writer.close()
    return {"import_s": import_s, "write_s": time.perf_counter() - start,
            "torch_imported": "torch" in sys.modules}


def child_main(kind: str, out_dir: str, trials: int, steps: int) -> None:
    import ray.tune  # noqa: F401 - untimed: a Tune driver has it imported either way

    run = child_native if kind == "native" else child_tensorboardx
    print(json.dumps(run(out_dir, trials, steps)))


# -- the parent --------------------------------------------------------------------
def run_child(kind: str, out_dir: str, trials: int, steps: int) -> dict:
    command = [sys.executable, os.path.abspath(__file__), "--child", kind, "--dir", out_dir,
               "--trials", str(trials), "--steps", str(steps)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    process_s = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the {kind} writer failed (exit {done.returncode}):\n{done.stderr}")
    timing = json.loads(done.stdout.strip().splitlines()[-1])
    timing["total_s"] = timing["import_s"] + timing["write_s"]
    timing["process_s"] = process_s
    return timing


def read_scalars(out_dir: str) -> collections.Counter:
    """(trial, tag, step, value) of every scalar in the event files under `out_dir`."""
    from tensorboardX.proto import event_pb2

    scalars: collections.Counter = collections.Counter()
    for path in glob.glob(os.path.join(out_dir, "*", "events.out.tfevents.*")):
        trial = os.path.basename(os.path.dirname(path))
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = event_pb2.Event()
            event.ParseFromString(data[pos + 12:pos + 12 + length])
            pos += 16 + length
            for value in event.summary.value:
                scalars[(trial, value.tag, event.step, value.simple_value)] += 1
    return scalars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10, help="results per trial")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per writer")
    parser.add_argument("--child", choices=("native", "tensorboardx"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child, args.dir, args.trials, args.steps)
        return

    runs: dict[str, list[dict]] = {"native": [], "tensorboardx": []}
    scalars_match = True
    with tempfile.TemporaryDirectory(prefix="bench_tb_") as root:
        for round_index in range(args.rounds):
            dirs = {}
            # Alternate which goes first, so neither always runs on a warmer page cache.
            order = ("native", "tensorboardx") if round_index % 2 == 0 else ("tensorboardx", "native")
            for kind in order:
                dirs[kind] = os.path.join(root, f"{kind}_{round_index}")
                runs[kind].append(run_child(kind, dirs[kind], args.trials, args.steps))
            native, tbx = read_scalars(dirs["native"]), read_scalars(dirs["tensorboardx"])
            expected = args.trials * args.steps * (len(_flatten(make_result(0, 1))) - 1)
            scalars_match &= native == tbx and sum(native.values()) == expected

    def medians(kind: str) -> dict:
        timings = runs[kind]
        out = {key: round(statistics.median(t[key] for t in timings), 4)
               for key in ("import_s", "write_s", "total_s", "process_s")}
        out["torch_imported"] = any(t["torch_imported"] for t in timings)
        return out

    native, tbx = medians("native"), medians("tensorboardx")
    print(json.dumps({
        "trials": args.trials,
        "results_per_trial": args.steps,
        "scalars_per_result": len(_flatten(make_result(0, 1))) - 1,
        "rounds": args.rounds,
        "native": native,
        "tensorboardx": tbx,
        "ratio_tensorboardx_over_native": {
            key: round(tbx[key] / native[key], 2) if native[key] > 0 else None
            for key in ("write_s", "total_s", "process_s")},
        "scalars_match": scalars_match,
    }, indent=2))
    if not scalars_match:
        sys.exit("the two writers' event files hold different scalars: the timings compare different work")


if __name__ == "__main__":
    main()
