"""The per-arm summary read from a real DuckDB file: SQL grouping and pairing agree with the pure statistics."""

import math

import pytest

from orchestrator import store
from orchestrator.analyze import stats, summary
from orchestrator.store import queries

CLI = {"baseline": [100.0, 120.0, 90.0, 110.0], "draft": [150.0, 150.0, 100.0, 160.0]}
PROMPTS = {"p1": 1.0, "p2": 1.5}  # server mode: per-request rate = run speed x factor


def stored(tmp_path, mode: str):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(con, {"recipe_path": "recipes/x.j2", "recipe_hash": "h", "recipe_text": "t",
                                     "mode": mode, "repeat": 4, "build_name": "b", "status": "done"})
    for rep in range(4):
        for arm, speeds in CLI.items():
            run = store.insert_run(con, {"sweep_id": sweep, "arm": arm, "is_baseline": arm == "baseline",
                                         "params": {"draft_max": 8} if arm == "draft" else {}, "repeat_index": rep,
                                         "mode": mode, "status": "ok"})
            con.execute("INSERT INTO metrics (run_id, decode_tps, acceptance) VALUES (?, ?, ?)",
                        [run, speeds[rep], 0.5 if arm == "draft" else None])
            if mode == "server":
                store.insert_requests(con, [{"run_id": run, "seq": i, "prompt_id": p, "status": "ok",
                                             "predicted_n": 100, "predicted_ms": 100_000 / (speeds[rep] * f)}
                                            for i, (p, f) in enumerate(PROMPTS.items())])
    # A failed run and a warm-up never count.
    store.insert_run(con, {"sweep_id": sweep, "arm": "draft", "is_baseline": False, "repeat_index": 4,
                           "mode": mode, "status": "failed", "failure_class": "crash_signal"})
    return con, sweep


def test_cli_summary_matches_the_pure_statistics(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    base, draft = summary.arm_rows(con, [sweep])
    expected = stats.paired_speedup(dict(enumerate(CLI["baseline"])), dict(enumerate(CLI["draft"])))
    assert draft["speedup"] == pytest.approx(expected.ratio)
    assert (draft["speedup_low"], draft["speedup_high"]) == pytest.approx((expected.ci_low, expected.ci_high))
    d = stats.describe(CLI["draft"])
    assert (draft["decode_tps"], draft["cv"]) == pytest.approx((d.mean, d.cv))
    logs = stats.describe([math.log(x) for x in CLI["draft"]])
    assert (draft["ci_low"], draft["ci_high"]) == pytest.approx((math.exp(logs.ci_low), math.exp(logs.ci_high)))
    assert draft["ci95"] == f"[{draft['ci_low']:.1f}, {draft['ci_high']:.1f}]"
    assert draft["ok"] == "4/5" and draft["failures"] == "crash_signal" and draft["acceptance"] == 0.5
    assert base["speedup"] == 1.0 and base["is_baseline"]
    view = con.execute("SELECT speedup_paired FROM speedup_vs_baseline WHERE arm = 'draft'").fetchone()[0]
    assert view == pytest.approx(draft["speedup"])  # the view and the summary pair the same runs


def test_server_summary_pairs_per_repeat_and_prompt(tmp_path):
    con, sweep = stored(tmp_path, "server")
    _, draft = summary.arm_rows(con, [sweep])
    key = {(r, p): s * f for r, s in enumerate(CLI["baseline"]) for p, f in PROMPTS.items()}
    head = {(r, p): s * f for r, s in enumerate(CLI["draft"]) for p, f in PROMPTS.items()}
    expected = stats.paired_speedup(key, head)
    assert draft["speedup"] == pytest.approx(expected.ratio) and expected.n == 8
    assert draft["speedup_low"] == pytest.approx(expected.ci_low)
    view = con.execute("SELECT speedup_paired FROM speedup_vs_baseline WHERE arm = 'draft'").fetchone()[0]
    assert view == pytest.approx(draft["speedup"])  # the view pairs per prompt too: it and the summary agree
    rates = _groups(con, sweep)["draft"]["request_rates"]
    assert sorted(rates) == pytest.approx(sorted(head.values()))  # the spread bimodality reads


def _groups(con, sweep) -> dict[str, dict]:
    return {g["arm"]: g for g in queries.arm_summaries(con, [sweep], stats.T975_BY_DF)}


def test_values_move_to_python_only_where_a_rule_reads_them(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    groups = _groups(con, sweep)
    assert groups["draft"]["ok_decode_tps"] == CLI["draft"] and groups["draft"]["n"] == 4
    con.execute("DELETE FROM runs WHERE repeat_index = 3")
    groups = _groups(con, sweep)
    assert groups["draft"]["ok_decode_tps"] is None and groups["draft"]["n"] == 3
    assert math.isclose(groups["draft"]["stdev"], stats.describe(CLI["draft"][:3]).stdev)


def test_the_store_intervals_are_the_t_intervals_for_every_sample_size(tmp_path):
    """The SQL puts t-intervals on grouped moments; they equal stats' own on the raw values, from 2 runs to past the
    end of the t table (where 1.96 stands in)."""
    con = store.connect(tmp_path / "r.duckdb")
    for n in (2, 3, 7, 31, 45, 121, 122, 130):
        sweep = store.create_sweep(con, {"recipe_path": "x.j2", "recipe_hash": "h", "recipe_text": "t", "mode": "cli",
                                         "repeat": n, "build_name": "b", "status": "done"})
        speeds = {"baseline": [100.0 + (7 * i) % 13 for i in range(n)], "draft": [120.0 + (5 * i) % 11 for i in range(n)]}
        for rep in range(n):
            for arm, values in speeds.items():
                run = store.insert_run(con, {"sweep_id": sweep, "arm": arm, "is_baseline": arm == "baseline",
                                             "params": {}, "repeat_index": rep, "mode": "cli", "status": "ok"})
                con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [run, values[rep]])
        draft = _groups(con, sweep)["draft"]
        logs = stats.describe([math.log(x) for x in speeds["draft"]])
        assert (draft["ci_low"], draft["ci_high"]) == pytest.approx((math.exp(logs.ci_low), math.exp(logs.ci_high)))
        paired = stats.paired_speedup(dict(enumerate(speeds["baseline"])), dict(enumerate(speeds["draft"])))
        assert (draft["speedup"], draft["speedup_low"], draft["speedup_high"]) == pytest.approx(
            (paired.ratio, paired.ci_low, paired.ci_high))


def test_an_arm_that_drafted_nothing_has_no_speedup_and_says_why(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    for rep, tps in enumerate((101.0, 119.0, 92.0, 111.0)):
        run = store.insert_run(con, {"sweep_id": sweep, "arm": "ngram", "is_baseline": False, "params": {"spec": "x"},
                                     "repeat_index": rep, "mode": "cli", "status": "ok"})
        con.execute("INSERT INTO metrics (run_id, decode_tps, n_drafted, n_accepted) VALUES (?, ?, 0, 0)", [run, tps])
    rows = {r["arm"]: r for r in summary.arm_rows(con, [sweep])}
    ngram = rows["ngram"]
    assert ngram["idle"] == 4 and ngram["speedup"] is None and ngram["speedup_ci95"] is None
    assert ngram["speedup_without_drafts"] == pytest.approx(1.0, abs=0.05)  # kept in JSON, never shown as a result
    assert "no_drafts" in ngram["warnings"] and rows["draft"]["idle"] == 0 and rows["baseline"]["idle"] == 0


def test_the_summary_shows_the_parameters_that_tell_arms_apart(tmp_path):
    con, first = stored(tmp_path, "cli")
    second = store.create_sweep(con, {"recipe_path": "recipes/x.j2", "recipe_hash": "h", "recipe_text": "t",
                                      "mode": "cli", "repeat": 1, "build_name": "b", "status": "done"})
    for arm, params in (("baseline", {}), ("draft", {"draft_max": 16})):
        run = store.insert_run(con, {"sweep_id": second, "arm": arm, "is_baseline": arm == "baseline",
                                     "params": params, "repeat_index": 0, "mode": "cli", "status": "ok"})
        con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, 100.0)", [run])
    rows = summary.arm_rows(con, [first, second])
    columns = summary.table_columns(rows)
    assert columns[:5] == ["sweep", "recipe", "build", "arm", "draft_max"]  # only the parameter that differs
    assert [(r["sweep"], r["arm"], r["draft_max"]) for r in rows] == [
        (first, "baseline", None), (first, "draft", 8), (second, "baseline", None), (second, "draft", 16)]


def test_a_speed_interval_never_reaches_below_zero():
    low, high = stats.log_interval(3, *(lambda d: (d.mean, d.stdev))(stats.describe([math.log(x) for x in
                                                                                     (100.0, 300.0, 900.0)])))
    raw = stats.describe([100.0, 300.0, 900.0])
    assert raw.ci_low < 0 < low < 300.0 < high  # the raw t-interval would claim a negative speed
    assert stats.log_interval(1, 4.6, None) == (None, None)
