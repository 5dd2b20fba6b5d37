#!/usr/bin/env python3
"""Run docker/kubernetes/*.yaml as pods on one machine with ``podman kube play``.

    python docker/kubernetes/podman_kube.py up [--workers N]   # head pod, then N worker pods
    python docker/kubernetes/podman_kube.py submit             # the submit.yaml job; its log; its exit code
    python docker/kubernetes/podman_kube.py down               # pods, secret and network removed
    python docker/kubernetes/podman_kube.py render FILE        # the YAML podman gets for FILE

The manifests are the Kubernetes ones, unchanged on disk. podman (4.3, Debian 12) runs
Pods and Deployments but not the rest of a Kubernetes cluster, so this script adapts
what pods-on-podman require, and only that, before ``podman kube play``:

1. **Service** ``ray-head``: podman has no Services. The head pod gets a fixed address on
   a podman network of its own (``ray-k8s``), and every other pod maps the Service's
   name to it with ``hostAliases`` (the Service's ports are the head's own ports, so
   ``ray-head:6379`` reaches the same process as through a ClusterIP).
2. **status.podIP** (downward API): not supported by podman 4.3 ("fieldPath status.podIP
   is either not valid or not supported"). Each pod gets a fixed address (``--ip``) and
   the variable becomes that address as a literal value.
3. **Deployment replicas**: because of (2), worker.yaml is played once per worker with
   ``replicas: 1`` and the name ``ray-worker-<i>`` (podman would otherwise start the
   replicas with addresses this script does not know).
4. **Job**: podman 4.3 has no Jobs. The Job's pod template runs as a Pod (its
   ``restartPolicy: Never`` kept); ``backoffLimit`` and ``ttlSecondsAfterFinished`` belong
   to the Job controller and have no podman equivalent: ``submit`` removes the pod once
   its log is read.
5. **Secret** ``ray-cluster-secret``: made by ``up`` with ``podman secret create`` in the
   form podman 4.3 reads for ``secretKeyRef`` (a JSON map of key to base64 value), with a
   random password unless ``RAY_CLUSTER_PASSWORD`` is set.
6. **$(VAR) in command/args**: podman 4.3 passes ``$(MY_CPU_REQUEST)`` through literally
   (``ray start`` then fails: "'$(MY_CPU_REQUEST)' is not a valid float"). The script does
   Kubernetes' expansion itself, from the container's env as Kubernetes would resolve it
   (literal values, the pod address, ``resourceFieldRef`` with its divisor, the secret
   it made); ``$$(VAR)`` stays ``$(VAR)``, and an undefined ``$(VAR)`` is left as written.

Not adapted because podman already accepts them: ConfigMaps next to the pod that mounts
them, ``resourceFieldRef`` (requests.cpu), ``resources``, ``emptyDir`` (podman backs it
with a volume rather than memory). ``readinessProbe`` is ignored by podman, so ``up``
waits for the head's "Started ray" line instead.
"""

from __future__ import annotations

import argparse
import base64
import copy
import ipaddress
import json
import math
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
NETWORK = "ray-k8s"
SECRET = "ray-cluster-secret"
HEAD_SERVICE = "ray-head"
LABEL = "ray-podman-kube"


class KubeError(Exception):
    """A step of bringing the cluster up or running the job failed."""


def _podman(*args, check=True, capture=True, timeout=600) -> subprocess.CompletedProcess:
    done = subprocess.run(["podman", *args], capture_output=capture, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise KubeError(f"podman {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done


def _load(name: str) -> list[dict]:
    with open(os.path.join(HERE, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


# ------------------------------------------------------------------ adaptation (pure)
_SUFFIXES = {"m": 0.001, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}  # fmt: skip


def _quantity(text) -> float:
    """A Kubernetes quantity ("500m", "2Gi", "1") as a number."""
    text = str(text)
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIXES[suffix]
    return float(text)


def _resource_value(container: dict, ref: dict) -> str:
    """What Kubernetes puts in an env var with ``resourceFieldRef`` (rounded up)."""
    section, _, resource = ref["resource"].partition(".")
    resources = container.get("resources", {})
    value = resources.get(section, {}).get(resource)
    if value is None and section == "requests":  # an unset request defaults to the limit
        value = resources.get("limits", {}).get(resource)
    if value is None:
        raise KubeError(f"{container['name']}: resourceFieldRef {ref['resource']} is not set "
                        "in the container's resources")
    return str(math.ceil(_quantity(value) / _quantity(ref.get("divisor", "1"))))


def _expand(text: str, values: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: defined names replaced, $$(VAR) escaped, others kept."""
    return re.sub(r"\$(\$|\((\w+)\))",
                  lambda m: "$" if m.group(1) == "$" else values.get(m.group(2), m.group(0)), text)


def _container(container: dict, ip: str, secret_values: dict[tuple[str, str], str]) -> dict:
    values: dict[str, str] = {}
    for env in container.get("env", []):
        source = env.get("valueFrom", {})
        if "value" in env:
            values[env["name"]] = _expand(str(env["value"]), values)
        elif source.get("fieldRef", {}).get("fieldPath") == "status.podIP":
            env.pop("valueFrom")  # (2)
            env["value"] = values[env["name"]] = ip
        elif "resourceFieldRef" in source:
            values[env["name"]] = _resource_value(container, source["resourceFieldRef"])
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            if (ref["name"], ref["key"]) in secret_values:
                values[env["name"]] = secret_values[(ref["name"], ref["key"])]
    for key in ("command", "args"):  # (6)
        if key in container:
            container[key] = [_expand(str(a), values) for a in container[key]]
    return container


def _pod_spec(spec: dict, ip: str, head_ip: str | None, secret_values) -> dict:
    spec = copy.deepcopy(spec)
    spec["containers"] = [_container(c, ip, secret_values) for c in spec.get("containers", [])]
    if head_ip is not None:
        spec.setdefault("hostAliases", []).append({"ip": head_ip, "hostnames": [HEAD_SERVICE]})
    return spec


def adapt(docs: list[dict], *, ip: str, head_ip: str | None, name: str | None = None,
          secret_values: dict[tuple[str, str], str] | None = None) -> list[dict]:
    """The documents podman gets: Services dropped, Jobs as Pods, one replica, podIP literal,
    $(VAR) expanded in command/args.

    ``ip``: this pod's address; ``head_ip``: the address ``ray-head`` stands for (None
    for the head itself); ``name``: a new name for the Deployment or Job's pod;
    ``secret_values``: {(secret, key): value} for the secrets the pods reference."""
    secret_values = secret_values or {}
    out = []
    for doc in docs:
        kind = doc["kind"]
        if kind == "Service":
            continue  # (1): hostAliases on the other pods
        doc = copy.deepcopy(doc)
        if kind == "Deployment":
            doc["spec"]["replicas"] = 1  # (3)
            if name:
                doc["metadata"]["name"] = name
            template = doc["spec"]["template"]
            template["spec"] = _pod_spec(template["spec"], ip, head_ip, secret_values)
        elif kind == "Job":  # (4)
            template = doc["spec"]["template"]
            doc = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name or doc["metadata"]["name"],
                             "labels": {**doc["metadata"].get("labels", {}),
                                        **template.get("metadata", {}).get("labels", {})}},
                "spec": _pod_spec(template["spec"], ip, head_ip, secret_values),
            }  # fmt: skip
        elif kind == "Pod":
            doc["spec"] = _pod_spec(doc["spec"], ip, head_ip, secret_values)
        elif kind != "ConfigMap":
            raise KubeError(f"podman_kube.py does not know how to run a {kind} on podman")
        out.append(doc)
    return out


# ------------------------------------------------------------------ podman steps
def _network() -> ipaddress.IPv4Network:
    if _podman("network", "exists", NETWORK, check=False).returncode != 0:
        _podman("network", "create", "--label", LABEL, NETWORK)
    info = json.loads(_podman("network", "inspect", NETWORK).stdout)[0]
    return ipaddress.ip_network(info["subnets"][0]["subnet"])


def _address(index: int) -> str:
    """The fixed address of pod ``index`` (0: the head) on the network."""
    return str(_network().network_address + 10 + index)


def _play(docs: list[dict], ip: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)
    try:
        _podman("kube", "play", "--network", NETWORK, "--ip", ip, f.name)
    finally:
        os.unlink(f.name)


def _pods(prefix: str) -> list[str]:
    out = _podman("pod", "ps", "--format", "{{.Name}}").stdout.split()
    return [p for p in out if p.startswith(prefix)]


def _container_of(pod: str) -> str:
    info = json.loads(_podman("pod", "inspect", pod).stdout)
    info = info[0] if isinstance(info, list) else info
    names = [c["Name"] for c in info["Containers"] if c["Id"] != info.get("InfraContainerID")]
    if len(names) != 1:
        raise KubeError(f"pod {pod}: expected one container, found {names}")
    return names[0]


def _wait_for_log(container: str, text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        logs = _podman("logs", container, check=False).stdout
        if text in logs:
            return
        state = _podman("inspect", "--format", "{{.State.Status}}", container).stdout.strip()
        if state not in ("created", "configured", "running", "initialized"):
            raise KubeError(f"{container} is {state} before printing {text!r}:\n{logs}")
        if time.monotonic() > deadline:
            raise KubeError(f"{container}: no {text!r} after {timeout_s:.0f} s:\n{logs}")
        time.sleep(0.5)


def make_secret() -> dict[tuple[str, str], str]:
    """(Re)create the cluster secret; returns its value for the $(VAR) expansion."""
    _podman("secret", "rm", SECRET, check=False)
    password = os.environ.get("RAY_CLUSTER_PASSWORD") or secrets.token_urlsafe(18)
    data = json.dumps({"password": base64.b64encode(password.encode()).decode()})  # (5)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(data)
    try:
        _podman("secret", "create", SECRET, f.name)
    finally:
        os.unlink(f.name)
    return {(SECRET, "password"): password}


def up(workers: int, timeout_s: float = 300) -> None:
    values = make_secret()
    head_ip = _address(0)
    _play(adapt(_load("head.yaml"), ip=head_ip, head_ip=None, secret_values=values), head_ip)
    (head,) = _pods("ray-head")
    _wait_for_log(_container_of(head), "Started ray on this node (head)", timeout_s)
    print(f"head pod {head} at {head_ip}")
    for i in range(workers):
        ip = _address(1 + i)
        _play(adapt(_load("worker.yaml"), ip=ip, head_ip=head_ip, name=f"ray-worker-{i}",
                    secret_values=values), ip)  # fmt: skip
    for i in range(workers):
        (pod,) = _pods(f"ray-worker-{i}")
        _wait_for_log(_container_of(pod), "joined the cluster", timeout_s)
        print(f"worker pod {pod} at {_address(1 + i)}")


def submit(workers: int, timeout_s: float = 600) -> int:
    """Run submit.yaml's job as a pod; print its log; remove it; return its exit code."""
    docs = _load("submit.yaml")
    job = next(d for d in docs if d["kind"] == "Job")
    name = job["metadata"]["name"]
    ip = _address(1 + workers)
    _play(adapt(docs, ip=ip, head_ip=_address(0)), ip)
    container = _container_of(name)
    deadline = time.monotonic() + timeout_s
    try:
        while _podman("inspect", "--format", "{{.State.Status}}", container).stdout.strip() != "exited":
            if time.monotonic() > deadline:
                raise KubeError(f"the job did not finish in {timeout_s:.0f} s:\n"
                                + _podman("logs", container, check=False).stdout)
            time.sleep(1)
        print(_podman("logs", container).stdout, end="")
        return int(_podman("inspect", "--format", "{{.State.ExitCode}}", container).stdout.strip())
    finally:
        _podman("pod", "rm", "-f", name, check=False)


def down() -> None:
    pods = [p for p in _pods("ray-") if p.startswith(("ray-head", "ray-worker", "ray-submit"))]
    if pods:  # one command: podman stops them in parallel
        _podman("pod", "rm", "-f", "-t", "10", *pods, check=False)
    _podman("secret", "rm", SECRET, check=False)
    if _podman("network", "exists", NETWORK, check=False).returncode == 0:
        _podman("network", "rm", "-f", NETWORK, check=False)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("up", "submit"):
        p = sub.add_parser(name)
        p.add_argument("--workers", type=int, default=2, help="worker pods (default 2)")
    sub.add_parser("down")
    render = sub.add_parser("render")
    render.add_argument("file", choices=["head.yaml", "worker.yaml", "submit.yaml"])
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            up(args.workers)
        elif args.command == "submit":
            return submit(args.workers)
        elif args.command == "down":
            down()
        else:
            head_ip = "HEAD_IP" if args.file != "head.yaml" else None
            print(yaml.safe_dump_all(adapt(_load(args.file), ip="POD_IP", head_ip=head_ip),
                                     sort_keys=False), end="")  # fmt: skip
    except KubeError as exc:
        print(f"podman_kube: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
