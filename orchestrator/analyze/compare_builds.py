"""`orch compare` over the store: two resolved builds' runs, grouped in SQL, handed to side_by_side.compare_sides."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.analyze import compare_columns, side_by_side
from orchestrator.errors import NoSuchBuild
from orchestrator.store import compare_queries


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
    # The result: one row per test, carrying every parameter that differs; compare_columns.table's columns, wide.
    rows: list[dict]
    columns: list[str]
    # Each side's runs from one host, where one was named (None: every host's).
    base_host: str | None = None
    head_host: str | None = None
    # How the two sides were measured: interleaved in one sweep (drift hits both alike, runs paired), or apart
    # (how far apart, and that drift is not controlled); one sentence.
    timing: str | None = None
    interleaved: list[int] | None = None  # the sweeps holding both builds that were compared, where there are some


def compare_builds(
    con,
    base: str,
    head: str,
    *,
    recipe: str | None,
    threshold: float,
    sweep_ids: list[int] | None = None,
    base_host: str | None = None,
    head_host: str | None = None,
) -> Comparison:
    """Head vs base build (stored build names) per test, the rows carrying every parameter that differs. Sweeps that
    ran both builds interleaved are preferred: where there are some (and no sweeps were named), only they count."""
    crossed = [] if base == head else compare_queries.crossed_sweeps(con, base, head, recipe)
    if sweep_ids:
        crossed = [s for s in crossed if s in sweep_ids]
    elif crossed and not (base_host or head_host):
        sweep_ids = crossed
    base_groups, head_groups = compare_queries.compare_groups(
        con, [(base, base_host), (head, head_host)], recipe=recipe, sweep_ids=sweep_ids
    )
    if not base_groups or not head_groups:
        missing = base if not base_groups else head
        host = base_host if not base_groups else head_host
        if host:
            missing = f"{missing} on host {host}"
        raise NoSuchBuild(
            f"build {missing} has no stored runs{' of ' + recipe if recipe else ''}; run the recipe "
            f"on it first (orch run RECIPE --build {missing})"
        )
    rows = side_by_side.compare_sides(
        side_by_side.sides_from_groups(base_groups),
        side_by_side.sides_from_groups(head_groups),
        threshold=threshold,
        strict=True,
    )
    warning = None
    same = base == head and base_host == head_host
    if same:  # both sides are the same runs: any ratio is 1 by construction and would read as a result
        warning = (
            f"base and head are the same build ({base}): both sides are the same runs, so nothing is "
            f"compared and no ratio is shown; name two builds (orch builds lists them)"
        )
        for row in rows:
            row.update(
                ratio=None, ratio_low=None, ratio_high=None, p_value=None, test=None, verdict=side_by_side.SAME_BUILD
            )
    every = compare_columns.table(rows, wide=True)  # puts every differing parameter on the rows, for JSON
    return Comparison(
        base=base,
        head=head,
        threshold=threshold,
        same_build=same,
        warning=warning,
        rows=rows,
        columns=every.columns,
        base_host=base_host,
        head_host=head_host,
        timing=None if same else timing(base_groups, head_groups, crossed),
        interleaved=crossed or None,
    )


def timing(base_groups: list[dict], head_groups: list[dict], crossed: list[int]) -> str:
    """How the sides were measured, in one sentence: interleaved in one sweep, or apart and how far."""
    if crossed:
        return (
            f"both builds ran interleaved in sweep{'s' if len(crossed) > 1 else ''} "
            f"{', '.join(map(str, crossed))} (runs alternating, paired by repeat): drift on the machine hit both "
            f"alike"
        )
    spans = [
        (
            min(filter(None, (g["started"] for g in groups)), default=None),
            max(filter(None, (g["ended"] for g in groups)), default=None),
        )
        for groups in (base_groups, head_groups)
    ]
    (b_start, b_end), (h_start, h_end) = spans
    if not (b_start and b_end and h_start and h_end):
        return "measured apart, not interleaved: drift on the machine is not controlled"
    gap = max(h_start - b_end, b_start - h_end).total_seconds()
    when = f"{_duration(gap)} apart" if gap > 0 else "in overlapping spans, but in separate sweeps"
    return (
        f"measured {when}, not interleaved: drift on the machine (load, heat, other processes) is not controlled "
        f"and can read as a change; `orch run RECIPE --build BASE,HEAD` interleaves them in one sweep"
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"
