"""Optional TLS on every TCP connection between Ray processes (the GCS's Redis and the
dashboard included), configured as in Ray:

    RAY_USE_TLS=1                 turn it on (1/true; 0/false or unset: off)
    RAY_TLS_SERVER_CERT=<pem>     this process's certificate (chain)
    RAY_TLS_SERVER_KEY=<pem>      its private key
    RAY_TLS_CA_CERT=<pem>         the CA that signed every node's certificate

The same three files serve both ends, as in Ray: a server presents its certificate
and requires one from the client (mutual TLS); each side accepts only a peer whose
certificate the CA signed. Host names are not checked (nodes come and go under
addresses that are rarely in their certificates): the CA and then the cluster
secret (``auth``) decide who is in the cluster. Unix sockets (the processes of
one node talking to each other) stay plain, as Ray's local sockets do.

The GCS's Redis and the dashboard use the same files: Redis is started with
``--tls-port`` (``node.start_redis``) and its clients wrap their sockets in
``client_context()`` (``gcs.client.redis_client``); the dashboard serves HTTPS with
``server_context()`` (``ray.dashboard.https``) and its clients present our certificate.

Every process reads the variables itself (children inherit them), so a cluster
must be started with TLS on every node or on none; a mismatch is answered with an
error naming it on both sides: a TLS server first sends ``TLS_MARKER`` in clear,
which a plain client recognises, and a TLS client recognises a plain server's
``RAYAUTH`` greeting in place of the marker.

``TlsSession`` is TLS over memory buffers (no I/O), driven by the threaded event
loop (``transport``) and the raylet's asyncio protocol (``aio``) alike;
``connect_blocking``/``accept_blocking`` wrap blocking sockets (object transfer,
log reads).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import ssl
import threading

from ray.exceptions import AuthenticationError

USE_ENV = "RAY_USE_TLS"
CERT_ENV = "RAY_TLS_SERVER_CERT"
KEY_ENV = "RAY_TLS_SERVER_KEY"
CA_ENV = "RAY_TLS_CA_CERT"
TLS_MARKER = b"RAYTLS01"  # sent in clear by a TLS server before the TLS handshake
_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")
_READ_BYTES = 1 << 18


@dataclasses.dataclass(frozen=True)
class TlsConfig:
    """Where this process's certificate, key and CA are (from the environment)."""

    cert_path: str
    key_path: str
    ca_path: str

    @classmethod
    def from_env(cls, environ=None) -> TlsConfig | None:
        """None when TLS is off; raises ValueError naming a bad or missing variable."""
        env = os.environ if environ is None else environ
        use = env.get(USE_ENV, "").strip().lower()
        if use in _OFF:
            return None
        if use not in _ON:
            raise ValueError(f"{USE_ENV}={env[USE_ENV]!r}: use 1 (TLS on) or 0 (off)")
        missing = [name for name in (CERT_ENV, KEY_ENV, CA_ENV) if not env.get(name)]
        if missing:
            raise ValueError(
                f"{USE_ENV} is on, so {CERT_ENV}, {KEY_ENV} and {CA_ENV} must all name PEM "
                f"files; missing: {', '.join(missing)}")
        return cls(env[CERT_ENV], env[KEY_ENV], env[CA_ENV])

    def _context(self, purpose: int) -> ssl.SSLContext:
        ctx = ssl.SSLContext(purpose)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.check_hostname = False  # see the module docstring: the CA decides
        ctx.verify_mode = ssl.CERT_REQUIRED
        for name, load in ((CA_ENV, lambda: ctx.load_verify_locations(cafile=self.ca_path)),
                           (CERT_ENV, lambda: ctx.load_cert_chain(self.cert_path,
                                                                  self.key_path))):
            try:
                load()
            except (OSError, ssl.SSLError) as exc:
                what = (f"{CA_ENV}={self.ca_path!r}" if name == CA_ENV else
                        f"{CERT_ENV}={self.cert_path!r} with {KEY_ENV}={self.key_path!r}")
                raise ValueError(f"cannot load the TLS files ({what}): {exc}") from None
        return ctx


_lock = threading.Lock()
_contexts: dict[tuple, ssl.SSLContext] = {}


def config() -> TlsConfig | None:
    """This process's TLS configuration, read from its environment (None: TLS off)."""
    return TlsConfig.from_env()


def _context(server_side: bool) -> ssl.SSLContext:
    cfg = config()
    if cfg is None:
        raise ValueError(f"TLS is off ({USE_ENV} is not set)")
    key = (cfg, server_side)
    with _lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = _contexts[key] = cfg._context(
                ssl.PROTOCOL_TLS_SERVER if server_side else ssl.PROTOCOL_TLS_CLIENT)
    return ctx


def client_context(verify: bool = True) -> ssl.SSLContext:
    """The client side's context: our certificate, the CA, no host names (shared, cached).
    Also what HTTPS clients of the dashboard use; raises ValueError when TLS is off.
    ``verify=False`` (asked for by a user): a fresh one that accepts any server, still
    presenting our certificate, which the server requires."""
    if verify:
        return _context(False)
    cfg = config()
    if cfg is None:
        raise ValueError(f"TLS is off ({USE_ENV} is not set)")
    ctx = cfg._context(ssl.PROTOCOL_TLS_CLIENT)
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def server_context() -> ssl.SSLContext:
    """The server side's context (shared, cached): it requires a client certificate."""
    return _context(True)


def check() -> None:
    """Fail now, with the variable named, if TLS is on but misconfigured."""
    if config() is not None:
        _context(True)
        _context(False)


def speaks_tls(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether the server at ``host:port`` answers a TLS ClientHello as a TLS server does.
    Used only to explain a failure (a plain client that a TLS-only server dropped), so it
    verifies nothing and sends no certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock, \
                ctx.wrap_socket(sock):
            return True  # (TLS 1.3 reports the missing client certificate only later)
    except ssl.SSLError as exc:
        return "ALERT" in str(exc.reason).upper()  # a TLS answer: it wants a certificate
    except OSError:
        return False


def applies_to(sock: socket.socket) -> bool:
    """Whether connections on ``sock`` run TLS (TCP, with TLS on)."""
    return sock.family in (socket.AF_INET, socket.AF_INET6) and config() is not None


def handshake_failed(where: str, exc: BaseException) -> AuthenticationError:
    reason = getattr(exc, "reason", None) or exc
    return AuthenticationError(
        f"TLS handshake with {where} failed ({reason}): both ends need {USE_ENV}=1 and "
        f"certificates signed by the CA in {CA_ENV}")


class TlsSession:
    """One connection's TLS, over memory buffers: bytes in, bytes out, no I/O.

    ``start()`` gives what to send first (a server: the clear-text marker; a client:
    its ClientHello). ``receive(raw)`` takes what arrived and returns the plaintext it
    carried; ``outgoing()`` then has what the session must send (handshake replies).
    ``encrypt(plain)`` returns the bytes to send once ``established``. Not thread-safe:
    the caller serialises use (the transport holds its connection lock).
    """

    __slots__ = ("_in", "_out", "_obj", "_marker", "_where", "server_side", "established")

    def __init__(self, server_side: bool, where: str):
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = _context(server_side).wrap_bio(self._in, self._out,
                                                   server_side=server_side)
        self._marker: bytes | None = None if server_side else b""  # a client strips the server's marker
        self._where = where
        self.server_side = server_side
        self.established = False

    def start(self) -> bytes:
        if self.server_side:
            return TLS_MARKER
        self._handshake()
        return self._out.read()

    def receive(self, raw: bytes) -> bytes:
        """Plaintext from ``raw``; raises AuthenticationError if the handshake fails and
        ConnectionError when the peer ended the session."""
        if self._marker is not None:
            raw = self._strip_marker(raw)
            if not raw:
                return b""
        self._in.write(raw)
        if not self.established:
            self._handshake()
            if not self.established:
                return b""
        chunks = []
        while True:
            try:
                chunks.append(self._obj.read(_READ_BYTES))
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                raise ConnectionError("the peer ended the TLS session") from None
            except ssl.SSLError as exc:
                raise ConnectionError(f"TLS error: {exc}") from None
        return b"".join(chunks)

    def _strip_marker(self, raw: bytes) -> bytes:
        got = (self._marker or b"") + raw
        if not TLS_MARKER.startswith(got[:len(TLS_MARKER)]):
            if got.startswith(b"RAYAUTH"[:len(got)]):
                raise AuthenticationError(
                    f"{self._where} runs without TLS but this process has {USE_ENV} on: "
                    "start every node with the same TLS settings")
            raise AuthenticationError(f"{self._where} is not a Ray endpoint (bad greeting)")
        if len(got) < len(TLS_MARKER):
            self._marker = got
            return b""
        self._marker = None
        return got[len(TLS_MARKER):]

    def _handshake(self) -> None:
        try:
            self._obj.do_handshake()
        except ssl.SSLWantReadError:
            return
        except ssl.SSLError as exc:
            raise handshake_failed(self._where, exc) from None
        self.established = True

    def outgoing(self) -> bytes:
        return self._out.read()

    def encrypt(self, data) -> bytes:
        view = memoryview(data)
        done = 0
        while done < len(view):
            done += self._obj.write(view[done:])
        return self._out.read()


# -- blocking sockets ----------------------------------------------------------------------
def connect_blocking(sock: socket.socket, where: str, timeout_s: float) -> ssl.SSLSocket:
    """Run the client side of TLS on a connected blocking socket; the TLS socket."""
    old = sock.gettimeout()
    sock.settimeout(timeout_s)
    marker = b""
    try:
        while len(marker) < len(TLS_MARKER):
            chunk = sock.recv(len(TLS_MARKER) - len(marker))
            if not chunk:
                raise AuthenticationError(f"{where} closed the connection before TLS started")
            marker += chunk
    except TimeoutError:
        raise AuthenticationError(f"{where} did not start TLS in {timeout_s} s") from None
    if marker != TLS_MARKER:
        if marker.startswith(b"RAYAUTH"):
            raise AuthenticationError(
                f"{where} runs without TLS but this process has {USE_ENV} on: start every "
                "node with the same TLS settings")
        raise AuthenticationError(f"{where} is not a Ray endpoint (bad greeting)")
    tls_sock = _context(False).wrap_socket(sock, do_handshake_on_connect=False)
    try:
        tls_sock.do_handshake()
    except (ssl.SSLError, OSError) as exc:
        tls_sock.close()
        raise handshake_failed(where, exc) from None
    tls_sock.settimeout(old)
    return tls_sock


def accept_blocking(sock: socket.socket, timeout_s: float) -> ssl.SSLSocket | None:
    """Run the server side of TLS on an accepted blocking socket; None if it failed."""
    old = sock.gettimeout()
    sock.settimeout(timeout_s)
    try:
        sock.sendall(TLS_MARKER)
        tls_sock = _context(True).wrap_socket(sock, server_side=True,
                                              do_handshake_on_connect=False)
    except OSError:
        return None
    try:
        tls_sock.do_handshake()
    except (ssl.SSLError, OSError):
        tls_sock.close()
        return None
    tls_sock.settimeout(old)
    return tls_sock
