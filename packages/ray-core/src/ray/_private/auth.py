"""Cluster-secret authentication for every connection between Ray processes.

Each cluster has one secret (the Redis password: ``ray start --head`` makes one
up unless ``--redis-password`` names it). Redis requires it, and every stream
connection to a raylet, a worker or an object-transfer server opens with a
mutual challenge/response before any request is read: each side proves that it
holds the secret, so a client cannot be served by a process outside the cluster
(a fake raylet or worker that took over an address) any more than a server
serves a stranger::

    server -> client   MAGIC (8 bytes) + Ns (16 random bytes)
    client -> server   Nc (16 random bytes) + HMAC(key, "ray-client" | Ns | Nc)
    server -> client   OK (1 byte) + HMAC(key, "ray-server" | Ns | Nc),
                       or it closes the connection
    the client checks the server's MAC, or closes the connection

``key`` is derived from the secret, so the secret itself never crosses the
wire; the two MACs carry different labels, so neither side can reflect the
other's answer back to it, and fresh nonces on both sides make a recorded
exchange useless. With TLS on (``RAY_USE_TLS``, ``ray._private.tls``) the same
exchange runs inside the TLS session of every TCP connection. A cluster started
without a secret (possible only through the low-level process helpers) still
runs the handshake, with the key of the empty secret. Processes get the secret
from their parent through ``RAY_REDIS_PASSWORD`` (never on a command line, where
``ps`` would show it); drivers and joining nodes on the head's machine find it
in a 0600 file keyed by the cluster address, others must be given it
(``redis_password=`` / ``--redis-password``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import socket
import ssl

from ray._private import tls
from ray.exceptions import AuthenticationError

MAGIC = b"RAYAUTH2"  # 2: mutual (RAYAUTH1 had the server check the client only)
NONCE_BYTES = 16
MAC_BYTES = 32
GREETING_BYTES = len(MAGIC) + NONCE_BYTES
ANSWER_BYTES = NONCE_BYTES + MAC_BYTES
OK = b"\x01"
WELCOME_BYTES = len(OK) + MAC_BYTES
SECRET_ENV = "RAY_REDIS_PASSWORD"
SECRETS_DIR = "/tmp/ray/secrets"
_CLIENT_LABEL = b"ray-client"
_SERVER_LABEL = b"ray-server"
_TLS_RECORD = b"\x16\x03"  # how a TLS ClientHello starts

_state = {"secret": None, "key": None}


def derive_key(secret: str | None) -> bytes:
    return hashlib.sha256(b"ray-cluster-auth-v1\0" + (secret or "").encode()).digest()


def set_cluster_secret(secret: str | None, export: bool = False) -> None:
    """The secret this process authenticates with; ``export``: also to its children.

    Drivers do not export it (a later ``ray.init`` for another cluster must not
    inherit it); daemons do (their workers need it).
    """
    _state["secret"] = secret or None
    _state["key"] = derive_key(secret)
    if export:
        if secret:
            os.environ[SECRET_ENV] = secret
        else:
            os.environ.pop(SECRET_ENV, None)


def cluster_secret() -> str | None:
    if _state["key"] is None:
        set_cluster_secret(os.environ.get(SECRET_ENV))
    return _state["secret"]


def _key() -> bytes:
    if _state["key"] is None:
        cluster_secret()
    return _state["key"]


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def _mac(key: bytes, label: bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    return hmac.new(key, label + server_nonce + client_nonce, hashlib.sha256).digest()


def answer(key: bytes, server_nonce: bytes, client_nonce: bytes | None = None) -> bytes:
    """The client's answer to a greeting's nonce: its own nonce, then its MAC."""
    client_nonce = os.urandom(NONCE_BYTES) if client_nonce is None else client_nonce
    return client_nonce + _mac(key, _CLIENT_LABEL, server_nonce, client_nonce)


def server_proof(key: bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    """What a server that holds the secret answers after accepting a client."""
    return _mac(key, _SERVER_LABEL, server_nonce, client_nonce)


# -- where drivers on the head's machine find the secret --------------------------------
def _secret_file(address: str) -> str:
    return os.path.join(SECRETS_DIR, address.replace(":", "_").replace("/", "_"))


def save_secret(address: str, secret: str) -> str:
    os.makedirs(SECRETS_DIR, mode=0o700, exist_ok=True)
    path = _secret_file(address)
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secret)
    os.replace(path + ".tmp", path)
    return path


def load_secret(address: str) -> str | None:
    candidates = [address]
    host, _, port = address.rpartition(":")
    if host in ("localhost", "127.0.0.1"):
        # The head also listens on loopback; its file is keyed by its node address.
        with contextlib.suppress(OSError):
            candidates += [n for n in os.listdir(SECRETS_DIR) if n.endswith(f"_{port}")]
    for name in candidates:
        with contextlib.suppress(OSError), open(os.path.join(SECRETS_DIR, name.replace(
                ":", "_").replace("/", "_"))) as f:
            return f.read().strip() or None
    return None


def forget_secret(address: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(_secret_file(address))


def resolve_secret(address: str | None, given: str | None) -> str | None:
    """The secret to join ``address`` with: given, else $RAY_REDIS_PASSWORD, else the file."""
    if given:
        return given
    env = os.environ.get(SECRET_ENV)
    if env:
        return env
    return load_secret(address) if address else None


# -- the server side: a pure, incremental verifier --------------------------------------
class ServerGate:
    """Feeds on the first bytes a client sends until its answer is complete.

    Once it checks out, the server sends ``welcome`` (OK and the server's own proof)."""

    __slots__ = ("_buf", "_key", "_nonce", "greeting", "welcome")

    def __init__(self, key: bytes | None = None):
        self._nonce = os.urandom(NONCE_BYTES)
        self._key = key if key is not None else _key()
        self.greeting = MAGIC + self._nonce
        self.welcome = b""
        self._buf = b""

    def feed(self, data: bytes) -> bytes | None:
        """None while incomplete; the bytes after the answer once it checks out.

        Raises AuthenticationError on a wrong answer.
        """
        self._buf += data
        if len(self._buf) < ANSWER_BYTES:  # judged only once complete: no prefix oracle
            if self._buf[:2] == _TLS_RECORD:
                raise AuthenticationError(
                    "the client speaks TLS but this process runs without it: set "
                    f"{tls.USE_ENV}=1 (and the certificate variables) on every node, or on none")
            return None
        got, rest = self._buf[:ANSWER_BYTES], self._buf[ANSWER_BYTES:]
        self._buf = b""
        client_nonce, mac = got[:NONCE_BYTES], got[NONCE_BYTES:]
        if not hmac.compare_digest(mac, _mac(self._key, _CLIENT_LABEL, self._nonce,
                                             client_nonce)):
            raise AuthenticationError("wrong cluster secret")
        self.welcome = OK + server_proof(self._key, self._nonce, client_nonce)
        return rest


class ClientHandshake:
    """The client's side, fed incrementally (for connections driven by an event loop).

    ``feed`` returns ``(answer, rest)``: ``answer`` is what to send back once the
    greeting is complete (else None); ``rest`` is None until the server's welcome
    has arrived and proved that the server holds the secret, then the bytes that
    followed it. Raises AuthenticationError.
    """

    __slots__ = ("_buf", "_expected", "_key", "_where", "answered")

    def __init__(self, where: str = "the server", key: bytes | None = None):
        self._buf = b""
        self._key = key if key is not None else _key()
        self._where = where
        self._expected = b""
        self.answered = False

    def feed(self, data: bytes) -> tuple[bytes | None, bytes | None]:
        self._buf += data
        out = None
        if not self.answered:
            if not self._buf.startswith(MAGIC[:len(self._buf)]):  # judged from the first byte
                raise self._not_ray()
            if len(self._buf) < GREETING_BYTES:
                return None, None
            greeting, self._buf = self._buf[:GREETING_BYTES], self._buf[GREETING_BYTES:]
            server_nonce = greeting[len(MAGIC):]
            out = answer(self._key, server_nonce)
            self._expected = OK + server_proof(self._key, server_nonce, out[:NONCE_BYTES])
            self.answered = True
        if not self._buf:
            return out, None
        if self._buf[:1] != OK:
            raise _refused(self._where)
        if len(self._buf) < WELCOME_BYTES:
            return out, None
        welcome, rest, self._buf = self._buf[:WELCOME_BYTES], self._buf[WELCOME_BYTES:], b""
        if not hmac.compare_digest(welcome, self._expected):
            raise AuthenticationError(
                f"{self._where} could not prove that it holds the cluster secret: it is not "
                "a process of this cluster (another cluster's, or an impostor listening at "
                "that address), so this process refuses to talk to it.")
        return out, rest

    def _not_ray(self) -> AuthenticationError:
        if self._buf.startswith(tls.TLS_MARKER[:len(self._buf)]):
            return AuthenticationError(
                f"{self._where} requires TLS ({tls.USE_ENV} is on there) but this process "
                f"runs without it: set {tls.USE_ENV}=1, {tls.CERT_ENV}, {tls.KEY_ENV} and "
                f"{tls.CA_ENV} in its environment too.")
        return AuthenticationError(f"{self._where} is not a Ray endpoint (bad greeting)")

    def refused(self) -> AuthenticationError:
        """The error for a connection the server closed during the handshake."""
        return _refused(self._where)


def server_handshake(sock: socket.socket, timeout_s: float = 10.0) -> bool:
    """Authenticate an accepted blocking socket; False (caller closes it) when refused."""
    gate = ServerGate()
    old = sock.gettimeout()
    sock.settimeout(timeout_s)
    try:
        sock.sendall(gate.greeting)
        rest = None
        while rest is None:
            chunk = sock.recv(ANSWER_BYTES)
            if not chunk:
                return False
            rest = gate.feed(chunk)
        if rest:  # a client must wait for the welcome before it speaks
            return False
        sock.sendall(gate.welcome)
        return True
    except (AuthenticationError, OSError):
        return False
    finally:
        sock.settimeout(old)


def accept(sock: socket.socket, timeout_s: float = 10.0) -> socket.socket | None:
    """Secure an accepted blocking socket: TLS first on TCP when it is on, then the
    secret. The socket to use from then on (a TLS one wraps ``sock``), or None when
    the client was refused (the caller closes ``sock``)."""
    if not tls.applies_to(sock):
        return sock if server_handshake(sock, timeout_s) else None
    secured = tls.accept_blocking(sock, timeout_s)
    if secured is None:
        return None
    if server_handshake(secured, timeout_s):
        return secured
    secured.close()
    return None


# -- the client side -----------------------------------------------------------------------
def _refused(where) -> AuthenticationError:
    # A server closes the connection on a wrong answer; a process that dies mid-handshake
    # looks the same from here, so the message names both.
    return AuthenticationError(
        f"{where} closed the connection during authentication: either it refused this "
        "process's cluster secret (pass the one `ray start --head` printed: "
        "ray.init(redis_password=...), ray start --redis-password=..., or "
        "$RAY_REDIS_PASSWORD), or it exited at that moment."
    )


def client_handshake(sock: socket.socket, where=None, timeout_s: float = 10.0,
                     key: bytes | None = None) -> None:
    """Authenticate a freshly connected blocking socket (raises AuthenticationError)."""
    shake = ClientHandshake(where or _peer_name(sock), key)
    old = sock.gettimeout()
    sock.settimeout(timeout_s)
    try:
        rest = None
        while rest is None:
            rest = _step(shake, sock.recv(GREETING_BYTES), sock.sendall)
    except (TimeoutError, ConnectionError) as exc:
        raise _failed(shake, exc, timeout_s) from None
    finally:
        sock.settimeout(old)


def connect(sock: socket.socket, where: str | None = None, timeout_s: float = 10.0,
            key: bytes | None = None) -> socket.socket:
    """Secure a freshly connected blocking socket: TLS first on TCP when it is on, then
    the mutual handshake. Returns the socket to use (a TLS one wraps ``sock``); raises
    AuthenticationError (the caller closes ``sock``)."""
    where = where or _peer_name(sock)
    if not tls.applies_to(sock):
        client_handshake(sock, where, timeout_s, key)
        return sock
    secured = tls.connect_blocking(sock, where, timeout_s)
    try:
        client_handshake(secured, where, timeout_s, key)
    except ssl.SSLError as exc:  # under TLS 1.3 the server judges our certificate late
        secured.close()
        raise tls.handshake_failed(where, exc) from None
    except BaseException:
        secured.close()
        raise
    return secured


def _step(shake: ClientHandshake, chunk: bytes, send) -> bytes | None:
    """Feed one received chunk; send the answer when due; the post-welcome bytes once done."""
    if not chunk:
        if shake.answered:
            raise shake.refused()
        raise AuthenticationError(
            f"{shake._where} closed the connection before the authentication greeting "
            "(not a Ray process, or it is shutting down)")
    reply, rest = shake.feed(chunk)
    if reply is not None and send(reply) not in (None, len(reply)):
        raise ConnectionError("could not send the authentication answer")
    if rest:  # the server speaks only when spoken to
        raise AuthenticationError(f"{shake._where} sent data before the client spoke")
    return rest


def _failed(shake: ClientHandshake, exc: BaseException, timeout_s: float) -> AuthenticationError:
    if isinstance(exc, AuthenticationError):
        return exc
    if isinstance(exc, TimeoutError):
        return AuthenticationError(
            f"{shake._where} did not complete authentication in {timeout_s} s")
    return shake.refused()


def _peer_name(sock: socket.socket) -> str:
    try:
        peer = sock.getpeername()
    except OSError:
        return "the server"
    return peer if isinstance(peer, str) else f"{peer[0]}:{peer[1]}"
