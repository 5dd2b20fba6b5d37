"""Many client processes creating, reading and deleting at once: no corruption, no leak."""

import json
import subprocess
import sys
import zlib

import numpy as np
import pytest

import plasma
from plasma.testing import running_store

CAPACITY = 16 * 2**20


def _worker(socket_path: str, seed: int, rounds: int) -> None:
    rng = np.random.default_rng(seed)
    client = plasma.connect(socket_path)
    checked = 0
    try:
        mine = []
        for _ in range(rounds):
            size = int(rng.integers(1, 200_000))
            data = rng.integers(0, 256, size, dtype=np.uint8)
            object_id = plasma.ObjectID.from_random()
            try:
                buffer = client.create(
                    object_id, size, metadata=zlib.crc32(data).to_bytes(4, "little")
                )
            except plasma.ObjectStoreFullError:
                client.delete(mine)
                mine.clear()
                continue
            np.frombuffer(buffer, np.uint8)[:] = data
            del buffer
            client.seal(object_id)
            mine.append(object_id)
            # Read back a random sample of everything in the store, including other
            # processes' objects, and verify each checksum.
            listing = list(client.list().items())
            for index in rng.permutation(len(listing))[:5]:
                other_id, info = listing[index]
                if info["state"] != "sealed":
                    continue
                [got] = client.get_buffers([other_id], timeout_ms=0, with_meta=True)
                if got is None:
                    continue  # evicted or deleted meanwhile
                view, metadata = got
                assert zlib.crc32(view) == int.from_bytes(metadata, "little"), other_id
                checked += 1
                del view, got
            if len(mine) > 4:
                client.delete(mine[:2])
                del mine[:2]
        client.delete(mine)
        print(json.dumps(["ok", checked]))
    except Exception as error:  # reported to the test
        print(json.dumps(["error", repr(error)]))
    finally:
        client.disconnect()


@pytest.mark.slow
def test_concurrent_processes_keep_data_intact_and_capacity_returns():
    with running_store(CAPACITY) as (store, socket_path):
        workers = [
            subprocess.Popen(
                [sys.executable, __file__, socket_path, str(seed), "60"],
                stdout=subprocess.PIPE,
                text=True,
            )
            for seed in range(6)
        ]
        outcomes = []
        for worker in workers:
            output, _ = worker.communicate(timeout=120)
            outcomes.append(json.loads(output.strip().splitlines()[-1]))
        assert all(kind == "ok" for kind, _ in outcomes), outcomes
        assert sum(checked for _, checked in outcomes) > 100
        client = plasma.connect(socket_path)
        client.evict(CAPACITY)
        assert client.list() == {}
        client.disconnect()
        assert store.used_bytes == 0 and store.pinned_bytes == 0


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
