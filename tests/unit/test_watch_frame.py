"""`orch watch` counts slots, not rows: a slot run again after its log lost its last lines (sweep.lost_its_tail)
counts once, as its newest run."""

from datetime import datetime

from orchestrator import store
from orchestrator.report import watch


def test_a_slot_run_again_counts_once_as_its_newest_run(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "recipes/x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 2,
            "build_name": "b",
            "status": "running",
            "planned_runs": 2,
            "started_at": store.utcnow(),
        },
    )
    for rep, status, failure in ((0, "failed", "truncated_log"), (0, "ok", None), (1, "running", None)):
        store.insert_run(
            con,
            {
                "sweep_id": sweep,
                "arm": "a",
                "is_baseline": True,
                "params": {},
                "repeat_index": rep,
                "mode": "cli",
                "status": status,
                "failure_class": failure,
                "started_at": store.utcnow(),
            },
        )
    head = watch.frame(con, sweep, datetime.now()).text.splitlines()[0]
    assert ": running, 1/2 runs (1 ok, 0 failed, 0 skipped)" in head, head


def test_a_reference_run_again_at_an_arms_count_is_no_slot(tmp_path):
    """run/length_match.py: `control~draft` runs beside the sweep's slots; the progress counts the slots planned."""
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "recipes/x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 1,
            "build_name": "b",
            "status": "done",
            "planned_runs": 2,
            "started_at": store.utcnow(),
        },
    )
    for arm, params in (("control", {}), ("draft", {}), ("control~draft", {"n_predict": 71, "length_of": "draft"})):
        store.insert_run(
            con,
            {
                "sweep_id": sweep,
                "arm": arm,
                "is_baseline": arm == "control",
                "params": params,
                "repeat_index": 0,
                "mode": "cli",
                "status": "ok",
                "started_at": store.utcnow(),
            },
        )
    head = watch.frame(con, sweep, datetime.now()).text.splitlines()[0]
    assert ": done, 2/2 runs (2 ok, 0 failed, 0 skipped)" in head, head
