"""Cluster-secret authentication for every connection between Ray processes.

Each cluster has one secret (the Redis password: ``ray start --head`` makes one
up unless ``--redis-password`` names it). Redis requires it, and every stream
connection to a raylet, a worker or an object-transfer server opens with a
challenge/response before any request is read:

    server -> client   MAGIC (8 bytes) + nonce (16 random bytes)
    client -> server   HMAC-SHA256(key, nonce)        (32 bytes)
    server -> client   OK (1 byte), or it closes the connection

``key`` is derived from the secret, so the secret itself never crosses the
wire. A cluster started without a secret (possible only through the low-level
process helpers) still runs the handshake, with the key of the empty secret.
Processes get the secret from their parent through ``RAY_REDIS_PASSWORD``
(never on a command line, where ``ps`` would show it); drivers and joining
nodes on the head's machine find it in a 0600 file keyed by the cluster
address, others must be given it (``redis_password=`` / ``--redis-password``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import os
import secrets
import socket

from ray.exceptions import AuthenticationError

MAGIC = b"RAYAUTH1"
NONCE_BYTES = 16
MAC_BYTES = 32
GREETING_BYTES = len(MAGIC) + NONCE_BYTES
OK = b"\x01"
SECRET_ENV = "RAY_REDIS_PASSWORD"
SECRETS_DIR = "/tmp/ray/secrets"

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


def answer(key: bytes, nonce: bytes) -> bytes:
    return hmac.new(key, nonce, hashlib.sha256).digest()


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
    """Feeds on the first bytes a client sends until the answer is complete."""

    __slots__ = ("_buf", "_expected", "greeting")

    def __init__(self, key: bytes | None = None):
        nonce = os.urandom(NONCE_BYTES)
        self.greeting = MAGIC + nonce
        self._expected = answer(key if key is not None else _key(), nonce)
        self._buf = b""

    def feed(self, data: bytes) -> bytes | None:
        """None while incomplete; the bytes after the answer once it checks out.

        Raises AuthenticationError on a wrong answer.
        """
        self._buf += data
        if len(self._buf) < MAC_BYTES:  # judged only once complete: no prefix oracle
            return None
        got, rest = self._buf[:MAC_BYTES], self._buf[MAC_BYTES:]
        self._buf = b""
        if not hmac.compare_digest(got, self._expected):
            raise AuthenticationError("wrong cluster secret")
        return rest


class ClientHandshake:
    """The client's side, fed incrementally (for connections driven by an event loop).

    ``feed`` returns ``(answer, rest)``: ``answer`` is what to send back once the
    greeting is complete (else None); ``rest`` is None until the server's OK has
    arrived, then the bytes that followed it. Raises AuthenticationError.
    """

    __slots__ = ("_buf", "_key", "_where", "answered")

    def __init__(self, where: str = "the server", key: bytes | None = None):
        self._buf = b""
        self._key = key if key is not None else _key()
        self._where = where
        self.answered = False

    def feed(self, data: bytes) -> tuple[bytes | None, bytes | None]:
        self._buf += data
        out = None
        if not self.answered:
            if len(self._buf) < GREETING_BYTES:
                return None, None
            greeting, self._buf = self._buf[:GREETING_BYTES], self._buf[GREETING_BYTES:]
            if not greeting.startswith(MAGIC):
                raise AuthenticationError(f"{self._where} is not a Ray endpoint (bad greeting)")
            out = answer(self._key, greeting[len(MAGIC):])
            self.answered = True
        if not self._buf:
            return out, None
        if self._buf[:1] != OK:
            raise _refused(self._where)
        rest, self._buf = self._buf[1:], b""
        return out, rest

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
            chunk = sock.recv(MAC_BYTES)
            if not chunk:
                return False
            rest = gate.feed(chunk)
        if rest:  # a client must wait for OK before it speaks
            return False
        sock.sendall(OK)
        return True
    except (AuthenticationError, OSError):
        return False
    finally:
        sock.settimeout(old)


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


async def client_handshake_async(sock: socket.socket, where=None, timeout_s: float = 10.0) -> None:
    """The same on a non-blocking socket, in the running asyncio loop."""
    loop = asyncio.get_running_loop()
    shake = ClientHandshake(where or _peer_name(sock))

    async def run():
        rest = None
        while rest is None:
            rest = _step(shake, await loop.sock_recv(sock, GREETING_BYTES), sock.send)

    try:
        await asyncio.wait_for(run(), timeout_s)
    except (TimeoutError, ConnectionError) as exc:
        raise _failed(shake, exc, timeout_s) from None


def _step(shake: ClientHandshake, chunk: bytes, send) -> bytes | None:
    """Feed one received chunk; send the answer when due; the post-OK bytes once done."""
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
