"""`orch tune --dry-run`: what a tune would race, checked as a start checks it (build, space, every workload's
candidates, the budget against one round), with nothing run and nothing stored: per workload the candidates, those
that cannot run here and why, the runs of round 1, what the brute-force grid would cost, and the budget in force."""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.tune import answer, decisions, driver, race_settings
from orchestrator.tune.request import TuneRequest
from orchestrator.tune.session import Checked, check


@dataclass
class Preview:
    workload: str
    candidates: list[str]  # plain decoding first
    infeasible: dict[str, str] = field(default_factory=dict)  # candidate -> why it cannot run here
    first_round_runs: int = 0
    grid_runs: int = 0
    budget: str = ""
    notes: list[str] = field(default_factory=list)  # what the space left out or sampled


def preview(request: TuneRequest) -> list[Preview]:
    found: Checked = check(request)
    out = []
    for file, prepared in zip(found.files, found.prepared.values()):
        s = race_settings.RaceSettings(
            tune_id=0,
            workload=answer.workload_name(file),
            prepared=prepared,
            rules=request.rules,
            budget=request.budget,
            timeout=0,
            argv=[],
        )
        left = {d.candidate: d for d in driver.infeasible(prepared)}
        stopped = {name: decisions.words(why, event=False) for name, why in left.items()}
        state = race_settings.RaceState(left=left)
        grid = race_settings.grid_cost(s, state)[0]
        budget = race_settings.with_default(request.budget, grid_runs=grid)
        said = f"{budget.runs} runs" if budget.runs is not None else f"{budget.seconds:g} s"
        out.append(
            Preview(
                workload=s.workload,
                candidates=[s.baseline, *(c for c in s.candidates if c != s.baseline)],
                infeasible=stopped,
                first_round_runs=driver.first_round_runs(prepared, request.rules),
                grid_runs=grid,
                budget=said
                + ("" if request.budget.runs or request.budget.seconds else " (the grid's, no --budget given)"),
                notes=list(found.notes),
            )
        )
    return out
