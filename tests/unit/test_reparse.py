"""`orch reparse` derives stored metrics again from stored logs and says what changed."""

from pathlib import Path

from orchestrator import parse, store
from orchestrator.store.reparse import reparse_all

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "0c1e57098"


def stored_run(con, sweep, stderr: str, stdout: str = "") -> int:
    run = store.insert_run(con, {"sweep_id": sweep, "arm": "draft", "is_baseline": False, "repeat_index": 0,
                                 "mode": "cli", "status": "ok"})
    store.save_logs(con, run, {"stdout": stdout.encode(), "stderr": stderr.encode()})
    store.save_metrics(con, run, parse.parse_run(stdout, stderr))
    return run


def test_reparse_reports_the_runs_and_fields_it_changed(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(con, {"recipe_path": "r.j2", "recipe_hash": "h", "recipe_text": "t", "status": "done"})
    good = stored_run(con, sweep, (LOGS / "spec-simple-draft.stderr").read_text())
    stored_run(con, sweep, (LOGS / "completion.stderr").read_text())
    # An older parser stored another speed for the first run, and the stdout figure a prompt once forged.
    con.execute("UPDATE metrics SET decode_tps = 64000.0, n_drafted = 1 WHERE run_id = ?", [good])
    result = reparse_all(con)
    assert (result.runs, result.changed, dict(result.fields)) == (2, 1, {"decode_tps": 1, "n_drafted": 1})
    assert result.lines()[0].startswith("re-parsed 2 runs: 1 changed (")
    assert con.execute("SELECT decode_tps, n_drafted FROM metrics WHERE run_id = ?", [good]).fetchone() == (6.316, 69)
    again = reparse_all(con)
    assert (again.runs, again.changed) == (2, 0) and again.lines() == ["re-parsed 2 runs: 0 changed"]


def test_a_log_whose_figures_cannot_be_true_is_kept_as_stored(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(con, {"recipe_path": "r.j2", "recipe_hash": "h", "recipe_text": "t", "status": "done"})
    run = stored_run(con, sweep, "decoded 5 tokens in 1.0 seconds, speed: 5.0 t/s\n")
    store.save_logs(con, run, {"stdout": b"", "stderr": b"n_drafted = 10\nn_accept = 20\n"})  # accepted > drafted
    result = reparse_all(con)
    assert result.runs == 0 and result.refused and result.refused[0].startswith(f"run {run}: ")
    assert "acceptance 200.0%" in result.lines()[-1]
    assert con.execute("SELECT decode_tps FROM metrics WHERE run_id = ?", [run]).fetchone() == (5.0,)
