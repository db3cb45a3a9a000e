"""Shared test fixtures: isolated orch locations per test, and the venv's orch executable."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A suite started in the background by a shell without job control (`make test &`, some CI runners) inherits
# SIGINT ignored, and so would every orch it starts: orch rightly keeps an inherited "ignore", and the tests that
# press Ctrl-C on orch would wait for a stop that never comes. The suite's own children get the default, as at a
# terminal (a Python handler is reset to the default across exec; an ignored signal stays ignored).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


class SpawnInUnitTest(AssertionError):
    pass


@pytest.fixture(autouse=True)
def unit_tests_spawn_nothing(request, monkeypatch):
    """Only tests marked integration may start processes: a unit test that launches one fails at once."""
    if request.node.get_closest_marker("integration"):
        return

    def refuse(self, args, *a, **k):
        raise SpawnInUnitTest(f"unit test started a process ({args!r}); mark the test integration or avoid it")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse, raising=False)


@pytest.fixture(autouse=True)
def no_writes_to_home(request, tmp_path_factory, monkeypatch):
    """Unit tests keep orch's caches and databases in tmp: nothing lands in the user's home or checkout."""
    if request.node.get_closest_marker("integration"):
        return
    base = tmp_path_factory.mktemp("orch-home")
    monkeypatch.setenv("ORCH_CACHE", str(base / "cache"))
    monkeypatch.setenv("ORCH_DB", str(base / "results.duckdb"))
    monkeypatch.setenv("ORCH_BUILDS_DIR", str(base / "builds"))
    monkeypatch.setenv("ORCH_MODELS", str(base / "models"))


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
