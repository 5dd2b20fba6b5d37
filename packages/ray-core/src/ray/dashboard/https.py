"""The dashboard over HTTPS when ``RAY_USE_TLS`` is on (mutual TLS, as every listener).

The server presents the node's certificate and requires a client certificate that the
cluster CA signed (``ray._private.tls.server_context``). Each connection's handshake
runs in that connection's own thread, with a deadline: werkzeug's own ``ssl_context``
would run it in the accepting thread, where one client that connects and sends nothing
stalls every other. A client that speaks plain HTTP to the port gets a 400 answer in
clear that says why, then the connection closes (as nginx answers HTTP on an HTTPS
port), rather than a bare reset.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl

from werkzeug.serving import ThreadedWSGIServer

from ray._private import tls

logger = logging.getLogger(__name__)
HANDSHAKE_TIMEOUT_S = 10.0
_TLS_HANDSHAKE_RECORD = 0x16  # the first byte of every TLS ClientHello
_REFUSAL_TEXT = (
    f"This Ray dashboard serves HTTPS only ({tls.USE_ENV} is on) and requires a client "
    f"certificate signed by the cluster's CA ({tls.CA_ENV}). Use https:// with the node "
    f"certificate ({tls.CERT_ENV}, {tls.KEY_ENV}); Ray's own clients do when "
    f"{tls.USE_ENV}=1.\n").encode()
PLAIN_HTTP_REFUSAL = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\nContent-Length: " + str(len(_REFUSAL_TEXT)).encode()
    + b"\r\n\r\n" + _REFUSAL_TEXT)


class TlsWSGIServer(ThreadedWSGIServer):
    """werkzeug's threaded server, with mutual TLS set up in each request's thread."""

    def __init__(self, host: str, port: int, app, *, fd: int, context: ssl.SSLContext):
        super().__init__(host, port, app, fd=fd)
        # What werkzeug reads to put "https" in the WSGI environment and to log TLS
        # errors quietly; the listening socket itself stays plain (see the docstring).
        self.ssl_context = context

    def process_request_thread(self, request, client_address) -> None:
        secured = self._secure(request, client_address)
        if secured is not None:
            super().process_request_thread(secured, client_address)

    def _secure(self, request: socket.socket, client_address) -> ssl.SSLSocket | None:
        """The connection with TLS established, or None (refused: closed here)."""
        try:
            request.settimeout(HANDSHAKE_TIMEOUT_S)
            first = request.recv(1, socket.MSG_PEEK)
            if first and first[0] != _TLS_HANDSHAKE_RECORD:
                _refuse_plain_http(request)
                raise ConnectionError("a plain HTTP request on the HTTPS port")
            secured = self.ssl_context.wrap_socket(request, server_side=True)
            secured.settimeout(None)
            return secured
        except (ssl.SSLError, OSError) as exc:
            # A refused client (no certificate, another CA's, plain HTTP) or one that
            # went away: nothing to serve, and not this server's error.
            logger.info("dashboard: TLS connection from %s refused: %s", client_address, exc)
            with contextlib.suppress(OSError):
                request.close()
            return None


def _refuse_plain_http(request: socket.socket) -> None:
    """Answer 400 in clear, then read what the client sent until it closes: closing with
    its request unread would reset the connection, and the client might lose the answer."""
    request.sendall(PLAIN_HTTP_REFUSAL)
    request.shutdown(socket.SHUT_WR)
    request.settimeout(1.0)
    for _ in range(16):  # a request's headers: at most 1 MiB is read, then it is cut off
        if not request.recv(65536):
            return


__all__ = ["HANDSHAKE_TIMEOUT_S", "PLAIN_HTTP_REFUSAL", "TlsWSGIServer"]
