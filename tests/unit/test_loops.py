"""Loops on real generated texts: stored per run when a sweep's outputs are checked, warned in the summary, and
never a win in the verdict."""

import json
from pathlib import Path

from orchestrator import store
from orchestrator.analyze import summaries, verdict

REAL = {
    r["id"]: r
    for r in map(
        json.loads,
        (Path(__file__).resolve().parents[1] / "fixtures" / "real_outputs" / "gemma-3-270m.jsonl")
        .read_text()
        .splitlines(),
    )
}
CTRL = "control:llama-speculative-simple"


def _sweep(
    tmp_path,
    prompt: str,
    *,
    speeds: dict[str, list[float]],
    spec_record: str | None = None,
    generated: dict[str, int] | None = None,
):
    """baseline (llama-completion), its control and ngram-mod (llama-speculative-simple) on one real prompt; the
    speculative runs' output is `spec_record`'s where given (the fixture's own ngram-mod record by default)."""
    spec_record = spec_record or f"{prompt}-ngram-mod"
    con = store.connect(tmp_path / f"{prompt}.duckdb")
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "recipes/demo.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 3,
            "build_name": "b",
            "status": "done",
        },
    )
    for rep in range(3):
        for arm, record, drafted in (
            ("baseline", f"{prompt}-completion", None),
            (CTRL, spec_record, 0),
            ("ngram-mod", spec_record, 40),
        ):
            reference = {"baseline": None, CTRL: "baseline", "ngram-mod": CTRL}[arm]
            run = store.insert_run(
                con,
                {
                    "sweep_id": sweep,
                    "arm": arm,
                    "is_baseline": arm == "baseline",
                    "is_control": arm == CTRL,
                    "reference_arm": reference,
                    "params": {},
                    "repeat_index": rep,
                    "mode": "cli",
                    "status": "ok",
                    "executed_argv": REAL[record]["argv"],
                },
            )
            con.execute(
                "INSERT INTO metrics (run_id, decode_tps, n_drafted, n_accepted, acceptance, n_generated) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [run, speeds[arm][rep], drafted, drafted, 1.0 if drafted else None, (generated or {}).get(arm)],
            )
            store.save_logs(con, run, {"stdout": REAL[record]["stdout"].encode()})
    store.check_outputs(con, sweep)
    return con, sweep


SPEEDS = {"baseline": [100.0, 101.0, 99.0], CTRL: [98.0, 99.0, 97.0], "ngram-mod": [150.0, 152.0, 149.0]}


def test_a_speedup_on_looping_text_is_warned_and_never_the_verdicts_win(tmp_path):
    con, sweep = _sweep(tmp_path, "prose", speeds=SPEEDS)
    looped = con.execute("SELECT count(*) FROM metrics WHERE degenerate_loop").fetchone()[0]
    assert looped == 9  # every run's text loops: the baseline's, the control's and the arm's
    rows = summaries.rows(con, [sweep])
    arm = next(r for r in rows if r["arm"] == "ngram-mod")
    assert arm["speedup"] > 1.4 and "degenerate_loop" in arm["warnings"]
    assert any("loops" in m and "3 of 3" in m for m in arm["warning_messages"])
    said = verdict.verdict(rows)
    assert "beats" not in said and "not distinguishable" not in said
    assert "no win" in said and "ngram-mod at 1.5" in said and "loops" in said


def test_the_same_speedup_on_text_that_goes_on_beats_its_control(tmp_path):
    # the fixture has this text from llama-completion only: every arm prints it
    con, sweep = _sweep(tmp_path, "code2", speeds=SPEEDS, spec_record="code2-completion")
    assert con.execute("SELECT count(*) FROM metrics WHERE degenerate_loop").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM metrics WHERE loop_share < 0.55").fetchone()[0] == 9
    said = verdict.verdict(summaries.rows(con, [sweep]))
    assert "ngram-mod at 1.5" in said and "beats" in said and "loops" not in said


def test_literal_repetition_the_prompt_asked_for_is_not_flagged(tmp_path):
    con, sweep = _sweep(tmp_path, "repeat", speeds=SPEEDS)
    assert con.execute("SELECT count(*), min(loop_share) FROM metrics WHERE NOT degenerate_loop").fetchone() == (9, 1.0)
    assert "beats" in verdict.verdict(summaries.rows(con, [sweep]))


def test_an_arm_that_generated_more_tokens_than_its_control_says_so(tmp_path):
    con, sweep = _sweep(tmp_path, "repeat", speeds=SPEEDS, generated={"baseline": 96, CTRL: 97, "ngram-mod": 104})
    rows = {r["arm"]: r for r in summaries.rows(con, [sweep])}
    assert rows["ngram-mod"]["warnings"] == "unequal_tokens"
    assert any(
        "in 3 of 3 pairs it generated 104 tokens where its reference generated 97" in m
        for m in rows["ngram-mod"]["warning_messages"]
    )
    assert rows[CTRL]["warnings"] is None  # one token apart: llama-completion stops at -n, the other one later
    assert "ngram-mod (unequal_tokens)" in verdict.verdict(list(rows.values()))
