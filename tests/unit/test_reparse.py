"""`orch reparse` derives stored metrics again from stored logs and says what changed."""

from pathlib import Path

from orchestrator import parse, store
from orchestrator.parse.modes import MODES
from orchestrator.store.reparse import reparse_all

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "0c1e57098"


def stored_run(con, sweep, stderr: str, stdout: str = "") -> int:
    run = store.insert_run(
        con, {"sweep_id": sweep, "arm": "draft", "is_baseline": False, "repeat_index": 0, "mode": "cli", "status": "ok"}
    )
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


BENCH = Path(__file__).resolve().parent.parent / "fixtures" / "quality" / "0c1e57098" / "bench.stdout"


def test_a_bench_run_is_read_again_as_llama_bench_output(tmp_path):
    """Each mode's reader (parse/modes.py) in reparse as in `orch run`: a bench run's figures are llama-bench JSON
    on stdout, and were once erased by reading them as a CLI log."""
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(con, {"recipe_path": "b.j2", "recipe_hash": "h", "recipe_text": "t", "status": "done"})
    tg = next(line for line in BENCH.read_text().splitlines() if '"n_gen": 16' in line or '"n_gen":16' in line)
    run = store.insert_run(
        con,
        {
            "sweep_id": sweep,
            "arm": "test=tg16",
            "is_baseline": False,
            "repeat_index": 0,
            "mode": "bench",
            "status": "ok",
        },
    )
    store.save_logs(con, run, {"stdout": tg.encode() + b"\n", "stderr": b""})
    store.save_metrics(con, run, MODES["bench"].parse(tg, ""))
    stored = con.execute("SELECT decode_tps, extra FROM metrics WHERE run_id = ?", [run]).fetchone()
    assert stored[0] > 0 and '"bench_test"' in stored[1]
    result = reparse_all(con)
    assert (result.runs, result.changed) == (1, 0), result.lines()
    assert con.execute("SELECT decode_tps, extra FROM metrics WHERE run_id = ?", [run]).fetchone() == stored
