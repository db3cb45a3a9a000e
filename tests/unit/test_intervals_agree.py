"""One comparison, one interval: `orch summary`, `orch compare` and `orch tune` put the same 95% interval on the
same paired runs, each read from a real DuckDB file (the store's migrations and writes) through its own path, all
of them from analyze/stats, whose t quantile is scipy's at the exact degrees of freedom."""

import math

import pytest
from scipy import stats as scipy_stats

from orchestrator import store
from orchestrator.analyze import stats, summaries
from orchestrator.analyze.compare_builds import compare_builds
from orchestrator.store import tune_queries
from orchestrator.tune import answer, race

# Three repeats (df 2, where a rounded or tabulated quantile shows most): the control and the arm of each repeat pair.
BASELINE = [100.0, 104.0, 97.0]
CONTROL = [95.0, 101.0, 90.0]
DRAFT = [130.0, 128.0, 121.0]
CONTROL_ARM = "control:llama-speculative-simple"


def _sweep(con, build: str = "b", recipe_hash: str = "h") -> int:
    return store.create_sweep(
        con,
        {
            "recipe_path": "recipes/x.j2",
            "recipe_hash": recipe_hash,
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 3,
            "build_name": build,
            "status": "done",
        },
    )


def _run(con, sweep: int, arm: str, rep: int, tps: float, **fields) -> None:
    run = store.insert_run(
        con,
        {
            "sweep_id": sweep,
            "arm": arm,
            "is_baseline": False,
            "repeat_index": rep,
            "mode": "cli",
            "status": "ok",
            **fields,
        },
    )
    con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [run, tps])


def _arm_against_its_control(con) -> int:
    """A sweep as `orch run` stores one: baseline, the arm's control (same program, drafting nothing), the arm."""
    sweep = _sweep(con)
    for rep in range(3):
        _run(con, sweep, "baseline", rep, BASELINE[rep], is_baseline=True, params={})
        _run(con, sweep, CONTROL_ARM, rep, CONTROL[rep], is_control=True, params={"control_of": "draft"})
        _run(
            con,
            sweep,
            "draft",
            rep,
            DRAFT[rep],
            reference_arm=CONTROL_ARM,
            params={"draft_max": 8},
            draft_sha256="d" * 64,
        )
    return sweep


def _builds(con, *names: str) -> None:
    for name in names:
        store.record_build(
            con,
            {
                "id": f"{name}-id",
                "name": name,
                "commit": name,
                "upstream_commit": name,
                "backend": "cpu",
                "status": "ok",
                "dir": f"builds/{name}",
            },
        )


def _two_builds_interleaved(con) -> None:
    """The same speeds as two builds of one test in one sweep (`orch run --build base,head`): base's runs are the
    control's, head's the arm's, paired by repeat as the summary pairs the arm with its control."""
    _builds(con, "base", "head")
    sweep = _sweep(con, build="base", recipe_hash="crossed")
    for rep in range(3):
        for build, speeds in (("base", CONTROL), ("head", DRAFT)):
            _run(con, sweep, f"{build}/x", rep, speeds[rep], build_id=f"{build}-id", params={"draft_max": 8})


def _by_hand(pairs: list[tuple[float, float]]) -> tuple[float, float, float]:
    """exp of the mean log ratio and of its t-interval, scipy's quantile at n - 1."""
    logs = [math.log(h / b) for b, h in pairs]
    n, mean = len(logs), sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = float(scipy_stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def test_summary_compare_and_tune_give_one_interval_for_the_same_pairs(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = _arm_against_its_control(con)
    _two_builds_interleaved(con)

    row = next(r for r in summaries.rows(con, [sweep]) if r["arm"] == "draft")
    assert row["vs"] == CONTROL_ARM and row["ref_pairs"] == 3
    shown = (row["speedup"], row["speedup_low"], row["speedup_high"])

    (compared,) = compare_builds(con, "base", "head", recipe=None, threshold=0.05).rows
    assert compared["test"] == "paired"
    by_compare = (compared["ratio"], compared["ratio_low"], compared["ratio_high"])

    runs = tune_queries.race_runs(con, [sweep])
    like_for_like = race.control_scores(runs, {"draft"}, "baseline")
    tuned = answer.against_control(like_for_like, "draft")
    by_tune = (tuned.ratio, tuned.ci_low, tuned.ci_high)

    expected = _by_hand(list(zip(CONTROL, DRAFT)))
    for got in (shown, by_compare, by_tune):
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert by_compare == pytest.approx(shown, rel=1e-9, abs=1e-9) and by_tune == pytest.approx(
        shown, rel=1e-9, abs=1e-9
    )
    # What each prints: the summary's cell and tune's figure say the same two decimals.
    assert row["speedup_ci95"] == f"[{shown[1]:.2f}, {shown[2]:.2f}]"
    assert answer.figure(tuned).endswith(row["speedup_ci95"])


def test_the_unpaired_interval_takes_the_quantile_at_welchs_fractional_df(tmp_path):
    """Two builds measured apart: `orch compare`'s ratio of means, its interval by the delta method on logs with the
    t quantile at the Welch-Satterthwaite df itself (here about 3.3: no table has it)."""
    con = store.connect(tmp_path / "r.duckdb")
    _builds(con, "base", "head")
    for build, speeds in (("base", CONTROL), ("head", [130.0, 118.0, 124.0])):
        sweep = _sweep(con, build=build)
        for rep in range(3):
            _run(con, sweep, "x", rep, speeds[rep], build_id=f"{build}-id", params={"draft_max": 8})
    (compared,) = compare_builds(con, "base", "head", recipe=None, threshold=0.05).rows

    b, h = stats.describe(CONTROL), stats.describe([130.0, 118.0, 124.0])
    vb, vh = (b.stdev / b.mean) ** 2 / 3, (h.stdev / h.mean) ** 2 / 3
    df = (vb + vh) ** 2 / (vb**2 / 2 + vh**2 / 2)
    assert 2 < df < 4 and df != round(df)
    half = float(scipy_stats.t.ppf(0.975, df)) * math.sqrt(vb + vh)
    ratio = h.mean / b.mean
    assert (compared["ratio"], compared["ratio_low"], compared["ratio_high"]) == pytest.approx(
        (ratio, ratio * math.exp(-half), ratio * math.exp(half)), rel=1e-12
    )


@pytest.mark.parametrize("df", [1, 2, 2.5, 3.956, 7.3, 30, 35.5, 119.5, 121, 1000.25])
def test_the_t_quantile_is_scipys_at_the_exact_df(df):
    assert stats.t975(df) == float(scipy_stats.t.ppf(0.975, df))
