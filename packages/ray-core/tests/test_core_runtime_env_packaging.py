"""runtime_env without a cluster: validation, merge rules, gitignore-style excludes,
deterministic packing, size limit, symlinks, and atomic unpacking."""

import io
import os
import types
import zipfile

import pytest

from ray._private import runtime_env
from ray._private.runtime_env import packaging
from ray._private.runtime_env.validation import env_key, merge, validate
from ray.runtime_env import RuntimeEnv

MiB = 1024**2


def _names(data: bytes) -> list[str]:
    return sorted(zipfile.ZipFile(io.BytesIO(data)).namelist())


def _tree(root, files: dict) -> str:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(root)


# -- validation ------------------------------------------------------------------------------
def test_validate_makes_paths_absolute_and_drops_empty_envs(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path)
    assert validate({"working_dir": "proj", "env_vars": {"A": "1"}}) == {
        "working_dir": str(tmp_path / "proj"), "env_vars": {"A": "1"}}
    assert validate(None) is None
    assert validate({}) is None
    assert validate({"excludes": ["*.bin"]}) is None  # nothing to pack: no env


@pytest.mark.parametrize("bad, error, words", [
    (["A=1"], TypeError, "must be a dict"),
    ({"env_vars": {"A": 1}}, TypeError, "env_vars'][\'A\'] must be a str"),
    ({"env_vars": ["A"]}, TypeError, "dict of str to str"),
    ({"working_dir": "/no/such/dir"}, ValueError, "does not exist"),
    ({"working_dir": "s3://bucket/code.zip"}, ValueError, "remote URIs are not supported"),
    ({"py_modules": "/tmp"}, TypeError, "wrap it in a list"),
    ({"excludes": "*.bin", "working_dir": "/tmp"}, TypeError, "list of gitignore-style"),
    ({"pip": ["requests"]}, ValueError, "install the packages on every node"),
    ({"conda": "env"}, ValueError, "install the packages on every node"),
    ({"container": {"image": "x"}}, ValueError, "docker/"),
    ({"image_uri": "x"}, ValueError, "docker/"),
    ({"uv": ["x"]}, ValueError, "install the packages"),
    ({"env_var": {"A": "1"}}, TypeError, "Did you mean 'env_vars'"),
    ({"workdir": "."}, TypeError, "Did you mean 'working_dir'"),
])
def test_bad_runtime_env_raises_a_clear_error(bad, error, words):
    with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")):
        validate(bad)


def test_py_modules_accepts_module_objects_and_files(tmp_path):
    pkg = _tree(tmp_path, {"pkg/__init__.py": "X = 1", "single.py": "Y = 2"})
    module = types.ModuleType("pkg")
    module.__path__ = [os.path.join(pkg, "pkg")]
    single = types.ModuleType("single")
    single.__file__ = os.path.join(pkg, "single.py")
    assert validate({"py_modules": [module, single]})["py_modules"] == [
        os.path.join(pkg, "pkg"), os.path.join(pkg, "single.py")]
    with pytest.raises(ValueError, match="no source file"):
        validate({"py_modules": [types.ModuleType("builtin_like")]})


def test_runtime_env_class_is_a_validated_dict():
    env = RuntimeEnv(env_vars={"A": "1"})
    assert env == {"env_vars": {"A": "1"}} and env.env_vars() == {"A": "1"}
    assert RuntimeEnv.deserialize(env.serialize()) == env
    with pytest.raises(ValueError, match="pip"):
        RuntimeEnv(pip=["torch"])


# -- merge and keys ----------------------------------------------------------------------------
def test_merge_env_vars_keywise_and_replace_other_fields():
    job = {"env_vars": {"A": "job", "B": "job"}, "working_dir": "gcs://w1", "py_modules": ["m1"]}
    task = {"env_vars": {"B": "task", "C": "task"}, "py_modules": ["m2"]}
    assert merge(job, task) == {
        "env_vars": {"A": "job", "B": "task", "C": "task"},
        "working_dir": "gcs://w1", "py_modules": ["m2"]}
    assert merge(None, task) == task and merge(job, None) == job


def test_env_key_ignores_dict_order_and_tells_envs_apart():
    assert env_key({"env_vars": {"A": "1", "B": "2"}}) == env_key({"env_vars": {"B": "2", "A": "1"}})
    assert env_key({"env_vars": {"A": "1"}}) != env_key({"env_vars": {"A": "2"}})


# -- excludes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern, path, is_dir, excluded", [
    ("*.bin", "a.bin", False, True),
    ("*.bin", "deep/er/a.bin", False, True),
    ("*.bin", "a.binx", False, False),
    ("data/", "data", True, True),
    ("data/", "data", False, False),  # trailing slash: directories only
    ("data/", "sub/data", True, True),
    ("/build", "build", True, True),
    ("/build", "sub/build", True, False),  # leading slash anchors to the root
    ("docs/*.md", "docs/a.md", False, True),
    ("docs/*.md", "docs/sub/a.md", False, False),
    ("**/tmp", "a/b/tmp", True, True),
    ("logs/**", "logs/x/y.txt", False, True),
    ("a/**/z.txt", "a/z.txt", False, True),
    ("a/**/z.txt", "a/b/c/z.txt", False, True),
    ("file?.txt", "file1.txt", False, True),
    ("file[0-2].txt", "file3.txt", False, False),
])
def test_gitignore_patterns(pattern, path, is_dir, excluded):
    rules = packaging.compile_patterns([pattern])
    assert packaging.is_excluded(rules, path, is_dir) is excluded


def test_negated_pattern_keeps_a_file_and_the_last_match_wins():
    rules = packaging.compile_patterns(["*.bin", "!keep.bin", "# comment", ""])
    assert packaging.is_excluded(rules, "drop.bin", False)
    assert not packaging.is_excluded(rules, "keep.bin", False)


# -- packing ----------------------------------------------------------------------------------
def test_pack_honours_excludes_gitignore_and_skips_caches(tmp_path):
    root = _tree(tmp_path / "wd", {
        "main.py": "x", "data/big.bin": b"0" * 10, "data/keep.txt": "k",
        "__pycache__/main.cpython-311.pyc": b"c", ".git/HEAD": "ref", "notes.log": "l",
        ".gitignore": "*.log\n", "sub/__pycache__/x.pyc": b"c",
    })
    data = packaging.pack_directory(root, ["*.bin"], max_bytes=MiB)
    assert _names(data) == [".gitignore", "data/keep.txt", "main.py"]


def test_packing_is_deterministic_and_content_addressed(tmp_path):
    root = _tree(tmp_path / "wd", {"b.py": "b", "a/c.py": "c"})
    first = packaging.pack_directory(root, max_bytes=MiB)
    os.utime(os.path.join(root, "b.py"), (1, 1))  # timestamps do not matter
    assert packaging.pack_directory(root, max_bytes=MiB) == first
    (tmp_path / "wd" / "b.py").write_text("changed")
    changed = packaging.pack_directory(root, max_bytes=MiB)
    assert packaging.package_uri(changed) != packaging.package_uri(first)
    assert packaging.package_uri(first).startswith("gcs://_ray_pkg_")


def test_size_limit_error_names_the_biggest_files_and_the_fix(tmp_path):
    root = _tree(tmp_path / "wd", {"small.py": "x", "model.bin": b"0" * (2 * MiB)})
    with pytest.raises(packaging.PackageTooLargeError,
                       match=r"over the 1 MiB limit.*model\.bin \(2\.0 MiB\).*excludes"):
        packaging.pack_directory(root, max_bytes=MiB)
    assert isinstance(packaging.PackageTooLargeError("x"), ValueError)
    packaging.pack_directory(root, ["*.bin"], max_bytes=MiB)  # the fix it names works


def test_symlinks_are_followed_but_cycles_and_broken_links_skipped(tmp_path):
    outside = _tree(tmp_path / "outside", {"shared.py": "S = 1"})
    root = _tree(tmp_path / "wd", {"main.py": "m", "sub/x.py": "x"})
    os.symlink(os.path.join(outside, "shared.py"), os.path.join(root, "shared.py"))
    os.symlink(outside, os.path.join(root, "linked"))
    os.symlink(root, os.path.join(root, "sub", "loop"))  # back to the root: a cycle
    os.symlink("/no/such/file", os.path.join(root, "broken.py"))
    data = packaging.pack_directory(root, max_bytes=MiB)
    assert _names(data) == ["linked/shared.py", "main.py", "shared.py", "sub/x.py"]
    assert zipfile.ZipFile(io.BytesIO(data)).read("shared.py") == b"S = 1"


def test_prepare_packs_py_modules_under_their_own_name(tmp_path):
    root = _tree(tmp_path, {"mypkg/__init__.py": "V = 3", "mypkg/model.bin": b"0",
                            "one.py": "W = 4"})
    local = validate({"py_modules": [os.path.join(root, "mypkg"), os.path.join(root, "one.py")],
                      "excludes": ["*.bin"], "env_vars": {"A": "1"}})
    prepared = runtime_env.prepare(local, max_bytes=MiB)
    assert "excludes" not in prepared.resolved
    assert prepared.resolved["env_vars"] == {"A": "1"}
    pkg_uri, one_uri = prepared.resolved["py_modules"]
    assert _names(prepared.packages[pkg_uri]) == ["mypkg/", "mypkg/__init__.py"]
    assert _names(prepared.packages[one_uri]) == ["one.py"]


def test_zip_working_dir_with_one_top_folder_runs_inside_it(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("proj/", b"")
        zf.writestr("proj/mod.py", b"M = 1")
    assert _names(packaging.strip_single_folder(buf.getvalue())) == ["mod.py"]
    flat = io.BytesIO()
    with zipfile.ZipFile(flat, "w") as zf:
        zf.writestr("mod.py", b"M = 1")
        zf.writestr("other/x.py", b"")
    assert packaging.strip_single_folder(flat.getvalue()) == flat.getvalue()


def test_only_pure_python_wheels_are_accepted(tmp_path):
    def wheel(name, purelib):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("w/__init__.py", b"")
            zf.writestr("w-1.0.dist-info/WHEEL", f"Root-Is-Purelib: {purelib}\n")
        return str(path)

    packaging.pack_file(wheel("w-1.0-py3-none-any.whl", "true"), max_bytes=MiB)
    with pytest.raises(ValueError, match="not a pure-Python wheel"):
        packaging.pack_file(wheel("w-1.0-cp311-linux_x86_64.whl", "false"), max_bytes=MiB)


# -- unpacking --------------------------------------------------------------------------------
def test_install_unpacks_once_atomically_and_keeps_modes(tmp_path):
    root = _tree(tmp_path / "wd", {"run.sh": "#!/bin/sh\n", "m.py": "M = 1"})
    os.chmod(os.path.join(root, "run.sh"), 0o755)
    data = packaging.pack_directory(root, max_bytes=MiB)
    uri = packaging.package_uri(data)
    dest = tmp_path / "node"
    path = packaging.install(uri, data, str(dest))
    assert sorted(os.listdir(path)) == ["m.py", "run.sh"]
    assert os.stat(os.path.join(path, "run.sh")).st_mode & 0o111
    assert packaging.install(uri, b"not read again", str(dest)) == path
    assert os.listdir(dest) == [os.path.basename(path)]  # no temp folders left


def test_install_refuses_entries_escaping_the_folder(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../evil.py", b"x")
    data = buf.getvalue()
    node = tmp_path / "node"
    with pytest.raises(ValueError, match="escapes its folder"):
        packaging.install(packaging.package_uri(data), data, str(node))
    assert not (tmp_path / "evil.py").exists() and os.listdir(node) == []
    with pytest.raises(ValueError, match="not a runtime_env package URI"):
        packaging.local_name("gcs://../../etc.zip")


def test_setup_on_node_builds_the_worker_environment(tmp_path):
    from ray._private.gcs.client import InMemoryGcs

    gcs = InMemoryGcs()
    root = _tree(tmp_path / "wd", {"m.py": "M = 1"})
    local = validate({"working_dir": root, "env_vars": {"A": "1", "P": "${HOME}/x"}})
    resolved = runtime_env.prepare(local, max_bytes=MiB).upload(gcs)
    env, cwd = runtime_env.setup_on_node(gcs, resolved, str(tmp_path / "node"),
                                         {"HOME": "/home/u", "PYTHONPATH": "/old"})
    assert env["A"] == "1" and env["P"] == "/home/u/x"
    assert env["PYTHONPATH"] == f"{cwd}{os.pathsep}/old"
    assert os.listdir(cwd) == ["m.py"]
    missing = {"py_modules": ["gcs://_ray_pkg_" + "0" * 40 + ".zip"]}
    from ray.exceptions import RuntimeEnvSetupError

    with pytest.raises(RuntimeEnvSetupError, match="not in the GCS"):
        runtime_env.setup_on_node(gcs, missing, str(tmp_path / "node"), {})


def test_ray_init_rejects_a_bad_runtime_env_before_starting_anything(tmp_path):
    import ray

    _tree(tmp_path / "wd", {"weights.bin": b"0" * 4096})
    with pytest.raises(ValueError, match="not supported"):
        ray.init(num_cpus=1, runtime_env={"conda": "myenv"})
    with pytest.raises(ValueError, match="over the 0 MiB limit"):
        ray.init(num_cpus=1, runtime_env={"working_dir": str(tmp_path / "wd")},
                 _system_config={"runtime_env_max_package_bytes": 1024})
    assert not ray.is_initialized()  # (and the leak check finds no processes)


def test_local_mode_reports_the_job_env(tmp_path):
    import ray

    ray.init(local_mode=True, runtime_env={"env_vars": {"A": "1"}})
    try:
        assert ray.get_runtime_context().runtime_env == {"env_vars": {"A": "1"}}
    finally:
        ray.shutdown()
