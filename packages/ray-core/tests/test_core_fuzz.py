"""Robustness of the control-plane protocol: bad input gets an error or a closed
connection, never a crashed daemon or a wrong answer for other clients."""

from __future__ import annotations

import pytest

from ray._private import rpc


def _pair(handlers_a=None, handlers_b=None):
    """Two RpcPeers wired back to back in memory (each write feeds the other side)."""
    box = {}
    a = rpc.RpcPeer(lambda data: box["b"].feed(data), handlers_a or {}, name="a")
    b = rpc.RpcPeer(lambda data: box["a"].feed(data), handlers_b or {}, name="b")
    box["a"], box["b"] = a, b
    return a, b


def test_a_failing_reply_callback_does_not_break_the_connection():
    a, _b = _pair(handlers_b={"echo": lambda peer, x: x})

    def explode(_fut):
        raise RuntimeError("callback bug")

    fut = a.call("echo", 1)
    fut.add_done_callback(explode)  # already answered: runs now, error logged
    fut2 = a.call("echo", 2)  # the same peer keeps working
    fut2.add_done_callback(explode)
    assert fut.result(1) == 1 and fut2.result(1) == 2
    assert a.call("echo", 3).result(1) == 3
    assert not a.closed


def test_a_reply_callback_raising_inside_feed_is_contained():
    box = {}
    a = rpc.RpcPeer(lambda data: box.setdefault("out", []).append(data), {}, name="a")
    fut = a.call("m")
    fut.add_done_callback(lambda f: 1 / 0)
    req_id = 1
    a.feed(rpc.pack([rpc.REPLY_OK, req_id, "v"]))  # must not raise
    assert fut.result(1) == "v"


@pytest.mark.parametrize("kind", [9, -1])
def test_unknown_message_kind_raises_for_the_transport_to_close(kind):
    a, _ = _pair()
    with pytest.raises(ValueError):
        a.feed(rpc.pack([kind, 1, "x", []]))


def test_connecting_to_a_dead_endpoint_without_retry_fails_at_once(tmp_path):
    """Workers and remote raylets listen before their address is published, so a
    refused connect means the process is gone; the I/O thread must not spin on it
    (chaos: every spillback or lease naming a killed process stalled it 5 s)."""
    import socket
    import time

    from ray._private.transport import connect_socket

    dead_path = str(tmp_path / "dead.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(dead_path)
    listener.close()  # the file stays, nobody listens: what a killed worker leaves
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    for address in (dead_path, ("127.0.0.1", dead_port)):
        start = time.monotonic()
        with pytest.raises(OSError):
            connect_socket(address, timeout_s=5.0, retry=False)
        assert time.monotonic() - start < 1.0
