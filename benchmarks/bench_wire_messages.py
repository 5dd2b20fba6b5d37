"""Cost of the task spec on the wire: msgpack arrays (what we send) against the same
fields as a map with string keys, and the typed layer's to_wire/from_wire.

    python benchmarks/bench_wire_messages.py      # JSON, microseconds per spec (best of 7)

Not a public-API benchmark: it measures ray._private.messages directly.
"""

from __future__ import annotations

import json
import os
import time
import timeit

import msgpack

from ray._private import messages as m


def main() -> None:
    owner = m.OwnerAddress("127.0.0.1", 40000, "/tmp/ray/session/sockets/worker-0123456789abcdef",
                           os.urandom(20))
    spec = m.TaskSpec(task_id=os.urandom(16), job_id="01000000", function_id=os.urandom(20),
                      name="__main__.noop", args=[m.InlineArg(b"\x00", b"\x80\x05K\x01.")],
                      kwarg_names=[], num_returns=1, owner=owner, submitted_at=time.time())
    array = spec.to_wire()
    as_map = {name: getattr(spec, name) for name in m.TaskSpec.__slots__}
    as_map["args"] = [a.to_wire() for a in spec.args]
    as_map["owner"] = owner.to_wire()
    packer = msgpack.Packer(use_bin_type=True)
    packed_array, packed_map = packer.pack(array), packer.pack(as_map)

    def best(fn, n=20000):
        return round(min(timeit.repeat(fn, number=n, repeat=7)) / n * 1e6, 2)

    print(json.dumps({
        "array_bytes": len(packed_array), "map_bytes": len(packed_map),
        "pack_array_us": best(lambda: packer.pack(array)),
        "pack_map_us": best(lambda: packer.pack(as_map)),
        "unpack_array_us": best(lambda: msgpack.unpackb(packed_array, raw=False)),
        "unpack_map_us": best(lambda: msgpack.unpackb(packed_map, raw=False)),
        "to_wire_us": best(spec.to_wire),
        "from_wire_us": best(lambda: m.TaskSpec.from_wire(array)),
        "loadavg_1m": os.getloadavg()[0],
    }, indent=1))


if __name__ == "__main__":
    main()
