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


# --- how pytest-xdist shares the suite out (`make test`: -n 2 --dist loadfile) ---------------------------------------
# A file runs whole on one worker, so its module fixtures run once. (Not loadgroup: with pytest 9.2 its groups are
# silently ignored, pytest-xdist issue 1386.) Files run longest first, in this order (--no-loadscope-reorder: xdist
# would order them by their number of tests): the last to start should be short.
LONGEST_FIRST = [
    "integration/test_real_model.py",
    "integration/test_real_pair.py",
    "integration/test_bad_input.py",
    "integration/test_tune.py",
    "integration/test_ray_cluster.py",
    "integration/test_benchmarks.py",
    "integration/test_quality.py",
    "integration/test_reliability.py",
    "integration/test_sweeps.py",
    "integration/test_readme.py",
]


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(f"{item.path.parent.name}/{item.path.name}", len(rank)))  # stable


@pytest.fixture(autouse=True)
def signal_dispositions_restored():
    """A test that leaves SIGINT, SIGTERM or SIGHUP ignored (orch ignores them once it has stopped: stops.py,
    entry.py) would hand that to every process the rest of its pytest process starts, and their Ctrl-C tests would
    wait for a stop that never comes: which tests follow which depends on how pytest-xdist shares them out."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in saved.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


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

    full_env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        **(env or {}),
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=full_env, check=True, capture_output=True, text=True
    ).stdout.strip()


# --- nothing left behind: checked once the whole suite has ended -------------------------------------------------

_TEMP_BEFORE = pytest.StashKey[set]()  # the system temp folder's leftovers when the suite started


def _system_temp_leftovers() -> set[Path]:
    """orch's temporary folders in the system temp folder, and Ray's session folders (Ray never deletes them)."""
    import tempfile

    temp = Path(tempfile.gettempdir())
    ray = Path(os.environ.get("RAY_TMPDIR") or temp) / "ray"
    return set(temp.glob("orch-*")) | set(ray.glob("session_*"))


def _is_worker(config) -> bool:  # a pytest-xdist worker: the controller checks once, after every worker ended
    return hasattr(config, "workerinput")


def pytest_sessionstart(session):
    if not _is_worker(session.config):
        session.config.stash[_TEMP_BEFORE] = _system_temp_leftovers()


def pytest_sessionfinish(session, exitstatus):
    """The suite fails when it leaves a temporary folder of orch's or a Ray session folder in the system temp
    folder (made while it ran: another program's older ones are not its doing)."""
    if _is_worker(session.config) or _TEMP_BEFORE not in session.config.stash:
        return
    left = sorted(map(str, _system_temp_leftovers() - session.config.stash[_TEMP_BEFORE]))
    if left:
        sys.stderr.write(f"\nsuite: left behind in the system temp folder: {', '.join(left)}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def no_process_outlives_the_suite():
    """After the last test (of this process: each xdist worker checks its own), no process the tests started may
    still run: servers, llama.cpp programs, Ray nodes, stand-ins. Those found are killed, and the suite fails."""
    yield
    import time

    import psutil

    def alive() -> list:
        found = []
        for p in psutil.Process().children(recursive=True):
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p)
            except psutil.Error:  # ended meanwhile
                continue
        return found

    deadline = time.monotonic() + 15
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = alive()
    names = []
    for p in left:
        try:
            names.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
            p.kill()
        except psutil.Error:
            continue
    assert not left, f"processes outlived the tests: {names}"
