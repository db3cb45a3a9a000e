"""`orch query`: SQL over the results file, read-only unless --write, DuckDB's settings locked either way."""

from __future__ import annotations

import click
import duckdb

from orchestrator import tables
from orchestrator.cli.group import data_format, db_option, main, opened_db
from orchestrator.errors import QueryFailed
from orchestrator.store import queries, schema

QUERY_HINTS = (
    ("read-only", " (the database is read-only: pass --write to change it)"),
    (
        "disabled by configuration",
        (" (without --write, orch query reads the results file only: no other file is read or written)"),
    ),
    ("configuration has been locked", " (orch query leaves DuckDB's settings as they are)"),
)


@main.command("query")
@click.argument("sql")
@data_format("table", "csv", "json")
@click.option(
    "--write",
    is_flag=True,
    help="Open the database for writing, so that the SQL may change or drop "
    "data and read or write other files (without it the database is read-only, and COPY, read_csv, ATTACH "
    "and the like fail: nothing outside the results file is touched).",
)
@db_option
def query_command(sql, fmt, write, db):
    """Run SQL against the results database (read-only unless --write).

    Example: orch query "SELECT arm, avg(decode_tps) FROM run_summary GROUP BY arm"
    """

    with opened_db(db, write=write) as con:
        if not write:  # no file outside the results file is read or written, whatever the SQL asks
            con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")  # no setting from the SQL: file logging aborted the process
        try:
            columns, rows = queries.run_sql(con, sql)
        except duckdb.Error as exc:
            said = str(exc).splitlines()
            hint = next((h for words, h in QUERY_HINTS if words in str(exc)), "")
            # an unknown column: DuckDB names the columns it could have meant, which say more than the tables
            close = next((f" ({line.strip()})" for line in said if line.startswith("Candidate bindings")), "")
            held, views = schema.present(con)
            raise QueryFailed(
                f"query failed: {said[0]}{close}{hint}; tables: {', '.join(held)}; views: "
                f'{", ".join(views)} (orch query "DESCRIBE runs" lists a table\'s columns)'
            ) from None
    click.echo(tables.render(rows, fmt, columns))
