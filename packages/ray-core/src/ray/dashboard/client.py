"""A small HTTP client for the dashboard's API (stdlib only: no ``requests`` needed).

Used by ``ray.util.state`` (``http://`` addresses), ``JobSubmissionClient`` and the
``ray job`` commands. ``websocket_text_frames`` reads the text frames of a websocket
route (``/api/jobs/<id>/logs/tail``) with a minimal RFC 6455 client.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import struct
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

from ray._private import tls
from ray.exceptions import RayError


class DashboardRequestError(RayError):
    """The dashboard answered with an error status, or could not be reached."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status

    def __reduce__(self):
        return (type(self), (str(self), self.status))


class Response:
    def __init__(self, status: int, body: bytes, content_type: str):
        self.status_code = status
        self.content = body
        self.content_type = content_type

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.content)


def normalize_address(address: str, *, tls_on: bool | None = None) -> str:
    """``127.0.0.1:8265`` or ``http://127.0.0.1:8265/`` -> ``http://127.0.0.1:8265``.

    With ``RAY_USE_TLS`` on (``tls_on``, default: this process's setting) the scheme is
    ``https``: the dashboard then serves HTTPS only, and an ``http://`` address written
    for a plain cluster (scripts, ``RAY_ADDRESS``, Ray's documentation) is upgraded
    rather than refused.
    """
    address = address.strip().rstrip("/")
    if "://" not in address:
        address = "http://" + address
    scheme, rest = address.split("://", 1)
    if scheme not in ("http", "https"):
        raise ValueError(f"A dashboard address is http://host:port, got {address!r}")
    if tls_on is None:
        tls_on = tls.config() is not None
    return f"https://{rest}" if tls_on else address


def _ssl_context(address: str, verify) -> ssl.SSLContext | None:
    """How to check an ``https://`` dashboard: with ``RAY_USE_TLS`` on, mutual TLS with
    the node certificate and only the cluster CA trusted; else urllib's default (the
    system's CAs), a CA bundle when ``verify`` names one, or nothing when it is False."""
    if not address.startswith("https://"):
        return None
    if tls.config() is not None:
        return tls.client_context(verify=verify is not False)
    if verify is False:
        return ssl._create_unverified_context()  # noqa: S323 - asked for
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return None


class DashboardClient:
    def __init__(self, address: str, *, headers: dict | None = None,
                 cookies: dict | None = None, verify=True):
        self.address = normalize_address(address)
        self.headers = dict(headers or {})
        if cookies:
            self.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        self._context = _ssl_context(self.address, verify)

    def request(self, method: str, path: str, *, params=None, json_data=None,
                data: bytes | None = None, timeout: float = 30.0) -> Response:
        url = self.address + path
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        headers = dict(self.headers)
        if json_data is not None:
            data = json.dumps(json_data).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self._context) as resp:
                return Response(resp.status, resp.read(), resp.headers.get("Content-Type", ""))
        except urllib.error.HTTPError as exc:
            return Response(exc.code, exc.read(), exc.headers.get("Content-Type", ""))
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DashboardRequestError(
                f"Cannot reach the Ray dashboard at {self.address} ({reason}). Is the cluster "
                "running with its dashboard (ray start --head, or "
                "ray.init(include_dashboard=True)) and is the address right?") from None

    def websocket_text_frames(self, path: str, timeout: float | None = None) -> Iterator[str]:
        """Yield each text frame the server sends on ``path`` until it closes."""
        parsed = urllib.parse.urlparse(self.address)
        secure = parsed.scheme == "https"
        raw = socket.create_connection((parsed.hostname, parsed.port or (443 if secure else 80)),
                                       timeout=30)
        sock: socket.socket = raw
        try:
            if secure:
                context = self._context or ssl.create_default_context()
                try:
                    sock = context.wrap_socket(raw, server_hostname=parsed.hostname)
                except ssl.SSLError as exc:
                    raise DashboardRequestError(
                        f"TLS with the Ray dashboard at {self.address} failed ({exc})") from None
            key = base64.b64encode(os.urandom(16)).decode()
            extra = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
            sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {parsed.netloc}\r\n"
                          "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                          f"{extra}\r\n").encode())
            reader = _Reader(sock)
            status_line = reader.line()
            headers = []
            while True:
                line = reader.line()
                if not line:
                    break
                headers.append(line)
            if b" 101 " not in status_line + b" ":
                body = reader.rest()
                raise DashboardRequestError(
                    f"{path}: {status_line.decode(errors='replace')} {body.decode(errors='replace')}",
                    status=_status(status_line))
            sock.settimeout(timeout)
            while True:
                opcode, payload = _read_frame(reader)
                if opcode == 0x8:  # close
                    return
                if opcode == 0x9:  # ping: answer, masked as clients must
                    sock.sendall(_client_frame(0xA, payload))
                elif opcode in (0x1, 0x0):
                    yield payload.decode("utf-8", "replace")
        finally:
            sock.close()


def _status(line: bytes) -> int | None:
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


class _Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise DashboardRequestError("the dashboard closed the connection")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise DashboardRequestError("the dashboard closed the connection mid-frame")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self) -> bytes:
        self.sock.settimeout(2)
        try:
            while self._fill():
                pass
        except OSError:
            pass
        return self.buf


def _read_frame(reader: _Reader) -> tuple[int, bytes]:
    first, second = reader.exact(2)
    opcode, masked, length = first & 0x0F, second & 0x80, second & 0x7F
    if length == 126:
        (length,) = struct.unpack("!H", reader.exact(2))
    elif length == 127:
        (length,) = struct.unpack("!Q", reader.exact(8))
    mask = reader.exact(4) if masked else None
    payload = reader.exact(length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return opcode, payload


def _client_frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    header = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        header += bytes([0x80 | n])
    elif n < 65536:
        header += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        header += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


__all__ = ["DashboardClient", "DashboardRequestError", "Response", "normalize_address"]
