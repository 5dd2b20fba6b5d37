"""Each distribution builds, installs alone with its declared siblings, and imports.

Fresh virtual environments get our wheels (or editable installs) with --no-deps;
third-party dependencies come from the test environment's site-packages through a
``.pth`` line, so the check is about *our* packaging (the namespace layout, the
declared sibling dependencies, what each wheel contains), not about downloading.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = {
    # distribution: (import to check, sibling distributions it declares)
    "ray-plasma": ("plasma", []),
    "ray-core": ("ray", ["ray-plasma"]),
    "ray-tune": ("ray.tune", ["ray-core", "ray-plasma"]),
    "ray-rllib": ("ray.rllib", ["ray-tune", "ray-core", "ray-plasma"]),
    "ray-sgd": ("ray.sgd", ["ray-core", "ray-plasma"]),
    "ray-autoscaler": ("ray.autoscaler", ["ray-core", "ray-plasma"]),
}

pytestmark = pytest.mark.slow


def _run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheels(build_wheels):
    found = build_wheels(*PACKAGES)
    assert set(found) == set(PACKAGES)
    return found


def _venv(path) -> str:
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    py = os.path.join(path, "bin", "python")
    site = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    with open(os.path.join(site, "zz_thirdparty.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    return py


def _pip_install(py, *args):
    _run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps",
          "--no-build-isolation", *args])


def _imports(py, module) -> bool:
    code = (f"import {module}, ray; "
            "assert hasattr(ray, 'init') or '{module}' == 'plasma'")
    return subprocess.run([py, "-c", code], capture_output=True).returncode == 0


def test_only_ray_core_ships_ray_init(wheels):
    for dist, path in wheels.items():
        names = zipfile.ZipFile(path).namelist()
        has_init = "ray/__init__.py" in names
        assert has_init == (dist == "ray-core"), f"{dist}: ray/__init__.py shipped={has_init}"


@pytest.mark.parametrize("dist", list(PACKAGES))
def test_each_wheel_installs_with_its_siblings_and_imports(dist, wheels, tmp_path):
    module, siblings = PACKAGES[dist]
    py = _venv(tmp_path / "venv")
    _pip_install(py, wheels[dist], *[wheels[s] for s in siblings])
    result = subprocess.run([py, "-c", f"import {module}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_editable_installs_import(tmp_path):
    py = _venv(tmp_path / "venv")
    args = []
    for d in PACKAGES:
        args += ["-e", os.path.join(ROOT, "packages", d)]
    _pip_install(py, *args)
    modules = ", ".join(module for module, _ in PACKAGES.values())
    result = subprocess.run([py, "-c", f"import {modules}; import ray; ray.init"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_uninstalling_one_library_leaves_the_others(wheels, tmp_path):
    py = _venv(tmp_path / "venv")
    _pip_install(py, *wheels.values())
    for module, _ in PACKAGES.values():
        assert _imports(py, module), module
    _run([sys.executable, "-m", "pip", "--python", py, "uninstall", "-y", "-q", "ray-sgd"])
    for dist in ("ray-core", "ray-tune", "ray-rllib", "ray-autoscaler"):
        assert _imports(py, PACKAGES[dist][0]), dist
    _run([sys.executable, "-m", "pip", "--python", py, "uninstall", "-y", "-q", "ray-core"])
    result = subprocess.run([py, "-c", "import ray.tune"], capture_output=True, text=True)
    assert "needs ray-core" in result.stderr
