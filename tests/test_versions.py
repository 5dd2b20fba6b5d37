"""One version source per package, bumped together by ci/bump_version.py."""

from __future__ import annotations

import email.parser
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join("ci", "bump_version.py")


def _script(root, *args):
    return subprocess.run([sys.executable, os.path.join(root, SCRIPT), *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip


@pytest.fixture
def copy(tmp_path):
    """The files the script reads and writes, in a copy of the repository's layout."""
    ignore = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "tests")
    shutil.copytree(os.path.join(ROOT, "packages"), tmp_path / "packages", ignore=ignore)
    shutil.copytree(os.path.join(ROOT, "docker", "kubernetes"), tmp_path / "docker" / "kubernetes")
    (tmp_path / "ci").mkdir()
    shutil.copy(os.path.join(ROOT, SCRIPT), tmp_path / SCRIPT)
    return tmp_path


def test_repository_versions_agree():
    done = _script(ROOT, "--check")
    assert done.returncode == 0, done.stderr
    with open(os.path.join(ROOT, "packages", "ray-core", "src", "ray", "__init__.py")) as f:
        assert f'__version__ = "{done.stdout.split()[-1]}"' in f.read()


def test_bump_sets_every_place_and_the_wheels_carry_it(copy, tmp_path):
    done = _script(copy, "0.8.0rc1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "0.8.0rc1"
    assert _script(copy, "--check").returncode == 0
    for rel in ("docker/kubernetes/head.yaml",
                "packages/ray-autoscaler/src/ray/autoscaler/kubernetes/example-full.yaml"):
        with open(copy / rel) as f:
            text = f.read()
        assert "localhost/ray/deploy:0.8.0rc1" in text and ":0.7" not in text, rel
    # What pip sees: the built wheels' versions and sibling pins.
    out = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(out),
                    str(copy / "packages" / "ray-core"), str(copy / "packages" / "ray-rllib")],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    for wheel in sorted(os.listdir(out)):
        with zipfile.ZipFile(out / wheel) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            msg = email.parser.Parser().parsestr(z.read(meta).decode())
        assert msg["Version"] == "0.8.0rc1", wheel
        pins = [r for r in msg.get_all("Requires-Dist") if r.startswith("ray-") and "extra ==" not in r]
        assert pins and all(r.endswith("==0.8.0rc1") for r in pins), pins


def test_check_names_each_place_that_disagrees(copy):
    path = copy / "packages" / "ray-tune" / "src" / "ray" / "tune" / "_version.py"
    path.write_text(path.read_text().replace('"0.', '"9.'))
    pyproject = copy / "packages" / "ray-sgd" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"ray-core==', '"ray-core==1'))
    done = _script(copy, "--check")
    assert done.returncode == 1
    assert "ray/tune/_version.py (the ray-tune version): 9." in done.stderr, done.stderr
    assert "ray-sgd/pyproject.toml (requires ray-core==1" in done.stderr, done.stderr
    assert "fix with: ci/bump_version.py" in done.stderr


def test_bad_versions_and_a_second_source_are_refused(copy):
    done = _script(copy, "v1.0")
    assert done.returncode == 1 and "'v1.0' is not a release version" in done.stderr
    pyproject = copy / "packages" / "ray-plasma" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('name = "ray-plasma"\n',
                                                      'name = "ray-plasma"\nversion = "0.1"\n'))
    done = _script(copy, "--check")
    assert done.returncode == 1 and "a static `version =` line is a second version source" in done.stderr
