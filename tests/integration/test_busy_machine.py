"""A sweep measured beside other work says so: busy_machine names the share of the machine other programs used and
the busiest of them, the verdict says the intervals are not to be trusted; `orch run --wait-quiet` waits first and
says when the machine never went quiet. The other work here is a process spinning a core, started beside orch."""

import json
import os
import subprocess
import sys

import pytest

from integration.conftest import orch_run, run_orch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE_A = os.path.join(ROOT, "recipes", "recipe_a.j2")
TINY_VARS = os.path.join(ROOT, "recipes", "tiny.toml")


@pytest.fixture
def spinner():
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield hog
    hog.kill()
    hog.wait()


def test_a_sweep_beside_a_busy_program_is_warned_of_and_waits_when_asked(orch_exe, env, spinner):
    # One spinning process is 100% of one core: half that share of the machine is the bound, whatever the cores
    env = {**env, "ORCH_BUSY_PCT": str(50 / (os.cpu_count() or 1))}
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--arms", "baseline,draft", "--wait-quiet", "2", env=env)
    assert res.returncode == 0, res.stderr
    assert "orch: waiting up to 2 s for a quiet machine: other programs use" in res.stderr
    assert "did not go quiet in 2 s" in res.stderr and "measuring anyway" in res.stderr
    shown = json.loads(run_orch(orch_exe, "summary", "--format", "json", env=env).stdout)
    busy = [r for r in shown if "busy_machine" in (r["warnings"] or "")]
    assert busy and all(r["others_cpu_pct"] > 50 / (os.cpu_count() or 1) and r["busiest_other"] for r in busy)
    (message,) = [m for m in busy[0]["warning_messages"] if m.startswith("other programs used")]
    assert "the busiest: " in message and "its intervals are not to be trusted" in message
    table = run_orch(orch_exe, "summary", "--explain", env=env).stdout
    assert "Measured beside other work:" in " ".join(table.split()) and "intervals are not to be trusted" in table


def test_the_suite_itself_is_not_warned_of(orch_exe, env):
    """The bound the suite runs with (conftest: ORCH_BUSY_PCT 100): no run is ever above it."""
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--arms", "baseline", env=env)
    assert res.returncode == 0, res.stderr
    shown = json.loads(run_orch(orch_exe, "summary", "--format", "json", env=env).stdout)
    assert all("busy_machine" not in (r["warnings"] or "") and r["others_cpu_pct"] is not None for r in shown)
