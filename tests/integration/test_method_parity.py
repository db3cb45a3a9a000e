"""Issue 14 req 5 and 6 on real binaries: every method of recipes/spec_methods.j2 on the tiny models (0c1e57098,
CLI and server) keeps the greedy text of the same target without drafting (the MTP arms, on their own target,
are matched with their control in CLI mode and, with no control in server mode, not compared), and each arm that drafted has a finite
predicted speedup beside its measured one; arms that drafted nothing have none."""

import json
import math
from pathlib import Path

import pytest

from integration.conftest import COMMIT, assert_prediction_checked, run_orch

ROOT = Path(__file__).resolve().parents[2]
TINY_METHODS = str(ROOT / "recipes" / "tiny_methods.toml")
DRAFTING = ["draft-simple", "mtp:draft_max=1", "mtp:draft_max=2", "mtp:draft_max=3", "mtp:draft_max=4", "eagle3",
            "dflash"]


@pytest.mark.parametrize("recipe, mode", [("spec_methods.j2", "cli"), ("spec_methods_server.j2", "server")])
def test_every_method_keeps_the_greedy_text(orch_exe, cache_env, tiny_dir, real_build, tmp_path, recipe, mode):
    env = {**cache_env, "ORCH_MODELS": str(tiny_dir), "ORCH_DB": str(tmp_path / "parity.duckdb")}
    res = run_orch(orch_exe, "run", str(ROOT / "recipes" / recipe), "--vars", TINY_METHODS, "--build", COMMIT,
                   "--repeat", "1", "--set", "n_predict=48", env=env, timeout=900)
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
            assert math.isfinite(row["predicted_speedup_unchecked"]) and row["predicted_speedup_unchecked"] > 0, arm
            assert_prediction_checked(row)
    assert rows["baseline"]["predicted_speedup_unchecked"] is None and rows["baseline"]["outputs_compared"] is None
    idle = [r for r in rows.values() if r["drafted"] == 0]
    assert all(r["predicted_speedup_unchecked"] is None for r in idle)
    if mode == "cli":
        assert rows["ngram-mod"]["drafted"] == 0 and rows["ngram-mod"]["predicted_speedup_unchecked"] is None

