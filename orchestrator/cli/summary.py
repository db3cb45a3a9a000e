"""`orch summary`: per-arm speed with intervals, speedup against each arm's reference, predictions and warnings,
as a table, markdown, CSV or JSON (read through orchestrator.results)."""

from __future__ import annotations

import click

from orchestrator import json_text, results, tables
from orchestrator.analyze import glossary, summaries, warning_docs
from orchestrator.analyze.summaries import Summaries, draw, from_rows
from orchestrator.cli import output
from orchestrator.cli.group import COUNT, ID, data_format, db_option, main
from orchestrator.errors import InvalidOption

SUMMARY_HELP = f"""Per-arm speed with intervals, speedup, warnings.

Per arm: decode tok/s with its 95% interval, acceptance, and the speedup against the arm's control (its own
program drafting nothing) or else the baseline, paired by repeat (and prompt in server mode), with its
interval; under it, per drafting arm, the speedup predicted before it ran beside the measured one and where
its time went (tokens a pass, drafting ms a token, a pass in target steps, the break-even acceptance); then a
line per warning and one verdict per sweep (--explain: whole). The table fits in 120 characters: the columns
{", ".join(glossary.SUMMARY_DEFAULT)} and the parameters that tell arms apart, giving up parameters first,
then ci95, vs, ... where it is wider; its last line names what it left out. --wide shows every column,
--columns picks; JSON and CSV carry every value.

A finished sweep's summary is kept in the results file and read back while it is current (made from exactly
the rows stored now, by this orch); otherwise it is computed from the runs. `orch repair` keeps the missing ones.

{glossary.help_block(glossary.SUMMARY, "Columns:")}

Example: orch summary --last 2 --columns arm,draft_max,speedup,speedup_ci95
"""


EVERY_WARNING = "all"  # --explain without a code


@main.command("summary", help=SUMMARY_HELP)
@click.argument("sweeps", nargs=-1, type=ID)
@click.option("-n", "--last", type=COUNT, default=1, show_default=True, help="Summarise the newest N sweeps.")
@data_format("table", "md", "csv", "json")
@click.option("--wide", is_flag=True, help="Every column (see Columns), however wide the table gets.")
@click.option(
    "--columns",
    "column_list",
    default=None,
    metavar="NAME,...",
    help="Exactly these columns, in this order: names from Columns, a parameter by its name.",
)
@click.option(
    "--explain",
    is_flag=False,
    flag_value=EVERY_WARNING,
    default=None,
    metavar="[CODE]",
    help="Every warning's full text, a line each (by default one line per warning kind, naming its arms), "
    "and each verdict whole: why each losing arm lost, in words, and every note (by default a sentence "
    "or two, under the why table). --explain CODE: what one warning code means, when it fires and what "
    "to do (docs/warnings.md); nothing is read.",
)
@db_option
def summary_command(sweeps, last, fmt, wide, column_list, explain, db):

    if explain not in (None, EVERY_WARNING):
        if explain.isdigit():  # `--explain 3`: sweep 3, explained, as before the option took a code
            sweeps, explain = (*sweeps, int(explain)), EVERY_WARNING
        elif found := warning_docs.kind(explain):
            click.echo("\n".join(tables.fill(line) for line in warning_docs.explained(found)))
            return
        else:
            raise InvalidOption(
                f"--explain {explain}: no such warning code; the codes: "
                f"{', '.join(warning_docs.codes())} (docs/warnings.md)"
            )
    explain = explain is not None
    if wide and column_list:
        raise click.UsageError("--wide and --columns exclude each other: --wide shows every column")
    with results.open(db) as found, summaries.collector_paused():  # millions of objects, none in a cycle
        con, ids = found.con, found.sweep_ids(sweeps, last)
        if column_list and fmt in ("csv", "json"):  # some columns, every value as it is: the rows, computed now
            rows = found.summary_rows(*ids)
            columns = draw.picked_row_columns(rows, column_list) if column_list else None
            if fmt == "json":
                output.write_json(json_text.json_rows(rows, columns))
            else:
                click.echo(tables.render(rows, fmt, columns))
            click.echo("\n".join(Summaries(from_rows(rows)).verdict_lines()), err=True)
            return
        early = draw.cells_to_read(fmt, wide=wide) if fmt in ("table", "md") and not column_list else ()
        read = summaries.read(con, ids, early)
        if read.computed and read.computed_s > SLOW_S:
            click.echo(
                f"orch: {read.computed} of {len(set(ids))} sweeps summarized from their runs "
                f"({read.computed_s:.1f}s): no current summary is kept for them (stored by another orch "
                f"version, or changed since); `orch repair` keeps them",
                err=True,
            )
        table = read.summaries
        if fmt in ("json", "csv"):  # the JSON is written as it is read: the summary of every sweep is 100 MB
            if fmt == "json":
                output.write_json(*table.json_chunks())
            else:
                output.write_long(output.joined(table.csv_chunks()))
            click.echo("\n".join(table.verdict_lines()), err=True)  # sentences to stderr: the format stays parseable
            return
        columns = draw.picked_columns(table, column_list) if column_list else None
        output.write_long(output.slices(draw.summary_text(table, fmt, columns=columns, wide=wide, explain=explain)))


SLOW_S = 1.0  # computing summaries longer than this: say how to keep them
