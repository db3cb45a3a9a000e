"""The `orch` click group: error printing (one line, its exit code), --debug, and the options commands share."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from orchestrator import __version__, config
from orchestrator.errors import OrchError


class OrchGroup(click.Group):
    """Prints an OrchError as one line and exits with its code; tracebacks only with --debug."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except OrchError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"orch: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("orch: interrupted", err=True)
            sys.exit(130)


@click.group(cls=OrchGroup)
@click.version_option(__version__, prog_name="orch")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx, debug):
    """Benchmark speculative decoding across llama.cpp commits.

    Example: orch build 0c1e57098 && orch builds
    """
    ctx.obj = {"debug": debug}


db_option = click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                         help="Results database (default: $ORCH_DB or ./results.duckdb).")


def opened_db(db: Path | None, *, write: bool = False):
    """`with opened_db(db) as con:` the results database of --db (else $ORCH_DB or ./results.duckdb), closed after.

    Read-only unless `write`: a shared open that never creates the file and never blocks another reader.
    """
    # Imported here: duckdb costs a tenth of a second that --help and --version do not need.
    from orchestrator import store

    return store.opened(db or config.db_path(), read_only=not write)
