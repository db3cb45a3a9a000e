"""`orch bisect` and `orch history` on the two cached real builds (f49e91787, 0c1e57098: no cold build here).

Between them llama.cpp's drafting defaults changed (draft-max 16 -> 3, p-min 0.75 -> 0), so recipes/spec_defaults.j2
on the tiny models accepts 44.5% of drafts on one and 77.3% on the other, every run alike: a real step. A commit
that cannot be had stands between them, as a probe that does not build.
"""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from integration.conftest import db_rows, run_orch
from orchestrator.errors import BisectResumeError, NoHistory

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "spec_defaults.j2"
TINY_VARS = ROOT / "recipes" / "tiny.toml"
NOT_A_COMMIT = "deadbee00"  # in no mirror, remote or known release: its probe "does not build"
COMMITS = f"f49e91787,{NOT_A_COMMIT},0c1e57098"


def bisect_argv(orch_exe, *extra):
    return [
        orch_exe,
        "bisect",
        str(RECIPE),
        "--vars",
        str(TINY_VARS),
        "--commits",
        COMMITS,
        "--metric",
        "acceptance",
        "--repeat",
        "3",
        "--backend",
        "cpu",
        *extra,
    ]


def test_bisect_finds_the_real_step_resumes_after_ctrl_c_and_history_draws_it(
    orch_exe, env, old_build, real_build, tmp_path
):
    proc = subprocess.Popen(bisect_argv(orch_exe), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.monotonic() + 120
    for line in proc.stderr:  # Ctrl-C once the good end's sweep has started measuring
        seen.append(line)
        if line.startswith("[1/3]") or time.monotonic() > deadline:
            break
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    err = "".join(seen) + err
    assert proc.returncode == 130, err
    assert "bisect 1 interrupted" in err and "orch bisect --resume 1" in err
    assert db_rows(env, "SELECT state FROM bisects") == [{"state": "interrupted"}]
    assert [r["state"] for r in db_rows(env, "SELECT state FROM bisect_probes")] == ["interrupted"]

    resumed = run_orch(orch_exe, "bisect", "--resume", env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "tools: llama-speculative-simple" in resumed.stderr
    assert f"{NOT_A_COMMIT} is build failed" in resumed.stderr
    lines = resumed.stdout.splitlines()
    assert lines[-1] == (
        f"bisect 1: the step (acceptance improvement) lies after f49e91787 and at or before "
        f"0c1e57098; {NOT_A_COMMIT} could not be classified"
    )
    table = "\n".join(lines)
    assert "0.445" in table and "0.773" in table and "build failed" in table
    (bisect,) = db_rows(env, "SELECT state, candidate_source, result FROM bisects")
    assert bisect["state"] == "done" and bisect["candidate_source"] == "--commits"
    probes = db_rows(env, "SELECT commit, state, sweep_id, build_s, measure_s FROM bisect_probes ORDER BY id")
    assert [(p["commit"], p["state"]) for p in probes] == [
        ("f49e91787", "interrupted"),
        ("f49e91787", "measured"),
        ("0c1e57098", "measured"),
        (NOT_A_COMMIT, "build_failed"),
    ]
    assert all(p["sweep_id"] for p in probes[:3]) and probes[3]["sweep_id"] is None
    assert all(p["measure_s"] > 0 for p in probes[1:3])
    sweeps = db_rows(env, "SELECT status FROM sweeps ORDER BY id")
    assert [s["status"] for s in sweeps] == ["interrupted", "done", "done"]

    again = run_orch(orch_exe, "bisect", "--resume", env=env)
    assert again.returncode == BisectResumeError.exit_code and "no unfinished bisect" in again.stderr

    png = tmp_path / "acceptance.png"
    history = run_orch(
        orch_exe, "history", "spec_defaults.j2", "--arm", "draft", "--metric", "acceptance", "--png", str(png), env=env
    )
    assert history.returncode == 0, history.stderr
    out = history.stdout.splitlines()
    assert out[2].startswith("f49e91787-cpu") and out[3].startswith("0c1e57098-cpu")  # commit order, by date
    assert "improvement" in out[3]
    assert any(line.startswith("step: f49e91787-cpu -> 0c1e57098-cpu: improvement, 1.736x") for line in out)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    as_json = run_orch(
        orch_exe,
        "history",
        "spec_defaults.j2",
        "--arm",
        "draft",
        "--metric",
        "acceptance",
        "--png",
        str(png),
        "--json",
        env=env,
    )
    rows = json.loads(as_json.stdout)  # the table as data; the step sentences on stderr
    assert [r["build"] for r in rows][:2] == ["f49e91787-cpu", "0c1e57098-cpu"] and "step: " in as_json.stderr

    none = run_orch(orch_exe, "history", "spec_defaults.j2", "--arm", "nope", env=env)
    assert none.returncode == NoHistory.exit_code and "no stored ok runs of arm nope" in none.stderr


def test_dry_run_lists_release_candidates_and_builds_nothing(orch_exe, env):
    res = run_orch(
        orch_exe,
        "bisect",
        str(RECIPE),
        "--vars",
        str(TINY_VARS),
        "--good",
        "f49e91787",
        "--bad",
        "0c1e57098",
        "--metric",
        "acceptance",
        "--dry-run",
        env=env,
    )
    assert res.returncode == 0, res.stderr
    assert "17 candidates (llama-cpp-python release order)" in res.stdout
    assert "af6528e6d  (0.3.24)" in res.stdout and "9e3b928fd  first probe" in res.stdout
    assert not Path(env["ORCH_DB"]).exists()
