"""The why under the summary's table: per speculating arm, what was predicted before it ran (run/predictions)
beside what it measured, and where its time went by the build's own statistics (analyze/time_split):

    why             predicted           measured            tok/pass  draft ms/tok  verify  break-even
    draft-2         0.57x [0.44, 0.76]  0.60x [0.52, 0.70]      2.71          14.4    3.36  no acceptance can pay

One row per arm that speculates (drafted, or was predicted); a sweep's rows under its title where there are several.
The long form, a sentence per losing arm, is the verdict's `--explain`.
"""

from __future__ import annotations

from orchestrator import tables

COLUMNS = ["why", "predicted", "measured", "tok/pass", "draft ms/tok", "verify", "break-even"]
LEGEND = (
    "why: predicted before running beside measured, against each arm's reference ((loops): measured on text "
    "that loops, no win); tok/pass: tokens a "
    "target pass yielded; draft ms/tok: drafting time per generated token; verify: a pass besides "
    "drafting, in the reference's decode steps; break-even: the acceptance at which a pass pays for itself "
    "here (orch summary --explain says it in words)"
)
NO_ACCEPTANCE_PAYS = "no acceptance can pay"
WIDTH = 120  # the legend is wrapped within the summary table's width, however wide the terminal


def rows_of(rows: list[dict]) -> list[list[str]]:
    """One sweep's summary rows (analyze/summaries/compute) -> the why table's cells, a list per speculating arm."""
    out, looping = [], {r["arm"] for r in rows if r.get("looped")}
    for r in rows:
        split = r.get("time_split")
        speculated = (
            split or r.get("predicted") is not None or r.get("prediction_missing") or r.get("drafted") or r.get("idle")
        )  # idle: ok runs of a speculating arm that drafted nothing
        if not speculated or r["is_baseline"] or r.get("is_control") or (r.get("params") or {}).get("length_of"):
            continue
        cells = [
            r["arm"],
            _ratio(r.get("predicted"), r.get("predicted_low"), r.get("predicted_high")),
            _ratio(r.get("speedup"), r.get("speedup_low"), r.get("speedup_high"))
            + (" (loops)" if r.get("speedup") is not None and {r["arm"], r.get("vs")} & looping else ""),
            _number(split, "tokens_per_pass", 2),
            _number(split, "drafting_ms_per_token", 1),
            _number(split, "pass_target_steps", 2),
            break_even_text(split.get("break_even_acceptance") if split else None),
        ]
        if any(c != "-" for c in cells[1:]):  # an arm with nothing to show (no prediction, drafted nothing): the
            out.append(cells)  # verdict names it
    return out


def break_even_text(acceptance: float | None) -> str:
    """The acceptance at which a pass pays here; above 1 no acceptance can (never "break-even at 4939%")."""
    if acceptance is None:
        return "-"
    return NO_ACCEPTANCE_PAYS if acceptance > 1 else f"{max(acceptance, 0.0):.0%}"


def text(parts: list[tuple[str, list[list[str]]]], fmt: str = "table", width: int | None = None) -> str | None:
    """The table of several sweeps' why rows ((title, rows) each, in sweep order); None where no arm speculated."""
    parts = [(title, rows) for title, rows in parts if rows]
    if not parts:
        return None
    if fmt == "md":  # a table per sweep, under its title where there are several
        shown = [tables.markdown_columns(_by_column(rows), COLUMNS) for _, rows in parts]
        if len(parts) > 1:
            shown = [f"{tables.md_text(title)}\n\n{table}" for (title, _), table in zip(parts, shown)]
        return "\n" + "\n\n".join([*shown, LEGEND]) + "\n"  # blank lines around: Markdown's tables need them
    values = _by_column([row for _, rows in parts for row in rows])
    titles, at = {}, 0
    for title, rows in parts:
        titles[at] = title
        at += len(rows)
    table, _ = tables.column_table(values, COLUMNS, titles=titles if len(parts) > 1 else None, as_text=True)
    return table + "\n" + tables.fill(LEGEND, min(width or tables.terminal_width(), WIDTH))


def _by_column(rows: list[list[str]]) -> dict[str, list[str]]:
    return {c: [row[i] for row in rows] for i, c in enumerate(COLUMNS)}


def _ratio(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" + (f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else "")


def _number(split: dict | None, key: str, digits: int) -> str:
    value = (split or {}).get(key)
    return "-" if value is None else f"{value:.{digits}f}"
