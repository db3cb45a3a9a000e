"""Sweeps across two real builds: one recipe in two flag dialects, summary, compare, resume after SIGKILL."""

import json
import math
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from integration.conftest import COMMIT, OLD_COMMIT, PLANNED, SLOT_ORDER, assert_prediction_checked, db_rows, run_orch
from orchestrator.errors import NothingToResume

ROOT = Path(__file__).resolve().parents[2]
RECIPE_A = ROOT / "recipes" / "recipe_a.j2"
SPEC_MATRIX = ROOT / "recipes" / "spec_matrix.j2"
TINY_VARS = str(ROOT / "recipes" / "tiny.toml")


@pytest.fixture(scope="module")
def two_builds_db(orch_exe, cache_env, tiny_dir, old_build, real_build, tmp_path_factory):
    env = {
        **cache_env,
        "ORCH_MODELS": str(tiny_dir),
        "ORCH_DB": str(tmp_path_factory.mktemp("sweeps") / "results.duckdb"),
    }
    for build in (OLD_COMMIT, COMMIT):
        res = run_orch(
            orch_exe, "run", str(RECIPE_A), "--build", build, "--vars", TINY_VARS, "--repeat", "4", env=env, timeout=900
        )
        assert res.returncode == 0, res.stderr
    return env


def test_one_recipe_runs_in_two_dialects(two_builds_db):
    rows = db_rows(
        two_builds_db,
        "SELECT s.build_name, r.executed_argv FROM measured_runs r JOIN sweeps s "
        "ON s.id = r.sweep_id "
        "WHERE r.arm = 'draft' AND r.repeat_index = 0 ORDER BY s.id",
    )
    old, new = (json.loads(r["executed_argv"]) for r in rows)
    assert rows[0]["build_name"].startswith("f49e91787") and rows[1]["build_name"].startswith("0c1e57098")
    assert "--draft-max" in old and "--spec-type" not in old
    assert "--spec-draft-n-max" in new and new[new.index("--spec-type") + 1] == "draft-simple"


def test_summary_has_intervals_speedup_and_acceptance(orch_exe, two_builds_db):
    res = run_orch(orch_exe, "summary", "1", "2", "--format", "json", env=two_builds_db)
    rows = {(r["build"], r["arm"]): r for r in json.loads(res.stdout)}
    for build in ("f49e91787-cpu", "0c1e57098-cpu"):
        base, draft = rows[(build, "baseline")], rows[(build, "draft")]
        assert base["n"] == 4 and base["speedup"] == 1.0 and base["ci_low"] <= base["decode_tps"] <= base["ci_high"]
        assert 0.3 < draft["acceptance"] < 0.9 and draft["draft_per_gen"] > 0
        assert draft["speedup_low"] <= draft["speedup"] <= draft["speedup_high"]
    table = run_orch(orch_exe, "summary", "--last", "2", env={**two_builds_db, "COLUMNS": "120"}).stdout
    lines = table.splitlines()
    assert {"arm", "decode_tps", "acceptance", "speedup", "speedup_ci95"} <= set(lines[0].split())
    assert "sweep 1: recipe_a.j2 on f49e91787-cpu" in lines and "sweep 2: recipe_a.j2 on 0c1e57098-cpu" in lines
    shown = lines[: next(i for i, line in enumerate(lines) if line.startswith(("warning: ", "verdict: ")))]
    assert max(map(len, shown)) <= 120, "\n".join(shown)  # the table and its note, for people: 120 columns
    verdicts = [line for line in lines if line.startswith("verdict: ")]
    assert [v.split(" (")[0] for v in verdicts] == ["verdict: sweep 1", "verdict: sweep 2"]  # one per sweep, last
    last = max(i for i, line in enumerate(lines) if line.startswith("verdict: "))
    assert all(line.startswith("  ") for line in lines[last + 1 :]) and "%" in table  # the verdicts end it (wrapped
    # to the terminal); shares print as percentages
    warned = [line for line in lines if line.startswith("warning: ")]  # one per kind, naming sweeps and arms
    assert all(re.match(r"warning: [a-z_]+: ", line) for line in warned) and len(warned) == len(
        {line.split(":")[1] for line in warned}
    )
    md = run_orch(orch_exe, "summary", "--last", "2", "--format", "md", env=two_builds_db).stdout
    assert md.splitlines()[0].startswith("| sweep |")


def test_greedy_draft_arms_keep_the_baseline_text_and_have_a_modelled_speedup(orch_exe, two_builds_db):
    """Both builds, CLI mode: each draft run's generated text (llama-speculative-simple's stdout) agrees with its
    control's (the same program drafting nothing) of the same repeat; on f49e91787, whose llama-speculative-simple
    cannot run without a draft, there is no control, and the baseline's llama-completion text is another program's:
    not compared. The prediction is finite, the baseline has none."""
    rows = json.loads(run_orch(orch_exe, "summary", "1", "2", "--format", "json", env=two_builds_db).stdout)
    for row in rows:
        if row["arm"] == "draft":
            compared = (4, 0, None) if row["build"].startswith(COMMIT) else (None, None, None)
            assert (row["outputs_compared"], row["outputs_differ"], row["first_diff_char"]) == compared, row
            assert "output_differs" not in (row["warnings"] or "")
            assert math.isfinite(row["modelled_speedup_unchecked"]) and row["modelled_speedup_unchecked"] > 0
            assert_prediction_checked(row)
        if row["is_baseline"] or row["arm"].startswith("control"):
            assert row["outputs_compared"] is None and row["modelled_speedup_unchecked"] is None
    stored = db_rows(
        two_builds_db,
        "SELECT count(*) AS n FROM metrics m JOIN runs r ON r.id = m.run_id "
        "WHERE r.arm = 'draft' AND m.outputs_compared = 1 AND m.outputs_differ = 0",
    )
    assert stored[0]["n"] == 4  # every measured draft run of 0c1e57098, per run


def test_compare_two_builds_and_a_build_with_itself(orch_exe, two_builds_db):
    res = run_orch(
        orch_exe, "compare", "--base", OLD_COMMIT, "--head", "0c1e570", "--format", "json", env=two_builds_db
    )
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert (result["base"], result["head"]) == ("f49e91787-cpu", "0c1e57098-cpu")
    arms = {r["arm"]: r for r in result["rows"]}
    assert set(arms) == {"baseline", "draft", "control:llama-speculative-simple"}
    assert arms.pop("control:llama-speculative-simple")["verdict"] == "newly ok"  # f49e917 cannot run a control
    for row in arms.values():
        assert row["base_n"] == 4 and row["head_n"] == 4 and row["ratio"] > 0 and row["verdict"]
        assert row["test"] == "mann-whitney"  # measured apart: unpaired, from 4 runs a side
    assert result["interleaved"] is None and "apart, not interleaved" in result["timing"]
    same = json.loads(
        run_orch(
            orch_exe, "compare", "--base", "0c1e570", "--head", "0c1e57098-cpu", "--format", "json", env=two_builds_db
        ).stdout
    )
    assert same["same_build"] and {r["verdict"] for r in same["rows"]} == {"same build"}
    # On a terminal of 120 columns, table and prose fit it (conftest gives the others a wide one)
    table = run_orch(
        orch_exe, "compare", "--base", OLD_COMMIT, "--head", "0c1e570", env={**two_builds_db, "COLUMNS": "120"}
    ).stdout
    assert max(map(len, table.splitlines())) <= 120 and "recipe_hash" not in table and "sha256" not in table
    bad = run_orch(orch_exe, "compare", "--base", "deadbeef", "--head", COMMIT, env=two_builds_db)
    assert bad.returncode == 8 and "deadbeef" in bad.stderr


def test_spec_matrix_runs_what_each_build_supports(orch_exe, cache_env, tiny_dir, old_build, tmp_path):
    env = {**cache_env, "ORCH_MODELS": str(tiny_dir), "ORCH_DB": str(tmp_path / "m.duckdb")}
    for build in (COMMIT, OLD_COMMIT):
        res = run_orch(
            orch_exe,
            "run",
            str(SPEC_MATRIX),
            "--build",
            build,
            "--vars",
            TINY_VARS,
            "--repeat",
            "1",
            "--set",
            "n_predict=48",
            env=env,
            timeout=900,
        )
        assert res.returncode == 0, res.stderr
    # measured_runs: a slot's newest run (one whose log lost its tail runs again: sweep.lost_its_tail)
    rows = db_rows(
        env,
        "SELECT s.build_name, r.arm, r.status, r.failure_class, r.failure_detail FROM measured_runs r "
        f"JOIN sweeps s ON s.id = r.sweep_id WHERE r.{PLANNED} ORDER BY r.id",
    )
    new = [r for r in rows if r["build_name"].startswith("0c1e")]
    old = [r for r in rows if r["build_name"].startswith("f49e")]
    assert len(new) == len(old) == 16  # fifteen cells and the control of llama-speculative-simple
    assert all(r["status"] == "ok" for r in new), [r for r in new if r["status"] != "ok"]
    skipped = [r for r in old if r["status"] == "skipped"]
    assert skipped and all(r["failure_class"] == "unknown_flag" and "f49e91787" in r["failure_detail"] for r in skipped)
    assert {r["arm"] for r in old if r["status"] == "ok"} >= {"baseline", "draft:draft_max=8"}
    # Skipped arms keep their model hashes, so compare pairs them with the build that ran them.
    result = json.loads(
        run_orch(
            orch_exe,
            "compare",
            "--base",
            COMMIT,
            "--head",
            OLD_COMMIT,
            "--recipe",
            "spec_matrix.j2",
            "--format",
            "json",
            env=env,
        ).stdout
    )
    verdicts = {r["arm"]: r["verdict"] for r in result["rows"]}
    assert {verdicts[r["arm"]] for r in skipped} == {"newly skipped"}
    assert len(verdicts) == 16
    # The matrix's summary fits a 120-column terminal too, and names what it left out.
    env120 = {**env, "COLUMNS": "120"}
    table = run_orch(orch_exe, "summary", "1", env=env120).stdout.splitlines()
    shown = table[: next(i for i, line in enumerate(table) if line.startswith(("warning: ", "verdict: ")))]
    assert max(map(len, shown)) <= 120 and len(shown) >= 2 + 16 and shown[-1].startswith(("not shown: ", "  "))
    compared = run_orch(orch_exe, "compare", "--base", COMMIT, "--head", OLD_COMMIT, env=env120).stdout
    assert max(map(len, compared.splitlines())) <= 120
    # An arm whose runs drafted nothing is flagged and has no speedup to be read as a speculation result.
    rows = json.loads(run_orch(orch_exe, "summary", "1", "--format", "json", env=env).stdout)  # the new build's
    for row in (r for r in rows if not r.get("length_of")):  # a count-matched control~ARM is a yardstick
        # (with a draft model it keeps its speedup: what the draft cost for nothing)
        assert (row["idle"] == row["ok_runs"] > 0 and not row["draft_sha256"]) == (
            row["speedup"] is None and not row["is_baseline"] and row["ok_runs"] > 0
        ), row["arm"]
        assert bool(row["idle"]) == ("no_drafts" in (row["warnings"] or ""))
        # Leviathan's prediction only where the arm drafted (not the baseline, not an n-gram arm that found nothing),
        # and shown only where the measurement bears it out.
        assert (row["modelled_speedup_unchecked"] is not None) == (row["drafted"] > 0), row["arm"]
        if row["modelled_speedup_unchecked"] is not None:
            assert math.isfinite(row["modelled_speedup_unchecked"]) and row["modelled_speedup_unchecked"] > 0
            assert_prediction_checked(row)


def test_resume_after_sigkill_runs_only_what_is_missing(orch_exe, cache_env, tiny_dir, tmp_path):
    env = {**cache_env, "ORCH_MODELS": str(tiny_dir), "ORCH_DB": str(tmp_path / "r.duckdb")}
    args = [
        orch_exe,
        "run",
        str(RECIPE_A),
        "--build",
        COMMIT,
        "--vars",
        TINY_VARS,
        "--repeat",
        "4",
        "--set",
        "n_predict=64",
    ]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        seen.append(line)
        if line.startswith("[4/12]"):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert any(s.startswith("[4/12]") for s in seen), seen
    # Every run that had ended is in the file once the next orch opened it (recovery), measured (ok) or, if it still
    # waited for the write that stores a few runs together (run/pending.py), interrupted with its logs; an attempt
    # whose log lost its tail (sweep.lost_its_tail) stays failed beside its slot: none is lost, and --resume
    # measures what is missing.
    assert run_orch(orch_exe, "runs", env=env).returncode == 0
    ended = db_rows(
        env,
        "SELECT count(*) FILTER (WHERE status = 'ok') AS ok, count(*) AS n FROM runs "
        "WHERE (status IN ('ok', 'interrupted') OR failure_class = 'truncated_log') "
        f"AND {PLANNED}",
    )[0]
    assert ended["n"] >= 4 and ended["ok"] < 12, (ended, seen)  # 3 arms: baseline, draft, control
    # Whole rounds run again: a repeat that lacks its draft run measures its baseline again too.
    complete_rounds = len(
        db_rows(
            env,
            f"SELECT repeat_index FROM measured_runs WHERE status = 'ok' AND {PLANNED} GROUP BY 1 HAVING count(*) = 3",
        )
    )
    killed_at = db_rows(env, "SELECT max(started_at) AS t FROM runs")[0]["t"]
    res = run_orch(orch_exe, *args[1:], "--resume", env=env)
    assert res.returncode == 0, res.stderr
    assert f"{12 - 3 * complete_rounds} runs" in res.stderr and "run again for every arm" in res.stderr
    rows = db_rows(
        env,
        f"SELECT arm, repeat_index, count(*) AS n FROM measured_runs WHERE status = 'ok' AND {PLANNED} GROUP BY ALL",
    )
    assert len(rows) == 12 and all(r["n"] == 1 for r in rows)  # every cell x repeat measured exactly once
    # each round ran together: all of a repeat's measured runs before the kill, or all in the resumed run
    rounds = db_rows(
        env,
        "SELECT repeat_index, bool_and(started_at <= ?) AS before, bool_or(started_at <= ?) AS any "
        f"FROM measured_runs WHERE {PLANNED} GROUP BY 1",
        [killed_at, killed_at],
    )
    assert len(rounds) == 4 and all(r["before"] == r["any"] for r in rounds), rounds
    assert db_rows(env, "SELECT count(*) AS n, min(status) AS status FROM sweeps") == [{"n": 1, "status": "done"}]
    # A finished sweep resumed again is refused in one line and left as it was (its planned runs were set to 0)
    planned = db_rows(env, "SELECT planned_runs, status FROM sweeps")
    again = run_orch(orch_exe, *args[1:], "--resume", "1", env=env)
    assert again.returncode == NothingToResume.exit_code and again.stderr.count("\n") == 1, again.stderr
    assert "holds every run its 4 repeat(s) plan: nothing to resume" in again.stderr
    assert db_rows(env, "SELECT planned_runs, status FROM sweeps") == planned


def test_two_builds_in_one_sweep_alternate_and_compare_pairs_them(orch_exe, two_builds_db, tmp_path):
    """`orch run --build A,B`: one sweep, every arm on each build, the builds alternating within every repeat;
    each build's arms against its own reference, B's plain decoding against A's; `orch compare` prefers the
    interleaved sweep over the two sweeps run apart, and pairs its runs by repeat."""
    env = {**two_builds_db, "ORCH_DB": str(tmp_path / "crossed.duckdb")}
    res = run_orch(
        orch_exe,
        "run",
        str(RECIPE_A),
        "--build",
        f"{OLD_COMMIT},{COMMIT}",
        "--vars",
        TINY_VARS,
        "--repeat",
        "3",
        env=env,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    runs = db_rows(
        env,
        "SELECT r.sweep_id, r.arm, r.repeat_index, b.name AS build, r.status, r.is_baseline, "
        "r.reference_arm, coalesce(r.executed_argv, r.rendered_argv) AS argv FROM measured_runs r "
        f"JOIN builds b ON b.id = r.build_id WHERE r.{PLANNED} ORDER BY {SLOT_ORDER}",
    )
    old, new = "f49e91787-cpu", "0c1e57098-cpu"
    assert {r["sweep_id"] for r in runs} == {1} and {r["build"] for r in runs} == {old, new}
    assert all(r["arm"].startswith(r["build"] + "/") for r in runs)  # each run is its build's, by name
    ran = [r for r in runs if r["status"] == "ok"]  # and by the binaries it ran (a skipped run ran none)
    assert {r["build"] for r in ran} == {old, new} and all(f"/{r['build']}/" in json.loads(r["argv"])[0] for r in ran)
    for rep in range(3):  # the builds alternate within every repeat
        order = [r["build"] for r in runs if r["repeat_index"] == rep]
        assert all(a != b for a, b in zip(order, order[1:])), order
    assert [r["arm"] for r in runs if r["is_baseline"]] == [f"{old}/baseline"] * 3
    assert {r["reference_arm"] for r in runs if r["arm"] == f"{new}/baseline"} == {f"{old}/baseline"}
    assert {r["reference_arm"] for r in runs if r["arm"] == f"{new}/draft"} == {
        f"{new}/control:llama-speculative-simple"
    }
    # The summary names both builds; the verdict says how the builds' plain decoding compares, never as a win
    verdict = "verdict: " + " ".join(res.stdout.split("\nverdict: ")[-1].split())  # unwrapped
    assert verdict.startswith(f"verdict: sweep 1 (recipe_a.j2, {old} and {new}, interleaved): ")
    assert f"Note: builds, plain decoding: {new}/baseline runs at " in verdict and f"{new}/baseline at" not in verdict
    # Every view with a build column, the summary and `orch runs` name each run's own build and commit (the sweep
    # row names only the first build: reading it there pooled the builds under one label)
    views = [
        r["table_name"]
        for r in db_rows(
            env,
            "SELECT DISTINCT table_name FROM duckdb_columns() "
            "WHERE column_name = 'build_name' AND table_name IN "
            "(SELECT view_name FROM duckdb_views() WHERE NOT internal)",
        )
    ]
    assert {"run_summary", "arm_summary"} <= set(views)
    commits = {b["name"]: b["upstream_commit"] for b in db_rows(env, "SELECT name, upstream_commit FROM builds")}
    for view in views:
        labelled = db_rows(env, f"SELECT arm, build_name, upstream_commit FROM {view} WHERE sweep_id = 1")
        assert {r["build_name"] for r in labelled} == {old, new}, view
        assert all(r["arm"].startswith(r["build_name"] + "/") for r in labelled), view
        assert all(r["upstream_commit"] == commits[r["build_name"]] for r in labelled), view
    summary = json.loads(run_orch(orch_exe, "summary", "1", "--format", "json", env=env).stdout)
    assert {r["build"] for r in summary} == {old, new} and all(r["arm"].startswith(r["build"] + "/") for r in summary)
    listed = json.loads(run_orch(orch_exe, "runs", "--last", "12", "--json", env=env).stdout)
    assert all(r["arm"].startswith(r["build_name"] + "/") for r in listed if r["sweep_id"] == 1)
    # With the two sweeps run apart in the same file, compare takes the interleaved one and pairs by repeat.
    for build in (OLD_COMMIT, COMMIT):
        assert (
            run_orch(
                orch_exe,
                "run",
                str(RECIPE_A),
                "--build",
                build,
                "--vars",
                TINY_VARS,
                "--repeat",
                "2",
                "--no-summary",
                env=env,
                timeout=900,
            ).returncode
            == 0
        )
    result = json.loads(
        run_orch(orch_exe, "compare", "--base", OLD_COMMIT, "--head", COMMIT, "--format", "json", env=env).stdout
    )
    assert result["interleaved"] == [1] and "interleaved in sweep 1" in result["timing"]
    rows = {r["arm"]: r for r in result["rows"]}
    assert (rows["baseline"]["base_n"], rows["baseline"]["head_n"], rows["baseline"]["test"]) == (3, 3, "paired")
    assert rows["draft"]["test"] == "paired"
