"""Cross-build comparison: verdicts from samples, status changes, and the columns that differ."""

import json

import pytest

from orchestrator.analyze import compare_columns, side_by_side

KEY = {
    "recipe_hash": "r1",
    "arm_params": '{"draft_max": 16, "spec": "draft"}',
    "target_sha256": "t",
    "draft_sha256": "d",
    "prompt_set": "p",
    "mode": "cli",
}


def runs(values, *, arm="draft:draft_max=16", status="ok", **key):
    return [{**KEY, **key, "arm": arm, "status": status, "decode_tps": v} for v in values]


def one(base, head, **kw):
    rows = side_by_side.compare(base, head, **kw)
    assert len(rows) == 1
    return rows[0]


def test_identical_sample_sets_are_no_significant_change():
    samples = [100.0, 102.0, 98.0, 101.0, 99.0]
    row = one(runs(samples), runs(samples))
    assert row["verdict"] == side_by_side.NO_CHANGE
    assert row["ratio"] == pytest.approx(1.0) and row["test"] == "mann-whitney" and row["p_value"] == 1.0
    assert (row["base_n"], row["head_n"], row["base_mean"], row["head_mean"]) == (5, 5, 100.0, 100.0)
    assert row["ratio_low"] < 1 < row["ratio_high"]


def test_clearly_slower_head_is_a_regression():
    # 20% slower, low noise, n = 5: every head run below every base run, exact p = 2 / C(10,5) = 0.0079
    row = one(runs([100, 101, 99, 100.5, 99.5]), runs([80, 81, 79, 80.5, 79.5]))
    assert row["verdict"] == side_by_side.REGRESSION
    assert row["ratio"] == pytest.approx(0.8)
    assert row["p_value"] == pytest.approx(2 / 252)
    assert row["ratio_high"] < 0.95


def test_faster_head_is_an_improvement_and_the_direction_can_flip():
    base, head = runs([100, 101, 99, 100, 100]), runs([120, 121, 119, 120, 120])
    assert one(base, head)["verdict"] == side_by_side.IMPROVEMENT
    # for a lower-is-better metric (e.g. wall seconds) the same numbers are a regression
    assert one(base, head, higher_is_better=False)["verdict"] == side_by_side.REGRESSION


def test_significant_but_within_threshold_is_no_change():
    # 3% slower, cleanly separated (p = 0.0079), but the default threshold is 5%
    base, head = runs([100, 100.2, 99.8, 100.1, 99.9]), runs([97, 97.2, 96.8, 97.1, 96.9])
    assert one(base, head)["verdict"] == side_by_side.NO_CHANGE
    assert one(base, head, threshold=0.02)["verdict"] == side_by_side.REGRESSION


def test_large_change_that_noise_cannot_separate_is_no_change():
    # means 100 vs 85 but the samples interleave: Mann-Whitney p well above 0.05
    row = one(runs([60, 140, 70, 130, 100]), runs([55, 120, 65, 115, 70]))
    assert row["p_value"] > 0.05 and row["verdict"] == side_by_side.NO_CHANGE


def test_small_n_falls_back_to_interval_overlap():
    # n = 3 each: exact Mann-Whitney cannot go below 0.1, so intervals decide.
    # base [98, 100, 102]: 100 +/- 4.303 * 2 / sqrt 3 = [95.03, 104.97]; head [78, 80, 82]: [75.03, 84.97]: apart
    row = one(runs([98, 100, 102]), runs([78, 80, 82]))
    assert (row["test"], row["verdict"]) == ("intervals", side_by_side.REGRESSION)
    assert row["p_value"] == pytest.approx(0.1)  # reported, not decisive
    # head [88, 93, 98]: mean 93, stdev 5, interval 93 +/- 12.42 = [80.58, 105.42] overlaps: no call
    row = one(runs([98, 100, 102]), runs([88, 93, 98]))
    assert (row["test"], row["verdict"]) == ("intervals", side_by_side.NO_CHANGE)
    # a single run on one side can never be called different
    row = one(runs([100]), runs([50, 51, 49]))
    assert (row["test"], row["verdict"], row["ratio_low"]) == ("too few samples", side_by_side.NO_CHANGE, None)


def test_newly_failing_and_newly_skipped():
    base = runs([100, 101, 99])
    failing = runs([None], status="failed") + runs([None], status="timeout")
    assert one(base, failing)["verdict"] == side_by_side.NEWLY_FAILING
    skipped = runs([None, None, None], status="skipped")
    row = one(base, skipped)
    assert (row["verdict"], row["head_runs"], row["head_n"], row["ratio"]) == (side_by_side.NEWLY_SKIPPED, 3, 0, None)
    assert one(base, skipped + failing[:1])["verdict"] == side_by_side.NEWLY_FAILING  # a failure outranks skips
    assert one(skipped, base)["verdict"] == side_by_side.NEWLY_OK
    assert one(skipped, failing)["verdict"] == side_by_side.NO_OK_RUNS
    assert one(base, runs([None, None]))["verdict"] == side_by_side.NO_DATA  # ok runs that printed no speed


def test_only_in_one_build_and_ordering():
    base = runs([100, 101], arm="a", arm_params='{"x": 1}') + runs([50, 51], arm="b", arm_params='{"x": 2}')
    head = runs([100, 101], arm="a", arm_params='{"x": 1}') + runs([70, 71], arm="c", arm_params='{"x": 3}')
    rows = side_by_side.compare(base, head)
    assert [(r["arm"], r["verdict"]) for r in rows] == [
        ("a", side_by_side.NO_CHANGE),
        ("b", side_by_side.ONLY_BASE),
        ("c", side_by_side.ONLY_HEAD),
    ]


def test_arm_params_join_on_content_not_spelling():
    # the same parameters as a dict, as spaced JSON in another key order, and compact: one test
    base = runs([100, 101, 99], arm_params={"spec": "draft", "draft_max": 16})
    head = runs([100, 101, 99], arm="renamed", arm_params='{ "spec" : "draft", "draft_max" : 16 }')
    row = one(base, head)
    assert row["arm_params"] == '{"draft_max":16,"spec":"draft"}' and row["arm"] == "renamed"


def test_other_statuses_are_counted_but_not_sampled():
    row = one(runs([100, 101, 99]) + runs([5.0], status="interrupted"), runs([100, 101, 99]))
    assert (row["base_runs"], row["base_n"], row["base_mean"]) == (4, 3, 100)


def test_metric_choice():
    base = [{**r, "acceptance": 0.5} for r in runs([100, 101])]
    head = [{**r, "acceptance": 0.6} for r in runs([100, 101])]
    assert one(base, head, metric="acceptance")["ratio"] == pytest.approx(1.2)


def test_key_columns_are_one_named_list():
    assert side_by_side.KEY_COLUMNS == (
        "recipe_hash",
        "arm_params",
        "target_sha256",
        "draft_sha256",
        "prompt_set",
        "mode",
    )


def test_differing_keys_and_params():
    rows = side_by_side.compare(
        runs([1, 2], arm_params='{"spec": "draft", "draft_max": 8}')
        + runs([1, 2], arm_params=json.dumps({"spec": "draft", "draft_max": 16}))
        + runs([1, 2], arm_params='{"spec": "ngram-cache"}', draft_sha256=None),
        [],
    )
    assert compare_columns.differing_keys(rows) == ["arm_params", "draft_sha256"]
    assert compare_columns.differing_params(rows) == ["draft_max", "spec"]  # draft_max: 8, 16 and absent
    same = side_by_side.compare(runs([1, 2]), runs([1, 2]))
    assert compare_columns.differing_keys(same) == [] and compare_columns.differing_params(same) == []
    assert compare_columns.differing_keys([]) == []


def test_the_table_shows_what_tells_tests_apart_and_each_column_once():
    spec = [
        {"spec": "none"},
        {"spec": "draft", "draft_max": 8},
        {"spec": "draft", "draft_max": 16},
        {"spec": "none", "control_of": "llama-speculative-simple"},
    ]
    server = [{"spec": "draft", "prompt_set": "default"}, {"spec": "draft", "prompt_set": "mine.jsonl"}]
    base = [
        r for i, p in enumerate(spec) for r in runs([100, 101], arm=f"a{i}", recipe_hash="r1", arm_params=json.dumps(p))
    ]
    base += [
        r
        for i, p in enumerate(server)
        for r in runs(
            [100, 101],
            arm="s",
            recipe_hash="r2",
            mode="server",
            prompt_set=p["prompt_set"] + "@0123",
            arm_params=json.dumps(p),
        )
    ]
    rows = side_by_side.compare(base, base)
    for row in rows:
        row["recipe_name"] = {"r1": "spec_matrix.j2", "r2": "server_spec.j2"}[row["recipe_hash"]]
    shown = compare_columns.table(rows)
    # recipe (several), arm, the parameters that differ within a recipe, prompt_set once (the key column: two
    # tests of one arm name differ only there), no parameter set in a single arm, no hashes
    assert shown.columns == ["recipe", "arm", "spec", "draft_max", "prompt_set", *compare_columns.FIGURES]
    assert shown.hidden == ["control_of"] and shown.droppable[:2] == ["draft_max", "spec"]
    wide = compare_columns.table(rows, wide=True)
    assert {"control_of", "recipe_hash", "mode", "prompt_set"} <= set(wide.columns)
    assert wide.columns.count("prompt_set") == 1
    ordered, titles = compare_columns.by_recipe(rows)
    assert titles == {0: "recipe spec_matrix.j2", 4: "recipe server_spec.j2"} and len(ordered) == len(rows)


def test_a_prompt_that_tells_one_arm_name_apart_is_never_given_up_and_is_cut():
    """One recipe run with four prompts (`--set prompt=...`): each arm four times. The prompt says which is which,
    so a narrow table keeps it (cut like the summary's cells) and gives up another column first."""
    prompts = ["Write a story about a lighthouse keeper who", "def area(w, h):", "Monday, Tuesday,", "Paris is"]
    base = [
        r
        for p in prompts
        for arm, extra in (("plain", {}), ("ngram", {"ngram_n": 8}))
        for r in runs(
            [100, 101], arm=arm, recipe_hash="r1", arm_params=json.dumps({"prompt": p, "draft_max": 16, **extra})
        )
    ]
    rows = side_by_side.compare(base, base)
    for row in rows:
        row["recipe_name"] = "real_demo.j2"
    shown = compare_columns.table(rows)
    assert "prompt" in shown.columns and "prompt" not in shown.droppable and "prompt" not in shown.hidden
    assert {r["prompt"] for r in rows} == {
        "Write a story about a ..",
        "def area(w, h):",
        "Monday, Tuesday,",
        "Paris is",
    }


def _side(samples, keys=()):
    return side_by_side.Side(arm="a", samples=list(samples), keys=list(keys))


def test_orch_compare_gives_no_verdict_where_no_test_can_reach_it():
    """Three runs a side measured apart: Mann-Whitney cannot go below p 0.1, so `orch compare` (strict) calls
    nothing and says what would; the loose rule bisect keeps still reads the intervals."""
    base, head = _side([98, 100, 102]), _side([130, 133, 136])
    [strict] = side_by_side.compare_sides({("t",): base}, {("t",): head}, strict=True)
    assert strict["verdict"] == side_by_side.NO_CHANGE and strict["test"].startswith("too few runs: 4 a side")
    assert strict["ratio"] == pytest.approx(1.33, abs=0.01)  # the figure is shown, only no verdict
    [loose] = side_by_side.compare_sides({("t",): base}, {("t",): head})
    assert (loose["test"], loose["verdict"]) == ("intervals", side_by_side.IMPROVEMENT)


def test_runs_of_one_interleaved_sweep_pair_by_repeat():
    # Drift moves both builds alike from repeat to repeat: unpaired the spread hides a steady 10% gain, paired not.
    keys = ["7:0", "7:1", "7:2"]
    base, head = _side([100, 140, 80], keys), _side([110, 154, 88], keys)
    [row] = side_by_side.compare_sides({("t",): base}, {("t",): head}, strict=True)
    assert row["test"] == "paired" and row["verdict"] == side_by_side.IMPROVEMENT
    assert row["ratio"] == pytest.approx(1.10) and row["ratio_low"] == pytest.approx(1.10)
    # No real difference: ratios scatter around 1 and the paired interval holds 1
    [same] = side_by_side.compare_sides({("t",): base}, {("t",): _side([103, 137, 81], keys)}, strict=True)
    assert same["test"] == "paired" and same["verdict"] == side_by_side.NO_CHANGE
    assert same["ratio_low"] < 1 < same["ratio_high"]


def test_compare_says_how_the_two_sides_were_timed():
    from datetime import datetime, timedelta

    from orchestrator.analyze.compare_builds import timing

    t0 = datetime(2026, 11, 25, 10, 0)
    base = [{"started": t0, "ended": t0 + timedelta(minutes=4)}]
    head = [{"started": t0 + timedelta(minutes=20), "ended": t0 + timedelta(minutes=24)}]
    apart = timing(base, head, [])
    assert apart.startswith("measured 16 min apart, not interleaved") and "--build BASE,HEAD" in apart
    assert timing(base, head, [7]).startswith("both builds ran interleaved in sweep 7")
    assert "not controlled" in timing([{"started": None, "ended": None}], head, [])


def test_a_value_that_is_not_a_number_concludes_nothing_and_fails_the_gate():
    """A NaN or infinite stored value (a results file edited by hand) was a traceback; it is a verdict of its own,
    which `orch compare --fail-on regression` fails on."""
    from orchestrator.cli.compare import GATED

    def group(samples):
        return {
            "params": "{}",
            "arm": "a",
            "recipe": "r",
            "runs": len(samples),
            "failed": 0,
            "skipped": 0,
            "samples": samples,
            "sample_keys": [f"1:{i}" for i in range(len(samples))],
        }

    base = side_by_side.sides_from_groups([group([40.0, 41.0, 39.0, 40.5])])
    for bad in (float("nan"), float("inf")):
        head = side_by_side.sides_from_groups([group([40.0, bad, 39.0, 40.5])])
        [row] = side_by_side.compare_sides(base, head, strict=True)
        assert row["verdict"] == side_by_side.NOT_FINITE and row["head_n"] == 3 and row["verdict"] in GATED
