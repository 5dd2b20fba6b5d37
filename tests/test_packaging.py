"""Each distribution installs like a real one and runs.

Every wheel is built from this checkout; each package is then installed into its own
fresh virtual environment with ``pip install <wheel>``, its dependencies *resolved by
pip* from its declared metadata (our other wheels plus the package registry), and a
small real job runs in that environment (``ray.init`` and tasks, a Tune experiment, a
PPO iteration, a ``PyTorchTrainer`` epoch, ``ray up``/``exec``/``down`` on an
in-process provider). A dependency that a package imports but does not declare fails
here; so does one it declares that pip cannot resolve.

Cost: resolving against the registry means one round trip per requirement (minutes
here), so the registry is asked once per *metadata*: ``pip download`` of every wheel
(with ray-core's extras) fills a wheelhouse under ``$RAY_PACKAGING_CACHE`` (default
``~/.cache/ray-packaging``), keyed by a hash of all the wheels' ``Requires-Dist``, the
constraints and the Python version. Each per-package install then resolves offline
(``--no-index``) against our wheels and that wheelhouse, so a changed requirement
changes the key and goes back to the registry. torch is installed with the CI pin of
``ci/requirements-test.txt`` as a constraint: the metadata says ``torch>=2.1``, and on a
machine with no torch a plain range pulls a multi-GB CUDA wheel.
"""

from __future__ import annotations

import ast
import email.parser
import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# distribution: the module it provides, the sibling distributions it must pull in.
PACKAGES = {
    "ray-plasma": ("plasma", []),
    "ray-core": ("ray", ["ray-plasma"]),
    "ray-tune": ("ray.tune", ["ray-core", "ray-plasma"]),
    "ray-rllib": ("ray.rllib", ["ray-tune", "ray-core", "ray-plasma"]),
    "ray-sgd": ("ray.sgd", ["ray-core", "ray-plasma"]),
    "ray-autoscaler": ("ray.autoscaler", ["ray-core", "ray-plasma"]),
}
# ray-core with every extra is installed (and smoke-tested) in a venv of its own too.
OPTIONAL_EXTRAS = {"ray-core": "all"}
# Also in the wheelhouse: the build backend for the editable-install test.
BUILD_REQUIREMENTS = ["setuptools>=64"]
# Imports that no extra declares, each used only when present, and why.
UNDECLARED_OPTIONAL_IMPORTS = {
    "ray-core": {
        "modin": "Dataset.to_modin / from_modin: the user brings Modin (which needs Ray itself)",
        "uvloop": "the raylet's event loop when installed (ray-plasma[fast] installs it)",
        "torch": "Dataset.iter_torch_batches: the user's own PyTorch, as in Ray (which declares "
                 "no torch either); ray-rllib and ray-sgd declare it",
    },
    "ray-rllib": {
        "lz4": "SampleBatch compression when installed, else zlib",
        "moviepy": "the env monitor's videos when installed, else episode stats and a warning",
    },
}

pytestmark = pytest.mark.slow


def _run(cmd, timeout=600, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


def _pip(*args, timeout=600):
    return _run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], timeout=timeout)


def _metadata(wheel: str) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def _ci_torch_pin() -> str:
    with open(os.path.join(ROOT, "ci", "requirements-test.txt")) as f:
        pins = re.findall(r"^(torch==[\w.+]+)", f.read(), re.M)
    assert len(pins) == 1, "ci/requirements-test.txt must pin torch exactly once (torch==X)"
    return pins[0]


@pytest.fixture(scope="module")
def wheels(build_wheels):
    found = build_wheels(*PACKAGES)
    assert set(found) == set(PACKAGES)
    return found


@pytest.fixture(scope="module")
def constraints(tmp_path_factory):
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    path.write_text(_ci_torch_pin() + "\n")
    return str(path)


def _cache_root() -> str:
    default = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                           "ray-packaging")
    return os.environ.get("RAY_PACKAGING_CACHE") or default


@pytest.fixture(scope="module")
def wheelhouse(wheels, constraints):
    """Every third-party wheel our packages (and ray-core's extras) resolve to, from the
    registry, downloaded once per metadata; see the module docstring."""
    key = hashlib.sha256()
    for dist in sorted(wheels):
        key.update(dist.encode())
        for req in sorted(_metadata(wheels[dist]).get_all("Requires-Dist") or []):
            key.update(req.encode())
    with open(constraints, "rb") as f:
        key.update(f.read())
    key.update(" ".join(BUILD_REQUIREMENTS).encode())
    key.update(f"{sys.version_info[:2]} {sys.platform}".encode())
    root = _cache_root()
    house = os.path.join(root, key.hexdigest()[:16])
    if os.path.exists(os.path.join(house, ".complete")):
        return house
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be filling the same cache
        if os.path.exists(os.path.join(house, ".complete")):
            return house
        for old in os.listdir(root):  # keep only the newest metadata's wheelhouse
            if old != ".lock":
                shutil.rmtree(os.path.join(root, old), ignore_errors=True)
        wanted = [wheels[d] + (f"[{OPTIONAL_EXTRAS[d]}]" if d in OPTIONAL_EXTRAS else "")
                  for d in wheels] + BUILD_REQUIREMENTS  # fmt: skip
        partial = house + ".partial"
        _pip("download", "-q", "-d", partial, "--find-links", os.path.dirname(wheels["ray-core"]),
             "-c", constraints, *wanted, timeout=1200)  # fmt: skip
        for name in os.listdir(partial):  # our own wheels come fresh from each build
            if _canonical(name.split("-")[0]) in PACKAGES:
                os.remove(os.path.join(partial, name))
        open(os.path.join(partial, ".complete"), "w").close()
        os.rename(partial, house)
    return house


def _fresh_venv(path) -> str:
    """A new virtual environment with nothing in it (pip runs from outside, --python)."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    return os.path.join(path, "bin", "python")


def _installed(py) -> dict[str, str]:
    out = _run([py, "-c", "import importlib.metadata as m, json; "
                "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"])  # fmt: skip
    return json.loads(out)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _smoke(py, code: str, cwd, timeout=300) -> str:
    """Run ``code`` in the venv from an empty directory, with no trace of this checkout
    or of the test environment on the path."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "RAY_"))}  # fmt: skip
    env["PATH"] = os.path.dirname(py) + os.pathsep + env.get("PATH", "")
    script = cwd / "smoke.py"
    script.write_text(textwrap.dedent(code))
    done = subprocess.run([py, str(script)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)  # fmt: skip
    assert done.returncode == 0, f"smoke job failed:\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}"
    return done.stdout


# Each job starts with the same check: the package comes from the venv, not the checkout.
_FROM_VENV = """
import os, sys
import {module} as _mod
assert os.path.realpath(_mod.__path__[0]).startswith(os.path.realpath(sys.prefix)), _mod.__path__
"""

SMOKE = {
    "ray-plasma": """
import subprocess, time
import numpy as np
import plasma

sock = os.path.abspath("plasma.sock")
store = subprocess.Popen(["plasma_store", "-m", "50000000", "-s", sock])
try:
    deadline = time.time() + 30
    while not os.path.exists(sock):
        assert store.poll() is None and time.time() < deadline, "plasma_store did not start"
        time.sleep(0.05)
    client = plasma.connect(sock)
    oid = client.put(np.arange(1000))
    assert client.get(oid).sum() == 499500
    client.disconnect()
finally:
    store.terminate()
    store.wait(10)
print("ok")
""",
    "ray-core": """
import importlib.util, subprocess
import numpy as np
import ray

ray.init(num_cpus=2)
@ray.remote
def square(x):
    return x * x
@ray.remote
class Counter:
    def __init__(self):
        self.n = 0
    def add(self, k):
        self.n += k
        return self.n
assert ray.get([square.remote(i) for i in range(4)]) == [0, 1, 4, 9]
c = Counter.remote()
assert ray.get([c.add.remote(1) for _ in range(3)])[-1] == 3
assert ray.get(ray.put(np.ones(10**6))).sum() == 10**6
ray.shutdown()

# Without the extras: nothing of theirs is installed, and each feature says which extra.
for mod in ("flask", "pandas", "pyarrow"):
    assert importlib.util.find_spec(mod) is None, f"{mod} came with plain ray-core"
try:
    ray.init(num_cpus=1, include_dashboard=True)
    raise AssertionError("the dashboard started without Flask")
except ImportError as e:
    assert "ray-core[default]" in str(e), e
ray.init(num_cpus=1)
try:
    ray.data.range(10).to_pandas()
    raise AssertionError("to_pandas worked without pandas")
except ImportError as e:
    assert "pip install pandas" in str(e), e
ray.shutdown()
stack = subprocess.run(["ray", "stack"], capture_output=True, text=True)
assert stack.returncode != 0 and "ray-core[debug]" in stack.stderr, stack.stderr
print("ok")
""",
    "ray-core[all]": """
import json, subprocess, urllib.request
import ray

port = @PORT@
ray.init(num_cpus=1, include_dashboard=True, dashboard_port=port)
url = ray.get_webui_url()
with urllib.request.urlopen(url.rstrip("/") + "/api/nodes", timeout=30) as r:
    nodes = json.load(r)
assert nodes, nodes
ds = ray.data.from_items([{"a": i, "b": i * i} for i in range(100)])
ds.write_parquet(os.path.abspath("pq"))
back = ray.data.read_parquet(os.path.abspath("pq")).to_pandas()
assert sorted(back["b"]) == [i * i for i in range(100)]
@ray.remote
def pid():
    return os.getpid()
spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
dump = subprocess.run([spy, "dump", "--pid", str(ray.get(pid.remote()))], capture_output=True, text=True)
assert dump.returncode == 0 and "Thread" in dump.stdout, dump.stdout + dump.stderr
ray.shutdown()
print("ok")
""",
    "ray-tune": """
import ray
from ray import tune

ray.init(num_cpus=2)
def trainable(config, reporter):
    for step in range(3):
        reporter(mean_accuracy=step * config["lr"], timesteps_total=step)
analysis = tune.run(trainable, config={"lr": tune.grid_search([0.1, 0.2])},
                    local_dir=os.path.abspath("results"), verbose=0)
assert analysis.get_best_config("mean_accuracy", mode="max") == {"lr": 0.2}
assert len(analysis.dataframe()) == 2  # pandas
ray.shutdown()
print("ok")
""",
    "ray-rllib": """
import ray
from ray.rllib.agents import ppo

ray.init(num_cpus=2)
trainer = ppo.PPOTrainer(env="CartPole-v1", config={
    "num_workers": 0, "train_batch_size": 200, "sgd_minibatch_size": 50,
    "num_sgd_iter": 2, "sample_batch_size": 200})
result = trainer.train()
assert result["timesteps_total"] >= 200, result["timesteps_total"]
path = trainer.save(os.path.abspath("ckpt"))
assert os.path.exists(path)
trainer.stop()
ray.shutdown()
print("ok")
""",
    "ray-sgd": """
import ray, torch
from ray.sgd import PyTorchTrainer
from ray.sgd.pytorch import utils

def data(config):
    x = torch.linspace(-1, 1, 64).unsqueeze(1)
    ds = torch.utils.data.TensorDataset(x, 2 * x + 1)
    return ds, ds
ray.init(num_cpus=2)
trainer = PyTorchTrainer(model_creator=lambda config: torch.nn.Linear(1, 1), data_creator=data,
                         optimizer_creator=utils.sgd_mse_optimizer, config={"lr": 0.1},
                         num_replicas=1, batch_size=16)
first = trainer.validate()["validation_loss"]
for _ in range(3):
    trainer.train()
assert trainer.validate()["validation_loss"] < first
trainer.shutdown()
ray.shutdown()
print("ok")
""",
    "ray-autoscaler": """
import subprocess
import yaml
from ray.autoscaler.launcher import (create_or_update_cluster, exec_cluster,
                                     get_head_node_ip, teardown_cluster)

config = {
    "cluster_name": "pkgsmoke", "min_workers": 0, "max_workers": 0,
    "provider": {"type": "external", "module": "ray.autoscaler.providers.memory.InMemoryNodeProvider",
                 "root_dir": os.path.abspath("nodes")},
    "auth": {"ssh_user": "root"},
    "setup_commands": ["echo set-up > setup.txt"],
    "head_start_ray_commands": [], "worker_start_ray_commands": [],
}
with open("cluster.yaml", "w") as f:
    yaml.safe_dump(config, f)
create_or_update_cluster("cluster.yaml", yes=True, sleep=lambda s: None)
assert get_head_node_ip("cluster.yaml")
out = exec_cluster("cluster.yaml", "cat setup.txt")
assert "set-up" in out, out
teardown_cluster("cluster.yaml", yes=True, sleep=lambda s: None)
# ray-core's `ray` command picks the cluster commands up through the entry points.
help = subprocess.run(["ray", "--help"], capture_output=True, text=True, check=True).stdout
assert all(c in help for c in ("up", "down", "exec", "submit")), help
print("ok")
""",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _third_party_imports(dist: str) -> dict[str, set[str]]:
    """{top-level module: files importing it} for the package's sources, anywhere in a
    file (lazy imports inside functions count), standard library and ray/plasma left out."""
    found: dict[str, set[str]] = {}
    src = os.path.join(ROOT, "packages", dist, "src")
    for folder, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in ("ray", "plasma"):
                        found.setdefault(top, set()).add(os.path.relpath(path, src))
    return found


@pytest.mark.parametrize("dist", list(PACKAGES))
def test_metadata_declares_what_the_code_imports(dist, wheels):
    """Both ways: every third-party import is a declared requirement (plain or in an
    extra; a distribution that a declared one requires, like werkzeug for flask, counts),
    and every plain requirement is imported by the package's code."""
    from packaging.requirements import Requirement

    declared: dict[str | None, set[str]] = {}
    for line in _metadata(wheels[dist]).get_all("Requires-Dist") or []:
        req = Requirement(line)
        extra = re.search(r'extra == "([^"]+)"', str(req.marker)) if req.marker else None
        declared.setdefault(extra.group(1) if extra else None, set()).add(_canonical(req.name))
    declared.pop("test", None)  # test-suite needs, not the package's
    with_transitive = set()
    for names in declared.values():
        for name in names:
            with_transitive.add(name)
            try:
                reqs = importlib.metadata.requires(name) or []
            except importlib.metadata.PackageNotFoundError:
                continue
            with_transitive.update(_canonical(Requirement(r).name) for r in reqs
                                   if not Requirement(r).marker or "extra" not in str(Requirement(r).marker))
    module_dists = importlib.metadata.packages_distributions()
    optional = UNDECLARED_OPTIONAL_IMPORTS.get(dist, {})
    imported = set()
    for module, files in sorted(_third_party_imports(dist).items()):
        if module in optional:
            continue
        # Not installed here: the distribution is taken to carry the module's name.
        owners = {_canonical(d) for d in module_dists.get(module, [module])}
        imported |= owners
        assert owners & with_transitive, (
            f"{dist}: {sorted(files)} import {module!r} ({sorted(owners)}), which its "
            f"pyproject.toml does not declare (declared: {declared}). Declare it (plainly, or in "
            "an extra if the code works without it), or, for an import that only speeds "
            "something up when present, list it in UNDECLARED_OPTIONAL_IMPORTS with the reason")
    siblings = {_canonical(d) for d in PACKAGES}
    unused = declared.get(None, set()) - imported - siblings
    assert not unused, f"{dist} requires {sorted(unused)}, which its code never imports"


def test_only_ray_core_ships_ray_init(wheels):
    for dist, path in wheels.items():
        names = zipfile.ZipFile(path).namelist()
        has_init = "ray/__init__.py" in names
        assert has_init == (dist == "ray-core"), f"{dist}: ray/__init__.py shipped={has_init}"


def test_every_wheel_ships_py_typed(wheels):
    for dist, path in wheels.items():
        module = PACKAGES[dist][0]
        names = zipfile.ZipFile(path).namelist()
        assert f"{module.replace('.', '/')}/py.typed" in names, f"{dist}: no py.typed"


def test_torch_is_a_range_in_metadata_and_a_pin_only_in_ci(wheels):
    pin = _ci_torch_pin()
    for dist in ("ray-rllib", "ray-sgd"):
        reqs = _metadata(wheels[dist]).get_all("Requires-Dist")
        torch = [r for r in reqs if re.match(r"torch\b", r)]
        assert torch == ["torch>=2.1"], f"{dist}: {torch}"
    installed = pin.split("==")[1]
    assert tuple(int(x) for x in installed.split(".")[:2]) >= (2, 1), "CI's torch is below the range"


class Venvs:
    """One fresh virtual environment per requirement, made on first use and kept for the
    module: the uninstall test extends ray-rllib's (after its smoke job ran) instead of
    installing PyTorch a third time."""

    def __init__(self, root, wheels, wheelhouse, constraints):
        self._root, self._wheels = root, wheels
        self._house, self._constraints = wheelhouse, constraints
        self._made: dict[str, str] = {}

    def install(self, py, *requirements, no_build_isolation=False):
        args = ["--no-build-isolation"] if no_build_isolation else []
        _pip("--python", py, "install", "-q", "--no-compile", "--no-index", *args,
             "--find-links", os.path.dirname(self._wheels["ray-core"]),
             "--find-links", self._house, "-c", self._constraints, *requirements)  # fmt: skip

    def get(self, dist: str) -> str:
        """The venv of ``dist`` (e.g. ``ray-core[all]``): fresh, then ``pip install <wheel>``."""
        if dist not in self._made:
            base = dist.split("[")[0]
            folder = self._root / re.sub(r"\W", "_", dist)
            py = _fresh_venv(folder)
            self.install(py, self._wheels[base] + dist[len(base):])
            self._made[dist] = py
        return self._made[dist]


@pytest.fixture(scope="module")
def venvs(tmp_path_factory, wheels, wheelhouse, constraints):
    return Venvs(tmp_path_factory.mktemp("venvs"), wheels, wheelhouse, constraints)


@pytest.mark.parametrize("dist", list(PACKAGES) + ["ray-core[all]"])
def test_package_installs_with_resolved_dependencies_and_runs(dist, venvs, tmp_path):
    base = dist.split("[")[0]
    module, siblings = PACKAGES[base]
    py = venvs.get(dist)
    _run([sys.executable, "-m", "pip", "--python", py, "check"])
    installed = _installed(py)
    ours = {d for d in installed if d in PACKAGES}
    assert ours == {base, *siblings}, f"{dist} pulled in {sorted(ours)}"
    code = _FROM_VENV.format(module=module) + SMOKE[dist].replace("@PORT@", str(_free_port()))
    assert _smoke(py, code, tmp_path).strip().endswith("ok")


def test_editable_installs_resolve_and_import(venvs, tmp_path):
    """``pip install -e packages/...`` (how ci/install.sh installs every package for the
    test suite) resolves from the same metadata; the packages without PyTorch here."""
    py = _fresh_venv(tmp_path / "venv")
    venvs.install(py, *BUILD_REQUIREMENTS)  # the build backend, for --no-build-isolation
    dists = ["ray-plasma", "ray-core", "ray-tune", "ray-autoscaler"]
    args = [a for d in dists for a in ("-e", os.path.join(ROOT, "packages", d))]
    venvs.install(py, *args, no_build_isolation=True)
    modules = ", ".join(PACKAGES[d][0] for d in dists)
    code = (f"import {modules}, ray, importlib.metadata as m; ray.init; "
            "assert ray.__version__ == m.version('ray-core'), ray.__version__")  # fmt: skip
    _run([py, "-c", code], cwd=tmp_path)


def test_uninstalling_one_library_leaves_the_others(venvs, wheels, tmp_path):
    py = venvs.get("ray-rllib")  # + the other wheels: every package in one venv
    venvs.install(py, *wheels.values())

    def imports(module):
        return subprocess.run([py, "-c", f"import {module}"], capture_output=True,
                              cwd=tmp_path).returncode == 0  # fmt: skip

    for module, _ in PACKAGES.values():
        assert imports(module), module
    _pip("--python", py, "uninstall", "-y", "-q", "ray-sgd")
    for dist in ("ray-core", "ray-tune", "ray-rllib", "ray-autoscaler"):
        assert imports(PACKAGES[dist][0]), dist
    _pip("--python", py, "uninstall", "-y", "-q", "ray-core")
    result = subprocess.run([py, "-c", "import ray.tune"], capture_output=True, text=True, cwd=tmp_path)
    assert "needs ray-core" in result.stderr
