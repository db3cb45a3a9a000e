"""How the budget shapes the next round of a race (tune/driver): every survivor once when it fits, else the most
promising that fit (successive halving), else none: the race ends. No --budget: what the grid would cost."""

import random
from dataclasses import replace
from types import SimpleNamespace

from orchestrator.tune.driver import _next_round
from orchestrator.tune.race_settings import Budget, RaceSettings, RaceState, grid_cost, with_default
from orchestrator.tune.rules import GRID_REPEATS, Rules

BASE = "baseline"


def _race(candidates: int, budget_runs: int | None) -> RaceSettings:
    """A race of `candidates` drafts, each measured against one control, with plain decoding as the baseline."""

    def arm(name, reference=None, **flags):
        return SimpleNamespace(
            arm=SimpleNamespace(
                name=name,
                reference=reference,
                is_baseline=flags.get("base", False),
                is_control=flags.get("control", False),
            )
        )

    arms = [arm(BASE, base=True), arm("control", BASE, control=True)]
    arms += [arm(f"c{i}", "control") for i in range(candidates)]
    return RaceSettings(
        tune_id=1,
        workload="w",
        prepared=SimpleNamespace(arms=arms),
        rules=Rules(),
        budget=Budget(runs=budget_runs),
        timeout=0,
        argv=[],
    )


def _spent(n: int) -> list[dict]:
    return [{"status": "ok", "planned": True, "wall_s": 1.0} for _ in range(n)]


def test_a_round_that_fits_runs_every_survivor():
    r = _race(12, budget_runs=100)
    ranked = [f"c{i}" for i in range(12)]
    blocks = _next_round(r, _spent(30), ranked, random.Random(1))
    assert sorted(n for b in blocks for n in b) == sorted(ranked)


def test_a_short_budget_runs_the_most_promising_that_fit_and_none_when_not_even_one_fits():
    r = _race(12, budget_runs=40)
    ranked = [f"c{i}" for i in range(12)]  # best first
    blocks = _next_round(r, _spent(30), ranked, random.Random(1))  # 10 runs left: one block of 8, plain, control
    assert sorted(n for b in blocks for n in b) == sorted(ranked[:8])
    assert _next_round(r, _spent(38), ranked, random.Random(1)) == []  # 2 left: a block needs plain, control, one
    assert sorted(n for b in _next_round(r, _spent(37), ranked, random.Random(1)) for n in b) == ["c0"]


def test_without_a_budget_a_race_spends_at_most_what_the_grid_would_and_a_given_budget_stands():
    r = _race(12, budget_runs=None)
    grid = grid_cost(r, RaceState())[0]
    assert grid == (12 + 1 + 1) * GRID_REPEATS  # twelve drafts, plain decoding and their control
    r = replace(r, budget=with_default(r.budget, grid_runs=grid))
    ranked = [f"c{i}" for i in range(12)]
    assert _next_round(r, _spent(grid), ranked, random.Random(1)) == []  # the grid's runs spent: the race ends
    assert with_default(Budget(seconds=60.0), grid_runs=grid) == Budget(seconds=60.0)
    assert with_default(Budget(runs=500), grid_runs=grid) == Budget(runs=500)


def test_a_run_cut_short_by_a_stop_counts_against_the_budget():
    """A tune stopped (Ctrl-C, a kill) and resumed spent the run in flight: three stops must not buy three runs more
    than the budget (a resumed tune once spent 123 runs of 120)."""
    r = _race(12, budget_runs=40)
    ranked = [f"c{i}" for i in range(12)]
    cut = {"status": "interrupted", "planned": True, "wall_s": None}
    assert _next_round(r, [*_spent(37), cut], ranked, random.Random(1)) == []  # 38 spent: no block of three fits
    skipped = {"status": "skipped", "planned": True, "wall_s": None}  # never launched: nothing spent
    assert _next_round(r, [*_spent(37), skipped], ranked, random.Random(1)) != []
