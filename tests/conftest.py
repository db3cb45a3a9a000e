"""Shared test fixtures: isolated orch locations per test, and the venv's orch executable."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def orch_env(tmp_path, monkeypatch):
    """Point every orch location at a fresh temporary directory."""
    monkeypatch.setenv("ORCH_BUILDS_DIR", str(tmp_path / "builds"))
    monkeypatch.delenv("ORCH_SOURCE_DIR", raising=False)
    monkeypatch.setenv("ORCH_DB", str(tmp_path / "results.duckdb"))
    monkeypatch.setenv("ORCH_LLAMA_REPO", str(tmp_path / "no-such-remote"))
    return tmp_path


@pytest.fixture(scope="session")
def orch_exe() -> str:
    """The orch console script installed next to the running interpreter."""
    exe = Path(sys.executable).parent / "orch"
    if not exe.exists():
        pytest.fail(f"{exe} missing: run `make install` first")
    return str(exe)


def git(*args, cwd=None, env=None):
    import subprocess

    full_env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t", **(env or {})}
    return subprocess.run(["git", *args], cwd=cwd, env=full_env, check=True, capture_output=True,
                          text=True).stdout.strip()
