"""`orch runs`, `show`, `summary`, `compare`, `report`: reading stored results (`orch query`: cli/query.py)."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator import json_text, tables
from orchestrator.analyze import glossary
from orchestrator.cli import output
from orchestrator.cli.group import COUNT, ID, data_format, db_option, main, opened_db

RUN_COLUMNS = [
    "run_id",
    "sweep_id",
    "arm",
    "repeat_index",
    "warmup",
    "status",
    "failure_class",
    "build_name",
    "decode_tps",
    "acceptance",
    "n_drafted",
    "n_accepted",
    "wall_s",
]
WIDTH = tables.TABLE_WIDTH  # characters a table fits in unless --wide
RUN_DROPPABLE = ["warmup", "n_accepted", "n_drafted", "build_name", "failure_class", "repeat_index"]  # first first


@main.command("runs")
@click.option("-n", "--last", type=COUNT, default=20, show_default=True, help="How many of the newest runs.")
@click.option("--json", "as_json", is_flag=True, help="JSON objects with every canonical metric.")
@click.option("--wide", is_flag=True, help="Every column, however wide (by default the table fits 120 columns).")
@db_option
def runs_command(last, as_json, wide, db):
    """List stored runs, newest last.

    Example: orch runs --last 10 --json
    """
    from orchestrator import results

    with results.open(db) as found:
        rows = found.run_rows(last)
    if as_json:
        click.echo(tables.render(rows, "json"))
        return
    text, left_out = tables.text_table(rows, RUN_COLUMNS, width=None if wide else WIDTH, droppable=RUN_DROPPABLE)
    click.echo(text)
    if left_out:
        click.echo(tables.fill(f"not shown: {', '.join(left_out)} (orch runs --wide shows every column)"))


@main.command("show")
@click.argument("run_id", type=ID)
@click.option("--logs/--no-logs", default=True, show_default=True, help="Print the raw stdout and stderr too.")
@click.option("--json", "as_json", is_flag=True, help="JSON: the run's row, its metrics and (with --logs) its logs.")
@db_option
def show_command(run_id, logs, as_json, db):
    """Show one run: argv, status, metrics, logs.

    Example: orch show 12 --no-logs
    """
    from orchestrator import results

    with results.open(db) as found:
        shown = found.run(run_id, with_logs=logs, decode_json=as_json)
    run, metrics, texts = shown["run"], shown["metrics"], shown["logs"]
    if as_json:
        click.echo(json_text.to_json({"run": run, "metrics": metrics, "logs": texts}, indent=1))
        return
    for key, value in run.items():
        click.echo(f"{key:>16}: {value}")
    for key, value in (metrics or {}).items():
        if value is not None and key != "run_id":
            click.echo(f"{key:>16}: {value}")
    for stream, text in texts.items():
        click.echo(f"----- {stream} ({len(text)} chars) -----\n{text}")


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
    from orchestrator import results
    from orchestrator.analyze import summary, summary_cache, summary_table, warning_docs
    from orchestrator.analyze.sweep_summary import Summaries, from_rows
    from orchestrator.errors import InvalidOption

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
    with results.open(db) as found, summary.collector_paused():  # millions of objects, none in a cycle
        con, ids = found.con, found.sweep_ids(sweeps, last)
        if column_list and fmt in ("csv", "json"):  # some columns, every value as it is: the rows, computed now
            rows = found.summary_rows(*ids)
            columns = summary_table.picked_row_columns(rows, column_list) if column_list else None
            if fmt == "json":
                output.write_json(json_text.json_rows(rows, columns))
            else:
                click.echo(tables.render(rows, fmt, columns))
            click.echo("\n".join(Summaries(from_rows(rows)).verdict_lines()), err=True)
            return
        early = summary_table.cells_to_read(fmt, wide=wide) if fmt in ("table", "md") and not column_list else ()
        read = summary_cache.read(con, ids, early)
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
        columns = summary_table.picked_columns(table, column_list) if column_list else None
        output.write_long(
            output.slices(summary_table.summary_text(table, fmt, columns=columns, wide=wide, explain=explain))
        )


SLOW_S = 1.0  # computing summaries longer than this: say how to keep them


@main.command("report")
@click.argument("sweeps", nargs=-1, type=ID)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for report.md, report.html (the same page, self-contained) and the PNG plots.",
)
@click.option("-n", "--last", type=COUNT, default=1, show_default=True, help="Report the newest N sweeps.")
@click.option("--run", "run_id", type=ID, default=None, help="Run whose telemetry to plot (default: the longest).")
@click.option(
    "--tune",
    "tune_id",
    type=ID,
    default=None,
    help="Report a tune instead: its answer per workload, the race drawn (candidates x rounds, where each "
    "was dropped) and every decision with its reason.",
)
@click.option(
    "--anonymize",
    is_flag=True,
    help="For a report to share: this machine's folders become <builds>, "
    "<models>, <cache>, <results>, . and ~, other absolute folders are cut to their last part, and its "
    "host name becomes <host>.",
)
@db_option
def report_command(sweeps, out, last, run_id, tune_id, anonymize, db):
    """Write a report of sweeps to hand on: markdown, HTML and plots.

    Per sweep: its verdict, what ran (recipe, build, host and GPU settings, model files), the arms' parameters,
    one table of figures (speed, acceptance, speedup, energy per token), decode tok/s per arm, acceptance against
    speedup with each arm's break-even from its measured step cost, and the failed, skipped and idle arms with
    why. Head vs base per pair of builds, one run's telemetry, the environment.

    Example: orch report --last 2 --out report/
    """
    from orchestrator.report.sweeps import build_report

    if tune_id is not None:
        from orchestrator.tune import race_report

        if sweeps or run_id:
            raise click.UsageError("--tune reports one tune; give no SWEEPS or --run with it")
        with opened_db(db) as con:
            path = race_report.write(con, tune_id, out)
    else:
        with opened_db(db) as con:
            path = build_report(con, list(sweeps), last=last, out=out, run_id=run_id)
    pages = [path, *([path.with_suffix(".html")] if path.with_suffix(".html").exists() else [])]
    if anonymize:
        from orchestrator.report import anonymize as scrubbed

        scrubbed.rewrite(pages, db)
    click.echo("\n".join(str(p) for p in pages))  # both pages: the markdown and the self-contained HTML
