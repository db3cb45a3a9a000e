"""The library face for reading (orchestrator.results) on a real sweep of the tiny models: what it returns is what
the read commands print, it reads a results file without changing a byte of it, and it never creates one."""

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from integration.conftest import COMMIT, orch_run, run_orch
from orchestrator import results
from orchestrator.errors import NoDatabase, NoSuchRun, NoSuchSweep

ROOT = Path(__file__).resolve().parents[2]


def test_results_read_as_the_commands_print_them_and_change_nothing(orch_exe, env):
    ran = orch_run(
        orch_exe,
        ROOT / "recipes" / "recipe_a.j2",
        "--vars",
        str(ROOT / "recipes" / "tiny.toml"),
        "--repeat",
        "2",
        env=env,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    db = Path(env["ORCH_DB"])
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    printed = {r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "--format", "json", env=env).stdout)}
    listed = json.loads(run_orch(orch_exe, "runs", "--json", env=env).stdout)
    with results.open(db) as found:
        (sweep,) = found.sweeps()
        assert (sweep.sweep, sweep.recipe, sweep.mode, sweep.status) == (1, "recipe_a.j2", "cli", "done")
        arms = {a.arm: a for a in found.summary()}
        assert set(arms) == set(printed)
        for name, arm in arms.items():  # the same figures the summary prints, typed
            assert (arm.speedup, arm.speedup_low, arm.speedup_high, arm.vs, arm.predicted) == (
                printed[name]["speedup"],
                printed[name]["speedup_low"],
                printed[name]["speedup_high"],
                printed[name]["vs"],
                printed[name]["predicted"],
            )
        draft = arms["draft"]
        assert draft.predicted is not None and draft.vs.startswith("control") and draft.params["draft"]
        runs = found.runs()  # the newest 20, as `orch runs` lists them
        assert [r.run_id for r in runs] == [r["run_id"] for r in listed]
        whole = found.run(runs[-1].run_id, with_logs=True)
        assert whole["run"]["id"] == runs[-1].run_id and whole["metrics"]["run_id"] == runs[-1].run_id
        assert whole["logs"]  # the stored streams, as `orch show` prints them
        per_arm = dict(found.sql("SELECT arm, count(*) FROM runs GROUP BY arm").fetchall())
        assert sum(per_arm.values()) == len(found.runs(last=100))
        same = found.compare(COMMIT, COMMIT)
        assert same.same_build and same.warning  # one build on both sides: said, no ratio
        with pytest.raises(NoSuchSweep, match="no sweep 9"):
            found.summary(9)
        with pytest.raises(NoSuchRun, match="no run 999"):
            found.run(999)
        with pytest.raises(duckdb.Error):  # read-only: a write through sql() is refused
            found.sql("DELETE FROM runs")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # not a byte changed


def test_opening_a_file_that_is_not_there_creates_none(tmp_path):
    with pytest.raises(NoDatabase, match="no results database"):
        results.open(tmp_path / "none.duckdb")
    assert not (tmp_path / "none.duckdb").exists()
