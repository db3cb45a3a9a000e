"""The speculation-method study on real binaries (issue 14): `orch run recipes/spec_methods.j2 --vars
recipes/tiny_methods.toml` on 0c1e57098 stores a drafting run for every method, in CLI and server mode, each keeping
the greedy text; on f49e91787 it skips each new method with the reason its --help gives; models that do not fit a
method are skipped before launch (spec_mismatch)."""

import json
import math
from pathlib import Path

import pytest

from integration.conftest import COMMIT, OLD_COMMIT, PLANNED, assert_prediction_checked, db_rows, run_orch

ROOT = Path(__file__).resolve().parents[2]
SPEC_METHODS = str(ROOT / "recipes" / "spec_methods.j2")
SPEC_METHODS_SERVER = str(ROOT / "recipes" / "spec_methods_server.j2")
TINY_METHODS = str(ROOT / "recipes" / "tiny_methods.toml")
NEW_ARMS = {
    "mtp:draft_max=1": "draft-mtp",
    "mtp:draft_max=2": "draft-mtp",
    "mtp:draft_max=3": "draft-mtp",
    "mtp:draft_max=4": "draft-mtp",
    "eagle3": "draft-eagle3",
    "dflash": "draft-dflash",
}
DRAFTING = ["draft-simple", *NEW_ARMS]
RUNS_SQL = (
    "SELECT r.arm, r.status, r.failure_class, r.failure_detail, r.executed_argv, m.n_drafted "
    f"FROM runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.sweep_id = ? AND r.{PLANNED} ORDER BY r.id"
)


@pytest.fixture
def env(cache_env, tiny_dir, tmp_path):
    return {**cache_env, "ORCH_MODELS": str(tiny_dir), "ORCH_DB": str(tmp_path / "methods.duckdb")}


def sweep(orch_exe, env, build, *extra, recipe=SPEC_METHODS):
    res = run_orch(
        orch_exe,
        "run",
        recipe,
        "--vars",
        TINY_METHODS,
        "--build",
        build,
        "--repeat",
        "1",
        "--set",
        "n_predict=48",
        *extra,
        env=env,
        timeout=900,
    )
    sweep_id = db_rows(env, "SELECT max(id) AS id FROM sweeps")[0]["id"]
    return res, {r["arm"]: r for r in db_rows(env, RUNS_SQL, [sweep_id])}


@pytest.fixture(scope="module")
def new_build_sweeps(orch_exe, cache_env, tiny_dir, real_build, tmp_path_factory):
    """Both recipes on 0c1e57098, once for the module: {recipe: (env, orch run's result, runs by arm)}. The drafting
    and parity tests read them; none writes to them."""
    made = {}
    for recipe in (SPEC_METHODS, SPEC_METHODS_SERVER):
        env = {
            **cache_env,
            "ORCH_MODELS": str(tiny_dir),
            "ORCH_DB": str(tmp_path_factory.mktemp("methods") / "methods.duckdb"),
        }
        made[recipe] = (env, *sweep(orch_exe, env, COMMIT, recipe=recipe))
    return made


def test_every_method_drafts_on_the_new_build(new_build_sweeps):
    _, res, runs = new_build_sweeps[SPEC_METHODS]
    assert res.returncode == 0, res.stderr
    for arm in ["draft-simple", *NEW_ARMS]:
        assert runs[arm]["status"] == "ok" and runs[arm]["n_drafted"] > 0, runs[arm]
    for arm, spec in NEW_ARMS.items():
        argv = json.loads(runs[arm]["executed_argv"])
        assert argv[argv.index("--spec-type") + 1] == spec


def test_every_method_drafts_through_llama_server(new_build_sweeps):
    env, res, runs = new_build_sweeps[SPEC_METHODS_SERVER]
    assert res.returncode == 0, res.stderr
    drafted = {
        r["arm"]: r["drafted"]
        for r in db_rows(
            env, "SELECT r.arm, sum(q.draft_n) AS drafted FROM runs r JOIN requests q ON q.run_id = r.id GROUP BY r.arm"
        )
    }
    assert drafted["baseline"] == 0
    for arm, spec in NEW_ARMS.items():
        assert runs[arm]["status"] == "ok" and drafted[arm] > 0, (arm, runs[arm])
        argv = json.loads(runs[arm]["executed_argv"])
        assert argv[0].endswith("llama-server") and argv[argv.index("--spec-type") + 1] == spec


@pytest.mark.parametrize("recipe, mode", [(SPEC_METHODS, "cli"), (SPEC_METHODS_SERVER, "server")])
def test_every_method_keeps_the_greedy_text(orch_exe, new_build_sweeps, recipe, mode):
    """Every method keeps the greedy text of the same target without drafting (the MTP arms, on their own target,
    are matched with their control in CLI mode and, with no control in server mode, not compared), and each arm
    that drafted has a finite predicted speedup beside its measured one; arms that drafted nothing have none."""
    env, res, _ = new_build_sweeps[recipe]
    assert res.returncode == 0, res.stderr
    rows = {r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "--format", "json", env=env).stdout)}
    for arm in DRAFTING:  # the MTP arms run their own target: matched with their control, not the baseline
        row = rows[arm]
        if mode == "server" and arm.startswith("mtp"):  # no control in server mode: another target, not compared
            assert row["outputs_compared"] is None, row
            continue
        assert row["outputs_compared"] and row["outputs_differ"] == 0 and row["first_diff_char"] is None, row
        assert "output_differs" not in (row["warnings"] or "")
        if mode == "cli":  # server logs give no draft time: no prediction there
            assert math.isfinite(row["modelled_speedup_unchecked"]) and row["modelled_speedup_unchecked"] > 0, arm
            assert_prediction_checked(row)
    assert rows["baseline"]["modelled_speedup_unchecked"] is None and rows["baseline"]["outputs_compared"] is None
    idle = [r for r in rows.values() if r["drafted"] == 0]
    assert all(r["modelled_speedup_unchecked"] is None for r in idle)
    if mode == "cli":
        assert rows["ngram-mod"]["drafted"] == 0 and rows["ngram-mod"]["modelled_speedup_unchecked"] is None


def test_old_build_skips_each_new_method_with_the_reason_from_its_help(orch_exe, env, old_build):
    res, runs = sweep(orch_exe, env, OLD_COMMIT)
    assert res.returncode == 0, res.stderr
    assert runs["baseline"]["status"] == runs["draft-simple"]["status"] == "ok"
    for arm, spec in NEW_ARMS.items():
        assert (runs[arm]["status"], runs[arm]["failure_class"]) == ("skipped", "unknown_flag")
        assert runs[arm]["failure_detail"].startswith(
            f"spec type {spec} is not offered by llama-speculative-simple of build f49e91787-cpu: its --help has no "
            f"--spec-type"
        )


def test_a_draft_of_another_method_stops_its_arm_before_launch(orch_exe, env, real_build):
    # The tiny EAGLE3 file given to the dflash arm, the plain tiny draft to the eagle3 arm, the MTP type to a llama.
    res, runs = sweep(
        orch_exe,
        env,
        COMMIT,
        "--set",
        "dflash_draft=tiny-eagle3.gguf",
        "--set",
        "eagle3_draft=tiny-draft.gguf",
        "--set",
        "mtp_target=tiny-target.gguf",
    )
    assert res.returncode == 0, res.stderr  # a method that does not apply to these models is skipped, not failed
    expected = {
        "dflash": "needs a draft of architecture dflash; ",
        "eagle3": "needs a draft of architecture eagle3",
        "mtp:draft_max=1": "needs a target with MTP layers",
    }
    for arm, reason in expected.items():
        assert (runs[arm]["status"], runs[arm]["failure_class"]) == ("skipped", "spec_mismatch"), runs[arm]
        assert reason in runs[arm]["failure_detail"] and runs[arm]["executed_argv"] in (None, "[]", "null")
    assert runs["draft-simple"]["status"] == "ok"


def test_arms_runs_the_chosen_arms_and_needs_only_their_models(orch_exe, env, real_build, tmp_path):
    """A user with one model: the method arms' files are missing, which stops the whole recipe (exit 33), but
    `--arms 'ngram*'` runs the n-gram arm with the baseline and its control, and needs none of those files."""
    missing = (
        "--set",
        f"eagle3_draft={tmp_path}/none.gguf",
        "--set",
        f"dflash_draft={tmp_path}/none.gguf",
        "--set",
        f"mtp_target={tmp_path}/none.gguf",
    )
    res = run_orch(
        orch_exe, "run", SPEC_METHODS, "--vars", TINY_METHODS, "--build", COMMIT, "--repeat", "1", *missing, env=env
    )
    assert res.returncode == 33, res.stderr
    res, runs = sweep(orch_exe, env, COMMIT, *missing, "--arms", "ngram*")
    assert res.returncode == 0, res.stderr
    assert set(runs) == {"baseline", "ngram-mod", "control:llama-speculative-simple"}
    assert all(r["status"] == "ok" for r in runs.values()), runs
    res = run_orch(orch_exe, "run", SPEC_METHODS, "--build", COMMIT, "--arms", "ngram*,nothing-like-this", env=env)
    assert res.returncode == 10 and "--arms nothing-like-this matches no arm" in res.stderr.splitlines()[-1]
