"""The summary table's cells as people read them: shares as percentages, acceptance by position in a few
characters, long parameter values cut (analyze/summaries/draw draws them with tables.column_table)."""

from __future__ import annotations

import re

from orchestrator import tables
from orchestrator.analyze import quality

PARAM_WIDTH = 24  # a parameter value longer than this is cut in the default table
PERCENT_COLUMNS = ("acceptance", "seq_acceptance", "cv")  # shares of 1, shown as percentages
POSITIONS_SHOWN = 4
QUALITY_FORMATS = {"ppl": "{:.4g}", "dppl_pct": "{:+.2f}%", "kld": "{:.4g}", "same_top_p": "{:.1f}%"}


def _positions(rates: list[float]) -> str:
    """Acceptance by draft position as a table cell: 89/74/59/48% (+17), the count of positions left out after."""
    more = f" (+{len(rates) - POSITIONS_SHOWN})" if len(rates) > POSITIONS_SHOWN else ""
    return "/".join(f"{100 * r:.0f}" for r in rates[:POSITIONS_SHOWN]) + "%" + more


def display(rows: list[dict], columns: list[str], compact: bool) -> dict[str, list]:
    """The rows' values for people, by column (tables.column_table): shares as percentages; in the compact table
    a control reference as `control`. Only these columns (summary columns; parameters: param_value)."""
    shown = {c: [r.get(c) for r in rows] for c in columns}
    if "seq_acceptance" in columns:  # only bounded (drafts shorter than the window): the bounds
        shown["seq_acceptance"] = [
            tables.interval(100 * r["seq_acceptance_low"], 100 * r["seq_acceptance_high"])
            if v is None and r.get("seq_acceptance_low") is not None
            else v
            for v, r in zip(shown["seq_acceptance"], rows)
        ]
    for c in columns:
        if c in PERCENT_COLUMNS or c == "roofline_pct":
            scale = 1 if c == "roofline_pct" else 100  # a share of 1, or already a percentage
            shown[c] = [f"{scale * v:.1f}%" if isinstance(v, float) else v for v in shown[c]]
    for c, fmt in QUALITY_FORMATS.items():  # with its error where llama-perplexity gave one: "+0.53% ±0.12"
        if c in columns:
            err = quality.ERRORS.get(c)
            shown[c] = [
                None
                if v is None
                else fmt.format(v + 0.0)
                + (  # + 0.0: -0 (a base against itself) reads 0
                    f" ±{r[err]:.2g}" if err and r.get(err) is not None else ""
                )
                for v, r in zip(shown[c], rows)
            ]
    if "accept_rate_per_pos" in columns:  # percentages by draft position, the first POSITIONS_SHOWN of them
        shown["accept_rate_per_pos"] = [
            _positions(v) if isinstance(v, list) else v for v in shown["accept_rate_per_pos"]
        ]
    if "outputs_differ" in columns:  # differing of compared; a count alone where compared was not stored
        shown["outputs_differ"] = [
            f"{r['outputs_differ'] or 0}/{r['outputs_compared']}" if r.get("outputs_compared") else v
            for v, r in zip(shown["outputs_differ"], rows)
        ]
    if compact and "vs" in columns:
        controls = {(r["sweep"], r["arm"]) for r in rows if r.get("is_control")}
        # `control`, plus what tells a second control apart (control@tiny-qwen35-mtp)
        shown["vs"] = [
            "control" + re.sub(r"^[^@#]*", "", v) if (r["sweep"], v) in controls else v
            for v, r in zip(shown["vs"], rows)
        ]
    return shown


def texts(rows: list[dict], column: str, compact: bool = False) -> list[str]:
    """Column `column`'s cells as the summary table prints them, one text per row: the one place their digits are
    decided (`orch summary` and `orch report`'s arm table both draw these)."""
    return [tables.cell(v) for v in display(rows, [column], compact)[column]]


def param_value(value, compact: bool):
    """A parameter's value as its column shows it: in the compact table a long text is cut to PARAM_WIDTH."""
    return _cut(value) if compact and isinstance(value, str) and len(value) > PARAM_WIDTH else value


def _cut(text: str) -> str:
    """A value cut to PARAM_WIDTH characters: a path keeps its end (the file name), anything else its start."""
    keep = PARAM_WIDTH - 2
    return ".." + text[-keep:] if "/" in text else text[:keep] + ".."
