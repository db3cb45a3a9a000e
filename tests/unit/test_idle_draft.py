"""An arm that loaded a draft model and drafted nothing keeps its speedup (what the draft cost), is warned, and is
never the verdict's best arm; an arm with no draft model that drafted nothing decoded plainly: no speedup."""

from orchestrator import store
from orchestrator.analyze import summaries, verdict


def _sweep(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "recipes/x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 3,
            "build_name": "b",
            "status": "done",
        },
    )
    arms = (
        ("control", None, None, 61.0),
        ("draft", "control", "d" * 64, 55.0),
        ("ngram", "control", None, 60.8),
        ("slow-draft", "control", "d" * 64, 40.0),
    )
    for rep in range(3):
        for arm, reference, draft, tps in arms:
            run = store.insert_run(
                con,
                {
                    "sweep_id": sweep,
                    "arm": arm,
                    "is_baseline": arm == "control",
                    "reference_arm": reference,
                    "params": {},
                    "repeat_index": rep,
                    "mode": "cli",
                    "status": "ok",
                    "target_sha256": "t" * 64,
                    "draft_sha256": draft,
                },
            )
            drafted = None if arm == "control" else 30 if arm == "slow-draft" else 0
            con.execute(
                "INSERT INTO metrics (run_id, decode_tps, n_drafted, n_accepted) VALUES (?, ?, ?, ?)",
                [run, tps + rep * 0.1, drafted, 3 if drafted else 0],
            )
    return con, sweep


def test_a_draft_that_drafted_nothing_still_shows_its_cost_and_is_never_the_best(tmp_path):
    con, sweep = _sweep(tmp_path)
    rows = {r["arm"]: r for r in summaries.rows(con, [sweep])}
    draft, ngram = rows["draft"], rows["ngram"]
    assert 0.89 < draft["speedup"] < 0.91 and "no_drafts" in draft["warnings"]
    assert any("draft model still ran at every step" in m for m in draft["warning_messages"])
    assert ngram["speedup"] is None and ngram["speedup_without_drafts"] is not None  # plain decoding: no speedup
    said = verdict.verdict(list(rows.values()))
    assert "best slow-draft at 0.66x" in said  # the arm that drafted, though slower than the idle draft's 0.90x
    assert "draft (its draft model still cost it: 0.90x" in said and "ngram" in said.split("Drafted nothing:")[1]
