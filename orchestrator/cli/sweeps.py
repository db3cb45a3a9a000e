"""`orch sweeps`: the sweeps a results file holds, the place every hint about sweep numbers points to."""

from __future__ import annotations

import click

from orchestrator import results, tables
from orchestrator.cli.group import COUNT, data_format, db_option, main

COLUMNS = ["sweep", "recipe", "builds", "workload", "mode", "runs", "ok", "planned", "status", "started", "part_of"]


@main.command("sweeps")
@click.option("-n", "--last", type=COUNT, default=20, show_default=True, help="How many of the newest sweeps.")
@data_format("table", "md", "csv", "json")
@db_option
def sweeps_command(last, fmt, db):
    """List stored sweeps, newest last.

    Each sweep's number, recipe, builds, workload, mode, runs measured (ok of them, of those planned), status, when
    it started, and the tune round it was, if any.

    Example: orch sweeps --last 5
    """

    with results.open(db) as found:
        rows = [s.values for s in found.sweeps(last)]
    if fmt == "table" and not rows:
        click.echo("no sweeps stored yet; `orch run RECIPE` makes one", err=True)
        return
    click.echo(tables.render(rows, fmt, COLUMNS))
