"""Object spilling and restoring rates next to the disk's own write and read rates.

In one run, on one directory:

* ``dd`` writes a file with ``conv=fdatasync`` (the disk's sustained write rate) and reads
  it back with ``iflag=direct`` (its read rate, past the page cache);
* a ``ray.init`` node with a small store receives ``--factor`` times its size in
  ``ray.put`` objects (kept alive): once the store is full, every put waits for
  spilling, so the put rate past that point is the spill rate a user sees;
* every object is then read back with ``ray.get`` (restored from disk), once with the
  spill files in the page cache and once after dropping the caches (when run as root).

Public API only. Prints JSON. Spill files are not fsync'ed (as in Ray), so the spill
rate can exceed the disk's fdatasync rate while the page cache absorbs the writes.

    python benchmarks/bench_spilling.py --dir /tmp/spill-bench --store-mb 512
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import time

import numpy as np

import ray

MIB = 1024**2


def dd_rates(directory: str, size_mb: int) -> dict:
    path = os.path.join(directory, "dd-probe")
    blocks = max(1, size_mb // 16)
    write = subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=16M", f"count={blocks}",
                            "conv=fdatasync"], capture_output=True, text=True, check=True)
    read = subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=16M", "iflag=direct"],
                          capture_output=True, text=True, check=True)
    os.unlink(path)
    return {"dd_write_gb_per_s": _dd_rate(write.stderr),
            "dd_read_direct_gb_per_s": _dd_rate(read.stderr)}


def _dd_rate(stderr: str) -> float:
    """dd's own summary line: '<bytes> bytes (...) copied, <seconds> s, ...'."""
    match = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", stderr)
    return int(match.group(1)) / float(match.group(2)) / 1e9


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="/tmp/ray-spill-bench")
    parser.add_argument("--store-mb", type=int, default=512)
    parser.add_argument("--object-mb", type=int, default=32)
    parser.add_argument("--factor", type=int, default=4)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    report = {"store_mb": args.store_mb, "object_mb": args.object_mb, "factor": args.factor,
              "loadavg_before": os.getloadavg()}
    report.update(dd_rates(args.dir, args.store_mb))

    ray.init(num_cpus=1, object_store_memory=args.store_mb * MIB, _system_config={
        "object_spilling_config": json.dumps(
            {"type": "filesystem", "params": {"directory_path": args.dir}}),
    })
    try:
        # Let start-up finish (worker zygote, the store's background pre-fault): it
        # competes for the same two cores and would be counted as spilling time.
        ray.get(ray.remote(lambda: None).remote())
        time.sleep(3)
        count = args.factor * args.store_mb // args.object_mb
        value = np.ones(args.object_mb * MIB, dtype=np.uint8)
        refs, times = [], []
        for i in range(count):
            value[0] = i % 251
            started = time.perf_counter()
            refs.append(ray.put(value))
            times.append(time.perf_counter() - started)
        # Puts past the first store-full of objects wait for spilling.
        in_memory = args.store_mb // args.object_mb
        spill_s = sum(times[in_memory:])
        spilled_bytes = (count - in_memory) * args.object_mb * MIB
        report["put_in_memory_gb_per_s"] = (in_memory * args.object_mb * MIB
                                            / sum(times[:in_memory]) / 1e9)
        report["spill_gb_per_s"] = spilled_bytes / spill_s / 1e9
        # Restores: free the newest objects (the store's worth that may still be in
        # memory), then read every spilled one back, oldest first.
        del refs[count - in_memory:]
        for label, cold in (("restore_warm_gb_per_s", False), ("restore_cold_gb_per_s", True)):
            if cold and not drop_caches():
                report[label] = None
                continue
            started = time.perf_counter()
            for i, ref in enumerate(refs):
                got = ray.get(ref)
                assert got[0] == i % 251
                del got
            report[label] = spilled_bytes / (time.perf_counter() - started) / 1e9
    finally:
        ray.shutdown()
        shutil.rmtree(args.dir, ignore_errors=True)
    report["loadavg_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
