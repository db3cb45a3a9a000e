"""`orch tune --show` reads a finished tune's stored answers back into `Answer`s and prints them as a fresh tune
does; `--json` prints the keys it always did; an answer stored before decisions were typed reads too, and one
that does not read is one line."""

import json
from pathlib import Path

import duckdb
from click.testing import CliRunner

from orchestrator import store
from orchestrator.cli import main
from orchestrator.errors import TuneResumeError
from orchestrator.store import tune_queries, tunes
from orchestrator.tune import race
from orchestrator.tune.answer import Answer, verdict
from orchestrator.tune.decisions import Decision, Exit
from orchestrator.tune.request import TuneResult
from orchestrator.tune.rules import Rules

ANSWER_KEYS = {
    "workload",
    "state",
    "winner",
    "tied",
    "rows",
    "command",
    "server",
    "runs",
    "retried",  # added: the runs of `runs` that ran again (their log lost its tail)
    "seconds",
    "grid_runs",
    "grid_seconds",
    "rounds",
    "candidates",
    "reason",
    "left",
    "noise",
    "best_speculating",
    "output_changed",
    "verdict",
}


def _answer() -> Answer:
    left = {
        "b": Decision("b", Exit.DROPPED, round=1, speedup=0.6, ratio=0.6, runs=1, p=0.001, family=2),
        "c": Decision("c", Exit.DRAFTED_NOTHING, round=1, sweep_id=1, repeat=1),
    }
    a = Answer(
        workload="w",
        state=race.WINNER,
        winner="plain",
        runs=9,
        seconds=12.0,
        grid_runs=12,
        grid_seconds=16.0,
        rounds=2,
        candidates=4,
        left=left,
        noise=0.03,
        command="/b/llama-completion -m t",
        server="no llama-server equivalent: this build has no llama-server",
        best_speculating={"candidate": "a", "vs_plain": "0.95x", "command": "/b/llama-completion -m t -x"},
        rules=Rules(tie_margin=0.05, grid_repeats=3),
        rows=[
            {
                "candidate": "off (plain decoding)",
                "state": "winner",
                "runs": 3,
                "vs_plain": None,
                "vs_control": None,
                "acceptance": None,
                "why": None,
            },
            {
                "candidate": "b",
                "state": "dropped",
                "runs": 1,
                "vs_plain": "0.60x",
                "vs_control": None,
                "acceptance": None,
                "why": "dropped: slower than plain decoding",
            },
        ],
    )
    a.verdict = verdict(a)
    return a


def _stored(tmp_path, answers: list[dict]) -> str:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "r.duckdb"
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
        tunes.set_tune_state(con, tune_id, "done", {"answers": answers, "verdict": "v", "build": "b"})
    return str(path)


def test_an_answer_round_trips_through_its_json():
    a = _answer()
    data = json.loads(json.dumps(a.to_dict()))
    assert set(data) == ANSWER_KEYS | {"rules"}
    assert data["left"]["c"]["kind"] == "drafted_nothing" and data["left"]["c"]["why"].startswith("disqualified")
    assert Answer.from_dict(data) == a


def test_show_prints_the_stored_answer_as_a_fresh_tune_prints_it(tmp_path):
    a = _answer()
    db = _stored(tmp_path, [a.to_dict()])
    shown = CliRunner(env={"COLUMNS": "300"}).invoke(main, ["tune", "--show", "1", "--db", db])  # no wrapping
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0] == "== w: 4 candidates, 2 round(s): winner =="
    assert "  b: dropped: slower than plain decoding" in lines
    assert any(line.startswith("  dropped: one-sided t") and "at 0.05 per round" in line for line in lines)
    assert "run: /b/llama-completion -m t" in lines and "best speculating setting: a at 0.95x" in shown.stdout
    assert "   /b/llama-completion -m t -x" in lines
    assert lines[-3].startswith("cost: 9 runs in 0:00:12") and lines[-3].endswith("for every candidate at 3 repeats")
    assert lines[-1] == f"verdict: tune 1: {a.verdict}" and "at 3 repeats" in a.verdict
    as_json = json.loads(CliRunner().invoke(main, ["tune", "--show", "1", "--json", "--db", db]).stdout)
    assert set(as_json) == {"tune_id", "answers", "verdict", "build"} and as_json["build"] == "b"
    assert Answer.from_dict(as_json["answers"][0]) == a
    assert TuneResult(1, [a], build="b").to_dict() == as_json


def test_an_answer_stored_before_typed_decisions_shows_and_one_that_does_not_read_is_one_line(tmp_path):
    old = {k: v for k, v in _answer().to_dict().items() if k != "rules"}
    old["left"] = {
        "b": "dropped: slower than the leader",
        "c": "disqualified: drafted nothing in sweep 1, repeat 1: no speculation result",
    }
    db = _stored(tmp_path, [old])
    with duckdb.connect(db) as con:  # stored before migration 031 typed an answer's words
        con.execute("DELETE FROM _migrations WHERE id = 31")
    with store.opened(Path(db), read_only=True) as con:
        back = Answer.from_dict(tune_queries.tune_row(con, 1)["result"]["answers"][0])
    assert back.left["c"] == Decision("c", Exit.DRAFTED_NOTHING, sweep_id=1, repeat=1)
    assert back.left["b"].kind is Exit.DROPPED and back.rules == Rules()
    assert CliRunner().invoke(main, ["tune", "--show", "--db", db]).exit_code == 0
    broken = CliRunner().invoke(main, ["tune", "--show", "--db", _stored(tmp_path / "x", [{"workload": "w"}])])
    assert broken.exit_code == TuneResumeError.exit_code
    assert broken.output.count("\n") == 1 and "tune 1: its stored answer does not read" in broken.output


def test_runs_run_again_are_spent_and_said():
    """A slot whose log lost its tail runs again: the budget spent both attempts, and the answer says so."""
    from orchestrator.cli.tune_answer import printed
    from orchestrator.tune.race_answer import retried, spent

    runs = [
        {"status": "ok", "planned": True, "wall_s": 2.0, "retries": 1, "retried_s": 1.5},
        {"status": "ok", "planned": True, "wall_s": 2.0, "retries": 0, "retried_s": 0.0},
        {"status": "skipped", "planned": True, "wall_s": None, "retries": 0, "retried_s": 0.0},
    ]
    assert spent(runs) == (3, 5.5) and retried(runs) == 1
    a = _answer()
    a.runs, a.retried = 3, 1
    assert "cost: 3 runs (1 of them run again: their log lost its tail) in" in " ".join(printed(a).split())
