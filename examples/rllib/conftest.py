import pytest


@pytest.fixture(autouse=True)
def _results_in_tmp(tmp_path, monkeypatch):
    """The examples' standalone trainers write to ~/ray_results; keep tests out of it."""
    monkeypatch.setenv("TUNE_RESULT_DIR", str(tmp_path / "ray_results"))
