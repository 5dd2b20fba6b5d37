"""A minimal TensorBoard event-file writer (scalars only), with no dependencies.

tensorboardX imports torch when it is installed (seconds per process), which would
dominate short experiments; scalar summaries need only this: TFRecord framing
(length, masked CRC32C, payload, masked CRC32C) around hand-encoded `Event` protos.
"""

from __future__ import annotations

import os
import socket
import struct
import time


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= 0xFFFFFFFFFFFFFFFF
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _field(number: int, wire_type: int) -> bytes:
    return _varint((number << 3) | wire_type)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _field(number, 2) + _varint(len(payload)) + payload


def encode_event(wall_time: float, step: int | None = None, *, file_version: str | None = None,
                 scalars: dict[str, float] | None = None) -> bytes:
    """Event{wall_time=1 (double), step=2 (int64), file_version=3 (string), summary=5}."""
    out = _field(1, 1) + struct.pack("<d", wall_time)
    if step is not None:
        out += _field(2, 0) + _varint(int(step))
    if file_version is not None:
        out += _length_delimited(3, file_version.encode())
    if scalars:
        summary = b"".join(
            # Summary.Value{tag=1 (string), simple_value=2 (float)}
            _length_delimited(1, _length_delimited(1, tag.encode()) + _field(2, 5) + struct.pack("<f", value))
            for tag, value in scalars.items()
        )
        out += _length_delimited(5, summary)
    return out


class EventFileWriter:
    """Appends scalar events to `logdir/events.out.tfevents.<time>.<host>`."""

    def __init__(self, logdir: str):
        os.makedirs(logdir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}"
        self.path = os.path.join(logdir, name)
        self._file = open(self.path, "ab")  # noqa: SIM115
        self._write(encode_event(time.time(), 0, file_version="brain.Event:2"))

    def _write(self, payload: bytes) -> None:
        header = struct.pack("<Q", len(payload))
        self._file.write(header + struct.pack("<I", _masked_crc(header)))
        self._file.write(payload + struct.pack("<I", _masked_crc(payload)))

    def add_scalars(self, scalars: dict[str, float], step: int) -> None:
        if scalars:
            self._write(encode_event(time.time(), step, scalars=scalars))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
