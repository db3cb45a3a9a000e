"""`orch runs` (the newest stored runs) and `orch show` (one run whole: argv, status, metrics, logs)."""

from __future__ import annotations

import click

from orchestrator import json_text, results, tables
from orchestrator.cli.group import COUNT, ID, db_option, main

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
SHOWN_LOG_BYTES = 64 << 10  # of each stream, its end: where a run says why it ended (a log may be 256 MiB)
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

    with results.open(db) as found:
        shown = found.run(run_id, with_logs=logs, decode_json=as_json, log_tail=SHOWN_LOG_BYTES)
    run, metrics, texts, sizes = shown["run"], shown["metrics"], shown["logs"], shown["log_sizes"]
    if as_json:
        click.echo(json_text.to_json({"run": run, "metrics": metrics, "logs": texts, "log_sizes": sizes}, indent=1))
        return
    for key, value in run.items():
        click.echo(f"{key:>16}: {value}")
    for key, value in (metrics or {}).items():
        if value is not None and key != "run_id":
            click.echo(f"{key:>16}: {value}")
    for stream, text in texts.items():
        size = sizes.get(stream) or 0
        cut = (
            f", its last {SHOWN_LOG_BYTES >> 10} KiB: `orch logs {run_id}` writes it whole"
            if size > SHOWN_LOG_BYTES
            else ""
        )
        click.echo(f"----- {stream} ({size} bytes{cut}) -----\n{text}")
