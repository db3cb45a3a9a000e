"""Living with results: reading and watching a running sweep, two sweeps on one file, and kills of every kind.

The kill trials are benchmarks/reliability.py's (which runs many of each: README, reliability section); here a
few run on every `make test`, one per signal, CLI and server sweeps.
"""

import random
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from integration.conftest import COMMIT, PLANNED, db_rows

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import reliability  # noqa: E402

RECIPE_A = ROOT / "recipes" / "recipe_a.j2"
TINY_VARS = str(ROOT / "recipes" / "tiny.toml")


def start_sweep(orch_exe, env, tmp_path, *extra, name="sweep"):
    err = open(tmp_path / f"{name}.stderr", "w")
    argv = [orch_exe, "run", str(RECIPE_A), "--build", COMMIT, "--vars", TINY_VARS, *extra]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err), tmp_path / f"{name}.stderr"


def test_readers_and_watch_during_a_sweep(orch_exe, env, tmp_path):
    # Long enough for rounds of readers beside it however fast orch gets (runs are stored a few per write).
    sweep, _ = start_sweep(orch_exe, env, tmp_path, "--repeat", "10", "--set", "n_predict=64")
    db = Path(env["ORCH_DB"])
    while not db.exists() or not reliability.ended_runs(db):
        assert sweep.poll() is None, "the sweep ended before any reader could start"
        time.sleep(0.05)
    watch = subprocess.Popen(
        [orch_exe, "watch", "--interval", "0.3"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    reads = {
        "summary": ["summary"],
        "runs": ["runs"],
        "show": ["show", "1"],
        "query": ["query", "SELECT 1"],
        "report": ["report", "--out", str(tmp_path / "report")],
    }
    outcomes, during = [], 0
    while sweep.poll() is None:
        # two readers at once: shared opens never wait for each other
        pair = [
            subprocess.Popen([orch_exe, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for argv in (reads["summary"], reads["runs"])
        ]
        one = subprocess.run(
            [orch_exe, *reads[random.choice(["show", "query", "report"])]], env=env, capture_output=True, text=True
        )
        outcomes += [(p.args[1], p.wait(), p.stderr.read()) for p in pair] + [(one.args[1], one.returncode, one.stderr)]
        during += sweep.poll() is None
    assert sweep.returncode in (0, 15)  # 15: see test_two_sweeps_write_one_database_alongside
    assert during >= 2, "the sweep ended before readers ran beside it"
    failed = [o for o in outcomes if o[1] != 0]
    assert not failed, failed
    out, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert "done, 30/30 runs (" in out and "verdict:" in out.split("done, 30/30")[-1]
    assert "running, " in out  # it showed the sweep while it ran
    # Every slot measured once (a run whose log lost its last lines is kept beside its slot's new run).
    assert db_rows(env, f"SELECT count(*) AS n FROM measured_runs WHERE status IN ('ok', 'failed') AND {PLANNED}") == [
        {"n": 30}
    ]


def test_two_sweeps_write_one_database_alongside(orch_exe, env, tmp_path):
    first, first_err = start_sweep(orch_exe, env, tmp_path, "--repeat", "3", name="first")
    second, second_err = start_sweep(orch_exe, env, tmp_path, "--repeat", "3", name="second")
    # 15: a run failed. On 2 busy cores llama.cpp now and then exits 0 before its last log lines are written
    # (stored failed as truncated_log, and its slot run again; twice in a row fails the slot): a fact of the
    # binary, not of sharing the file.
    assert first.wait(timeout=600) in (0, 15), first_err.read_text()
    assert second.wait(timeout=600) in (0, 15), second_err.read_text()
    assert db_rows(env, "SELECT status, count(*) AS n FROM sweeps GROUP BY ALL") == [{"status": "done", "n": 2}]
    rows = db_rows(
        env,
        "SELECT r.sweep_id, count(*) AS n, count(*) FILTER (WHERE r.status IN ('ok', 'failed')) AS "
        "ended, count(l.run_id) AS logged FROM runs r LEFT JOIN run_logs l ON l.run_id = r.id "
        "AND l.stream = 'stderr' GROUP BY ALL ORDER BY 1",
    )
    assert [r["sweep_id"] for r in rows] == [1, 2] and all(r["n"] == r["ended"] == r["logged"] for r in rows), rows
    slots = db_rows(env, f"SELECT sweep_id, count(*) AS n FROM measured_runs WHERE {PLANNED} GROUP BY ALL ORDER BY 1")
    assert slots == [{"sweep_id": s, "n": 9} for s in (1, 2)]  # nothing lost: every slot measured, every run logged


@pytest.fixture(scope="module")
def kill_cache(tmp_path_factory) -> Path:
    """One ORCH_CACHE for every trial: the CPU bandwidth is measured once, not once per trial."""
    return tmp_path_factory.mktemp("kill-cache")


@pytest.mark.parametrize(
    "kind,mode",
    [("SIGKILL", "cli"), ("SIGTERM", "cli"), ("double-SIGINT", "cli"), ("SIGKILL", "server"), ("SIGHUP", "server")],
)
def test_kill_trial(orch_exe, env, kind, mode, tiny_dir, kill_cache):
    seed = zlib.crc32(f"{kind} {mode}".encode()) % 1000  # stable across runs: a failure can be replayed
    result = reliability.trial(
        orch_exe, COMMIT, kind, mode, random.Random(seed), {**env, "ORCH_MODELS": str(tiny_dir)}, kill_cache
    )
    assert result.ok, f"{kind} {mode} after {result.after_runs} runs (seed {seed}): {result.problems}"
