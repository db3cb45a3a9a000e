"""`orch compare` over the store: two resolved builds' runs, grouped in SQL, handed to compare.compare_sides."""

from __future__ import annotations

from orchestrator.analyze import compare
from orchestrator.errors import NoSuchBuild
from orchestrator.store import queries


def compare_builds(con, base: str, head: str, *, recipe: str | None, threshold: float,
                   sweep_ids: list[int] | None = None) -> dict:
    """Head vs base build (stored build names) per test; {"base", "head", "threshold", "rows", "columns"}."""
    base_groups = queries.compare_groups(con, base, recipe=recipe, sweep_ids=sweep_ids)
    head_groups = queries.compare_groups(con, head, recipe=recipe, sweep_ids=sweep_ids)
    if not base_groups or not head_groups:
        missing = base if not base_groups else head
        raise NoSuchBuild(f"build {missing} has no stored runs{' of ' + recipe if recipe else ''}; run the recipe "
                          f"on it first (orch run RECIPE --build {missing})")
    rows = compare.compare_sides(compare.sides_from_groups(base_groups), compare.sides_from_groups(head_groups),
                                 threshold=threshold)
    rows, columns = compare.table(rows)
    return {"base": base, "head": head, "threshold": threshold, "rows": rows, "columns": columns}
