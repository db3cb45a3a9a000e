"""The summary as people read it: the arm table (text or Markdown) drawn from sweep summaries (analyze/
summaries.Summaries, computed now or kept), its warning lines and one verdict per sweep.

By default the table shows summary.DEFAULT_COLUMNS and the parameters that tell arms apart, fitted to WIDTH
characters (parameters given up first, then GIVE_UP), each sweep's rows under a line naming it where there are
several, and a last line naming what was left out; --wide shows every column, --columns picks.
"""

from __future__ import annotations

import json

from orchestrator import tables
from orchestrator.analyze import cells, quality
from orchestrator.analyze.summaries.compute import DEFAULT_COLUMNS, GIVE_UP, RATIO_COLUMNS, TABLE_COLUMNS, WIDTH
from orchestrator.analyze.summaries.form import COMPACT_VS, PARAMS, Summaries, from_rows, param_dict
from orchestrator.errors import InvalidOption


def summary_text(
    table: Summaries | list[dict],
    fmt: str = "table",
    *,
    columns: list[str] | None = None,
    wide: bool = False,
    explain: bool = False,
    width: int | None = None,
) -> str:
    """The table, the why table of its speculating arms (analyze/why_table), one line per warning kind naming its
    arms (explain: every warning's full text, a line each) and a verdict per sweep (explain: whole): what `orch
    summary` prints, and `orch run` at its end. Lines under a table are wrapped to
    `width` (the terminal's; 80 columns off a terminal)."""
    table = _summaries(table)
    table.prefetch(_loaded(table, fmt, columns, wide))  # read while the lines under the table are made
    warned = [f"warning: {line}" for line in (table.warning_lines() if explain else table.warning_gists())]
    if warned and not explain:
        warned[-1] += "; the full texts: orch summary --explain"
    prose = warned + table.verdict_lines(explain)
    if fmt == "table":  # prose fits the terminal (80 columns off one); Markdown and machine formats stay unwrapped
        width = width or tables.terminal_width()  # asked once, not once a line: a summary can wrap 40,000
        prose = [tables.fill(line, width) for line in prose]
    if fmt == "md":  # the lines under a Markdown table are Markdown too: names in them stay text
        prose = [tables.md_text(line) for line in prose]
    why = table.why_text(fmt, width)  # predicted beside measured, and where each drafting arm's time went
    return "\n".join([table_text(table, fmt, columns=columns, wide=wide), *([why] if why else []), *prose])


def _summaries(table: Summaries | list[dict]) -> Summaries:
    return table if isinstance(table, Summaries) else Summaries(from_rows(table))


class Parameters:
    """The arms' parameters: which of them tell arms apart (`varying`: two values where set, or set and unset
    within one sweep; a parameter only another recipe has is no difference between arms), and which of those no
    sweep sets in more than one arm (`lone`: a control's control_of, the one draft arm's draft)."""

    def __init__(self, table: Summaries):
        self.texts = table.column(PARAMS)
        # Decided on the distinct parameter sets and the sets of them that occur together in a sweep, not per arm
        self.distinct = {t: param_dict(t) for t in dict.fromkeys(self.texts)}
        start = 0
        self.per_sweep: list[frozenset[str]] = []  # each sweep's parameter sets, in table order
        for part in table.with_arms:
            self.per_sweep.append(frozenset(self.texts[start : start + part.arms]))
            start += part.arms
        shapes = set(self.per_sweep)
        self.names = list(dict.fromkeys(k for p in self.distinct.values() for k in p))
        # Per parameter, each set's value as a comparable key (a set without it has none)
        self.keys = {k: {t: _key(p[k]) for t, p in self.distinct.items() if k in p} for k in self.names}
        self.varying = [k for k in self.names if self._varies(shapes, k)]
        # One value in every sweep, another between sweeps (a --set prompt, a workload): what tells apart arms of
        # one name in several sweeps, never given up or left out (see sweep_values).
        self.between_sweeps = [
            k
            for k in self.varying
            if len(self.per_sweep) > 1 and all(len({self.keys[k].get(t) for t in shape}) == 1 for shape in shapes)
        ]
        self.lone = {
            k
            for k in self.varying
            if k not in self.between_sweeps and all(sum(k in self.distinct[t] for t in shape) <= 1 for shape in shapes)
        }

    def sweep_values(self, index: int) -> str:
        """The between-sweep parameters of the index-th sweep, as a title line adds them: "workload=code_edit,
        prompt=# Before:\ndef are.."."""
        shape = self.per_sweep[index]
        some = next(iter(shape))
        values = [(k, self.distinct[some].get(k)) for k in self.between_sweeps]
        return ", ".join(f"{k}={tables.cell(cells.param_value(v, True))}" for k, v in values if v is not None)

    def _varies(self, shapes: set[frozenset[str]], name: str) -> bool:
        key = self.keys[name]
        return len(set(key.values())) > 1 or any(len({key.get(t) for t in shape}) > 1 for shape in shapes)

    def cells(self, name: str, compact: bool) -> list[str]:
        """Parameter `name`'s cell for every arm (cut to cells.PARAM_WIDTH in the compact table)."""
        by_text = {t: tables.cell(cells.param_value(p.get(name), compact)) for t, p in self.distinct.items()}
        return [by_text[t] for t in self.texts]


def _key(value) -> str | tuple[str]:
    """A parameter's value as a set member: a text as it is (most values), anything else its JSON in a tuple (so
    the number 1, the text "1" and true stay three values)."""
    return value if type(value) is str else (json.dumps(value, sort_keys=True, default=str),)


def table_text(
    table: Summaries | list[dict],
    fmt: str = "table",
    *,
    columns: list[str] | None = None,
    wide: bool = False,
    width: int = WIDTH,
) -> str:
    """The arm table (table or md). `wide`: every column; `columns`: those (picked_columns)."""
    table = _summaries(table)
    compact = not (columns or wide)
    table.load(_loaded(table, fmt, columns, wide))
    params = Parameters(table)
    if columns:
        chosen, droppable, hidden = list(columns), [], []
    elif wide:
        chosen, droppable, hidden = _with_params(TABLE_COLUMNS, params.varying), [], []
    else:
        shown_params = [k for k in params.varying if k not in params.lone]
        chosen = _with_params(DEFAULT_COLUMNS, shown_params)
        if fmt == "table" and "sweep" not in chosen:  # each sweep's title names them (below): no column
            chosen = [c for c in chosen if _param_name(c) not in params.between_sweeps]
        if table.present("joules_per_token"):  # where GPU power was sampled: what owners weigh
            chosen.insert(chosen.index("warnings"), "joules_per_token")
        if table.prefill():  # bench mode's prefill tests
            chosen.insert(chosen.index("decode_tps") + 1, "prompt_tps")
        if table.present("ppl"):  # quality mode: speed against quality, side by side
            chosen[chosen.index("warnings") : chosen.index("warnings")] = list(quality.COLUMNS)
        # No arm has a reference (no baseline: a quant matrix): the speedup columns would be blank, and would push
        # out columns that say something (ok, warnings)
        chosen = [c for c in chosen if c not in RATIO_COLUMNS or table.present(c)]
        # What tells arms of one name apart in several sweeps is never given up
        droppable = [*(param_column(k) for k in reversed(shown_params) if k not in params.between_sweeps), *GIVE_UP]
        hidden = [param_column(k) for k in params.varying if k in params.lone]
        if len(table.hosts()) > 1:  # several machines: the host is a key
            chosen.insert(chosen.index("arm"), "host")
    shown = {
        c: table.column(_stored_name(c, compact)) if c in TABLE_COLUMNS else params.cells(_param_name(c), compact)
        for c in chosen
    }
    if fmt == "md":
        kept, left_out = tables.fit_columns(shown, chosen, width, droppable) if droppable else (chosen, [])
        if "sweep" not in kept and len(table.with_arms) > 1:
            kept = ["sweep", *kept]
            shown["sweep"] = table.column("sweep")
        text = tables.markdown_columns(shown, kept)
    else:
        titles = {} if "sweep" in chosen else table.titles()  # several sweeps: each named above its rows
        if titles and params.between_sweeps and not (columns or wide):
            values = [params.sweep_values(i) for i in range(len(titles))]
            titles = {row: f"{title} ({told})" if told else title for (row, title), told in zip(titles.items(), values)}
        text, left_out = tables.column_table(
            shown, chosen, width=width, droppable=droppable, titles=titles, as_text=True
        )
    hidden += [c for c in chosen if c in left_out]
    if hidden and table.arms:
        ids = [p.sweep for p in table.with_arms]
        again = f"orch summary {' '.join(map(str, ids))} --wide" if len(ids) <= 4 else "--wide"
        note = f"not shown: {', '.join(hidden)} ({again} shows every column)"
        text += "\n" + (tables.fill(note) if fmt == "table" else note)
    return text


def cells_to_read(fmt: str, *, wide: bool) -> list[str]:
    """The cells columns the table of every column (wide) or of the default ones may draw, before the summaries
    say which of the optional ones some arm has: what summaries.read starts reading at once."""
    return _loaded(None, fmt, None, wide)


def _loaded(table: Summaries | None, fmt: str, columns: list[str] | None, wide: bool) -> list[str]:
    """The cells columns table_text reads (table None: each one some arm may have)."""
    compact = not (columns or wide)
    return [PARAMS, *_stored(_candidates(table, columns, wide), compact), *(["sweep"] if fmt == "md" else [])]


def _candidates(table: Summaries | None, columns: list[str] | None, wide: bool) -> list[str]:
    """The summary columns the table may draw, read in one query before it chooses (kept cells are read by
    column: one query for all of them costs little more than one for a few); table None: each one some arm may
    have."""
    if columns or wide:
        return [c for c in columns or TABLE_COLUMNS if c in TABLE_COLUMNS]
    optional = ["host", "joules_per_token", "prompt_tps", *quality.COLUMNS]
    return [*DEFAULT_COLUMNS, *(c for c in optional if table is None or table.present(c))]


def _stored(columns: list[str], compact: bool) -> list[str]:
    return [_stored_name(c, compact) for c in columns]


def _stored_name(column: str, compact: bool) -> str:
    """The cells a summary column is drawn from: `vs` has its own in the compact table."""
    return COMPACT_VS if column == "vs" and compact else column


def table_columns(table: Summaries | list[dict]) -> list[str]:
    """TABLE_COLUMNS with, after `arm`, one column per parameter whose value differs between the arms: what
    tells the arms apart (and two sweeps' arms of one name, run with other parameters). Every column: --wide."""
    return _with_params(TABLE_COLUMNS, Parameters(_summaries(table)).varying)


def picked_columns(table: Summaries | list[dict], text: str) -> list[str]:
    """`--columns a,b`: the names, each a column of the summary (TABLE_COLUMNS or a parameter an arm has); else
    InvalidOption naming every column there is."""
    return _picked(Parameters(_summaries(table)).names, text)


def picked_row_columns(rows: list[dict], text: str) -> list[str]:
    """picked_columns for rows written as they are (CSV, JSON), with the parameters' values put on the rows."""
    picked = _picked(
        list(dict.fromkeys(k for p in {id(r["params"]): r["params"] for r in rows}.values() for k in p)), text
    )
    pairs = [(_param_name(c), c) for c in picked if c not in TABLE_COLUMNS]
    for row in rows:
        for name, column in pairs:
            row[column] = row["params"].get(name)
    return picked


def _picked(names: list[str], text: str) -> list[str]:
    valid = _with_params(TABLE_COLUMNS, names)
    picked = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in picked if c not in valid and param_column(c) not in valid]
    if unknown or not picked:
        raise InvalidOption(
            f"--columns {text!r}: {'no such column ' + ', '.join(unknown) if unknown else 'no column'}"
            f"; the columns are {', '.join(valid)} (orch summary --help says what each is)"
        )
    return [c if c in valid else param_column(c) for c in picked]


def _with_params(columns: list[str], names: list[str]) -> list[str]:
    """The columns with one per parameter after `arm`."""
    i = columns.index("arm") + 1
    return [*columns[:i], *(param_column(k) for k in names), *columns[i:]]


def param_column(name: str) -> str:
    return f"param.{name}" if name in TABLE_COLUMNS or name in ("params", "method") else name


def _param_name(column: str) -> str:
    return column.removeprefix("param.")
