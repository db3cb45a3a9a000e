"""Tune's decisions are typed: a kind with its numbers, worded in one place (tune/decisions.words), stored as kind and
numbers (tune_events.kind, .detail: m025) and read back by a resume; the verdict counts kinds, never words, and
says the tie margin and the grid's repeats of the rule the tune was stored with."""

import json
import math
from types import SimpleNamespace

import duckdb
import pytest

from orchestrator import store
from orchestrator.errors import TuneResumeError
from orchestrator.hashing import sha256_text
from orchestrator.store import migrations, tune_queries, tunes
from orchestrator.store.migrations.m025_tune_decision_kinds import legacy_decision
from orchestrator.tune import decisions, driver, race, race_settings, session, stored_tune
from orchestrator.tune.answer import Answer, verdict
from orchestrator.tune.decisions import Decision, Exit, words
from orchestrator.tune.rules import GRID_REPEATS, Rules

WHERE = {"sweep_id": 3, "repeat": 2}
EVERY_KIND = [
    Decision("i", Exit.INFEASIBLE, status="skipped", note="the draft does not fit in memory"),
    Decision("j", Exit.INFEASIBLE, note="no acceptance pays for this draft"),
    Decision("f", Exit.FAILED, status="timeout", failure_class="hang", **WHERE),
    Decision("g", Exit.FAILED, status="failed", **WHERE),
    Decision("s", Exit.NO_SPEED, **WHERE),
    Decision("n", Exit.DRAFTED_NOTHING, **WHERE),
    Decision("o", Exit.OUTPUT_CHANGED, first_diff_token=7, **WHERE),
    Decision("q", Exit.OUTPUT_CHANGED, **WHERE),
    Decision("l", Exit.LOOPS, **WHERE),
    Decision("d", Exit.DROPPED, speedup=0.8, ratio=0.61, runs=2, p=0.0012, family=9),
    Decision("e", Exit.DROPPED, speedup=1.1, against="ngram-simple:ngram_n=4", ratio=0.9, runs=3, p=0.02, family=2),
    Decision("w", Exit.WINNER, outcome="winner", speedup=1.5),
    Decision("t", Exit.TIED, outcome="equivalent"),
    Decision("u", Exit.TIED, outcome="unseparated", speedup=1.02),
    Decision("plain", Exit.REFUSED, **WHERE),
    Decision("p", Exit.PREDICTED_SLOWER, speedup=0.61, note="[0.40, 0.93]"),
]


def test_every_kind_is_worded_by_one_function_with_its_numbers():
    said = {d.candidate: words(d) for d in EVERY_KIND}
    assert said["i"] == "infeasible: skipped before launch: the draft does not fit in memory"
    assert said["f"] == "disqualified: timeout (hang) in sweep 3, repeat 2"
    assert said["g"] == "disqualified: failed (no class) in sweep 3, repeat 2"
    assert said["n"] == "disqualified: drafted nothing in sweep 3, repeat 2: no speculation result"
    assert said["o"].startswith(
        "disqualified: its output at temperature 0 differs from its control's (sweep 3, repeat 2, first at token 7)"
    )
    assert said["d"] == "dropped: slower than plain decoding: 0.61x its speed after 2 run(s), p=0.0012 (Holm over 9)"
    assert said["e"].startswith("dropped: slower than ngram-simple:ngram_n=4: 0.90x")
    assert said["w"] == "winner: the one survivor, at 1.50x plain decoding's speed"
    assert said["plain"].startswith("refused: plain decoding's text loops on this workload (sweep 3, repeat 2)")
    assert said["p"].startswith(
        "predicted_slower: predicted at 0.61x plain decoding's speed [0.40, 0.93] before "
        "any run: below it, interval and all"
    )
    assert Exit.PREDICTED_SLOWER.leaves and Exit.PREDICTED_SLOWER.not_a_result  # it never ran: no speed shown
    assert decisions.counted({"p": EVERY_KIND[-1]}) == "1 predicted slower"
    for d in EVERY_KIND:  # the stored row carries the same words, without the event its column holds
        row = decisions.to_row(d)
        assert row["reason"] == words(d, event=False) and row["event"] == d.kind.event
        assert row["kind"] == d.kind.value and "why" not in row["detail"]


def test_the_migration_reads_back_every_wording_orch_wrote():
    """Rows stored before m025 hold only words (those of a candidate leaving and of a refusal are the ones
    decisions.words writes still; an end stored its outcome): the migration tells each one's kind and numbers. A kind
    added after it (predicted_slower) was never stored in words alone."""
    for d in (d for d in EVERY_KIND if d.kind is not Exit.PREDICTED_SLOWER):
        reason = d.outcome if d.kind.ends and d.kind is not Exit.REFUSED else words(d, event=False)
        kind, detail = legacy_decision(d.kind.event, reason)
        back = decisions.from_row(
            {"candidate": d.candidate, "round": 0, "kind": kind, "speedup": d.speedup, "detail": detail}
        )
        assert back == d, d
    # an answer's text as stored before ("event: reason") is typed by m031, and reads back as itself
    import duckdb

    from orchestrator.store.migrations.m031_typed_answer_decisions import m031_typed_answer_decisions

    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE tunes (id INTEGER, result VARCHAR)")  # VARCHAR: text a JSON column would refuse
    stored = {"answers": [{"left": {"n": words(EVERY_KIND[5]), "x": "vanished: who knows"}}, "?"], "verdict": "v"}
    con.execute("INSERT INTO tunes VALUES (1, ?), (2, '{not json')", [json.dumps(stored)])
    m031_typed_answer_decisions(con)
    left = json.loads(con.execute("SELECT result FROM tunes WHERE id = 1").fetchone()[0])["answers"][0]["left"]
    assert Decision.from_dict("n", left["n"]) == EVERY_KIND[5]
    assert left["x"] == "vanished: who knows"  # words it cannot tell stay words: that answer does not read
    with pytest.raises(ValueError, match="names no kind"):
        Decision.from_dict("x", left["x"])


def test_a_stored_decision_reads_back_as_itself():
    for d in EVERY_KIND:
        row = {"workload": "w", **decisions.to_row(d.at(4))}
        row["detail"] = json.loads(json.dumps(row["detail"]))
        assert decisions.from_row(row) == d.at(4)
        assert Decision.from_dict(d.candidate, json.loads(json.dumps(d.to_dict()))) == d
    with pytest.raises(ValueError, match="has no kind"):
        decisions.from_row({"candidate": "x", "round": 1, "event": "disqualified", "kind": None, "reason": "?"})
    with pytest.raises(ValueError):
        decisions.from_row({"candidate": "x", "round": 1, "kind": "vanished", "detail": {}})
    with pytest.raises(ValueError, match="whole number"):
        decisions.from_row({"candidate": "x", "round": 1, "kind": "loops", "detail": {"sweep_id": "one"}})


LEFT = {
    "a": Decision("a", Exit.DROPPED, ratio=0.5, runs=1, p=0.001, family=3),
    "b": Decision("b", Exit.DROPPED, note="slower than the leader"),
    "c": Decision("c", Exit.DRAFTED_NOTHING, **WHERE),
    "d": Decision("d", Exit.OUTPUT_CHANGED, **WHERE),
    "e": Decision("e", Exit.LOOPS, **WHERE),
    "f": Decision("f", Exit.FAILED, status="failed", **WHERE),
    "g": Decision("g", Exit.INFEASIBLE, note="drafted nothing: loops, failed"),
}  # words that fooled substrings


def _no_speculation() -> Answer:
    return Answer(
        workload="prose",
        state=race.WINNER,
        winner="plain",
        runs=40,
        grid_runs=45,
        candidates=8,
        rows=[{"candidate": "off (plain decoding)", "state": "winner"}],
        left=LEFT,
    )


def test_why_none_counts_kinds_and_rewording_a_message_changes_no_verdict(monkeypatch):
    said = verdict(_no_speculation())
    assert said == (
        "prose: no speculation: no candidate beat plain decoding (2 dropped as slower, 1 drafted nothing, "
        "1 changed the output, 1 looped, 2 failed or could not run) (40 runs against 45 for the grid at "
        f"{GRID_REPEATS} repeats)"
    )
    monkeypatch.setattr(decisions, "_why", lambda d: "reworded: drafted nothing, loops, failed, timeout")
    assert words(LEFT["a"]) == "dropped: reworded: drafted nothing, loops, failed, timeout"
    assert verdict(_no_speculation()) == said


def test_the_verdict_says_the_tie_margin_and_grid_of_the_stored_rule(tmp_path):
    """A tune stored with tie_margin 0.05 says 5% (it said "within 2%" whatever the rule); the grid's repeats are the
    rule's too, and a tune stored before grid_repeats existed takes the grid of 5 it was measured against."""
    with store.opened(tmp_path / "r.duckdb") as con:
        tune_id = tunes.create_tune(con, _tune_row({"tie_margin": 0.05, "max_runs": 6, "allow_output_change": True}))
        rules = stored_tune.stored_rules(tune_queries.tune_row(con, tune_id))
    assert rules == Rules(tie_margin=0.05, max_runs=6, allow_output_change=True) and rules.grid_repeats == 5
    tied = Answer(
        workload="w",
        state=race.EQUIVALENT,
        tied=["a", "b"],
        runs=10,
        grid_runs=20,
        rules=rules,
        rows=[{"candidate": "a", "state": "tied"}, {"candidate": "b", "state": "tied"}],
    )
    assert verdict(tied) == "w: tied within 5%, any of them: a, b (10 runs against 20 for the grid at 5 repeats)"
    off = Answer(
        workload="w",
        state=race.EQUIVALENT,
        rules=Rules(tie_margin=0.025, grid_repeats=3),
        rows=[{"candidate": "off (plain decoding)", "state": "tied"}, {"candidate": "a", "state": "tied"}],
    )
    assert "(within 2.5%: off (plain decoding), a;" in verdict(off) and "grid at 3 repeats" in verdict(off)


def _tune_row(rules: dict) -> dict:
    return {
        "recipe_path": "r.j2",
        "recipe_hash": "h",
        "build_name": "b",
        "variables": {},
        "workloads": [None],
        "budget": {},
        "rules": rules,
        "argv": [],
    }


def _fake_race(path, tune_id: int, rules: Rules, say) -> race_settings.RaceSettings:
    """Plain decoding, `a` (ngram, no control) and `idle`, on fake arms; the runs come from _runs (monkeypatched)."""

    def arm(name, argv, base=False):
        return SimpleNamespace(
            arm=SimpleNamespace(
                name=name, reference=None if base else "plain", is_baseline=base, is_control=False, argv=argv
            ),
            executed=None,
            stop_status=None,
            stop_reason=None,
            draft_warning=None,
        )

    spec = ["/b/llama-completion", "-m", "t.gguf", "--spec-type", "ngram-simple"]
    arms = [arm("plain", ["/b/llama-completion", "-m", "t.gguf"], base=True), arm("a", spec), arm("idle", spec)]
    build = SimpleNamespace(tool=lambda name: None, help_texts=dict)
    prepared = SimpleNamespace(database=store.Database(path), arms=arms, build=build)
    return race_settings.RaceSettings(
        tune_id=tune_id,
        workload="w",
        prepared=prepared,
        rules=rules,
        budget=race_settings.Budget(runs=12),
        timeout=0,
        argv=[],
        say=say,
    )


def _runs() -> list[dict]:
    """Six blocks: plain decoding at 100 tok/s, `a` 0.5% slower on average with a 3% spread; idle drafted nothing."""
    out = []
    for i in range(6):
        for arm, tps in (("plain", 100.0), ("a", 100.0 * math.exp(-0.005 + 0.03 * (-1) ** i))):
            out.append(
                {
                    "sweep_id": 1,
                    "repeat_index": i,
                    "arm": arm,
                    "status": "ok",
                    "decode_tps": tps,
                    "n_drafted": 5 if arm == "a" else None,
                    "acceptance": None,
                    "planned": True,
                    "wall_s": 1.0,
                    "reference_arm": None if arm == "plain" else "plain",
                }
            )
    return out


@pytest.mark.parametrize(
    "margin, said",
    [
        (0.05, "faster than plain decoding (within 5%: off (plain decoding), a;"),
        (0.02, "not separated within the budget"),
    ],
)
def test_a_resumed_race_reads_its_decisions_and_rule_back_typed(tmp_path, monkeypatch, margin, said):
    """The same runs, raced by the stored rule: within a 5% margin plain decoding and `a` are tied, within 2% they
    are not separated. The decision stored before the resume comes back as a Decision, is not stored again, and
    counts in the answer by its kind."""
    path = tmp_path / "r.duckdb"
    earlier = Decision("idle", Exit.DRAFTED_NOTHING, round=1, sweep_id=1, repeat=1)
    with store.opened(path) as con:
        tune_id = tunes.create_tune(
            con, _tune_row({**Rules(tie_margin=margin).to_dict(), "allow_output_change": False})
        )
        tunes.insert_round(con, tune_id, "w", 1, 1, [["a", "idle"]] * 6, {"a": "plain", "idle": "plain"})
        tunes.insert_events(con, [{"tune_id": tune_id, "workload": "w", **decisions.to_row(earlier)}])
        row, rounds = tune_queries.tune_row(con, tune_id), tune_queries.rounds(con, tune_id)
        decided = [decisions.from_row(e) for e in tune_queries.events(con, tune_id)]
    assert decided == [earlier]
    rules = stored_tune.stored_rules(row)
    monkeypatch.setattr(driver, "_runs", lambda s, state: _runs())
    lines = []
    state = race_settings.RaceState.stored(rounds, decided)
    found = driver.run_race(_fake_race(path, tune_id, rules, lines.append), state)
    assert said in found.verdict and found.rules.tie_margin == margin
    assert found.left == {"idle": earlier}
    assert found.best_speculating["candidate"] == "a"
    with store.opened(path) as con:
        events = tune_queries.events(con, tune_id)
    assert [(e["candidate"], e["kind"]) for e in events] == [
        ("idle", "drafted_nothing"),
        ("plain", "tied"),
        ("a", "tied"),
    ]
    assert {e["detail"]["outcome"] for e in events[1:]} == {race.EQUIVALENT if margin == 0.05 else race.UNSEPARATED}


def test_a_resume_of_a_tune_whose_decisions_do_not_read_is_one_line(tmp_path):
    """A row m025 could not tell the kind of refuses the resume in one line, before the tune is taken over."""
    path, recipe = tmp_path / "r.duckdb", tmp_path / "r.j2"
    recipe.write_text("{{ bin }}/llama-completion -n 8\n")
    with store.opened(path) as con:
        tune_id = tunes.create_tune(
            con, {**_tune_row({}), "recipe_path": str(recipe), "recipe_hash": sha256_text(recipe.read_text())}
        )
        tunes.set_tune_state(con, tune_id, "interrupted")
        con.execute(
            "INSERT INTO tune_events (tune_id, workload, round, candidate, event, reason) VALUES "
            "(?, 'w', 1, 'x', 'disqualified', 'a reason no orch wrote')",
            [tune_id],
        )
    with pytest.raises(
        TuneResumeError,
        match=r"a stored decision does not read \(x: disqualified 'a reason no "
        r"orch wrote' has no kind\); it cannot be resumed",
    ):
        session.resume(str(tune_id), path, argv=[])
    with store.opened(path) as con:
        assert tune_queries.tune_row(con, tune_id)["state"] == "interrupted"  # not taken over


def test_a_file_at_the_previous_schema_gets_its_decisions_kinds_from_their_words(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    before = {migrations.number(m) for m in migrations.MIGRATIONS} - {25}
    migrations.apply(con, only=before)
    tune_id = tunes.create_tune(con, _tune_row({"tie_margin": 0.02}))
    old = [
        ("infeasible", "infeasible: skipped before launch: needs 9 GiB, 6 free", None),
        ("disqualified", "drafted nothing in sweep 4, repeat 2: no speculation result", None),
        ("disqualified", "timeout (no class) in sweep 4, repeat 1", None),
        ("dropped", "slower than plain decoding: 0.71x its speed after 2 run(s), p=3.1e-05 (Holm over 12)", 0.7),
        ("disqualified", "a reason no orch wrote", None),
        ("tied", "unseparated", 1.01),
        ("refused", "plain decoding's text loops (sweep 5, repeat 1): ...", None),
    ]
    for i, (event, reason, speedup) in enumerate(old):
        con.execute(
            "INSERT INTO tune_events (tune_id, workload, round, candidate, event, reason, speedup) VALUES "
            "(?, 'w', 1, ?, ?, ?, ?)",
            [tune_id, f"c{i}", event, reason, speedup],
        )
    con.close()
    with store.opened(path) as con:  # m025 applies on open
        events = tune_queries.events(con, tune_id)
    kinds = [(e["kind"], e["detail"]) for e in events]
    assert kinds == [
        ("infeasible", {"status": "skipped", "note": "needs 9 GiB, 6 free"}),
        ("drafted_nothing", {"sweep_id": 4, "repeat": 2}),
        ("failed", {"status": "timeout", "sweep_id": 4, "repeat": 1}),
        ("dropped", {"ratio": 0.71, "runs": 2, "p": 3.1e-05, "family": 12}),
        (None, None),
        ("tied", {"outcome": "unseparated"}),
        ("refused", {"sweep_id": 5, "repeat": 1}),
    ]
    assert events[4]["reason"] == "a reason no orch wrote"  # unread, kept as it was
    back = decisions.from_row(events[3])
    assert back == Decision("c3", Exit.DROPPED, round=1, speedup=0.7, ratio=0.71, runs=2, p=3.1e-05, family=12)
