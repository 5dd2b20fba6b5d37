"""A small, real HTTP server that speaks the subset of the Kubernetes pod API we use.

Pods are kept in memory; a created pod is "scheduled" at once (phase Running, a
pod IP). Label selectors support ``k=v`` terms joined by commas. It runs in a
thread on 127.0.0.1 and records every request so tests can check what the
official client sent.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_PODS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods(?:/([^/?]+))?(?:\?(.*))?$")


class FakeKubernetesAPI:
    def __init__(self):
        self.pods: dict[tuple[str, str], dict] = {}
        self.requests: list[tuple[str, str]] = []
        self._ips = itertools.count(2)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict:
                n = int(self.headers.get("Content-Length", 0))
                return json.loads(self.rfile.read(n) or b"{}")

            def _route(self):
                api.requests.append((self.command, self.path))
                match = _PODS.match(self.path)
                if not match:
                    self._reply(404, _status(404, "NotFound", self.path))
                    return None
                return match.groups()

            def do_GET(self):
                route = self._route()
                if route is None:
                    return
                ns, name, query = route
                with api._lock:
                    if name:
                        pod = api.pods.get((ns, name))
                        if pod is None:
                            self._reply(404, _status(404, "NotFound", name))
                        else:
                            self._reply(200, pod)
                        return
                    selector = _selector(query or "")
                    items = [
                        p
                        for (pns, _), p in sorted(api.pods.items())
                        if pns == ns
                        and all(p["metadata"]["labels"].get(k) == v for k, v in selector.items())
                    ]
                self._reply(200, {"kind": "PodList", "apiVersion": "v1", "items": items})

            def do_POST(self):
                route = self._route()
                if route is None:
                    return
                ns, _, _ = route
                pod = self._body()
                meta = pod.setdefault("metadata", {})
                meta["name"] = meta.get("name") or meta["generateName"] + uuid.uuid4().hex[:5]
                meta["namespace"] = ns
                meta.setdefault("labels", {})
                meta["uid"] = str(uuid.uuid4())
                with api._lock:
                    pod["status"] = {"phase": "Running", "podIP": f"10.244.0.{next(api._ips)}"}
                    api.pods[(ns, meta["name"])] = pod
                self._reply(201, pod)

            def do_PATCH(self):
                route = self._route()
                if route is None:
                    return
                ns, name, _ = route
                patch = self._body()
                with api._lock:
                    pod = api.pods.get((ns, name))
                    if pod is None:
                        self._reply(404, _status(404, "NotFound", name))
                        return
                    pod["metadata"]["labels"].update(patch.get("metadata", {}).get("labels", {}))
                self._reply(200, pod)

            def do_DELETE(self):
                route = self._route()
                if route is None:
                    return
                ns, name, _ = route
                with api._lock:
                    pod = api.pods.pop((ns, name), None)
                if pod is None:
                    self._reply(404, _status(404, "NotFound", name))
                else:
                    self._reply(200, pod)

        return Handler


def _status(code: int, reason: str, what: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": f"{what} not found"}  # fmt: skip


def _selector(query: str) -> dict[str, str]:
    from urllib.parse import parse_qs

    raw = parse_qs(query).get("labelSelector", [""])[0]
    return dict(term.split("=", 1) for term in raw.split(",") if term)
