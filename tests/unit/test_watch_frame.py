"""`orch watch` counts slots, not rows: a slot run again after its log lost its last lines (sweep.lost_its_tail)
counts once, as its newest run."""

from datetime import datetime

from orchestrator import store
from orchestrator.report import watch


def test_a_slot_run_again_counts_once_as_its_newest_run(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(con, {"recipe_path": "recipes/x.j2", "recipe_hash": "h", "recipe_text": "t",
                                     "mode": "cli", "repeat": 2, "build_name": "b", "status": "running",
                                     "planned_runs": 2, "started_at": store.utcnow()})
    for rep, status, failure in ((0, "failed", "truncated_log"), (0, "ok", None), (1, "running", None)):
        store.insert_run(con, {"sweep_id": sweep, "arm": "a", "is_baseline": True, "params": {}, "repeat_index": rep,
                               "mode": "cli", "status": status, "failure_class": failure,
                               "started_at": store.utcnow()})
    head = watch.frame(con, sweep, datetime.now()).text.splitlines()[0]
    assert ": running, 1/2 runs (1 ok, 0 failed, 0 skipped)" in head, head
