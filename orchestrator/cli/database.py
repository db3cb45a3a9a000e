"""`orch repair`: the results file's own upkeep."""

from __future__ import annotations

import click

from orchestrator.cli.group import db_option, main


@main.command("repair")
@db_option
def repair_command(db):
    """Restore dropped tables, views and columns.

    For a file damaged by hand (a DROP TABLE, a dropped view): they are made again from the migrations. Rows
    that were deleted stay gone; everything still stored is kept.

    Example: orch repair --db results.duckdb
    """
    from orchestrator import config, store
    from orchestrator.store import schema

    path = db or config.db_path()
    with store.opened(path, create=False, check=False) as con:
        restored = schema.repair(con)
    click.echo(f"restored {', '.join(restored)} in {path}" if restored else f"nothing to repair in {path}")
