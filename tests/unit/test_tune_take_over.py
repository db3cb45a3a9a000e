"""Two `orch tune --resume` at once on a tune whose orch died: each checks the stored owner, then takes the tune over
in one write; the second finds the owner changed since its check and refuses, so the tune never runs twice."""

import pytest

from orchestrator import proc, store
from orchestrator.errors import TuneResumeError
from orchestrator.store import tune_queries, tunes
from orchestrator.tune import stored_tune


def _interrupted_tune(path) -> dict:
    me = proc.this_process()
    with store.opened(path) as con:
        tune_id = tunes.create_tune(
            con,
            {
                "recipe_path": "r.j2",
                "recipe_hash": "h",
                "build_name": "b",
                "variables": {},
                "workloads": [None],
                "budget": {},
                "rules": {},
                "argv": [],
            },
        )
        tunes.set_owner(con, tune_id, host=me.host, pid=me.pid, started=me.started - 1000)  # a dead orch
        tunes.set_tune_state(con, tune_id, "interrupted")
        return tune_queries.tune_row(con, tune_id)


def test_the_first_resume_takes_the_tune_over_and_a_second_that_checked_before_it_refuses(tmp_path):
    database = store.Database(tmp_path / "r.duckdb")
    checked = _interrupted_tune(database.path)  # both orchs read this row and found its owner dead
    stored_tune.take_over(database, checked)
    with database.read() as con:
        now = tune_queries.tune_row(con, checked["id"])
    me = proc.this_process()
    assert (now["state"], now["owner_pid"], now["owner_started"]) == ("running", me.pid, me.started)
    with pytest.raises(TuneResumeError, match=f"tune {checked['id']} was resumed by another orch"):
        stored_tune.take_over(database, checked)
    with database.read() as con:
        assert tune_queries.tune_row(con, checked["id"]) == now  # the refusal wrote nothing


@pytest.mark.parametrize(
    "grids, said",
    [
        ([{"spec": "draft", "target": ["/etc/passwd"]}], "sets target: a space races settings of one model pair"),
        ([{"spec": "ngram-mod", "prompt": ["a", "b"]}], "sets prompt: a space races settings on one text"),
        ([{"spec": "ngram-mod", "a": list(range(100)), "b": list(range(100))}], "holds 10,000 candidates"),
        ("grid", "is no list of grids"),
    ],
)
def test_an_imported_tunes_space_is_checked_as_a_fresh_ones_before_it_resumes(grids, said):
    """Tunes travel in exports: a resume raced a stored space as it was, models, prompts and all."""
    with pytest.raises(TuneResumeError, match=f"tune 7: its stored space:? {said}"):
        stored_tune.check_space({"id": 7, "space": grids})
    stored_tune.check_space({"id": 7, "space": [{"spec": "ngram-mod", "draft_max": [4, 8]}]})  # as a fresh tune's
    # plain decoding as the recipe's baseline has it (draft: none) is no setting raced
    stored_tune.check_space(
        {"id": 7, "space": [{"_label": "off", "spec": "none", "draft": None}, {"spec": "ngram-mod", "threads": [1, 2]}]}
    )
