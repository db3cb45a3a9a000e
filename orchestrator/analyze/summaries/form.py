"""One sweep's summary in the form every output of `orch summary` is drawn from, and the summaries of several
sweeps held together (`Summaries`): computed from the rows of summaries/compute.py, or read back where they are
kept (summaries/kept.py), and drawn the same way either way (summaries/draw.py).

A sweep's summary holds its arms as the JSON and CSV rows those outputs write, its table cells by column (each cell
as the table shows it), the facts the default table's choice of columns reads, its warning lines and its
verdict. Every one of them depends on that sweep's rows alone, so the summaries of many sweeps are joined, never
recomputed together: the JSON of every sweep is their JSON rows one after the other, and the table's columns
are their cells one after the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Protocol

import orjson

from orchestrator import json_text, tables
from orchestrator.analyze import cells, verdict, why_table
from orchestrator.analyze.summaries.compute import TABLE_COLUMNS
from orchestrator.analyze.warning_kinds import WARNING_KINDS
from orchestrator.errors import DamagedSchema

COMPACT_VS = "vs:compact"  # the `vs` column as the default table shows it (a control named `control`)
PARAMS = "params"  # the cells column holding each arm's parameters, as canonical JSON text
CELL_COLUMNS = [*TABLE_COLUMNS, COMPACT_VS, PARAMS]  # the cells kept of a sweep that has an arm
NO_ARMS_VERDICT = "verdict: no sweep stored yet; run a recipe first (orch run RECIPE)"


@dataclass
class SweepSummary:
    sweep: int
    arms: int
    facts: dict  # present: columns some arm has a value in; prefill; hosts; title; host_title; warned
    warnings: list[str] | None  # "sweep 3, arm x (code): message", the full texts (--explain); None: kept, unread
    verdict: str | None  # None: no arm
    csv_header: str | None = ""  # the CSV's header line (the same in every sweep: every row has the same keys);
    # None: kept, unread
    rows: list[dict] | None = None  # computed now: its rows (None: kept in the file, read from there)
    _made: dict = field(default_factory=dict, repr=False, compare=False)  # row texts and cells made from rows

    @property
    def computed(self) -> bool:
        return self.rows is not None

    def row_text(self, kind: str) -> str:
        """Its rows as `rows_json` (json_text.json_rows) or `rows_csv` (tables.csv_lines), made when first asked."""
        if kind not in self._made:
            self._made[kind] = (
                (json_text.json_rows(self.rows).decode() if kind == "rows_json" else tables.csv_lines(self.rows))
                if self.rows
                else ""
            )
        return self._made[kind]

    def cells(self, name: str) -> list[str]:
        """Its arms' cells in column `name` (a TABLE_COLUMNS name, COMPACT_VS or PARAMS), made when first asked."""
        if name not in self._made:
            rows = self.rows or []
            if name == PARAMS:
                self._made[name] = [_text(r["params"]) for r in rows]
            else:
                column, compact = ("vs", True) if name == COMPACT_VS else (name, False)
                self._made[name] = cells.texts(rows, column, compact)
        return self._made[name]

    def stored(self) -> dict:
        """The summary as store/sweep_summaries.keep takes it (text columns): everything made."""
        return {
            "sweep_id": self.sweep,
            "arms": self.arms,
            "rows_json": self.row_text("rows_json"),
            "rows_csv": self.row_text("rows_csv"),
            "csv_header": self.csv_header,
            "facts": json_text.dumps(self.facts).decode(),
            "warnings": "\n".join(self.warnings),
            "verdict": self.verdict,
            "cells": {name: json_text.dumps(self.cells(name)).decode() for name in (CELL_COLUMNS if self.arms else [])},
        }


def from_rows(rows: list[dict]) -> list[SweepSummary]:
    """The summaries of summaries/compute rows (in sweep order), one per sweep that has an arm."""
    out, start = [], 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or rows[end]["sweep"] != rows[start]["sweep"]:
            out.append(_summary(rows[start:end]))
            start = end
    return out


def no_arms(sweep_id: int) -> SweepSummary:
    """The summary of a sweep without an arm (no run stored)."""
    return SweepSummary(sweep_id, 0, {"present": [], "prefill": False, "hosts": []}, [], None, "", [])


def _summary(rows: list[dict]) -> SweepSummary:
    first = rows[0]
    whole, gist = verdict.both(rows)
    title = f"sweep {first['sweep']}: {first['recipe']} on {verdict.builds_of(rows)}"
    facts = {
        "present": [c for c in TABLE_COLUMNS if any(r.get(c) is not None for r in rows)],
        "prefill": any(r["decode_tps"] is None and r.get("prompt_tps") for r in rows),  # bench mode's tests
        "hosts": list(dict.fromkeys(r.get("host_id") or r.get("host") for r in rows)),
        "title": title,
        "host_title": f"{title}, host {first['host']}" + (f" ({first['gpu']})" if first.get("gpu") else ""),
        # [code, arm] of each warning, in order: what the lines under a table name (never parsed back from
        # the full texts: a summary of every sweep holds 40,000)
        "warned": [
            [code, r["arm"]]
            for r in rows
            for code, _ in zip((r.get("warnings") or "").split(","), r.get("warning_messages", []))
        ],
        "gist": gist,  # the verdict in a sentence or two; `verdict` is it whole (--explain)
        "why": why_table.rows_of(rows),
    }
    return SweepSummary(
        first["sweep"],
        len(rows),
        facts,
        [
            f"sweep {r['sweep']}, arm {r['arm']} ({code}): {msg}"
            for r in rows
            for code, msg in zip((r.get("warnings") or "").split(","), r.get("warning_messages", []))
        ],
        whole,
        tables.csv_header(list(first)),
        rows,
    )


def _text(params: dict) -> str:
    return json_text.dumps(params, option=orjson.OPT_NON_STR_KEYS).decode()


@lru_cache(maxsize=4096)
def param_dict(text: str) -> dict:
    """An arm's parameters from their canonical text: one dict per distinct text, shared (read, never changed)."""
    return orjson.loads(text)


class Kept(Protocol):
    """How Summaries reads what a results file keeps (summaries/kept.KeptReader is it)."""

    def rows(self, sweeps: list[int], kind: str) -> list[str]: ...

    def warnings(self, sweeps: list[int]) -> dict[int, list[str]]: ...

    def start(self, sweeps: list[int], names: list[str]) -> None: ...

    def cells(self, sweeps: list[int], names: list[str]) -> dict[str, list]: ...


@dataclass
class Summaries:
    """The summaries of several sweeps, in sweep order, as one table: `column(name)` is that column's cells for
    every arm. Kept summaries' rows, cells and warnings are read from the file when first asked for, through
    `kept` (summaries/kept.KeptReader: the open connection, and a read it may have started early)."""

    parts: list[SweepSummary]
    kept: Kept | None = None  # None: every part computed now
    _columns: dict[str, list[str]] = field(default_factory=dict, repr=False)  # read or made, by name

    @cached_property
    def arms(self) -> int:
        return sum(p.arms for p in self.parts)

    @cached_property
    def with_arms(self) -> list[SweepSummary]:
        """The sweeps that have an arm, in order: the table's rows are theirs, one after the other."""
        return [p for p in self.parts if p.arms]

    def json_chunks(self) -> list[str]:
        """The JSON rows of each sweep that has an arm, in sweep order (json_text.json_rows: ",\\n" within one)."""
        return self._row_texts("rows_json")

    def csv_chunks(self) -> list[str]:
        """The CSV (tables.render's) in pieces, a line ending between them: a header line, then each sweep's lines,
        in sweep order."""
        parts = self.with_arms
        if not parts:
            return [""]
        first = parts[0]
        header = first.csv_header if first.csv_header is not None else self.kept.rows([first.sweep], "csv_header")[0]
        return [header, *self._row_texts("rows_csv")]

    def _row_texts(self, kind: str) -> list[str]:
        ids = [p.sweep for p in self.with_arms if not p.computed]
        kept = iter(self.kept.rows(ids, kind) if ids else [])
        return [p.row_text(kind) if p.computed else next(kept) for p in self.with_arms]

    def column(self, name: str) -> list[str]:
        """Column `name` (a TABLE_COLUMNS name, COMPACT_VS or PARAMS) for every arm, in row order."""
        if name not in self._columns:
            self.load([name])
        return self._columns[name]

    def prefetch(self, names: list[str]) -> None:
        """Start reading these columns' kept cells on another thread (DuckDB lets Python run while it reads): what
        is drawn before the table is made meanwhile, and load takes what was read (benchmarks/store_scale.py)."""
        kept = [p.sweep for p in self.with_arms if not p.computed]
        names = [n for n in dict.fromkeys(names) if n not in self._columns]
        if kept and names and self.kept:
            self.kept.start(kept, names)

    def load(self, names: list[str]) -> None:
        """Read these columns for every arm at once (one query for the kept sweeps: their cells one after the
        other, cut by each sweep's arms)."""
        names = [n for n in dict.fromkeys(names) if n not in self._columns]
        kept = [p for p in self.with_arms if not p.computed]
        read = self.kept.cells([p.sweep for p in kept], names) if kept and names else {}
        kept_arms = sum(p.arms for p in kept)
        for name in names:
            stored = read.get(name, [])
            if len(stored) != kept_arms:
                raise DamagedSchema(
                    f"the kept summaries' {name!r} cells are not one per arm (sweep_summary_cells "
                    f"changed by hand?): `orch repair` keeps them anew"
                )
            if len(kept) == len(self.with_arms):  # every sweep kept: the column as read
                self._columns[name] = stored
                continue
            column, at = [], 0
            for p in self.with_arms:
                column += p.cells(name) if p.computed else stored[at : at + p.arms]
                at += 0 if p.computed else p.arms
            self._columns[name] = column

    def present(self, column: str) -> bool:
        """Whether some arm has a value in this column."""
        return column in self._present

    @cached_property
    def _present(self) -> set[str]:
        return {c for p in self.parts for c in p.facts["present"]}

    def prefill(self) -> bool:
        return any(p.facts["prefill"] for p in self.parts)

    def hosts(self) -> set:
        return {h for p in self.parts for h in p.facts["hosts"]}

    def titles(self) -> dict[int, str]:
        """Where the arms are of several sweeps, a line above each sweep's first arm: the sweep, its recipe and
        build (and host where there are several). One sweep's rows need none: the verdict names it."""
        key = "host_title" if len(self.hosts()) > 1 else "title"
        titles, start = {}, 0
        for part in self.with_arms:
            titles[start] = part.facts[key]
            start += part.arms
        return titles if len(titles) > 1 else {}

    def warning_lines(self) -> list[str]:
        """Every warning's full text, a line each (`orch summary --explain`)."""
        unread = [p.sweep for p in self.parts if p.warnings is None]
        kept = self.kept.warnings(unread) if unread else {}
        return [line for p in self.parts for line in (kept.get(p.sweep, []) if p.warnings is None else p.warnings)]

    def warning_gists(self) -> list[str]:
        """One line per warning kind, naming its sweeps' arms, with what the kind means in a few words: what a
        person reads under the table (the full texts: warning_lines)."""
        arms: dict[str, dict[int, list[str]]] = {}
        for p in self.parts:
            for code, arm in p.facts.get("warned", ()):
                arms.setdefault(code, {}).setdefault(p.sweep, []).append(arm)
        gists = {k.code: k.gist for k in WARNING_KINDS}
        return [
            f"{code}: {gists.get(code, '')} ("
            + "; ".join(f"sweep {sweep}: {', '.join(dict.fromkeys(names))}" for sweep, names in by_sweep.items())
            + ")"
            for code, by_sweep in arms.items()
        ]

    def verdict_lines(self, explain: bool = False) -> list[str]:
        """One line per sweep: its verdict in a sentence or two (analyze/verdict.gist), or whole (explain)."""
        lines = [
            f"verdict: {p.verdict if explain else p.facts.get('gist', p.verdict)}" for p in self.parts if p.verdict
        ]
        return lines or [NO_ARMS_VERDICT]

    def why_text(self, fmt: str = "table", width: int | None = None) -> str | None:
        """The why table of every sweep's speculating arms (analyze/why_table); None where none speculated."""
        return why_table.text([(p.facts["title"], p.facts.get("why", [])) for p in self.with_arms], fmt, width)
