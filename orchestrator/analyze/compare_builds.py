"""`orch compare` over the store: two resolved builds' runs, grouped in SQL, handed to side_by_side.compare_sides."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.analyze import side_by_side
from orchestrator.errors import NoSuchBuild
from orchestrator.store import queries


@dataclass(frozen=True)
class Comparison:
    """Head vs base build per test, as compare_builds found it; `orch compare --format json` prints its fields in
    this order, with the hosts' differences after them."""

    # What was compared: two stored builds.
    base: str
    head: str
    threshold: float  # the smallest change worth a verdict
    same_build: bool  # both sides are the same runs: no ratio, every row's verdict side_by_side.SAME_BUILD
    warning: str | None  # why nothing was compared (the same build on both sides); None otherwise
    # The result: one row per test, carrying every parameter that differs; side_by_side.table's columns, wide.
    rows: list[dict]
    columns: list[str]
    # Each side's runs from one host, where one was named (None: every host's).
    base_host: str | None = None
    head_host: str | None = None


def compare_builds(con, base: str, head: str, *, recipe: str | None, threshold: float,
                   sweep_ids: list[int] | None = None, base_host: str | None = None,
                   head_host: str | None = None) -> Comparison:
    """Head vs base build (stored build names) per test, the rows carrying every parameter that differs."""
    base_groups = queries.compare_groups(con, base, recipe=recipe, sweep_ids=sweep_ids, host=base_host)
    head_groups = queries.compare_groups(con, head, recipe=recipe, sweep_ids=sweep_ids, host=head_host)
    if not base_groups or not head_groups:
        missing = base if not base_groups else head
        host = base_host if not base_groups else head_host
        if host:
            missing = f"{missing} on host {host}"
        raise NoSuchBuild(f"build {missing} has no stored runs{' of ' + recipe if recipe else ''}; run the recipe "
                          f"on it first (orch run RECIPE --build {missing})")
    rows = side_by_side.compare_sides(side_by_side.sides_from_groups(base_groups),
                                      side_by_side.sides_from_groups(head_groups),
                                      threshold=threshold)
    warning = None
    same = base == head and base_host == head_host
    if same:  # both sides are the same runs: any ratio is 1 by construction and would read as a result
        warning = (f"base and head are the same build ({base}): both sides are the same runs, so nothing is "
                   f"compared and no ratio is shown; name two builds (orch builds lists them)")
        for row in rows:
            row.update(ratio=None, ratio_low=None, ratio_high=None, p_value=None, test=None,
                       verdict=side_by_side.SAME_BUILD)
    every = side_by_side.table(rows, wide=True)  # puts every differing parameter on the rows, for JSON
    return Comparison(base=base, head=head, threshold=threshold, same_build=same, warning=warning, rows=rows,
                      columns=every.columns, base_host=base_host, head_host=head_host)
